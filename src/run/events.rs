//! Typed run events, fanned out to sinks (the way cargo-nextest's reporter
//! works): trials.jsonl, the progress display, the OTLP export and the
//! per-test report follow every kind of run (a run of the agent, a re-grade,
//! the grading of recorded traces) through the same events. Sinks see
//! finished trials in announced (plan, or input) order, whatever `--jobs` is;
//! starts as they happen.

use std::time::Duration;

use crate::error::Result;
use crate::record::{Trace, TrialRecord};
use crate::spec::Suite;
use crate::trial::{Plan, TestRow};

pub enum RunEvent<'a> {
    /// Before the first trial: the suite, the plan (a run or a re-grade; none
    /// when grading recorded traces), how many trials will be announced when
    /// that is known, and how many of them per case of the plan.
    Started { suite: &'a Suite, plan: Option<&'a Plan>, trials: Option<usize>, per_case: &'a [u32] },
    /// A worker started a trial (case index and trial number, when known
    /// before it runs: a recorded item's case is known once it is graded).
    TrialStarted { case: Option<usize>, trial: Option<u32> },
    /// A trial ended and its trace is stored: its record, in announced order.
    TrialFinished {
        /// Index of the trial's case (in the plan; for graded items, in order of first appearance).
        case: usize,
        record: &'a TrialRecord,
        trace: &'a Trace,
        tests: &'a [TestRow],
    },
    /// The run stops taking trials; the running ones end (as `interrupted`
    /// when a signal stopped them) and are still announced.
    Cancelled { reason: CancelReason },
    /// Time passes (every `Scheduler::tick`, while the run waits): how long
    /// it has run, the trials running now and those announced so far.
    Tick { elapsed: Duration, running: usize, finished: usize },
    /// Every trial has ended.
    Finished,
}

/// Why a run stopped taking trials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReason {
    /// SIGINT or SIGTERM (`util::cancel`).
    Signal,
    /// A sink failed (e.g. trials.jsonl could not be written).
    SinkFailed,
}

/// Something that follows a run. An error stops the run (the trials already
/// recorded stay recorded).
pub trait Sink {
    fn event(&mut self, event: &RunEvent<'_>) -> Result<()>;
}

/// trials.jsonl follows every run: each finished trial's record, flushed at
/// once (a resumed run's kept records are not written again).
impl Sink for crate::record::trials::TrialsWriter {
    fn event(&mut self, ev: &RunEvent<'_>) -> Result<()> {
        match ev {
            RunEvent::TrialFinished { record, .. } => self.add(record),
            _ => Ok(()),
        }
    }
}
