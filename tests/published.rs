//! What the background reading says to publish (SPEC §22, issue 46):
//! abstentions from every kind of agent, coverage, time to abandonment,
//! interventions, sources and contamination, declared exclusions.

use serde_json::{Value, json};

use crate::common::*;
use crate::models::{Mock, oa};

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// suites/support_desk.lua's agent does one fixed thing per case; every
/// figure below is worked out by hand in the suite's header.
#[test]
fn the_support_desk_publishes_the_figures_worked_out_by_hand() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = evalua(&repo(), &["run", "suites/support_desk.lua", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = json(&out.join("summary.json"));

    // Coverage: 10 trials had to be solved, 8 attempted (refund_window abstained twice);
    // 2 required abstaining and both abstained; 6 of the 8 attempts accepted.
    let c = &s["coverage"];
    assert_eq!((f(&c["attempted"]["value"]), c["attempted"]["n"].as_u64()), (0.8, Some(10)));
    assert_eq!((f(&c["abstained_correctly"]["value"]), c["abstained_correctly"]["n"].as_u64()), (1.0, Some(2)));
    assert_eq!(
        (f(&c["accepted_when_attempted"]["value"]), c["accepted_when_attempted"]["n"].as_u64()),
        (0.75, Some(8))
    );
    assert!(f(&c["attempted"]["low"]) < 0.8 && f(&c["attempted"]["high"]) > 0.8, "{c}");
    // The run's completeness stays beside it.
    assert_eq!(c["planned"], 12);
    assert_eq!(c["recorded"], 12);

    // Given up on: refund_window's two abstentions and bulk_audit's two budget endings.
    assert_eq!(s["time_to_abandon_ms"]["n"], 4);
    // chargeback escalates once in each of its 2 trials, out of 12.
    assert!(close(f(&s["interventions"]["per_trial"]["mean"]), 2.0 / 12.0));
    assert!(close(f(&s["interventions"]["trials_with"]["value"]), 2.0 / 12.0));
    assert_eq!(s["contaminated"], json!({ "n": 2, "accepted": 2 }));
    let excluded: Vec<(String, u64)> = s["exclusions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap().to_string(), e["trials"].as_u64().unwrap()))
        .collect();
    assert_eq!(excluded, vec![("infra_error".into(), 0), ("budget".into(), 2), ("contaminated".into(), 2)]);

    // The capability view leaves out puzzle_7 (contaminated successes) and
    // bulk_audit (its budget endings, declared): 3 of the 4 cases left are solved.
    assert_eq!(s["figures"]["cases"], 4);
    assert_eq!(s["figures"]["trials"], 8);
    assert!(close(f(&s["figures"]["pass_hat_k"]["1"]), 0.75));
    // The operational view counts every trial as it ended: 8 of 12 accepted.
    assert!(close(f(&s["figures"]["operational"]["accepted_rate"]), 8.0 / 12.0));

    // Per trial.
    let recs = trials(&out);
    let r = record(&recs, "unknown_order", 1);
    assert_eq!(
        (r["ended"].as_str(), r["abstained"].as_bool(), r["outcome"].as_str()),
        (Some("abstained"), Some(true), Some("accepted"))
    );
    assert!(r["answer"].as_str().unwrap().contains("no order Z-0000"), "{r}");
    let r = record(&recs, "refund_window", 2);
    assert_eq!((r["ended"].as_str(), r["outcome"].as_str()), (Some("abstained"), Some("failed")));
    assert_eq!(record(&recs, "chargeback", 1)["interventions"], 1);
    assert_eq!(record(&recs, "warranty", 1)["sources"], json!(["https://kb.example/warranty"]));
    let p = record(&recs, "puzzle_7", 1);
    assert_eq!(p["contaminated"], true);
    assert_eq!(p["contamination"][0]["pattern"], "solutions\\.example");
    assert_eq!(p["contamination"][0]["in"], "source");
    assert!(record(&recs, "warranty", 2).get("contaminated").is_none());

    // Every report states them.
    let console = stdout(&o) + &stderr(&o);
    for needle in [
        "coverage: attempted 80.0%",
        "time to abandonment: p50",
        "interventions: 0.17 a trial",
        "contaminated: 2 trials touched a published solution, 2 of them accepted",
        "excluded from the capability figures (declared before the run): infra_error 0 (always), budget 2, contaminated 2",
    ] {
        assert!(console.contains(needle), "console lacks {needle:?}: {console}");
        let md = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(md.contains(needle.split(':').nth(1).unwrap().trim()), "report.md lacks {needle:?}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Coverage, abandonment, interventions, contamination, exclusions"));
    let gh = evalua(&repo(), &["report", out.to_str().unwrap(), "--format", "github"]);
    assert!(stdout(&gh).contains("- excluded from the capability figures (declared before the run): infra_error 0 (always), budget 2, contaminated 2"), "{}", stdout(&gh));
}

const AGENT: &str = r#"
import json, sys
start = json.loads(sys.stdin.readline())
if start["case"] == "answer_it":
    print(json.dumps({"type": "final", "content": "42"}), flush=True)
else:
    print(json.dumps({"type": "final", "abstain": True, "content": "not enough evidence"}), flush=True)
"#;

/// A command agent abstains with `{"type":"final","abstain":true}`: right
/// where the case requires it, an unsolved task where it does not.
#[test]
fn a_command_agent_abstains_through_the_protocol() {
    let suite = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite { name = "abstain_cmd", agent = evalua.agent.command { cmd = { "python3", evalua.path("agent.py") } } }
suite:case { id = "answer_it", input = "6 x 7?", expect = { check.answer { contains = "42" } } }
suite:case { id = "decline_it", input = "What is in the sealed envelope?", should_abstain = true }
suite:case { id = "gives_up", input = "What is 6 x 7, really?", expect = { check.answer { contains = "4" } } }
return suite
"#;
    let dir = project(&[("s.lua", suite), ("agent.py", AGENT)]);
    let o = evalua(dir.path(), &["run", "s.lua", "--out", "out", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let recs = trials(&dir.path().join("out"));
    let d = record(&recs, "decline_it", 1);
    assert_eq!(
        (d["ended"].as_str(), d["outcome"].as_str(), d["answer"].as_str()),
        (Some("abstained"), Some("accepted"), Some("not enough evidence"))
    );
    assert_eq!(check(d, "abstained")["passed"], true);
    // An abstention where the task had to be solved is never accepted, whatever the checks say.
    let g = record(&recs, "gives_up", 1);
    assert_eq!((g["ended"].as_str(), g["outcome"].as_str()), (Some("abstained"), Some("failed")));
    assert_eq!(record(&recs, "answer_it", 1)["outcome"], "accepted");
    let s = json(&dir.path().join("out/summary.json"));
    assert_eq!(s["coverage"]["attempted"]["value"], 0.5);
    assert_eq!(s["coverage"]["abstained_correctly"]["value"], 1.0);
    // A malformed abstain is a protocol error, named.
    let bad = AGENT.replace("\"abstain\": True", "\"abstain\": \"yes\"");
    let dir = project(&[("s.lua", suite), ("agent.py", &bad)]);
    let o = evalua(dir.path(), &["run", "s.lua", "--out", "out", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let d = record(&trials(&dir.path().join("out")), "decline_it", 1).clone();
    assert_eq!((d["ended"].as_str(), d["outcome"].as_str()), (Some("protocol_error"), Some("failed")));
    assert!(d["error"].as_str().unwrap().contains("\"abstain\" must be true or false"), "{d}");
}

/// With `abstention = true` a model agent is offered a built-in `abstain`
/// tool; calling it ends the trial `abstained`, and no tool of the suite runs.
#[test]
fn a_model_agent_abstains_with_the_built_in_tool() {
    let mock =
        Mock::start(vec![oa(None, &[("call_1", "abstain", json!({ "reason": "the order is not on record" }))], 50, 5)]);
    let suite = format!(
        r#"
local evalua = require("evalua")
local suite = evalua.suite {{
  name = "abstain_model", abstention = true,
  agent = evalua.agent.openai {{ model = "m", base_url = {:?}, api_key_env = "EVALUA_TEST_KEY" }},
}}
suite:tool {{ name = "lookup", params = {{ type = "object" }}, run = function() return "x" end }}
suite:case {{ id = "c", input = "Where is order Z-0000?", should_abstain = true }}
return suite
"#,
        mock.openai_url()
    );
    let dir = project(&[("s.lua", &suite)]);
    let o = bin()
        .current_dir(dir.path())
        .env("EVALUA_TEST_KEY", "k")
        .args(["run", "s.lua", "--out", "out", "-q"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = record(&trials(&dir.path().join("out")), "c", 1).clone();
    assert_eq!((r["ended"].as_str(), r["outcome"].as_str()), (Some("abstained"), Some("accepted")));
    assert_eq!(r["answer"], "the order is not on record");
    assert_eq!(r["calls"]["requested"], 0);
    let sent = &mock.seen()[0].body;
    let names: Vec<&str> =
        sent["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["lookup", "abstain"]);
}

/// What a suite declares for the published figures is checked at load:
/// each mistake is one line with the suite's file:line, exit 2, before any trial.
#[test]
fn bad_exclusions_contamination_and_sources_are_refused_at_load() {
    let head = r#"local evalua = require("evalua")
local suite = evalua.suite { name = "bad", agent = evalua.agent.scripted(function() return "" end), "#;
    let tail = "}\nsuite:case { id = \"c\", input = \"x\" }\nreturn suite\n";
    for (decl, needle) in [
        (r#"exclude = { "accepted" }"#, "an accepted trial is never left out"),
        (r#"exclude = { "timeout" }"#, "\"timeout\": unknown; it may name infra_error, failed"),
        (r#"contamination = { sources = { "solutions(" } }"#, "bad regex /solutions(/"),
        (r#"contamination = { sources = {} }"#, "'sources' must list"),
        (r#"contamination = { urls = { "x" } }"#, "urls"),
    ] {
        let dir = project(&[("s.lua", &format!("{head}{decl} {tail}"))]);
        for cmd in ["check", "run"] {
            let o = evalua(dir.path(), &[cmd, "s.lua"]);
            assert_user_error(&o, needle);
            assert!(stderr(&o).contains("s.lua:2"), "{cmd}: {}", stderr(&o));
        }
    }
    let suite = r#"local evalua = require("evalua")
local suite = evalua.suite { name = "bad", abstention = true, agent = evalua.agent.scripted(function() return "" end) }
suite:tool { name = "fetch", params = { type = "object", properties = { url = { type = "string" } } }, source = "link", run = function() end }
suite:case { id = "c", input = "x" }
return suite
"#;
    let o = evalua(project(&[("s.lua", suite)]).path(), &["check", "s.lua"]);
    assert_user_error(&o, "s.lua:3: suite:tool 'fetch': 'source' names the parameter");
    let suite =
        suite.replace("source = \"link\"", "source = \"url\"").replace("name = \"fetch\"", "name = \"abstain\"");
    let o = evalua(project(&[("s.lua", &suite)]).path(), &["check", "s.lua"]);
    assert_user_error(&o, "s.lua:3: suite:tool 'abstain': abstention = true offers model agents a built-in tool");
}
