//! Named agents (SPEC §14): `agents = { … }`, `--agent NAME`, the manifest's
//! `agent.name`, unknown names, `check` and `list`.

use crate::common::*;

/// Two agents that answer differently, so a run shows which one played; a
/// case that names its own agent keeps it whatever the run picks.
const SUITE: &str = r#"
local evalua = require("evalua")
local s = evalua.suite {
  name = "named",
  agents = {
    good = evalua.agent.scripted(function(task, env) return "yes" end),
    bad  = evalua.agent.scripted(function(task, env) return "no" end),
  },
  default_agent = "good",
}
s:case { id = "c1", input = "say yes", expect = { function(t) return t.answer == "yes", t.answer end } }
s:case { id = "c2", input = "say yes", agent = "good",
         expect = { function(t) return t.answer == "yes", t.answer end } }
return s
"#;

fn outcomes(dir: &std::path::Path) -> Vec<(String, String)> {
    trials(dir).iter().map(|r| (r["case"].as_str().unwrap().into(), r["outcome"].as_str().unwrap().into())).collect()
}

#[test]
fn the_default_agent_plays_unless_the_run_names_another() {
    let p = project(&[("s.lua", SUITE)]);
    let o = run_suite(p.path(), "s.lua", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = p.path().join("out");
    assert_eq!(outcomes(&out), vec![("c1".into(), "accepted".into()), ("c2".into(), "accepted".into())]);
    assert_eq!(json(&out.join("manifest.json"))["agent"]["name"], "good");

    let o = evalua(p.path(), &["run", "s.lua", "--out", "out2", "-q", "--agent", "bad"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = p.path().join("out2");
    // c2 names its own agent (`agent = "good"`): the run's pick does not replace it.
    assert_eq!(outcomes(&out), vec![("c1".into(), "failed".into()), ("c2".into(), "accepted".into())]);
    let m = json(&out.join("manifest.json"));
    assert_eq!(m["agent"]["name"], "bad");
    assert_eq!(m["agent"]["kind"], "scripted");
}

#[test]
fn an_unknown_agent_name_is_exit_2_listing_the_known_ones() {
    let p = project(&[("s.lua", SUITE)]);
    let o = evalua(p.path(), &["run", "s.lua", "--out", "out", "-q", "--agent", "gold"]);
    assert_user_error(&o, "no agent named 'gold' (known: bad, good (default))");
    assert!(!p.path().join("out").exists(), "nothing ran");
    let o = evalua(p.path(), &["check", "s.lua", "--agent", "gold"]);
    assert_user_error(&o, "known: bad, good (default)");
}

#[test]
fn check_and_list_name_the_agents() {
    let p = project(&[("s.lua", SUITE)]);
    let o = evalua(p.path(), &["check", "s.lua"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("agents: bad, good (default)"), "{}", stdout(&o));
    let o = evalua(p.path(), &["list", "s.lua"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("agents: bad, good (default)"), "{}", stdout(&o));
}

#[test]
fn a_single_agent_is_named_default() {
    let p = project(&[(
        "s.lua",
        r#"local evalua = require("evalua")
local s = evalua.suite { name = "one", agent = evalua.agent.scripted(function() return "ok" end) }
s:case { id = "c", input = "x", expect = { function(t) return true end } }
return s"#,
    )]);
    let o = evalua(p.path(), &["run", "s.lua", "--out", "out", "-q", "--agent", "default"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json(&p.path().join("out/manifest.json"))["agent"]["name"], "default");
    let o = evalua(p.path(), &["run", "s.lua", "--out", "out2", "-q", "--agent", "x"]);
    assert_user_error(&o, "(known: default (default))");
}

#[test]
fn a_model_agent_that_is_not_picked_needs_no_key_and_one_that_is_refuses_in_one_line() {
    let p = project(&[(
        "s.lua",
        r#"local evalua = require("evalua")
local s = evalua.suite { name = "m", default_agent = "script",
  agents = { script = evalua.agent.scripted(function() return "ok" end),
             model = evalua.agent.openai { model = "gpt-4o" } } }
s:case { id = "c", input = "x", expect = { function(t) return true end } }
return s"#,
    )]);
    let run = |args: &[&str]| {
        let mut c = bin();
        c.current_dir(p.path()).args(args);
        for v in ["OPENAI_API_KEY", "OPENAI_BASE_URL", "EVALUA_OPENAI_BASE_URL", "EVALUA_OPENAI_MODEL"] {
            c.env_remove(v);
        }
        c.output().unwrap()
    };
    let o = run(&["run", "s.lua", "--out", "out", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&["run", "s.lua", "--out", "out2", "-q", "--agent", "model"]);
    assert_user_error(&o, "agent 'model' (evalua.agent.openai): no model endpoint is configured: set OPENAI_API_KEY");
    assert!(!p.path().join("out2").exists());
}

#[test]
fn bad_agent_declarations_name_the_line() {
    for (body, needle) in [
        (
            r#"agents = { a = evalua.agent.scripted(function() end), b = evalua.agent.scripted(function() end) }"#,
            "name the default with default_agent",
        ),
        (r#"agents = { a = evalua.agent.scripted(function() end) }, default_agent = "z""#, "is not one of 'agents'"),
        (r#"agent = "a""#, "the suite declares no agents"),
        (r#"agents = { a = 3 }"#, "'agent' must come from evalua.agent"),
        (
            r#"agents = { a = evalua.agent.scripted(function() end) }, agent = evalua.agent.scripted(function() end)"#,
            "not both",
        ),
    ] {
        let src = format!(
            "local evalua = require(\"evalua\")\nlocal s = evalua.suite {{ name = \"x\", {body} }}\ns:case {{ id = \"c\", input = \"x\" }}\nreturn s\n"
        );
        let p = project(&[("s.lua", &src)]);
        let o = evalua(p.path(), &["check", "s.lua"]);
        assert_user_error(&o, needle);
        assert!(stderr(&o).contains("s.lua:2"), "names the line: {}", stderr(&o));
    }
    let p = project(&[(
        "s.lua",
        "local evalua = require(\"evalua\")\nlocal s = evalua.suite { name = \"x\", agents = { a = evalua.agent.scripted(function() end) } }\ns:case { id = \"c\", input = \"x\", agent = \"zz\" }\nreturn s\n",
    )]);
    let o = evalua(p.path(), &["check", "s.lua"]);
    assert_user_error(&o, "agent = \"zz\" is not one of the suite's agents (known: a)");
    assert!(stderr(&o).contains("s.lua:3"), "{}", stderr(&o));
}
