//! The labelled items `calibrate` reads: a calibration file (JSON lines of
//! trial data and the human's labels per criterion) or a label store's
//! part, each item checked with `file:line`, then its labels bound to a
//! rubric's criteria.

use std::path::Path;

use serde_json::Value as Json;

use crate::error::{Error, Result};
use crate::judge::labels::Part;
use crate::judge::prompt::{TrialData, strip_call};
use crate::record::rundir::read_trace_file;
use crate::util::paths::display_path;

/// One labelled item.
pub struct Item {
    pub line: usize,
    pub id: Option<String>,
    pub rubric: Option<String>,
    pub data: TrialData,
    /// The human's verdict per criterion (None: not labelled).
    pub labels: Vec<Option<bool>>,
    pub raw_labels: Json,
}

fn label_value(v: &Json) -> Option<Option<bool>> {
    match v {
        Json::Bool(b) => Some(Some(*b)),
        Json::Null => Some(None),
        Json::String(s) if s == "pass" || s == "passed" => Some(Some(true)),
        Json::String(s) if s == "fail" || s == "failed" => Some(Some(false)),
        _ => None,
    }
}

fn read_trace(base: &Path, rel: &str, at: &str) -> Result<TrialData> {
    let t = read_trace_file(&base.join(rel)).map_err(|e| Error::Input(format!("{at}: trace {e}")))?;
    let values = |v: std::result::Result<Json, serde_json::Error>| match v {
        Ok(Json::Array(items)) => items,
        _ => Vec::new(),
    };
    Ok(TrialData {
        calls: values(serde_json::to_value(&t.calls)).iter().map(strip_call).collect(),
        messages: values(serde_json::to_value(&t.messages)),
        outbox: values(serde_json::to_value(&t.outbox)),
        input: t.input,
        answer: t.record.answer,
    })
}

/// One calibration item (a line of the calibration format, or an item of a
/// label store), checked; `at` is `file:line`.
fn parse_item(v: &Json, at: &str, line: usize, base: &Path) -> Result<Item> {
    let Json::Object(o) = v else {
        return Err(Error::Input(format!("{at}: each line must be a JSON object")));
    };
    for k in o.keys() {
        if !["id", "rubric", "case", "trace", "input", "answer", "calls", "messages", "outbox", "labels"]
            .contains(&k.as_str())
        {
            return Err(Error::Input(format!(
                "{at}: unknown key '{k}' (known: id, rubric, trace, input, answer, calls, messages, outbox, labels)"
            )));
        }
    }
    let data = match v["trace"].as_str() {
        Some(rel) => read_trace(base, rel, at)?,
        None => {
            if !v["answer"].is_string() {
                return Err(Error::Input(format!("{at}: give 'answer' (the trial's output) or 'trace'")));
            }
            let arr = |k: &str| v[k].as_array().cloned().unwrap_or_default();
            TrialData {
                input: v["input"].as_str().unwrap_or("").to_string(),
                answer: v["answer"].as_str().unwrap_or("").to_string(),
                calls: arr("calls").iter().map(strip_call).collect(),
                messages: arr("messages"),
                outbox: arr("outbox"),
            }
        }
    };
    if !(v["labels"].is_object() || v["labels"].is_array()) {
        return Err(Error::Input(format!(
            "{at}: 'labels' is required: {{ \"criterion\": true|false, ... }} or a list in criterion order"
        )));
    }
    Ok(Item {
        line,
        id: v["id"].as_str().map(String::from),
        rubric: v["rubric"].as_str().map(String::from),
        data,
        labels: Vec::new(),
        raw_labels: v["labels"].clone(),
    })
}

/// The labelled items calibrate reads: a calibration file, or a label store.
pub struct Source {
    pub items: Vec<Item>,
    /// A store: what was used and left out (one line), and each item id used.
    pub store: Option<(String, Vec<String>)>,
    pub warnings: Vec<String>,
}

pub fn read_labels(path: &Path, part: Part) -> Result<Source> {
    let shown = display_path(path);
    let base = path.parent().unwrap_or(Path::new("."));
    if crate::judge::labels::is_store(path) {
        let f = crate::judge::labels::read(path, part)?;
        let mut items = Vec::new();
        for (line, v) in &f.items {
            items.push(parse_item(v, &format!("{shown}:{line}"), *line, base)?);
        }
        if items.is_empty() {
            return Err(Error::Input(format!(
                "{shown}: no item with a decided criterion label ({})",
                f.counts.line(part, f.split.is_some())
            )));
        }
        let line = f.counts.line(part, f.split.is_some());
        return Ok(Source { items, store: Some((line, f.ids)), warnings: f.warnings });
    }
    if part == Part::HeldOut {
        return Err(Error::Input(format!(
            "{shown}: held-out labels come from a label store and its split (evalua labels split); this file is in the calibration format"
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| Error::Input(format!("{shown}: {e}")))?;
    let mut items = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = format!("{shown}:{}", i + 1);
        if line.trim().is_empty() {
            continue;
        }
        let v: Json = serde_json::from_str(line).map_err(|e| Error::Input(format!("{at}: not JSON: {e}")))?;
        items.push(parse_item(&v, &at, i + 1, base)?);
    }
    if items.is_empty() {
        return Err(Error::Input(format!("{shown}: no labelled items")));
    }
    Ok(Source { items, store: None, warnings: Vec::new() })
}

/// Match an item's labels to the rubric's criteria.
pub fn bind_labels(item: &mut Item, criteria: &[String], shown: &str) -> Result<()> {
    let at = format!("{shown}:{}", item.line);
    let mut out = vec![None; criteria.len()];
    match &item.raw_labels {
        Json::Array(a) => {
            if a.len() != criteria.len() {
                return Err(Error::Input(format!(
                    "{at}: {} labels for {} criteria (a list gives one label per criterion, in order)",
                    a.len(),
                    criteria.len()
                )));
            }
            for (i, v) in a.iter().enumerate() {
                out[i] = label_value(v).ok_or_else(|| {
                    Error::Input(format!("{at}: label {} must be true/false or \"pass\"/\"fail\"", i + 1))
                })?;
            }
        }
        Json::Object(o) => {
            for (k, v) in o {
                let i = criteria.iter().position(|c| c == k).ok_or_else(|| {
                    Error::Input(format!("{at}: '{k}' is not a criterion of the rubric (criteria: {criteria:?})"))
                })?;
                out[i] = label_value(v).ok_or_else(|| {
                    Error::Input(format!("{at}: label '{k}' must be true/false or \"pass\"/\"fail\""))
                })?;
            }
        }
        _ => {}
    }
    item.labels = out;
    Ok(())
}
