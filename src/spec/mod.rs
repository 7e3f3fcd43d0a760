//! What a suite declares, as typed data: the suite, its cases, tools,
//! checks, budget, agents, users, judges and gates. No Lua here: the Lua
//! loader (`lua::load`) builds these from the suite file's tables, and every
//! layer above plans and runs from them.

pub mod de;
pub mod fault;
pub mod gate;
pub mod harden;
pub mod keys;
pub mod model;
pub mod sources;
pub mod synthetic;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

pub use fault::{FaultEffect, FaultKind, FaultRule, Faults};
pub use gate::Gate;
pub use harden::HardenSpec;
pub use model::{
    JudgeSpec, LlmUserSpec, ModelAgentSpec, ModelSpec, Prices, Provider, ProxySpec, ToolResults, UserSpec, Withhold,
};
pub use sources::{SourceFile, Sources};

/// The trial deadline when the suite's budget sets none.
pub const DEFAULT_DEADLINE_S: f64 = 300.0;
/// The longest trial deadline a suite may set: a week.
pub const MAX_DEADLINE_S: f64 = 7.0 * 24.0 * 3600.0;

/// `budget = { … }` (the DSL checks it at the suite's line; the host reads
/// it again through these fields: counts whole, amounts finite).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    #[serde(default, deserialize_with = "Budget::read_deadline_s")]
    pub deadline_s: Option<f64>,
    #[serde(default, deserialize_with = "de::count")]
    pub max_tool_calls: Option<u32>,
    #[serde(default, deserialize_with = "de::count")]
    pub max_turns: Option<u32>,
    #[serde(default, deserialize_with = "de::count")]
    pub max_tokens: Option<u64>,
    #[serde(default, deserialize_with = "de::amount")]
    pub max_cost_usd: Option<f64>,
}

impl Budget {
    /// `deadline_s`: above 0 and at most [`MAX_DEADLINE_S`].
    fn read_deadline_s<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        match de::amount(d)? {
            Some(v) if v <= 0.0 || v > MAX_DEADLINE_S => {
                Err(serde::de::Error::custom(format_args!("must be above 0 and at most {MAX_DEADLINE_S} s, got {v}")))
            }
            v => Ok(v),
        }
    }

    /// How long a trial's agent may run: `deadline_s`, else [`DEFAULT_DEADLINE_S`].
    /// Never panics: the loader refuses a deadline that is not a positive number
    /// of at most [`MAX_DEADLINE_S`], and a value that slips through anyway is
    /// clamped into that range.
    pub fn deadline(&self) -> Duration {
        let s = self.deadline_s.unwrap_or(DEFAULT_DEADLINE_S);
        let s = if s.is_nan() { DEFAULT_DEADLINE_S } else { s.clamp(0.0, MAX_DEADLINE_S) };
        Duration::try_from_secs_f64(s).unwrap_or(Duration::from_secs(DEFAULT_DEADLINE_S as u64))
    }

    /// The instant a trial that starts `now` must end by.
    pub fn deadline_from(&self, now: std::time::Instant) -> std::time::Instant {
        now.checked_add(self.deadline()).unwrap_or(now + Duration::from_secs(DEFAULT_DEADLINE_S as u64))
    }
}

/// `suite:tool { … }` as the DSL normalised it (every key filled in; `run`
/// stays in Lua).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub params: Json,
    pub effect: String,
    #[serde(deserialize_with = "de::list")]
    pub requires: Vec<String>,
    /// An attack case must not call it: requests are counted as attempts (SPEC §13).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forbidden_in_attack: bool,
    /// The executor checks the arguments against `params` before the handler
    /// runs (default). `validate = false`: the schema is only shown to the
    /// agent and the handler judges the arguments, as in a harness that does
    /// not validate (τ-bench's tools raise their own errors).
    #[serde(skip_serializing_if = "Clone::clone")]
    pub validate: bool,
    /// A model agent's call to it ends the conversation: the agent gets no
    /// further step (τ-bench's `transfer_to_human_agents`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ends: bool,
    /// A call that runs is an intervention (a transfer to a human, an
    /// escalation), counted per trial (SPEC §22).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub intervention: bool,
    /// The parameter holding what a call reads (a URL, a document id): each
    /// executed call's value is one of the trial's `sources` (SPEC §22).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// `file:line` of its `suite:tool` (not part of the tool's contract).
    #[serde(rename(deserialize = "_where"), default, skip_serializing)]
    pub location: String,
}

