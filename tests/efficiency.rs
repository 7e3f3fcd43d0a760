//! Efficiency against a reference solution: the median ratios of summary.json
//! checked against values computed by hand, the accepted trials listed as
//! over the reference, `check.efficiency` in a run, and bad references
//! refused at load time.

use crate::common::*;

/// Case `a` (reference: two listed calls) and `b` (reference: 4 calls,
/// max_ratio 1.2) with a scripted agent whose calls per trial are known;
/// case `c` has no reference.
const SUITE: &str = r#"
local evalua = require("evalua")
local check = require("evalua.check")
-- Per case and trial: lookups (executed), then calls of an undeclared tool (rejected), then whether to pass.
local PLAN = {
  a = { { 2, 0, true }, { 3, 0, true }, { 4, 2, true }, { 2, 0, false } },
  b = { { 4, 0, true }, { 5, 0, true }, { 4, 0, true } },
  c = { { 1, 0, true } },
}
local suite = evalua.suite {
  name = "eff",
  agent = evalua.agent.scripted(function(task, env)
    local p = PLAN[task.case][task.trial]
    for _ = 1, p[1] do env.call("lookup", {}) end
    for _ = 1, p[2] do env.call("no_such_tool", {}) end
    return p[3] and "pass" or "fail"
  end),
}
suite:tool { name = "lookup", run = function() return { ok = true } end }
suite:case { id = "a", input = "x", trials = 4, reference = { calls = { "lookup", { name = "lookup", args = {} } } },
  expect = { check.answer { equals = "pass" } } }
suite:case { id = "b", input = "x", trials = 3, reference = { calls = 4, max_ratio = 1.2 },
  expect = { check.answer { equals = "pass" } } }
suite:case { id = "c", input = "x", trials = 1, expect = { check.answer { equals = "pass" } } }
return suite
"#;

fn median(r: &serde_json::Value) -> f64 {
    r["median"].as_f64().unwrap_or_else(|| panic!("no median in {r}"))
}

