//! The suite as loading builds it ([`Suite`]) from its table ([`SuiteTable`]):
//! its cases, tools, agents, gates, and what it declares for publication.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;

use super::agent::{AgentSpec, NamedAgent};
use super::budget::Budget;
use super::case::{CaseSpec, DatasetSpec};
use super::check::{CheckInfo, MonitorSpec};
use super::fault::{self, Faults};
use super::gate::{self, Gate};
use super::model::JudgeSpec;
use super::perturbation::Perturbations;
use super::sandbox::{DbSpec, KeepCaps, SandboxSpec, WorkdirSpec};
use super::sources::Sources;
use super::tool::ToolSpec;
use super::{de, keys};

/// A tool name a check mentions, as first declared.
#[derive(Debug, Clone)]
pub struct Mention {
    pub name: String,
    /// `file:line` of the check (or of its case).
    pub at: String,
    /// `check 'NAME' (case 'ID')`.
    pub what: String,
}

/// An SQL query a check runs (`check.sql`, `prohibited`), with the fixture of
/// the case that declared it first.
#[derive(Debug, Clone)]
pub struct QueryUse {
    pub fixture: Option<PathBuf>,
    pub sql: String,
    /// `file:line` of the check (or of its case).
    pub at: String,
    pub check: String,
    pub case: String,
}

/// A judge check and the cases that use it.
#[derive(Debug, Clone)]
pub struct SuiteJudge {
    pub spec: JudgeSpec,
    pub cases: Vec<String>,
    /// The names of the checks that use it.
    pub checks: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Suite {
    pub path: PathBuf,
    pub dir: PathBuf,
    pub name: String,
    pub version: Option<String>,
    pub description: Option<String>,
    pub trials: u32,
    /// `trials = { min, max }`: the least trials a case gets in an adaptive run (SPEC §20; `trials` is the max).
    pub trials_min: Option<u32>,
    /// `undecided = "pass"`: an adaptive run's undecided gate does not fail the run.
    pub undecided_passes: bool,
    pub budget: Budget,
    /// `sandbox.db`.
    pub db: DbSpec,
    pub schema: Option<PathBuf>,
    pub clock: Option<String>,
    /// `sandbox.workdir`: the trials' initial work tree.
    pub workdir: Option<WorkdirSpec>,
    /// `sandbox.expose`: absolute paths every process of the suite may read in its sandbox.
    pub expose: Vec<PathBuf>,
    /// `sandbox.network` (default true): processes share the host's network.
    pub network: bool,
    pub gates: Vec<Gate>,
    /// `grade = { gate = … }`: the gates `evalua grade` decides instead of
    /// `gates` (a graded trace is one trial: figures over several trials a
    /// case, pass^2 and up, are undefined there).
    pub grade_gates: Option<Vec<Gate>>,
    /// The default agent: `agent = evalua.agent.*`, or the one of `agents`
    /// that `agent = "name"` / `default_agent` names.
    pub agent: Option<AgentSpec>,
    /// Every agent the suite declares, by name, sorted (SPEC §14): the
    /// entries of `agents = { ... }`, or the one `agent` named "default".
    pub agents: Vec<NamedAgent>,
    /// The default agent's name (an entry of `agents`).
    pub default_agent: Option<String>,
    /// `suite:adversary { name, agent }`: the suite's own adversaries for `evalua harden`, by name.
    pub adversaries: Vec<NamedAgent>,
    /// `gate = { hardened = true }`: a run gates only once `evalua harden` found no hole (SPEC §19).
    pub hardened: bool,
    /// `grade = { reexecute = true }`: `evalua grade` re-executes recorded tool calls.
    pub grade_reexecute: bool,
    pub tools: Vec<ToolSpec>,
    pub cases: Vec<CaseSpec>,
    /// The dataset files the cases were read from (`suite:dataset`), in declaration order.
    pub datasets: Vec<DatasetSpec>,
    /// Every distinct judge check, with the cases that use it.
    pub judges: Vec<SuiteJudge>,
    /// Each distinct tool name the cases' checks mention, where first: each
    /// must name a tool of the suite.
    pub check_tools: Vec<Mention>,
    /// Each distinct SQL query the cases' checks run, per fixture: prepared
    /// against the fixture's database before any trial.
    pub queries: Vec<QueryUse>,
    /// Every source file the suite was made of (its hash goes to the manifest).
    pub sources: Arc<Sources>,
    /// `skip = "why"` in evalua.suite{}: `evalua run` skips the suite (exit 0) saying why.
    pub skip: Option<String>,
    /// Suite-wide fault rules (SPEC §11).
    pub faults: Faults,
    /// Perturbations of every case (SPEC §17); a case's own replace them by name.
    pub perturb: Perturbations,
    /// `sandbox.max_fixture_mb`: the largest schema or fixture file accepted.
    pub max_fixture_bytes: u64,
    /// `sandbox.max_file_mb` / `max_trial_mb`: how much of a trial's changed
    /// work-dir files is read, diffed line by line and kept.
    pub keep: KeepCaps,
    /// `file:line` of `evalua.suite {}`.
    pub location: String,
    /// Held-out runs of the same cases and version before `run` warns (SPEC §13).
    pub held_out_max_runs: u32,
    /// `monitors = { name = check }`, sorted by name.
    pub monitors: Vec<MonitorSpec>,
    /// `trace_adapter = function(span) … end` is set (read by `evalua grade`).
    pub trace_adapter: bool,
    /// `match = function(item) … end` is set: it assigns graded items to cases.
    pub matcher: bool,
    /// What the suite declares about abstentions, contamination and exclusions (SPEC §22).
    pub publish: Publish,
}

/// What a suite declares before the run about what its figures count (SPEC §22).
#[derive(Debug, Clone, Default)]
pub struct Publish {
    /// `abstention = true`: model agents are offered the built-in `abstain` tool.
    pub abstention: bool,
    /// `contamination = { sources = { REGEX, … } }`: published solutions; a
    /// trial that touched one is left out of the capability figures.
    pub contamination: Vec<String>,
    /// `exclude = { … }`: outcomes or endings left out of the capability
    /// figures, declared before the run ([`EXCLUDABLE`]).
    pub exclude: Vec<String>,
}

/// The built-in tool a model agent abstains with when the suite allows it.
pub const ABSTAIN_TOOL: &str = "abstain";

/// What `exclude` may name: the outcomes and endings a trial can have, apart
/// from `accepted` (an excluded success would flatter the figure the seed
/// warns about). `infra_error` is left out of the capability view whether or
/// not it is named.
pub const EXCLUDABLE: &[&str] = &[
    "infra_error",
    "failed",
    "critical",
    "grader_error",
    "final",
    "abstained",
    "deadline",
    "budget",
    "crashed",
    "protocol_error",
    "not_started",
    "interrupted",
];

/// `contamination = { sources = … }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContaminationSpec {
    #[serde(deserialize_with = "de::list")]
    pub sources: Vec<String>,
}

