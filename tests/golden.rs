//! The re-layering promise: for the example suites, a seeded run's
//! trials.jsonl and summary.json are byte-identical to the ones recorded in
//! tests/golden/ (written by the binary before the house was re-layered),
//! apart from timings and the run id. Since summary.json is streamed (keys in
//! declaration order, not sorted), its goldens were rewritten once; the old
//! and new files parsed to equal JSON values before they were replaced. The
//! refunds trials were rewritten once more when check.tools began showing
//! recall and precision at four decimals (issue 27): two evidence values changed.

use crate::common::*;

/// Replace timing values and the run id with `"T"`, textually, so that every
/// other byte (key order, number formatting, spacing) is still compared.
fn normalized(text: &str) -> String {
    let re = regex::Regex::new(
        r#""(wall_ms|p50_ms|p95_ms|started_ms|ended_ms|latency_ms|duration_ms|at_ms|run_id)": ?("[^"]*"|-?[0-9][0-9.eE+-]*)"#,
    )
    .unwrap();
    re.replace_all(text, |c: &regex::Captures| format!("\"{}\":\"T\"", &c[1])).into_owned()
}

fn same_as_golden(suite: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = evalua(
        &repo(),
        &["run", &format!("suites/{suite}.lua"), "--seed", "7", "--jobs", "2", "-q", "--out", out.to_str().unwrap()],
    );
    assert!(o.status.code() == Some(0) || o.status.code() == Some(1), "{}", stderr(&o));
    for file in ["trials.jsonl", "summary.json"] {
        let got = normalized(&std::fs::read_to_string(out.join(file)).unwrap());
        let want = std::fs::read_to_string(repo().join("tests/golden").join(suite).join(file)).unwrap();
        if got != want {
            let line = got.lines().zip(want.lines()).position(|(a, b)| a != b);
            panic!(
                "{suite}/{file} differs from tests/golden (first differing line: {:?})\n got: {}\nwant: {}",
                line.map(|l| l + 1),
                line.and_then(|l| got.lines().nth(l)).unwrap_or("(end)"),
                line.and_then(|l| want.lines().nth(l)).unwrap_or("(end)"),
            );
        }
    }
}

#[test]
fn refunds_run_is_byte_identical_to_the_golden_one() {
    same_as_golden("refunds");
}

#[test]
fn date_filter_run_is_byte_identical_to_the_golden_one() {
    same_as_golden("date_filter");
}
