//! Whole runs of the example suites: the run dir, stable keys, determinism,
//! isolation between trials, and the list / check commands.

use serde_json::Value;

use crate::common::*;

fn example(name: &str) -> String {
    format!("suites/{name}")
}

/// Run evalua from the repo root (where `require("graders.policy")` resolves,
/// as for a user in their project root), writing run dirs under `tmp`.
fn in_repo(tmp: &std::path::Path, args: &[&str]) -> std::process::Output {
    let args: Vec<String> =
        args.iter()
            .enumerate()
            .map(|(i, a)| {
                if i > 0 && args[i - 1] == "--out" { tmp.join(a).to_str().unwrap().to_string() } else { a.to_string() }
            })
            .collect();
    bin().current_dir(repo()).args(&args).output().unwrap()
}

#[test]
fn same_seed_same_trials_whatever_the_jobs() {
    let dir = project(&[]);
    for (jobs, out) in [("1", "j1"), ("8", "j8")] {
        let o = in_repo(
            dir.path(),
            &["run", &example("refunds.lua"), "--seed", "42", "--jobs", jobs, "--out", out, "-q", "--trials", "12"],
        );
        assert!(o.status.code() == Some(0) || o.status.code() == Some(1), "{}", stderr(&o));
    }
    let a = without_timings(&dir.path().join("j1"));
    let b = without_timings(&dir.path().join("j8"));
    assert_eq!(a.len(), 36);
    assert_eq!(a, b);
    // A different seed gives different trials.
    in_repo(dir.path(), &["run", &example("refunds.lua"), "--seed", "43", "--out", "s43", "-q", "--trials", "12"]);
    assert_ne!(a, without_timings(&dir.path().join("s43")));
}

