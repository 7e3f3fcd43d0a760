//! manifest.json: what a run was (suite, cases and their revisions, agent,
//! judges, budgets, seeds, flags, machine), written before the first trial
//! and read back by reports, `compare` and `merge`.
//!
//! Keys other versions wrote and this one does not know are kept (`extra`),
//! so reading and rewriting a manifest (as `merge` does) loses nothing.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::spec::Budget;
use crate::spec::gate::On;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub evalua_version: String,
    pub run_id: String,
    #[serde(default)]
    pub started_at: String,
    #[serde(default)]
    pub command: Vec<String>,
    pub suite: SuiteEntry,
    #[serde(default)]
    pub sources: Vec<FileHash>,
    /// sha256 over every source file and the embedded stdlib: what graded the run.
    #[serde(default)]
    pub grader_sha256: String,
    #[serde(default)]
    pub tool_contract_sha256: String,
    /// The suite's agent as declared (with its file's hash for a scripted agent).
    #[serde(default)]
    pub agent: Json,
    /// Each judge check's model(s), prompt hash, reachability and calibration.
    #[serde(default)]
    pub judges: Json,
    pub cases: Vec<CaseEntry>,
    #[serde(default)]
    pub budget: Budget,
    #[serde(default)]
    pub default_deadline_s: f64,
    /// `--trials`, when given.
    #[serde(default)]
    pub trials: Option<u32>,
    pub seed: u64,
    /// `--partition`, as given (`hash:I/N`).
    #[serde(default)]
    pub partition: Option<String>,
    #[serde(default)]
    pub jobs: usize,
    #[serde(default)]
    pub filters: Filters,
    #[serde(default)]
    pub gates: Vec<GateEntry>,
    #[serde(default)]
    pub invalid_cases: Vec<Invalid>,
    #[serde(default)]
    pub infra_error_policy: String,
    #[serde(default)]
    pub machine: Machine,
    /// How the run's processes were isolated (`--isolation`).
    #[serde(default)]
    pub isolation: IsolationEntry,
    /// A merged run: the parts it was made of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<Vec<MergedPart>>,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Json>,
}

/// The process sandbox a run used.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct IsolationEntry {
    /// `sandbox` (bubblewrap) or `none` (`--isolation none`: processes ran unconfined).
    pub mode: String,
    /// The sandbox tool and its version (`bubblewrap 0.8.0`), when it was probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// `sandbox.expose`: what the suite's processes could read besides the system folders.
    #[serde(default)]
    pub expose: Vec<String>,
    /// `sandbox.network`: whether they shared the host's network.
    #[serde(default)]
    pub network: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SuiteEntry {
    pub name: String,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub sha256: String,
    /// `sandbox.schema`, hashed.
    #[serde(default)]
    pub schema: Option<FileHash>,
}

/// A file and its sha256 (or why it could not be read).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileHash {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseEntry {
    pub id: String,
    pub trials: u32,
    /// sha256 over the case as declared, its fixture and clock: two runs are
    /// comparable case by case only when revisions agree.
    #[serde(default)]
    pub revision: Option<String>,
    #[serde(default)]
    pub fixture_sha256: Option<String>,
    #[serde(default)]
    pub clock: String,
    #[serde(default = "one")]
    pub weight: f64,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub difficulty: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<WorkdirEntry>,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkdirEntry {
    pub source: Json,
    pub tree_sha256: String,
    pub files: usize,
}

/// `--case`, `--tag`, `--split`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Filters {
    pub case: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    pub split: Option<String>,
}

/// A gate as declared (the verdict is recomputed from the records).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateEntry {
    pub name: String,
    pub threshold: f64,
    pub on: On,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Machine {
    pub os: String,
    pub arch: String,
    pub cpus: usize,
    pub hostname: String,
}

impl Machine {
    pub fn this() -> Self {
        Machine {
            os: std::env::consts::OS.into(),
            arch: std::env::consts::ARCH.into(),
            cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            hostname: std::fs::read_to_string("/etc/hostname").map(|s| s.trim().to_string()).unwrap_or_default(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MergedPart {
    pub dir: String,
    pub run_id: String,
    pub partition: Option<String>,
}

/// A case left out because its tests do not hold on its initial tree: it
/// cannot tell a fix from no fix (listed in the manifest).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Invalid {
    pub case: String,
    pub location: String,
    pub reason: String,
}
