//! The label store (SPEC §15): human labels as JSON Lines, by default
//! `labels/<suite name>.jsonl` beside the suite, one line per (item,
//! annotator, criterion), append-only. A later line from the same annotator
//! for the same (item, criterion) supersedes the earlier one.
//!
//! Appends never lose a line: each label is one `write` of one complete line
//! to a file opened with `O_APPEND`, under an exclusive lock on the file (so
//! two viewers, or a viewer and a script, labelling at once both keep
//! theirs), then synced to disk. A torn last line (a crash mid-write) is
//! closed off with a newline before the next one, so it never swallows it.
//!
//! The store is untrusted input when read back (anyone can edit it): a line
//! that is not a label is a warning with `file:line`, skipped, never a panic;
//! a line past [`MAX_LINE`] bytes is skipped without being held in memory.
//! `STORE.split.json` (the held-out share, [`Split`]) lives beside it.

use std::collections::HashMap;
use std::io::{BufRead, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::error::{Error, Result};
use crate::util::paths::display_path;

/// Lines longer than this are skipped (with a warning), never read whole.
pub const MAX_LINE: usize = 64 << 20;
/// Longest item id, annotator name and tag accepted.
const MAX_NAME: usize = 1_000;
/// Longest criterion text and note accepted.
const MAX_TEXT: usize = 100_000;

/// A human's verdict on one criterion (or on the item as a whole).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    /// Can't tell: kept in the store, left out of agreement and calibration (and counted).
    Unsure,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Unsure => "unsure",
        }
    }
    /// Pass → Some(true), fail → Some(false), unsure → None.
    pub fn passed(self) -> Option<bool> {
        match self {
            Verdict::Pass => Some(true),
            Verdict::Fail => Some(false),
            Verdict::Unsure => None,
        }
    }
}

/// One line of the store. `D` is the item's data: [`Json`] when it is
/// needed (calibration, export), [`IgnoredAny`] when only the verdicts are
/// (agreement, split: a 100,000-line store is then read without keeping
/// any trial's data).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Label<D = Json> {
    pub item: String,
    pub annotator: String,
    /// The rubric criterion's text; None labels the item as a whole.
    #[serde(default)]
    pub criterion: Option<String>,
    pub verdict: Verdict,
    /// Failure modes (the suite's monitors, or free tags).
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub note: String,
    /// The item as `evalua calibrate` reads it: input, answer, calls, messages, outbox (and rubric, case).
    #[serde(default)]
    pub data: D,
    #[serde(default)]
    pub run: Option<String>,
    #[serde(default)]
    pub trace_id: Option<String>,
    pub at: String,
}

/// A label without the item's data.
pub type Head = Label<IgnoredAny>;

fn bad_name(what: &str, s: &str) -> Option<String> {
    if s.trim().is_empty() {
        return Some(format!("'{what}' is empty"));
    }
    if s.len() > MAX_NAME {
        return Some(format!("'{what}' is longer than {MAX_NAME} bytes"));
    }
    if s.chars().any(char::is_control) {
        return Some(format!("'{what}' holds a control character"));
    }
    None
}

impl<D> Label<D> {
    /// Why this label cannot be used, if it cannot.
    pub fn problem(&self) -> Option<String> {
        if let Some(p) = bad_name("item", &self.item).or_else(|| bad_name("annotator", &self.annotator)) {
            return Some(p);
        }
        if let Some(c) = &self.criterion {
            if c.trim().is_empty() {
                return Some("'criterion' is empty (null labels the item as a whole)".into());
            }
            if c.len() > MAX_TEXT {
                return Some(format!("'criterion' is longer than {MAX_TEXT} bytes"));
            }
        }
        if self.note.len() > MAX_TEXT {
            return Some(format!("'note' is longer than {MAX_TEXT} bytes"));
        }
        self.tags.iter().find_map(|t| bad_name("tags", t))
    }

    /// What a later line supersedes: (item, annotator, criterion).
    pub fn key(&self) -> (&str, &str, Option<&str>) {
        (&self.item, &self.annotator, self.criterion.as_deref())
    }
}

