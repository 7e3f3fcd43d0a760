//! Dataset files: the rows of a JSON Lines file, a JSON array or a CSV file
//! (header row = keys, values as strings), streamed one at a time, each with
//! where it is in the file, so that an error names `file:line` and the
//! column, and a row can be read again later without reading the whole file.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use serde_json::{Map, Value as Json};
use sha2::{Digest, Sha256};

use super::digest::hex;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Jsonl,
    Json,
    Csv,
}

impl Format {
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "jsonl" | "ndjson" => Some(Format::Jsonl),
            "json" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            _ => None,
        }
    }

    /// The format a file's extension names (`.jsonl`/`.ndjson`, `.json`, `.csv`).
    pub fn from_path(path: &Path) -> Option<Format> {
        Format::from_name(&path.extension()?.to_str()?.to_ascii_lowercase())
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Json => "json",
            Format::Csv => "csv",
        }
    }
}

/// Where a row is in its file: the line it starts on (1-based) and its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowPos {
    pub line: u64,
    pub offset: u64,
    pub length: u64,
}

/// A row that cannot be read: where, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct RowError {
    pub line: u64,
    /// 1-based; for CSV the field's number.
    pub column: Option<u64>,
    pub message: String,
}

impl std::fmt::Display for RowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.column {
            Some(c) => write!(f, "{}: column {c}: {}", self.line, self.message),
            None => write!(f, "{}: {}", self.line, self.message),
        }
    }
}

/// What streaming a whole file saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Scan {
    /// sha256 of every byte of the file.
    pub sha256: String,
    pub bytes: u64,
    /// Rows read, good or bad.
    pub rows: u64,
    /// The CSV header row.
    pub headers: Option<Vec<String>>,
}

/// Hashes and counts the bytes read through it.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
    bytes: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// What the row callback says: go on, or stop streaming with this error.
pub type Flow<E> = Result<(), E>;

/// Stream every row of `path` to `each` (a parsed row, or why it cannot be
/// read). `each` may stop the stream by returning an error, which is handed
/// back as `Ok(Err(e))`; `Err` is a failure to read the file itself. After a
/// syntax error in a JSON array no further row can be found, so the stream
/// ends there.
pub fn stream<E>(
    path: &Path,
    format: Format,
    mut each: impl FnMut(RowPos, Result<Json, RowError>) -> Flow<E>,
) -> io::Result<Result<Scan, E>> {
    let file = File::open(path)?;
    let mut src = Hashing { inner: file, hasher: Sha256::new(), bytes: 0 };
    let mut rows = 0u64;
    let mut counted = |pos, row| {
        rows += 1;
        each(pos, row)
    };
    let (flow, headers) = match format {
        Format::Jsonl => (jsonl(BufReader::with_capacity(64 * 1024, &mut src), &mut counted)?, None),
        Format::Json => (json_array(BufReader::with_capacity(64 * 1024, &mut src), &mut counted)?, None),
        Format::Csv => csv_rows(&mut src, &mut counted)?,
    };
    if let Err(e) = flow {
        return Ok(Err(e));
    }
    // Hash what the parsers did not need to read (trailing bytes).
    io::copy(&mut src, &mut io::sink())?;
    Ok(Ok(Scan { sha256: hex(&src.hasher.finalize()), bytes: src.bytes, rows, headers }))
}

fn jsonl<E>(
    mut r: impl BufRead,
    each: &mut impl FnMut(RowPos, Result<Json, RowError>) -> Flow<E>,
) -> io::Result<Flow<E>> {
    let mut line = Vec::new();
    let (mut offset, mut number) = (0u64, 0u64);
    loop {
        line.clear();
        let n = r.read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(Ok(()));
        }
        number += 1;
        let start = offset;
        offset += n as u64;
        let mut body: &[u8] = &line;
        let mut skip = 0;
        if number == 1 && body.starts_with(BOM) {
            body = &body[BOM.len()..];
            skip = BOM.len();
        }
        let trimmed = body.trim_ascii();
        if trimmed.is_empty() {
            continue;
        }
        let lead = body.len() - body.trim_ascii_start().len();
        let pos = RowPos { line: number, offset: start + (skip + lead) as u64, length: trimmed.len() as u64 };
        let row = serde_json::from_slice::<Json>(trimmed).map_err(|e| RowError {
            line: number,
            column: Some(e.column() as u64 + lead as u64),
            message: json_message(&e),
        });
        if let Err(e) = each(pos, row) {
            return Ok(Err(e));
        }
    }
}