impl keys::Keys for ToolSpec {
    const DSL_KEYS: &[&str] = &["_where"];
    /// The handler, a function.
    const LUA_KEYS: &[&str] = &["run"];
}

/// An agent as the DSL normalised it (`evalua.agent.*`): its `kind`, then
/// its own keys. A scripted agent's function stays in Lua.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AgentSpec {
    /// A scripted agent: a Lua file, or a function defined in the suite.
    Scripted { path: Option<PathBuf> },
    /// A program speaking JSON Lines (SPEC §4), one process per trial.
    Command(CommandAgentSpec),
    /// A recorded trace's tool calls, fed back through the executor.
    Replay { path: PathBuf },
    /// A model-driven tool loop in the host (`evalua.agent.openai` / `anthropic`:
    /// the DSL's kind is the provider).
    #[serde(alias = "openai", alias = "anthropic")]
    Model(ModelAgentSpec),
}

/// One of a suite's agents, by name (`agents = { gold = …, model = … }`).
#[derive(Debug, Clone, Serialize)]
pub struct NamedAgent {
    pub name: String,
    pub spec: AgentSpec,
}

/// The name a suite's only agent goes by when it declares `agent = …` without `agents`.
pub const DEFAULT_AGENT_NAME: &str = "default";

/// `evalua.agent.command { ... }`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandAgentSpec {
    #[serde(deserialize_with = "de::list")]
    pub cmd: Vec<String>,
    #[serde(default, deserialize_with = "de::list")]
    pub env: Vec<String>,
    #[serde(default, deserialize_with = "de::opt_list")]
    pub setup: Option<Vec<String>>,
    #[serde(default)]
    pub tools: ToolsVia,
    #[serde(default)]
    pub io: AgentIo,
    /// `model_proxy`: the endpoints the harness's model proxy forwards to.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "ProxySpec::read")]
    pub model_proxy: Option<ProxySpec>,
}

impl keys::Keys for CommandAgentSpec {
    /// `cwd` may only be "workdir" (the DSL checks it; nothing else to hold).
    const LUA_KEYS: &[&str] = &["cwd"];
}

/// How a command agent reaches the case's tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolsVia {
    /// `tool_call` / `tool_result` lines of the JSON Lines protocol.
    #[default]
    Protocol,
    /// An MCP server in the harness (streamable HTTP on 127.0.0.1), at `EVALUA_MCP_URL`.
    Mcp,
}

/// How a command agent's task input and final answer travel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentIo {
    /// `start` … `final` JSON Lines on stdin/stdout.
    #[default]
    Jsonl,
    /// The input as the last argument; the whole stdout, on exit 0, is the answer.
    Plain,
}

/// Where a case's initial work tree comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkdirSpec {
    /// A folder, copied as it is.
    Dir { path: PathBuf },
    /// A git bundle, cloned once and checked out at `rev` (default: the bundle's HEAD).
    Git { bundle: PathBuf, rev: Option<String> },
}

impl keys::Keys for WorkdirSpec {
    /// The folder form, which a suite writes as a string (the DSL makes it `{ dir = abs }`).
    const DSL_KEYS: &[&str] = &["dir"];
}

