//! blocks.jsonl of an interleaved run (`evalua run SUITE --agent A --agent B`):
//! one line per block (a case and a trial number), written as its last trial
//! is announced: the order its agents ran in, and each agent's trial in
//! brief, with when it started and what the provider did.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::call::ModelCall;
use super::files;
use super::outcome::{Ended, Outcome};
use super::trace::Trace;
use super::trial::TrialRecord;
use crate::error::{Error, Result};

/// One block: a (case, trial) pair every agent of the run played once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockRecord {
    /// 0-based, in plan order.
    pub block: usize,
    pub case: String,
    pub trial: u32,
    /// The seed every agent's trial of the block ran with.
    pub seed: u64,
    /// The agents, in the order they ran.
    pub order: Vec<String>,
    /// Each agent's trial, in the order they ran.
    pub trials: Vec<BlockTrial>,
}

/// One agent's trial of a block, in brief.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockTrial {
    pub agent: String,
    /// When it started, in ms from the run's start.
    pub started_ms: f64,
    pub wall_ms: f64,
    pub outcome: Outcome,
    pub ended: Ended,
    /// Model calls made for the agent (its own, through the model proxy, or a
    /// simulated user's; never a judge's), and how many failed or were retried.
    pub provider_calls: u32,
    pub provider_errors: u32,
    /// The latency of each of those calls, in ms.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_latency_ms: Vec<f64>,
}

impl BlockTrial {
    /// The brief of a finished trial; `run_start` is the run's start (UTC).
    pub fn of(agent: &str, record: &TrialRecord, trace: &Trace, run_start: Option<jiff::Timestamp>) -> BlockTrial {
        let started_ms = match (trace.started_at.as_deref().and_then(|s| s.parse::<jiff::Timestamp>().ok()), run_start)
        {
            (Some(t), Some(r)) => (t.as_millisecond() - r.as_millisecond()).max(0) as f64,
            _ => 0.0,
        };
        let provider: Vec<&ModelCall> = trace.model_calls.iter().filter(|m| m.by != "judge").collect();
        BlockTrial {
            agent: agent.to_string(),
            started_ms,
            wall_ms: record.wall_ms,
            outcome: record.outcome,
            ended: record.ended,
            provider_calls: provider.len() as u32,
            provider_errors: provider.iter().map(|m| m.attempts.saturating_sub(1) + m.error.is_some() as u32).sum(),
            provider_latency_ms: provider.iter().map(|m| (m.latency_ms * 10.0).round() / 10.0).collect(),
        }
    }
}

/// Read an interleaved run's blocks.jsonl (absent: no block finished), in block order.
pub fn read(top: &Path) -> Result<Vec<BlockRecord>> {
    let path = top.join(files::BLOCKS);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::Input(format!("{}: cannot read: {e}", path.display()))),
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        out.push(serde_json::from_str(line).map_err(|e| Error::Input(format!("{}:{}: {e}", path.display(), i + 1)))?);
    }
    out.sort_by_key(|b: &BlockRecord| b.block);
    Ok(out)
}

/// blocks.jsonl as it is written: one line per block, flushed at once.
pub struct BlocksWriter {
    file: std::io::BufWriter<std::fs::File>,
    path: PathBuf,
}

impl BlocksWriter {
    /// blocks.jsonl in the interleaved run's top dir, empty.
    pub fn create(top: &Path) -> Result<BlocksWriter> {
        let path = top.join(files::BLOCKS);
        let f = std::fs::File::create(&path)
            .map_err(|e| Error::Environment(format!("{}: cannot create: {e}", path.display())))?;
        Ok(BlocksWriter { file: std::io::BufWriter::new(f), path })
    }

    pub fn write(&mut self, b: &BlockRecord) -> Result<()> {
        let line = serde_json::to_string(b).map_err(|e| Error::Environment(e.to_string()))?;
        writeln!(self.file, "{line}")
            .and_then(|_| self.file.flush())
            .map_err(|e| Error::Environment(format!("{}: cannot write: {e}", self.path.display())))
    }
}