#[test]
fn median_ratios_match_hand_computed_values() {
    let dir = project(&[("eff.lua", SUITE)]);
    let out = run_suite(dir.path(), "eff.lua", &[]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let s = json(&dir.path().join("out/summary.json"));
    let case = |id: &str| s["cases"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap().clone();

    // a: reference 2 calls. Requested per trial 2, 3, 6, 2 → ratios 1, 1.5, 3, 1: median 1.25.
    // Executed 2, 3, 4, 2 → 1, 1.5, 2, 1: median 1.25. Accepted (1-3): 1, 1.5, 3 → 1.5; executed 1, 1.5, 2 → 1.5.
    let a = case("a");
    let e = &a["efficiency"];
    assert_eq!(e["reference"]["calls"], 2, "a listed reference counts its calls: {e}");
    assert!(close(median(&e["all"]["calls"]), 1.25), "{e}");
    assert!(close(median(&e["all"]["executed_calls"]), 1.25), "{e}");
    assert!(close(median(&e["accepted"]["calls"]), 1.5), "{e}");
    assert!(close(median(&e["accepted"]["executed_calls"]), 1.5), "{e}");
    assert_eq!(e["all"]["calls"]["trials"], 4);
    assert_eq!(e["accepted"]["calls"]["trials"], 3);
    assert!(e["all"].get("tokens").is_none(), "no token reference, no token ratio: {e}");
    let iv = &e["all"]["calls"];
    assert!(iv["lower"].as_f64().unwrap() >= 1.0 && iv["upper"].as_f64().unwrap() <= 3.0, "{iv}");
    assert!(iv["lower"].as_f64().unwrap() < iv["upper"].as_f64().unwrap(), "spread trials give a real interval: {iv}");

    // b: reference 4. Ratios 1, 1.25, 1: median 1 (all accepted).
    let b = case("b");
    assert!(close(median(&b["efficiency"]["all"]["calls"]), 1.0));
    assert!(close(median(&b["efficiency"]["accepted"]["calls"]), 1.0));
    assert!(case("c").get("efficiency").is_none(), "a case without a reference has no efficiency row");

    // Overall: the median of the cases' medians, a and b (c has no reference).
    let o = &s["efficiency"];
    assert_eq!(o["cases"], 2);
    assert!(close(median(&o["all"]["calls"]), (1.25 + 1.0) / 2.0), "{o}");
    assert!(close(median(&o["accepted"]["calls"]), (1.5 + 1.0) / 2.0), "{o}");
    assert_eq!(o["all"]["calls"]["cases"], 2);
    assert_eq!(o["all"]["calls"]["trials"], 7);

    // Accepted trials over their case's max_ratio: a#3 (3×, above 2) and b#2 (1.25×, above 1.2);
    // a#4 failed, so it is not listed whatever it took.
    let over = &o["over_reference"];
    assert_eq!(over["count"], 2, "{over}");
    let listed: Vec<(String, u64)> = over["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["case"].as_str().unwrap().to_string(), t["trial"].as_u64().unwrap()))
        .collect();
    assert_eq!(listed, [("a".to_string(), 3), ("b".to_string(), 2)]);
    assert!(close(over["trials"][0]["calls_ratio"].as_f64().unwrap(), 3.0));

    // The console and the reports say it.
    let console = stdout(&out);
    assert!(console.contains("efficiency against the reference solutions (2 cases"), "{console}");
    assert!(console.contains("2 accepted trial(s) took more than their case's max_ratio"), "{console}");
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains("## Efficiency against the reference solutions"), "{md}");
    assert!(md.contains("- a#3: 6 calls (3.00× the reference); above 2×"), "{md}");
    assert!(md.contains("- b#2: 5 calls (1.25× the reference); above 1.2×"), "{md}");
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(html.contains("Efficiency against the reference solutions") && html.contains("a#3: 6 calls"));

    // `evalua report` recomputes the same figures from the run dir alone.
    let before = s["efficiency"].clone();
    std::fs::remove_file(dir.path().join("out/summary.json")).unwrap();
    let r = evalua(dir.path(), &["report", "out"]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_eq!(json(&dir.path().join("out/summary.json"))["efficiency"], before);
}

/// Tokens against the reference: a command agent reports 500 × its trial number.
#[test]
fn token_ratios_and_check_efficiency_in_a_run() {
    let agent = r#"
import json, sys
start = json.loads(sys.stdin.readline())
n = start["trial"]
print(json.dumps({"type": "usage", "model": "m", "input_tokens": 400 * n, "output_tokens": 100 * n}), flush=True)
print(json.dumps({"type": "final", "content": "done"}), flush=True)
"#;
    let suite = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {
  name = "tok", trials = 3,
  agent = evalua.agent.command { cmd = { "python3", evalua.path("agent.py") } },
}
suite:case { id = "t", input = "x", reference = { tokens = 1000 },
  expect = { check.answer { equals = "done" }, check.efficiency { max_ratio = 1.2 } } }
return suite
"#;
    let dir = project(&[("tok.lua", suite), ("agent.py", agent)]);
    let out = run_suite(dir.path(), "tok.lua", &["--isolation", "none"]);
    let s = json(&dir.path().join("out/summary.json"));
    // Tokens 500, 1000, 1500 → ratios 0.5, 1, 1.5: median 1 over all trials.
    let e = &s["cases"][0]["efficiency"];
    assert!(close(median(&e["all"]["tokens"]), 1.0), "{e}\n{}", stderr(&out));
    assert!(e["all"].get("calls").is_none(), "no call reference, no call ratio: {e}");
    // check.efficiency (max 1.2×) fails trial 3 (1.5×): accepted trials are 1 and 2 → 0.5, 1 → 0.75.
    assert_eq!(s["cases"][0]["accepted"], 2, "{}", stdout(&out));
    assert!(close(median(&e["accepted"]["tokens"]), 0.75), "{e}");
    let trials = trials(&dir.path().join("out"));
    let check = trials[2]["checks"].as_array().unwrap().iter().find(|c| c["name"] == "efficiency (max 1.2x)").unwrap();
    assert_eq!(check["passed"], false);
    assert!(close(check["evidence"]["tokens_ratio"].as_f64().unwrap(), 1.5), "{check}");
    // Nothing accepted went over the reference's own max_ratio (2).
    assert_eq!(s["efficiency"]["over_reference"]["count"], 0);
}

#[test]
fn bad_references_are_refused_with_their_line() {
    let cases = [
        ("reference = { calls = 0 }", "'reference'.calls must be a positive integer"),
        ("reference = { calls = 2.5 }", "'reference'.calls must be a positive integer"),
        ("reference = {}", "gives neither 'calls' nor 'tokens'"),
        ("reference = { calls = {} }", "is an empty list"),
        ("reference = { calls = { \"nope\" } }", "names an undeclared tool 'nope'"),
        ("reference = { calls = 3, steps = 2 }", "steps"),
        ("reference = { tokens = -5 }", "'reference'.tokens must be a positive integer"),
        ("reference = { calls = 3, max_ratio = 0 }", "max_ratio must be a positive number"),
        ("reference = 3", "'reference' must be a table"),
    ];
    for (decl, want) in cases {
        let suite = format!(
            "local evalua = require('evalua')\nlocal s = evalua.suite {{ name = 'bad' }}\n\
             s:tool {{ name = 'lookup', run = function() return 1 end }}\n\
             s:case {{ id = 'x', input = 'x', {decl} }}\nreturn s\n"
        );
        let dir = project(&[("bad.lua", &suite)]);
        let o = evalua(dir.path(), &["check", "bad.lua"]);
        assert_eq!(o.status.code(), Some(2), "{decl}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(want) && err.contains("bad.lua:4"), "{decl}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
}
