//! manifest.json: what a run was (suite, cases and their revisions, agent,
//! judges, budgets, seeds, flags, machine), written before the first trial
//! and read back by reports, `compare` and `merge`.
//!
//! Keys other versions wrote and this one does not know are kept (`extra`),
//! so reading and rewriting a manifest (as `merge` does) loses nothing.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::files::RunDirFile;
use crate::spec::gate::On;
use crate::spec::{Budget, Reference};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub evalua_version: String,
    /// The run-dir format it was written in ([`files::FORMAT`]); 0: before formats were numbered.
    #[serde(default)]
    pub format: u32,
    pub run_id: String,
    /// What made the run's trials: a run of the agent, or a re-grade of another run's.
    #[serde(default)]
    pub kind: RunKind,
    #[serde(default)]
    pub started_at: String,
    #[serde(default)]
    pub command: Vec<String>,
    pub suite: SuiteEntry,
    #[serde(default)]
    pub sources: Vec<FileHash>,
    /// The dataset files the cases were read from (`suite:dataset`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub datasets: Vec<DatasetEntry>,
    /// sha256 over every source file and the embedded stdlib: what graded the run.
    #[serde(default)]
    pub grader_sha256: String,
    #[serde(default)]
    pub tool_contract_sha256: String,
    /// The agent the run used (its name, as declared, with the hashes of what it runs); null for
    /// a run no agent acted in.
    #[serde(default)]
    pub agent: Option<AgentEntry>,
    /// Each judge check's model(s), prompt hash, reachability and calibration.
    #[serde(default)]
    pub judges: Vec<JudgeEntry>,
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
    /// `--partition auto`: the engine's variables the share was read from
    /// (e.g. `SLURM_ARRAY_TASK_ID=2 of 1..3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_from: Option<String>,
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
    /// The suite's monitors (`monitors = { name = check }`), by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub monitors: Vec<String>,
    /// A graded run: every trace input with its sha256 and what was read from it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trace_inputs: Vec<TraceInput>,
    /// A graded run: what could not be read (a malformed line, an unreadable trace).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Where the run's trials were sent as OpenTelemetry traces (`--otlp`, `evalua export`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exports: Vec<ExportEntry>,
    /// Whether each trial's changes (database changeset, work-dir files) were
    /// kept for re-grading (SPEC §10); null in run dirs written before evalua kept them.
    #[serde(default)]
    pub trial_state: Option<StateKeeping>,
    /// A re-graded run: the run whose trials it graded again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regraded_from: Option<RegradedFrom>,
    /// The (case, trial) pairs this run plans (this partition's share): a
    /// run with fewer records is incomplete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_trials: Option<usize>,
    /// The names of the suite's judge checks (to tell when every one was skipped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judge_checks: Vec<String>,
    /// What `evalua harden` found before the run gated (`run --harden`, `gate = { hardened = true }`, SPEC §19).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harden: Option<super::harden::Hardened>,
    /// One agent's part of an interleaved run (`evalua run SUITE --agent A --agent B`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleaved: Option<InterleavedEntry>,
    /// Each `--resume` / `--retry-errors` of this run dir, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumes: Vec<Resume>,
    /// Exclusions, contamination, interventions, abstention (SPEC §22).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish: Option<PublishEntry>,
    /// Each distinct simulated user of the run's cases, pinned (SPEC §18):
    /// a different simulator is a measurement change, as a different grader is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<UserPin>,
    /// An adaptive run (SPEC §20): its design; each case's max is its `trials`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptiveDesign>,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Json>,
}

/// An adaptive run's design as the manifest records it: what a run dir read
/// back needs to replay its rounds from trials.jsonl (`stats::adaptive`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveDesign {
    /// Each case's least trials, in the manifest's case order.
    pub min: Vec<u32>,
    /// What an undecided gate does: "fail" or "pass" (`undecided = "pass"`).
    pub undecided: String,
}

impl RunDirFile for Manifest {}

/// An agent as the manifest records it: the suite agent's name, the
/// declaration as the DSL normalised it, and the hashes of what it runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentEntry {
    /// The suite agent's name (SPEC §14); none for a case's own agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A scripted agent's file, hashed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<FileHash>,
    /// A command agent's program, hashed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<Program>,
    /// The agent as declared (`kind` and its own keys; `spec::AgentSpec` as serde writes it).
    #[serde(flatten)]
    pub declared: serde_json::Map<String, Json>,
}

