//! The held-out ledger (SPEC §13): every run of held-out cases is appended
//! to `.evalua/ledger.jsonl` beside the suite, so that tuning against the
//! held-out split shows: `run` warns once the same held-out cases at the
//! same suite version have been run more than the suite's
//! `held_out_max_runs` times. Runs of other splits never touch it.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub suite: String,
    pub version: Option<String>,
    /// The held-out case ids the run ran, sorted.
    pub cases: Vec<String>,
    pub time: String,
    pub run_id: String,
    /// What was used: absent for a run of held-out cases; `"labels"` for the
    /// held-out items of a label store (SPEC §15; `cases` then holds item ids).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// The ledger of the suite in `suite_dir`.
pub fn path(suite_dir: &Path) -> PathBuf {
    suite_dir.join(".evalua").join("ledger.jsonl")
}

/// Append `entry` and return how many runs (this one included) the ledger
/// holds of the same suite, version and cases. Lines that are not entries
/// (a hand edit, a torn write) are skipped.
pub fn append(ledger: &Path, entry: &Entry) -> Result<usize> {
    let mut same = 1;
    if let Ok(f) = std::fs::File::open(ledger) {
        for line in std::io::BufReader::new(f).lines().map_while(std::io::Result::ok) {
            if let Ok(e) = serde_json::from_str::<Entry>(&line)
                && e.suite == entry.suite
                && e.version == entry.version
                && e.cases == entry.cases
                && e.kind == entry.kind
            {
                same += 1;
            }
        }
    }
    let write = || -> std::io::Result<()> {
        if let Some(dir) = ledger.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(ledger)?;
        let mut line = serde_json::to_string(entry).map_err(std::io::Error::other)?;
        line.push('\n');
        f.write_all(line.as_bytes())
    };
    write()
        .map_err(|e| Error::Environment(format!("{}: cannot append to the held-out ledger: {e}", ledger.display())))?;
    Ok(same)
}