/// serde_json's message without its " at line L column C" tail (we say where).
fn json_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// A JSON array, one element at a time: the bytes of each top-level element
/// are found by a small scanner (strings, escapes, nesting), then parsed.
fn json_array<E>(
    r: impl BufRead,
    each: &mut impl FnMut(RowPos, Result<Json, RowError>) -> Flow<E>,
) -> io::Result<Flow<E>> {
    let mut s = Scanner { bytes: r.bytes(), peeked: None, offset: 0, line: 1, col: 0 };
    let bad = |s: &Scanner<_>, msg: &str| RowError { line: s.line, column: Some(s.col + 1), message: msg.to_string() };
    // A byte-order mark, then `[`.
    let mut first = s.skip_ws()?;
    if first == Some(0xEF) {
        for _ in 0..3 {
            s.next()?;
        }
        first = s.skip_ws()?;
    }
    if first != Some(b'[') {
        let pos = RowPos { line: s.line, offset: s.offset, length: 0 };
        return Ok(each(pos, Err(bad(&s, "expected a JSON array of rows (`[ {...}, {...} ]`)"))));
    }
    s.next()?;
    let mut expect_more = false;
    loop {
        match s.skip_ws()? {
            None => {
                let pos = RowPos { line: s.line, offset: s.offset, length: 0 };
                return Ok(each(pos, Err(bad(&s, "the array is not closed (`]` missing)"))));
            }
            Some(b']') if !expect_more => {
                s.next()?;
                return match s.skip_ws()? {
                    None => Ok(Ok(())),
                    Some(_) => {
                        let pos = RowPos { line: s.line, offset: s.offset, length: 0 };
                        Ok(each(pos, Err(bad(&s, "text after the closing `]`"))))
                    }
                };
            }
            Some(b']') => {
                let pos = RowPos { line: s.line, offset: s.offset, length: 0 };
                return Ok(each(pos, Err(bad(&s, "a trailing comma before `]`"))));
            }
            Some(_) => {}
        }
        let (line, col, offset) = (s.line, s.col + 1, s.offset);
        let (raw, end) = s.element()?;
        let trimmed = raw.trim_ascii_end();
        let pos = RowPos { line, offset, length: trimmed.len() as u64 };
        let row = serde_json::from_slice::<Json>(trimmed).map_err(|e| RowError {
            line: line + e.line() as u64 - 1,
            column: Some(if e.line() == 1 { col + e.column() as u64 - 1 } else { e.column() as u64 }),
            message: json_message(&e),
        });
        let broken = row.is_err();
        if let Err(e) = each(pos, row) {
            return Ok(Err(e));
        }
        if broken {
            // Where the next row starts cannot be trusted after a syntax error.
            return Ok(Ok(()));
        }
        match end {
            Some(b',') => expect_more = true,
            Some(b']') => {
                return match s.skip_ws()? {
                    None => Ok(Ok(())),
                    Some(_) => {
                        let pos = RowPos { line: s.line, offset: s.offset, length: 0 };
                        Ok(each(pos, Err(bad(&s, "text after the closing `]`"))))
                    }
                };
            }
            _ => {
                let pos = RowPos { line: s.line, offset: s.offset, length: 0 };
                return Ok(each(pos, Err(bad(&s, "the array is not closed (`]` missing)"))));
            }
        }
    }
}

struct Scanner<I> {
    bytes: I,
    peeked: Option<u8>,
    offset: u64,
    line: u64,
    /// Column of the last byte taken (1-based; 0 before the first of a line).
    col: u64,
}

impl<I: Iterator<Item = io::Result<u8>>> Scanner<I> {
    fn peek(&mut self) -> io::Result<Option<u8>> {
        if self.peeked.is_none() {
            self.peeked = self.bytes.next().transpose()?;
        }
        Ok(self.peeked)
    }

    fn next(&mut self) -> io::Result<Option<u8>> {
        let b = self.peek()?;
        self.peeked = None;
        if let Some(b) = b {
            self.offset += 1;
            if b == b'\n' {
                self.line += 1;
                self.col = 0;
            } else {
                self.col += 1;
            }
        }
        Ok(b)
    }

    /// Skip whitespace; the next byte (not taken), if any: it is at column `col + 1`.
    fn skip_ws(&mut self) -> io::Result<Option<u8>> {
        while let Some(b) = self.peek()? {
            if !b.is_ascii_whitespace() {
                return Ok(Some(b));
            }
            self.next()?;
        }
        Ok(None)
    }

