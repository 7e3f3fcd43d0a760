//! Interleaved runs of several agents (`evalua run SUITE --agent A --agent B`):
//! every (case, trial) pair is a **block**, and within a block each agent
//! runs the trial once, back to back, from the same seed (the same initial
//! state, random stream and injected faults). The order of the agents
//! rotates from block to block, so each agent runs first in as many blocks as
//! the others; where the rotation starts is drawn from the run's seed. A
//! slow provider minute then lands on every agent alike, not on whichever
//! ran in that hour of two separate runs.
//!
//! The agents of a block run strictly one after the other, on one worker;
//! `--jobs N` runs N blocks at a time. Running a block's agents at the same
//! time would make each agent's trial the other's load (CPU, memory, the
//! provider's rate limit on a shared key): the rival's behaviour would enter
//! the measurement of each. One after the other, their windows differ by one
//! trial, in alternating directions, and at any moment the other workers
//! hold a mix of both agents.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::events::{RunEvent, Sink};
use super::partition::Partition;
use super::planned::work;
use super::scheduler::{Placed, Source, Start, Store, trace_bytes};
use crate::error::Result;
use crate::record::blocks::BlocksWriter;
use crate::record::{BlockRecord, BlockTrial, KeptState, RunDir, TrialRecord};
use crate::trial::{self, Plan, Position, TrialOutput};

/// The order of the agents (indices into `0..agents`) in each of `blocks`
/// blocks: block `b` runs them rotated by `(start + b) mod agents`, `start`
/// drawn from `seed`. With two agents the first one alternates from block to
/// block; with more, each agent is first once every `agents` blocks, and
/// second, third … as often.
pub fn orders(agents: usize, blocks: usize, seed: u64) -> Vec<Vec<usize>> {
    if agents == 0 {
        return vec![Vec::new(); blocks];
    }
    let start = fastrand::Rng::with_seed(seed ^ 0x1a7e_41ea).usize(..agents);
    (0..blocks).map(|b| (0..agents).map(|i| (start + b + i) % agents).collect()).collect()
}

/// Most blocks a worker claims at once.
const CHUNK: usize = 32;

/// The trials of an interleaved run: every block (a planned (case, trial)
/// pair) once per condition of the plan that applies to its case (an agent;
/// the baseline and each perturbation that applies), in the block's order.
/// Block `b`'s trials take positions `offsets[b]..offsets[b + 1]`, and trials
/// are announced in that order: each part's trials.jsonl is in plan order,
/// whatever `--jobs` is. Workers claim whole blocks, so a block's conditions
/// run back to back on one worker.
pub struct Interleaved {
    plan: Arc<Plan>,
    /// Each condition's part name (an agent's, or `baseline` and each
    /// perturbation's), as its run dir and its records name it.
    parts: Vec<String>,
    blocks: Vec<(usize, u32)>,
    /// Each block's conditions (indices into the plan's), in the order they run.
    orders: Vec<Vec<usize>>,
    /// Where each block's trials start; the last is the number of trials.
    offsets: Vec<usize>,
    chunks: Vec<Range<usize>>,
    next: AtomicUsize,
}

impl Interleaved {
    /// The plan's work (this partition's share), once per condition of the
    /// plan that applies to the block's case, the order in each block drawn
    /// from the plan's seed: the block's conditions rotated as [`orders`]
    /// rotates them (all of them apply in a run of agents).
    pub fn new(plan: &Arc<Plan>, partition: Option<Partition>, jobs: usize) -> Interleaved {
        let parts: Vec<String> = plan.conditions.iter().map(|c| plan.part_name(c)).collect();
        let blocks = work(plan, partition);
        let k = parts.len();
        let start = if k == 0 { 0 } else { fastrand::Rng::with_seed(plan.seed ^ 0x1a7e_41ea).usize(..k) };
        let orders: Vec<Vec<usize>> = blocks
            .iter()
            .enumerate()
            .map(|(b, &(case, _))| {
                let mine: Vec<usize> = (0..k).filter(|&c| plan.applies(case, c)).collect();
                let m = mine.len().max(1);
                (0..mine.len()).map(|i| mine[(start + b + i) % m]).collect()
            })
            .collect();
        let mut offsets = Vec::with_capacity(blocks.len() + 1);
        offsets.push(0);
        for o in &orders {
            offsets.push(offsets.last().copied().unwrap_or(0) + o.len());
        }
        let jobs = jobs.max(1);
        let size = (blocks.len() / (jobs * 8)).clamp(1, CHUNK);
        let chunks = (0..blocks.len()).step_by(size).map(|s| s..(s + size).min(blocks.len())).collect();
        Interleaved { plan: plan.clone(), parts, blocks, orders, offsets, chunks, next: AtomicUsize::new(0) }
    }