/// The DSL gives a work dir as `{ dir = abs }` or `{ git = abs, rev = … }`
/// (`normalize_workdir` in stdlib/evalua/init.lua).
impl<'de> Deserialize<'de> for WorkdirSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Normalised {
            dir: Option<PathBuf>,
            git: Option<PathBuf>,
            rev: Option<String>,
        }
        match Normalised::deserialize(d)? {
            Normalised { dir: Some(path), git: None, rev: None } => Ok(WorkdirSpec::Dir { path }),
            Normalised { dir: None, git: Some(bundle), rev } => Ok(WorkdirSpec::Git { bundle, rev }),
            _ => Err(serde::de::Error::custom("expected { dir = folder } or { git = bundle, rev = ... }")),
        }
    }
}

/// How much of a trial's changed work-dir files evalua reads (for `t.diff`,
/// `t.files`) and keeps in the run dir (SPEC §10). A changed file larger
/// than `file_bytes`, or past `trial_bytes` of the trial's kept files, is
/// recorded by path and size as skipped: never read whole, hashed or kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KeepCaps {
    pub file_bytes: u64,
    pub trial_bytes: u64,
}

/// `sandbox.max_file_mb`'s default.
pub const DEFAULT_MAX_FILE_MB: u64 = 64;
/// `sandbox.max_trial_mb`'s default.
pub const DEFAULT_MAX_TRIAL_MB: u64 = 256;
/// `sandbox.max_fixture_mb`'s default (`EVALUA_MAX_FIXTURE_MB` overrides it when the suite loads).
pub const DEFAULT_MAX_FIXTURE_MB: f64 = 64.0;

/// `sandbox = { … }` as the DSL checked it (its paths made absolute, the
/// work dir normalised). Loading spreads it over the suite's typed fields
/// (`db`, `keep`, …).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSpec {
    #[serde(default)]
    pub db: DbName,
    /// With `db = "postgres"`: the variable holding the server's URL.
    #[serde(default = "SandboxSpec::default_url_env")]
    pub url_env: String,
    pub schema: Option<PathBuf>,
    pub clock: Option<String>,
    pub workdir: Option<WorkdirSpec>,
    #[serde(default, deserialize_with = "de::list")]
    pub expose: Vec<PathBuf>,
    #[serde(default = "SandboxSpec::default_network")]
    pub network: bool,
    #[serde(default = "SandboxSpec::default_max_fixture_mb")]
    pub max_fixture_mb: f64,
    #[serde(default = "SandboxSpec::default_max_file_mb")]
    pub max_file_mb: f64,
    #[serde(default = "SandboxSpec::default_max_trial_mb")]
    pub max_trial_mb: f64,
}

/// `sandbox.db`'s name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DbName {
    #[default]
    Sqlite,
    Postgres,
}

impl keys::Keys for SandboxSpec {}

impl SandboxSpec {
    fn default_url_env() -> String {
        "EVALUA_PG_URL".into()
    }
    fn default_network() -> bool {
        true
    }
    fn default_max_fixture_mb() -> f64 {
        DEFAULT_MAX_FIXTURE_MB
    }
    fn default_max_file_mb() -> f64 {
        DEFAULT_MAX_FILE_MB as f64
    }
    fn default_max_trial_mb() -> f64 {
        DEFAULT_MAX_TRIAL_MB as f64
    }

    /// Where each trial's database lives.
    pub fn db(&self) -> DbSpec {
        match self.db {
            DbName::Sqlite => DbSpec::Sqlite,
            DbName::Postgres => DbSpec::Postgres { url_env: self.url_env.clone() },
        }
    }

    /// How much of a trial's changed work-dir files is read and kept.
    pub fn keep(&self) -> KeepCaps {
        KeepCaps { file_bytes: mib(self.max_file_mb), trial_bytes: mib(self.max_trial_mb) }
    }
}

/// A number of MiB, in bytes.
pub fn mib(mb: f64) -> u64 {
    (mb * 1024.0 * 1024.0) as u64
}

impl Default for KeepCaps {
    fn default() -> Self {
        KeepCaps { file_bytes: DEFAULT_MAX_FILE_MB << 20, trial_bytes: DEFAULT_MAX_TRIAL_MB << 20 }
    }
}