    /// Take one element's bytes, up to the `,` or `]` that ends it at the top
    /// level (taken too, returned as the second value; None at end of input).
    fn element(&mut self) -> io::Result<(Vec<u8>, Option<u8>)> {
        let mut out = Vec::new();
        let (mut depth, mut in_string, mut escape) = (0usize, false, false);
        while let Some(b) = self.next()? {
            if in_string {
                if escape {
                    escape = false;
                } else if b == b'\\' {
                    escape = true;
                } else if b == b'"' {
                    in_string = false;
                }
            } else {
                match b {
                    b'"' => in_string = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' if depth > 0 => depth -= 1,
                    b',' | b']' if depth == 0 => return Ok((out, Some(b))),
                    _ => {}
                }
            }
            out.push(b);
        }
        Ok((out, None))
    }
}

fn csv_rows<E>(
    src: &mut impl Read,
    each: &mut impl FnMut(RowPos, Result<Json, RowError>) -> Flow<E>,
) -> io::Result<(Flow<E>, Option<Vec<String>>)> {
    let mut r = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(src);
    let mut rec = csv::ByteRecord::new();
    // The header row: the keys of every row.
    let headers = match r.read_byte_record(&mut rec) {
        Ok(false) => return Ok((Ok(()), Some(Vec::new()))),
        Ok(true) => match header_names(&rec) {
            Ok(h) => h,
            Err(e) => return Ok((each(RowPos { line: 1, offset: 0, length: 0 }, Err(e)), None)),
        },
        Err(e) => return Err(io::Error::other(e.to_string())),
    };
    loop {
        let start = r.position().clone();
        match r.read_byte_record(&mut rec) {
            Ok(false) => return Ok((Ok(()), Some(headers))),
            Ok(true) => {
                let pos = rec.position().cloned().unwrap_or(start);
                let end = r.position().byte();
                let at = RowPos { line: pos.line(), offset: pos.byte(), length: end - pos.byte() };
                if rec.len() == 1 && rec[0].trim_ascii().is_empty() {
                    continue; // a blank line
                }
                let row = csv_row(&headers, &rec, pos.line());
                if let Err(e) = each(at, row) {
                    return Ok((Err(e), Some(headers)));
                }
            }
            Err(e) => match e.kind() {
                csv::ErrorKind::Io(_) => return Err(io::Error::other(e.to_string())),
                _ => {
                    let line = e.position().map(|p| p.line()).unwrap_or(start.line());
                    let at = RowPos { line, offset: start.byte(), length: 0 };
                    let err = RowError { line, column: None, message: e.to_string() };
                    if let Err(e) = each(at, Err(err)) {
                        return Ok((Err(e), Some(headers)));
                    }
                }
            },
        }
    }
}

/// The column names of a CSV header row: trimmed, non-empty, distinct.
fn header_names(rec: &csv::ByteRecord) -> Result<Vec<String>, RowError> {
    let mut names: Vec<String> = Vec::new();
    for (i, f) in rec.iter().enumerate() {
        let f = if i == 0 { f.strip_prefix(BOM).unwrap_or(f) } else { f };
        let bad = |message: String| RowError { line: 1, column: Some(i as u64 + 1), message };
        let name = std::str::from_utf8(f).map_err(|_| bad("the header is not UTF-8".into()))?.trim().to_string();
        if name.is_empty() {
            return Err(bad("an empty column name in the header row".into()));
        }
        if names.contains(&name) {
            return Err(bad(format!("the column name '{name}' appears twice in the header row")));
        }
        names.push(name);
    }
    Ok(names)
}

/// A CSV record as an object keyed by the header row, every value a string.
fn csv_row(headers: &[String], rec: &csv::ByteRecord, line: u64) -> Result<Json, RowError> {
    if rec.len() != headers.len() {
        return Err(RowError {
            line,
            column: Some(rec.len().min(headers.len()) as u64 + 1),
            message: format!("{} fields, but the header row names {}", rec.len(), headers.len()),
        });
    }
    let mut row = Map::new();
    for (i, (name, field)) in headers.iter().zip(rec.iter()).enumerate() {
        let value = std::str::from_utf8(field).map_err(|_| RowError {
            line,
            column: Some(i as u64 + 1),
            message: format!("the value of '{name}' is not UTF-8"),
        })?;
        row.insert(name.clone(), Json::String(value.to_string()));
    }
    Ok(Json::Object(row))
}

/// The CSV header row of `path`.
pub fn csv_headers(path: &Path) -> Result<Vec<String>, String> {
    let mut r =
        csv::ReaderBuilder::new().has_headers(false).flexible(true).from_path(path).map_err(|e| e.to_string())?;
    let mut rec = csv::ByteRecord::new();
    match r.read_byte_record(&mut rec) {
        Ok(true) => header_names(&rec).map_err(|e| e.to_string()),
        Ok(false) => Ok(Vec::new()),
        Err(e) => Err(e.to_string()),
    }
}

