//! A check as the DSL normalised it (`evalua.check`, `evalua.judge`,
//! `check.tests`), and a monitor (a check that names a failure mode).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::model::JudgeSpec;
use super::{de, keys};

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

/// A monitor: a check that names a failure mode (SPEC §9).
#[derive(Debug, Clone, Serialize)]
pub struct MonitorSpec {
    pub name: String,
    pub critical: bool,
}
