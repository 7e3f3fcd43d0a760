//! trials.jsonl as a run writes it: one record a line, each flushed before
//! the next (opened by `RunDir::trials_writer` / `trials_appender`).

use std::collections::HashSet;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use super::files;
use super::trial::TrialRecord;
use crate::error::{Error, Result};

/// Appends records to trials.jsonl, one flushed line each: a finished
/// trial's record is on disk before the next one is written.
pub struct TrialsWriter {
    file: File,
    path: PathBuf,
    /// Records already in the file (a resumed run's kept trials).
    kept: HashSet<(String, u32)>,
}

impl TrialsWriter {
    /// The writer of trials.jsonl opened as `file` at `path`, `kept` its records already there.
    pub(super) fn new(file: File, path: PathBuf, kept: HashSet<(String, u32)>) -> TrialsWriter {
        TrialsWriter { file, path, kept }
    }

    /// A finished trial's record, appended unless the file holds it already
    /// (a resumed run's kept trial, announced again).
    pub fn add(&mut self, rec: &TrialRecord) -> Result<()> {
        if self.kept.contains(&(rec.case.clone(), rec.trial)) {
            return Ok(());
        }
        self.append(rec)
    }

    pub fn append(&mut self, rec: &TrialRecord) -> Result<()> {
        let line = serde_json::to_string(rec).map_err(|e| Error::Environment(e.to_string()))?;
        self.append_line(&line)
    }

    /// Append a line as written elsewhere (a merged part's record, kept byte for byte).
    pub fn append_line(&mut self, line: &str) -> Result<()> {
        writeln!(self.file, "{line}")
            .and_then(|_| self.file.flush())
            .map_err(|e| Error::Environment(format!("{}: cannot write {}: {e}", self.path.display(), files::TRIALS)))
    }
}
