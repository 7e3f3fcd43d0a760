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
use super::scheduler::{Placed, Source, Start, Store, per_case, trace_bytes, work};
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
/// pair) once per condition of the plan (an agent), in the block's order.
/// Position `b * conditions + i` is block `b`'s `i`-th trial, and trials are
/// announced in that order: each agent's trials.jsonl is in plan order,
/// whatever `--jobs` is. Workers claim whole blocks, so a block's conditions
/// run back to back on one worker.
pub struct Interleaved {
    plan: Arc<Plan>,
    /// The conditions' names (the agents'), as their run dirs and records name them.
    agents: Vec<String>,
    blocks: Vec<(usize, u32)>,
    orders: Vec<Vec<usize>>,
    chunks: Vec<Range<usize>>,
    next: AtomicUsize,
}

impl Interleaved {
    /// The plan's work (this partition's share), once per condition of the
    /// plan, the order in each block drawn from the plan's seed.
    pub fn new(plan: &Arc<Plan>, partition: Option<Partition>, jobs: usize) -> Interleaved {
        let agents: Vec<String> = plan.conditions.iter().map(|c| c.agent.clone().unwrap_or_default()).collect();
        let blocks = work(plan, partition);
        let orders = orders(agents.len(), blocks.len(), plan.seed);
        let jobs = jobs.max(1);
        let size = (blocks.len() / (jobs * 8)).clamp(1, CHUNK);
        let chunks = (0..blocks.len()).step_by(size).map(|s| s..(s + size).min(blocks.len())).collect();
        Interleaved { plan: plan.clone(), agents, blocks, orders, chunks, next: AtomicUsize::new(0) }
    }

    /// The blocks, in plan order: (case index, trial number).
    pub fn blocks(&self) -> &[(usize, u32)] {
        &self.blocks
    }

    /// Each block's order of the agents (indices into the agents).
    pub fn orders(&self) -> &[Vec<usize>] {
        &self.orders
    }

    /// The trial at `pos` of the run: its block, and its place in the plan
    /// (the block's case and number, the condition the block's order puts there).
    fn unit_of(&self, pos: usize) -> (usize, Position) {
        let k = self.agents.len().max(1);
        let b = pos / k;
        let (case, number) = self.blocks[b];
        (b, Position { case, number, condition: self.orders[b][pos % k] })
    }

    fn placed(&self, pos: usize, mut out: TrialOutput) -> Placed {
        let (_, at) = self.unit_of(pos);
        let bytes = Some(trace_bytes(&mut out.trace));
        Placed { index: pos, case: at.case, out, bytes }
    }
}

impl Source for Interleaved {
    /// The trial's position: block and place in it.
    type Unit = usize;
    type Made = Placed;

    fn start(&self) -> Start<'_> {
        let k = self.agents.len() as u32;
        Start {
            suite: &self.plan.suite,
            plan: Some(&self.plan),
            trials: Some(self.blocks.len() * self.agents.len()),
            per_case: per_case(&self.plan, &self.blocks).into_iter().map(|n| n * k).collect(),
        }
    }

    fn claim(&self) -> Vec<(usize, usize)> {
        let Some(r) = self.chunks.get(self.next.fetch_add(1, Ordering::Relaxed)) else { return Vec::new() };
        let k = self.agents.len();
        (r.start * k..r.end * k).map(|pos| (pos, pos)).collect()
    }

    fn label(&self, pos: &usize) -> (Option<usize>, Option<u32>) {
        let (_, at) = self.unit_of(*pos);
        (Some(at.case), Some(at.number))
    }

    fn run(&self, pos: usize, _: usize) -> Placed {
        let (_, at) = self.unit_of(pos);
        let plan = &self.plan;
        // A panic in evalua's own code becomes the trial's infrastructure error.
        let out = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            trial::run(plan, at, crate::agent::drive)
        })) {
            Ok(o) => o,
            Err(p) => {
                let msg =
                    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                trial::internal_error(plan, at, msg.unwrap_or_else(|| "panic".into()))
            }
        };
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
                "warning: trial {}#{number} of agent {} overran its time limit; its worker was abandoned and replaced",
                case.spec.id, self.agents[a]
            );
        }
        self.placed(pos, trial::internal_error(&self.plan, at, why))
    }

    fn planned(&self) -> Option<usize> {
        Some(self.blocks.len() * self.agents.len())
    }
}

