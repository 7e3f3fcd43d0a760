//! Faults injected on purpose (SPEC §11): each kind, when rules fire, what the
//! agent sees, what is recorded, and what checks see.

use serde_json::Value;

use crate::common::*;

/// A suite whose scripted agent calls `list` `calls` times and answers with
/// what it saw (status, error and result of each call, as JSON).
fn suite(faults: &str, case_extra: &str, calls: u32) -> tempfile::TempDir {
    let src = format!(
        r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {{ name = "faults", trials = 2,
  agent = evalua.agent.scripted(function(task, env)
    local seen = {{}}
    for i = 1, {calls} do
      local r, status, err = env.call("list", {{}})
      seen[i] = {{ status = status, err = err or evalua.null, result = r == nil and evalua.null or r }}
    end
    return evalua.json.encode(seen)
  end),
  faults = {{ {faults} }} }}
suite:tool {{ name = "list", run = function(ctx)
  ctx.db:exec("INSERT INTO hits VALUES (1)")
  return {{ items = {{ "a", "b", "c", "d" }}, updated = "2026-11-03T10:00:00Z", total = 4 }}
end }}
suite:tool {{ name = "other", run = function() return {{}} end }}
suite:case {{ id = "c", input = "x", fixture = "f.sql", {case_extra}
  expect = {{ function(t)
    local kinds = {{}}
    for _, c in ipairs(t.calls) do kinds[#kinds + 1] = c.fault and (c.fault.kind .. ":" .. tostring(c.fault.retry_after_s)) or c.status end
    return true, {{ kinds = kinds, hits = t.db:one("SELECT count(*) FROM hits") }}
  end }} }}
return suite
"#
    );
    project(&[("s.lua", &src), ("f.sql", "CREATE TABLE hits (x);\n")])
}

fn run(dir: &tempfile::TempDir) -> (Vec<Value>, Vec<Value>) {
    let o = run_suite(dir.path(), "s.lua", &[]);
    assert!(o.status.code() == Some(0), "{}", stderr(&o));
    let recs = trials(&dir.path().join("out"));
    let seen: Vec<Value> = serde_json::from_str(recs[0]["answer"].as_str().unwrap()).unwrap();
    (recs, seen)
}

#[test]
fn a_rate_limit_on_the_nth_call_stops_the_handler_and_is_recorded() {
    let dir = suite("list = { kind = 'rate_limit', on_call = 2, retry_after_s = 3 }", "", 3);
    let (recs, seen) = run(&dir);
    assert_eq!(seen[0]["status"], "ok");
    assert_eq!(seen[1]["status"], "error");
    assert!(seen[1]["err"].as_str().unwrap().contains("429"), "{seen:?}");
    assert!(seen[1]["err"].as_str().unwrap().contains("retry after 3 s"), "{seen:?}");
    assert_eq!(seen[1]["result"], Value::Null);
    assert_eq!(seen[2]["status"], "ok");
    // Counted apart; the handler did not run (2 hits, not 3).
    assert_eq!(recs[0]["calls"]["faulted"], 1);
    assert_eq!(recs[0]["calls"]["executed"], 2);
    let ev = &recs[0]["checks"][0]["evidence"];
    assert_eq!(ev["kinds"], serde_json::json!(["executed", "rate_limit:3.0", "executed"]));
    assert_eq!(ev["hits"], 2);
    // The trace holds the fault.
    let trace = trace_of(&dir.path().join("out"), &recs[0]);
    let f = &trace["calls"][1]["fault"];
    assert_eq!(f["kind"], "rate_limit");
    assert_eq!(f["rule"], "on_call 2");
    assert_eq!(f["handler_ran"], false);
    assert_eq!(trace["calls"][1]["status"], "faulted");
}

#[test]
fn reshaping_kinds_run_the_handler_and_the_agent_sees_success() {
    let dir = suite(
        "list = { { kind = 'empty', on_call = 1 }, { kind = 'partial', on_call = 2, keep = 0.5 }, { kind = 'stale', on_call = 3, age_s = 7200 } }",
        "",
        4,
    );
    let (recs, seen) = run(&dir);
    for s in &seen {
        assert_eq!(s["status"], "ok", "{seen:?}");
    }
    assert_eq!(seen[0]["result"]["items"], serde_json::json!([]));
    assert_eq!(seen[0]["result"]["total"], 4);
    assert_eq!(seen[1]["result"]["items"], serde_json::json!(["a", "b"]));
    assert_eq!(seen[2]["result"]["updated"], "2026-11-03T08:00:00Z");
    assert_eq!(seen[3]["result"]["items"], serde_json::json!(["a", "b", "c", "d"]));
    assert_eq!(recs[0]["calls"]["faulted"], 3);
    assert_eq!(recs[0]["checks"][0]["evidence"]["hits"], 4, "the handler ran every time");
    let trace = trace_of(&dir.path().join("out"), &recs[0]);
    let f = &trace["calls"][0]["fault"];
    assert_eq!(f["kind"], "empty");
    assert_eq!(f["handler_ran"], true);
    assert_eq!(f["changed"], 4);
    assert_eq!(f["handler_result"]["items"], serde_json::json!(["a", "b", "c", "d"]));
}

#[test]
fn error_and_timeout_kinds_and_custom_messages() {
    let dir = suite(
        "list = { { kind = 'error', on_call = 1, message = 'boom 503' }, { kind = 'timeout', on_call = 2 } }",
        "",
        2,
    );
    let (_, seen) = run(&dir);
    assert_eq!(seen[0]["err"], "boom 503");
    assert!(seen[1]["err"].as_str().unwrap().contains("timed out"), "{seen:?}");
}

#[test]
fn probability_is_seeded_per_trial_and_a_case_can_turn_a_suite_fault_off() {
    let dir = suite("list = { kind = 'error', probability = 0.5 }", "", 20);
    let (recs, _) = run(&dir);
    let faulted: Vec<u64> = recs.iter().map(|r| r["calls"]["faulted"].as_u64().unwrap()).collect();
    assert!(faulted.iter().all(|&n| n > 2 && n < 18), "{faulted:?}");
    // The same seed gives the same faults; another seed other ones.
    let again = evalua(dir.path(), &["run", "s.lua", "-q", "--out", "again"]);
    assert_eq!(again.status.code(), Some(0));
    let faulted2: Vec<u64> =
        trials(&dir.path().join("again")).iter().map(|r| r["calls"]["faulted"].as_u64().unwrap()).collect();
    assert_eq!(faulted, faulted2);
    let seen_a = &recs[0]["checks"][0]["evidence"]["kinds"];
    let other = evalua(dir.path(), &["run", "s.lua", "-q", "--out", "other", "--seed", "2"]);
    assert_eq!(other.status.code(), Some(0));
    assert_ne!(&trials(&dir.path().join("other"))[0]["checks"][0]["evidence"]["kinds"], seen_a);

    let off = suite("list = { kind = 'error' }", "faults = { list = false },", 2);
    let (recs, _) = run(&off);
    assert_eq!(recs[0]["calls"]["faulted"], 0);
}

#[test]
fn the_example_grades_a_429_storm_apart_from_a_polite_backoff() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = evalua(&repo(), &["run", "suites/rate_limits.lua", "-q", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let recs = trials(&out);
    let by = |case: &str| recs.iter().filter(|r| r["case"] == case).collect::<Vec<_>>();
    for r in by("storm_impatient") {
        assert_eq!(r["outcome"], "failed");
        assert_eq!(check(r, "retries (max 2 after rate_limit)")["passed"], false);
        assert_eq!(check(r, "no_loops (max 3)")["passed"], false);
        assert_eq!(r["calls"]["faulted"], 4);
    }
    for case in ["storm_patient", "blip_patient"] {
        for r in by(case) {
            assert_eq!(r["outcome"], "accepted", "{r}");
        }
    }
    assert_eq!(by("blip_patient")[0]["calls"]["faulted"], 1);
}

#[test]
fn a_command_agent_gets_retry_after_in_its_tool_result() {
    let agent = r#"import json, sys
start = json.loads(sys.stdin.readline())
print(json.dumps({"type": "tool_call", "id": "c1", "name": "list", "arguments": {}}), flush=True)
r = json.loads(sys.stdin.readline())
print(json.dumps({"type": "final", "content": json.dumps(r)}), flush=True)
"#;
    let src = r#"local evalua = require("evalua")
local suite = evalua.suite { name = "cmd", agent = evalua.agent.command { cmd = { "python3", evalua.path("a.py") } },
  faults = { list = { kind = "rate_limit", retry_after_s = 5 } } }
suite:tool { name = "list", run = function() return { 1 } end }
suite:case { id = "c", input = "x" }
return suite
"#;
    let dir = project(&[("s.lua", src), ("a.py", agent)]);
    let o = run_suite(dir.path(), "s.lua", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let recs = trials(&dir.path().join("out"));
    let r: Value = serde_json::from_str(recs[0]["answer"].as_str().unwrap()).unwrap();
    assert_eq!(r["status"], "error");
    assert_eq!(r["retry_after_s"], 5.0);
    assert!(r["error"].as_str().unwrap().contains("429"));
}
