//! Reading recorded traces for `evalua grade`: OTLP JSON files and folders
//! (JSON lines or one object per file; hex ids as OTLP/JSON has them, or the
//! plain protobuf JSON mapping with base64 ids and enum names), flat span
//! lines, and evalua run dirs.
//!
//! Spans are grouped into items by `gen_ai.conversation.id`, else
//! OpenInference's `session.id`, else by trace id; an item may span several
//! traces, lines and files. Memory stays flat however large the input: a
//! first pass indexes which record (line) holds each trace's last span,
//! reading only ids and the two grouping attributes; the second pass parses
//! each record in full and hands an item on as soon as its last record has
//! been read, so only the items still open are held.
//!
//! Nothing stops at a bad record: a malformed or truncated line, an object
//! that is no span, an item too large or with spans whose parent is missing
//! gets a warning naming the file (and line or trace id), and reading goes on.

use crate::record::files;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use serde::Deserialize;
use serde_json::Value as Json;
use sha2::{Digest, Sha256};

use super::records::{Layout, Parsed, Shape, first_record_shape, par_records, sniff};
use super::span::{FlatSpan, Span, normalize_id};
use crate::error::{Error, Result};
use crate::record::manifest::TraceInput;
use crate::record::{RunDir, Trace, TrialRecord};
use crate::util::paths::display_path;

pub use super::records::MAX_RECORD_BYTES;
/// An item with more spans than this is not graded (its spans are not kept).
pub const MAX_ITEM_SPANS: usize = 100_000;

/// A trace input named on the command line (folders expanded).
#[derive(Debug, Clone)]
pub enum Input {
    File(PathBuf),
    RunDir(PathBuf),
}

impl Input {
    pub fn path(&self) -> &Path {
        match self {
            Input::File(p) | Input::RunDir(p) => p,
        }
    }
}

fn is_trace_file(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    [".json", ".jsonl", ".ndjson", ".json.lines"].iter().any(|e| name.ends_with(e))
}

fn walk(dir: &Path, out: &mut Vec<Input>) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::Input(format!("{}: {e}", display_path(dir))))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if files::is_run_dir(&p) && p.join(files::TRIALS).is_file() {
                out.push(Input::RunDir(p));
            } else {
                walk(&p, out)?;
            }
        } else if is_trace_file(&p) {
            out.push(Input::File(p));
        }
    }
    Ok(())
}

/// Expand the paths given to `--traces`: files as they are, folders into the
/// trace files (`*.json`, `*.jsonl`, `*.ndjson`) and run dirs under them.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<Input>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            if files::is_run_dir(p) {
                out.push(Input::RunDir(p.clone()));
            } else {
                let before = out.len();
                walk(p, &mut out)?;
                if out.len() == before {
                    return Err(Error::Input(format!(
                        "{}: no trace files (*.json, *.jsonl, *.ndjson) or run dirs in this folder",
                        display_path(p)
                    )));
                }
            }
        } else if p.is_file() {
            out.push(Input::File(p.clone()));
        } else {
            return Err(Error::Input(format!("{}: no such file or folder", display_path(p))));
        }
    }
    Ok(out)
}

/// A graded item as read: spans of OTLP / flat lines, or a trial of a run dir.
pub enum Item {
    Spans(SpanItem),
    Trial {
        record: Box<TrialRecord>,
        trace: Box<Trace>,
        file: String,
    },
    /// A whole trajectory of another harness (τ-bench's results, ATIF).
    Trajectory(Box<super::trajectories::Trajectory>),
}

pub struct SpanItem {
    /// The grouping key: the conversation id, else the trace id.
    pub key: String,
    /// `gen_ai.conversation.id` / `session.id`, when the item was grouped by one.
    pub conversation_id: Option<String>,
    /// Sorted by start time; each span once.
    pub spans: Vec<Span>,
    /// The file of its first span (display form).
    pub file: String,
}

// ---------------------------------------------------------------------------
// Pass 1: the index (ids and grouping attributes only).

#[derive(Deserialize)]
struct IdxRequest<'a> {
    #[serde(default, borrow, alias = "resource_spans", rename = "resourceSpans")]
    resource_spans: Vec<IdxResourceSpans<'a>>,
}

#[derive(Deserialize)]
struct IdxResourceSpans<'a> {
    #[serde(default, borrow, alias = "scope_spans", rename = "scopeSpans")]
    scope_spans: Vec<IdxScopeSpans<'a>>,
}

#[derive(Deserialize)]
struct IdxScopeSpans<'a> {
    #[serde(default, borrow)]
    spans: Vec<IdxSpan<'a>>,
}