/// A store read back: the labels that are usable, with their line numbers,
/// and a warning (`file:line: why`) for each line that is not.
#[derive(Debug)]
pub struct Store<D = Json> {
    pub path: PathBuf,
    pub labels: Vec<(usize, Label<D>)>,
    pub warnings: Vec<String>,
    /// Non-empty lines in the file.
    pub lines: usize,
}

/// Read a store. A missing or unreadable file is an input error; a bad line is a warning.
pub fn read<D: DeserializeOwned + Default>(path: &Path) -> Result<Store<D>> {
    let shown = display_path(path);
    let f = std::fs::File::open(path).map_err(|e| Error::Input(format!("{shown}: {e}")))?;
    let mut store = Store { path: path.to_path_buf(), labels: Vec::new(), warnings: Vec::new(), lines: 0 };
    let mut r = std::io::BufReader::with_capacity(1 << 16, f);
    let mut buf = Vec::new();
    let mut no = 0;
    loop {
        buf.clear();
        no += 1;
        let (n, too_long) = read_line(&mut r, &mut buf).map_err(|e| Error::Input(format!("{shown}:{no}: {e}")))?;
        if n == 0 {
            break;
        }
        if too_long {
            store.lines += 1;
            store.warnings.push(format!("{shown}:{no}: longer than {} MB: skipped", MAX_LINE >> 20));
            continue;
        }
        let text = buf.trim_ascii();
        if text.is_empty() {
            continue;
        }
        store.lines += 1;
        match serde_json::from_slice::<Label<D>>(text) {
            Ok(l) => match l.problem() {
                None => store.labels.push((no, l)),
                Some(p) => store.warnings.push(format!("{shown}:{no}: {p}: skipped")),
            },
            Err(e) => {
                let why = if serde_json::from_slice::<IgnoredAny>(text).is_ok() {
                    format!("not a label: {e}")
                } else {
                    format!("not JSON: {e}")
                };
                store.warnings.push(format!("{shown}:{no}: {why}: skipped"));
            }
        }
    }
    Ok(store)
}

/// Read one line into `buf` (without keeping more than MAX_LINE bytes):
/// (bytes consumed, whether the line was too long).
pub fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<(usize, bool)> {
    let mut consumed = 0;
    let mut too_long = false;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok((consumed, too_long));
        }
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if !too_long {
            if buf.len() + take > MAX_LINE {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(&chunk[..take]);
            }
        }
        r.consume(take);
        consumed += take;
        if done {
            return Ok((consumed, too_long));
        }
    }
}

impl<D> Store<D> {
    /// The labels in force: for each (item, annotator, criterion) the last
    /// line, in the order of their first line.
    pub fn current(&self) -> Vec<&Label<D>> {
        let mut at: HashMap<(&str, &str, Option<&str>), usize> = HashMap::new();
        let mut out: Vec<&Label<D>> = Vec::new();
        for (_, l) in &self.labels {
            match at.get(&l.key()) {
                Some(&i) => out[i] = l,
                None => {
                    at.insert(l.key(), out.len());
                    out.push(l);
                }
            }
        }
        out
    }
}

/// Append one label: one complete line, under an exclusive lock, synced.
pub fn append<D: Serialize>(path: &Path, label: &Label<D>) -> Result<()> {
    let env = |e: &dyn std::fmt::Display| {
        Error::Environment(format!("{}: cannot append to the label store: {e}", display_path(path)))
    };
    if let Some(p) = label.problem() {
        return Err(Error::Input(format!("label refused: {p}")));
    }
    let mut line = serde_json::to_vec(label).map_err(|e| env(&e))?;
    line.push(b'\n');
    if line.len() > MAX_LINE {
        return Err(Error::Input(format!("label refused: its line would be longer than {} MB", MAX_LINE >> 20)));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| env(&e))?;
    }
    let mut f = open_store(path, true).map_err(|e| env(&e))?;
    f.lock().map_err(|e| env(&e))?;
    let len = f.metadata().map_err(|e| env(&e))?.len();
    if len > 0 {
        let mut last = [0u8; 1];
        f.read_exact_at(&mut last, len - 1).map_err(|e| env(&e))?;
        if last[0] != b'\n' {
            // A torn line (a crash mid-write, a hand edit): end it, so ours stays whole.
            line.insert(0, b'\n');
        }
    }
    f.write_all(&line).map_err(|e| env(&e))?;
    f.sync_data().map_err(|e| env(&e))?;
    // The lock goes with the file.
    Ok(())
}