/// Each agent's run dir: the trace writer stores a trial in its record's agent's.
pub struct AgentDirs(pub Vec<(String, RunDir)>);

impl AgentDirs {
    fn dir(&self, r: &TrialRecord) -> std::io::Result<&RunDir> {
        let name = r.agent.as_deref().unwrap_or_default();
        self.0.iter().find(|(n, _)| n == name).map(|(_, d)| d).ok_or_else(|| {
            std::io::Error::other(format!("trial {}#{} names no agent of the run ('{name}')", r.case, r.trial))
        })
    }
}

impl Store for AgentDirs {
    fn write_state(&self, record: &TrialRecord, kept: &KeptState) -> std::io::Result<()> {
        self.dir(record)?.write_state(&record.case, record.trial, kept)
    }
    fn write_traces(&self, items: &[(&TrialRecord, &[u8])]) -> std::io::Result<()> {
        for (name, dir) in &self.0 {
            let mine: Vec<(&TrialRecord, &[u8])> =
                items.iter().filter(|(r, _)| r.agent.as_deref() == Some(name.as_str())).copied().collect();
            if !mine.is_empty() {
                Store::write_traces(dir, &mine)?;
            }
        }
        match items.iter().find(|(r, _)| !self.0.iter().any(|(n, _)| r.agent.as_deref() == Some(n.as_str()))) {
            Some((r, _)) => self.dir(r).map(|_| ()),
            None => Ok(()),
        }
    }
}

/// The sinks of an interleaved run: each agent's own (its trials.jsonl, its
/// OTLP export, …) see that agent's trials only, and a run that starts with
/// its share of the trials; the common ones (the progress display, the blocks
/// file) see every trial.
pub struct Router<'s> {
    pub agents: Vec<String>,
    pub own: Vec<Vec<&'s mut dyn Sink>>,
    pub common: Vec<&'s mut dyn Sink>,
}

impl Sink for Router<'_> {
    fn event(&mut self, ev: &RunEvent<'_>) -> Result<()> {
        match ev {
            RunEvent::Started { suite, plan, trials, per_case } => {
                let k = self.agents.len().max(1);
                let share: Vec<u32> = per_case.iter().map(|n| n / k as u32).collect();
                let mine = RunEvent::Started { suite, plan: *plan, trials: trials.map(|t| t / k), per_case: &share };
                for sinks in &mut self.own {
                    for s in sinks.iter_mut() {
                        s.event(&mine)?;
                    }
                }
            }
            RunEvent::TrialFinished { record, .. } => {
                let i = self.agents.iter().position(|a| record.agent.as_deref() == Some(a.as_str()));
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

/// Writes blocks.jsonl: a block's line once all its agents' trials are
/// announced (the rest, if the run stopped early, at its end).
pub struct BlocksFile {
    file: BlocksWriter,
    agents: Vec<String>,
    /// Per (case id, trial): the block's index, and its line as it fills.
    open: HashMap<(String, u32), (usize, BlockRecord)>,
    run_start: Option<jiff::Timestamp>,
}

impl BlocksFile {
    /// blocks.jsonl in `dir`, for these blocks of `plan` and their orders.
    pub fn create(dir: &std::path::Path, plan: &Plan, source: &Interleaved) -> Result<BlocksFile> {
        let file = BlocksWriter::create(dir)?;
        let agents = source.agents.clone();
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
                    order: order.iter().map(|&a| agents[a].clone()).collect(),
                    trials: Vec::new(),
                };
                ((id, n), (i, rec))
            })
            .collect();
        Ok(BlocksFile { file, agents, open, run_start: None })
    }
}

impl Sink for BlocksFile {
    fn event(&mut self, ev: &RunEvent<'_>) -> Result<()> {
        match ev {
            RunEvent::Started { .. } => self.run_start = Some(jiff::Timestamp::now()),
            RunEvent::TrialFinished { record, trace, .. } => {
                let key = (record.case.clone(), record.trial);
                let Some((_, b)) = self.open.get_mut(&key) else { return Ok(()) };
                let agent = record.agent.clone().unwrap_or_default();
                b.trials.push(BlockTrial::of(&agent, record, trace, self.run_start));
                if b.trials.len() == self.agents.len()
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