#[derive(Deserialize)]
struct IdxSpan<'a> {
    #[serde(default, borrow, alias = "trace_id", rename = "traceId")]
    trace_id: Cow<'a, str>,
    #[serde(default, borrow)]
    attributes: Vec<IdxKeyValue<'a>>,
}

#[derive(Deserialize)]
struct IdxKeyValue<'a> {
    #[serde(borrow)]
    key: Cow<'a, str>,
    /// Left as raw JSON: only the grouping attributes' values are read. (A
    /// `gen_ai.input.messages` string holds the whole conversation, full of
    /// escapes; unescaping each one into a string was a tenth of the index.)
    #[serde(default, borrow)]
    value: Option<&'a serde_json::value::RawValue>,
}

#[derive(Deserialize)]
struct IdxAnyValue<'a> {
    #[serde(default, borrow, alias = "string_value", rename = "stringValue")]
    string_value: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct IdxFlat<'a> {
    #[serde(default, alias = "traceId")]
    trace_id: Option<Json>,
    #[serde(default, borrow)]
    attributes: Option<IdxFlatAttrs<'a>>,
}

#[derive(Deserialize)]
struct IdxFlatAttrs<'a> {
    #[serde(default, borrow, rename = "gen_ai.conversation.id")]
    conversation: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "session.id")]
    session: Option<Cow<'a, str>>,
}

/// The grouping attributes, best first.
const CONVERSATION: &str = "gen_ai.conversation.id";
const SESSION: &str = "session.id";

/// (trace id, conversation key) of each span of a record.
fn index_record(shape: Shape, rec: &[u8]) -> std::result::Result<Vec<(String, Option<String>)>, String> {
    match shape {
        Shape::Otlp => {
            let req: IdxRequest = serde_json::from_slice(rec).map_err(|e| e.to_string())?;
            let mut out = Vec::new();
            for rs in req.resource_spans {
                for ss in rs.scope_spans {
                    for s in ss.spans {
                        let mut conv = None;
                        let mut session = None;
                        for kv in &s.attributes {
                            let slot = match kv.key.as_ref() {
                                CONVERSATION => &mut conv,
                                SESSION => &mut session,
                                _ => continue,
                            };
                            let v = kv.value.map(|raw| serde_json::from_str::<IdxAnyValue>(raw.get()));
                            *slot = v.transpose().map_err(|e| e.to_string())?.and_then(|v| v.string_value);
                        }
                        out.push((normalize_id(&s.trace_id), conv.or(session).map(Cow::into_owned)));
                    }
                }
            }
            Ok(out)
        }
        Shape::Flat => {
            let s: IdxFlat = serde_json::from_slice(rec).map_err(|e| e.to_string())?;
            let trace = match s.trace_id {
                Some(Json::String(t)) => normalize_id(&t),
                Some(Json::Number(n)) => n.to_string(),
                _ => return Err("no trace_id".into()),
            };
            let conv = s.attributes.and_then(|a| a.conversation.or(a.session)).map(|c| c.to_string());
            Ok(vec![(trace, conv)])
        }
    }
}

// ---------------------------------------------------------------------------
// Pass 2: full records.

/// Turn the plain protobuf JSON mapping into OTLP/JSON: snake_case keys in
/// camelCase, base64 ids in hex, enum names (`SPAN_KIND_CLIENT`,
/// `STATUS_CODE_ERROR`) as their numbers.
fn otlp_json_form(v: &mut Json) {
    match v {
        Json::Object(o) => {
            let keys: Vec<String> = o.keys().cloned().collect();
            for k in keys {
                let mut val = o.remove(&k).unwrap_or(Json::Null);
                let camel = if k.contains('_') {
                    let mut s = String::new();
                    let mut up = false;
                    for c in k.chars() {
                        if c == '_' {
                            up = true;
                        } else if up {
                            s.extend(c.to_uppercase());
                            up = false;
                        } else {
                            s.push(c);
                        }
                    }
                    s
                } else {
                    k
                };
                match (camel.as_str(), &mut val) {
                    ("traceId" | "spanId" | "parentSpanId", Json::String(s)) => *s = normalize_id(s),
                    ("kind", Json::String(s)) => {
                        let n = [
                            "SPAN_KIND_UNSPECIFIED",
                            "SPAN_KIND_INTERNAL",
                            "SPAN_KIND_SERVER",
                            "SPAN_KIND_CLIENT",
                            "SPAN_KIND_PRODUCER",
                            "SPAN_KIND_CONSUMER",
                        ]
                        .iter()
                        .position(|k| k == s)
                        .unwrap_or(0);
                        val = Json::from(n);
                    }
                    ("code", Json::String(s)) => {
                        let n = ["STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"]
                            .iter()
                            .position(|k| k == s)
                            .unwrap_or(0);
                        val = Json::from(n);
                    }
                    _ => otlp_json_form(&mut val),
                }
                o.insert(camel, val);
            }
        }
        Json::Array(a) => a.iter_mut().for_each(otlp_json_form),
        _ => {}
    }
}

