//! `evalua grade`'s work on the run engine: a reader thread reads the inputs
//! and hands each item on as soon as it is complete (`otel::read`); the
//! scheduler's workers grade items (`grade`); the trace writer gives each
//! graded item its case and trial number in input order ([`Cases`]), and the
//! trials go to the same sinks as a run's. Memory stays flat: only items in
//! flight are held (a worker takes a permit before an item, given back once
//! the item is placed, so a slow disk holds the graders back).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use super::events::Sink;
use super::scheduler::{Executed, Place, Placed, Scheduler, Source, Start};
use crate::error::{Error, Result};
use crate::grade::{self, Done};
use crate::otel::read::{self, Input, Item};
use crate::record::RunDir;
use crate::record::manifest::{CaseEntry, TraceInput};
use crate::spec::Suite;
use crate::stats::CaseInfo;
use crate::trial::TrialOutput;

/// Warnings about the trace files kept at most (the rest are counted): a
/// hostile file can be one bad record every two bytes.
const MAX_READ_WARNINGS: usize = 10_000;

/// Recorded items, read on a reader thread, graded by the workers.
pub struct Recorded {
    ctx: Arc<grade::Context>,
    items: Mutex<Option<mpsc::Receiver<(usize, Item)>>>,
    permits: Mutex<mpsc::Receiver<()>>,
    give_back: mpsc::SyncSender<()>,
}

impl Recorded {
    /// No more items are taken: the reader's next send fails and it ends.
    fn close(&self) {
        self.items.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

impl Source for Recorded {
    type Unit = Item;
    type Made = Done;

    fn start(&self) -> Start<'_> {
        Start { suite: &self.ctx.suite, plan: None, trials: None, per_case: Vec::new() }
    }

    fn claim(&self) -> Vec<(usize, Item)> {
        if !matches!(self.permits.lock().map(|r| r.recv()), Ok(Ok(()))) {
            return Vec::new();
        }
        let items = self.items.lock().unwrap_or_else(|p| p.into_inner());
        match items.as_ref().map(|r| r.recv()) {
            Some(Ok(item)) => vec![item],
            _ => Vec::new(),
        }
    }

    fn label(&self, _item: &Item) -> (Option<usize>, Option<u32>) {
        (None, None)
    }

    fn run(&self, pos: usize, item: Item) -> Done {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| grade::grade(&self.ctx, item))) {
            Ok(d) => d,
            Err(_) => Done::Skipped(format!("item {pos}: internal error in evalua while grading it")),
        }
    }

    fn abandoned(&self, pos: usize, overran: Option<Duration>) -> Done {
        Done::Skipped(match overran {
            Some(over) => format!("item {pos}: grading it overran its time limit by more than {} s", over.as_secs()),
            None => format!("item {pos}: internal error in evalua while grading it"),
        })
    }

    fn placed(&self, _pos: usize) {
        let _ = self.give_back.try_send(());
    }
}

/// Gives each graded item its case (the suite's, when it matched one; else
/// its own key) and its trial number, in input order; collects the warnings.
pub struct Cases<'s> {
    suite: &'s Suite,
    index: HashMap<String, usize>,
    infos: Vec<CaseInfo>,
    trials: Vec<u32>,
    announced: usize,
    warnings: Arc<Mutex<Vec<String>>>,
    /// (case, trial) numbers given so far.
    taken: std::collections::HashSet<(usize, u32)>,
}

impl Place<Done> for Cases<'_> {
    fn place(&mut self, _pos: usize, made: Done) -> Option<Placed> {
        let warn = |ws: Vec<String>| self.warnings.lock().map(|mut v| v.extend(ws)).unwrap_or(());
        let g = match made {
            Done::Skipped(w) => {
                warn(vec![w]);
                return None;
            }
            Done::Graded(g) => *g,
        };
        let grade::Graded { mut trace, matched, warnings, trial } = g;
        let record = &mut trace.record;
        if !warnings.is_empty() {
            warn(warnings);
        }
        let (suite, infos, trials) = (self.suite, &mut self.infos, &mut self.trials);
        let case = *self.index.entry(record.case.clone()).or_insert_with(|| {
            let spec = if matched { suite.cases.iter().find(|c| c.id == record.case) } else { None };
            infos.push(CaseInfo {
                id: record.case.clone(),
                weight: spec.map(|c| c.weight).unwrap_or(1.0),
                tags: spec.map(|c| c.tags.clone()).unwrap_or_default(),
                difficulty: spec.and_then(|c| c.difficulty.clone()),
                reference: spec.and_then(|c| c.reference.clone()),
                should_abstain: spec.is_some_and(|c| c.should_abstain),
                pending_review: spec.is_some_and(|c| c.pending_review),
            });
            trials.push(0);
            infos.len() - 1
        });
        self.trials[case] += 1;
        // The trial number the item names (τ-bench's `trial + 1`) unless the
        // case already has that trial; else the next in input order.
        record.trial = match trial {
            Some(n) if n > 0 && self.taken.insert((case, n)) => n,
            _ => {
                let mut n = self.trials[case];
                while !self.taken.insert((case, n)) {
                    n += 1;
                }
                n
            }
        };
        record.trace = crate::record::traces::PACK.to_string();
        let index = self.announced;
        self.announced += 1;
        Some(Placed { index, case, out: TrialOutput { trace, tests: Vec::new(), state: None }, bytes: None })
    }
}

