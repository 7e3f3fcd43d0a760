//! One trial opened: its record (checks with their evidence, answer, error,
//! usage), its trace (input, messages, tool calls with arguments and
//! results, outbox, model calls, log, stderr), the state it left when the
//! run kept it (changed files, the database changeset), and links: the raw
//! trace file, and the trace in a trace store when one is configured.
//! Long strings are cut (the raw trace file has them whole).

use std::path::Path;

use serde::Serialize;
use serde_json::Value as Json;

use super::catalog::plain_relative;
use crate::record::{RunDir, Trace, TrialRecord, state_name, traces};
use crate::util::paths::{confine, read_confined};

/// Strings longer than this are cut in the trial view.
const MAX_STRING: usize = 20_000;
/// At most this many changed files are listed.
const MAX_FILES: usize = 500;

#[derive(Debug, Serialize)]
pub struct TrialView {
    pub record: Json,
    pub failure_modes: Vec<String>,
    /// The trace, or why it is not shown.
    pub trace: Option<Json>,
    pub trace_error: Option<String>,
    /// The trace file, relative to the run dir (for /file).
    pub trace_file: Option<String>,
    /// Files the trial's work dir changed, as kept in the run dir (relative to it).
    pub files: Vec<String>,
    /// The database changes, as kept in the run dir (relative to it).
    pub changeset: Option<String>,
    /// The trial's trace in a trace store (`--trace-url`).
    pub trace_store: Option<String>,
    /// The conversation id the trace was exported under (SPEC §9).
    pub conversation_id: String,
}

/// Cut long strings anywhere in a JSON value.
fn cut(v: &mut Json) {
    match v {
        Json::String(s) if s.len() > MAX_STRING => {
            let n = s.chars().count();
            if n > MAX_STRING {
                let kept: String = s.chars().take(MAX_STRING).collect();
                *s = format!("{kept}… (cut: {n} characters in all; the raw trace has them)");
            }
        }
        Json::Array(a) => a.iter_mut().for_each(cut),
        Json::Object(o) => o.values_mut().for_each(cut),
        _ => {}
    }
}

fn files_under(run: &Path, rel: &str) -> Vec<String> {
    let Ok(dir) = confine(run, rel) else { return Vec::new() };
    if !dir.is_dir() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut stack = vec![(dir, rel.to_string())];
    while let Some((d, r)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let Some(name) = e.file_name().to_str().map(str::to_string) else { continue };
            let Ok(meta) = std::fs::symlink_metadata(e.path()) else { continue };
            let child = format!("{r}/{name}");
            if meta.is_dir() {
                stack.push((e.path(), child));
            } else if meta.is_file() {
                out.push(child);
            }
            if out.len() >= MAX_FILES {
                return out;
            }
        }
    }
    out.sort();
    out
}

/// Fill a `--trace-url` template; None when it needs a value this trial lacks.
pub fn trace_store_url(template: &str, run_id: &str, rec: &TrialRecord, trace_id: Option<&str>) -> Option<String> {
    let conversation = format!("{run_id}/{}/{}", rec.case, rec.trial);
    let mut out = template.to_string();
    for (key, value) in [
        ("{run_id}", Some(run_id.to_string())),
        ("{case}", Some(rec.case.clone())),
        ("{trial}", Some(rec.trial.to_string())),
        ("{conversation_id}", Some(conversation)),
        ("{trace_id}", trace_id.map(str::to_string)),
    ] {
        if out.contains(key) {
            out = out.replace(key, &encode(&value?));
        }
    }
    Some(out)
}

/// Percent-encode a URL component (unreserved characters kept).
pub fn encode(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            o.push(b as char);
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

/// A trial's trace from the run dir (its trace pack, or a file of its own
/// from before traces were packed), and the file it came from if its own.
pub fn load_trace(run_dir: &Path, rec: &TrialRecord) -> (Result<Trace, String>, Option<String>) {
    if rec.trace.is_empty() {
        return (Err("the record names no trace".to_string()), None);
    }
    if !plain_relative(&rec.trace) {
        return (Err(format!("the record's trace path {:?} is not inside the run dir", rec.trace)), None);
    }
    if rec.trace == traces::PACK {
        // The trace pack: read through its index, once the pack is known to lie inside the run dir.
        let read = confine(run_dir, traces::PACK)
            .map_err(|e| format!("{}: {e}", traces::PACK))
            .and_then(|_| RunDir::open(run_dir).map_err(|e| e.to_string()))
            .and_then(|d| d.load_trace(rec));
        return (read, None);
    }
    // A run dir written before traces were packed: one file per trial.
    match read_confined(run_dir, &rec.trace) {
        None => (Err(format!("{} is missing (or leads out of the run dir)", rec.trace)), None),
        Some(bytes) => (
            serde_json::from_slice::<Trace>(&bytes).map_err(|e| format!("{}: not a trace: {e}", rec.trace)),
            Some(rec.trace.clone()),
        ),
    }
}

pub fn view(run_dir: &Path, run_id: &str, rec: TrialRecord, modes: Vec<String>, trace_url: Option<&str>) -> TrialView {
    let (mut trace, mut trace_error) = (None, None);
    let (read, trace_file) = load_trace(run_dir, &rec);
    match read {
        Ok(t) => {
            let mut v = serde_json::to_value(&t).unwrap_or_default();
            cut(&mut v);
            trace = Some(v);
        }
        Err(e) => trace_error = Some(e),
    }
    // What the run kept of the trial's final state (SPEC §10): beside the trace.
    let stem = state_name(&rec.case, rec.trial);
    let files = files_under(run_dir, &format!("{stem}.files"));
    let changeset =
        Some(format!("{stem}.changeset")).filter(|p| confine(run_dir, p).map(|p| p.is_file()).unwrap_or(false));
    let trace_store = trace_url.and_then(|t| trace_store_url(t, run_id, &rec, None));
    let conversation_id = format!("{run_id}/{}/{}", rec.case, rec.trial);
    let mut record = serde_json::to_value(&rec).unwrap_or_default();
    cut(&mut record);
    TrialView {
        record,
        failure_modes: modes,
        trace,
        trace_error,
        trace_file,
        files,
        changeset,
        trace_store,
        conversation_id,
    }
}
