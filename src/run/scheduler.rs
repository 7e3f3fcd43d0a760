//! The run engine. Every kind of run goes through [`Scheduler::execute`]: a
//! run of the agent and a re-grade ([`Planned`]: the plan's (case, trial)
//! pairs, some kept from an interrupted run) and the grading of recorded
//! traces (`run::graded`: items streamed in as they are read). What differs
//! is the [`Source`] of the work; the workers, the watchdog, the trace writer
//! and the sinks (see `report::sinks::Followers`) are the same.
//!
//! Workers claim units of work from the source and make each one's output
//! (a trial, or a graded item). The trace writer thread takes the outputs in
//! source order (a reorder buffer), places each (its announced index, case
//! and trial number: [`Place`]), stores the kept states and traces in batches
//! of whatever has arrived (so a worker never waits on the disk), and only
//! then hands the trial on. The main thread announces trials to the sinks in
//! announced order (a second reorder buffer), so trials.jsonl is identical
//! for the same seed whatever `--jobs` is, and ticks while it waits.
//!
//! A stop request (`util::cancel`) or a failing sink makes workers stop
//! taking work ([`RunEvent::Cancelled`]); the trials they hold end as
//! `interrupted`, and every finished trial is still announced (in order, past
//! the gaps the trials never started leave). A resumed run announces the
//! trials it kept from the interrupted run in their places and runs only the
//! others.
//!
//! Workers are detached threads watched by the main thread: a worker whose
//! running code stays past its published deadline (`util::watch`) by the
//! watchdog margin is abandoned and replaced (see [`Scheduler::execute`]).

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use super::events::{CancelReason, RunEvent, Sink};
use super::partition::Partition;
use crate::error::{Error, Result};
use crate::record::manifest::Filters;
use crate::record::{Ended, KeptState, RunDir, Trace, TrialRecord};
use crate::spec::Suite;
use crate::trial::{Plan, TrialOutput};
use crate::util::{cancel, watch};

/// What a run was asked for, as the manifest records it.
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
pub(super) const CHUNK: usize = 64;

/// How far past its deadline a worker may run before the watchdog abandons it.
pub const WATCHDOG_MARGIN: Duration = Duration::from_secs(5);

/// How often the main thread sends [`RunEvent::Tick`] (and looks at the workers).
pub const TICK: Duration = Duration::from_millis(100);

/// How a run's work is scheduled: the one set of options of the engine.
#[derive(Debug, Clone, Copy)]
pub struct Scheduler {
    /// Worker threads (at least one).
    pub jobs: usize,
    /// How far past its published deadline a worker may run before it is abandoned.
    pub watchdog: Duration,
    /// The period of [`RunEvent::Tick`].
    pub tick: Duration,
}

impl Scheduler {
    pub fn new(jobs: usize) -> Scheduler {
        Scheduler { jobs: jobs.max(1), watchdog: WATCHDOG_MARGIN, tick: TICK }
    }
}

/// A finished trial, placed: its index in announced order, its case's index,
/// its output, and its trace as stored (None: serialised by the trace writer).
pub struct Placed {
    pub index: usize,
    pub case: usize,
    pub out: TrialOutput,
    pub bytes: Option<Vec<u8>>,
}

/// What a run starts with, for [`RunEvent::Started`].
pub struct Start<'a> {
    pub suite: &'a Suite,
    pub plan: Option<&'a Plan>,
    /// Trials to be announced, when known before the run.
    pub trials: Option<usize>,
    /// Per case of the plan, how many trials will be announced (empty: not known).
    pub per_case: Vec<u32>,
}