/// The spans of one record.
fn parse_record(shape: Shape, rec: &[u8]) -> std::result::Result<Vec<Span>, String> {
    match shape {
        Shape::Otlp => {
            let req = match serde_json::from_slice::<ExportTraceServiceRequest>(rec) {
                Ok(r) => r,
                Err(first) => {
                    let mut v: Json = serde_json::from_slice(rec).map_err(|e| e.to_string())?;
                    otlp_json_form(&mut v);
                    serde_json::from_value(v).map_err(|_| format!("not an OTLP ExportTraceServiceRequest: {first}"))?
                }
            };
            let mut out = Vec::new();
            for rs in req.resource_spans {
                for ss in rs.scope_spans {
                    out.extend(ss.spans.into_iter().map(Span::from));
                }
            }
            Ok(out)
        }
        Shape::Flat => {
            let f: FlatSpan = serde_json::from_slice(rec).map_err(|e| format!("not a span object: {e}"))?;
            Ok(vec![f.into_span().map_err(|e| format!("not a span object: {e}"))?])
        }
    }
}

// ---------------------------------------------------------------------------

/// Where a record is: (input index, record index within the input).
type Pos = (usize, usize);

struct TraceIdx {
    conv: Option<String>,
    first: Pos,
    last: Pos,
    spans: usize,
}

struct FileInfo {
    display: String,
    layout: Layout,
    /// None when the file holds no record: pass 2 skips it.
    shape: Option<Shape>,
    /// Records that could not be indexed (their warning is given): skipped in pass 2.
    bad: super::stream::Bits,
}