    /// The blocks, in plan order: (case index, trial number).
    pub fn blocks(&self) -> &[(usize, u32)] {
        &self.blocks
    }

    /// Each block's conditions (indices into the plan's), in the order they run.
    pub fn orders(&self) -> &[Vec<usize>] {
        &self.orders
    }

    /// The part names of the conditions.
    pub fn parts(&self) -> &[String] {
        &self.parts
    }

    /// The trials of part `c` and how many of them each case of the plan has.
    pub fn share(&self, c: usize) -> (usize, Vec<u32>) {
        let mut per_case = vec![0u32; self.plan.cases.len()];
        let mut n = 0;
        for (o, &(case, _)) in self.orders.iter().zip(&self.blocks) {
            if o.contains(&c) {
                per_case[case] += 1;
                n += 1;
            }
        }
        (n, per_case)
    }

    /// The trial at `pos` of the run: its block, and its place in the plan
    /// (the block's case and number, the condition the block's order puts there).
    fn unit_of(&self, pos: usize) -> (usize, Position) {
        let b = self.offsets.partition_point(|&o| o <= pos).saturating_sub(1);
        let (case, number) = self.blocks[b];
        (b, Position { case, number, condition: self.orders[b][pos - self.offsets[b]] })
    }

    fn placed(&self, pos: usize, mut out: TrialOutput) -> Placed {
        let (_, at) = self.unit_of(pos);
        let bytes = Some(trace_bytes(&mut out.trace));
        Placed { index: pos, case: at.case, out, bytes }
    }

    fn total(&self) -> usize {
        self.offsets.last().copied().unwrap_or(0)
    }
}

impl Source for Interleaved {
    /// The trial's position: block and place in it.
    type Unit = usize;
    type Made = Placed;

    fn start(&self) -> Start<'_> {
        let mut per_case = vec![0u32; self.plan.cases.len()];
        for (o, &(case, _)) in self.orders.iter().zip(&self.blocks) {
            per_case[case] += o.len() as u32;
        }
        Start { suite: &self.plan.suite, plan: Some(&self.plan), trials: Some(self.total()), per_case }
    }

    fn claim(&self) -> Vec<(usize, usize)> {
        let Some(r) = self.chunks.get(self.next.fetch_add(1, Ordering::Relaxed)) else { return Vec::new() };
        (self.offsets[r.start]..self.offsets[r.end]).map(|pos| (pos, pos)).collect()
    }

    fn label(&self, pos: &usize) -> (Option<usize>, Option<u32>) {
        let (_, at) = self.unit_of(*pos);
        (Some(at.case), Some(at.number))
    }

    fn run(&self, pos: usize, _: usize) -> Placed {
        let (_, at) = self.unit_of(pos);
        let plan = &self.plan;
        let out = super::planned::guarded(plan, at, || trial::run(plan, at, crate::agent::drive));
        self.placed(pos, out)
    }

    fn abandoned(&self, pos: usize, overran: Option<Duration>) -> Placed {
        let (_, at) = self.unit_of(pos);
        let (case, number, a) = (&self.plan.cases[at.case], at.number, at.condition);
        let why = match overran {
            Some(over) => format!(
                "the trial overran its time limit by more than {} s in code no limit could stop; its worker was abandoned",
                over.as_secs()
            ),
            None => "the worker running the trial stopped unexpectedly".to_string(),
        };
        if overran.is_some() {
            eprintln!(
                "warning: trial {}#{number} of {} overran its time limit; its worker was abandoned and replaced",
                case.spec.id, self.parts[a]
            );
        }
        self.placed(pos, trial::internal_error(&self.plan, at, why))
    }

    fn planned(&self) -> Option<usize> {
        Some(self.total())
    }
}

/// Each part's run dir (an agent's; the baseline's and each perturbation's):
/// the trace writer stores a trial in its record's part's (`Plan::part_of`).
pub struct PartDirs {
    pub plan: Arc<Plan>,
    pub dirs: Vec<(String, RunDir)>,
}