impl AgentEntry {
    /// An entry for a declaration (`spec::AgentSpec` serialized); its keys
    /// that the entry names itself are left to the entry.
    pub fn declared(mut declared: serde_json::Map<String, Json>) -> AgentEntry {
        for k in ["name", "file", "program"] {
            declared.remove(k);
        }
        AgentEntry { declared, ..Default::default() }
    }
}

/// What a command agent runs, hashed: the executable its `cmd` starts
/// (resolved on PATH, symlinks followed) and every other word of `cmd` that
/// names an existing file (absolute, or relative to the suite's folder). A
/// changed agent program changes the manifest, so `compare` and `--resume`
/// can tell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Program {
    /// What runs: the real file (symlinks followed, a version manager's shim
    /// followed to the interpreter it starts), hashed.
    #[serde(default)]
    pub executable: Option<FileHash>,
    /// The shim the command's first word found on PATH, when one was followed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    #[serde(default)]
    pub files: Vec<FileHash>,
}

/// A judge check as the manifest records it (its fields in the order they
/// were written before they were typed: alphabetical).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeEntry {
    /// The judge cache the run used (a folder, or `off`).
    #[serde(default)]
    pub cache: String,
    /// `current`, `prompt_changed` or `none` (`judge::records::Calibration`).
    #[serde(default)]
    pub calibration: String,
    /// κ of the current calibration record.
    #[serde(default)]
    pub calibration_kappa: Option<f64>,
    /// The cases whose checks use it.
    #[serde(default)]
    pub cases: Vec<String>,
    #[serde(default)]
    pub criteria: Option<Vec<String>>,
    /// The model id (`provider/model`, a panel's or a cascade's composite id).
    #[serde(default)]
    pub judge: String,
    #[serde(default)]
    pub models: Vec<JudgeModelEntry>,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub prompt_sha256: String,
    /// Every model of it resolves to an endpoint (a key and a model are set).
    #[serde(default)]
    pub reachable: bool,
    /// A cascade's two stages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<JudgeStages>,
    /// `rubric`, `pairwise` or `cascade`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Keys other versions wrote.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Json>,
}

/// One model of a judge.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeModelEntry {
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// `openai` or `anthropic` (kept as written: a manifest is read whatever version wrote it).
    #[serde(default)]
    pub provider: String,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub temperature: Option<f64>,
}

/// A cascade judge's stages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeStages {
    #[serde(default)]
    pub escalate: String,
    pub first: JudgeStage,
    pub then: JudgeStage,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeStage {
    #[serde(default)]
    pub judge: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub prompt_sha256: String,
}

/// The interleaved run a run dir is one agent's part of: its id, and its
/// agents in the order they were given (the first is the base of its comparisons).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InterleavedEntry {
    pub run_id: String,
    pub agents: Vec<String>,
    /// A run of perturbations: the perturbations run beside the baseline.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub perturbations: Vec<String>,
    /// A run of perturbations: the one this part ran under (none: the baseline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturbation: Option<String>,
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

/// A trace input of a graded run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TraceInput {
    pub path: String,
    /// The file's sha256 (for a run dir: of its trials.jsonl).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// `otlp_json`, `span_lines`, `run_dir`, `taubench_results` or `atif`
    /// (`trajectories`: a file that looked like one of the last two and was not).
    pub format: String,
    pub bytes: u64,
    pub spans: u64,
    pub items: u64,
}

/// One export of a run's trials as OpenTelemetry traces.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ExportEntry {
    /// When the export started (RFC 3339).
    pub at: String,
    /// The OTLP/HTTP traces endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The OTLP JSON lines file (`--otlp-file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The project the traces land in (`openinference.project.name`).
    pub project: String,
    /// The semantic conventions followed (their schema URL).
    pub semconv: String,
    /// Whether inputs, answers, arguments and results were sent (`--otlp-no-content` clears it).
    pub content: bool,
    /// How a trial's trace id is made, so a viewer can link a trial to its trace.
    pub trace_id: String,
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
    /// The sandbox's database when it is not the embedded SQLite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db: Option<DbEntry>,
}

