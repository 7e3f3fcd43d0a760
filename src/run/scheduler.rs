//! A run: plan the (case, trial) pairs, run them on `--jobs` worker threads,
//! and announce each finished trial to the run's sinks.
//!
//! Workers claim runs of consecutive trials; each finished trial's trace is
//! appended to the run dir's trace store by a writer thread (in batches of
//! whatever has arrived, so a worker never waits on the disk), and only then
//! is its record announced. The main thread announces records in plan order (a
//! small reorder buffer), so trials.jsonl is identical for the same seed
//! whatever `--jobs` is.
//!
//! A stop request (`util::cancel`) makes workers stop taking trials; the
//! trials they hold end as `interrupted`, and every finished trial is still
//! announced (in plan order, past the gaps the trials never started leave).
//! A resumed run ([`execute_resumed`]) announces the trials it kept from the
//! interrupted run in their places and runs only the others.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use super::events::{RunEvent, Sink};
use super::partition::Partition;
use crate::error::Result;
use crate::record::manifest::Filters;
use crate::record::{KeptState, RunDir, Trace, TrialRecord};
use crate::trial::{self, CasePlan, Plan, TestRow, TrialOutput};
use crate::util::cancel;

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub trials: Option<u32>,
    pub jobs: usize,
    pub filters: Filters,
    pub seed: u64,
    /// `--partition hash:I/N`: run only this share of the (case, trial) pairs.
    pub partition: Option<Partition>,
    /// `--partition auto`: the engine's variables the share was read from.
    pub partition_from: Option<String>,
}

/// The worker threads to use when `--jobs` is not given: one per core.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Traces stored at most at once (see the module comment).
const TRACE_BATCH: usize = 256;

/// Most trials a worker claims at once.
const CHUNK: usize = 64;

/// Split the work (in plan order) into the runs of consecutive trials a
/// worker claims at once: about an eighth of a worker's share, at most
/// [`CHUNK`]. A worker reuses its evaluated suite across cases, and the case
/// it materialised across that case's consecutive trials (see
/// `trial::worker`); small runs keep the workers balanced and the reorder
/// buffers (a trial waits there until every earlier one is announced) short.
fn chunks(work: &[(usize, u32)], jobs: usize) -> Vec<std::ops::Range<usize>> {
    let size = (work.len() / (jobs * 8)).clamp(1, CHUNK);
    (0..work.len()).step_by(size).map(|start| start..(start + size).min(work.len())).collect()
}

/// The planned (case index, trial number) pairs this run runs, in plan order.
pub fn work(plan: &Plan, partition: Option<Partition>) -> Vec<(usize, u32)> {
    plan.cases
        .iter()
        .enumerate()
        .flat_map(|(i, c)| (1..=c.trials).map(move |t| (i, t)))
        .filter(|&(i, t)| partition.is_none_or(|p| p.contains(&plan.cases[i].spec.id, t)))
        .collect()
}

/// Run one trial with its agent. A panic in evalua's own code becomes the
/// trial's infrastructure error: the run goes on and nothing is lost.
pub fn run_trial(plan: &Plan, case: &CasePlan, number: u32) -> TrialOutput {
    guarded(plan, case, number, || trial::run(plan, case, number, crate::agent::drive))
}

/// `f`, with a panic in evalua's own code turned into the trial's infrastructure error.
fn guarded(plan: &Plan, case: &CasePlan, number: u32, f: impl FnOnce() -> TrialOutput) -> TrialOutput {
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    match out {
        Ok(o) => o,
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            trial::internal_error(plan, case, number, msg.unwrap_or_else(|| "panic".into()))
        }
    }
}

/// A trial an earlier, interrupted run finished, kept by `--resume`: its
/// record (as read back from trials.jsonl) and its trace.
pub struct Kept {
    pub record: TrialRecord,
    pub trace: Trace,
    pub tests: Vec<TestRow>,
}

/// How a run's trials went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Executed {
    /// (case, trial) pairs planned for this run (this partition).
    pub planned: usize,
    /// Trials announced to the sinks (kept ones included).
    pub announced: usize,
    /// Of those, the trials that ended as `interrupted`.
    pub interrupted: usize,
    /// Whether a stop request cut the run short.
    pub stopped: bool,
}

impl Executed {
    /// Every planned trial finished (none interrupted, none missing).
    pub fn complete(&self) -> bool {
        !self.stopped && self.interrupted == 0 && self.announced == self.planned
    }
}