/// The suite's table as `evalua.suite` normalised it, read by serde. Loading
/// spreads it over [`Suite`], with the cases and datasets the declarations
/// gave.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteTable {
    pub name: String,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// Trials per case, unless a case or `--trials` says otherwise.
    #[serde(default = "SuiteTable::default_trials", deserialize_with = "de::whole")]
    pub trials: u32,
    /// The DSL's: `trials = { min, max }` gives `trials` its max and this its min.
    #[serde(rename = "_trials_min", default, deserialize_with = "de::count")]
    pub trials_min: Option<u32>,
    /// What an adaptive run's undecided gate does: "fail" (the default) or "pass".
    #[serde(default)]
    pub undecided: Option<String>,
    #[serde(default)]
    pub budget: Budget,
    pub sandbox: SandboxSpec,
    /// The default agent (with `agents`: the one `agent = "name"` or
    /// `default_agent` names, as the DSL resolved it).
    #[serde(default)]
    pub agent: Option<AgentSpec>,
    /// The DSL's: `agents = { name = … }`, checked.
    #[serde(rename = "_agents", default)]
    pub agents: Option<std::collections::BTreeMap<String, AgentSpec>>,
    #[serde(default)]
    pub default_agent: Option<String>,
    /// The DSL's: `suite:adversary { name, agent }`, by name (SPEC §19).
    #[serde(rename = "_adversaries", default)]
    pub adversaries: Option<std::collections::BTreeMap<String, AgentSpec>>,
    #[serde(default, deserialize_with = "gate::read")]
    pub gate: Vec<Gate>,
    /// The DSL's: `gate = { hardened = true }` (SPEC §19), taken out of the gate table.
    #[serde(rename = "_hardened", default)]
    pub hardened: bool,
    #[serde(default)]
    pub grade: Option<GradeSpec>,
    #[serde(default, deserialize_with = "fault::read_faults")]
    pub faults: Option<Faults>,
    /// Perturbations of every case (SPEC §17).
    #[serde(default)]
    pub perturb: Perturbations,
    #[serde(default = "SuiteTable::default_held_out_max_runs", deserialize_with = "de::whole")]
    pub held_out_max_runs: u32,
    /// Why the suite is skipped (the DSL drops `skip = false`).
    #[serde(default)]
    pub skip: Option<String>,
    /// The DSL's: the tools `suite:tool` declared, in order.
    #[serde(rename = "_tools", deserialize_with = "de::list")]
    pub tools: Vec<ToolSpec>,
    /// The DSL's: the same tools by name.
    #[serde(rename = "_tool_index", default)]
    pub tool_index: de::InLua,
    /// The DSL's: `monitors = { name = check }`, each normalised, by name.
    #[serde(rename = "_monitors", default, deserialize_with = "de::list")]
    pub monitors: Vec<CheckInfo>,
    /// The DSL's: the same monitors by name.
    #[serde(rename = "_monitor_index", default)]
    pub monitor_index: de::InLua,
    /// The DSL's: what failed to declare (reported where it was declared).
    #[serde(rename = "_dropped", default)]
    pub dropped: Dropped,
    /// Model agents may abstain through the built-in `abstain` tool (SPEC §22).
    #[serde(default)]
    pub abstention: bool,
    #[serde(default)]
    pub contamination: Option<ContaminationSpec>,
    /// Outcomes or endings the capability figures leave out, declared before the run.
    #[serde(default, deserialize_with = "de::list")]
    pub exclude: Vec<String>,
    /// `file:line` of `evalua.suite {}`.
    #[serde(rename = "_where", default)]
    pub location: Option<String>,
}

