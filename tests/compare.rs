//! `evalua compare` and `run --baseline`: paired case by case, with paired
//! bootstrap intervals; refuses different suite revisions unless allowed.

use serde_json::Value;

use crate::common::*;
use crate::synth::{self, Synth};

/// 40 cases × 5 trials. The base has a spread of rates; `planted` cases drop
/// from 5/5 to 1/5 in the candidate, and 4 others move by one trial (2 up, 2 down).
fn pair(dir: &std::path::Path, planted: usize) -> (Synth<'static>, Synth<'static>) {
    let base_pattern = |i: usize| ["aaaaa", "aaaaf", "aaaff", "aafff", "aaaaa"][i % 5];
    let mut base = Vec::new();
    let mut cand = Vec::new();
    for i in 0..40 {
        let id = format!("case_{i:02}");
        let b = if i < planted { "aaaaa" } else { base_pattern(i) };
        let c = if i < planted {
            "affff".to_string()
        } else if i == 12 || i == 22 {
            b.replacen('f', "a", 1) // one more accepted (if any failed)
        } else if i == 11 || i == 21 {
            b.replacen('a', "f", 1)
        } else {
            // Same rate, different trials: unchanged.
            b.chars().rev().collect()
        };
        base.push((id.clone(), b.to_string()));
        cand.push((id, c));
    }
    let mut b = Synth::new(&[]);
    b.cases = base;
    b.seed = 11;
    let mut c = Synth::new(&[]);
    c.cases = cand;
    c.seed = 12;
    synth::write(&dir.join("base"), &b);
    synth::write(&dir.join("cand"), &c);
    (b, c)
}

fn compare_json(dir: &std::path::Path, extra: &[&str]) -> Value {
    let mut args = vec!["compare", "base", "cand", "--json"];
    args.extend_from_slice(extra);
    let o = evalua(dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn figure<'a>(c: &'a Value, name: &str) -> &'a Value {
    c["figures"].as_array().unwrap().iter().find(|f| f["name"] == name).unwrap()
}

