//! The run dir, written and read in one place:
//!
//! ```text
//! manifest.json   what the run was (written before the first trial)
//! trials.jsonl    one record per finished trial, appended and flushed as it ends
//! traces/         every trial's trace: traces.jsonl + index.jsonl (see `traces`);
//!                 and what each trial changed, kept apart:
//!                 <case>.<trial>.changeset (or .sqlite), <case>.<trial>.files/
//! summary.json    the figures (written at the end)
//! report.md  report.html  junit.xml
//! ```
//!
//! Failing to write is evalua's problem, not the user's (exit 3); a run dir
//! that cannot be read back as one is the user's input (exit 2).

use super::files::{self, RunDirFile};
use super::trials::TrialsWriter;
use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::manifest::Manifest;
use super::state::{DbChangeRecord, OwnedDir, StateError, StateRecord, safe_rel};
use super::trace::Trace;
use super::traces::{self, Index};
use super::trial::{TrialRecord, state_name};
use crate::error::{Error, Result};
use crate::util::digest::sha256_hex;
use crate::util::paths::confine;

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
    /// Read on first use, forgotten whenever traces are written.
    index: Mutex<Option<Arc<Index>>>,
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

/// A trial's change on its way to the run dir.
#[derive(Debug)]
pub enum KeptState {
    /// A trial that just ran: the database change's bytes and the final work
    /// dir the kept files are read from.
    Fresh { record: StateRecord, db: Option<Vec<u8>>, workdir: Option<OwnedDir> },
    /// A trial of another run dir, copied as it is (re-grading, merging).
    Copied { from: RunDir, case: String, trial: u32, record: StateRecord },
}

impl KeptState {
    pub fn record(&self) -> &StateRecord {
        match self {
            KeptState::Fresh { record, .. } | KeptState::Copied { record, .. } => record,
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

/// Write `value` as pretty JSON, its keys in declaration order. Streamed to a
/// temp file beside `path` and renamed over it: a 100,000-case summary never
/// exists as a whole in memory (a `serde_json::Value` of it took ~3.5 KB a
/// case), and a reader never sees half a file.
pub fn write_json<T: RunDirFile>(path: &Path, value: &T) -> Result<()> {
    write_streamed(path, |w| {
        serde_json::to_writer_pretty(w, value)
            .map_err(|e| Error::Environment(format!("{}: cannot write: {e}", path.display())))
    })
}

/// Write a JSON file that is not a run dir's (a calibration record, a label
/// store's split) as [`write_json`] writes a run dir's: pretty, replaced whole.
pub fn write_json_file<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    write_streamed(path, |w| {
        serde_json::to_writer_pretty(w, value)
            .map_err(|e| Error::Environment(format!("{}: cannot write: {e}", path.display())))
    })
}

/// Write a run-dir file as `fill` produces it: streamed into a temp file
/// beside `path` (0644, as fs::write makes it) and renamed over it, so the
/// whole text is never held in memory and a reader never sees half a file.
pub fn write_streamed(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<tempfile::NamedTempFile>) -> Result<()>,
) -> Result<()> {
    let env = |e: &dyn std::fmt::Display| Error::Environment(format!("{}: cannot write: {e}", path.display()));
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let tmp = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .tempfile_in(dir)
        .map_err(|e| env(&e))?;
    let mut w = std::io::BufWriter::with_capacity(256 << 10, tmp);
    fill(&mut w)?;
    let tmp = w.into_inner().map_err(|e| env(&e.into_error()))?;
    tmp.persist(path).map_err(|e| env(&e.error))?;
    Ok(())
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
        fs::create_dir_all(dir.join(files::TRACES_DIR))
            .map_err(|e| Error::Environment(format!("{}: cannot create the run dir: {e}", dir.display())))?;
        Ok(RunDir { path: dir, store: Arc::default() })
    }