impl keys::Keys for SuiteTable {
    const DSL_KEYS: &[&str] = &[
        "_agents",
        "_adversaries",
        "_hardened",
        "_tools",
        "_tool_index",
        "_monitors",
        "_monitor_index",
        "_dropped",
        "_where",
        "_trials_min",
    ];
    /// `agents` and `monitors` become `_agents` and `_monitors`; `seed` is
    /// accepted and not read; `trace_adapter` and `match` are functions.
    const LUA_KEYS: &[&str] = &["agents", "monitors", "seed", "trace_adapter", "match"];
}

/// Trials per case when neither the suite, the case nor `--trials` says.
pub const DEFAULT_TRIALS: u32 = 1;

impl SuiteTable {
    fn default_trials() -> u32 {
        DEFAULT_TRIALS
    }
    fn default_held_out_max_runs() -> u32 {
        DEFAULT_HELD_OUT_MAX_RUNS
    }
}

/// `grade = { gate = …, reexecute = … }`: what `evalua grade` uses.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GradeSpec {
    #[serde(default, deserialize_with = "gate::read_opt")]
    pub gate: Option<Vec<Gate>>,
    #[serde(default)]
    pub reexecute: bool,
}

impl keys::Keys for GradeSpec {}

/// What failed to declare, as the DSL noted it: names that mention it are
/// not reported again.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dropped {
    /// `agent` (or `agents`) was wrong: the cases are not agentless for it.
    #[serde(default)]
    pub agent: bool,
    /// Tools whose `suite:tool` failed, by name.
    #[serde(default)]
    pub tools: std::collections::BTreeMap<String, bool>,
    /// Monitors that failed, by name.
    #[serde(default)]
    pub monitors: std::collections::BTreeMap<String, bool>,
}

/// Held-out runs of the same cases and version before `run` warns, by default.
pub const DEFAULT_HELD_OUT_MAX_RUNS: u32 = 5;

impl Suite {
    /// Whether the suite's figures include the safety block: it has attack
    /// cases or tools forbidden in attacks.
    pub fn has_safety(&self) -> bool {
        self.cases.iter().any(CaseSpec::is_attack) || self.tools.iter().any(|t| t.forbidden_in_attack)
    }

    /// The case's work-dir fixture: its own, else the suite's.
    pub fn case_workdir<'a>(&'a self, case: &'a CaseSpec) -> Option<&'a WorkdirSpec> {
        case.workdir.as_deref().or(self.workdir.as_ref())
    }

    pub fn case_agent<'a>(&'a self, case: &'a CaseSpec) -> Option<&'a AgentSpec> {
        case.agent.as_deref().or(self.agent.as_ref())
    }

    /// The agent named `name` (`agents = { name = … }`).
    pub fn agent_named(&self, name: &str) -> Option<&AgentSpec> {
        self.agents.iter().find(|a| a.name == name).map(|a| &a.spec)
    }

    /// The names of the suite's agents, the default marked: `gold (default), model`.
    pub fn agent_names(&self) -> String {
        let names: Vec<String> = self
            .agents
            .iter()
            .map(|a| {
                if self.default_agent.as_deref() == Some(a.name.as_str()) {
                    format!("{} (default)", a.name)
                } else {
                    a.name.clone()
                }
            })
            .collect();
        if names.is_empty() { "none".to_string() } else { names.join(", ") }
    }
}