/// Open a store without following a symlink, neither the file's nor its
/// folder's, and without waiting on a FIFO (`O_NONBLOCK`): only a regular
/// file with one link is a store. A store's path may come from a run dir
/// (`evalua view`), and appending to what it links to could write anywhere.
/// `append`: read-write, appending, created when missing; else read-only.
pub fn open_store(path: &Path, append: bool) -> std::io::Result<std::fs::File> {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let invalid = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, what.to_string());
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| invalid("not a file name"))?;
    let c = |p: &std::ffi::OsStr| CString::new(p.as_bytes()).map_err(|_| invalid("a NUL in the path"));
    let (cdir, cname) = (c(dir.as_os_str())?, c(name)?);
    let refused = |e: std::io::Error, what: &str| match e.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::ENOTDIR) => invalid(&format!("{what} is a symlink (or not a folder): refused")),
        _ => e,
    };
    // SAFETY: a valid C string; the descriptor is owned at once.
    let d = unsafe { libc::open(cdir.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
    if d < 0 {
        return Err(refused(std::io::Error::last_os_error(), "its folder"));
    }
    let d = unsafe { OwnedFd::from_raw_fd(d) };
    let mode = if append { libc::O_RDWR | libc::O_APPEND | libc::O_CREAT } else { libc::O_RDONLY };
    let flags = mode | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    // SAFETY: as above; `d` outlives the call.
    let fd = unsafe { libc::openat(d.as_raw_fd(), cname.as_ptr(), flags, 0o644 as libc::c_uint) };
    if fd < 0 {
        return Err(refused(std::io::Error::last_os_error(), "the store"));
    }
    let f = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let m = f.metadata()?;
    if !m.file_type().is_file() {
        return Err(invalid("not a regular file: refused"));
    }
    if m.nlink() > 1 {
        return Err(invalid("a file with other links (a hard link): refused"));
    }
    Ok(f)
}

/// The store beside a suite: `labels/<suite name>.jsonl` in the suite's folder.
pub fn default_path(suite_dir: &Path, suite_name: &str) -> PathBuf {
    let safe: String =
        suite_name.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    suite_dir.join("labels").join(format!("{safe}.jsonl"))
}

/// The folder of the suite a store belongs to (where its `.evalua/` is):
/// the folder holding `labels/`, or else the store's own folder.
pub fn suite_dir_of(store: &Path) -> PathBuf {
    let dir = store.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    match dir.file_name() {
        Some(n) if n == "labels" => dir.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new(".")),
        _ => dir,
    }
    .to_path_buf()
}

/// `STORE.split.json`: the held-out items (SPEC §15).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Split {
    pub seed: u64,
    pub fraction: f64,
    pub held_out: Vec<String>,
}

pub fn split_path(store: &Path) -> PathBuf {
    let mut s = store.as_os_str().to_owned();
    s.push(".split.json");
    PathBuf::from(s)
}

/// The store's split, if it has one (a malformed file is an input error: it decides what is held out).
pub fn read_split(store: &Path) -> Result<Option<Split>> {
    let p = split_path(store);
    let shown = display_path(&p);
    let f = match std::fs::File::open(&p) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::Input(format!("{shown}: {e}"))),
    };
    let mut text = String::new();
    f.take(256 << 20).read_to_string(&mut text).map_err(|e| Error::Input(format!("{shown}: {e}")))?;
    let s: Split = serde_json::from_str(&text).map_err(|e| {
        Error::Input(format!("{shown}:{}: not a split ({{\"seed\", \"fraction\", \"held_out\"}}): {e}", e.line()))
    })?;
    if !(0.0..=1.0).contains(&s.fraction) {
        return Err(Error::Input(format!("{shown}: fraction {} is not between 0 and 1", s.fraction)));
    }
    Ok(Some(s))
}

