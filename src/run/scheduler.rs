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
//!
//! Workers are detached threads watched by the main thread: a worker whose
//! running code stays past its published deadline (`util::watch`) by
//! [`WATCHDOG_MARGIN`] is abandoned and replaced (see [`execute_work`]).

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use super::events::{RunEvent, Sink};
use super::partition::Partition;
use crate::error::Result;
use crate::record::manifest::Filters;
use crate::record::{KeptState, RunDir, Trace, TrialRecord};
use crate::trial::{self, CasePlan, Plan, TestRow, TrialOutput};
use crate::util::{cancel, watch};

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
fn chunks(work: &[(usize, u32)], jobs: usize) -> Vec<Range<usize>> {
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
/// recorded trial back. It owns what it uses: the worker that calls it may be
/// abandoned by the watchdog and outlive the run.
pub type TrialFn = dyn Fn(usize, &CasePlan, u32) -> TrialOutput + Send + Sync;

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

/// How far past its deadline a worker may run before the watchdog abandons it.
pub const WATCHDOG_MARGIN: Duration = Duration::from_secs(5);

/// One worker as the watchdog sees it.
struct Slot {
    /// The deadline the worker's running code promised to keep (`util::watch`).
    beat: Arc<watch::Beat>,
    state: Mutex<SlotState>,
    thread: std::sync::OnceLock<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct SlotState {
    /// The index (into the trials to run) it runs now.
    current: Option<usize>,
    /// The rest of the run of trials it claimed.
    rest: Range<usize>,
    /// Set by the watchdog: the worker must never report anything again.
    abandoned: bool,
}

impl Slot {
    fn finished(&self) -> bool {
        self.thread.get().is_some_and(|h| h.is_finished())
    }
}

/// What the workers share; owned, so an abandoned worker holds nothing of the run's stack.
struct Shared {
    plan: Arc<Plan>,
    /// The trials to run (case index, trial number) and each one's index in the work.
    todo: Vec<(usize, u32)>,
    index_of: Vec<usize>,
    chunks: Vec<Range<usize>>,
    next: AtomicUsize,
    /// Trials handed back by abandoned workers, claimed before new chunks.
    requeued: Mutex<Vec<Range<usize>>>,
    /// Take no further trial (a sink failed).
    stop: AtomicBool,
    trial: Arc<TrialFn>,
}

impl Shared {
    fn claim(&self) -> Option<Range<usize>> {
        // A stop request: take no further trial.
        if self.stop.load(Ordering::SeqCst) || cancel::requested() {
            return None;
        }
        if let Some(r) = self.requeued.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return Some(r);
        }
        self.chunks.get(self.next.fetch_add(1, Ordering::Relaxed)).cloned()
    }
}

/// What a worker sends the trace writer: its position among the trials to
/// run, the finished trial and its trace; None tells the writer no more comes.
type ToWriter = Option<(usize, Done, Vec<u8>)>;

/// A worker thread: claims runs of trials and runs them; its finished trials
/// go to the trace writers. It is detached: the watchdog may abandon it.
fn spawn_worker(shared: Arc<Shared>, to_writers: mpsc::SyncSender<ToWriter>) -> Arc<Slot> {
    let slot = Arc::new(Slot {
        beat: Arc::new(watch::Beat::default()),
        state: Mutex::new(SlotState::default()),
        thread: std::sync::OnceLock::new(),
    });
    let me = slot.clone();
    let handle = std::thread::spawn(move || {
        watch::install(me.beat.clone());
        loop {
            let t = {
                let mut st = me.state.lock().unwrap_or_else(|p| p.into_inner());
                if st.abandoned {
                    return;
                }
                match st.rest.next() {
                    // Stopped (a signal, a failing sink): the claimed rest is never started.
                    Some(_) if cancel::requested() || shared.stop.load(Ordering::SeqCst) => return,
                    Some(t) => {
                        st.current = Some(t);
                        t
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
            let (case_idx, number) = shared.todo[t];
            let i = shared.index_of[t];
            let (plan, case) = (&shared.plan, &shared.plan.cases[case_idx]);
            let mut out = guarded(plan, case, number, || (shared.trial)(i, case, number));
            let bytes = match serde_json::to_vec(&out.trace) {
                Ok(b) => b,
                Err(e) => {
                    out.record.error = Some(format!("could not write the trace: {e}"));
                    Vec::new()
                }
            };
            let done = Done { index: i, record: out.record, trace: out.trace, tests: out.tests, state: out.state };
            // Under the slot's lock: the watchdog cannot abandon this worker
            // between the check and the send.
            let mut st = me.state.lock().unwrap_or_else(|p| p.into_inner());
            if st.abandoned {
                return;
            }
            st.current = None;
            if to_writers.send(Some((t, done, bytes))).is_err() {
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
pub fn execute(plan: &Arc<Plan>, opts: &RunOptions, dir: &RunDir, sinks: &mut [&mut dyn Sink]) -> Result<Executed> {
    execute_resumed(plan, opts, dir, sinks, BTreeMap::new())
}

/// As [`execute`], with the trials an earlier run finished: `kept` by their
/// index in [`work`]. They are announced in their places; the others run.
pub fn execute_resumed(
    plan: &Arc<Plan>,
    opts: &RunOptions,
    dir: &RunDir,
    sinks: &mut [&mut dyn Sink],
    kept: BTreeMap<usize, Kept>,
) -> Result<Executed> {
    let work = work(plan, opts.partition);
    let p = plan.clone();
    execute_work(plan, &work, opts.jobs, dir, sinks, kept, Arc::new(move |_, case, number| run_trial(&p, case, number)))
}

/// Produce the output of every work item (case index, trial number) with
/// `trial` on `jobs` workers, storing each trial's kept state and trace in
/// `dir`, and tell `sinks` in work order; `kept` trials (by work index) are
/// announced in their places without running.
pub fn execute_work(
    plan: &Arc<Plan>,
    work: &[(usize, u32)],
    jobs: usize,
    dir: &RunDir,
    sinks: &mut [&mut dyn Sink],
    kept: BTreeMap<usize, Kept>,
    trial: Arc<TrialFn>,
) -> Result<Executed> {
    execute_watched(plan, work, jobs, dir, sinks, kept, trial, WATCHDOG_MARGIN)
}

/// [`execute_work`] with a given watchdog margin.
///
/// The watchdog: a worker whose running code stays past its published
/// deadline (see `util::watch`) by more than `margin` is abandoned. Its trial
/// is recorded as an infrastructure error, the rest of its claimed trials go
/// back to the queue, and a new worker takes its place; the abandoned thread
/// keeps running whatever it is stuck in, but it can never report a trial nor
/// claim another one, and it holds nothing the run's stack owns. A worker
/// that dies mid-trial is handled the same way.
#[allow(clippy::too_many_arguments)]
fn execute_watched(
    plan: &Arc<Plan>,
    work: &[(usize, u32)],
    jobs: usize,
    dir: &RunDir,
    sinks: &mut [&mut dyn Sink],
    mut kept: BTreeMap<usize, Kept>,
    trial: Arc<TrialFn>,
    margin: Duration,
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
    let shared = Arc::new(Shared {
        plan: plan.clone(),
        todo,
        index_of,
        chunks,
        next: AtomicUsize::new(0),
        requeued: Mutex::new(Vec::new()),
        stop: AtomicBool::new(false),
        trial,
    });
    let (tx, rx) = mpsc::sync_channel::<Done>(1024);
    let (trace_tx, trace_rx) = mpsc::sync_channel::<ToWriter>(1024);
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
                            Ok(Some((pos, done, bytes))) => {
                                pending.insert(pos, (done, bytes));
                            }
                            // None: every worker is done (abandoned ones never send again).
                            Ok(None) | Err(_) => open = false,
                        }
                    }
                    while open && pending.len() < TRACE_BATCH * 4 {
                        match trace_rx.try_recv() {
                            Ok(Some((pos, done, bytes))) => {
                                pending.insert(pos, (done, bytes));
                            }
                            Err(mpsc::TryRecvError::Empty) => break,
                            Ok(None) | Err(mpsc::TryRecvError::Disconnected) => open = false,
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
        let mut slots: Vec<Arc<Slot>> = (0..jobs).map(|_| spawn_worker(shared.clone(), trace_tx.clone())).collect();
        // Some while workers may still send to the trace writer.
        let mut to_writers = Some(trace_tx);
        let mut herald = Herald { work, pending: BTreeMap::new(), next: 0, announced: 0, interrupted: 0 };
        for (i, k) in std::mem::take(&mut kept) {
            herald.pending.insert(i, Done { index: i, record: k.record, trace: k.trace, tests: k.tests, state: None });
        }
        herald.flush(sinks, &mut failure);
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(done) => {
                    herald.pending.insert(done.index, done);
                    herald.flush(sinks, &mut failure);
                    if failure.is_some() {
                        // Stop taking trials; the workers finish the ones they hold.
                        shared.stop.store(true, Ordering::SeqCst);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                // Every trace writer stopped: everything sent was received.
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            let Some(trace_tx) = &to_writers else { continue };
            // The watchdog. try_lock: a worker holding its lock is reporting, not stuck.
            let now = Instant::now();
            for slot in slots.iter_mut() {
                let dead = slot.finished();
                let overdue = slot.beat.deadline().is_some_and(|d| now >= d + margin);
                if !dead && !overdue {
                    continue;
                }
                let mut st = match slot.state.try_lock() {
                    Ok(st) => st,
                    Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                    Err(std::sync::TryLockError::WouldBlock) => continue,
                };
                let Some(t) = st.current.filter(|_| !st.abandoned) else { continue };
                st.abandoned = true;
                let rest = std::mem::take(&mut st.rest);
                drop(st);
                if !rest.is_empty() {
                    shared.requeued.lock().unwrap_or_else(|p| p.into_inner()).push(rest);
                }
                let (case_idx, number) = shared.todo[t];
                let case = &plan.cases[case_idx];
                let out = abandoned(plan, case, number, (!dead).then_some(margin));
                let bytes = serde_json::to_vec(&out.trace).unwrap_or_default();
                let done = Done {
                    index: shared.index_of[t],
                    record: out.record,
                    trace: out.trace,
                    tests: out.tests,
                    state: None,
                };
                if !dead {
                    eprintln!(
                        "warning: trial {}#{number} overran its time limit by more than {} s; its worker was abandoned and replaced",
                        case.spec.id,
                        margin.as_secs()
                    );
                }
                let _ = trace_tx.send(Some((t, done, bytes)));
                *slot = spawn_worker(shared.clone(), trace_tx.clone());
            }
            // Every live worker is done (and has sent all it finished, ahead
            // of this in the queue): let the trace writer finish.
            if slots.iter().all(|s| s.finished()) {
                let _ = trace_tx.send(None);
                to_writers = None;
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
        let plan =
            Arc::new(crate::run::plan(crate::lua::load::load(&suite).unwrap(), None, &Default::default(), 1).unwrap());
        let run_dir = RunDir::create(Some(&dir.path().join("out")), "s", "r").unwrap();
        let mut sink = Collect(Vec::new());
        let started = Instant::now();
        let p = plan.clone();
        let work = work(&plan, None);
        let trial: Arc<TrialFn> = Arc::new(move |_, case, number| stuck_on_two(&p, case, number));
        execute_watched(
            &plan,
            &work,
            2,
            &run_dir,
            &mut [&mut sink],
            BTreeMap::new(),
            trial,
            Duration::from_millis(500),
        )
        .unwrap();
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