/// Where a run's work comes from. Shared by the workers, which are detached
/// (the watchdog may abandon one): it owns what it uses.
pub trait Source: Send + Sync + 'static {
    /// One unit of work, as a worker is handed it.
    type Unit: Send + 'static;
    /// What a worker makes of a unit; placed in order by a [`Place`].
    type Made: Send + 'static;
    /// What the run starts with.
    fn start(&self) -> Start<'_>;
    /// The next run of units, each with its position (0, 1, 2, … over the
    /// whole run). Empty: nothing more comes. May wait while more may come.
    fn claim(&self) -> Vec<(usize, Self::Unit)>;
    /// The (case index, trial number) a unit is known to be before it runs.
    fn label(&self, unit: &Self::Unit) -> (Option<usize>, Option<u32>);
    /// Do one unit. Never panics: a panic in evalua's code is the unit's own failure.
    fn run(&self, pos: usize, unit: Self::Unit) -> Self::Made;
    /// What a unit becomes when its worker was abandoned (`overran`: by how
    /// much past its deadline) or died.
    fn abandoned(&self, pos: usize, overran: Option<Duration>) -> Self::Made;
    /// The unit at `pos` has been placed (in order).
    fn placed(&self, _pos: usize) {}
    /// Trials finished before this run (a resume keeps them), announced in their places.
    fn kept(&self) -> Vec<Placed> {
        Vec::new()
    }
    /// How many trials the run plans, when known (else: as many as were announced).
    fn planned(&self) -> Option<usize> {
        None
    }
    /// The run stops taking work (a stop request, a failing sink): a source
    /// whose `claim` waits must stop waiting.
    fn stop(&self) {}
}

/// Places what the workers made, in source order, on the trace writer's
/// thread: None leaves a unit out (a recorded item that could not be graded).
pub trait Place<M>: Send {
    fn place(&mut self, pos: usize, made: M) -> Option<Placed>;
}

/// Each unit made its own place ([`Planned`]'s workers know it).
pub struct AsMade;

impl Place<Placed> for AsMade {
    fn place(&mut self, _pos: usize, made: Placed) -> Option<Placed> {
        Some(made)
    }
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

/// Where the trace writer keeps what each trial leaves: its kept state and
/// its trace. A run dir; or, in an interleaved run, the run dir of the
/// record's agent (`run::interleave`).
pub trait Store: Sync {
    fn write_state(&self, record: &TrialRecord, kept: &KeptState) -> std::io::Result<()>;
    /// Store these traces (each with its record), in this order.
    fn write_traces(&self, items: &[(&TrialRecord, &[u8])]) -> std::io::Result<()>;
}

impl Store for RunDir {
    fn write_state(&self, record: &TrialRecord, kept: &KeptState) -> std::io::Result<()> {
        RunDir::write_state(self, &record.case, record.trial, kept)
    }
    fn write_traces(&self, items: &[(&TrialRecord, &[u8])]) -> std::io::Result<()> {
        let batch: Vec<(&str, u32, &[u8])> = items.iter().map(|(r, b)| (r.case.as_str(), r.trial, *b)).collect();
        RunDir::write_traces(self, &batch)
    }
}

/// A trace as stored, or an empty one and the record saying why.
pub fn trace_bytes(trace: &mut Trace) -> Vec<u8> {
    match serde_json::to_vec(trace) {
        Ok(b) => b,
        Err(e) => {
            trace.record.error = Some(format!("could not write the trace: {e}"));
            Vec::new()
        }
    }
}

// ---------------------------------------------------------------------------
// The engine.

/// One worker as the watchdog sees it.
struct Slot<U> {
    /// The deadline the worker's running code promised to keep (`util::watch`).
    beat: Arc<watch::Beat>,
    state: Mutex<SlotState<U>>,
    thread: std::sync::OnceLock<std::thread::JoinHandle<()>>,
}

struct SlotState<U> {
    /// The position of the unit it runs now.
    current: Option<usize>,
    /// The rest of the units it claimed.
    rest: VecDeque<(usize, U)>,
    /// Set by the watchdog: the worker must never report anything again.
    abandoned: bool,
}

impl<U> Slot<U> {
    fn finished(&self) -> bool {
        self.thread.get().is_some_and(|h| h.is_finished())
    }
}

/// What the workers share; owned, so an abandoned worker holds nothing of the run's stack.
struct Shared<S: Source> {
    source: Arc<S>,
    /// Units handed back by abandoned workers, claimed before new ones.
    requeued: Mutex<Vec<(usize, S::Unit)>>,
    /// Take no further unit (a sink failed).
    stop: AtomicBool,
}

impl<S: Source> Shared<S> {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || cancel::requested()
    }

