//! A run: plan the (case, trial) pairs, run them on `--jobs` worker threads,
//! and announce each finished trial to the run's sinks.
//!
//! Workers claim runs of consecutive trials; each finished trial's trace is
//! appended to the run dir's trace store by a writer thread (in batches of
//! whatever has arrived, so a worker never waits on the disk), and only then
//! is its record announced. The main thread announces records in plan order (a
//! small reorder buffer), so trials.jsonl is identical for the same seed
//! whatever `--jobs` is.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

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
    let (trace_tx, trace_rx) = mpsc::sync_channel::<(Done, Vec<u8>)>(1024);
    let mut failure = None;
    std::thread::scope(|scope| {
        {
            let tx = tx.clone();
            scope.spawn(move || {
                // Traces are stored in plan order (a small reorder buffer), so
                // the same seed gives the same trace pack whatever `--jobs` is.
                let mut pending: BTreeMap<usize, (Done, Vec<u8>)> = BTreeMap::new();
                let mut next_index = 0usize;
                let mut open = true;
                while open || !pending.is_empty() {
                    let ready = pending.first_key_value().is_some_and(|(i, _)| *i == next_index);
                    if open && !ready {
                        match trace_rx.recv() {
                            Ok(item) => {
                                pending.insert(item.0.index, item);
                            }
                            Err(_) => open = false,
                        }
                    }
                    while open && pending.len() < TRACE_BATCH * 4 {
                        match trace_rx.try_recv() {
                            Ok(item) => {
                                pending.insert(item.0.index, item);
                            }
                            Err(mpsc::TryRecvError::Empty) => break,
                            Err(mpsc::TryRecvError::Disconnected) => open = false,
                        }
                    }
                    // The next traces in plan order; every one left once no more can come.
                    let mut batch = Vec::new();
                    while let Some(entry) = pending.first_entry() {
                        if open && (*entry.key() != next_index || batch.len() == TRACE_BATCH) {
                            break;
                        }
                        let (i, item) = entry.remove_entry();
                        next_index = i + 1;
                        batch.push(item);
                    }
                    if batch.is_empty() {
                        continue;
                    }
                    // The traces are stored before their records are announced.
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
                    let bytes = match serde_json::to_vec(&out.trace) {
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
