//! Adaptive trials (SPEC §20): `evalua run --adaptive` and `trials = { min,
//! max }` run rounds until every pass^1 / accepted gate is decided by an
//! anytime-valid sequence; summary.json's `adaptive`; exit codes; resume;
//! the flags an adaptive run refuses.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common::*;

/// A suite of cases whose scripted agent succeeds with a known rate per case
/// (a seeded draw per trial), with `extra` suite keys (gates, trials).
fn suite(rates: &[f64], extra: &str) -> String {
    let cases: String = rates
        .iter()
        .enumerate()
        .map(|(i, r)| {
            format!(
                "rate[\"c{i}\"] = {r}\nsuite:case {{ id = \"c{i}\", input = \"x\", expect = {{ check.answer {{ equals = \"yes\" }} }} }}\n"
            )
        })
        .collect();
    format!(
        r#"local evalua = require("evalua")
local check = require("evalua.check")
local rate = {{}}
local SLOW = false
local suite = evalua.suite {{ name = "adaptive", sandbox = {{ clock = "2026-12-01T00:00:00Z" }},
  agent = evalua.agent.scripted(function(task, env)
    if SLOW then local t0 = os.clock() while os.clock() - t0 < 0.03 do end end
    if env.random() < rate[task.case] then return "yes" end
    return "no"
  end),
  {extra} }}
{cases}return suite
"#
    )
}

fn run(dir: &Path, args: &[&str]) -> (std::process::Output, Value) {
    let mut all = vec!["run", "s.lua", "-q", "--out", "out"];
    all.extend_from_slice(args);
    let o = evalua(dir, &all);
    let summary = std::fs::read_to_string(dir.join("out/summary.json"))
        .map(|s| serde_json::from_str(&s).unwrap())
        .unwrap_or(Value::Null);
    (o, summary)
}

fn per_case(dir: &Path) -> std::collections::BTreeMap<String, u32> {
    let mut n = std::collections::BTreeMap::new();
    for r in trials(dir) {
        *n.entry(r["case"].as_str().unwrap().to_string()).or_insert(0) += 1;
    }
    n
}

