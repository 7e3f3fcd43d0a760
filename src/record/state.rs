//! What a trial changed, kept so the run can be re-graded later without its
//! agent (SPEC §10): the record of it in the trace ([`StateRecord`]) and the
//! bytes on their way to the run dir (`rundir::KeptState`). Where the bytes live is
//! the run dir's business ([`super::RunDir::write_state`] and friends).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A trial's change to its environment, as its trace records it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateRecord {
    /// The database's change; null when the database did not change (or the case has none).
    pub db: Option<DbChangeRecord>,
    /// Work-dir files the trial added or modified.
    #[serde(default)]
    pub files: Vec<KeptFile>,
    /// Work-dir paths the trial deleted.
    #[serde(default)]
    pub deleted: Vec<String>,
    /// Why the change could not be kept (the trial cannot be re-graded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// How the database's change is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DbFormat {
    /// A SQLite session changeset over the case's template image.
    Changeset,
    /// The whole final image: the agent changed the schema, which a changeset cannot hold.
    Image,
}

impl DbFormat {
    /// The kept file's extension.
    pub fn extension(self) -> &'static str {
        match self {
            DbFormat::Changeset => "changeset",
            DbFormat::Image => "sqlite",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DbChangeRecord {
    pub format: DbFormat,
    pub sha256: String,
    pub bytes: u64,
}

/// One added or modified path of the work dir.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptFile {
    pub path: String,
    /// A regular file's content hash (its bytes are kept); null for a symlink.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exec: bool,
    /// A symlink's target (nothing else is kept for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symlink: Option<String>,
    /// A regular file over `sandbox.max_file_mb`, or past `sandbox.max_trial_mb`
    /// of the trial's kept files: its length (it was not read, hashed or kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
}

/// A folder owned by a finished trial until its files are stored; removed when dropped.
#[derive(Debug)]
pub struct OwnedDir(pub PathBuf);

impl Drop for OwnedDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Why a trial's kept state cannot be read back: always names the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateError(pub String);

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A kept path must stay inside the work dir: relative, no `..`, no empty part.
pub fn safe_rel(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && !path.contains('\0')
        && path.split('/').all(|p| !p.is_empty() && p != "." && p != "..")
}
