//! interleaved.json: what an interleaved run (`evalua run SUITE --agent A
//! --agent B`) is, written before its first trial and read back by its
//! reports. Each agent's part is an ordinary run dir under
//! [`files::AGENTS_DIR`] ([`files::agent_dir`]); the blocks are blocks.jsonl
//! ([`super::blocks`]).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::files::{self, RunDirFile};
use super::manifest::GateEntry;
use super::rundir;
use crate::error::{Error, Result};

/// interleaved.json.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InterleavedManifest {
    pub kind: String,
    /// The run-dir format it was written in ([`files::FORMAT`]); 0: before formats were numbered.
    #[serde(default)]
    pub format: u32,
    pub run_id: String,
    pub suite: String,
    pub started_at: String,
    pub command: Vec<String>,
    /// The agents in the order given (the first is the base of the comparisons).
    pub agents: Vec<String>,
    /// A run of perturbations (`--perturb`, SPEC §17): the perturbations run
    /// beside the baseline (its parts are `baseline` and these).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub perturbations: Vec<String>,
    pub seed: u64,
    pub jobs: usize,
    /// Blocks ((case, trial) pairs) planned.
    pub blocks: usize,
    /// How the order of the agents is chosen in each block.
    pub order: String,
    /// The suite's gates, as declared.
    pub gates: Vec<GateEntry>,
    /// An adaptive run (SPEC §20): its design; the blocks' rounds are replayed from the parts' records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<super::manifest::AdaptiveDesign>,
}

impl RunDirFile for InterleavedManifest {}

impl InterleavedManifest {
    /// The run's parts, the first the base of the comparisons: its agents,
    /// or in a run of perturbations `baseline` and each perturbation.
    pub fn parts(&self) -> Vec<String> {
        if self.perturbations.is_empty() {
            return self.agents.clone();
        }
        std::iter::once(crate::spec::BASELINE.to_string()).chain(self.perturbations.iter().cloned()).collect()
    }

    /// Where part `name`'s run dir is inside the run's dir `top`.
    pub fn part_dir(&self, top: &Path, name: &str) -> std::path::PathBuf {
        if self.perturbations.is_empty() { files::agent_dir(top, name) } else { files::condition_dir(top, name) }
    }

    /// Write it into the interleaved run's top dir.
    pub fn write(&self, top: &Path) -> Result<()> {
        rundir::write_json(&top.join(files::INTERLEAVED), self)
    }

    /// Read it from an interleaved run's top dir (untrusted: errors say `file:line`).
    pub fn read(top: &Path) -> Result<InterleavedManifest> {
        let path = top.join(files::INTERLEAVED);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::Input(format!("{}: cannot read: {e}", path.display())))?;
        let m: InterleavedManifest =
            serde_json::from_str(&text).map_err(|e| Error::Input(format!("{}:{}: {e}", path.display(), e.line())))?;
        files::readable_format(&path, m.format)?;
        Ok(m)
    }
}
