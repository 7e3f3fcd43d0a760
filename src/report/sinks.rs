//! The sinks a run is followed by (see `run::events`): trials.jsonl, the
//! progress display, the figures' tally, and the per-test report of coding
//! suites.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::record::rundir::TrialsWriter;
use crate::record::{Outcome, RunDir};
use crate::run::{RunEvent, Sink};
use crate::stats::{Tally, plural};

/// Appends each finished trial's record to trials.jsonl, flushed at once.
pub struct TrialsFile(TrialsWriter, HashSet<(String, u32)>);

impl TrialsFile {
    pub fn create(dir: &RunDir) -> Result<Self> {
        Ok(TrialsFile(dir.trials_writer()?, HashSet::new()))
    }

    /// A resumed run: append after the records kept in the file (`kept`
    /// lists them as (case, trial); they are announced but not written again).
    pub fn resume(dir: &RunDir, kept: HashSet<(String, u32)>) -> Result<Self> {
        Ok(TrialsFile(dir.trials_appender()?, kept))
    }
}

impl Sink for TrialsFile {
    fn event(&mut self, ev: &RunEvent<'_>) -> Result<()> {
        match ev {
            RunEvent::TrialFinished { record, .. } if !self.1.contains(&(record.case.clone(), record.trial)) => {
                self.0.append(record)
            }
            _ => Ok(()),
        }
    }
}

/// Progress as the run goes, on stderr: a bar on a terminal; elsewhere (CI
/// logs) one line per finished case and a heartbeat line every 10 s
/// (`EVALUA_HEARTBEAT_S` changes the period); nothing with `-q`.
pub struct Progress {
    /// `EVALUA_PROGRESS=jsonl` (set by `evalua mcp` for its child runs): a
    /// `@evalua-progress {"done", "total", "message"}` line on stderr per
    /// finished trial, for a program to read; shown also with `-q`.
    jsonl: Option<(usize, usize)>,
    bar: Option<indicatif::ProgressBar>,
    lines: Option<Arc<Mutex<Lines>>>,
    heartbeat: Option<Heartbeat>,
}

/// What the line display knows of the run.
struct Lines {
    started: Instant,
    trials: usize,
    done: usize,
    ids: Vec<String>,
    planned: Vec<u32>,
    finished: Vec<u32>,
    outcomes: Vec<BTreeMap<Outcome, u32>>,
    cases_done: usize,
    cases: usize,
}

struct Heartbeat {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
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
            return Progress { jsonl: Some((0, 0)), bar: None, lines: None, heartbeat: None };
        }
        if !show {
            return Progress { jsonl: None, bar: None, lines: None, heartbeat: None };
        }
        if std::io::stderr().is_terminal() {
            let pb = indicatif::ProgressBar::new(0);
            pb.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} trials  {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            return Progress { jsonl: None, bar: Some(pb), lines: None, heartbeat: None };
        }
        let lines = Lines {
            started: Instant::now(),
            trials: 0,
            done: 0,
            ids: Vec::new(),
            planned: Vec::new(),
            finished: Vec::new(),
            outcomes: Vec::new(),
            cases_done: 0,
            cases: 0,
        };
        Progress { jsonl: None, bar: None, lines: Some(Arc::new(Mutex::new(lines))), heartbeat: None }
    }

    fn start_heartbeat(&mut self) {
        let Some(lines) = self.lines.clone() else { return };
        let period = std::env::var("EVALUA_HEARTBEAT_S")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(Duration::from_secs_f64)
            .unwrap_or(HEARTBEAT);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut next = Instant::now() + period;
            while !flag.load(Ordering::Relaxed) {
                std::thread::park_timeout(next.saturating_duration_since(Instant::now()));
                if flag.load(Ordering::Relaxed) {
                    break;
                }
                if Instant::now() >= next {
                    let l = lines.lock().unwrap_or_else(|p| p.into_inner());
                    eprintln!(
                        "… {} of {} trials done ({} of {} cases), {} elapsed",
                        l.done,
                        l.trials,
                        l.cases_done,
                        l.cases,
                        elapsed(l.started.elapsed())
                    );
                    next = Instant::now() + period;
                }
            }
        });
        self.heartbeat = Some(Heartbeat { stop, thread });
    }

    fn stop_heartbeat(&mut self) {
        if let Some(h) = self.heartbeat.take() {
            h.stop.store(true, Ordering::Relaxed);
            h.thread.thread().unpark();
            let _ = h.thread.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop_heartbeat();
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
                RunEvent::Finished => {}
            }
            return Ok(());
        }
        if let Some(pb) = &self.bar {
            match ev {
                RunEvent::Started { trials, .. } => pb.set_length(*trials as u64),
                RunEvent::TrialFinished { record, .. } => {
                    pb.inc(1);
                    if record.outcome != Outcome::Accepted {
                        pb.set_message(format!("{} {}#{}", record.outcome.as_str(), record.case, record.trial));
                    }
                }
                RunEvent::Finished => pb.finish_and_clear(),
            }
            return Ok(());
        }
        let Some(lines) = self.lines.clone() else { return Ok(()) };
        match ev {
            RunEvent::Started { plan, trials, per_case } => {
                {
                    let mut l = lines.lock().unwrap_or_else(|p| p.into_inner());
                    l.started = Instant::now();
                    l.trials = *trials;
                    l.ids = plan.cases.iter().map(|c| c.spec.id.clone()).collect();
                    l.planned = per_case.to_vec();
                    l.finished = vec![0; per_case.len()];
                    l.outcomes = vec![BTreeMap::new(); per_case.len()];
                    l.cases = per_case.iter().filter(|n| **n > 0).count();
                    eprintln!("running {} of {} ({} trials)", plural(l.cases, "case"), plan.suite.name, l.trials);
                }
                self.start_heartbeat();
            }
            RunEvent::TrialFinished { case, record, .. } => {
                let mut l = lines.lock().unwrap_or_else(|p| p.into_inner());
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
                        l.ids[*case],
                        if others.is_empty() { String::new() } else { format!(", {}", others.join(", ")) },
                        elapsed(l.started.elapsed())
                    );
                }
            }
            RunEvent::Finished => self.stop_heartbeat(),
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