    fn claim(&self) -> VecDeque<(usize, S::Unit)> {
        if self.stopped() {
            return VecDeque::new();
        }
        let requeued = self.requeued.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match requeued {
            Some(u) => VecDeque::from([u]),
            None => self.source.claim().into(),
        }
    }
}

/// What a worker sends the trace writer: the unit's position and what it
/// made; None tells the writer no more comes.
type ToWriter<M> = Option<(usize, M)>;

/// A unit a worker started: (case index, trial number) when known.
type Started = (Option<usize>, Option<u32>);

/// A worker thread: claims units and runs them; what it makes goes to the
/// trace writer. It is detached: the watchdog may abandon it.
fn spawn_worker<S: Source>(
    shared: Arc<Shared<S>>,
    to_writer: mpsc::SyncSender<ToWriter<S::Made>>,
    started: mpsc::Sender<Started>,
) -> Arc<Slot<S::Unit>> {
    let slot = Arc::new(Slot {
        beat: Arc::new(watch::Beat::default()),
        state: Mutex::new(SlotState { current: None, rest: VecDeque::new(), abandoned: false }),
        thread: std::sync::OnceLock::new(),
    });
    let me = slot.clone();
    let handle = std::thread::spawn(move || {
        watch::install(me.beat.clone());
        loop {
            let (pos, unit) = {
                let mut st = me.state.lock().unwrap_or_else(|p| p.into_inner());
                if st.abandoned {
                    return;
                }
                if st.rest.is_empty() {
                    drop(st);
                    let claimed = shared.claim();
                    if claimed.is_empty() {
                        return;
                    }
                    me.state.lock().unwrap_or_else(|p| p.into_inner()).rest = claimed;
                    continue;
                }
                // Stopped (a signal, a failing sink): the claimed rest is never started.
                if shared.stopped() {
                    return;
                }
                let Some((pos, unit)) = st.rest.pop_front() else { continue };
                st.current = Some(pos);
                (pos, unit)
            };
            let _ = started.send(shared.source.label(&unit));
            let made = shared.source.run(pos, unit);
            // Under the slot's lock: the watchdog cannot abandon this worker
            // between the check and the send.
            let mut st = me.state.lock().unwrap_or_else(|p| p.into_inner());
            if st.abandoned {
                return;
            }
            st.current = None;
            if to_writer.send(Some((pos, made))).is_err() {
                return;
            }
        }
    });
    let _ = slot.thread.set(handle);
    slot
}

/// Serialise the traces the sources left to the writer, on up to `jobs` threads.
fn serialise(batch: &mut [Placed], jobs: usize) {
    let mut missing: Vec<&mut Placed> = batch.iter_mut().filter(|p| p.bytes.is_none()).collect();
    if missing.is_empty() {
        return;
    }
    let size = missing.len().div_ceil(jobs.max(1));
    std::thread::scope(|s| {
        for part in missing.chunks_mut(size) {
            s.spawn(move || {
                for p in part.iter_mut() {
                    p.bytes = Some(trace_bytes(&mut p.out.trace));
                }
            });
        }
    });
}

/// Announces placed trials to the sinks in announced order (a reorder buffer).
struct Herald {
    pending: BTreeMap<usize, Placed>,
    /// The next index to announce.
    next: usize,
    announced: usize,
    interrupted: usize,
}

fn tell(sinks: &mut [&mut dyn Sink], ev: &RunEvent<'_>, failure: &mut Option<Error>) {
    for s in sinks.iter_mut() {
        if let Err(e) = s.event(ev) {
            failure.get_or_insert(e);
        }
    }
}

impl Herald {
    fn announce(&mut self, d: Placed, sinks: &mut [&mut dyn Sink], failure: &mut Option<Error>) {
        let o = &d.out;
        let ev = RunEvent::TrialFinished { case: d.case, record: &o.trace.record, trace: &o.trace, tests: &o.tests };
        tell(sinks, &ev, failure);
        self.announced += 1;
        if o.trace.record.ended == Ended::Interrupted {
            self.interrupted += 1;
        }
    }