/// Read every input and hand each item to `emit` as soon as it is complete,
/// in the order items complete; warnings go to `warn`. Returns what was read
/// from each input (for the manifest). Records are parsed on `workers`
/// threads (see [`par_records`]).
pub fn read(
    inputs: &[Input],
    workers: usize,
    warn: &mut dyn FnMut(String),
    emit: &mut dyn FnMut(Item) -> Result<()>,
) -> Result<Vec<TraceInput>> {
    let mut stats: Vec<TraceInput> = Vec::new();
    let mut files: Vec<Option<FileInfo>> = Vec::new();
    let mut traces: HashMap<String, TraceIdx> = HashMap::new();
    let mut trace_order: Vec<String> = Vec::new();

    // Pass 1.
    for (fi, input) in inputs.iter().enumerate() {
        let display = display_path(input.path());
        match input {
            Input::RunDir(p) => {
                let sha = std::fs::read(p.join(files::TRIALS)).ok().map(|b| const_hex::encode(Sha256::digest(&b)));
                stats.push(TraceInput { path: display, sha256: sha, format: "run_dir".into(), ..Default::default() });
                files.push(None);
            }
            Input::File(p) => {
                let mut whole = |t| emit(Item::Trajectory(Box::new(t)));
                if let Some(stat) = super::formats::read_file(p, &display, warn, &mut whole)? {
                    stats.push(stat);
                    files.push(None);
                    continue;
                }
                let (layout, shape) = sniff(p).map_err(|e| Error::Input(format!("{display}: cannot read: {e}")))?;
                let sh = shape.unwrap_or_else(|| first_record_shape(p, &display, layout));
                let mut bad = super::stream::Bits::default();
                let mut rec_no = 0usize;
                let mut spans = 0u64;
                let index = |rec: &[u8]| index_record(sh, rec);
                let (sha, bytes) = par_records(p, &display, layout, true, workers, &index, &mut |parsed| {
                    let (line, indexed) = match parsed {
                        Parsed::Record(line, r) => (line, r),
                        Parsed::Cut(w) => {
                            warn(w);
                            return Ok(());
                        }
                        Parsed::Panicked(line) => (line, Err("internal error in evalua while reading it".into())),
                    };
                    let i = rec_no;
                    rec_no += 1;
                    match indexed {
                        Ok(list) => {
                            for (trace, conv) in list {
                                spans += 1;
                                let e = traces.entry(trace.clone()).or_insert_with(|| {
                                    trace_order.push(trace.clone());
                                    TraceIdx { conv: None, first: (fi, i), last: (fi, i), spans: 0 }
                                });
                                e.last = (fi, i);
                                e.spans += 1;
                                if e.conv.is_none() {
                                    e.conv = conv;
                                }
                            }
                        }
                        Err(e) => {
                            bad.insert(i);
                            let e = if e.contains("EOF") { format!("truncated record ({e})") } else { e };
                            warn(format!("{display}:{line}: not readable as {}: {e}", shape_name(sh)));
                        }
                    }
                    Ok(())
                })?;
                if bytes == 0 {
                    warn(format!("{display}: empty file: no spans"));
                } else if spans == 0 && rec_no > bad.len() {
                    warn(format!("{display}: no spans in this file"));
                }
                stats.push(TraceInput {
                    path: display.clone(),
                    sha256: (!sha.is_empty()).then_some(sha),
                    format: match sh {
                        Shape::Flat => "span_lines".into(),
                        Shape::Otlp => "otlp_json".into(),
                    },
                    bytes,
                    spans: 0,
                    items: 0,
                });
                // A file without a record is not read again.
                let shape = (rec_no > 0).then_some(sh);
                files.push(Some(FileInfo { display, layout, shape, bad }));
            }
        }
    }

    // Items: one per conversation key, else per trace; each ends at the last record of its last trace.
    struct ItemIdx {
        key: String,
        /// Whether `key` is a conversation id (else it is a trace id).
        by_conversation: bool,
        first: Pos,
        last: Pos,
        spans: usize,
    }
    let mut items: Vec<ItemIdx> = Vec::new();
    let mut item_of_trace: HashMap<String, usize> = HashMap::with_capacity(trace_order.len());
    {
        let mut by_key: HashMap<String, usize> = HashMap::new();
        for t in std::mem::take(&mut trace_order) {
            let Some(idx) = traces.remove(&t) else { continue };
            let by_conversation = idx.conv.is_some();
            let key = idx.conv.unwrap_or_else(|| t.clone());
            let i = match by_key.get(&key) {
                Some(&i) => i,
                None => {
                    by_key.insert(key.clone(), items.len());
                    items.push(ItemIdx { key, by_conversation, first: idx.first, last: idx.last, spans: 0 });
                    items.len() - 1
                }
            };
            let it = &mut items[i];
            it.last = it.last.max(idx.last);
            it.first = it.first.min(idx.first);
            it.spans += idx.spans;
            item_of_trace.insert(t, i);
        }
    }
    drop(traces);
    // The items to hand on at each record, in file order (pass 2 reads the
    // records in that order and walks this list along).
    let mut ending: Vec<(Pos, usize)> = Vec::with_capacity(items.len());
    for (i, it) in items.iter().enumerate() {
        if it.spans > MAX_ITEM_SPANS {
            let file = files.get(it.first.0).and_then(|f| f.as_ref()).map(|f| f.display.clone()).unwrap_or_default();
            warn(format!(
                "{file}: trace {} has {} spans, more than the {MAX_ITEM_SPANS} an item may have: not graded",
                it.key, it.spans
            ));
            continue;
        }
        ending.push((it.last, i));
    }
    ending.sort_unstable();
    let mut ending = ending.into_iter().peekable();

    // Pass 2.
    let mut open: HashMap<usize, Vec<Span>> = HashMap::new();
    for (fi, input) in inputs.iter().enumerate() {
        match input {
            Input::RunDir(p) => {
                let (n, spans) = read_run_dir(p, &stats[fi].path, warn, emit)?;
                stats[fi].items = n;
                stats[fi].spans = spans;
            }
            Input::File(p) => {
                let Some(info) = files[fi].take() else { continue };
                let Some(shape) = info.shape else { continue };
                let mut rec_no = 0usize;
                let mut spans_read = 0u64;
                let mut items_done = 0u64;
                let bad = &info.bad;
                // Records pass 1 could not index are not parsed again.
                let parse = |rec: &[u8]| parse_record(shape, rec);
                par_records(p, &info.display, info.layout, false, workers, &parse, &mut |parsed| {
                    let (line, result) = match parsed {
                        Parsed::Record(line, r) => (line, r),
                        // Said in pass 1.
                        Parsed::Cut(_) => return Ok(()),
                        Parsed::Panicked(line) => (line, Err("internal error in evalua while reading it".into())),
                    };
                    let i = rec_no;
                    rec_no += 1;
                    if bad.contains(&i) {
                        return Ok(());
                    }
                    match result {
                        Ok(spans) => {
                            for s in spans {
                                spans_read += 1;
                                let Some(&item) = item_of_trace.get(&s.trace_id) else { continue };
                                if items[item].spans > MAX_ITEM_SPANS {
                                    continue;
                                }
                                open.entry(item).or_default().push(s);
                            }
                        }
                        Err(e) => warn(format!("{}:{line}: {e}", info.display)),
                    }
                    while let Some(&(at, item)) = ending.peek()
                        && at <= (fi, i)
                    {
                        ending.next();
                        let spans = open.remove(&item).unwrap_or_default();
                        if spans.is_empty() {
                            continue;
                        }
                        items_done += 1;
                        let it = &items[item];
                        let file = files_display(inputs, it.first.0);
                        let spans = tidy(spans, &it.key, &file, &mut *warn);
                        emit(Item::Spans(SpanItem {
                            key: it.key.clone(),
                            conversation_id: it.by_conversation.then(|| it.key.clone()),
                            spans,
                            file,
                        }))?;
                    }
                    Ok(())
                })?;
                stats[fi].spans = spans_read;
                stats[fi].items = items_done;
            }
        }
    }
    Ok(stats)
}