    /// An existing run dir (it has a manifest.json).
    ///
    /// The top dir of an interleaved run is refused with the way to its agents' runs.
    pub fn open(dir: &Path) -> Result<RunDir> {
        if !dir.is_dir() {
            return Err(Error::Input(format!("{}: not a run dir (no such directory)", dir.display())));
        }
        if !files::is_run_dir(dir) {
            if files::is_interleaved(dir) {
                return Err(Error::Input(format!(
                    "{}: an interleaved run, not one agent's run dir: each agent's run is {}/<name> ({}); \
                     `evalua report {}` re-renders the side-by-side reports",
                    dir.display(),
                    dir.join(files::AGENTS_DIR).display(),
                    agent_names(dir).join(", "),
                    dir.display()
                )));
            }
            return Err(Error::Input(format!("{}: not a run dir (no {})", dir.display(), files::MANIFEST)));
        }
        Ok(RunDir { path: dir.to_path_buf(), store: Arc::default() })
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Write manifest.json, streamed from the struct (its keys in the
    /// struct's order): a manifest lists every case, and building it as a
    /// JSON tree first cost more memory than the whole plan at 100,000 cases.
    /// It is renamed into place whole ([`write_streamed`]): its presence is
    /// what makes a folder a run dir, so a reader that sees it (`evalua
    /// view`, a merge, the sweep of dead runs' databases) never reads half of it.
    pub fn write_manifest(&self, m: &Manifest) -> Result<()> {
        write_json(&self.file(files::MANIFEST), m)
    }

    pub fn read_manifest(&self) -> Result<Manifest> {
        let path = self.file(files::MANIFEST);
        let m: Manifest = read_json(&path)?;
        files::readable_format(&path, m.format)?;
        Ok(m)
    }

    /// Write summary.json (or any other JSON file of the run dir).
    pub fn write_json<T: RunDirFile>(&self, name: &str, value: &T) -> Result<()> {
        write_json(&self.file(name), value)
    }

    /// trials.jsonl, opened for appending records as trials end.
    pub fn trials_writer(&self) -> Result<TrialsWriter> {
        let path = self.file(files::TRIALS);
        let file = File::create(&path).map_err(|e| Error::Environment(format!("{}: {e}", path.display())))?;
        Ok(TrialsWriter::new(file, path, HashSet::new()))
    }

    /// trials.jsonl, opened for appending after the records it holds (a
    /// resumed run; `kept` lists them as (case, trial): they are announced
    /// again but not written again, see [`TrialsWriter::add`]).
    pub fn trials_appender(&self, kept: HashSet<(String, u32)>) -> Result<TrialsWriter> {
        let path = self.file(files::TRIALS);
        let file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| Error::Environment(format!("{}: {e}", path.display())))?;
        Ok(TrialsWriter::new(file, path, kept))
    }

    /// Replace trials.jsonl with these lines, atomically: the old file stays
    /// whole until the new one is complete on disk.
    pub fn rewrite_trials(&self, lines: &[&str]) -> Result<()> {
        let path = self.file(files::TRIALS);
        let tmp = self.file(files::TRIALS_TMP);
        let env = |e: std::io::Error| {
            Error::Environment(format!("{}: cannot rewrite {}: {e}", path.display(), files::TRIALS))
        };
        let mut f = File::create(&tmp).map_err(env)?;
        for l in lines {
            writeln!(f, "{l}").map_err(env)?;
        }
        f.sync_all().map_err(env)?;
        fs::rename(&tmp, &path).map_err(env)
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
        let flushed = writer.flush();
        // An index read before this write no longer tells the whole store.
        self.store.index.lock().unwrap_or_else(|p| p.into_inner()).take();
        flushed
    }

    /// Store one trial's trace (see [`RunDir::write_traces`]).
    pub fn write_trace(&self, trace: &Trace) -> std::io::Result<()> {
        let json = serde_json::to_vec(trace)?;
        self.write_traces(&[(&trace.record.case, trace.record.trial, &json)])
    }

    fn index(&self) -> std::result::Result<Arc<Index>, String> {
        let mut cached = self.store.index.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = &*cached {
            return Ok(i.clone());
        }
        let index =
            Arc::new(Index::load(&self.path).map_err(|e| format!("{}: {e}", self.file(traces::INDEX).display()))?);
        *cached = Some(index.clone());
        Ok(index)
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
        if trace.record.case != case || trace.record.trial != trial {
            return Err(Error::Input(format!(
                "{}: the index points {case}#{trial} at the trace of {}#{}",
                self.file(traces::INDEX).display(),
                trace.record.case,
                trace.record.trial
            )));
        }
        Ok(Some(trace))
    }

    /// The trace of a record, if the run dir holds it and it is a trace,
    /// carrying that record.
    pub fn read_trace(&self, rec: &TrialRecord) -> Option<Trace> {
        let found: Option<Trace> = match traces::legacy_file(&self.path, &rec.trace) {
            Some(p) => serde_json::from_str(&fs::read_to_string(p).ok()?).ok(),
            None => self.find_trace(&rec.case, rec.trial).ok().flatten(),
        };
        found.map(|t| Trace { record: rec.clone(), ..t })
    }

    /// Where a record's trace is, relative to the run dir, for a report's link.
    pub fn trace_link(&self, rec: &TrialRecord) -> TraceLink {
        if traces::legacy_file(&self.path, &rec.trace).is_some() {
            return TraceLink { file: rec.trace.clone(), line: None };
        }
        let line = self.index().ok().and_then(|i| i.find(&rec.case, rec.trial)).map(|(_, _, line)| line);
        TraceLink { file: traces::PACK.to_string(), line }
    }

    /// The trace of a record, carrying that record, or why it cannot be read (naming the file).
    pub fn load_trace(&self, rec: &TrialRecord) -> std::result::Result<Trace, String> {
        self.load_trace_file(rec).map(|t| Trace { record: rec.clone(), ..t })
    }

    fn load_trace_file(&self, rec: &TrialRecord) -> std::result::Result<Trace, String> {
        if !files::in_traces_dir(&rec.trace) {
            return Err(format!("trace path {:?} is not under traces/", rec.trace));
        }
        if let Some(path) = traces::legacy_file(&self.path, &rec.trace) {
            let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            return serde_json::from_str(&text)
                .map_err(|e| format!("{}:{}: not an evalua trace: {e}", path.display(), e.line()));
        }
        match self.find_trace(&rec.case, rec.trial) {
            Ok(Some(t)) => Ok(t),
            Ok(None) => Err(format!(
                "{}: no trace of {}#{} in the run dir",
                self.file(traces::PACK).display(),
                rec.case,
                rec.trial
            )),
            Err(e) => Err(e.to_string()),
        }
    }

    pub fn db_file(&self, case: &str, trial: u32, rec: &DbChangeRecord) -> PathBuf {
        self.path.join(format!("{}.{}", state_name(case, trial), rec.format.extension()))
    }

    pub fn files_dir(&self, case: &str, trial: u32) -> PathBuf {
        self.path.join(format!("{}.files", state_name(case, trial)))
    }

    /// Store what a trial changed: its database change as
    /// `traces/<case>.<trial>.changeset` (or `.sqlite`, a whole image) and its
    /// added or modified work-dir files under `traces/<case>.<trial>.files/`
    /// (deletions are listed in the trace). Nothing is written for a trial
    /// that changed nothing.
    pub fn write_state(&self, case: &str, trial: u32, kept: &KeptState) -> std::io::Result<()> {
        let rec = kept.record();
        // Regular files whose bytes were kept (not those over the caps).
        let regular = || rec.files.iter().filter(|f| f.symlink.is_none() && !f.skipped);
        match kept {
            KeptState::Fresh { db, workdir, .. } => {
                if let (Some(d), Some(bytes)) = (&rec.db, db) {
                    fs::write(self.db_file(case, trial, d), bytes)?;
                }
                if let Some(root) = workdir {
                    let dest = self.files_dir(case, trial);
                    for f in regular() {
                        copy_kept(&root.0.join(&f.path), &dest, &f.path)?;
                    }
                }
            }
            KeptState::Copied { from, case: from_case, trial: from_trial, .. } => {
                if let Some(d) = &rec.db {
                    link_or_copy(&from.db_file(from_case, *from_trial, d), &self.db_file(case, trial, d))?;
                }
                let src = from.files_dir(from_case, *from_trial);
                let dest = self.files_dir(case, trial);
                for f in regular() {
                    let from_file = confine(&src, &f.path).map_err(std::io::Error::other)?;
                    copy_kept(&from_file, &dest, &f.path)?;
                }
            }
        }
        Ok(())
    }

    /// The bytes of a trial's database change, checked against its trace's record.
    pub fn read_db_change(
        &self,
        case: &str,
        trial: u32,
        rec: &DbChangeRecord,
    ) -> std::result::Result<Vec<u8>, StateError> {
        let path = self.db_file(case, trial, rec);
        let shown = format!("{}", path.display());
        let bytes = fs::read(&path).map_err(|e| StateError(format!("{shown}: {e}")))?;
        if bytes.len() as u64 != rec.bytes || sha256_hex(&bytes) != rec.sha256 {
            return Err(StateError(format!(
                "{shown}: corrupt ({} bytes whose sha256 differs from the trace's record of {} bytes)",
                bytes.len(),
                rec.bytes
            )));
        }
        Ok(bytes)
    }

    /// Rebuild a trial's final work dir in `into` (a copy of the case's
    /// template tree): write its kept files, re-create its symlinks and remove
    /// what it deleted. Every path is confined to `into`; every file is
    /// checked against the sha256 its trace recorded.
    pub fn restore_files(
        &self,
        case: &str,
        trial: u32,
        rec: &StateRecord,
        into: &Path,
    ) -> std::result::Result<(), StateError> {
        let src = self.files_dir(case, trial);
        let shown = |rel: &str| format!("{}/{rel}", src.display());
        let bad = |rel: &str, why: String| StateError(format!("{}: {why}", shown(rel)));
        for f in &rec.files {
            if !safe_rel(&f.path) {
                return Err(StateError(format!("{}: kept path {:?} leaves the work dir", src.display(), f.path)));
            }
            let dest = confine(into, &f.path).map_err(|e| bad(&f.path, e))?;
            if let Some(parent) = dest.parent() {
                fs::create_dir_all(parent).map_err(|e| bad(&f.path, e.to_string()))?;
            }
            if let Ok(m) = fs::symlink_metadata(&dest) {
                let gone = if m.is_dir() { fs::remove_dir_all(&dest) } else { fs::remove_file(&dest) };
                gone.map_err(|e| bad(&f.path, e.to_string()))?;
            }
            if let Some(target) = &f.symlink {
                std::os::unix::fs::symlink(target, &dest).map_err(|e| bad(&f.path, e.to_string()))?;
                continue;
            }
            if f.skipped {
                let size = f.size.map(|n| format!(" of {n} bytes")).unwrap_or_default();
                return Err(bad(
                    &f.path,
                    format!(
                        "the trial's file{size} was not kept (over sandbox.max_file_mb or max_trial_mb): its final tree cannot be rebuilt"
                    ),
                ));
            }
            let from = confine(&src, &f.path).map_err(|e| bad(&f.path, e))?;
            let regular = fs::symlink_metadata(&from).map(|m| m.is_file()).unwrap_or(false);
            if !regular {
                return Err(bad(&f.path, "missing (or not a regular file)".into()));
            }
            let bytes = fs::read(&from).map_err(|e| bad(&f.path, e.to_string()))?;
            if f.sha256.as_deref() != Some(sha256_hex(&bytes).as_str()) {
                return Err(bad(&f.path, "corrupt (its sha256 differs from the trace's record)".into()));
            }
            fs::write(&dest, &bytes).map_err(|e| bad(&f.path, e.to_string()))?;
            if f.exec {
                use std::os::unix::fs::PermissionsExt;
                let _ = fs::set_permissions(&dest, fs::Permissions::from_mode(0o755));
            }
        }
        for rel in &rec.deleted {
            if !safe_rel(rel) {
                return Err(StateError(format!("{}: deleted path {rel:?} leaves the work dir", src.display())));
            }
            let p = confine(into, rel).map_err(|e| bad(rel, e))?;
            if let Ok(m) = fs::symlink_metadata(&p) {
                let gone = if m.is_dir() { fs::remove_dir_all(&p) } else { fs::remove_file(&p) };
                gone.map_err(|e| bad(rel, format!("cannot delete: {e}")))?;
            }
        }
        Ok(())
    }

    /// Stream trials.jsonl from byte `offset` (0, or where an earlier read
    /// stopped), line numbers counted from `line`: each record with where its
    /// line lies in the file, so it can be read again alone ([`RunDir::record_at`])
    /// and a file still being written can be followed. A last line without
    /// its newline that does not parse is taken as one still being written:
    /// the reading stops before it, without an error.
    pub fn records_from(&self, offset: u64, line: usize) -> Result<RecordsFrom> {
        use std::io::{Seek, SeekFrom};
        let path = self.file(files::TRIALS);
        let mut file = File::open(&path).map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
        // Resuming right after a line taken without its newline: that newline ends no new line.
        let mut mid_line = false;
        if offset > 0 {
            let mut prev = [0u8];
            file.seek(SeekFrom::Start(offset - 1))
                .and_then(|_| std::io::Read::read_exact(&mut file, &mut prev))
                .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
            mid_line = prev[0] != b'\n';
        }
        file.seek(SeekFrom::Start(offset)).map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
        Ok(RecordsFrom { reader: BufReader::new(file), path, offset, line, buf: Vec::new(), done: false, mid_line })
    }

    /// The record whose line starts at byte `offset` and is `len` bytes long.
    pub fn record_at(&self, offset: u64, len: usize) -> Result<TrialRecord> {
        self.record_file()?.read(offset, len)
    }

    /// trials.jsonl opened once, to read many records again by their place.
    pub fn record_file(&self) -> Result<RecordFile> {
        let path = self.file(files::TRIALS);
        let file = File::open(&path).map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
        Ok(RecordFile { path, file: std::cell::RefCell::new(file), buf: Default::default() })
    }

    /// As [`records`](Self::records), with where each line lies (for
    /// [`record_at`](Self::record_at) to read it again later).
    pub fn records_at(&self) -> Result<impl Iterator<Item = Result<RecordAt>> + use<>> {
        let path = self.file(files::TRIALS);
        let file = File::open(&path).map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
        let mut reader = BufReader::new(file);
        let (mut offset, mut line, mut buf) = (0u64, 0usize, Vec::new());
        Ok(std::iter::from_fn(move || {
            loop {
                buf.clear();
                let n = match reader.read_until(b'\n', &mut buf) {
                    Ok(0) => return None,
                    Ok(n) => n,
                    Err(e) => return Some(Err(Error::Input(format!("{}:{}: {e}", path.display(), line + 1)))),
                };
                let start = offset;
                offset += n as u64;
                line += 1;
                let mut text = &buf[..];
                while let [rest @ .., b'\n' | b'\r'] = text {
                    text = rest;
                }
                if text.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Some(
                    serde_json::from_slice::<TrialRecord>(text)
                        .map(|record| RecordAt { offset: start, len: text.len(), line, text: text.to_vec(), record })
                        .map_err(|e| Error::Input(format!("{}:{line}: not a trial record: {e}", path.display()))),
                );
            }
        }))
    }

    /// Stream trials.jsonl: each record with its line number and text, or the
    /// error (`file:line`) that makes the file unreadable as records.
    pub fn records(&self) -> Result<impl Iterator<Item = Result<(usize, String, TrialRecord)>> + use<>> {
        Ok(self.records_at()?.map(|r| {
            r.map(|a| {
                // A line that parsed as JSON is UTF-8.
                let text = String::from_utf8(a.text).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into());
                (a.line, text, a.record)
            })
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
        if parent.file_name()? != files::TRACES_DIR {
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

/// Copy one kept file to `dest_root/rel`, creating its folders.
fn copy_kept(from: &Path, dest_root: &Path, rel: &str) -> std::io::Result<()> {
    if !safe_rel(rel) {
        return Err(std::io::Error::other(format!("kept path {rel:?} leaves the work dir")));
    }
    let dest = dest_root.join(rel);
    if let Some(parent) = dest.parent() {
        fs::create_dir_all(parent)?;
    }
    crate::util::tree::copy_file(from, &dest)
}

/// Hard-link `from` to `to` (kept files never change), else copy it.
fn link_or_copy(from: &Path, to: &Path) -> std::io::Result<()> {
    if fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    fs::copy(from, to).map(|_| ())
}

/// trials.jsonl, open to read records again by their place ([`RecordAt`]'s
/// offset and length): see [`RunDir::record_file`].
pub struct RecordFile {
    path: PathBuf,
    file: std::cell::RefCell<File>,
    buf: std::cell::RefCell<Vec<u8>>,
}

impl RecordFile {
    /// The record whose line starts at byte `offset` and is `len` bytes long.
    pub fn read(&self, offset: u64, len: usize) -> Result<TrialRecord> {
        use std::io::{Read, Seek, SeekFrom};
        let (mut file, mut buf) = (self.file.borrow_mut(), self.buf.borrow_mut());
        buf.resize(len, 0);
        file.seek(SeekFrom::Start(offset))
            .and_then(|_| file.read_exact(&mut buf))
            .map_err(|e| Error::Input(format!("{}: {e}", self.path.display())))?;
        serde_json::from_slice(&buf)
            .map_err(|e| Error::Input(format!("{} (byte {offset}): not a trial record: {e}", self.path.display())))
    }
}

/// One record of trials.jsonl and where its line lies.
pub struct RecordAt {
    /// Byte offset of the line's start, and its length without the newline.
    pub offset: u64,
    pub len: usize,
    /// 1-based line number.
    pub line: usize,
    /// The line's bytes (without the newline).
    pub text: Vec<u8>,
    pub record: TrialRecord,
}

/// See [`RunDir::records_from`]. After the iterator ends, `offset` and `line`
/// say where the next read should start.
pub struct RecordsFrom {
    reader: BufReader<File>,
    path: PathBuf,
    pub offset: u64,
    pub line: usize,
    buf: Vec<u8>,
    done: bool,
    mid_line: bool,
}

impl Iterator for RecordsFrom {
    type Item = Result<RecordAt>;

    fn next(&mut self) -> Option<Result<RecordAt>> {
        while !self.done {
            self.buf.clear();
            let n = match self.reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => {
                    self.done = true;
                    return None;
                }
                Ok(n) => n,
                Err(e) => {
                    self.done = true;
                    return Some(Err(Error::Input(format!("{}:{}: {e}", self.path.display(), self.line + 1))));
                }
            };
            let terminated = self.buf.last() == Some(&b'\n');
            let mut text = &self.buf[..];
            while let [rest @ .., b'\n' | b'\r'] = text {
                text = rest;
            }
            let start = self.offset;
            let mid_line = std::mem::take(&mut self.mid_line);
            if text.iter().all(u8::is_ascii_whitespace) {
                self.offset += n as u64;
                self.line += (terminated && !mid_line) as usize;
                continue;
            }
            let parsed = serde_json::from_slice::<TrialRecord>(text);
            if !terminated && parsed.is_err() {
                // Still being written: leave it for the next read.
                self.done = true;
                return None;
            }
            self.offset += n as u64;
            self.line += 1;
            return Some(match parsed {
                Ok(record) => {
                    Ok(RecordAt { offset: start, len: text.len(), line: self.line, text: text.to_vec(), record })
                }
                Err(e) => {
                    self.done = true;
                    Err(Error::Input(format!("{}:{}: not a trial record: {e}", self.path.display(), self.line)))
                }
            });
        }
        None
    }
}

/// The agents of an interleaved run's top dir: the folders under `agents/`, sorted.
fn agent_names(top: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(top.join(files::AGENTS_DIR))
        .map(|d| {
            d.flatten().filter(|e| e.path().is_dir()).map(|e| e.file_name().to_string_lossy().into_owned()).collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// summary.json is replaced whole (a temp file renamed over it), readable
    /// by others as `fs::write` made it, and no temp file is left behind.
    #[test]
    fn a_manifest_reads_typed_and_a_newer_format_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        // As evalua wrote it before the format was numbered and the agent and judges typed.
        let old = r#"{"evalua_version":"0.1.0","run_id":"r","suite":{"name":"s"},"cases":[],"seed":7,
            "agent":{"cmd":["python3","bot.py"],"kind":"command","name":"gold","program":{"executable":{"path":"/usr/bin/python3","sha256":"ab"},"files":[]}},
            "judges":[{"cache":"off","calibration":"none","calibration_kappa":null,"cases":["a"],"criteria":["polite"],
                       "judge":"openai/m","models":[],"name":"tone","prompt_sha256":"cd","reachable":false,"type":"rubric"}]}"#;
        fs::write(dir.path().join(files::MANIFEST), old).unwrap();
        let run = RunDir::open(dir.path()).unwrap();
        let m = run.read_manifest().unwrap();
        assert_eq!(m.format, 0);
        let agent = m.agent.as_ref().unwrap();
        assert_eq!(agent.name.as_deref(), Some("gold"));
        assert_eq!(agent.declared["kind"], "command");
        assert_eq!(agent.program.as_ref().unwrap().executable.as_ref().unwrap().path, "/usr/bin/python3");
        assert_eq!((m.judges[0].name.as_str(), m.judges[0].kind.as_str()), ("tone", "rubric"));
        assert_eq!(m.judges[0].criteria.as_deref(), Some(&["polite".to_string()][..]));
        // Written back: the same keys.
        let back: serde_json::Value = serde_json::to_value(&m).unwrap();
        let was: serde_json::Value = serde_json::from_str(old).unwrap();
        assert_eq!(back["agent"], was["agent"]);
        assert_eq!(back["judges"], was["judges"]);
        // A newer format: refused, saying so.
        fs::write(dir.path().join(files::MANIFEST), old.replacen("\"seed\":7", "\"seed\":7,\"format\":99", 1)).unwrap();
        let err = run.read_manifest().unwrap_err().to_string();
        assert!(err.contains("format 99") && err.contains("newer evalua"), "{err}");
    }

    #[test]
    fn write_json_replaces_the_file_whole_with_mode_0644() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(files::SUMMARY);
        fs::write(&path, "old and longer than the new content").unwrap();
        #[derive(serde::Serialize)]
        struct Small {
            b: u32,
            a: Vec<bool>,
        }
        impl RunDirFile for Small {}
        write_json(&path, &Small { b: 1, a: vec![true] }).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\n  \"b\": 1,\n  \"a\": [\n    true\n  ]\n}");
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "a temp file was left behind");
        // A folder that does not exist: an error naming the file.
        let err =
            write_json(&dir.path().join("gone/summary.json"), &Small { b: 1, a: vec![] }).unwrap_err().to_string();
        assert!(err.contains("gone/summary.json"), "{err}");
    }
}