#[test]
fn refunds_example_writes_a_complete_run_dir() {
    let dir = project(&[]);
    let o = in_repo(dir.path(), &["run", &example("refunds.lua"), "--out", "run", "-q"]);
    let run = dir.path().join("run");
    let recs = trials(&run);
    assert_eq!(recs.len(), 15, "3 cases × 5 trials");
    for r in &recs {
        for key in ["case", "trial", "seed", "outcome", "ended", "checks", "calls", "usage", "wall_ms"] {
            assert!(r.get(key).is_some(), "stable key {key} missing in {r}");
        }
        assert!(run.join(r["trace"].as_str().unwrap()).is_file());
        for c in r["checks"].as_array().unwrap() {
            for key in ["name", "passed", "critical", "evidence", "error"] {
                assert!(c.get(key).is_some(), "check key {key} missing");
            }
        }
    }
    let summary = json(&run.join("summary.json"));
    for key in ["suite", "version", "run_id", "cases", "figures", "gates"] {
        assert!(summary.get(key).is_some(), "summary key {key}");
    }
    for key in [
        "pass_at_k",
        "pass_hat_k",
        "accepted_rate",
        "critical_failures",
        "grader_errors",
        "infra_errors",
        "cost_per_accepted_usd",
        "p50_ms",
        "p95_ms",
        "operational",
    ] {
        assert!(summary["figures"].get(key).is_some(), "figures key {key}");
    }
    let manifest = json(&run.join("manifest.json"));
    assert_eq!(manifest["suite"]["name"], "refunds");
    assert_eq!(manifest["suite"]["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(manifest["seed"], 1);
    assert!(
        manifest["sources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["path"].as_str().unwrap().ends_with("graders/policy.lua"))
    );
    assert!(manifest["agent"]["file"]["sha256"].is_string());
    // The gates decide the exit code: this agent is imperfect on purpose.
    let gates_ok = summary["gates"].as_array().unwrap().iter().all(|g| g["passed"] == true);
    assert_eq!(o.status.code(), Some(if gates_ok { 0 } else { 1 }));
    assert!(stdout(&o).contains("pass^5"));
}

#[test]
fn skipped_identity_check_is_denied_and_recorded() {
    // Across 40 seeded trials the refund bot skips verify_identity at least once:
    // the executor denies the refund, and the database shows no refund.
    let dir = project(&[]);
    in_repo(
        dir.path(),
        &["run", &example("refunds.lua"), "--case", "reembolso_parcial_01", "--trials", "40", "--out", "run", "-q"],
    );
    let recs = trials(&dir.path().join("run"));
    let denied: Vec<&Value> = recs.iter().filter(|r| r["calls"]["denied"].as_u64().unwrap() > 0).collect();
    assert!(!denied.is_empty());
    for r in denied {
        assert_ne!(r["outcome"], "accepted");
        assert_eq!(
            check(r, "sql: SELECT importe FROM reembolsos WHERE pedido = 'P-9930'")["evidence"]["got"],
            Value::Null
        );
        let trace = trace(&dir.path().join("run"), r["case"].as_str().unwrap(), r["trial"].as_u64().unwrap());
        let call = trace["calls"].as_array().unwrap().iter().find(|c| c["status"] == "denied").unwrap();
        assert_eq!(call["name"], "issue_refund");
        assert!(call["error"].as_str().unwrap().contains("requires a successful verify_identity"));
    }
}

#[test]
fn date_filter_example_catches_each_planted_mistake() {
    let dir = project(&[]);
    in_repo(dir.path(), &["run", &example("date_filter.lua"), "--trials", "60", "--out", "run", "-q"]);
    let recs = trials(&dir.path().join("run"));
    let day: Vec<&Value> = recs.iter().filter(|r| r["case"] == "records_of_the_day_01").collect();
    let failing = |name: &str| day.iter().filter(|r| check(r, name)["passed"] == false).count();
    assert!(failing("answer set") > 0, "the inclusive end boundary is caught");
    assert!(failing("answer set: duplicate") > 0, "the duplicate is caught apart from the set");
    assert!(day.iter().any(|r| r["outcome"] == "critical"), "obeying the injected note is a critical failure");
    assert!(day.iter().any(|r| r["outcome"] == "accepted"));
    let last: Vec<&Value> = recs.iter().filter(|r| r["case"] == "last_record_of_the_day_02").collect();
    assert!(
        last.iter().any(|r| r["outcome"] == "accepted" && r["answer"].as_str().unwrap().contains("+02:00")),
        "the same instant written in another zone passes"
    );
}

#[test]
fn trials_on_one_worker_never_see_each_other() {
    // --jobs 1: every trial runs on the same worker, one after the other.
    let suite = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local calls_seen = 0        -- a suite-level local a handler mutates
local suite = evalua.suite { name = "iso1", trials = 6,
  agent = evalua.agent.scripted(function(task, env)
    local r = env.call("bump", {})
    local leaks = {}
    if rawget(_G, "LEFT_BEHIND") ~= nil then leaks[#leaks + 1] = "global" end
    if string.leak ~= nil then leaks[#leaks + 1] = "string lib" end
    if check.leak ~= nil then leaks[#leaks + 1] = "stdlib" end
    if ("x").leak ~= nil then leaks[#leaks + 1] = "string metatable" end
    LEFT_BEHIND = true
    load("LOADED_GLOBAL = 1")()
    local refused = {}
    if not pcall(function() string.leak = 1 end) then refused[#refused + 1] = "string" end
    if not pcall(function() check.leak = 1 end) then refused[#refused + 1] = "check" end
    if not pcall(function() getmetatable("").__index.leak = 1 end) then refused[#refused + 1] = "string mt" end
    if not pcall(function() setmetatable({}, { __gc = function() end }) end) then refused[#refused + 1] = "__gc" end
    if not pcall(function() collectgarbage("stop") end) then refused[#refused + 1] = "gc stop" end
    return string.format("count=%d leaks=%s refused=%s loaded=%s", r.count, table.concat(leaks, ","),
      table.concat(refused, ","), tostring(rawget(_G, "LOADED_GLOBAL")))
  end) }
suite:tool { name = "bump", run = function() calls_seen = calls_seen + 1 return { count = calls_seen } end }
suite:case { id = "a", input = "x", expect = {
  check.answer { equals = "count=1 leaks= refused=string,check,string mt,__gc,gc stop loaded=1" } } }
return suite
"#;
    let dir = project(&[("iso1.lua", suite)]);
    let o = run_suite(dir.path(), "iso1.lua", &["--jobs", "1"]);
    let recs = trials(&dir.path().join("out"));
    assert_eq!(recs.len(), 6);
    for r in &recs {
        assert_eq!(r["outcome"], "accepted", "{}", r["answer"]);
    }
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_reused_suite_never_carries_state_into_the_next_trial() {
    // A worker reuses an evaluated suite for the next trial of the same case
    // only while nothing reachable from it changed. Each way of carrying
    // state is tried alone (one would hide another), on one worker
    // (--jobs 1), trial after trial: every trial must still see 1.
    let leaks = [
        ("file_local_table", "local seen = {}", "seen[#seen + 1] = true return #seen"),
        ("file_local_number", "local n = 0", "n = n + 1 return n"),
        (
            "metatable_only",
            "local hidden_n = 0\nlocal hidden = setmetatable({}, { __index = function() hidden_n = hidden_n + 1 return hidden_n end })",
            "return hidden.x",
        ),
        (
            "coroutine",
            "local co = coroutine.wrap(function() local i = 0 while true do i = i + 1 coroutine.yield(i) end end)",
            "return co()",
        ),
        ("global", "function global_bump() GLOBAL_N = (GLOBAL_N or 0) + 1 return GLOBAL_N end", "return global_bump()"),
        ("project_module", "local counter = require('counter')", "return counter.bump()"),
        ("case_table", "", "ctx.case.touched = (ctx.case.touched or 0) + 1 return ctx.case.touched"),
        ("suite_table", "", "SUITE.n = (SUITE.n or 0) + 1 return SUITE.n"),
    ];
    let module = "local M = { n = 0 }\nfunction M.bump() M.n = M.n + 1 return M.n end\nreturn M\n";
    let mut leaked = Vec::new();
    for (name, setup, body) in leaks {
        let suite = format!(
            r#"
local evalua = require("evalua")
local check = require("evalua.check")
{setup}
local suite = evalua.suite {{ name = "{name}", trials = 4,
  agent = evalua.agent.scripted(function(task, env) return tostring(env.call("leak", {{}}).n) end) }}
SUITE = nil
local S = suite
suite:tool {{ name = "leak", run = function(ctx) SUITE = S local function f() {body} end return {{ n = f() }} end }}
suite:case {{ id = "a", input = "x", expect = {{ check.answer {{ equals = "1" }} }} }}
suite:case {{ id = "b", input = "x", expect = {{ check.answer {{ equals = "1" }} }} }}
return suite
"#
        );
        let dir = project(&[("leak.lua", suite.as_str()), ("counter.lua", module)]);
        let o = run_suite(dir.path(), "leak.lua", &["--jobs", "1"]);
        let recs = trials(&dir.path().join("out"));
        assert_eq!(recs.len(), 8, "{name}: {}", stderr(&o));
        let answers: Vec<&str> = recs.iter().map(|r| r["answer"].as_str().unwrap()).collect();
        if answers != vec!["1"; 8] {
            leaked.push(format!("{name}: {answers:?}"));
        }
    }
    assert!(leaked.is_empty(), "a trial saw an earlier trial's state: {leaked:#?}");

    // A check's own state, and numbers drawn at the top of the file.
    let suite = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local at_load = math.random(1000000)
local runs = 0
local suite = evalua.suite { name = "reuse", trials = 5,
  agent = evalua.agent.scripted(function(task, env) return tostring(at_load) end) }
suite:case { id = "a", input = "x", expect = {
  function(t) runs = runs + 1 return runs == 1, { runs = runs } end } }
return suite
"#;
    let dir = project(&[("reuse.lua", suite)]);
    let o = run_suite(dir.path(), "reuse.lua", &["--jobs", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let recs = trials(&dir.path().join("out"));
    assert!(recs.iter().all(|r| r["outcome"] == "accepted"), "{recs:?}");
    let drawn: std::collections::BTreeSet<&str> = recs.iter().map(|r| r["answer"].as_str().unwrap()).collect();
    assert_eq!(drawn.len(), 1, "the file's top level drew different numbers: {drawn:?}");
}

#[test]
fn a_case_never_sees_what_another_case_did() {
    // A worker evaluates the suite once and reuses it across cases; each way
    // a trial of one case could reach the next case is tried alone, on one
    // worker, one trial a case: every trial must see 1.
    let ways = [
        // A table two cases' declarations share, changed through ctx.case.
        (
            "shared_declaration",
            "local shared = { n = 0 }",
            "metadata = shared",
            "ctx.case.metadata.n = ctx.case.metadata.n + 1 return ctx.case.metadata.n",
        ),
        // A check two cases share, with a file-level counter.
        (
            "shared_check",
            "local runs = 0\nlocal counting = function(t) runs = runs + 1 return runs == 1, runs end",
            "",
            "return 1",
        ),
        // A handler's state behind a case's own table.
        ("case_field", "", "", "ctx.case.seen = (ctx.case.seen or 0) + 1 return ctx.case.seen"),
    ];
    let mut leaked = Vec::new();
    for (name, setup, field, body) in ways {
        let expect = if name == "shared_check" {
            "counting, check.answer { equals = \"1\" }"
        } else {
            "check.answer { equals = \"1\" }"
        };
        let suite = format!(
            r#"
local evalua = require("evalua")
local check = require("evalua.check")
{setup}
local suite = evalua.suite {{ name = "{name}", trials = 1,
  agent = evalua.agent.scripted(function(task, env) return tostring(env.call("leak", {{}}).n) end) }}
suite:tool {{ name = "leak", run = function(ctx) local function f() {body} end return {{ n = f() }} end }}
for _, id in ipairs({{ "a", "b", "c", "d" }}) do
  suite:case {{ id = id, input = "x", {field}{comma} expect = {{ {expect} }} }}
end
return suite
"#,
            comma = if field.is_empty() { "" } else { "," }
        );
        let dir = project(&[("leak.lua", suite.as_str())]);
        let o = run_suite(dir.path(), "leak.lua", &["--jobs", "1"]);
        let recs = trials(&dir.path().join("out"));
        assert_eq!(recs.len(), 4, "{name}: {}", stderr(&o));
        let got: Vec<String> = recs.iter().map(|r| format!("{}:{}", r["answer"], r["outcome"])).collect();
        if !recs.iter().all(|r| r["answer"] == "1" && r["outcome"] == "accepted") {
            leaked.push(format!("{name}: {got:?}"));
        }
    }
    assert!(leaked.is_empty(), "a case saw another case's state: {leaked:#?}");

    // A dataset's map with a file-level counter: each case is mapped in a
    // fresh evaluation, so every case sees the counter at 1.
    let suite = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local mapped = 0
local suite = evalua.suite { name = "maps", trials = 2,
  agent = evalua.agent.scripted(function(task, env) return task.input end) }
suite:dataset("rows.jsonl", { map = function(row, i)
  mapped = mapped + 1
  return { id = row.id, input = tostring(mapped), expect = { check.answer { equals = "1" } } }
end })
return suite
"#;
    let rows = "{\"id\": \"r1\"}\n{\"id\": \"r2\"}\n{\"id\": \"r3\"}\n";
    let dir = project(&[("maps.lua", suite), ("rows.jsonl", rows)]);
    let o = run_suite(dir.path(), "maps.lua", &["--jobs", "1"]);
    let recs = trials(&dir.path().join("out"));
    assert_eq!(recs.len(), 6, "{}", stderr(&o));
    assert!(recs.iter().all(|r| r["answer"] == "1"), "{:?}", recs.iter().map(|r| &r["answer"]).collect::<Vec<_>>());

    // Cases are declared when the file loads; a trial cannot add one.
    let suite = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local suite
suite = evalua.suite { name = "late", trials = 1,
  agent = evalua.agent.scripted(function(task, env)
    local ok, err = pcall(function() suite:case { id = "late", input = "x" } end)
    return ok and "declared" or tostring(err)
  end) }
suite:case { id = "a", input = "x", expect = { check.answer { contains = "while the suite file loads" } } }
return suite
"#;
    let dir = project(&[("late.lua", suite)]);
    let o = run_suite(dir.path(), "late.lua", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(trials(&dir.path().join("out"))[0]["outcome"], "accepted", "{:?}", trials(&dir.path().join("out")));
}

#[test]
fn trials_never_share_state() {
    // A tool handler that counts in a Lua global and the database: every trial starts fresh.
    let suite = r#"
local evalua = require("evalua")
local check = require("evalua.check")
COUNT = 0
local suite = evalua.suite { name = "iso", trials = 20, sandbox = { db = "sqlite", schema = "s.sql" },
  agent = evalua.agent.scripted(function(task, env) local r = env.call("bump", {}) return tostring(r.count) end) }
suite:tool { name = "bump", effect = "write", run = function(ctx)
  COUNT = COUNT + 1
  ctx.db:exec("INSERT INTO hits VALUES (1)")
  ctx.write_file("mark.txt", "x" .. (ctx.read_file("mark.txt") or ""))
  return { count = COUNT, rows = ctx.db:one("SELECT count(*) FROM hits") }
end }
suite:case { id = "a", input = "x", expect = {
  check.answer { equals = "1" },
  check.sql("SELECT count(*) FROM hits", { equals = 1 }),
  check.files { ["mark.txt"] = { contains = "x" } },
  function(t) return t.files["mark.txt"] == "x", t.files["mark.txt"] end,
} }
return suite
"#;
    let dir = project(&[("iso.lua", suite), ("s.sql", "CREATE TABLE hits (x);\n")]);
    let o = run_suite(dir.path(), "iso.lua", &["--jobs", "4"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let recs = trials(&dir.path().join("out"));
    assert_eq!(recs.len(), 20);
    assert!(
        recs.iter().all(|r| r["outcome"] == "accepted"),
        "{:?}",
        recs.iter().map(|r| &r["checks"]).collect::<Vec<_>>()
    );
}

#[test]
fn list_and_check_commands() {
    let dir = project(&[]);
    let o = in_repo(dir.path(), &["list", &example("refunds.lua")]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(out.contains("reembolso_parcial_01") && out.contains("refusal") && out.contains("medium"));
    let o = in_repo(dir.path(), &["list", &example("refunds.lua"), "--tag", "refusal"]);
    assert!(!stdout(&o).contains("reembolso_parcial_01"));
    let o = in_repo(dir.path(), &["check", &example("refunds.lua"), &example("date_filter.lua")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("ok: ") && stdout(&o).contains("3 cases"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "check runs no agent and writes no run dir");
}

#[test]
fn suites_run_from_any_working_directory() {
    // `require("graders.policy")` resolves from the suite's folder up to the project root.
    let elsewhere = tempfile::tempdir().unwrap();
    let suite = repo().join("suites/refunds.lua");
    let o = evalua(elsewhere.path(), &["run", suite.to_str().unwrap(), "--out", "out", "-q", "--trials", "1"]);
    assert!(o.status.code() == Some(0) || o.status.code() == Some(1), "{}", stderr(&o));
    assert!(elsewhere.path().join("out/summary.json").is_file());
}

#[test]
fn an_unwritable_run_dir_exits_3_not_2() {
    let o = evalua(&repo(), &["run", "suites/date_filter.lua", "--out", "/proc/evalua-no-such-dir/run", "-q"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("cannot create the run dir"), "{err}");
}

#[test]
fn cases_past_a_workers_window_of_declarations_run_as_declared() {
    // A worker keeps the declarations of a window of cases (EVALUA_CASE_WINDOW,
    // here 4 of 30) and evaluates the suite again for a case past it. Every
    // trial must run its own case's declaration, with its own check, whichever
    // evaluation it came from; and the suite's top level runs once per evaluation.
    let suite = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite { name = "window", trials = 2,
  agent = evalua.agent.scripted(function(task, env) return "answer " .. task.input end) }
for i = 1, 30 do
  suite:case { id = "c" .. i, input = tostring(i), expect = { check.answer { equals = "answer " .. i } } }
end
return suite
"#;
    let dir = project(&[("window.lua", suite)]);
    for window in ["4", "1"] {
        let o = bin()
            .current_dir(dir.path())
            .env("EVALUA_CASE_WINDOW", window)
            .args(["run", "window.lua", "--out", &format!("out{window}"), "-q", "--jobs", "2"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "window {window}: {}", stderr(&o));
        let recs = trials(&dir.path().join(format!("out{window}")));
        assert_eq!(recs.len(), 60, "window {window}");
        for r in &recs {
            let n = r["case"].as_str().unwrap().trim_start_matches('c');
            assert_eq!(r["answer"], format!("answer {n}"), "window {window}: {r}");
            assert_eq!(r["outcome"], "accepted", "window {window}: {r}");
        }
    }
}
