//! The sinks a run is followed by (see `run::events`): trials.jsonl, the
//! progress display, the figures' tally, and the per-test report of coding
//! suites.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::record::trials::TrialsWriter;
use crate::record::{Outcome, RunDir};
use crate::run::{RunEvent, Sink};
use crate::stats::plural;

/// Progress as the run goes, on stderr: a bar on a terminal (a spinner when
/// the number of trials is not known before, as when grading traces);
/// elsewhere (CI logs) one line per finished case and a heartbeat line every
/// 10 s (`EVALUA_HEARTBEAT_S` changes the period), driven by the run's ticks;
/// nothing with `-q`.
pub struct Progress {
    /// `EVALUA_PROGRESS=jsonl` (set by `evalua mcp` for its child runs): a
    /// `@evalua-progress {"done", "total", "message"}` line on stderr per
    /// finished trial, for a program to read; shown also with `-q`. Trials
    /// done so far, and the total when known.
    jsonl: Option<(usize, Option<usize>)>,
    bar: Option<indicatif::ProgressBar>,
    lines: Option<Lines>,
}

/// What the line display knows of the run.
struct Lines {
    started: Instant,
    trials: Option<usize>,
    done: usize,
    planned: Vec<u32>,
    finished: Vec<u32>,
    outcomes: Vec<BTreeMap<Outcome, u32>>,
    cases_done: usize,
    cases: usize,
    period: Duration,
    next_beat: Instant,
}

/// The default period of the heartbeat line.
const HEARTBEAT: Duration = Duration::from_secs(10);