/// `check.tests { ... }` (SWE-bench semantics): the host validates it on the
/// initial tree before the first trial. Its keys are these fields (the DSL
/// reads them with `host.fields("tests")`), its default timeout is here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestsSpec {
    #[serde(deserialize_with = "de::list")]
    pub runner: Vec<String>,
    #[serde(default)]
    pub inject: Option<PathBuf>,
    #[serde(default, deserialize_with = "de::list")]
    pub fail_to_pass: Vec<String>,
    #[serde(default, deserialize_with = "de::list")]
    pub pass_to_pass: Vec<String>,
    #[serde(default = "TestsSpec::default_timeout_s")]
    pub timeout_s: f64,
}

impl keys::Keys for TestsSpec {}
impl keys::Keys for Budget {}

impl TestsSpec {
    /// `timeout_s` when the check gives none.
    pub const DEFAULT_TIMEOUT_S: f64 = 60.0;
    fn default_timeout_s() -> f64 {
        Self::DEFAULT_TIMEOUT_S
    }

    /// A `check.tests` check's `options`; the error names the key.
    fn read(options: Json) -> Result<Self, String> {
        let spec: TestsSpec = serde_path_to_error::deserialize(options).map_err(|e| match e.path().to_string() {
            p if p == "." => format!("check.tests: {}", e.inner()),
            p => format!("check.tests.{p}: {}", e.inner()),
        })?;
        if spec.runner.is_empty() {
            return Err("check.tests: 'runner' must be a non-empty list".into());
        }
        Ok(spec)
    }
}

/// A check as the DSL normalised it (`normalize_check` in the stdlib, the
/// constructors of `evalua.check` and `evalua.judge`), read by serde from
/// its [`CheckTable`]. Its `run` function stays in Lua.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "CheckTable")]
pub struct CheckInfo {
    pub name: String,
    pub critical: bool,
    /// The check's kind (`"tests"`, `"sql"`, ...) when it comes from `evalua.check`.
    pub kind: Option<String>,
    /// `check.tests`: validated on the initial tree before any trial.
    #[serde(rename = "options")]
    pub tests: Option<TestsSpec>,
    /// A judge check's spec (`judge.rubric`, `judge.pairwise`): models, criteria.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeSpec>,
    /// The tool names the check mentions (`check.tools`, `check.args`, …):
    /// each must be a tool of the suite. Derived from the declaration, so not
    /// part of the case's revision.
    #[serde(skip)]
    pub tools: Vec<String>,
    /// The SQL queries the check runs (`check.sql`, `prohibited`): each is
    /// prepared against the case's fixture before any trial.
    #[serde(skip)]
    pub sql: Vec<String>,
    /// `file:line` of the check's declaration, when known.
    #[serde(skip)]
    pub location: Option<String>,
}

/// A check's table as the DSL normalised it: its keys are these fields (and
/// `run`). `options` depend on the check's `kind`: [`CheckInfo`] reads
/// `check.tests`' as a [`TestsSpec`]; no other kind's options reach the host.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckTable {
    name: String,
    #[serde(default)]
    critical: bool,
    #[serde(default)]
    kind: Option<String>,
    /// Held as JSON until the kind says what they are.
    #[serde(default)]
    options: Option<Json>,
    #[serde(default)]
    judge: Option<JudgeSpec>,
    #[serde(default, deserialize_with = "de::list")]
    tools: Vec<String>,
    #[serde(default, deserialize_with = "de::list")]
    sql: Vec<String>,
    #[serde(rename = "where", default)]
    location: Option<String>,
    /// Listed in the case's `prohibited` (the stdlib marks it; the grading
    /// reads the mark from the case table, `trial::grading::case_checks`).
    #[serde(default, rename = "prohibited")]
    _prohibited: bool,
}

impl keys::Keys for CheckInfo {
    /// The check itself, a function.
    const LUA_KEYS: &[&str] = &["run"];
}

