//! The sinks a run is followed by (see `run::events`): trials.jsonl, the
//! progress display, the figures' tally, and the per-test report of coding
//! suites.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::IsTerminal;

use crate::error::Result;
use crate::record::rundir::TrialsWriter;
use crate::record::{Outcome, RunDir};
use crate::run::{RunEvent, Sink};
use crate::stats::Tally;

/// Appends each finished trial's record to trials.jsonl, flushed at once.
pub struct TrialsFile(TrialsWriter);

impl TrialsFile {
    pub fn create(dir: &RunDir) -> Result<Self> {
        Ok(TrialsFile(dir.trials_writer()?))
    }
}

impl Sink for TrialsFile {
    fn event(&mut self, ev: &RunEvent<'_>) -> Result<()> {
        match ev {
            RunEvent::TrialFinished { record, .. } => self.0.append(record),
            _ => Ok(()),
        }
    }
}

/// A progress bar on a terminal; nothing otherwise.
pub struct Progress(indicatif::ProgressBar);

impl Progress {
    pub fn new(show: bool) -> Self {
        if !show || !std::io::stderr().is_terminal() {
            return Progress(indicatif::ProgressBar::hidden());
        }
        let pb = indicatif::ProgressBar::new(0);
        pb.set_style(
            indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} trials  {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Progress(pb)
    }
}

impl Sink for Progress {
    fn event(&mut self, ev: &RunEvent<'_>) -> Result<()> {
        match ev {
            RunEvent::Started { trials, .. } => self.0.set_length(*trials as u64),
            RunEvent::TrialFinished { record, .. } => {
                self.0.inc(1);
                if record.outcome != Outcome::Accepted {
                    self.0.set_message(format!("{} {}#{}", record.outcome.as_str(), record.case, record.trial));
                }
            }
            RunEvent::Finished => self.0.finish_and_clear(),
        }
        Ok(())
    }
}

/// The tally the run's figures are computed from.
pub struct Figures(pub Tally);

impl Sink for Figures {
    fn event(&mut self, ev: &RunEvent<'_>) -> Result<()> {
        match ev {
            RunEvent::Started { plan, .. } => {
                self.0 = Tally::new(plan.cases.len());
                let monitors: Vec<String> = plan.suite.monitors.iter().map(|m| m.name.clone()).collect();
                self.0.declare_monitors(&monitors);
            }
            RunEvent::TrialFinished { case, record, .. } => self.0.add(*case, record),
            RunEvent::Finished => {}
        }
        Ok(())
    }
}

type TestCounts = BTreeMap<(&'static str, String), (u32, u32)>;

/// How often each FAIL_TO_PASS / PASS_TO_PASS test of `check.tests` passed,
/// per case, for the console.
#[derive(Default)]
pub struct TestsReport {
    /// Per case, in first-seen order: (group, id) -> (passed, runs).
    cases: Vec<(String, TestCounts)>,
}

impl Sink for TestsReport {
    fn event(&mut self, ev: &RunEvent<'_>) -> Result<()> {
        let RunEvent::TrialFinished { record, tests, .. } = ev else { return Ok(()) };
        if tests.is_empty() {
            return Ok(());
        }
        let i = match self.cases.iter().position(|(c, _)| *c == record.case) {
            Some(i) => i,
            None => {
                self.cases.push((record.case.clone(), BTreeMap::new()));
                self.cases.len() - 1
            }
        };
        for t in tests.iter() {
            let e = self.cases[i].1.entry((t.group, t.id.clone())).or_default();
            e.1 += 1;
            if t.passed {
                e.0 += 1;
            }
        }
        Ok(())
    }
}

impl TestsReport {
    /// The report's text; empty when the run has no `check.tests`.
    pub fn text(&self) -> String {
        let mut out = String::new();
        if self.cases.is_empty() {
            return out;
        }
        let _ = writeln!(out, "tests (check.tests, graded trials):");
        for (case, tests) in &self.cases {
            let _ = writeln!(out, "  {case}");
            let width = tests.keys().map(|(_, id)| id.len()).max().unwrap_or(0);
            // FAIL_TO_PASS first.
            let f2p = tests.iter().filter(|((g, _), _)| *g == "FAIL_TO_PASS");
            for ((group, id), (passed, runs)) in f2p.chain(tests.iter().filter(|((g, _), _)| *g != "FAIL_TO_PASS")) {
                let _ = writeln!(out, "    {group:<12} {id:<width$}  passed {passed}/{runs}");
            }
        }
        out
    }
}

/// Sends each finished trial as an OpenTelemetry trace (`--otlp`, `--otlp-file`).
pub struct Otlp(pub Option<crate::otel::export::Exporter>);

impl Sink for Otlp {
    fn event(&mut self, ev: &RunEvent<'_>) -> Result<()> {
        if let (RunEvent::TrialFinished { record, trace, .. }, Some(e)) = (ev, self.0.as_mut()) {
            e.trial(record, trace, None);
        }
        Ok(())
    }
}
