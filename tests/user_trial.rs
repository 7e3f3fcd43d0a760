//! The simulated user on trial (SPEC §18, issue 39): leaks, blame, the figures
//! without the user's failures, the `user_nonadherence` gate, and what the
//! evaluation's own model calls cost apart from the agent's.

use serde_json::{Value, json};

use crate::common::*;
use crate::models::{Mock, oa};

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A scripted agent that talks twice: first without asking, then asking for
/// the order. The mock plays the user: in trial 1 it gives the order id
/// unasked (a leak), in trials 2 and 3 only when asked (in trial 3 a wrong one).
fn suite(mock: &Mock, gate: &str) -> String {
    format!(
        r#"
local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {{
  name = "user_trial", trials = 3, gate = {{ {gate} }},
  agent = evalua.agent.scripted(function(task, env)
    local first = env.say("I can help with that.") or ""
    if first:find("P%-9930") then return "Refunded early" end
    local second = env.say("Which order is it?") or ""
    return "Refunded " .. second
  end),
}}
suite:case {{
  id = "refund", input = "My refund is missing.",
  user = evalua.user.llm {{
    profile = "Order P-9930, one unit missing.", goal = "Get the missing unit refunded.",
    model = evalua.model {{ model = "gpt-4.1-mini", base_url = {:?}, api_key_env = "EVALUA_TEST_KEY" }},
    withhold = {{ {{ text = "P-9930", until_asked = "order|pedido" }} }},
  }},
  expect = {{ check.answer {{ contains = "Refunded P-9930" }} }},
}}
return suite
"#,
        mock.openai_url()
    )
}

fn replies() -> Vec<crate::models::Reply> {
    vec![
        oa(Some("It is P-9930, by the way."), &[], 100, 10), // trial 1: a leak at turn 1
        oa(Some("Sure."), &[], 100, 10),                     // trial 2
        oa(Some("P-9930"), &[], 120, 10),
        oa(Some("Sure."), &[], 100, 10), // trial 3: asked, but a wrong id: the agent's failure
        oa(Some("P-0000"), &[], 120, 10),
    ]
}