fn elapsed(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

impl Progress {
    pub fn new(show: bool) -> Self {
        if std::env::var("EVALUA_PROGRESS").is_ok_and(|v| v == "jsonl") {
            return Progress { jsonl: Some((0, None)), bar: None, lines: None };
        }
        if !show {
            return Progress { jsonl: None, bar: None, lines: None };
        }
        if std::io::stderr().is_terminal() {
            return Progress { jsonl: None, bar: Some(indicatif::ProgressBar::new(0)), lines: None };
        }
        let period = std::env::var("EVALUA_HEARTBEAT_S")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(Duration::from_secs_f64)
            .unwrap_or(HEARTBEAT);
        let lines = Lines {
            started: Instant::now(),
            trials: None,
            done: 0,
            planned: Vec::new(),
            finished: Vec::new(),
            outcomes: Vec::new(),
            cases_done: 0,
            cases: 0,
            period,
            next_beat: Instant::now() + period,
        };
        Progress { jsonl: None, bar: None, lines: Some(lines) }
    }

    fn bar(pb: &indicatif::ProgressBar, ev: &RunEvent<'_>) {
        match ev {
            RunEvent::Started { trials: Some(n), .. } => {
                pb.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} trials  {msg}",
                    )
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
                pb.set_length(*n as u64);
            }
            RunEvent::Started { trials: None, .. } => pb.set_style(
                indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {pos} trials {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            ),
            RunEvent::TrialFinished { record, .. } => {
                pb.inc(1);
                if record.outcome != Outcome::Accepted {
                    pb.set_message(format!("{} {}#{}", record.outcome.as_str(), record.case, record.trial));
                }
            }
            RunEvent::Cancelled { .. } => pb.set_message("stopping: the running trials end, no new one starts"),
            RunEvent::Tick { .. } => pb.tick(),
            RunEvent::Finished => pb.finish_and_clear(),
            RunEvent::TrialStarted { .. } => {}
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(pb) = &self.bar {
            pb.finish_and_clear();
        }
    }
}

impl Sink for Progress {
    fn event(&mut self, ev: &RunEvent<'_>) -> Result<()> {
        if let Some((done, total)) = &mut self.jsonl {
            match ev {
                RunEvent::Started { trials, .. } => *total = *trials,
                RunEvent::TrialFinished { record, .. } => {
                    *done += 1;
                    let line = serde_json::json!({
                        "done": *done,
                        "total": *total,
                        "message": format!("{}#{} {}", record.case, record.trial, record.outcome.as_str()),
                    });
                    eprintln!("@evalua-progress {line}");
                }
                _ => {}
            }
            return Ok(());
        }
        if let Some(pb) = &self.bar {
            Progress::bar(pb, ev);
            return Ok(());
        }
        let Some(l) = self.lines.as_mut() else { return Ok(()) };
        match ev {
            RunEvent::Started { suite, trials, per_case, .. } => {
                l.started = Instant::now();
                l.next_beat = l.started + l.period;
                l.trials = *trials;
                l.planned = per_case.to_vec();
                l.finished = vec![0; per_case.len()];
                l.outcomes = vec![BTreeMap::new(); per_case.len()];
                l.cases = per_case.iter().filter(|n| **n > 0).count();
                match trials {
                    Some(n) => eprintln!("running {} of {} ({n} trials)", plural(l.cases, "case"), suite.name),
                    // An adaptive run: per case its max (SPEC §20).
                    None if !per_case.is_empty() => eprintln!(
                        "running {} of {} in rounds (at most {} trials)",
                        plural(l.cases, "case"),
                        suite.name,
                        per_case.iter().map(|&n| n as u64).sum::<u64>()
                    ),
                    None => eprintln!("grading with {}", suite.name),
                }
            }
            RunEvent::TrialFinished { case, record, .. } => {
                l.done += 1;
                let Some(n) = l.finished.get_mut(*case) else { return Ok(()) };
                *n += 1;
                let n = *n;
                *l.outcomes[*case].entry(record.outcome).or_default() += 1;
                if n == l.planned[*case] {
                    l.cases_done += 1;
                    let o = &l.outcomes[*case];
                    let accepted = o.get(&Outcome::Accepted).copied().unwrap_or(0);
                    let others: Vec<String> = o
                        .iter()
                        .filter(|(k, _)| **k != Outcome::Accepted)
                        .map(|(k, v)| format!("{v} {}", k.as_str()))
                        .collect();
                    let width = l.cases.to_string().len();
                    eprintln!(
                        "[{:>width$}/{}] {}: {accepted} of {n} accepted{}  ({})",
                        l.cases_done,
                        l.cases,
                        crate::util::inert::console(&record.case),
                        if others.is_empty() { String::new() } else { format!(", {}", others.join(", ")) },
                        elapsed(l.started.elapsed())
                    );
                }
            }
            RunEvent::Tick { .. } if Instant::now() >= l.next_beat => {
                l.next_beat = Instant::now() + l.period;
                match l.trials {
                    Some(n) => eprintln!(
                        "… {} of {n} trials done ({} of {} cases), {} elapsed",
                        l.done,
                        l.cases_done,
                        l.cases,
                        elapsed(l.started.elapsed())
                    ),
                    None => eprintln!("… {} trials done, {} elapsed", l.done, elapsed(l.started.elapsed())),
                }
            }
            RunEvent::Cancelled { .. } => eprintln!("stopping: the running trials end, no new one starts"),
            _ => {}
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

/// How a run is followed: the flags every kind of run shares.
#[derive(Debug, Clone, Default)]
pub struct Follow {
    /// `-q`: no progress display.
    pub quiet: bool,
    /// `--otlp`, `--otlp-file`, `--otlp-no-content` (and the OTEL_EXPORTER_OTLP_* variables).
    pub export: crate::otel::export::Options,
}

/// The sinks every kind of run (a run, a re-grade, a grade of traces) is
/// followed by, built in one place from the flags: trials.jsonl, the
/// progress display, the per-test report and the OTLP export.
pub struct Followers {
    trials: TrialsWriter,
    progress: Progress,
    tests: TestsReport,
    otlp: Otlp,
}

/// What the sinks leave once the run is over.
pub struct Followed {
    pub tests: TestsReport,
    /// How the OTLP export went, a line per destination.
    pub exports: Vec<String>,
}

impl Followers {
    /// The sinks of the run dir `dir` (suite `suite`, run `run_id`). `kept`:
    /// a resumed run's trials already in trials.jsonl (appended after, not
    /// written again); None starts trials.jsonl.
    pub fn new(
        follow: &Follow,
        dir: &RunDir,
        suite: &str,
        run_id: &str,
        kept: Option<HashSet<(String, u32)>>,
    ) -> Result<Followers> {
        let trials = match kept {
            Some(keys) => dir.trials_appender(keys)?,
            None => dir.trials_writer()?,
        };
        let exporter = if follow.export.any() {
            Some(crate::otel::export::Exporter::new(&follow.export, suite, run_id)?)
        } else {
            None
        };
        Ok(Followers {
            trials,
            progress: Progress::new(!follow.quiet),
            tests: TestsReport::default(),
            otlp: Otlp(exporter),
        })
    }

    pub fn sinks(&mut self) -> [&mut dyn Sink; 4] {
        [&mut self.trials, &mut self.progress, &mut self.tests, &mut self.otlp]
    }

    /// After the run. A failed export never changes an outcome: it is said, and the run goes on.
    pub fn finish(self) -> Followed {
        drop(self.progress);
        let exports = self.otlp.0.map(|e| e.finish().iter().map(|r| r.to_string()).collect()).unwrap_or_default();
        Followed { tests: self.tests, exports }
    }
}
