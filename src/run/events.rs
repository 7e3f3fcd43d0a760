//! Typed run events, fanned out to sinks (the way cargo-nextest's reporter
//! works): trials.jsonl, the progress display, the figures' tally and the
//! per-test report all follow a run through the same events. Sinks see
//! trials in plan order, whatever `--jobs` is.

use crate::error::Result;
use crate::record::{Trace, TrialRecord};
use crate::trial::{Plan, TestRow};

pub enum RunEvent<'a> {
    /// Before the first trial: the plan, how many trials will run (or be
    /// announced, for a resumed run), and how many of them per case.
    Started { plan: &'a Plan, trials: usize, per_case: &'a [u32] },
    /// A trial ended and its trace is stored: its record, in plan order.
    TrialFinished {
        /// Index of the trial's case in the plan.
        case: usize,
        record: &'a TrialRecord,
        trace: &'a Trace,
        tests: &'a [TestRow],
    },
    /// Every planned trial has ended.
    Finished,
}

/// Something that follows a run. An error stops the run (the trials already
/// recorded stay recorded).
pub trait Sink {
    fn event(&mut self, event: &RunEvent<'_>) -> Result<()>;
}
