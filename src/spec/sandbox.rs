//! `sandbox = { … }`: a trial's work tree, database, network, and how much
//! of its changed files is read and kept.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{de, keys};

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