/// Read the row at `pos` again (`headers`: a CSV file's header row).
pub fn read_row(file: &File, format: Format, pos: RowPos, headers: &[String]) -> Result<Json, String> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; pos.length as usize];
    file.read_exact_at(&mut buf, pos.offset).map_err(|e| format!("cannot read the row: {e}"))?;
    match format {
        Format::Jsonl | Format::Json => {
            serde_json::from_slice(&buf).map_err(|e| format!("the row no longer parses: {}", json_message(&e)))
        }
        Format::Csv => {
            let mut r = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(&buf[..]);
            let mut rec = csv::ByteRecord::new();
            match r.read_byte_record(&mut rec) {
                Ok(true) => csv_row(headers, &rec, pos.line).map_err(|e| e.message),
                Ok(false) => Err("the row is gone".into()),
                Err(e) => Err(format!("the row no longer parses: {e}")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Rows = Vec<(RowPos, Result<Json, RowError>)>;

    fn rows(text: &str, format: Format) -> (Rows, Scan) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d");
        std::fs::write(&p, text).unwrap();
        let mut out = Vec::new();
        let scan = stream(&p, format, |pos, row| {
            out.push((pos, row));
            Ok::<(), ()>(())
        })
        .unwrap()
        .unwrap();
        // Every good row reads back the same from its position.
        let f = File::open(&p).unwrap();
        let headers = scan.headers.clone().unwrap_or_default();
        for (pos, row) in &out {
            if let Ok(v) = row {
                assert_eq!(&read_row(&f, format, *pos, &headers).unwrap(), v, "{pos:?}");
            }
        }
        (out, scan)
    }

    #[test]
    fn jsonl_rows_lines_and_columns() {
        let (out, scan) = rows("{\"a\": 1}\n\n  {\"a\": 2}\r\n{\"a\": }\n", Format::Jsonl);
        assert_eq!(scan.rows, 3);
        assert_eq!(out[0].0.line, 1);
        assert_eq!(out[1].0.line, 3);
        assert_eq!(out[1].1.as_ref().unwrap()["a"], 2);
        let e = out[2].1.as_ref().unwrap_err();
        assert_eq!((e.line, e.column), (4, Some(7)), "{e}");
        assert_eq!(scan.sha256, crate::util::digest::sha256_hex(b"{\"a\": 1}\n\n  {\"a\": 2}\r\n{\"a\": }\n"));
    }

    #[test]
    fn json_array_rows_and_errors() {
        let (out, scan) = rows("[\n {\"q\": \"a,]\\\"\"},\n {\"q\": [1, 2]}\n]\n", Format::Json);
        assert_eq!(scan.rows, 2);
        assert_eq!(out[0].1.as_ref().unwrap()["q"], "a,]\"");
        assert_eq!((out[1].0.line, out[1].1.as_ref().unwrap()["q"][1].clone()), (3, Json::from(2)));
        let (out, _) = rows("[\n {\"q\": 1},\n {\"q\": tru}\n]", Format::Json);
        let e = out[1].1.as_ref().unwrap_err();
        assert_eq!((e.line, e.column), (3, Some(11)), "{e}");
        let (out, _) = rows("[{\"q\": 1},]", Format::Json);
        assert!(out[1].1.as_ref().unwrap_err().message.contains("trailing comma"));
        let (out, _) = rows("{\"q\": 1}", Format::Json);
        assert!(out[0].1.as_ref().unwrap_err().message.contains("expected a JSON array"));
        let (out, scan) = rows("[]", Format::Json);
        assert!(out.is_empty() && scan.rows == 0);
    }

    #[test]
    fn csv_rows_are_strings_keyed_by_the_header() {
        let (out, scan) = rows("\u{feff}id,input\nq1,\"two, words\"\nq2,\"multi\nline\"\nq3\n", Format::Csv);
        assert_eq!(scan.headers.as_deref(), Some(&["id".to_string(), "input".to_string()][..]));
        assert_eq!(out[0].1.as_ref().unwrap()["input"], "two, words");
        assert_eq!((out[1].0.line, out[1].1.as_ref().unwrap()["input"].clone()), (3, Json::from("multi\nline")));
        let e = out[2].1.as_ref().unwrap_err();
        assert_eq!((e.line, e.column), (5, Some(2)), "{e}");
        let (out, _) = rows("id,id\n1,2\n", Format::Csv);
        assert!(out[0].1.as_ref().unwrap_err().message.contains("twice"));
    }
}