/// Trials planned per case (plan order) in this run's work.
pub fn per_case(plan: &Plan, work: &[(usize, u32)]) -> Vec<u32> {
    let mut n = vec![0u32; plan.cases.len()];
    for &(c, _) in work {
        n[c] += 1;
    }
    n
}

/// A finished trial on its way to the sinks.
struct Done {
    index: usize,
    record: TrialRecord,
    trace: Trace,
    tests: Vec<TestRow>,
    state: Option<KeptState>,
}

/// What produces one planned trial's output: given the work item's index,
/// its case and its trial number. A run drives the agent; a re-grade reads a
/// recorded trial back.
pub type TrialFn<'a> = dyn Fn(usize, &CasePlan, u32) -> TrialOutput + Sync + 'a;

/// Announces finished trials to the sinks in plan order (a reorder buffer).
struct Herald<'w> {
    work: &'w [(usize, u32)],
    pending: BTreeMap<usize, Done>,
    /// The next index in plan order to announce.
    next: usize,
    announced: usize,
    interrupted: usize,
}

impl Herald<'_> {
    fn announce(&mut self, d: Done, sinks: &mut [&mut dyn Sink], failure: &mut Option<crate::error::Error>) {
        let ev =
            RunEvent::TrialFinished { case: self.work[d.index].0, record: &d.record, trace: &d.trace, tests: &d.tests };
        for s in sinks.iter_mut() {
            if let Err(e) = s.event(&ev) {
                failure.get_or_insert(e);
            }
        }
        self.announced += 1;
        if d.record.ended == crate::record::Ended::Interrupted {
            self.interrupted += 1;
        }
    }

    /// Announce every trial that is next in plan order.
    fn flush(&mut self, sinks: &mut [&mut dyn Sink], failure: &mut Option<crate::error::Error>) {
        while let Some(d) = self.pending.remove(&self.next) {
            self.announce(d, sinks, failure);
            self.next += 1;
        }
    }
}

/// Run every planned trial (of this partition), storing traces in `dir`,
/// and tell `sinks` as trials finish.
pub fn execute(plan: &Plan, opts: &RunOptions, dir: &RunDir, sinks: &mut [&mut dyn Sink]) -> Result<Executed> {
    execute_resumed(plan, opts, dir, sinks, BTreeMap::new())
}

/// As [`execute`], with the trials an earlier run finished: `kept` by their
/// index in [`work`]. They are announced in their places; the others run.
pub fn execute_resumed(
    plan: &Plan,
    opts: &RunOptions,
    dir: &RunDir,
    sinks: &mut [&mut dyn Sink],
    kept: BTreeMap<usize, Kept>,
) -> Result<Executed> {
    let work = work(plan, opts.partition);
    execute_work(plan, &work, opts.jobs, dir, sinks, kept, &|_, case, number| run_trial(plan, case, number))
}

