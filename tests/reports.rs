//! Reports from run dirs: report.md, junit.xml and report.html, written by
//! `evalua run` and re-rendered by `evalua report` from the run dir alone.

use serde_json::json;

use crate::common::*;
use crate::synth::{self, Synth};

/// Four cases with known figures: accepted rate (1 + 0.6 + 0 + 0.8) / 4 = 0.6,
/// pass^2 (1 + 0.3 + 0 + 0.6) / 4 = 0.475, one critical failure.
fn known() -> Synth<'static> {
    let mut s = Synth::new(&[("all_pass", "aaaaa"), ("flaky", "aaaff"), ("never", "fffff"), ("leaky", "aaaac")]);
    s.gates = json!([
        { "name": "pass^2", "threshold": 0.4, "on": "point" },
        { "name": "critical_failures", "threshold": 0.0, "on": "point" },
    ]);
    s
}

#[test]
fn report_states_known_figures_with_intervals_and_denominators() {
    let dir = project(&[]);
    let run = dir.path().join("run");
    synth::write(&run, &known());
    let o = evalua(dir.path(), &["report", "run"]);
    // A gate failed (one critical failure): exit 1, each verdict printed.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    // Counts read as counts, rates as percentages; the failing gate first.
    assert!(out.contains("FAIL critical_failures: 1, required ≤ 0\n"), "{out}");
    assert!(out.contains("PASS pass^2: 47.5%, required ≥ 40.0%"), "{out}");
    assert!(out.find("FAIL critical").unwrap() < out.find("PASS pass^2").unwrap(), "{out}");

    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(md.contains("| accepted | 60.0% | ["), "{md}");
    assert!(md.contains("| pass^2 | 47.5% | ["), "{md}");
    // Every figure row states its interval and its denominators (4 cases, 20 trials).
    for line in md.lines().filter(|l| l.starts_with("| pass") || l.starts_with("| accepted")) {
        assert!(line.ends_with("| 4 | 20 |"), "{line}");
        assert!(line.contains("% | [") && line.contains("%] |"), "no interval: {line}");
    }
    assert!(md.contains("**Gates: 1 of 2 FAILED.**"));
    // Worst cases link to their traces; the critical evidence is shown.
    assert!(md.contains("### never — 0 of 5 accepted"), "{md}");
    assert!(md.contains("[failed](traces/never.1.json)"), "{md}");
    assert!(md.contains("[critical](traces/leaky.5.json)"), "{md}");
    assert!(md.contains("`no other order refunded` (critical): {\"refunded\":[\"P-1\"]}"), "{md}");

    let xml = std::fs::read_to_string(run.join("junit.xml")).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 4 + 2, "4 cases + 2 gates: {xml}");
    assert!(xml.contains(r#"<testcase name="all_pass" classname="synthetic""#));
    // flaky: pass^2 = C(3,2)/C(5,2) = 0.3 < 0.4; never: 0; leaky: a critical check failed.
    assert!(xml.contains(r#"message="pass^2 0.300 &lt; gate 0.4 (3 of 5 accepted)""#), "{xml}");
    assert!(xml.contains(r#"message="a critical check failed in 1 trial(s)" type="critical""#), "{xml}");
    assert!(
        xml.contains("trial 5: no other order refunded (critical) failed: {&quot;refunded&quot;:[&quot;P-1&quot;]}"),
        "{xml}"
    );
    assert!(xml.contains(r#"failures="3""#), "{xml}");

    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains("<svg id=\"curve\"") && html.contains("<svg id=\"checkbars\""));
    assert!(!html.contains("http://") && !html.contains("https://"), "the report must not reach the network");
    // The failing trials' trajectories are embedded, the accepted ones are not.
    assert!(html.contains("\"leaky#5\":[") && html.contains("\"never#3\":[") && !html.contains("\"all_pass#1\":["));
}

#[test]
fn run_writes_the_reports_and_report_rerenders_them_identically() {
    let dir = project(&[]);
    let out = dir.path().join("run");
    let o = bin()
        .current_dir(repo())
        .args(["run", "suites/refunds.lua", "--out", out.to_str().unwrap(), "-q", "--seed", "3"])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let files = ["report.md", "junit.xml", "report.html"];
    let before: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(out.join(f)).unwrap()).collect();
    for f in files {
        std::fs::remove_file(out.join(f)).unwrap();
    }
    let r = evalua(dir.path(), &["report", "run"]);
    assert_eq!(r.status.code(), o.status.code(), "report's exit code follows the gates: {}", stderr(&r));
    for (f, b) in files.iter().zip(before) {
        assert!(std::fs::read(out.join(f)).unwrap() == b, "{f} differs after re-rendering");
    }
    // The figures the reports show are summary.json's (recomputed from trials.jsonl, same seed).
    let summary = json(&out.join("summary.json"));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let acc = summary["figures"]["accepted_rate"].as_f64().unwrap();
    let lo = summary["figures"]["intervals"]["accepted"]["lower"].as_f64().unwrap();
    let hi = summary["figures"]["intervals"]["accepted"]["upper"].as_f64().unwrap();
    let row = format!("| accepted | {:.1}% | [{:.1}%, {:.1}%] | 3 | 15 |", acc * 100.0, lo * 100.0, hi * 100.0);
    assert!(md.contains(&row), "{row} not in {md}");
}

#[test]
fn report_on_a_bad_run_dir_is_a_one_line_user_error() {
    let dir = project(&[]);
    assert_user_error(&evalua(dir.path(), &["report", "nowhere"]), "nowhere: not a run dir");
    let run = dir.path().join("run");
    synth::write(&run, &known());
    let mut lines = std::fs::read_to_string(run.join("trials.jsonl")).unwrap();
    lines.push_str("{\"case\": \"x\"\n");
    std::fs::write(run.join("trials.jsonl"), lines).unwrap();
    assert_user_error(&evalua(dir.path(), &["report", "run"]), "trials.jsonl:21: not a trial record");
}

/// Validate with xmllint against tests/junit.xsd. Skips (loudly) without
/// xmllint unless EVALUA_REQUIRE_XMLLINT=1 (set by .ci/run).
fn xmllint(file: &std::path::Path) -> Option<std::process::Output> {
    match std::process::Command::new("xmllint").arg("--version").output() {
        Ok(_) => {}
        Err(_) if std::env::var("EVALUA_REQUIRE_XMLLINT").as_deref() == Ok("1") => {
            panic!("xmllint is required (EVALUA_REQUIRE_XMLLINT=1): apt-get install libxml2-utils")
        }
        Err(_) => {
            eprintln!("\n*** SKIPPED: junit.xml schema validation needs xmllint (apt-get install libxml2-utils) ***\n");
            return None;
        }
    }
    let xsd = repo().join("tests/junit.xsd");
    Some(
        std::process::Command::new("xmllint")
            .args(["--noout", "--schema", xsd.to_str().unwrap(), file.to_str().unwrap()])
            .output()
            .unwrap(),
    )
}

#[test]
fn junit_xml_validates_against_the_junit_schema() {
    let dir = project(&[]);
    let run = dir.path().join("run");
    let mut s = known();
    s.cases.push(("down".into(), "iii".into()));
    s.cases.push(("judged".into(), "aag".into()));
    // A case with no trial in this run (another partition's share): skipped, not failed.
    s.cases.push(("elsewhere".into(), "".into()));
    synth::write(&run, &s);
    evalua(dir.path(), &["report", "run"]);
    let xml = std::fs::read_to_string(run.join("junit.xml")).unwrap();
    assert!(xml.contains(r#"<testcase name="down""#) && xml.contains(r#"type="infra_error""#), "{xml}");
    assert!(xml.contains(r#"<skipped message="no trial of this case in this run"#), "{xml}");
    let Some(o) = xmllint(&run.join("junit.xml")) else { return };
    assert!(o.status.success(), "junit.xml does not validate: {}", stderr(&o));
    // The schema is not a rubber stamp: a malformed report fails it.
    let bad = dir.path().join("bad.xml");
    let xml = std::fs::read_to_string(run.join("junit.xml")).unwrap();
    std::fs::write(&bad, xml.replacen("<testcase name=\"all_pass\"", "<testcase nom=\"all_pass\"", 1)).unwrap();
    let o = xmllint(&bad).unwrap();
    assert!(!o.status.success(), "a testcase without a name must not validate");
}

#[test]
fn a_huge_failing_run_embeds_a_bounded_number_of_trajectories() {
    let dir = project(&[]);
    let run = dir.path().join("run");
    let mut s = Synth::new(&[]);
    s.cases = (0..900).map(|i| (format!("case_{i:03}"), "fcfgf".to_string())).collect();
    synth::write(&run, &s);
    let o = evalua(dir.path(), &["report", "run"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.len() < 5_000_000, "{} bytes", html.len());
    // 4,500 non-accepted trials, 4,000 embedded: every case's trials 1-4, then trial 5 of the first 400.
    assert!(html.contains("\"omitted\":500"), "the count of left-out trajectories is stated");
    assert!(
        html.contains("\"case_899#4\":[") && html.contains("\"case_399#5\":[") && !html.contains("\"case_400#5\":[")
    );
}

/// Trajectories are cut at 1,200 characters, and at 160 once the 1,200 ones
/// pass report.html's budget (3 MB): written as they are built, then taken
/// back and written again, which must still leave one valid JSON object.
#[test]
fn long_trajectories_are_cut_harder_past_the_budget() {
    let embedded = |cases: usize, evidence: usize| -> (usize, serde_json::Map<String, serde_json::Value>) {
        let dir = project(&[]);
        let run = dir.path().join("run");
        let mut s = Synth::new(&[]);
        s.cases = (0..cases).map(|i| (format!("case_{i:03}"), "fff".to_string())).collect();
        synth::write(&run, &s);
        // Every check's evidence is `evidence` characters long.
        let trials = std::fs::read_to_string(run.join("trials.jsonl")).unwrap();
        let long: Vec<String> = trials
            .lines()
            .map(|l| {
                let mut r: serde_json::Value = serde_json::from_str(l).unwrap();
                for c in r["checks"].as_array_mut().unwrap() {
                    c["evidence"] = json!("x".repeat(evidence));
                }
                r.to_string()
            })
            .collect();
        std::fs::write(run.join("trials.jsonl"), long.join("\n") + "\n").unwrap();
        let o = evalua(dir.path(), &["report", "run"]);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
        let html = std::fs::read_to_string(run.join("report.html")).unwrap();
        let start = html.find(r#"<script type="application/json" id="traces">"#).unwrap();
        let rest = &html[start..];
        let json = &rest[rest.find('>').unwrap() + 1..rest.find("</script>").unwrap()];
        let traces: serde_json::Map<String, serde_json::Value> = serde_json::from_str(json).unwrap();
        (html.len(), traces)
    };
    let evidence_of = |traces: &serde_json::Map<String, serde_json::Value>, key: &str| -> String {
        let checks = traces[key][7].as_array().unwrap();
        checks[0][3].as_str().unwrap().to_string()
    };
    // 30 failing trials of 2,000 characters: well within the budget, cut at 1,200.
    let (_, traces) = embedded(10, 2000);
    assert_eq!(traces.len(), 30);
    assert_eq!(evidence_of(&traces, "case_009#3"), format!("{}… (2000 chars)", "x".repeat(1200)));
    // 1,500 trials with three checks of 5,000 characters: cut at 1,200 they
    // would take 5.4 MB, more than the budget, so every text is cut at 160,
    // and all 1,500 stay.
    let (size, traces) = embedded(500, 5000);
    assert_eq!(traces.len(), 1500);
    assert_eq!(evidence_of(&traces, "case_000#1"), format!("{}… (5000 chars)", "x".repeat(160)));
    assert_eq!(evidence_of(&traces, "case_499#3"), format!("{}… (5000 chars)", "x".repeat(160)));
    assert!(size < 2_000_000, "{size} bytes");
}

/// Many trials a case: the console lists pass^k for k = 1, 2, 3, 5, 10 and
/// the largest k, not one line per k; summary.json has every k.
#[test]
fn the_console_lists_a_few_k_and_the_largest_and_the_json_every_k() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let o = evalua(&repo(), &["run", "suites/date_filter.lua", "--trials", "20", "-q", "--out", out.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let ks: Vec<String> = stdout(&o)
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("pass^"))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert_eq!(ks, ["1", "2", "3", "5", "10", "20"], "{}", stdout(&o));
    let s = json(&out.join("summary.json"));
    for key in ["pass_hat_k", "pass_at_k"] {
        let ks: Vec<&String> = s["figures"][key].as_object().unwrap().keys().collect();
        assert_eq!(ks.len(), 20, "{key}: {ks:?}");
    }
}
