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
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use super::events::{RunEvent, Sink};
use super::partition::Partition;
use crate::error::Result;
use crate::record::manifest::Filters;
use crate::record::{RunDir, Trace, TrialRecord};
use crate::trial::{self, CasePlan, Plan, TestRow, TrialOutput};
use crate::util::watch;

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

/// How far past its deadline a worker may run before the watchdog abandons it.
pub const WATCHDOG_MARGIN: Duration = Duration::from_secs(5);

/// Runs one trial (the real one is [`run_trial`]; tests pass others).
pub type Runner = fn(&Plan, &CasePlan, u32) -> TrialOutput;

/// One worker as the watchdog sees it.
struct Slot {
    /// The deadline the worker's running code promised to keep (`util::watch`).
    beat: Arc<watch::Beat>,
    state: Mutex<SlotState>,
    thread: std::sync::OnceLock<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct SlotState {
    /// The work index it runs now.
    current: Option<usize>,
    /// The rest of the run of trials it claimed.
    rest: Range<usize>,
    /// Set by the watchdog: the worker must never report anything again.
    abandoned: bool,
}

/// What the workers share.
struct Shared {
    plan: Arc<Plan>,
    work: Vec<(usize, u32)>,
    chunks: Vec<Range<usize>>,
    next: AtomicUsize,
    /// Trials handed back by abandoned workers, claimed before new chunks.
    requeued: Mutex<Vec<Range<usize>>>,
    stop: AtomicBool,
    runner: Runner,
}

impl Shared {
    fn claim(&self) -> Option<Range<usize>> {
        if self.stop.load(Ordering::SeqCst) {
            return None;
        }
        if let Some(r) = self.requeued.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return Some(r);
        }
        self.chunks.get(self.next.fetch_add(1, Ordering::Relaxed)).cloned()
    }
}

/// A worker thread: claims runs of trials and runs them; its finished trials
/// go to the trace writers. It is detached: the watchdog may abandon it.
fn spawn_worker(shared: Arc<Shared>, out: mpsc::SyncSender<Option<(Done, Vec<u8>)>>) -> Arc<Slot> {
    let slot = Arc::new(Slot {
        beat: Arc::new(watch::Beat::default()),
        state: Mutex::new(SlotState::default()),
        thread: std::sync::OnceLock::new(),
    });
    let me = slot.clone();
    let handle = std::thread::spawn(move || {
        watch::install(me.beat.clone());
        loop {
            let i = {
                let mut st = me.state.lock().unwrap_or_else(|p| p.into_inner());
                if st.abandoned {
                    return;
                }
                match st.rest.next() {
                    Some(i) => {
                        st.current = Some(i);
                        i
                    }
                    None => match shared.claim() {
                        Some(r) => {
                            st.rest = r;
                            continue;
                        }
                        None => return,
                    },
                }
            };
            let (case_idx, number) = shared.work[i];
            let mut out_ = (shared.runner)(&shared.plan, &shared.plan.cases[case_idx], number);
            let bytes = match serde_json::to_vec_pretty(&out_.trace) {
                Ok(b) => b,
                Err(e) => {
                    out_.record.error = Some(format!("could not write the trace: {e}"));
                    Vec::new()
                }
            };
            let done = Done { index: i, record: out_.record, trace: out_.trace, tests: out_.tests };
            // Under the slot's lock: the watchdog cannot abandon this worker
            // between the check and the send.
            let mut st = me.state.lock().unwrap_or_else(|p| p.into_inner());
            if st.abandoned {
                return;
            }
            st.current = None;
            if out.send(Some((done, bytes))).is_err() {
                return;
            }
        }
    });
    let _ = slot.thread.set(handle);
    slot
}

/// The record of a trial whose worker the watchdog abandoned (or that died).
fn abandoned(plan: &Plan, case: &CasePlan, number: u32, over: Option<Duration>) -> TrialOutput {
    let why = match over {
        Some(over) => format!(
            "the trial overran its time limit by more than {} s in code no limit could stop; its worker was abandoned",
            over.as_secs()
        ),
        None => "the worker running the trial stopped unexpectedly".to_string(),
    };
    trial::internal_error(plan, case, number, why)
}

/// Run every planned trial (of this partition), storing traces in `dir`,
/// and tell `sinks` as trials finish.
pub fn execute(plan: &Arc<Plan>, opts: &RunOptions, dir: &RunDir, sinks: &mut [&mut dyn Sink]) -> Result<()> {
    execute_with(plan, opts, dir, sinks, run_trial, WATCHDOG_MARGIN)
}