/// A sandbox database other than the embedded SQLite (`sandbox.db`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DbEntry {
    /// `postgres`.
    pub kind: String,
    /// The server's version (`SHOW server_version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// The prefix of every database the run created on the server
    /// (`evalua_<token>_`), all dropped when it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
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

/// A dataset file as the run read it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DatasetEntry {
    pub path: String,
    /// `jsonl`, `json` or `csv`.
    pub format: String,
    pub sha256: String,
    #[serde(default)]
    pub bytes: u64,
    /// Rows in the file, good or bad.
    pub rows: u64,
    /// Cases declared from its rows.
    pub cases: u64,
    /// Bad rows left out (`on_error = "skip"`).
    #[serde(default)]
    pub skipped: u64,
    /// The first skipped rows, each `file:line: why`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_rows: Vec<String>,
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
    /// The case's own agent (when it overrides the suite's), with the hashes of what it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentEntry>,
    /// The case's reference solution, for the efficiency figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<Reference>,
    /// The case's contract requires abstaining (SPEC §22): for coverage.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub should_abstain: bool,
    /// A drafted case no person has approved yet (SPEC §23): its trials are
    /// reported apart (`pending_review`) and counted in no figure or gate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pending_review: bool,
}

/// A simulated user as the run played it (SPEC §18).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UserPin {
    /// The cases it plays the user of.
    pub cases: Vec<String>,
    pub provider: String,
    pub model: Option<String>,
    /// The host its requests go to (no path, no credentials).
    pub endpoint_host: Option<String>,
    pub temperature: Option<f64>,
    /// Its seed when the suite sets one (else each trial's own).
    pub seed: Option<u64>,
    /// sha256 of its whole system prompt (profile and goal included).
    pub system_sha256: String,
    /// Its profile and goal as the suite gave them: what its adherence judge
    /// reads, and what a reviewer of its conversations reads (`view --review users`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub profile: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub goal: String,
    /// The name of its adherence judge (`adherence = judge.rubric { … }`), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adherence: Option<String>,
}

impl UserPin {
    /// The pin without the cases it covers (nor the judge of its conduct,
    /// which is not part of it): what makes two simulators the same.
    pub fn simulator(&self) -> UserPin {
        UserPin { cases: Vec::new(), adherence: None, ..self.clone() }
    }
}

/// What the suite declared before the run about what its figures count
/// (SPEC §22); absent when it declared none of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PublishEntry {
    /// `exclude`: outcomes or endings left out of the capability figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// `contamination.sources`: the published solutions' patterns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contamination: Vec<String>,
    /// Tools declared `intervention = true`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interventions: Vec<String>,
    /// `abstention = true`: model agents were offered the built-in `abstain` tool.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub abstention: bool,
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

/// What made a run's trials.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// `evalua run`: the agent acted in each trial.
    #[default]
    Run,
    /// `evalua regrade`: another run's recorded trials, graded again; no agent ran.
    Regraded,
    /// `evalua grade`: recorded traces (from production or another harness) graded; no agent ran.
    Graded,
}

/// Whether a run kept each trial's changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateKeeping {
    Kept,
    /// `--no-state`: the run cannot be re-graded.
    Skipped,
    /// The sandbox's database cannot keep a trial's changes (PostgreSQL):
    /// the run cannot be re-graded.
    Unsupported,
}

/// The run a re-graded run graded again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegradedFrom {
    /// The run dir, as given.
    pub dir: String,
    pub run_id: String,
    /// The grader hash of that run (this run's own is `grader_sha256`).
    pub grader_sha256: String,
    /// The run whose agent produced the trajectories: that run's, or, when it
    /// was itself a re-grade, the one it came from.
    pub trajectories_run_id: String,
    /// Cases whose fixture, schema or work tree changed since, re-graded under `--allow-fixture-change`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixture_changes: Vec<String>,
}

impl Manifest {
    /// The run whose agent produced these trials' trajectories.
    pub fn trajectories_run_id(&self) -> &str {
        match &self.regraded_from {
            Some(r) => &r.trajectories_run_id,
            None => &self.run_id,
        }
    }
}

/// One `--resume` (or `--retry-errors`) of a run dir.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Resume {
    pub at: String,
    pub command: Vec<String>,
    /// `"resume"` or `"retry_errors"`.
    pub mode: String,
    /// Trials kept from trials.jsonl.
    pub kept: usize,
    /// Trials run (again) by this resume.
    pub run: usize,
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
