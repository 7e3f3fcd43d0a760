//! The records of a trace file, for `read.rs`'s two passes: the lines of a
//! JSON-lines file or the values of one document, each cut out without
//! holding more than [`MAX_RECORD_BYTES`], the file hashed as it is read,
//! and (`par_records`) parsed on worker threads, handed on in file order.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::{Mutex, mpsc};

use serde::de::IgnoredAny;
use sha2::{Digest, Sha256};

use super::stream::dense;
use crate::error::{Error, Result};

/// A record (line, or value of a one-document file) larger than this is not read.
pub const MAX_RECORD_BYTES: usize = 64 << 20;
/// A file that is one JSON document (not JSON lines) larger than this is not read.
const MAX_DOCUMENT_BYTES: u64 = 256 << 20;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    Otlp,
    Flat,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    Lines,
    Document,
}

/// A line reader that never holds more than [`MAX_RECORD_BYTES`] of a line
/// and, in the first pass, hashes every byte it reads.
pub(super) struct Lines {
    r: BufReader<File>,
    buf: Vec<u8>,
    line: usize,
    /// None in the second pass: the first one hashed the file (for the manifest).
    hasher: Option<Sha256>,
    bytes: u64,
}

pub(super) enum LineRead {
    Line(usize),
    TooLong(usize, u64),
}

impl Lines {
    fn open(p: &Path, hash: bool) -> std::io::Result<Lines> {
        Ok(Lines {
            r: BufReader::with_capacity(1 << 20, File::open(p)?),
            buf: Vec::new(),
            line: 0,
            hasher: hash.then(Sha256::new),
            bytes: 0,
        })
    }