impl PartDirs {
    fn dir(&self, r: &TrialRecord) -> std::io::Result<&RunDir> {
        let name = self.plan.part_of(r);
        self.dirs.iter().find(|(n, _)| *n == name).map(|(_, d)| d).ok_or_else(|| {
            std::io::Error::other(format!("trial {}#{} names no part of the run ('{name}')", r.case, r.trial))
        })
    }
}

impl Store for PartDirs {
    fn write_state(&self, record: &TrialRecord, kept: &KeptState) -> std::io::Result<()> {
        self.dir(record)?.write_state(&record.case, record.trial, kept)
    }
    fn write_traces(&self, items: &[(&TrialRecord, &[u8])]) -> std::io::Result<()> {
        for (name, dir) in &self.dirs {
            let mine: Vec<(&TrialRecord, &[u8])> =
                items.iter().filter(|(r, _)| self.plan.part_of(r) == *name).copied().collect();
            if !mine.is_empty() {
                Store::write_traces(dir, &mine)?;
            }
        }
        match items.iter().find(|(r, _)| !self.dirs.iter().any(|(n, _)| self.plan.part_of(r) == *n)) {
            Some((r, _)) => self.dir(r).map(|_| ()),
            None => Ok(()),
        }
    }
}

/// What [`Router`] needs of a run of conditions: the plan, the parts'
/// names, and each part's share of the trials when it is known before the
/// run (an adaptive run's is not: its max per case).
pub trait Parts {
    fn plan(&self) -> &Arc<Plan>;
    fn parts(&self) -> &[String];
    /// Part `c`'s trials, when known, and per case of the plan how many (at most).
    fn part_share(&self, c: usize) -> (Option<usize>, Vec<u32>);
}

impl Parts for Interleaved {
    fn plan(&self) -> &Arc<Plan> {
        &self.plan
    }
    fn parts(&self) -> &[String] {
        &self.parts
    }
    fn part_share(&self, c: usize) -> (Option<usize>, Vec<u32>) {
        let (n, share) = self.share(c);
        (Some(n), share)
    }
}

/// The sinks of an interleaved run: each part's own (its trials.jsonl, its
/// OTLP export, …) see that part's trials only, and a run that starts with
/// its share of the trials; the common ones (the progress display, the blocks
/// file) see every trial.
pub struct Router<'s> {
    pub source: &'s dyn Parts,
    pub own: Vec<Vec<&'s mut dyn Sink>>,
    pub common: Vec<&'s mut dyn Sink>,
}

impl Sink for Router<'_> {
    fn event(&mut self, ev: &RunEvent<'_>) -> Result<()> {
        match ev {
            RunEvent::Started { suite, plan, .. } => {
                for (c, sinks) in self.own.iter_mut().enumerate() {
                    let (n, share) = self.source.part_share(c);
                    let mine = RunEvent::Started { suite, plan: *plan, trials: n, per_case: &share };
                    for s in sinks.iter_mut() {
                        s.event(&mine)?;
                    }
                }
            }
            RunEvent::TrialFinished { record, .. } => {
                let part = self.source.plan().part_of(record);
                let i = self.source.parts().iter().position(|p| *p == part);
                if let Some(sinks) = i.and_then(|i| self.own.get_mut(i)) {
                    for s in sinks.iter_mut() {
                        s.event(ev)?;
                    }
                }
            }
            _ => {
                for sinks in &mut self.own {
                    for s in sinks.iter_mut() {
                        s.event(ev)?;
                    }
                }
            }
        }
        for s in self.common.iter_mut() {
            s.event(ev)?;
        }
        Ok(())
    }
}

/// Writes blocks.jsonl: a block's line once all its conditions' trials are
/// announced (the rest, if the run stopped early, at its end).
pub struct BlocksFile {
    file: BlocksWriter,
    plan: Arc<Plan>,
    /// Per (case id, trial): the block's index, and its line as it fills.
    open: HashMap<(String, u32), (usize, BlockRecord)>,
    run_start: Option<jiff::Timestamp>,
    /// An adaptive run's blocks are not known before it: each is opened by
    /// its first trial, its order the order its trials ran in; the next block's index.
    lazy: Option<usize>,
}

