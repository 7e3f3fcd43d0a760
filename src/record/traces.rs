//! A run dir's trace store: every trial's trace in one append-only JSON Lines
//! file, with an index beside it.
//!
//! ```text
//! traces/traces.jsonl   one trace per line (compact JSON), in the order trials finished
//! traces/index.jsonl    line n describes line n of traces.jsonl: {"case","trial","offset","length"}
//! ```
//!
//! Creating one file per trial made a run's speed depend on the disk's
//! journal (a 2,500-trial run took 1.2 s or 3 s); appending to two open files
//! does not, and a run of 100,000 trials is two files, not 100,000 entries in
//! one folder. A trace is appended (and handed to the OS) before its record
//! is written to trials.jsonl, so a record never names a trace that is not
//! there. Run dirs written before this layout (`traces/<case>.<trial>.json`,
//! one file per trial) are still read.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The packed traces, relative to the run dir (every record's `trace`).
pub const PACK: &str = super::files::TRACES;
/// The index of [`PACK`], relative to the run dir.
pub const INDEX: &str = super::files::TRACES_INDEX;

/// One line of `traces/index.jsonl`: where a trial's trace is in the pack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexEntry {
    pub case: String,
    pub trial: u32,
    /// Byte offset of the trace's line in traces.jsonl.
    pub offset: u64,
    /// Length of the trace's JSON in bytes (the newline not counted).
    pub length: u64,
}

/// Appends traces to the pack and the index. Both files only grow; a run
/// that stopped half-way through an append leaves at most a torn last line,
/// which [`Writer::open`] cuts off before appending again.
#[derive(Debug)]
pub struct Writer {
    pack: File,
    index: File,
    /// The pack's length: where the next trace starts.
    end: u64,
    /// Index lines buffered until the next flush.
    pending: Vec<u8>,
    /// Pack bytes buffered until the next flush.
    buf: Vec<u8>,
}

impl Writer {
    /// Open the store of the run dir at `dir` for appending, creating it if
    /// needed. A torn tail (an unindexed trace, a half-written index line) is
    /// cut off first, so every line of both files stays whole.
    pub fn open(dir: &Path) -> io::Result<Writer> {
        fs::create_dir_all(dir.join(super::files::TRACES_DIR))?;
        let index_path = dir.join(INDEX);
        let mut index = OpenOptions::new().read(true).append(true).create(true).open(&index_path)?;
        let mut pack = OpenOptions::new().read(true).append(true).create(true).open(dir.join(PACK))?;
        let (good_index, end) = whole_entries(&mut index)?;
        if index.metadata()?.len() != good_index {
            index.set_len(good_index)?;
        }
        if pack.metadata()?.len() != end {
            pack.set_len(end)?;
        }
        pack.seek(SeekFrom::End(0))?;
        Ok(Writer { pack, index, end, pending: Vec::new(), buf: Vec::new() })
    }

    /// Buffer one trace (compact JSON, no newline); [`Writer::flush`] writes it.
    pub fn append(&mut self, case: &str, trial: u32, json: &[u8]) -> io::Result<()> {
        if json.contains(&b'\n') {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "a packed trace must be one line of JSON"));
        }
        let offset = self.end + self.buf.len() as u64;
        self.buf.extend_from_slice(json);
        self.buf.push(b'\n');
        let entry = IndexEntry { case: case.to_string(), trial, offset, length: json.len() as u64 };
        serde_json::to_writer(&mut self.pending, &entry)?;
        self.pending.push(b'\n');
        Ok(())
    }

    /// Hand the buffered traces to the OS: the pack first, then the index, so
    /// an index line never points past the end of the pack.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.pack.write_all(&self.buf)?;
        self.end += self.buf.len() as u64;
        self.buf.clear();
        self.index.write_all(&self.pending)?;
        self.pending.clear();
        Ok(())
    }
}