    /// The next line into `self.buf` (without its line end), or None at the end.
    fn next_line(&mut self) -> std::io::Result<Option<LineRead>> {
        self.buf.clear();
        let mut total = 0u64;
        let mut any = false;
        loop {
            let chunk = self.r.fill_buf()?;
            if chunk.is_empty() {
                break;
            }
            any = true;
            let (take, done) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            if let Some(h) = &mut self.hasher {
                h.update(&chunk[..take]);
            }
            self.bytes += take as u64;
            total += take as u64;
            if self.buf.len() < MAX_RECORD_BYTES + 2 {
                let room = (MAX_RECORD_BYTES + 2 - self.buf.len()).min(take);
                self.buf.extend_from_slice(&chunk[..room]);
            }
            self.r.consume(take);
            if done {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.line += 1;
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        if total > MAX_RECORD_BYTES as u64 + 2 {
            self.buf.clear();
            return Ok(Some(LineRead::TooLong(self.line, total)));
        }
        Ok(Some(LineRead::Line(self.line)))
    }
}

/// What a file's records are and how they are laid out, from its first
/// non-blank line: a line that is a JSON object is JSON lines; otherwise the
/// file is read as one JSON document (a pretty-printed request).
pub(super) fn sniff(p: &Path) -> std::io::Result<(Layout, Option<Shape>)> {
    let mut lines = Lines::open(p, false)?;
    while let Some(r) = lines.next_line()? {
        let LineRead::Line(_) = r else { return Ok((Layout::Lines, None)) };
        let text = String::from_utf8_lossy(&lines.buf);
        let t = text.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(shape) = object_shape(t.as_bytes()) {
            return Ok((Layout::Lines, Some(shape)));
        }
        if t == "{"
            || t == "["
            || (t.starts_with('{') && !t.ends_with('}'))
            || (t.starts_with('[') && !t.ends_with(']'))
        {
            return Ok((Layout::Document, None));
        }
        return Ok((Layout::Lines, None));
    }
    Ok((Layout::Lines, None))
}

/// The shape of a record that is a JSON object, from its keys alone (never
/// its values as a tree: a 64 MB line of small values would cost gigabytes);
/// None when it is not an object. A record too dense to read is taken as OTLP
/// (it is skipped, with a warning, when read).
pub(super) fn object_shape(rec: &[u8]) -> Option<Shape> {
    if rec.trim_ascii_start().first() != Some(&b'{') {
        return None;
    }
    if dense(rec).is_some() {
        return Some(Shape::Otlp);
    }
    let keys: HashMap<Cow<'_, str>, IgnoredAny> = serde_json::from_slice(rec).ok()?;
    let has = |k: &[&str]| k.iter().any(|k| keys.contains_key(*k));
    Some(if has(&["resourceSpans", "resource_spans"]) {
        Shape::Otlp
    } else if has(&["trace_id", "traceId"]) && has(&["span_id", "spanId"]) {
        Shape::Flat
    } else {
        Shape::Otlp
    })
}

/// Call `f(line, record)` for every record of a file; report the records
/// that cannot even be cut out (too long, truncated, not JSON) to `warn`.
/// Hand each record of `p` to `f`; returns the file's sha256 (empty unless
/// `hash`) and size.
pub(super) fn for_each_record(
    p: &Path,
    display: &str,
    layout: Layout,
    hash: bool,
    warn: &mut dyn FnMut(String),
    f: &mut dyn FnMut(usize, &[u8]) -> Result<()>,
) -> Result<(String, u64)> {
    let io = |e: std::io::Error| Error::Input(format!("{display}: cannot read: {e}"));
    match layout {
        Layout::Lines => {
            let mut lines = Lines::open(p, hash).map_err(io)?;
            while let Some(r) = lines.next_line().map_err(io)? {
                match r {
                    LineRead::TooLong(n, size) => warn(format!(
                        "{display}:{n}: a line of {:.0} MB, more than the {} MiB a record may have: skipped",
                        size as f64 / 1e6,
                        MAX_RECORD_BYTES >> 20
                    )),
                    LineRead::Line(n) => {
                        if lines.buf.iter().all(|b| b.is_ascii_whitespace()) {
                            continue;
                        }
                        if let Some(why) = dense(&lines.buf) {
                            warn(format!("{display}:{n}: {why}: skipped"));
                            continue;
                        }
                        let buf = std::mem::take(&mut lines.buf);
                        let out = f(n, &buf);
                        lines.buf = buf;
                        out?;
                    }
                }
            }
            Ok((lines.hasher.map(|h| const_hex::encode(h.finalize())).unwrap_or_default(), lines.bytes))
        }
        Layout::Document => {
            let size = std::fs::metadata(p).map_err(io)?.len();
            if size > MAX_DOCUMENT_BYTES {
                warn(format!(
                    "{display}: one JSON document of {:.0} MB: too large to read at once (write JSON lines, one request per line)",
                    size as f64 / 1e6
                ));
                return Ok((String::new(), size));
            }
            let mut bytes = Vec::with_capacity(size as usize);
            File::open(p).and_then(|mut fh| fh.read_to_end(&mut bytes)).map_err(io)?;
            let sha = if hash { const_hex::encode(Sha256::digest(&bytes)) } else { String::new() };
            // Lines counted as the records go (they come in order): never from the start again.
            let (mut counted_to, mut line) = (0usize, 1usize);
            let mut line_at = |off: usize| {
                line += bytes[counted_to..off].iter().filter(|&&b| b == b'\n').count();
                counted_to = off;
                line
            };
            let mut stream = serde_json::Deserializer::from_slice(&bytes).into_iter::<IgnoredAny>();
            loop {
                let start = stream.byte_offset();
                match stream.next() {
                    None => break,
                    Some(Ok(_)) => {
                        let end = stream.byte_offset();
                        let rec = &bytes[start..end];
                        let trimmed = rec.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(0);
                        let at = line_at(start + trimmed);
                        if rec.get(trimmed) == Some(&b'[') {
                            // An array of records (requests or spans), one element at a time.
                            let mut each = |i: usize, raw: &serde_json::value::RawValue| -> Result<()> {
                                match dense(raw.get().as_bytes()) {
                                    Some(why) => {
                                        warn(format!("{display}:{at}: element {i}: {why}: skipped"));
                                        Ok(())
                                    }
                                    None => f(at, raw.get().as_bytes()),
                                }
                            };
                            match super::stream::each_element(rec, &mut each) {
                                Ok(done) => done?,
                                Err(e) => warn(format!("{display}:{at}: {e}")),
                            }
                        } else if let Some(why) = dense(&rec[trimmed..]) {
                            warn(format!("{display}:{at}: {why}: skipped"));
                        } else {
                            f(at, &rec[trimmed..])?;
                        }
                    }
                    Some(Err(e)) => {
                        let what =
                            if e.is_eof() { "the file ends inside a JSON value (truncated)" } else { "not JSON" };
                        warn(format!("{display}:{}: {what}: {e}", e.line()));
                        break;
                    }
                }
            }
            Ok((sha, size))
        }
    }
}

/// What the parsing threads hand back for one record, in file order.
pub(super) enum Parsed<T> {
    Record(usize, T),
    /// A record that could not even be cut out (too long, not JSON): its warning.
    Cut(String),
    /// Parsing this record (at this line) panicked: a bug in evalua, said as a warning.
    Panicked(usize),
}

pub(super) enum Cut {
    Record(usize, Vec<u8>),
    Warn(String),
}

/// As [`for_each_record`], but `parse` runs on `workers` threads while the
/// file is still being read (and hashed), and `consume` gets the results in
/// file order on the calling thread. Parsing the JSON is most of the cost of
/// reading a trace file; on one thread it kept the graders waiting. Records
/// travel in chunks of about 256 KiB (or one larger record), and at most
/// `2 × workers` chunks are in flight (read, parsed or waiting for their
/// turn), so memory stays bounded.
pub(super) fn par_records<T: Send>(
    p: &Path,
    display: &str,
    layout: Layout,
    hash: bool,
    workers: usize,
    parse: &(dyn Fn(&[u8]) -> T + Sync),
    consume: &mut dyn FnMut(Parsed<T>) -> Result<()>,
) -> Result<(String, u64)> {
    const CHUNK_BYTES: usize = 256 << 10;
    const CHUNK_RECORDS: usize = 256;
    let workers = workers.max(1);
    let in_flight = workers * 2;
    let stopped = || Error::Environment("reading traces: the parsing threads stopped".into());
    // A permit per chunk in flight: the reader takes one before it sends
    // a chunk, and gets it back when the chunk has been consumed.
    let (permit_tx, permit_rx) = mpsc::sync_channel::<()>(in_flight);
    for _ in 0..in_flight {
        let _ = permit_tx.try_send(());
    }
    let (work_tx, work_rx) = mpsc::sync_channel::<(usize, Vec<Cut>)>(in_flight);
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = mpsc::channel::<(usize, Vec<Parsed<T>>)>();
    std::thread::scope(|scope| {
        let reader = scope.spawn(move || -> Result<(String, u64)> {
            let chunk = std::cell::RefCell::new((Vec::<Cut>::new(), 0usize));
            let mut seq = 0usize;
            let mut flush = |force: bool| -> Result<()> {
                let mut c = chunk.borrow_mut();
                if c.0.is_empty() || (!force && c.0.len() < CHUNK_RECORDS && c.1 < CHUNK_BYTES) {
                    return Ok(());
                }
                let list = std::mem::take(&mut c.0);
                c.1 = 0;
                permit_rx.recv().map_err(|_| stopped())?;
                work_tx.send((seq, list)).map_err(|_| stopped())?;
                seq += 1;
                Ok(())
            };
            let mut warn = |w: String| chunk.borrow_mut().0.push(Cut::Warn(w));
            let out = for_each_record(p, display, layout, hash, &mut warn, &mut |line, rec| {
                {
                    let mut c = chunk.borrow_mut();
                    c.0.push(Cut::Record(line, rec.to_vec()));
                    c.1 += rec.len();
                }
                flush(false)
            })?;
            flush(true)?;
            Ok(out)
        });
        for _ in 0..workers {
            let (rx, tx) = (&work_rx, done_tx.clone());
            scope.spawn(move || {
                loop {
                    let next = rx.lock().map(|r| r.recv());
                    let Ok(Ok((seq, list))) = next else { break };
                    let parsed = list
                        .into_iter()
                        .map(|c| match c {
                            Cut::Warn(w) => Parsed::Cut(w),
                            Cut::Record(line, rec) => {
                                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| parse(&rec))) {
                                    Ok(t) => Parsed::Record(line, t),
                                    Err(_) => Parsed::Panicked(line),
                                }
                            }
                        })
                        .collect();
                    if tx.send((seq, parsed)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);

        let mut waiting: BTreeMap<usize, Vec<Parsed<T>>> = BTreeMap::new();
        let mut next = 0usize;
        let mut failure = None;
        'recv: for (seq, list) in &done_rx {
            waiting.insert(seq, list);
            while let Some(list) = waiting.remove(&next) {
                next += 1;
                for item in list {
                    if let Err(e) = consume(item) {
                        failure = Some(e);
                        break 'recv;
                    }
                }
                let _ = permit_tx.try_send(());
            }
        }
        // On a failure the reader, waiting for a permit, and the parsers,
        // sending into a closed channel, stop.
        drop(permit_tx);
        drop(done_rx);
        let read = reader.join().unwrap_or_else(|_| Err(Error::Environment("reading traces: internal error".into())));
        match failure {
            Some(e) => Err(e),
            None => read,
        }
    })
}

/// The shape of a file's first record, for files whose first line did not say.
pub(super) fn first_record_shape(p: &Path, display: &str, layout: Layout) -> Shape {
    let mut shape = None;
    let mut ignore = |_: String| {};
    let _ = for_each_record(p, display, layout, false, &mut ignore, &mut |_, rec| {
        shape = Some(object_shape(rec).unwrap_or(Shape::Otlp));
        Err(Error::Input(String::new())) // stop at the first record
    });
    shape.unwrap_or(Shape::Otlp)
}
