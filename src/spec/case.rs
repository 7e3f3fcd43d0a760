//! A case: what the plan keeps of it ([`CaseSpec`]), its table as the DSL
//! normalised it, its reference solution, and the dataset files cases come from.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::agent::AgentSpec;
use super::check::{CheckInfo, TestsSpec};
use super::fault::{self, Faults};
use super::harden::HardenSpec;
use super::model::UserSpec;
use super::perturbation::Perturbations;
use super::sandbox::WorkdirSpec;
use super::{de, keys, synthetic};

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

/// The tag that makes a case an attack case (SPEC §13).
pub const ATTACK_TAG: &str = "attack";

impl CaseSpec {
    pub fn is_attack(&self) -> bool {
        self.tags.iter().any(|t| t == ATTACK_TAG)
    }
}