impl BlocksFile {
    /// blocks.jsonl in `dir`, for these blocks of `plan` and their orders.
    pub fn create(dir: &std::path::Path, plan: &Arc<Plan>, source: &Interleaved) -> Result<BlocksFile> {
        let file = BlocksWriter::create(dir)?;
        let parts = source.parts();
        let open = source
            .blocks()
            .iter()
            .zip(source.orders())
            .enumerate()
            .map(|(i, (&(c, n), order))| {
                let id = plan.cases[c].spec.id.clone();
                let rec = BlockRecord {
                    block: i,
                    case: id.clone(),
                    trial: n,
                    seed: crate::sandbox::trial_seed(plan.seed, &id, n),
                    order: order.iter().map(|&a| parts[a].clone()).collect(),
                    trials: Vec::new(),
                };
                ((id, n), (i, rec))
            })
            .collect();
        Ok(BlocksFile { file, plan: plan.clone(), open, run_start: None, lazy: None })
    }

    /// blocks.jsonl in `dir` for an adaptive run of `plan`: blocks as they come.
    pub fn lazy(dir: &std::path::Path, plan: &Arc<Plan>) -> Result<BlocksFile> {
        let file = BlocksWriter::create(dir)?;
        Ok(BlocksFile { file, plan: plan.clone(), open: HashMap::new(), run_start: None, lazy: Some(0) })
    }

    /// Open a block for a trial (an adaptive run's) that has none yet.
    fn open_lazily(&mut self, record: &TrialRecord) {
        let Some(next) = self.lazy.as_mut() else { return };
        let key = (record.case.clone(), record.trial);
        if self.open.contains_key(&key) {
            return;
        }
        let rec = BlockRecord {
            block: *next,
            case: record.case.clone(),
            trial: record.trial,
            seed: crate::sandbox::trial_seed(self.plan.seed, &record.case, record.trial),
            order: Vec::new(),
            trials: Vec::new(),
        };
        self.open.insert(key, (*next, rec));
        *next += 1;
    }
}

impl Sink for BlocksFile {
    fn event(&mut self, ev: &RunEvent<'_>) -> Result<()> {
        match ev {
            RunEvent::Started { .. } => self.run_start = Some(jiff::Timestamp::now()),
            RunEvent::TrialFinished { case, record, trace, .. } => {
                self.open_lazily(record);
                let key = (record.case.clone(), record.trial);
                let expected = match self.lazy {
                    Some(_) => (0..self.plan.conditions.len()).filter(|&c| self.plan.applies(*case, c)).count(),
                    None => 0,
                };
                let Some((_, b)) = self.open.get_mut(&key) else { return Ok(()) };
                let part = self.plan.part_of(record);
                if expected > 0 {
                    b.order.push(part.clone());
                }
                b.trials.push(BlockTrial::of(&part, record, trace, self.run_start));
                if b.trials.len() == b.order.len().max(expected)
                    && let Some((_, b)) = self.open.remove(&key)
                {
                    self.file.write(&b)?;
                }
            }
            RunEvent::Finished => {
                // A stopped run: the blocks some of whose trials ran.
                let mut rest: Vec<(usize, BlockRecord)> =
                    self.open.drain().map(|(_, v)| v).filter(|(_, b)| !b.trials.is_empty()).collect();
                rest.sort_by_key(|(i, _)| *i);
                for (_, b) in rest {
                    self.file.write(&b)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_agents_alternate_from_block_to_block() {
        for seed in 0..20 {
            let o = orders(2, 9, seed);
            for b in 1..9 {
                assert_ne!(o[b][0], o[b - 1][0], "seed {seed}: block {b} starts like block {}", b - 1);
                assert_eq!(o[b].len(), 2);
            }
        }
        // The seed decides who starts, both ways happen, and the same seed gives the same orders.
        let firsts: std::collections::BTreeSet<usize> = (0..20).map(|s| orders(2, 1, s)[0][0]).collect();
        assert_eq!(firsts.len(), 2);
        assert_eq!(orders(2, 9, 7), orders(2, 9, 7));
    }

    #[test]
    fn three_agents_take_each_place_equally() {
        let o = orders(3, 30, 11);
        for place in 0..3 {
            for agent in 0..3 {
                let n = o.iter().filter(|b| b[place] == agent).count();
                assert_eq!(n, 10, "agent {agent} at place {place}");
            }
        }
        for b in &o {
            let mut s = b.clone();
            s.sort();
            assert_eq!(s, [0, 1, 2], "every agent once a block");
        }
    }
}
