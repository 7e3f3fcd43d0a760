//! The planned source: the plan's trials (a run of the agent, or a
//! re-grade) handed to the engine in chunks, with the kept trials of a
//! resumed run placed as they were.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::partition::Partition;
use super::scheduler::{CHUNK, Placed, Source, Start, trace_bytes};
use crate::record::Trace;
use crate::trial::{self, Plan, Position, TestRow, TrialOutput};

/// The planned (case index, trial number) pairs this run runs, in plan order.
pub fn work(plan: &Plan, partition: Option<Partition>) -> Vec<(usize, u32)> {
    plan.cases
        .iter()
        .enumerate()
        .flat_map(|(i, c)| (1..=c.trials).map(move |t| (i, t)))
        .filter(|&(i, t)| partition.is_none_or(|p| p.contains(&plan.cases[i].spec.id, t)))
        .collect()
}

/// Trials planned per case (plan order) in this run's work.
pub fn per_case(plan: &Plan, work: &[(usize, u32)]) -> Vec<u32> {
    let mut n = vec![0u32; plan.cases.len()];
    for &(c, _) in work {
        n[c] += 1;
    }
    n
}

/// Run one trial with its agent.
pub fn run_trial(plan: &Plan, pos: Position) -> TrialOutput {
    trial::run(plan, pos, crate::agent::drive)
}

/// `run()`, a trial at `at`, where a panic in evalua's own code becomes the
/// trial's infrastructure error (every source of trials runs them so).
pub fn guarded(plan: &Plan, at: Position, run: impl FnOnce() -> TrialOutput) -> TrialOutput {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(o) => o,
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            trial::internal_error(plan, at, msg.unwrap_or_else(|| "panic".into()))
        }
    }
}

/// A trial an earlier, interrupted run finished, kept by `--resume`: its
/// record (as read back from trials.jsonl) and its trace.
pub struct Kept {
    /// The kept trial's trace, its record (as trials.jsonl has it) within.
    pub trace: Trace,
    pub tests: Vec<TestRow>,
}

/// What produces one planned trial's output: given the work item's index,
/// its case and its trial number. A run drives the agent; a re-grade reads a
/// recorded trial back. It owns what it uses: the worker that calls it may be
/// abandoned by the watchdog and outlive the run.
/// How a unit of [`Planned`] is made: its index in the work, and its place in the plan.
pub type TrialFn = dyn Fn(usize, Position) -> TrialOutput + Send + Sync;

/// The plan's trials: `work` (case index, trial number) in plan order, less
/// the `kept` ones (by index in `work`), each made by `trial`.
pub struct Planned {
    plan: Arc<Plan>,
    work: Vec<(usize, u32)>,
    kept: Mutex<BTreeMap<usize, Kept>>,
    /// The units to run: their index in `work`.
    todo: Vec<usize>,
    chunks: Vec<Range<usize>>,
    next: AtomicUsize,
    trial: Arc<TrialFn>,
}

impl Planned {
    /// The plan's work (this partition's share) run with the agent, less what an earlier run `kept`.
    pub fn run(plan: &Arc<Plan>, partition: Option<Partition>, kept: BTreeMap<usize, Kept>, jobs: usize) -> Planned {
        let p = plan.clone();
        Planned::new(plan, work(plan, partition), kept, jobs, Arc::new(move |_, pos| run_trial(&p, pos)))
    }

    pub fn new(
        plan: &Arc<Plan>,
        work: Vec<(usize, u32)>,
        kept: BTreeMap<usize, Kept>,
        jobs: usize,
        trial: Arc<TrialFn>,
    ) -> Planned {
        let todo: Vec<usize> = (0..work.len()).filter(|i| !kept.contains_key(i)).collect();
        let chunks = chunks(todo.len(), jobs.max(1).min(todo.len().max(1)));
        Planned { plan: plan.clone(), work, kept: Mutex::new(kept), todo, chunks, next: AtomicUsize::new(0), trial }
    }
}

/// Split `n` units into the runs of consecutive trials a worker claims at
/// once: about an eighth of a worker's share, at most [`CHUNK`]. A worker
/// reuses its evaluated suite across cases, and the case it materialised
/// across that case's consecutive trials (see `trial::worker`); small runs
/// keep the workers balanced and the reorder buffers (a trial waits there
/// until every earlier one is announced) short.
fn chunks(n: usize, jobs: usize) -> Vec<Range<usize>> {
    let size = (n / (jobs * 8)).clamp(1, CHUNK);
    (0..n).step_by(size).map(|start| start..(start + size).min(n)).collect()
}

impl Planned {
    fn output(&self, pos: usize, out: TrialOutput, with_bytes: bool) -> Placed {
        let index = self.todo[pos];
        let mut out = out;
        let bytes = with_bytes.then(|| trace_bytes(&mut out.trace));
        Placed { index, case: self.work[index].0, out, bytes }
    }
}

impl Source for Planned {
    /// The unit's index in the work.
    type Unit = usize;
    type Made = Placed;

    fn start(&self) -> Start<'_> {
        Start {
            suite: &self.plan.suite,
            plan: Some(&self.plan),
            trials: Some(self.work.len()),
            per_case: per_case(&self.plan, &self.work),
        }
    }

    fn claim(&self) -> Vec<(usize, usize)> {
        let Some(r) = self.chunks.get(self.next.fetch_add(1, Ordering::Relaxed)) else { return Vec::new() };
        r.clone().map(|pos| (pos, self.todo[pos])).collect()
    }

    fn label(&self, i: &usize) -> (Option<usize>, Option<u32>) {
        let (case, n) = self.work[*i];
        (Some(case), Some(n))
    }

    fn run(&self, pos: usize, i: usize) -> Placed {
        let (case_idx, number) = self.work[i];
        let at = Position::first(case_idx, number);
        let out = guarded(&self.plan, at, || (self.trial)(i, at));
        self.output(pos, out, true)
    }

    fn abandoned(&self, pos: usize, overran: Option<Duration>) -> Placed {
        let (case_idx, number) = self.work[self.todo[pos]];
        let case = &self.plan.cases[case_idx];
        let why = match overran {
            Some(over) => {
                eprintln!(
                    "warning: trial {}#{number} overran its time limit by more than {} s; its worker was abandoned and replaced",
                    case.spec.id,
                    over.as_secs()
                );
                format!(
                    "the trial overran its time limit by more than {} s in code no limit could stop; its worker was abandoned",
                    over.as_secs()
                )
            }
            None => "the worker running the trial stopped unexpectedly".to_string(),
        };
        self.output(pos, trial::internal_error(&self.plan, Position::first(case_idx, number), why), true)
    }

    fn kept(&self) -> Vec<Placed> {
        let kept = std::mem::take(&mut *self.kept.lock().unwrap_or_else(|p| p.into_inner()));
        kept.into_iter()
            .map(|(index, k)| Placed {
                index,
                case: self.work[index].0,
                out: TrialOutput { trace: k.trace, tests: k.tests, state: None },
                bytes: None,
            })
            .collect()
    }

    fn planned(&self) -> Option<usize> {
        Some(self.work.len())
    }
}