/// Whether an input may hold items that ask to be re-executed (τ-bench's
/// results): a file whose first bytes a re-executed trajectory format claims.
pub fn may_reexecute(inputs: &[Input]) -> bool {
    use super::formats::{claimed, head};
    inputs.iter().any(|i| match i {
        Input::File(p) => head(p).ok().and_then(|h| claimed(&h)).is_some_and(|f| f.reexecutes()),
        Input::RunDir(_) => false,
    })
}

fn files_display(inputs: &[Input], i: usize) -> String {
    inputs.get(i).map(|p| display_path(p.path())).unwrap_or_default()
}

fn shape_name(s: Shape) -> &'static str {
    match s {
        Shape::Otlp => "an OTLP JSON request",
        Shape::Flat => "a span line",
    }
}

/// Sort an item's spans by start time, drop repeated ones (an exporter's
/// retry sends a batch twice), and warn about spans whose parent is missing.
fn tidy(mut spans: Vec<Span>, key: &str, file: &str, warn: &mut dyn FnMut(String)) -> Vec<Span> {
    spans.sort_by_key(|s| (s.start_ns, s.end_ns));
    let before = spans.len();
    let mut seen = HashSet::new();
    spans.retain(|s| seen.insert((s.trace_id.clone(), s.span_id.clone())));
    if spans.len() < before {
        warn(format!(
            "{file}: trace {key}: {} span(s) appear more than once (same trace and span id): read once",
            before - spans.len()
        ));
    }
    let ids: HashSet<(&str, &str)> = spans.iter().map(|s| (s.trace_id.as_str(), s.span_id.as_str())).collect();
    let mut orphans: HashMap<&str, usize> = HashMap::new();
    for s in &spans {
        if let Some(p) = &s.parent_span_id
            && !ids.contains(&(s.trace_id.as_str(), p.as_str()))
        {
            *orphans.entry(s.trace_id.as_str()).or_default() += 1;
        }
    }
    let mut orphans: Vec<(&str, usize)> = orphans.into_iter().collect();
    orphans.sort();
    for (trace, n) in orphans {
        warn(format!(
            "{file}: trace {trace}: {n} span(s) point at a parent span that is not in the input (graded from the spans that are)"
        ));
    }
    spans
}

/// The trials of an evalua run dir, each an item.
fn read_run_dir(
    p: &Path,
    display: &str,
    warn: &mut dyn FnMut(String),
    emit: &mut dyn FnMut(Item) -> Result<()>,
) -> Result<(u64, u64)> {
    let dir = RunDir::open(p)?;
    let (mut n, mut calls) = (0u64, 0u64);
    for rec in dir.records()? {
        let (line, _, record) = match rec {
            Ok(r) => r,
            Err(e) => {
                warn(e.to_string());
                continue;
            }
        };
        let Some(trace) = dir.read_trace(&record) else {
            warn(format!(
                "{display}: {}:{line}: the trace of {}#{} is missing: not graded",
                files::TRIALS,
                record.case,
                record.trial
            ));
            continue;
        };
        n += 1;
        calls += trace.calls.len() as u64;
        emit(Item::Trial { record: Box::new(record), trace: Box::new(trace), file: display.to_string() })?;
    }
    Ok((n, calls))
}
