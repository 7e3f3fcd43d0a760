//! The run dir, written and read in one place:
//!
//! ```text
//! manifest.json   what the run was (written before the first trial)
//! trials.jsonl    one record per finished trial, appended and flushed as it ends
//! traces/         every trial's trace: traces.jsonl + index.jsonl (see `traces`)
//! summary.json    the figures (written at the end)
//! report.md  report.html  junit.xml
//! ```
//!
//! Failing to write is evalua's problem, not the user's (exit 3); a run dir
//! that cannot be read back as one is the user's input (exit 2).

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::manifest::Manifest;
use super::traces::{self, Index};
use super::trial::{Trace, TrialRecord};
use crate::error::{Error, Result};

/// A run dir on disk.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub path: PathBuf,
    store: Arc<Store>,
}

/// The trace store's open writer and its index as read back, each made on
/// first use and shared by the clones of one `RunDir`.
#[derive(Debug, Default)]
struct Store {
    writer: Mutex<Option<traces::Writer>>,
    index: OnceLock<std::result::Result<Index, String>>,
}

/// Where a trace is, for a report's link: the pack and the trace's line in it
/// (or the trace's own file, in a run dir of the earlier layout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceLink {
    pub file: String,
    pub line: Option<usize>,
}

impl std::fmt::Display for TraceLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(n) => write!(f, "{}#L{n}", self.file),
            None => f.write_str(&self.file),
        }
    }
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
        Ok(RunDir { path: dir, store: Arc::default() })
    }

    /// An existing run dir (it has a manifest.json).
    pub fn open(dir: &Path) -> Result<RunDir> {
        if !dir.is_dir() {
            return Err(Error::Input(format!("{}: not a run dir (no such directory)", dir.display())));
        }
        if !dir.join("manifest.json").is_file() {
            return Err(Error::Input(format!("{}: not a run dir (no manifest.json)", dir.display())));
        }
        Ok(RunDir { path: dir.to_path_buf(), store: Arc::default() })
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

    /// Store traces (each `(case, trial, compact JSON)`) and hand them to the
    /// OS before returning: a record written after this names a trace that is
    /// there. Every record's `trace` is [`traces::PACK`].
    pub fn write_traces(&self, batch: &[(&str, u32, &[u8])]) -> std::io::Result<()> {
        let mut w = self.store.writer.lock().unwrap_or_else(|p| p.into_inner());
        if w.is_none() {
            *w = Some(traces::Writer::open(&self.path)?);
        }
        let writer = w.as_mut().expect("opened above");
        for (case, trial, json) in batch {
            writer.append(case, *trial, json)?;
        }
        writer.flush()
    }

    /// Store one trial's trace (see [`RunDir::write_traces`]).
    pub fn write_trace(&self, trace: &Trace) -> std::io::Result<()> {
        let json = serde_json::to_vec(trace)?;
        self.write_traces(&[(&trace.case, trace.trial, &json)])
    }

    fn index(&self) -> std::result::Result<&Index, String> {
        self.store
            .index
            .get_or_init(|| Index::load(&self.path).map_err(|e| format!("{}: {e}", self.file(traces::INDEX).display())))
            .as_ref()
            .map_err(|e| e.clone())
    }

    /// The stored JSON of a trial's trace: Ok(None) when the run dir has none.
    pub fn trace_json(&self, case: &str, trial: u32) -> Result<Option<Vec<u8>>> {
        let index = self.index().map_err(Error::Input)?;
        let Some((offset, length, _)) = index.find(case, trial) else {
            // A run dir of the earlier layout: one file per trial.
            let legacy = traces::legacy_file(&self.path, &super::trial::trace_name(case, trial));
            return match legacy {
                Some(p) => fs::read(&p).map(Some).map_err(|e| Error::Input(format!("{}: {e}", p.display()))),
                None => Ok(None),
            };
        };
        traces::read_at(&self.path, offset, length)
            .map(Some)
            .map_err(|e| Error::Input(format!("{}: {e}", self.file(traces::PACK).display())))
    }

    /// A trial's trace, read back and checked to be that trial's: Ok(None)
    /// when the run dir has none, an error naming the file when it is not a trace.
    pub fn find_trace(&self, case: &str, trial: u32) -> Result<Option<Trace>> {
        let Some(bytes) = self.trace_json(case, trial)? else { return Ok(None) };
        let trace: Trace = serde_json::from_slice(&bytes).map_err(|e| {
            Error::Input(format!(
                "{}: the trace of {case}#{trial} is not a trace: {e}",
                self.file(traces::PACK).display()
            ))
        })?;
        if trace.case != case || trace.trial != trial {
            return Err(Error::Input(format!(
                "{}: the index points {case}#{trial} at the trace of {}#{}",
                self.file(traces::INDEX).display(),
                trace.case,
                trace.trial
            )));
        }
        Ok(Some(trace))
    }

    /// The trace of a record, if the run dir holds it and it is a trace.
    pub fn read_trace(&self, rec: &TrialRecord) -> Option<Trace> {
        if let Some(p) = traces::legacy_file(&self.path, &rec.trace) {
            return serde_json::from_str(&fs::read_to_string(p).ok()?).ok();
        }
        self.find_trace(&rec.case, rec.trial).ok().flatten()
    }

    /// Where a record's trace is, relative to the run dir, for a report's link.
    pub fn trace_link(&self, rec: &TrialRecord) -> TraceLink {
        if traces::legacy_file(&self.path, &rec.trace).is_some() {
            return TraceLink { file: rec.trace.clone(), line: None };
        }
        let line = self.index().ok().and_then(|i| i.find(&rec.case, rec.trial)).map(|(_, _, line)| line);
        TraceLink { file: traces::PACK.to_string(), line }
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

/// A trace named by a path, as labels files and the replay agent name one:
/// a trace file (as `evalua show --json` writes it, or a run dir of the
/// earlier layout kept), or `RUN_DIR/traces/<case>.<trial>.json`, the name a
/// trial's trace had before traces were packed, found in that run dir's store.
pub fn read_trace_file(path: &Path) -> Result<Trace> {
    let shown = crate::util::paths::display_path(path);
    if path.is_file() {
        let text = fs::read_to_string(path).map_err(|e| Error::Input(format!("{shown}: {e}")))?;
        return serde_json::from_str(&text).map_err(|e| Error::Input(format!("{shown}: not an evalua trace: {e}")));
    }
    let named = || -> Option<(PathBuf, String, u32)> {
        let parent = path.parent()?;
        if parent.file_name()? != "traces" {
            return None;
        }
        let stem = path.file_name()?.to_str()?.strip_suffix(".json")?;
        let (case, trial) = stem.rsplit_once('.')?;
        Some((parent.parent()?.to_path_buf(), case.to_string(), trial.parse().ok()?))
    };
    let Some((run, case, trial)) = named() else {
        return Err(Error::Input(format!("{shown}: no such trace file")));
    };
    RunDir::open(&run)?.find_trace(&case, trial)?.ok_or_else(|| {
        Error::Input(format!("{shown}: no such trace file, and no trace of {case}#{trial} in the run dir"))
    })
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
