//! summary.json's figures equal hand-computed estimator values for agents
//! whose pass pattern per trial is known.

use crate::common::*;

const SUITE: &str = r#"
local evalua = require("evalua")
local check = require("evalua.check")
-- Passes exactly the first `passes` trials of each case (from the case metadata).
local suite = evalua.suite {
  name = "figures",
  agent = evalua.agent.scripted(function(task, env)
    return task.trial <= PASSES[task.case] and "pass" or "fail"
  end),
  gate = { ["pass^2"] = 0.4, ["pass@2"] = { min = 0.9, on = "lower" }, accepted = 0.5 },
}
PASSES = { two_of_four = 2, seven_of_eight = 7, heavy = 1 }
suite:case { id = "two_of_four", input = "x", trials = 4, expect = { check.answer { equals = "pass" } } }
suite:case { id = "seven_of_eight", input = "x", trials = 8, expect = { check.answer { equals = "pass" } } }
suite:case { id = "heavy", input = "x", trials = 4, weight = 2, expect = { check.answer { equals = "pass" } } }
return suite
"#;

#[test]
fn pass_at_k_and_pass_hat_k_match_the_unbiased_estimators() {
    let dir = project(&[("figures.lua", SUITE)]);
    let out = run_suite(dir.path(), "figures.lua", &[]);
    let summary = json(&dir.path().join("out/summary.json"));
    let case = |id: &str| summary["cases"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap().clone();

    let a = case("two_of_four");
    assert_eq!(a["n"], 4);
    assert_eq!(a["accepted"], 2);
    assert!(close(a["pass_at_k"]["2"].as_f64().unwrap(), 5.0 / 6.0));
    assert!(close(a["pass_hat_k"]["2"].as_f64().unwrap(), 1.0 / 6.0));
    assert!(close(a["pass_hat_k"]["1"].as_f64().unwrap(), 0.5));
    assert_eq!(a["outcomes"]["failed"], 2);

    let b = case("seven_of_eight");
    assert!(close(b["pass_hat_k"]["4"].as_f64().unwrap(), 0.5));
    assert!(close(b["pass_at_k"]["8"].as_f64().unwrap(), 1.0));
    assert!(close(b["pass_hat_k"]["8"].as_f64().unwrap(), 0.0));

    // Suite means weight cases as declared (heavy counts twice) and stop at the
    // largest k every case has (4).
    let heavy_hat2 = 0.0; // 1 of 4 → C(1,2) = 0
    let want_hat2 = (1.0 / 6.0 + 21.0 / 28.0 + 2.0 * heavy_hat2) / 4.0;
    let fig = &summary["figures"];
    assert!(close(fig["pass_hat_k"]["2"].as_f64().unwrap(), want_hat2), "{}", fig["pass_hat_k"]);
    assert!(fig["pass_hat_k"].get("5").is_none(), "k beyond the smallest case's n is not averaged");
    let want_rate = (0.5 + 7.0 / 8.0 + 2.0 * 0.25) / 4.0;
    assert!(close(fig["accepted_rate"].as_f64().unwrap(), want_rate));
    let iv = &fig["intervals"]["pass^2"];
    assert!(iv["lower"].as_f64().unwrap() <= want_hat2 && want_hat2 <= iv["upper"].as_f64().unwrap());

    // Gates: pass^2 ≈ 0.229 < 0.4 fails; the run exits 1 and says so.
    let gates = summary["gates"].as_array().unwrap();
    let g = gates.iter().find(|g| g["name"] == "pass^2").unwrap();
    assert_eq!(g["passed"], false);
    let lower = gates.iter().find(|g| g["name"] == "pass@2").unwrap();
    assert_eq!(lower["on"], "lower");
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("FAIL pass^2"));
}

#[test]
fn gates_that_hold_exit_zero() {
    let suite = SUITE.replace(
        r#"gate = { ["pass^2"] = 0.4, ["pass@2"] = { min = 0.9, on = "lower" }, accepted = 0.5 },"#,
        r#"gate = { ["pass^1"] = 0.45, critical_failures = 0, grader_errors = 0 },"#,
    );
    let dir = project(&[("figures.lua", &suite)]);
    let out = run_suite(dir.path(), "figures.lua", &[]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("PASS pass^1"));
}