#[test]
fn a_clear_gate_stops_early_passes_and_says_so() {
    let src = suite(
        &[0.95, 1.0, 0.9, 1.0, 0.95, 0.9, 1.0, 0.95],
        r#"trials = { min = 2, max = 40 }, gate = { ["pass^1"] = 0.3 }"#,
    );
    let dir = project(&[("s.lua", &src)]);
    let (o, s) = run(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let a = &s["adaptive"];
    assert_eq!(a["trials_max"], 320, "{a}");
    let used = a["trials"].as_u64().unwrap();
    assert!(used < 100, "a clear gate took {used} of 320 trials: {a}");
    assert_eq!(trials(&dir.path().join("out")).len() as u64, used);
    assert!(a["rounds"].as_u64().unwrap() >= 2, "{a}");
    assert!(a["method"].as_str().unwrap().contains("Waudby-Smith"), "{a}");
    assert_eq!(a["finished"], true);
    let g = &a["gates"][0];
    assert_eq!((g["name"].as_str(), g["verdict"].as_str()), (Some("pass^1"), Some("pass")), "{a}");
    assert!(g["decided_at_trials"].as_u64().unwrap() <= used, "{a}");
    assert!(g["sequence"]["low"].as_f64().unwrap() >= 0.3, "{a}");
    assert!(g["sequence"]["high"].as_f64().unwrap() <= 1.0, "{a}");
    // Every case had its min; the run is complete; the gate's verdict is the sequence's.
    assert!(per_case(&dir.path().join("out")).values().all(|&n| n >= 2));
    assert_eq!(s["complete"], true);
    assert_eq!(s["gates"][0]["passed"], true);
    assert!(s["gates"][0]["note"].as_str().unwrap().contains("anytime-valid"), "{}", s["gates"]);
    // The §7 interval is still there, beside it.
    assert!(s["figures"]["intervals"]["pass^1"]["lower"].is_number(), "{}", s["figures"]);
    let out = stdout(&o);
    assert!(out.contains(&format!("{used} of 320 trials ({} saved against the fixed design", 320 - used)), "{out}");
    assert!(out.contains("pass^1 (threshold 0.3): pass after"), "{out}");
}

#[test]
fn a_clear_failure_stops_early_with_exit_1() {
    let src = suite(&[0.1, 0.0, 0.05, 0.1, 0.0, 0.1], r#"trials = { min = 2, max = 30 }, gate = { accepted = 0.9 }"#);
    let dir = project(&[("s.lua", &src)]);
    let (o, s) = run(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let a = &s["adaptive"];
    assert_eq!(a["gates"][0]["verdict"], "fail", "{a}");
    assert!(a["trials"].as_u64().unwrap() < 60, "{a}");
    assert!(a["gates"][0]["sequence"]["high"].as_f64().unwrap() < 0.9, "{a}");
    assert!(stdout(&o).contains("FAIL after"), "{}", stdout(&o));
}

#[test]
fn a_borderline_gate_is_undecided_at_max_and_fails_unless_the_suite_says_pass() {
    let gate = r#"trials = { min = 2, max = 5 }, gate = { ["pass^1"] = 0.5 }"#;
    let dir = project(&[("s.lua", &suite(&[0.5, 0.5, 0.5, 0.5], gate))]);
    let (o, s) = run(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let a = &s["adaptive"];
    assert_eq!(a["gates"][0]["verdict"], "undecided", "{a}");
    assert_eq!(a["gates"][0]["decided_at_trials"], Value::Null, "{a}");
    assert_eq!((a["trials"].as_u64(), a["trials_max"].as_u64()), (Some(20), Some(20)), "{a}");
    // No case past its max.
    assert!(per_case(&dir.path().join("out")).values().all(|&n| n == 5));
    assert!(stdout(&o).contains("UNDECIDED after 20 trials"), "{}", stdout(&o));
    let gate = format!("{gate}, undecided = \"pass\"");
    let dir = project(&[("s.lua", &suite(&[0.5, 0.5, 0.5, 0.5], &gate))]);
    let (o, s) = run(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(s["adaptive"]["undecided"], "pass");
    assert_eq!(s["gates"][0]["passed"], true);
}

#[test]
fn the_rounds_go_first_to_the_uncertain_cases() {
    // Two cases never succeed, two always, four are coin flips; truth 0.5.
    let rates = [0.0, 1.0, 0.5, 0.5, 0.0, 1.0, 0.5, 0.5];
    let src = suite(&rates, r#"trials = { min = 2, max = 60 }, gate = { ["pass^1"] = 0.4 }"#);
    let dir = project(&[("s.lua", &src)]);
    let (o, s) = run(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let n = per_case(&dir.path().join("out"));
    let certain: u32 = ["c0", "c1", "c4", "c5"].iter().map(|c| n[*c]).sum();
    let uncertain: u32 = ["c2", "c3", "c6", "c7"].iter().map(|c| n[*c]).sum();
    assert!(uncertain > certain, "coin flips {uncertain} trials, certain cases {certain}: {n:?}");
    // The §7 figure over the unequal trials still averages the cases' rates.
    let p = s["figures"]["pass_hat_k"]["1"].as_f64().unwrap();
    assert!((p - 0.5).abs() < 0.2, "pass^1 {p}");
}

#[test]
fn adaptive_on_the_command_line_and_the_refusals() {
    let src = suite(&[1.0, 1.0, 1.0], r#"trials = 6, gate = { ["pass^1"] = 0.2, critical_failures = 0 }"#);
    let dir = project(&[("s.lua", &src)]);
    let (o, s) = run(dir.path(), &["--adaptive"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let a = &s["adaptive"];
    assert_eq!(a["trials_max"], 18, "{a}");
    // Only the rate gate is sequential; the other is decided as in any run.
    assert_eq!(a["gates"].as_array().unwrap().len(), 1, "{a}");
    let m = json(&dir.path().join("out/manifest.json"));
    assert_eq!(m["adaptive"]["min"], serde_json::json!([2, 2, 2]));
    // Without --adaptive the same suite runs its fixed trials.
    let o = evalua(dir.path(), &["run", "s.lua", "-q", "--out", "fixed"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(trials(&dir.path().join("fixed")).len(), 18);
    assert!(json(&dir.path().join("fixed/summary.json")).get("adaptive").is_none());
    assert_user_error(
        &evalua(dir.path(), &["run", "s.lua", "--adaptive", "--partition", "hash:1/2"]),
        "--partition with an adaptive run",
    );
    let none = suite(&[1.0], r#"trials = { min = 1, max = 3 }, gate = { critical_failures = 0 }"#);
    let dir = project(&[("s.lua", &none)]);
    assert_user_error(&evalua(dir.path(), &["run", "s.lua"]), "decides its gates on pass^1, pass@1 or accepted");
    let bad = suite(&[1.0], r#"trials = { min = 3, max = 2 }, gate = { accepted = 0.5 }"#);
    let dir = project(&[("s.lua", &bad)]);
    assert_user_error(&evalua(dir.path(), &["run", "s.lua"]), "trials.min (3) is above trials.max (2)");
    let bad = suite(&[1.0], r#"trials = { min = 1, max = 3 }, undecided = "maybe", gate = { accepted = 0.5 }"#);
    let dir = project(&[("s.lua", &bad)]);
    assert_user_error(&evalua(dir.path(), &["run", "s.lua"]), "'undecided' must be \"pass\" or \"fail\"");
}

#[test]
fn a_case_may_give_its_own_range() {
    let src = r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite { name = "own", trials = { min = 1, max = 3 }, gate = { accepted = 0.5 },
  agent = evalua.agent.scripted(function(task, env) return "yes" end) }
suite:case { id = "a", input = "x", expect = { check.answer { equals = "yes" } } }
suite:case { id = "b", input = "x", trials = { min = 4, max = 8 }, expect = { check.answer { equals = "yes" } } }
return suite
"#;
    let dir = project(&[("s.lua", src)]);
    let (o, s) = run(dir.path(), &[]);
    assert!(o.status.code().is_some(), "{}", stderr(&o));
    assert_eq!(s["adaptive"]["trials_max"], 11, "{}", s["adaptive"]);
    let n = per_case(&dir.path().join("out"));
    assert!(n["a"] >= 1 && n["a"] <= 3 && n["b"] >= 4 && n["b"] <= 8, "{n:?}");
    assert_eq!(json(&dir.path().join("out/manifest.json"))["adaptive"]["min"], serde_json::json!([1, 4]));
}

#[test]
fn an_interrupted_adaptive_run_resumed_reaches_the_same_rounds() {
    let rates = [0.9, 0.8, 0.5, 0.7, 0.95, 0.6];
    let src = suite(&rates, r#"trials = { min = 2, max = 30 }, gate = { ["pass^1"] = 0.6 }"#)
        .replace("local SLOW = false", "local SLOW = true");
    let dir = project(&[("s.lua", &src)]);
    let o = evalua(dir.path(), &["run", "s.lua", "-q", "--jobs", "2", "--out", "ref"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let want = json(&dir.path().join("ref/summary.json"))["adaptive"].clone();
    assert!(want["rounds"].as_u64().unwrap() >= 3, "{want}");
    let total = want["trials"].as_u64().unwrap() as usize;
    let mut tries = 0;
    let out = loop {
        tries += 1;
        let out = format!("cut{tries}");
        let lines = dir.path().join(&out).join("trials.jsonl");
        let mut child = bin()
            .current_dir(dir.path())
            .args(["run", "s.lua", "-q", "--jobs", "2", "--out", &out])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Past the first round (12 trials), before the end.
        wait_until("some rounds", || {
            std::fs::read_to_string(&lines).map(|s| s.lines().count()).unwrap_or(0) >= 14
                || child.try_wait().unwrap().is_some()
        });
        // SAFETY: kill only sends a signal to our own child.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGKILL);
        }
        child.wait().unwrap();
        if !dir.path().join(&out).join("summary.json").exists() {
            break out;
        }
        assert!(tries < 5, "the run ended before each of 5 kills");
    };
    let kept = trials(&dir.path().join(&out)).len();
    assert!(kept < total, "{kept} of {total}");
    // The run dir read back says it is incomplete, its rounds cut short.
    let o = evalua(dir.path(), &["report", &out]);
    assert!(stdout(&o).contains("cut short: resume it"), "{}", stdout(&o));
    let o = Command::new(env!("CARGO_BIN_EXE_evalua"))
        .current_dir(dir.path())
        .args(["run", "s.lua", "-q", "--jobs", "2", "--resume", &out])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("its rounds go on from there"), "{}", stderr(&o));
    let got = json(&dir.path().join(&out).join("summary.json"));
    assert_eq!(got["complete"], true, "{got}");
    assert_eq!(got["adaptive"], want, "the resumed run's rounds differ from the uninterrupted run's");
    assert_eq!(trials(&dir.path().join(&out)).len(), total);
    // The records too, in the same order, apart from timings.
    assert_eq!(without_timings(&dir.path().join(&out)), without_timings(&dir.path().join("ref")));
    // A run dir read back replays the same rounds.
    std::fs::remove_file(dir.path().join(&out).join("summary.json")).unwrap();
    let o = evalua(dir.path(), &["report", &out]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Two agents over the same random stream: A succeeds when it draws below
/// 0.2, B below 0.95; `extra` suite keys (the range, the gates).
fn pair(extra: &str) -> String {
    format!(
        r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {{ name = "pair", sandbox = {{ clock = "2026-12-01T00:00:00Z" }},
  agents = {{
    A = evalua.agent.scripted(function(task, env) if env.random() < 0.2 then return "yes" end return "no" end),
    B = evalua.agent.scripted(function(task, env) if env.random() < 0.95 then return "yes" end return "no" end),
  }},
  default_agent = "A",
  perturb = {{ hard = {{ input = "hard" }} }},
  {extra} }}
for i = 1, 6 do
  suite:case {{ id = "c" .. i, input = "x", expect = {{ check.answer {{ equals = "yes" }} }} }}
end
return suite
"#
    )
}

#[test]
fn a_paired_difference_of_two_agents_is_decided_on_the_pairs() {
    let src = pair(r#"trials = { min = 2, max = 30 }, gate = { ["delta pass^1 B-A"] = 0.1 }"#);
    let dir = project(&[("s.lua", &src)]);
    let o = evalua(dir.path(), &["run", "s.lua", "-q", "--out", "out", "--agent", "A", "--agent", "B"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let s = json(&dir.path().join("out/summary.json"));
    let a = &s["adaptive"];
    assert_eq!(a["trials_max"], 360, "{a}");
    let g = &a["gates"][0];
    assert_eq!((g["name"].as_str(), g["verdict"].as_str()), (Some("delta pass^1 B-A"), Some("pass")), "{a}");
    let used = a["trials"].as_u64().unwrap();
    assert!(used < 120, "{a}");
    assert!(g["sequence"]["low"].as_f64().unwrap() >= 0.1 && g["sequence"]["high"].as_f64().unwrap() <= 1.0, "{a}");
    // Both parts ran the same blocks, every one complete; blocks.jsonl has each once.
    let (ta, tb) = (trials(&dir.path().join("out/agents/A")), trials(&dir.path().join("out/agents/B")));
    assert_eq!((ta.len() + tb.len()) as u64, used);
    let key = |v: &Vec<Value>| {
        let mut k: Vec<(String, u64)> =
            v.iter().map(|r| (r["case"].as_str().unwrap().to_string(), r["trial"].as_u64().unwrap())).collect();
        k.sort();
        k
    };
    assert_eq!(key(&ta), key(&tb));
    let blocks = std::fs::read_to_string(dir.path().join("out/blocks.jsonl")).unwrap();
    assert_eq!(blocks.lines().count(), ta.len());
    assert_eq!(s["complete"], true, "{}", s["agents"]);
    assert!(stdout(&o).contains("delta pass^1 B-A (threshold 0.1): pass after"), "{}", stdout(&o));
    let gate = s["gates"].as_array().unwrap().iter().find(|g| g["name"] == "delta pass^1 B-A").unwrap().clone();
    assert_eq!(gate["passed"], true, "{gate}");
}

#[test]
fn a_drop_under_a_perturbation_is_decided_on_the_pairs() {
    // The perturbation makes every case fail: the drop is clear, above 0.3.
    let src = pair(r#"trials = { min = 2, max = 30 }, gate = { ["drop pass^1 @hard"] = 0.3 }"#)
        .replace("if env.random() < 0.95", "if task.input ~= \"hard\" and env.random() < 0.95");
    let dir = project(&[("s.lua", &src)]);
    let o = evalua(dir.path(), &["run", "s.lua", "-q", "--out", "out", "--agent", "B", "--perturb"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let a = &json(&dir.path().join("out/summary.json"))["adaptive"];
    let g = &a["gates"][0];
    assert_eq!((g["name"].as_str(), g["verdict"].as_str()), (Some("drop pass^1 @hard"), Some("fail")), "{a}");
    assert!(a["trials"].as_u64().unwrap() < 120, "{a}");
    assert!(g["sequence"]["low"].as_f64().unwrap() > 0.3, "{a}");
}

#[test]
fn a_regraded_adaptive_run_is_a_fixed_design_of_the_trials_that_ran() {
    let src = suite(&[0.9, 0.8, 0.5, 0.7], r#"trials = { min = 2, max = 20 }, gate = { ["pass^1"] = 0.3 }"#);
    let dir = project(&[("s.lua", &src)]);
    let (o, s) = run(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let ran = s["adaptive"]["trials"].as_u64().unwrap();
    assert!(ran < 80, "{}", s["adaptive"]);
    let o = evalua(dir.path(), &["regrade", "out", "--out", "re"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let r = json(&dir.path().join("re/summary.json"));
    assert_eq!(
        (r["complete"].as_bool(), r["coverage"]["planned"].as_u64()),
        (Some(true), Some(ran)),
        "{}",
        r["coverage"]
    );
    assert!(r.get("adaptive").is_none());
}