/// Read the index from the start: the length of its whole, valid lines whose
/// traces lie within the pack (so the pack's good length is the end of the
/// last of them).
fn whole_entries(index: &mut File) -> io::Result<(u64, u64)> {
    index.seek(SeekFrom::Start(0))?;
    let mut reader = BufReader::new(&*index);
    let (mut good, mut end) = (0u64, 0u64);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 || line.last() != Some(&b'\n') {
            break;
        }
        match serde_json::from_slice::<IndexEntry>(&line) {
            Ok(e) if e.offset == end => {
                good += n as u64;
                end = e.offset + e.length + 1;
            }
            _ => break,
        }
    }
    Ok((good, end))
}

/// Where each trial's trace is in the pack: the last entry for a (case,
/// trial) wins. Loaded once per reader.
#[derive(Debug, Default)]
pub struct Index {
    entries: HashMap<(String, u32), (u64, u64, usize)>,
}

impl Index {
    /// The index of the store at `dir` (empty when there is none).
    pub fn load(dir: &Path) -> io::Result<Index> {
        let path = dir.join(INDEX);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Index::default()),
            Err(e) => return Err(e),
        };
        let mut entries = HashMap::new();
        for (n, line) in BufReader::new(file).lines().enumerate() {
            let line = line?;
            // A torn last line (a run that stopped mid-append) is not an entry.
            let Ok(e) = serde_json::from_str::<IndexEntry>(&line) else { continue };
            entries.insert((e.case, e.trial), (e.offset, e.length, n + 1));
        }
        Ok(Index { entries })
    }

    /// `(offset, length, line)` of a trial's trace in the pack.
    pub fn find(&self, case: &str, trial: u32) -> Option<(u64, u64, usize)> {
        self.entries.get(&(case.to_string(), trial)).copied()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Read `length` bytes at `offset` of the pack in `dir`.
pub fn read_at(dir: &Path, offset: u64, length: u64) -> io::Result<Vec<u8>> {
    let mut f = File::open(dir.join(PACK))?;
    f.seek(SeekFrom::Start(offset))?;
    let mut buf = Vec::with_capacity(length as usize);
    f.take(length).read_to_end(&mut buf)?;
    if buf.len() as u64 != length {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the trace pack is shorter than its index says"));
    }
    Ok(buf)
}

/// The per-trial trace file of the layout before the pack
/// (`traces/<case>.<trial>.json`), when `rel` names one that exists.
pub fn legacy_file(dir: &Path, rel: &str) -> Option<PathBuf> {
    let name = rel.strip_prefix(super::files::TRACES_DIR)?.strip_prefix('/')?;
    if rel == PACK || !name.ends_with(".json") || name.contains(['/', '\\']) || name.contains("..") {
        return None;
    }
    let p = dir.join(rel);
    p.is_file().then_some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_tail_is_cut_before_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Writer::open(dir.path()).unwrap();
        w.append("a", 1, br#"{"case":"a"}"#).unwrap();
        w.flush().unwrap();
        drop(w);
        // A run stopped half-way through the next append.
        let mut pack = OpenOptions::new().append(true).open(dir.path().join(PACK)).unwrap();
        pack.write_all(br#"{"case":"b","#).unwrap();
        let mut index = OpenOptions::new().append(true).open(dir.path().join(INDEX)).unwrap();
        index.write_all(br#"{"case":"b","tri"#).unwrap();
        let mut w = Writer::open(dir.path()).unwrap();
        w.append("c", 1, br#"{"case":"c"}"#).unwrap();
        w.flush().unwrap();
        let pack = fs::read_to_string(dir.path().join(PACK)).unwrap();
        assert_eq!(pack, "{\"case\":\"a\"}\n{\"case\":\"c\"}\n");
        let idx = Index::load(dir.path()).unwrap();
        assert_eq!(idx.len(), 2);
        let (off, len, line) = idx.find("c", 1).unwrap();
        assert_eq!(line, 2);
        assert_eq!(read_at(dir.path(), off, len).unwrap(), br#"{"case":"c"}"#);
        assert!(idx.find("b", 1).is_none());
    }

    #[test]
    fn a_multi_line_trace_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Writer::open(dir.path()).unwrap();
        assert!(w.append("a", 1, b"{\n}").is_err());
    }
}