    /// Announce every trial that is next in order.
    fn flush(&mut self, sinks: &mut [&mut dyn Sink], failure: &mut Option<Error>) {
        while let Some(d) = self.pending.remove(&self.next) {
            self.announce(d, sinks, failure);
            self.next += 1;
        }
    }
}

impl Scheduler {
    /// Make every unit of `source` on the workers, place what they made with
    /// `place` (in source order), store each trial's kept state and trace in
    /// `dir`, and tell `sinks` in announced order.
    ///
    /// The watchdog: a worker whose running code stays past its published
    /// deadline (see `util::watch`) by more than `self.watchdog` is
    /// abandoned. Its unit becomes [`Source::abandoned`], the rest of its
    /// claimed units go back to the queue, and a new worker takes its place;
    /// the abandoned thread keeps running whatever it is stuck in, but it can
    /// never report a unit nor claim another one, and it holds nothing the
    /// run's stack owns. A worker that dies mid-unit is handled the same way.
    pub fn execute<S: Source>(
        &self,
        dir: &dyn Store,
        source: Arc<S>,
        place: &mut dyn Place<S::Made>,
        sinks: &mut [&mut dyn Sink],
    ) -> Result<Executed> {
        let begun = Instant::now();
        {
            let start = source.start();
            let ev = RunEvent::Started {
                suite: start.suite,
                plan: start.plan,
                trials: start.trials,
                per_case: &start.per_case,
            };
            for s in sinks.iter_mut() {
                s.event(&ev)?;
            }
        }
        let jobs = self.jobs.max(1);
        let kept = source.kept();
        let shared =
            Arc::new(Shared { source: source.clone(), requeued: Mutex::new(Vec::new()), stop: AtomicBool::new(false) });
        let (tx, rx) = mpsc::sync_channel::<Placed>(1024);
        let (trace_tx, trace_rx) = mpsc::sync_channel::<ToWriter<S::Made>>(1024);
        let (started_tx, started_rx) = mpsc::channel::<Started>();
        let mut failure = None;
        let mut herald = Herald { pending: BTreeMap::new(), next: 0, announced: 0, interrupted: 0 };
        std::thread::scope(|scope| {
            {
                let (tx, source) = (tx.clone(), &source);
                scope.spawn(move || {
                    // What the workers made is placed and stored in source order
                    // (a small reorder buffer, by position), so the same seed gives
                    // the same trace pack whatever `--jobs` is.
                    let mut pending: BTreeMap<usize, S::Made> = BTreeMap::new();
                    let mut next_pos = 0usize;
                    let mut open = true;
                    while open || !pending.is_empty() {
                        let ready = pending.first_key_value().is_some_and(|(i, _)| *i == next_pos);
                        if open && !ready {
                            match trace_rx.recv() {
                                Ok(Some((pos, made))) => {
                                    pending.insert(pos, made);
                                }
                                // None: every worker is done (abandoned ones never send again).
                                Ok(None) | Err(_) => open = false,
                            }
                        }
                        while open && pending.len() < TRACE_BATCH * 4 {
                            match trace_rx.try_recv() {
                                Ok(Some((pos, made))) => {
                                    pending.insert(pos, made);
                                }
                                Err(mpsc::TryRecvError::Empty) => break,
                                Ok(None) | Err(mpsc::TryRecvError::Disconnected) => open = false,
                            }
                        }
                        // The next units in order; every one left once no more can come.
                        let mut batch = Vec::new();
                        let mut taken = 0;
                        while let Some(entry) = pending.first_entry() {
                            if open && (*entry.key() != next_pos || taken == TRACE_BATCH) {
                                break;
                            }
                            let (pos, made) = entry.remove_entry();
                            next_pos = pos + 1;
                            taken += 1;
                            let placed = place.place(pos, made);
                            source.placed(pos);
                            batch.extend(placed);
                        }
                        if batch.is_empty() {
                            continue;
                        }
                        serialise(&mut batch, jobs);
                        // Each trial's kept state, then the traces, are stored before their records are announced.
                        for d in batch.iter_mut() {
                            if let Some(kept) = d.out.state.take()
                                && let Err(e) = dir.write_state(&d.out.trace.record, &kept)
                            {
                                d.out.trace.record.error = Some(format!("could not keep the trial's state: {e}"));
                            }
                        }
                        let stored = {
                            let items: Vec<(&TrialRecord, &[u8])> = batch
                                .iter()
                                .filter_map(|d| {
                                    d.bytes.as_deref().filter(|b| !b.is_empty()).map(|b| (&d.out.trace.record, b))
                                })
                                .collect();
                            dir.write_traces(&items)
                        };
                        for mut d in batch {
                            if let Err(e) = &stored {
                                d.out.trace.record.error = Some(format!("could not write the trace: {e}"));
                            }
                            d.bytes = None;
                            if tx.send(d).is_err() {
                                return;
                            }
                        }
                    }
                });
            }
            drop(tx);
            let mut slots: Vec<Arc<Slot<S::Unit>>> =
                (0..jobs).map(|_| spawn_worker(shared.clone(), trace_tx.clone(), started_tx.clone())).collect();
            // Some while workers may still send to the trace writer.
            let mut to_writer = Some(trace_tx);
            for d in kept {
                herald.pending.insert(d.index, d);
            }
            herald.flush(sinks, &mut failure);
            let (mut running, mut cancelled) = (0usize, false);
            let mut next_tick = Instant::now() + self.tick;
            loop {
                let received = rx.recv_timeout(self.tick);
                // Trials started before this one finished are told first.
                while let Ok((case, trial)) = started_rx.try_recv() {
                    running += 1;
                    tell(sinks, &RunEvent::TrialStarted { case, trial }, &mut failure);
                }
                match received {
                    Ok(d) => {
                        running = running.saturating_sub(1);
                        herald.pending.insert(d.index, d);
                        herald.flush(sinks, &mut failure);
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    // The trace writer stopped: everything sent was received.
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                }
                if !cancelled && (failure.is_some() || cancel::requested()) {
                    cancelled = true;
                    // Stop taking work; the workers finish the units they hold.
                    shared.stop.store(true, Ordering::SeqCst);
                    source.stop();
                    let reason = if failure.is_some() { CancelReason::SinkFailed } else { CancelReason::Signal };
                    tell(sinks, &RunEvent::Cancelled { reason }, &mut failure);
                }
                let now = Instant::now();
                if now >= next_tick {
                    next_tick = now + self.tick;
                    let ev = RunEvent::Tick { elapsed: begun.elapsed(), running, finished: herald.announced };
                    tell(sinks, &ev, &mut failure);
                }
                let Some(trace_tx) = &to_writer else { continue };
                // The watchdog. try_lock: a worker holding its lock is reporting, not stuck.
                for slot in slots.iter_mut() {
                    let dead = slot.finished();
                    let overdue = slot.beat.deadline().is_some_and(|d| now >= d + self.watchdog);
                    if !dead && !overdue {
                        continue;
                    }
                    let mut st = match slot.state.try_lock() {
                        Ok(st) => st,
                        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                        Err(std::sync::TryLockError::WouldBlock) => continue,
                    };
                    let Some(pos) = st.current.filter(|_| !st.abandoned) else { continue };
                    st.abandoned = true;
                    let rest = std::mem::take(&mut st.rest);
                    drop(st);
                    shared.requeued.lock().unwrap_or_else(|p| p.into_inner()).extend(rest.into_iter().rev());
                    let made = source.abandoned(pos, (!dead).then_some(self.watchdog));
                    let _ = trace_tx.send(Some((pos, made)));
                    *slot = spawn_worker(shared.clone(), trace_tx.clone(), started_tx.clone());
                }
                // Every live worker is done (and has sent all it finished, ahead
                // of this in the queue): let the trace writer finish.
                if slots.iter().all(|s| s.finished()) {
                    let _ = trace_tx.send(None);
                    to_writer = None;
                }
            }
            // Stopped early: trials that never started leave gaps; announce the
            // finished ones past them anyway, still in order.
            for (_, d) in std::mem::take(&mut herald.pending) {
                herald.announce(d, sinks, &mut failure);
            }
        });
        if let Some(e) = failure {
            return Err(e);
        }
        for s in sinks.iter_mut() {
            s.event(&RunEvent::Finished)?;
        }
        Ok(Executed {
            planned: source.planned().unwrap_or(herald.announced),
            announced: herald.announced,
            interrupted: herald.interrupted,
            stopped: cancel::requested(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;
    use crate::run::planned::{Planned, TrialFn, run_trial, work};
    use crate::trial::Position;

    /// Runs trial 2 into "C code" no limit can stop: a deadline already past, and a
    /// sleep of ten minutes (a run that ends before it did not wait for the worker).
    fn stuck_on_two(plan: &Plan, at: Position) -> TrialOutput {
        if at.number == 2 {
            watch::publish(Some(Instant::now()));
            std::thread::sleep(Duration::from_secs(600));
        }
        run_trial(plan, at)
    }

    #[derive(Default)]
    struct Collect(Vec<(u32, Outcome, Option<String>)>, usize, usize);
    impl Sink for Collect {
        fn event(&mut self, e: &RunEvent<'_>) -> Result<()> {
            match e {
                RunEvent::TrialFinished { record, .. } => {
                    self.0.push((record.trial, record.outcome, record.error.clone()))
                }
                RunEvent::TrialStarted { .. } => self.1 += 1,
                RunEvent::Tick { .. } => self.2 += 1,
                _ => {}
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
        let mut sink = Collect::default();
        let started = Instant::now();
        let p = plan.clone();
        let trial: Arc<TrialFn> = Arc::new(move |_, at| stuck_on_two(&p, at));
        let source = Arc::new(Planned::new(&plan, work(&plan, None), BTreeMap::new(), 2, trial));
        let scheduler = Scheduler { watchdog: Duration::from_millis(500), ..Scheduler::new(2) };
        scheduler.execute(&run_dir, source, &mut AsMade, &mut [&mut sink]).unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the run waited for the stuck worker: {:?}",
            started.elapsed()
        );
        assert_eq!(sink.0.iter().map(|r| r.0).collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6], "every trial, in plan order");
        for (n, outcome, error) in &sink.0 {
            if *n == 2 {
                assert_eq!(*outcome, Outcome::InfraError);
                assert!(error.as_deref().unwrap_or("").contains("abandoned"), "{error:?}");
            } else {
                assert_eq!(*outcome, Outcome::Accepted, "trial {n}: {error:?}");
            }
        }
        assert_eq!(sink.1, 6, "every trial's start is told, the abandoned one's too");
        assert!(sink.2 > 0, "the run ticked while the stuck worker held it");
    }

    /// Fails at the second finished trial, and notes whether the run said it stops.
    #[derive(Default)]
    struct FailSecond(usize, Vec<CancelReason>);
    impl Sink for FailSecond {
        fn event(&mut self, e: &RunEvent<'_>) -> Result<()> {
            match e {
                RunEvent::TrialFinished { .. } => {
                    self.0 += 1;
                    if self.0 == 2 {
                        return Err(Error::Environment("disk full".into()));
                    }
                }
                RunEvent::Cancelled { reason } => self.1.push(*reason),
                _ => {}
            }
            Ok(())
        }
    }

    #[test]
    fn a_failing_sink_cancels_the_run_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let suite = dir.path().join("s.lua");
        std::fs::write(
            &suite,
            "local evalua = require('evalua')\nlocal s = evalua.suite { name = 's', trials = 20 }\n\
             s:case { id = 'c', input = 'x', agent = evalua.agent.scripted(function() return 'ok' end), expect = { function(t) return true end } }\nreturn s\n",
        )
        .unwrap();
        let plan =
            Arc::new(crate::run::plan(crate::lua::load::load(&suite).unwrap(), None, &Default::default(), 1).unwrap());
        let run_dir = RunDir::create(Some(&dir.path().join("out")), "s", "r").unwrap();
        let mut sink = FailSecond::default();
        let source = Arc::new(Planned::run(&plan, None, BTreeMap::new(), 1));
        let err = Scheduler::new(1).execute(&run_dir, source, &mut AsMade, &mut [&mut sink]);
        assert!(err.is_err_and(|e| e.to_string().contains("disk full")));
        assert_eq!(sink.1, [CancelReason::SinkFailed], "the run says once that it stops taking trials");
    }
}