/// What grading the inputs gave, for the manifest.
pub struct Graded {
    pub executed: Executed,
    /// The cases items were graded as, in order of first appearance, with their trials.
    pub cases: Vec<CaseEntry>,
    pub inputs: Vec<TraceInput>,
    /// What could not be read or graded.
    pub warnings: Vec<String>,
}

/// Grade every item of `inputs` with the suite of `ctx`, storing traces in
/// `dir` and telling `sinks` in input order.
pub fn grade(
    scheduler: &Scheduler,
    ctx: Arc<grade::Context>,
    inputs: &[Input],
    dir: &RunDir,
    sinks: &mut [&mut dyn Sink],
) -> Result<Graded> {
    let jobs = scheduler.jobs.max(1);
    let warnings = Arc::new(Mutex::new(Vec::<String>::new()));
    let (item_tx, item_rx) = mpsc::sync_channel::<(usize, Item)>(jobs * 16);
    let in_flight = jobs * 32;
    let (give_back, permits) = mpsc::sync_channel::<()>(in_flight);
    for _ in 0..in_flight {
        let _ = give_back.try_send(());
    }
    let source = Arc::new(Recorded {
        ctx: ctx.clone(),
        items: Mutex::new(Some(item_rx)),
        permits: Mutex::new(permits),
        give_back,
    });
    let mut cases = Cases {
        suite: &ctx.suite,
        index: HashMap::new(),
        infos: Vec::new(),
        trials: Vec::new(),
        announced: 0,
        warnings: warnings.clone(),
        taken: Default::default(),
    };
    let (executed, read) = std::thread::scope(|scope| {
        let reader = {
            let warnings = warnings.clone();
            scope.spawn(move || {
                let mut next = 0usize;
                // A hostile file can be a warning per byte or two: keep the first ones and count the rest.
                let mut more = 0usize;
                let mut warn = |w: String| {
                    let _ =
                        warnings.lock().map(|mut v| if v.len() < MAX_READ_WARNINGS { v.push(w) } else { more += 1 });
                };
                let mut emit = |item: Item| -> Result<()> {
                    item_tx.send((next, item)).map_err(|_| Error::Environment("the graders stopped".into()))?;
                    next += 1;
                    Ok(())
                };
                let read = read::read(inputs, jobs, &mut warn, &mut emit);
                if more > 0 {
                    let _ = warnings
                        .lock()
                        .map(|mut v| v.push(format!("… and {more} more warnings about the trace files")));
                }
                read
            })
        };
        let executed = scheduler.execute(dir, source.clone(), &mut cases, sinks);
        source.close();
        let read = match reader.join() {
            Ok(r) => r,
            Err(_) => Err(Error::Environment("the trace reader failed (internal error)".into())),
        };
        (executed, read)
    });
    let executed = executed?;
    let inputs = match read {
        // Stopped by a signal: the reader was cut off, not broken.
        Err(_) if executed.stopped => Vec::new(),
        r => r?,
    };
    let warnings = std::mem::take(&mut *warnings.lock().map_err(|_| Error::Environment("warnings lost".into()))?);
    let cases = cases
        .infos
        .into_iter()
        .zip(cases.trials)
        .map(|(i, n)| CaseEntry {
            id: i.id,
            trials: n,
            revision: None,
            fixture_sha256: None,
            clock: String::new(),
            weight: i.weight,
            tags: i.tags,
            difficulty: i.difficulty,
            workdir: None,
            agent: None,
            reference: i.reference,
            should_abstain: i.should_abstain,
            pending_review: i.pending_review,
        })
        .collect();
    Ok(Graded { executed, cases, inputs, warnings })
}
