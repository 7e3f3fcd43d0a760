//! junit.xml: one testcase per case, for CI test-report views (GitHub Actions,
//! GitLab). A case fails when any of its trials failed a critical check, or
//! when its own figure is under a rate gate of the suite (`pass^k`, `pass@k`,
//! `accepted`, checked on the case's point value); a suite with no rate gate
//! asks every counted trial of the case to be accepted. A case none of whose
//! trials could run (infra errors only) is an error. The message names the
//! reasons; the body lists each failing check's evidence by trial.
//! A second testsuite holds one testcase per gate.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::text::{evidence_text, gate_line, incomplete_line};
use crate::error::{Error, Result};
use crate::record::{Outcome, TrialRecord};
use crate::spec::gate::Metric;
use crate::stats::RunData;

/// Why a case fails, if it does.
pub struct CaseFailures {
    pub reasons: Vec<String>,
    /// Evidence lines of the failed and raising checks.
    pub evidence: Vec<String>,
    /// A critical check failed in some trial.
    pub critical: bool,
}

/// Why a case fails, if it does.
pub fn case_failures(run: &RunData, i: usize, records: &[TrialRecord]) -> CaseFailures {
    let c = &run.summary.cases[i];
    let mut reasons = Vec::new();
    let rate_gates: Vec<_> = run
        .gate_specs
        .iter()
        .filter(|g| matches!(g.metric, Metric::PassHat(_) | Metric::PassAt(_) | Metric::Accepted))
        .collect();
    if c.n > 0 {
        for g in &rate_gates {
            let v = match g.metric {
                Metric::PassHat(k) => c.pass_hat(k),
                Metric::PassAt(k) => c.pass_at(k),
                _ => Some(c.accepted as f64 / c.n as f64),
            };
            match v {
                Some(v) if v < g.threshold => reasons
                    .push(format!("{} {:.3} < gate {} ({} of {} accepted)", g.name, v, g.threshold, c.accepted, c.n)),
                _ => {}
            }
        }
        if rate_gates.is_empty() && c.accepted < c.n {
            reasons.push(format!("{} of {} trials accepted (no rate gate: every trial must pass)", c.accepted, c.n));
        }
    }
    let critical = records.iter().filter(|r| r.checks.iter().any(|ch| ch.critical && ch.passed == Some(false))).count();
    if critical > 0 {
        reasons.push(format!("a critical check failed in {critical} trial(s)"));
    }
    let mut evidence = Vec::new();
    for r in records {
        for ch in &r.checks {
            if ch.passed == Some(false) {
                evidence.push(format!(
                    "trial {}: {}{} failed: {} [{}]",
                    r.trial,
                    ch.name,
                    if ch.critical { " (critical)" } else { "" },
                    evidence_text(&ch.evidence, 500),
                    run.trace_link(r)
                ));
            } else if ch.passed.is_none() && !ch.skipped {
                evidence.push(format!(
                    "trial {}: {} raised: {}",
                    r.trial,
                    ch.name,
                    ch.error.as_deref().unwrap_or("undeterminable")
                ));
            }
        }
        if let Some(e) = &r.error {
            evidence.push(format!("trial {}: {} ({}): {}", r.trial, r.outcome.as_str(), r.ended.as_str(), e));
        }
    }
    CaseFailures { reasons, evidence, critical: critical > 0 }
}

pub fn render(run: &RunData) -> Result<String> {
    let incomplete = incomplete_line(run);
    let mut report =
        Report::new(format!("evalua {}{}", run.suite(), if incomplete.is_some() { " (INCOMPLETE)" } else { "" }));
    let mut suite = TestSuite::new(run.suite().to_string());
    suite.add_property(Property::new("run_id", run.run_id().to_string()));
    suite.add_property(Property::new("seed", run.seed().to_string()));
    let failed = run.failed()?;
    for (i, c) in run.summary.cases.iter().enumerate() {
        let CaseFailures { reasons, evidence, critical } = case_failures(run, i, &failed.of_case(i)?);
        let status = if c.n == 0 && c.count(Outcome::InfraError) == 0 {
            // No trial of this case in this run (e.g. another partition's share).
            let mut s = TestCaseStatus::skipped();
            s.set_message("no trial of this case in this run (another partition's share?)");
            s
        } else if c.n == 0 {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_message(format!("no trial could run: {} infra error(s)", c.count(Outcome::InfraError)));
            s.set_type("infra_error");
            s.set_description(evidence.join("\n"));
            s
        } else if !reasons.is_empty() {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(reasons.join("; "));
            s.set_type(if critical { "critical" } else { "failed" });
            s.set_description(evidence.join("\n"));
            s
        } else {
            TestCaseStatus::success()
        };
        let mut tc = TestCase::new(c.id.clone(), status);
        tc.set_classname(run.suite().to_string());
        let ms: f64 = run.trials[i].iter().map(|t| t.wall_ms).sum();
        tc.set_time(Duration::from_secs_f64((ms / 1000.0).max(0.0)));
        tc.set_system_out(format!(
            "{} of {} trials accepted; outcomes: {}",
            c.accepted,
            c.n,
            c.outcomes
                .iter()
                .filter(|(_, v)| **v > 0)
                .map(|(k, v)| format!("{} {v}", k.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        suite.add_test_case(tc);
    }
    report.add_test_suite(suite);
    if let Some(line) = &incomplete {
        // CI views show a failure: the run did not cover its plan.
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
        s.set_message(line.clone());
        s.set_type("incomplete");
        let mut tc = TestCase::new("run is complete", s);
        tc.set_classname(format!("{}.run", run.suite()));
        let mut whole = TestSuite::new(format!("{} run", run.suite()));
        whole.add_test_case(tc);
        report.add_test_suite(whole);
    }
    if !run.gates.is_empty() {
        let mut gates = TestSuite::new(format!("{} gates", run.suite()));
        for g in &run.gates {
            let status = if g.passed {
                TestCaseStatus::success()
            } else {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(gate_line(g));
                s.set_type("gate");
                s
            };
            let mut tc = TestCase::new(format!("gate {}", g.name), status);
            tc.set_classname(format!("{}.gates", run.suite()));
            gates.add_test_case(tc);
        }
        report.add_test_suite(gates);
    }
    let xml = report.to_string().map_err(|e| Error::Input(format!("junit.xml: {e}")))?;
    Ok(match (&incomplete, xml.split_once('\n')) {
        // The first line says it too: a comment after the XML declaration.
        (Some(line), Some((decl, rest))) if decl.starts_with("<?xml") => {
            format!("{decl}<!-- {} -->\n{rest}", line.replace("--", "–").replace(['<', '>', '&'], " "))
        }
        _ => xml,
    })
}