/// [`execute`] with a given trial runner and watchdog margin.
///
/// The watchdog: a worker whose running code stays past its published
/// deadline (see `util::watch`) by more than `margin` is abandoned. Its trial
/// is recorded as an infrastructure error, the rest of its claimed trials go
/// back to the queue, and a new worker takes its place; the abandoned thread
/// keeps running whatever it is stuck in, but it can never report a trial nor
/// claim another one, and it holds nothing the run shares.
pub fn execute_with(
    plan: &Arc<Plan>,
    opts: &RunOptions,
    dir: &RunDir,
    sinks: &mut [&mut dyn Sink],
    runner: Runner,
    margin: Duration,
) -> Result<()> {
    let work = work(plan, opts.partition);
    for s in sinks.iter_mut() {
        s.event(&RunEvent::Started { plan, trials: work.len() })?;
    }
    let total = work.len();
    let jobs = opts.jobs.max(1).min(total.max(1));
    let chunks = chunks(&work, jobs);
    let shared = Arc::new(Shared {
        plan: plan.clone(),
        work,
        chunks,
        next: AtomicUsize::new(0),
        requeued: Mutex::new(Vec::new()),
        stop: AtomicBool::new(false),
        runner,
    });
    let (tx, rx) = mpsc::channel::<Done>();
    let (trace_tx, trace_rx) = mpsc::sync_channel::<Option<(Done, Vec<u8>)>>(256);
    let trace_rx = Mutex::new(trace_rx);
    let mut failure = None;
    std::thread::scope(|scope| {
        for _ in 0..TRACE_WRITERS {
            let (tx, trace_rx) = (tx.clone(), &trace_rx);
            scope.spawn(move || {
                loop {
                    let next = trace_rx.lock().map(|rx| rx.recv());
                    let Ok(Ok(Some((mut done, bytes)))) = next else { break };
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
        let mut slots: Vec<Arc<Slot>> = (0..jobs).map(|_| spawn_worker(shared.clone(), trace_tx.clone())).collect();
        let mut pending: BTreeMap<usize, Done> = BTreeMap::new();
        let mut announced = 0usize;
        while announced < total && failure.is_none() {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(done) => {
                    pending.insert(done.index, done);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            // The watchdog. try_lock: a worker holding its lock is reporting, not stuck.
            let now = Instant::now();
            for k in 0..slots.len() {
                let dead = slots[k].thread.get().is_some_and(|h| h.is_finished());
                let overdue = slots[k].beat.deadline().is_some_and(|d| now >= d + margin);
                if !dead && !overdue {
                    continue;
                }
                let Ok(mut st) = slots[k].state.try_lock() else { continue };
                let Some(i) = st.current.filter(|_| !st.abandoned) else { continue };
                st.abandoned = true;
                let rest = std::mem::take(&mut st.rest);
                drop(st);
                if !rest.is_empty() {
                    shared.requeued.lock().unwrap_or_else(|p| p.into_inner()).push(rest);
                }
                let (case_idx, number) = shared.work[i];
                let out = abandoned(plan, &plan.cases[case_idx], number, (!dead).then_some(margin));
                let bytes = serde_json::to_vec_pretty(&out.trace).unwrap_or_default();
                let done = Done { index: i, record: out.record, trace: out.trace, tests: out.tests };
                if !dead {
                    eprintln!(
                        "warning: trial {}#{number} overran its time limit by more than {} s; its worker was abandoned and replaced",
                        shared.plan.cases[case_idx].spec.id,
                        margin.as_secs()
                    );
                }
                if trace_tx.send(Some((done, bytes))).is_err() {
                    break;
                }
                slots[k] = spawn_worker(shared.clone(), trace_tx.clone());
            }
            while let Some(d) = pending.remove(&announced) {
                let ev = RunEvent::TrialFinished {
                    case: shared.work[announced].0,
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
        }
        // Stop taking trials; let the trace writers go.
        shared.stop.store(true, Ordering::SeqCst);
        for _ in 0..TRACE_WRITERS {
            let _ = trace_tx.send(None);
        }
        drop(tx);
    });
    if let Some(e) = failure {
        return Err(e);
    }
    for s in sinks.iter_mut() {
        s.event(&RunEvent::Finished)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;

    /// Runs trial 2 into "C code" no limit can stop: a deadline already past, and a long sleep.
    fn stuck_on_two(plan: &Plan, case: &CasePlan, number: u32) -> TrialOutput {
        if number == 2 {
            watch::publish(Some(Instant::now()));
            std::thread::sleep(Duration::from_secs(20));
        }
        run_trial(plan, case, number)
    }

    struct Collect(Vec<(u32, Outcome, Option<String>)>);
    impl Sink for Collect {
        fn event(&mut self, e: &RunEvent<'_>) -> Result<()> {
            if let RunEvent::TrialFinished { record, .. } = e {
                self.0.push((record.trial, record.outcome, record.error.clone()));
            }
            Ok(())
        }
    }

    #[test]
    fn the_watchdog_abandons_a_stuck_worker_and_the_run_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let suite = dir.path().join("s.lua");
        std::fs::write(
            &suite,
            "local evalua = require('evalua')\nlocal s = evalua.suite { name = 's', trials = 6 }\n\
             s:case { id = 'c', input = 'x', agent = evalua.agent.scripted(function() return 'ok' end), expect = { function(t) return true end } }\nreturn s\n",
        )
        .unwrap();
        let plan = Arc::new(crate::run::plan(crate::lua::load::load(&suite).unwrap(), None, &Default::default(), 1).unwrap());
        let run_dir = RunDir::create(Some(&dir.path().join("out")), "s", "r").unwrap();
        let opts = RunOptions { trials: None, jobs: 2, filters: Default::default(), seed: 1, partition: None };
        let mut sink = Collect(Vec::new());
        let started = Instant::now();
        execute_with(&plan, &opts, &run_dir, &mut [&mut sink], stuck_on_two, Duration::from_millis(500)).unwrap();
        assert!(started.elapsed() < Duration::from_secs(15), "the run did not wait for the stuck worker");
        assert_eq!(sink.0.iter().map(|r| r.0).collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6], "every trial, in plan order");
        for (n, outcome, error) in &sink.0 {
            if *n == 2 {
                assert_eq!(*outcome, Outcome::InfraError);
                assert!(error.as_deref().unwrap_or("").contains("abandoned"), "{error:?}");
            } else {
                assert_eq!(*outcome, Outcome::Accepted, "trial {n}: {error:?}");
            }
        }
    }
}