impl TryFrom<CheckTable> for CheckInfo {
    type Error = String;
    fn try_from(c: CheckTable) -> Result<Self, String> {
        let tests = match (c.kind.as_deref(), c.options) {
            (Some("tests"), Some(options)) => Some(TestsSpec::read(options)?),
            _ => None,
        };
        Ok(CheckInfo {
            name: c.name,
            critical: c.critical,
            kind: c.kind,
            tests,
            judge: c.judge,
            tools: c.tools,
            sql: c.sql,
            location: c.location,
        })
    }
}

/// A case as the plan keeps it: what scheduling, figures, manifests and
/// listings need, and no more. Its input, checks and the rest of its table
/// stay in the suite file (or its dataset row), materialised in the worker's
/// Lua state for the trials that run it, so a plan's memory grows by a few
/// hundred bytes a case whatever the cases hold.
#[derive(Debug, Clone, Serialize)]
pub struct CaseSpec {
    pub id: String,
    pub split: String,
    pub tags: Vec<String>,
    pub difficulty: Option<String>,
    pub fixture: Option<PathBuf>,
    pub trials: Option<u32>,
    /// `trials = { min, max }`: the least trials of an adaptive run (SPEC §20; `trials` is the max).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trials_min: Option<u32>,
    pub weight: f64,
    pub tools: Option<Vec<String>>,
    pub agent: Option<Box<AgentSpec>>,
    pub clock: Option<String>,
    /// The case's own work-dir fixture (overrides the suite's).
    pub workdir: Option<Box<WorkdirSpec>>,
    /// The (scripted or simulated) user the agent talks to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<Box<UserSpec>>,
    /// How many checks the case has (expectations and prohibited-state queries).
    pub checks: u32,
    /// The case's `check.tests` checks, validated on the initial tree before any trial.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<TestsCheck>,
    /// sha256 of the case as declared: input, checks (name, criticality,
    /// kind, options, judge) and every field above. Its revision's core.
    pub digest: String,
    /// `file:line` where the case was declared (a dataset row: the data file's line).
    pub location: String,
    /// The case's fault rules (SPEC §11), replacing the suite's tool by tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<Faults>,
    /// `reference = { calls = …, tokens = … }`: what a reference solution
    /// takes, for the efficiency figures (absent: none declared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<Reference>,
    /// `accept_abnormal_end = "why"`: a trial whose agent crashed or broke
    /// the protocol may still be accepted by its checks (SPEC §8), for this reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_abnormal_end: Option<String>,
    /// The case's own perturbations (SPEC §17), replacing the suite's of the same name.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub perturb: Perturbations,
    /// `should_abstain = true`: the case's contract requires abstaining
    /// (SPEC §22); elsewhere an abstention is an unsolved task.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub should_abstain: bool,
    /// `harden = { skip, reason }`: adversaries `evalua harden` leaves out here (SPEC §19).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harden: Option<HardenSpec>,
    /// Where a trial finds the case again.
    #[serde(skip)]
    pub source: CaseSource,
    /// A drafted case a person has not approved yet (SPEC §23): played,
    /// reported apart, counted in no figure. Not part of the revision: an
    /// approval does not change the case.
    #[serde(skip)]
    pub pending_review: bool,
}

