//! The run dir, written and read in one place:
//!
//! ```text
//! manifest.json   what the run was (written before the first trial)
//! trials.jsonl    one record per finished trial, appended and flushed as it ends
//! traces/         one trace per trial
//! summary.json    the figures (written at the end)
//! report.md  report.html  junit.xml
//! ```
//!
//! Failing to write is evalua's problem, not the user's (exit 3); a run dir
//! that cannot be read back as one is the user's input (exit 2).

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use super::manifest::Manifest;
use super::trial::{Trace, TrialRecord};
use crate::error::{Error, Result};

/// A run dir on disk.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub path: PathBuf,
}

/// `<UTC time>-<6 hex>`: sortable by time, unique enough for a folder name.
pub fn new_run_id() -> String {
    let now = jiff::Timestamp::now();
    let t = jiff::fmt::strtime::format("%Y%m%dT%H%M%SZ", &now.to_zoned_datetime(jiff::tz::TimeZone::UTC))
        .unwrap_or_default();
    format!("{t}-{:06x}", fastrand::u32(..0x100_0000))
}

/// Write `value` as pretty JSON (keys sorted, as `serde_json::Value` keeps them).
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let value = serde_json::to_value(value).map_err(|e| Error::Environment(format!("{}: {e}", path.display())))?;
    let bytes =
        serde_json::to_vec_pretty(&value).map_err(|e| Error::Environment(format!("{}: {e}", path.display())))?;
    fs::write(path, bytes).map_err(|e| Error::Environment(format!("{}: cannot write: {e}", path.display())))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = fs::read_to_string(path).map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| Error::Input(format!("{}:{}: {e}", path.display(), e.line())))
}

impl RunDir {
    /// Create the run dir: `out` exactly, or `runs/<suite>/<run_id>/`. An
    /// existing, non-empty folder is refused (a run never mixes with another).
    pub fn create(out: Option<&Path>, suite: &str, run_id: &str) -> Result<RunDir> {
        let dir = match out {
            Some(d) => d.to_path_buf(),
            None => PathBuf::from("runs").join(suite).join(run_id),
        };
        if dir.exists() && fs::read_dir(&dir).map(|mut d| d.next().is_some()).unwrap_or(false) {
            return Err(Error::Input(format!(
                "{}: the run dir exists and is not empty; choose another --out",
                dir.display()
            )));
        }
        fs::create_dir_all(dir.join("traces"))
            .map_err(|e| Error::Environment(format!("{}: cannot create the run dir: {e}", dir.display())))?;
        Ok(RunDir { path: dir })
    }

    /// An existing run dir (it has a manifest.json).
    pub fn open(dir: &Path) -> Result<RunDir> {
        if !dir.is_dir() {
            return Err(Error::Input(format!("{}: not a run dir (no such directory)", dir.display())));
        }
        if !dir.join("manifest.json").is_file() {
            return Err(Error::Input(format!("{}: not a run dir (no manifest.json)", dir.display())));
        }
        Ok(RunDir { path: dir.to_path_buf() })
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    pub fn write_manifest(&self, m: &Manifest) -> Result<()> {
        write_json(&self.file("manifest.json"), m)
    }

    pub fn read_manifest(&self) -> Result<Manifest> {
        read_json(&self.file("manifest.json"))
    }

    /// Write summary.json (or any other JSON file of the run dir).
    pub fn write_json<T: serde::Serialize>(&self, name: &str, value: &T) -> Result<()> {
        write_json(&self.file(name), value)
    }

    /// trials.jsonl, opened for appending records as trials end.
    pub fn trials_writer(&self) -> Result<TrialsWriter> {
        let path = self.file("trials.jsonl");
        let file = File::create(&path).map_err(|e| Error::Environment(format!("{}: {e}", path.display())))?;
        Ok(TrialsWriter { file, path })
    }

    /// trials.jsonl, opened for appending after the records it holds (a resumed run).
    pub fn trials_appender(&self) -> Result<TrialsWriter> {
        let path = self.file("trials.jsonl");
        let file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| Error::Environment(format!("{}: {e}", path.display())))?;
        Ok(TrialsWriter { file, path })
    }

    /// Replace trials.jsonl with these lines, atomically: the old file stays
    /// whole until the new one is complete on disk.
    pub fn rewrite_trials(&self, lines: &[&str]) -> Result<()> {
        let path = self.file("trials.jsonl");
        let tmp = self.file("trials.jsonl.tmp");
        let env =
            |e: std::io::Error| Error::Environment(format!("{}: cannot rewrite trials.jsonl: {e}", path.display()));
        let mut f = File::create(&tmp).map_err(env)?;
        for l in lines {
            writeln!(f, "{l}").map_err(env)?;
        }
        f.sync_all().map_err(env)?;
        fs::rename(&tmp, &path).map_err(env)
    }

    /// Write a trial's trace to `rel` (a record's `trace` path).
    pub fn write_trace(&self, rel: &str, bytes: &[u8]) -> std::io::Result<()> {
        fs::write(self.path.join(rel), bytes)
    }

    /// The trace of a record, if its file is there and is a trace.
    pub fn read_trace(&self, rec: &TrialRecord) -> Option<Trace> {
        if !rec.trace.starts_with("traces/") || rec.trace.contains("..") {
            return None;
        }
        let text = fs::read_to_string(self.path.join(&rec.trace)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Stream trials.jsonl: each record with its line number, or the error
    /// (`file:line`) that makes the file unreadable as records.
    pub fn records(&self) -> Result<impl Iterator<Item = Result<(usize, String, TrialRecord)>> + use<>> {
        let path = self.file("trials.jsonl");
        let file = File::open(&path).map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
        Ok(BufReader::new(file).lines().enumerate().filter_map(move |(n, line)| {
            let line = match line {
                Ok(l) => l,
                Err(e) => return Some(Err(Error::Input(format!("{}:{}: {e}", path.display(), n + 1)))),
            };
            if line.trim().is_empty() {
                return None;
            }
            Some(
                serde_json::from_str::<TrialRecord>(&line)
                    .map(|r| (n + 1, line, r))
                    .map_err(|e| Error::Input(format!("{}:{}: not a trial record: {e}", path.display(), n + 1))),
            )
        }))
    }
}

/// Appends records to trials.jsonl, one flushed line each: a finished
/// trial's record is on disk before the next one is written.
pub struct TrialsWriter {
    file: File,
    path: PathBuf,
}

impl TrialsWriter {
    pub fn append(&mut self, rec: &TrialRecord) -> Result<()> {
        let line = serde_json::to_string(rec).map_err(|e| Error::Environment(e.to_string()))?;
        self.append_line(&line)
    }

    /// Append a line as written elsewhere (a merged part's record, kept byte for byte).
    pub fn append_line(&mut self, line: &str) -> Result<()> {
        writeln!(self.file, "{line}")
            .and_then(|_| self.file.flush())
            .map_err(|e| Error::Environment(format!("{}: cannot write trials.jsonl: {e}", self.path.display())))
    }
}