pub fn write_split(store: &Path, split: &Split) -> Result<()> {
    crate::record::rundir::write_json_file(&split_path(store), split)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(item: &str, who: &str, criterion: Option<&str>, v: Verdict) -> Label {
        Label {
            item: item.into(),
            annotator: who.into(),
            criterion: criterion.map(String::from),
            verdict: v,
            tags: vec![],
            note: String::new(),
            data: serde_json::json!({ "answer": "x" }),
            run: None,
            trace_id: None,
            at: "2026-12-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn appends_read_back_and_later_lines_supersede() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("labels/s.jsonl");
        append(&p, &label("i1", "ana", Some("c"), Verdict::Pass)).unwrap();
        append(&p, &label("i1", "bo", Some("c"), Verdict::Fail)).unwrap();
        append(&p, &label("i1", "ana", Some("c"), Verdict::Unsure)).unwrap();
        append(&p, &label("i1", "ana", None, Verdict::Fail)).unwrap();
        let s: Store = read(&p).unwrap();
        assert_eq!(s.labels.len(), 4);
        let cur = s.current();
        assert_eq!(cur.len(), 3);
        assert_eq!((cur[0].annotator.as_str(), cur[0].verdict), ("ana", Verdict::Unsure));
        let first = std::fs::read_to_string(&p).unwrap().lines().next().unwrap().to_string();
        assert!(
            first.starts_with(r#"{"item":"i1","annotator":"ana","criterion":"c","verdict":"pass","tags":[]"#),
            "{first}"
        );
    }

    #[test]
    fn bad_lines_are_warnings_with_their_line_and_a_torn_line_does_not_swallow_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let good = serde_json::to_string(&label("i1", "ana", Some("c"), Verdict::Pass)).unwrap();
        let text = format!(
            "{good}\n{{not json\n\n{}\n{}\n[1,2]\n{}",
            good.replace("\"pass\"", "\"maybe\""),
            good.replace("\"ana\"", "\"\""),
            &good[..20]
        );
        std::fs::write(&p, text).unwrap();
        append(&p, &label("i2", "bo", None, Verdict::Fail)).unwrap();
        let s: Store<IgnoredAny> = read(&p).unwrap();
        let items: Vec<&str> = s.labels.iter().map(|(_, l)| l.item.as_str()).collect();
        assert_eq!(items, ["i1", "i2"], "{:?}", s.warnings);
        assert_eq!(s.labels[1].0, 8);
        let w = s.warnings.join("\n");
        assert!(w.contains("s.jsonl:2: not JSON"), "{w}");
        assert!(w.contains("s.jsonl:4: not a label") && w.contains("maybe"), "{w}");
        assert!(w.contains("s.jsonl:5: 'annotator' is empty"), "{w}");
        assert!(w.contains("s.jsonl:6: not a label"), "{w}");
        assert!(w.contains("s.jsonl:7: not JSON"), "{w}");
    }

    #[test]
    fn a_line_past_the_limit_is_skipped_unread() {
        let mut r = std::io::Cursor::new(format!("{}\nshort\n", "x".repeat(MAX_LINE + 10)).into_bytes());
        let mut buf = Vec::new();
        let (n, long) = read_line(&mut r, &mut buf).unwrap();
        assert!(long && n == MAX_LINE + 11 && buf.is_empty());
        buf.clear();
        assert_eq!(read_line(&mut r, &mut buf).unwrap(), (6, false));
        assert_eq!(buf, b"short\n");
    }

    #[test]
    fn where_stores_and_splits_live() {
        assert_eq!(default_path(Path::new("suites"), "refunds/x"), Path::new("suites/labels/refunds_x.jsonl"));
        assert_eq!(suite_dir_of(Path::new("suites/labels/r.jsonl")), Path::new("suites"));
        assert_eq!(suite_dir_of(Path::new("labels/r.jsonl")), Path::new("."));
        assert_eq!(suite_dir_of(Path::new("elsewhere/r.jsonl")), Path::new("elsewhere"));
        assert_eq!(split_path(Path::new("l/r.jsonl")), Path::new("l/r.jsonl.split.json"));
    }
}
