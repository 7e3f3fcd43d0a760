//! A run: plan the (case, trial) pairs, run them on `--jobs` worker threads,
//! and announce each finished trial to the run's sinks.
//!
//! Workers claim runs of consecutive trials of one case; each finished
//! trial's trace is stored by one of two writer threads (creating files can
//! block on the disk far longer than a trial takes), and only then is its
//! record announced. The main thread announces records in plan order (a
//! small reorder buffer), so trials.jsonl is identical for the same seed
//! whatever `--jobs` is.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};

use super::events::{RunEvent, Sink};
use super::partition::Partition;
use crate::error::Result;
use crate::record::manifest::Filters;
use crate::record::{RunDir, Trace, TrialRecord};
use crate::trial::{self, CasePlan, Plan, TestRow, TrialOutput};

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

/// Threads that store traces (see the module comment).
const TRACE_WRITERS: usize = 2;

/// Split the work (in plan order) into the runs of trials a worker claims at
/// once: consecutive trials of one case, about an eighth of a worker's share.
/// A worker that runs a case's trials back to back evaluates the suite once
/// for them (see `lua::engine::reuse`); small runs still spread trial by trial.
fn chunks(work: &[(usize, u32)], jobs: usize) -> Vec<std::ops::Range<usize>> {
    let size = (work.len() / (jobs * 8)).max(1);
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=work.len() {
        if i == work.len() || work[i].0 != work[start].0 || i - start == size {
            out.push(start..i);
            start = i;
        }
    }
    out
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
    let out =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| trial::run(plan, case, number, crate::agent::drive)));
    match out {
        Ok(o) => o,
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            trial::internal_error(plan, case, number, msg.unwrap_or_else(|| "panic".into()))
        }
    }
}

/// A finished trial on its way to the sinks.
struct Done {
    index: usize,
    record: TrialRecord,
    trace: Trace,
    tests: Vec<TestRow>,
}

/// Run every planned trial (of this partition), storing traces in `dir`,
/// and tell `sinks` as trials finish.
pub fn execute(plan: &Plan, opts: &RunOptions, dir: &RunDir, sinks: &mut [&mut dyn Sink]) -> Result<()> {
    let work = work(plan, opts.partition);
    for s in sinks.iter_mut() {
        s.event(&RunEvent::Started { plan, trials: work.len() })?;
    }
    let jobs = opts.jobs.max(1).min(work.len().max(1));
    let chunks = chunks(&work, jobs);
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::sync_channel::<Done>(1024);
    let (trace_tx, trace_rx) = mpsc::sync_channel::<(Done, Vec<u8>)>(256);
    let trace_rx = Mutex::new(trace_rx);
    let mut failure = None;
    std::thread::scope(|scope| {
        for _ in 0..TRACE_WRITERS {
            let (tx, trace_rx) = (tx.clone(), &trace_rx);
            scope.spawn(move || {
                loop {
                    let next = trace_rx.lock().map(|rx| rx.recv());
                    let Ok(Ok((mut done, bytes))) = next else { break };
                    // The trace is stored before the record is announced.
                    if let Err(e) = dir.write_trace(&done.record.trace, &bytes) {
                        done.record.error = Some(format!("could not write the trace: {e}"));
                    }
                    if tx.send(done).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for _ in 0..jobs {
            let tx = trace_tx.clone();
            let (work, next, chunks) = (&work, &next, &chunks);
            scope.spawn(move || {
                let mut mine = 0..0;
                loop {
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
                    let (case_idx, number) = work[i];
                    let mut out = run_trial(plan, &plan.cases[case_idx], number);
                    let bytes = match serde_json::to_vec_pretty(&out.trace) {
                        Ok(b) => b,
                        Err(e) => {
                            out.record.error = Some(format!("could not write the trace: {e}"));
                            Vec::new()
                        }
                    };
                    let done = Done { index: i, record: out.record, trace: out.trace, tests: out.tests };
                    if tx.send((done, bytes)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(trace_tx);
        let mut pending: BTreeMap<usize, Done> = BTreeMap::new();
        let mut announced = 0usize;
        for done in rx {
            pending.insert(done.index, done);
            while let Some(d) = pending.remove(&announced) {
                let ev = RunEvent::TrialFinished {
                    case: work[announced].0,
                    record: &d.record,
                    trace: &d.trace,
                    tests: &d.tests,
                };
                for s in sinks.iter_mut() {
                    if let Err(e) = s.event(&ev) {
                        failure.get_or_insert(e);
                    }
                }
                announced += 1;
            }
            if failure.is_some() {
                // Stop taking trials; the workers finish the ones they hold.
                next.store(usize::MAX / 2, Ordering::Relaxed);
            }
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    for s in sinks.iter_mut() {
        s.event(&RunEvent::Finished)?;
    }
    Ok(())
}