/// A case's table as `suite:case` normalised it (`normalize_case` in the
/// stdlib: the table a trial sees as `t.case`), read by serde. The plan keeps
/// its [`CaseSpec`]; the input and the checks count only in the case's digest,
/// and `metadata` stays in Lua.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseTable {
    pub id: String,
    /// `"dev"` unless given (the DSL fills it in: `t.case.split` shows it).
    pub split: String,
    #[serde(deserialize_with = "de::list")]
    pub tags: Vec<String>,
    #[serde(default)]
    pub difficulty: Option<String>,
    pub input: String,
    /// Made absolute by the DSL.
    #[serde(default)]
    pub fixture: Option<PathBuf>,
    #[serde(default, deserialize_with = "de::count")]
    pub trials: Option<u32>,
    /// The DSL's: `trials = { min, max }` gives `trials` its max and this its min.
    #[serde(rename = "_trials_min", default, deserialize_with = "de::count")]
    pub trials_min: Option<u32>,
    /// 1 unless given (the DSL fills it in: `t.case.weight` shows it).
    pub weight: f64,
    /// The tools offered, when a subset (the DSL leaves out undeclared names).
    #[serde(default, deserialize_with = "de::opt_list")]
    pub tools: Option<Vec<String>>,
    /// A name of the suite's `agents` is resolved by the DSL.
    #[serde(default)]
    pub agent: Option<AgentSpec>,
    #[serde(default)]
    pub user: Option<UserSpec>,
    /// Free data for the checks (`t.case.metadata`).
    #[serde(default)]
    pub metadata: de::InLua,
    #[serde(default)]
    pub clock: Option<String>,
    #[serde(default)]
    pub workdir: Option<WorkdirSpec>,
    /// The DSL's: `expect`, then `prohibited`, each normalised into a check.
    #[serde(deserialize_with = "de::list")]
    pub checks: Vec<CheckInfo>,
    #[serde(default, deserialize_with = "fault::read_faults")]
    pub faults: Option<Faults>,
    #[serde(default)]
    pub reference: Option<Reference>,
    /// Why a trial whose agent crashed or broke the protocol may still be
    /// accepted (by default it never is); a non-empty reason.
    #[serde(default)]
    pub accept_abnormal_end: Option<String>,
    /// Its own perturbations (SPEC §17).
    #[serde(default)]
    pub perturb: Perturbations,
    /// The case's contract requires abstaining (its default `expect` is `check.abstained()`).
    #[serde(default)]
    pub should_abstain: bool,
    /// Adversaries `evalua harden` leaves out for this case, and why (SPEC §19).
    #[serde(default)]
    pub harden: Option<HardenSpec>,
    /// Where a drafted case came from (SPEC §23).
    #[serde(default)]
    pub source: Option<synthetic::CaseOrigin>,
    /// A person's review of a drafted case (SPEC §23).
    #[serde(default)]
    pub review: Option<synthetic::CaseReview>,
    /// `file:line` of its `suite:case` (a dataset row: the data file's line).
    #[serde(rename = "_where", default)]
    pub location: String,
}

impl keys::Keys for CaseTable {
    const DSL_KEYS: &[&str] = &["checks", "_where", "_trials_min"];
    /// The checks as written: the DSL turns them into `checks`.
    const LUA_KEYS: &[&str] = &["expect", "prohibited"];
}

/// A case's reference solution (`reference = { calls = …, tokens = … }`):
/// what the task needs, against which a trial's tool calls and tokens are
/// set as ratios. At least one of `calls` and `tokens` is given; both are
/// positive (a ratio to nothing says nothing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// Tool calls the reference makes (given as a number, or counted from
    /// the list of its calls).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "de::count")]
    pub calls: Option<u32>,
    /// Tokens (input + output) the reference takes.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "de::count")]
    pub tokens: Option<u64>,
    /// An accepted trial above this many times the reference (in calls or
    /// in tokens) is listed in the reports, and is what `check.efficiency`
    /// rejects unless it is given its own.
    #[serde(default = "Reference::default_max_ratio")]
    pub max_ratio: f64,
    /// The DSL's: `calls` given as a list, kept in Lua for `t.case.reference`
    /// (the DSL counts it into `calls`; the plan needs only the count).
    #[serde(default, skip_serializing)]
    pub call_list: serde::de::IgnoredAny,
}

impl keys::Keys for Reference {
    const DSL_KEYS: &[&str] = &["call_list"];
}

impl Reference {
    /// `max_ratio` when the case gives none.
    pub const DEFAULT_MAX_RATIO: f64 = 2.0;
    fn default_max_ratio() -> f64 {
        Self::DEFAULT_MAX_RATIO
    }
}

/// A `check.tests` check of a case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestsCheck {
    pub name: String,
    pub spec: TestsSpec,
}

