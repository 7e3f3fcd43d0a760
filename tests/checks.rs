//! Every built-in check accepts what it must and rejects what it must; a
//! check that misbehaves is a grader error, never a pass or a fail.

use std::sync::OnceLock;

use serde_json::Value;

use crate::common::*;

/// Run tests/suites/checks.lua once and share its records.
fn records() -> &'static Vec<Value> {
    static RECORDS: OnceLock<Vec<Value>> = OnceLock::new();
    RECORDS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let suite = repo().join("tests/suites/checks.lua");
        let out = evalua(dir.path(), &["run", suite.to_str().unwrap(), "--out", "out", "-q", "--jobs", "2"]);
        assert!(out.status.code() == Some(0) || out.status.code() == Some(1), "{}", stderr(&out));
        let recs = trials(&dir.path().join("out"));
        std::mem::forget(dir);
        recs
    })
}

fn outcome(case: &str) -> String {
    record(records(), case, 1)["outcome"].as_str().unwrap().to_string()
}

fn only_check(case: &str) -> Value {
    let rec = record(records(), case, 1);
    rec["checks"][0].clone()
}

#[track_caller]
fn accepts(case: &str) {
    assert_eq!(outcome(case), "accepted", "{case}: {}", record(records(), case, 1)["checks"]);
}

#[track_caller]
fn rejects(case: &str) {
    assert_eq!(outcome(case), "failed", "{case}: {}", record(records(), case, 1)["checks"]);
    assert_eq!(only_check(case)["passed"], false);
}

#[track_caller]
fn grader_error(case: &str, needle: &str) {
    let c = only_check(case);
    assert_eq!(outcome(case), "grader_error", "{case}: {c}");
    assert!(c["passed"].is_null(), "{case}: a grader error is neither pass nor fail");
    let err = c["error"].as_str().unwrap_or_default();
    assert!(err.contains(needle), "{case}: error {err:?} should contain {needle:?}");
}

#[test]
fn retries() {
    rejects("retries_bad");
    let ev = &only_check("retries_bad")["evidence"];
    assert_eq!(
        (ev["tool"].as_str(), ev["retries"].as_u64(), ev["first_failure"].as_u64()),
        (Some("flaky"), Some(3), Some(1))
    );
    accepts("retries_ok");
    accepts("retries_other_error_not_a_rate_limit");
    rejects("retries_error_counts_any_failure");
    accepts("retries_reset_by_success");
    accepts("retries_tool_filter");
}

#[test]
fn sql() {
    accepts("sql_equals_ok");
    rejects("sql_equals_bad");
    assert_eq!(only_check("sql_equals_bad")["evidence"]["got"], 59.7);
    accepts("sql_rows_ok");
    rejects("sql_rows_ordered_bad");
    accepts("sql_empty_ok");
    rejects("sql_empty_bad");
}

#[test]
fn answer() {
    accepts("answer_equals_ok");
    rejects("answer_equals_bad");
    accepts("answer_normalize_ok");
    rejects("answer_contains_bad");
    accepts("answer_matches_ok");
    accepts("number_ok");
    rejects("number_bad");
}

#[test]
fn set_equality_never_hides_a_duplicate() {
    accepts("set_ok");
    let rec = record(records(), "set_duplicate", 1);
    assert_eq!(rec["outcome"], "failed");
    assert_eq!(check(rec, "answer set")["passed"], true, "as a set the answer is right");
    let dup = check(rec, "answer set: duplicate");
    assert_eq!(dup["passed"], false);
    assert_eq!(dup["evidence"]["duplicates"][0], "REC-B");
    let wrong = record(records(), "set_wrong", 1);
    assert_eq!(check(wrong, "answer set")["passed"], false);
    assert_eq!(check(wrong, "answer set")["evidence"]["missing"][0], "REC-D");
    assert_eq!(check(wrong, "answer set: duplicate")["passed"], true);
}

#[test]
fn datetimes_compare_as_instants() {
    accepts("datetime_same_instant");
    rejects("datetime_other_instant");
    accepts("datetime_zone");
    accepts("args_datetime");
}

#[test]
fn json_schema() {
    accepts("json_ok");
    rejects("json_bad");
    rejects("json_not_json");
    assert!(only_check("json_not_json")["evidence"]["reason"].as_str().unwrap().starts_with("not JSON"));
}

#[test]
fn tools_modes_report_recall_and_precision() {
    accepts("tools_in_order_extra");
    let ev = &only_check("tools_in_order_extra")["evidence"];
    assert!(close(ev["recall"].as_f64().unwrap(), 1.0));
    // 2/3, shown at four decimals.
    assert_eq!(ev["precision"].as_f64().unwrap(), 0.6667, "an extra harmless call lowers precision: {ev}");
    rejects("tools_exact_extra");
    rejects("tools_min_precision");
    accepts("tools_any_order_ok");
    rejects("tools_wrong_order");
    assert!(close(only_check("tools_wrong_order")["evidence"]["recall"].as_f64().unwrap(), 0.5));
}

#[test]
fn args_comparators() {
    accepts("args_ok");
    rejects("args_bad");
    assert_eq!(only_check("args_bad")["evidence"]["field"], "v");
    accepts("args_text_normalize");
    rejects("args_no_call");
}

#[test]
fn trajectory_checks() {
    accepts("before_ok");
    rejects("before_bad");
    accepts("loops_ok");
    rejects("loops_bad");
    accepts("no_writes_ok");
    rejects("no_writes_bad");
    accepts("max_calls_ok");
    rejects("max_calls_bad");
    accepts("claims_ok");
    rejects("claims_bad");
    accepts("claims_none");
}

#[test]
fn a_refused_write_is_not_a_write() {
    accepts("no_writes_denied_write");
    let rec = record(records(), "no_writes_denied_write", 1);
    assert_eq!(rec["calls"]["denied"], 1);
    assert_eq!(rec["calls"]["executed"], 0);
}

#[test]
fn ended() {
    accepts("ended_ok");
    rejects("ended_bad");
    assert_eq!(only_check("ended_bad")["evidence"]["ended"], "crashed");
}

#[test]
fn files_and_outbox() {
    accepts("files_ok");
    rejects("files_bad");
    accepts("outbox_ok");
    rejects("outbox_bad");
}

#[test]
fn prohibited_state_and_critical_checks_reject_the_trial() {
    let rec = record(records(), "prohibited_critical", 1);
    assert_eq!(rec["outcome"], "critical");
    let p = rec["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"].as_str().unwrap().starts_with("prohibited:"))
        .unwrap();
    assert_eq!(p["critical"], true);
    assert_eq!(p["passed"], false);
    assert_eq!(outcome("critical_flag"), "critical");
}

#[test]
fn custom_checks() {
    accepts("custom_ok");
    rejects("custom_named");
    assert_eq!(only_check("custom_named")["name"], "named custom");
    assert_eq!(only_check("custom_named")["evidence"]["why"], "always");
    accepts("initial_state");
}

#[test]
fn misbehaving_checks_are_grader_errors_and_the_run_goes_on() {
    grader_error("custom_error", "boom");
    grader_error("custom_nonbool", "must return true or false");
    grader_error("check_endless_loop", "instruction limit");
    grader_error("check_pcall_loop", "instruction limit");
    grader_error("check_os_execute", "execute");
    grader_error("check_io_open", "io");
    grader_error("check_memory_hog", "memory");
    grader_error("check_db_read_only", "read-only");
    grader_error("check_db_pragma", "read-only");
    assert!(!std::path::Path::new("/tmp/evalua-pwned").exists());
    accepts("after_the_bad_checks");
}