#[test]
fn a_leaking_user_is_blamed_and_the_figures_without_it_are_shown_beside_the_raw_ones() {
    let mock = Mock::start(replies());
    let dir = project(&[("s.lua", &suite(&mock, "[\"user_nonadherence\"] = 0.2"))]);
    let o = bin()
        .current_dir(dir.path())
        .env("EVALUA_TEST_KEY", "k")
        .args(["run", "s.lua", "--out", "out", "--jobs", "1"])
        .output()
        .unwrap();
    // The gate: 1 of 3 trials with a non-adherent user is more than 20%.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = dir.path().join("out");
    let recs = trials(&out);
    let t1 = record(&recs, "refund", 1);
    assert_eq!(t1["user"], json!({ "adherent": false, "leaks": [{ "turn": 1, "text": "P-9930" }], "adherence": null }));
    assert_eq!(t1["blame"]["by"], "user", "{t1}");
    assert!(t1["blame"]["evidence"].as_str().unwrap().contains("\"P-9930\" at turn 1"), "{t1}");
    let t2 = record(&recs, "refund", 2);
    assert_eq!(t2["outcome"], "accepted");
    assert_eq!(t2["user"]["adherent"], true);
    assert!(t2.get("blame").is_none(), "{t2}");
    let t3 = record(&recs, "refund", 3);
    assert_eq!((t3["outcome"].as_str(), t3["blame"]["by"].as_str()), (Some("failed"), Some("agent")));
    assert_eq!(t3["blame"]["evidence"], "check 'answer contains Refunded P-9930' failed");

    let s = json(&out.join("summary.json"));
    // Raw first: 1 of 3; without the user's failure: 1 of 2.
    assert!(close(f(&s["figures"]["pass_hat_k"]["1"]), 1.0 / 3.0));
    let w = &s["without_user_failures"];
    assert!(close(f(&w["pass_hat_k"]["1"]), 0.5), "{w}");
    assert!(close(f(&w["accepted_rate"]), 0.5), "{w}");
    assert_eq!(w["left_out"], 1);
    assert_eq!((s["blame"]["user"]["n"].as_u64(), f(&s["blame"]["user"]["value"])), (Some(2), 0.5));
    assert_eq!(f(&s["blame"]["agent"]["value"]), 0.5);
    assert_eq!(f(&s["blame"]["grader"]["value"]), 0.0);
    assert!(close(f(&s["user_nonadherence"]["value"]), 1.0 / 3.0));
    let gate = s["gates"].as_array().unwrap().iter().find(|g| g["name"] == "user_nonadherence").unwrap();
    assert_eq!(gate["passed"], false, "{gate}");

    // The simulated user's five calls are the evaluation's cost, not the agent's
    // (gpt-4.1-mini: 0.40 / 1.60 USD per million tokens); the two add up to the traces'.
    let want = (540.0 * 0.40 + 50.0 * 1.60) / 1e6;
    assert!(close(f(&s["figures"]["evaluation_cost_usd"]), want), "{}", s["figures"]);
    assert_eq!(f(&s["figures"]["total_cost_usd"]), 0.0);
    let traced: f64 = recs
        .iter()
        .flat_map(|r| trace_of(&out, r)["model_calls"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["cost_usd"].as_f64())
        .sum();
    assert!(close(traced, f(&s["figures"]["evaluation_cost_usd"]) + f(&s["figures"]["total_cost_usd"])));

    let console = stdout(&o) + &stderr(&o);
    let raw = console.find("pass^1 33.3%").expect("the raw figure");
    let without = console.find("without the simulated user's failures: pass^1 50.0%").expect(&console);
    assert!(raw < without, "raw first: {console}");
    assert!(console.contains("who is to blame for the trials not accepted: agent 50.0%"), "{console}");
    assert!(console.contains("FAIL user_nonadherence: 33.3%"), "{console}");
}

#[test]
fn a_bad_withhold_is_refused_at_load() {
    let mock = Mock::start(replies());
    for (from, to, needle) in [
        ("until_asked = \"order|pedido\"", "until_asked = \"order(\"", "withhold[1].until_asked: bad regex"),
        ("text = \"P-9930\", ", "", "withhold[1].text must be a non-empty string"),
        ("until_asked = \"order|pedido\"", "until_asked = \"order\", when = 1", "when"),
    ] {
        let text = suite(&mock, "").replace(from, to);
        let o = evalua(project(&[("s.lua", &text)]).path(), &["check", "s.lua"]);
        assert_user_error(&o, needle);
        assert!(stderr(&o).contains("s.lua:"), "{}", stderr(&o));
    }
}

/// The manifest pins each simulated user; `evalua compare` says when two runs
/// used different simulators (a measurement change).
#[test]
fn the_manifest_pins_the_simulated_user_and_compare_warns_when_it_changed() {
    let mock = Mock::start(replies());
    let dir = project(&[("s.lua", &suite(&mock, ""))]);
    let run = |out: &str| {
        let o = bin()
            .current_dir(dir.path())
            .env("EVALUA_TEST_KEY", "k")
            .args(["run", "s.lua", "--out", out, "--jobs", "1", "-q"])
            .output()
            .unwrap();
        assert!(o.status.code() == Some(0) || o.status.code() == Some(1), "{}", stderr(&o));
    };
    run("a");
    let m = json(&dir.path().join("a/manifest.json"));
    let pin = &m["users"][0];
    assert_eq!(pin["cases"], json!(["refund"]));
    assert_eq!(pin["model"], "gpt-4.1-mini");
    assert_eq!(pin["endpoint_host"], mock.url().trim_start_matches("http://"));
    assert_eq!(pin["system_sha256"].as_str().unwrap().len(), 64);
    // The same simulator: no warning.
    run("b");
    let o = evalua(dir.path(), &["compare", "a", "b"]);
    assert!(!(stdout(&o) + &stderr(&o)).contains("simulated users differ"), "{}", stdout(&o));
    // Another temperature and goal: another simulator.
    let text = suite(&mock, "")
        .replace("api_key_env = \"EVALUA_TEST_KEY\"", "api_key_env = \"EVALUA_TEST_KEY\", temperature = 0.7");
    std::fs::write(dir.path().join("s.lua"), text).unwrap();
    run("c");
    let o = evalua(dir.path(), &["compare", "a", "c", "--allow-revision-change"]);
    let said = stdout(&o) + &stderr(&o);
    assert!(said.contains("the simulated users differ (a measurement change, like a changed grader)"), "{said}");
    assert!(said.contains("temperature 0.7"), "{said}");
}

/// An adherence judge reads the conversation with the profile and the goal
/// and judges the user's conduct: failing it makes the user non-adherent even
/// without a leak, its verdict is kept, and its calls are the evaluation's cost.
#[test]
fn an_adherence_judge_fails_a_user_that_left_its_script() {
    let verdict = json!({
        "evidence": [{ "criterion": 1, "quote": "P-9930" }],
        "passed_criteria": [], "failed_criteria": [1], "undeterminable": [], "failure_mode": "solved the task for the agent"
    });
    let mock = Mock::start(vec![
        oa(Some("Sure."), &[], 100, 10),
        oa(Some("P-9930"), &[], 100, 10),
        oa(Some(&verdict.to_string()), &[], 300, 20), // the adherence judge
    ]);
    let model = format!(
        "evalua.model {{ model = \"gpt-4.1-mini\", base_url = {:?}, api_key_env = \"EVALUA_TEST_KEY\" }}",
        mock.openai_url()
    );
    let text = suite(&mock, "").replace("trials = 3", "trials = 1").replace(
        "withhold = {",
        &format!("adherence = judge.rubric {{ \"the user never does the agent's work for it\", model = {model} }},\n    withhold = {{"),
    );
    let text = text.replace(
        "local check = require(\"evalua.check\")",
        "local check = require(\"evalua.check\")\nlocal judge = require(\"evalua.judge\")",
    );
    let dir = project(&[("s.lua", &text)]);
    let o = bin()
        .current_dir(dir.path())
        .env("EVALUA_TEST_KEY", "k")
        .args(["run", "s.lua", "--out", "out", "--jobs", "1", "-q"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = dir.path().join("out");
    let r = record(&trials(&out), "refund", 1).clone();
    assert_eq!(r["outcome"], "accepted", "{r}");
    assert_eq!(r["user"]["leaks"], json!([]), "{r}");
    assert_eq!(r["user"]["adherent"], false, "{r}");
    assert_eq!(r["user"]["adherence"]["passed"], false, "{r}");
    // The judge saw the conversation as data, with the profile and the goal.
    let sent = mock.seen()[2].body.to_string();
    assert!(sent.contains("Order P-9930, one unit missing.") && sent.contains("simulated_user"), "{sent}");
    let s = json(&out.join("summary.json"));
    assert!(close(f(&s["user_nonadherence"]["value"]), 1.0));
    let want = (500.0 * 0.40 + 40.0 * 1.60) / 1e6;
    assert!(close(f(&s["figures"]["evaluation_cost_usd"]), want), "{}", s["figures"]);
}