/// Where a trial finds a case's table again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CaseSource {
    /// `suite:case { ... }` in the suite file.
    #[default]
    Declared,
    /// A row of the suite's `dataset`-th `suite:dataset` file (0-based), the
    /// `row`-th (1-based, as `map` sees it), at `offset` for `length` bytes.
    Row { dataset: u32, row: u32, line: u64, offset: u64, length: u64 },
}

/// A dataset file (`suite:dataset`), as loading read it.
#[derive(Debug, Clone, Serialize)]
pub struct DatasetSpec {
    /// The file, as shown (relative to the working directory when under it).
    pub path: String,
    #[serde(skip)]
    pub abs: PathBuf,
    pub format: crate::util::dataset::Format,
    pub sha256: String,
    pub bytes: u64,
    /// Rows read, good or bad.
    pub rows: u64,
    /// Cases declared from its rows.
    pub cases: u64,
    /// `on_error = "skip"`: the rows left out, with why (the first few).
    pub skipped: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped_rows: Vec<String>,
    /// A CSV file's header row (the keys of every row).
    #[serde(skip)]
    pub headers: Vec<String>,
    /// The file's length and modification time when loaded: a trial refuses a file changed since.
    #[serde(skip)]
    pub stamp: Option<(u64, std::time::SystemTime)>,
}

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

/// `sandbox.db`: where each trial's database lives.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "db", rename_all = "lowercase")]
pub enum DbSpec {
    /// The embedded SQLite (the default): a copy of an in-memory image per trial.
    #[default]
    Sqlite,
    /// A PostgreSQL server, its URL in the environment variable `url_env`: a
    /// database per trial, copied from a template database per fixture.
    Postgres { url_env: String },
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

/// Perturbations (SPEC §17): a changed detail or a cut tool, declared in the
/// suite (for every case) or in a case (that case only; it replaces the
/// suite's of the same name), run beside the unperturbed baseline.
/// One perturbation as the DSL normalised it: what it changes in a case.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Perturbation {
    /// The case's input, replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// The case's fixture, replaced (made absolute by the DSL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixture: Option<PathBuf>,
    /// Fault rules, replacing the case's tool by tool.
    #[serde(default, deserialize_with = "fault::read_faults", skip_serializing_if = "Option::is_none")]
    pub faults: Option<Faults>,
    /// Tools not offered at all: a request for one is rejected as unknown.
    #[serde(default, deserialize_with = "de::opt_list", skip_serializing_if = "Option::is_none")]
    pub drop_tools: Option<Vec<String>>,
    /// The (scripted or simulated) user, replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserSpec>,
    /// The DSL's: `expect` normalised into checks, which replace the case's.
    #[serde(default, deserialize_with = "de::opt_list", skip_serializing_if = "Option::is_none")]
    pub checks: Option<Vec<CheckInfo>>,
    /// `file:line` of the declaration that holds it (the suite's or the case's).
    #[serde(rename = "_where", default, skip_serializing)]
    pub location: String,
}

impl keys::Keys for Perturbation {
    const DSL_KEYS: &[&str] = &["checks", "_where"];
    /// The checks as written: the DSL turns them into `checks`.
    const LUA_KEYS: &[&str] = &["expect"];
}

/// The name of a run's unperturbed condition (no perturbation may take it).
pub const BASELINE: &str = "baseline";

/// Perturbations by name.
pub type Perturbations = std::collections::BTreeMap<String, Perturbation>;

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

/// The tag that makes a case an attack case (SPEC §13).
pub const ATTACK_TAG: &str = "attack";

/// Held-out runs of the same cases and version before `run` warns, by default.
pub const DEFAULT_HELD_OUT_MAX_RUNS: u32 = 5;

impl CaseSpec {
    pub fn is_attack(&self) -> bool {
        self.tags.iter().any(|t| t == ATTACK_TAG)
    }
}

/// A monitor: a check that names a failure mode (SPEC §9).
#[derive(Debug, Clone, Serialize)]
pub struct MonitorSpec {
    pub name: String,
    pub critical: bool,
}

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