/// Produce the output of every work item (case index, trial number) with
/// `trial` on `jobs` workers, storing each trial's kept state and trace in
/// `dir`, and tell `sinks` in work order; `kept` trials (by work index) are
/// announced in their places without running.
pub fn execute_work(
    plan: &Plan,
    work: &[(usize, u32)],
    jobs: usize,
    dir: &RunDir,
    sinks: &mut [&mut dyn Sink],
    mut kept: BTreeMap<usize, Kept>,
    trial: &TrialFn<'_>,
) -> Result<Executed> {
    let per_case = per_case(plan, work);
    for s in sinks.iter_mut() {
        s.event(&RunEvent::Started { plan, trials: work.len(), per_case: &per_case })?;
    }
    // The trials to run: the work, less what was kept.
    let todo: Vec<(usize, u32)> =
        work.iter().enumerate().filter(|(i, _)| !kept.contains_key(i)).map(|(_, w)| *w).collect();
    let index_of: Vec<usize> = (0..work.len()).filter(|i| !kept.contains_key(i)).collect();
    let jobs = jobs.max(1).min(todo.len().max(1));
    let chunks = chunks(&todo, jobs);
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::sync_channel::<Done>(1024);
    let (trace_tx, trace_rx) = mpsc::sync_channel::<(usize, Done, Vec<u8>)>(1024);
    let mut failure = None;
    let (mut announced, mut interrupted) = (0usize, 0usize);
    std::thread::scope(|scope| {
        {
            let tx = tx.clone();
            scope.spawn(move || {
                // Traces are stored in the order the trials were planned (a
                // small reorder buffer, by position among the trials to run), so
                // the same seed gives the same trace pack whatever `--jobs` is.
                let mut pending: BTreeMap<usize, (Done, Vec<u8>)> = BTreeMap::new();
                let mut next_pos = 0usize;
                let mut open = true;
                while open || !pending.is_empty() {
                    let ready = pending.first_key_value().is_some_and(|(i, _)| *i == next_pos);
                    if open && !ready {
                        match trace_rx.recv() {
                            Ok((pos, done, bytes)) => {
                                pending.insert(pos, (done, bytes));
                            }
                            Err(_) => open = false,
                        }
                    }
                    while open && pending.len() < TRACE_BATCH * 4 {
                        match trace_rx.try_recv() {
                            Ok((pos, done, bytes)) => {
                                pending.insert(pos, (done, bytes));
                            }
                            Err(mpsc::TryRecvError::Empty) => break,
                            Err(mpsc::TryRecvError::Disconnected) => open = false,
                        }
                    }
                    // The next traces in plan order; every one left once no more can come.
                    let mut batch = Vec::new();
                    while let Some(entry) = pending.first_entry() {
                        if open && (*entry.key() != next_pos || batch.len() == TRACE_BATCH) {
                            break;
                        }
                        let (i, item) = entry.remove_entry();
                        next_pos = i + 1;
                        batch.push(item);
                    }
                    if batch.is_empty() {
                        continue;
                    }
                    // Each trial's kept state, then the traces, are stored before their records are announced.
                    for (done, _) in batch.iter_mut() {
                        if let Some(kept) = done.state.take()
                            && let Err(e) = dir.write_state(&done.record.case, done.record.trial, &kept)
                        {
                            done.record.error = Some(format!("could not keep the trial's state: {e}"));
                        }
                    }
                    let stored = {
                        let items: Vec<(&str, u32, &[u8])> = batch
                            .iter()
                            .filter(|(_, bytes)| !bytes.is_empty())
                            .map(|(d, bytes)| (d.record.case.as_str(), d.record.trial, bytes.as_slice()))
                            .collect();
                        dir.write_traces(&items)
                    };
                    for (mut done, _) in batch {
                        if let Err(e) = &stored {
                            done.record.error = Some(format!("could not write the trace: {e}"));
                        }
                        if tx.send(done).is_err() {
                            return;
                        }
                    }
                }
            });
        }
        drop(tx);
        for _ in 0..jobs {
            let tx = trace_tx.clone();
            let (todo, index_of, next, chunks) = (&todo, &index_of, &next, &chunks);
            scope.spawn(move || {
                let mut mine = 0..0;
                loop {
                    // A stop request: take no further trial.
                    if cancel::requested() {
                        break;
                    }
                    let i = match mine.next() {
                        Some(i) => i,
                        None => match chunks.get(next.fetch_add(1, Ordering::Relaxed)) {
                            Some(c) => {
                                mine = c.clone();
                                continue;
                            }
                            None => break,
                        },
                    };
                    let pos = i;
                    let (case_idx, number) = todo[i];
                    let i = index_of[i];
                    let case = &plan.cases[case_idx];
                    let mut out = guarded(plan, case, number, || trial(i, case, number));
                    let bytes = match serde_json::to_vec(&out.trace) {
                        Ok(b) => b,
                        Err(e) => {
                            out.record.error = Some(format!("could not write the trace: {e}"));
                            Vec::new()
                        }
                    };
                    let done =
                        Done { index: i, record: out.record, trace: out.trace, tests: out.tests, state: out.state };
                    if tx.send((pos, done, bytes)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(trace_tx);
        let mut herald = Herald { work, pending: BTreeMap::new(), next: 0, announced: 0, interrupted: 0 };
        for (i, k) in std::mem::take(&mut kept) {
            herald.pending.insert(i, Done { index: i, record: k.record, trace: k.trace, tests: k.tests, state: None });
        }
        herald.flush(sinks, &mut failure);
        for done in rx {
            herald.pending.insert(done.index, done);
            herald.flush(sinks, &mut failure);
            if failure.is_some() {
                // Stop taking trials; the workers finish the ones they hold.
                next.store(usize::MAX / 2, Ordering::Relaxed);
            }
        }
        // Stopped early: trials that never started leave gaps; announce the
        // finished ones past them anyway, still in plan order.
        for (_, d) in std::mem::take(&mut herald.pending) {
            herald.announce(d, sinks, &mut failure);
        }
        (announced, interrupted) = (herald.announced, herald.interrupted);
    });
    if let Some(e) = failure {
        return Err(e);
    }
    for s in sinks.iter_mut() {
        s.event(&RunEvent::Finished)?;
    }
    Ok(Executed { planned: work.len(), announced, interrupted, stopped: cancel::requested() })
}