#[test]
fn a_planted_regression_on_5_of_40_cases_is_detected() {
    let dir = project(&[]);
    pair(dir.path(), 5);
    let c = compare_json(dir.path(), &[]);
    let regressed: Vec<&str> = c["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["class"] == "regressed")
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    for i in 0..5 {
        assert!(regressed.contains(&format!("case_{i:02}").as_str()), "case_{i:02} not flagged: {regressed:?}");
    }
    // Only the noise cases besides: the two that lost one trial.
    assert_eq!(regressed.len(), 7, "{regressed:?}");
    assert_eq!(c["counts"]["improved"], 2);
    assert_eq!(c["counts"]["unchanged"], 31);
    let acc = figure(&c, "accepted");
    // Δ = (5 × −0.8 + 2 × 0.2 − 2 × 0.2) / 40 = −0.1, and the paired interval excludes 0.
    assert!(close(acc["delta"].as_f64().unwrap(), -0.1), "{acc}");
    let hi = acc["interval"][1].as_f64().unwrap();
    assert!(hi < 0.0, "the paired interval should exclude 0: {acc}");
    assert_eq!(acc["cases"], 40);
    let hat2 = figure(&c, "pass^2");
    assert!(hat2["interval"][1].as_f64().unwrap() < 0.0, "{hat2}");
    // Same cost per trial, fewer accepted: cost per accepted trial went up.
    let cost = figure(&c, "cost_per_accepted_usd");
    assert!(cost["delta"].as_f64().unwrap() > 0.0 && cost["interval"][0].as_f64().unwrap() > 0.0, "{cost}");

    // The console and Markdown views list the regressed cases.
    let o = evalua(dir.path(), &["compare", "base", "cand"]);
    let out = stdout(&o);
    assert!(out.contains("7 regressed") && out.contains("case_03  5/5 → 1/5 (−80.0 pt)"), "{out}");
    let md = stdout(&evalua(dir.path(), &["compare", "base", "cand", "--markdown"]));
    assert!(md.contains("| figure | base | candidate | Δ | 95% interval of Δ | paired cases |"), "{md}");
    assert!(
        md.contains("<details open><summary>7 regressed</summary>")
            && md.contains("| <code>case_00</code> | 5/5 | 1/5 | −80.0 pt |"),
        "{md}"
    );
}

#[test]
fn noise_alone_is_not_called_a_regression_of_the_suite() {
    let dir = project(&[]);
    pair(dir.path(), 0);
    let c = compare_json(dir.path(), &[]);
    let acc = figure(&c, "accepted");
    let (lo, hi) = (acc["interval"][0].as_f64().unwrap(), acc["interval"][1].as_f64().unwrap());
    assert!(lo < 0.0 && hi > 0.0, "two cases up, two down: the interval must contain 0: {acc}");
}

#[test]
fn different_suite_revisions_are_refused_unless_allowed() {
    let dir = project(&[]);
    let (b, mut c) = pair(dir.path(), 5);
    c.suite_sha256 = "fedcba9876543210";
    // A case that newly fails a critical check.
    c.cases[30].1 = "aaaac".into();
    std::fs::remove_dir_all(dir.path().join("cand")).unwrap();
    synth::write(&dir.path().join("cand"), &c);
    let o = evalua(dir.path(), &["compare", "base", "cand"]);
    assert_user_error(
        &o,
        "ran different suite revisions: the suite file differs (sha256 0123456789ab vs fedcba987654)",
    );
    let cj = compare_json(dir.path(), &["--allow-revision-change"]);
    let warnings = cj["warnings"].to_string();
    assert!(warnings.contains("revision change allowed"), "{warnings}");
    assert_eq!(cj["new_critical"], serde_json::json!(["case_30"]));
    drop(b);
}

#[test]
fn differing_trials_and_budgets_are_warned_about() {
    let dir = project(&[]);
    let (_, mut c) = pair(dir.path(), 0);
    c.cases[0].1 = "aaa".into();
    std::fs::remove_dir_all(dir.path().join("cand")).unwrap();
    synth::write(&dir.path().join("cand"), &c);
    let mut m = json(&dir.path().join("cand/manifest.json"));
    m["budget"]["max_tool_calls"] = 20.into();
    std::fs::write(dir.path().join("cand/manifest.json"), m.to_string()).unwrap();
    let o = evalua(dir.path(), &["compare", "base", "cand"]);
    assert_eq!(o.status.code(), Some(0));
    let err = stderr(&o);
    assert!(err.contains("warning: budgets differ"), "{err}");
    assert!(err.contains("warning: trials per case differ for 1 case(s)"), "{err}");
    // pass^k only for the k both runs support everywhere.
    let cj = compare_json(dir.path(), &[]);
    assert!(cj["figures"].as_array().unwrap().iter().any(|f| f["name"] == "pass^3"));
    assert!(!cj["figures"].as_array().unwrap().iter().any(|f| f["name"] == "pass^4"));
}

#[test]
fn run_with_a_baseline_compares_and_refuses_another_suite_up_front() {
    let dir = project(&[]);
    let out = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let run = |args: &[&str]| bin().current_dir(repo()).args(args).output().unwrap();
    let o = run(&["run", "suites/refunds.lua", "--out", &out("a"), "-q", "--seed", "1"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let o = run(&["run", "suites/refunds.lua", "--out", &out("b"), "-q", "--seed", "2", "--baseline", &out("a")]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(stdout(&o).contains("compare refunds: base"), "{}", stdout(&o));
    let cj = json(&dir.path().join("b/compare.json"));
    assert_eq!(cj["cases"].as_array().unwrap().len(), 3);
    assert!(dir.path().join("b/compare.md").is_file());
    // Another suite file: refused before any trial runs.
    let o = run(&["run", "suites/date_filter.lua", "--out", &out("c"), "-q", "--baseline", &out("a")]);
    assert_user_error(&o, "it ran a different revision of suites/date_filter.lua");
    assert!(!dir.path().join("c").exists());
}

/// A suite that freezes no clock runs at its start time; two of its runs a
/// second apart are still the same revision of every case, so they compare
/// (they did not, whenever the second changed between them).
#[test]
fn two_runs_of_a_suite_without_a_clock_are_the_same_revision() {
    let suite = r#"local evalua = require("evalua")
local suite = evalua.suite { name = "s", agent = evalua.agent.scripted(function(task) return "hi" end) }
suite:case { id = "a", input = "x", expect = { function(t) return true end } }
return suite
"#;
    let dir = project(&[("s.lua", suite)]);
    let run = |out: &str| {
        let o = evalua(dir.path(), &["run", "s.lua", "--out", out, "-q"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        json(&dir.path().join(out).join("manifest.json"))
    };
    let a = run("a");
    // Past the next whole second, so the runs' start times differ.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let b = run("b");
    assert_ne!(a["cases"][0]["clock"], b["cases"][0]["clock"], "the runs' clocks differ");
    assert_eq!(a["cases"][0]["revision"], b["cases"][0]["revision"]);
    let o = evalua(dir.path(), &["compare", "a", "b"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
