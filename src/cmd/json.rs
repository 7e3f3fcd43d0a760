//! `--json` (SPEC §16): one JSON document on stdout per command, for scripts
//! and coding agents. `main` diverts stdout before the command runs
//! (`util::stdio::divert`: every human line goes to stderr), the command adds
//! what it knows to the document as it goes, and `main` writes the document
//! with the exit code and the error, if any, once the command is done. The
//! exit codes are those of the same command without `--json`.
//!
//! The shapes are a stable contract, versioned by the `schema` key
//! (`evalua.<command>/1`) and documented in docs/reference/cli.md: a key may
//! be added within a version, never removed or changed in meaning.

use std::sync::Mutex;

use serde_json::{Map, Value as Json, json};

use crate::error::Error;
use crate::record::Outcome;
use crate::record::files;
use crate::report::text::figure_rows;
use crate::stats::RunData;

/// The version of every command's document shape.
pub const VERSION: u32 = 1;

struct Doc {
    command: &'static str,
    body: Map<String, Json>,
    warnings: Vec<String>,
}

static DOC: Mutex<Option<Doc>> = Mutex::new(None);

fn doc() -> std::sync::MutexGuard<'static, Option<Doc>> {
    DOC.lock().unwrap_or_else(|p| p.into_inner())
}

/// Start collecting the document of `command` (its name on the command line).
pub fn begin(command: &'static str) {
    *doc() = Some(Doc { command, body: Map::new(), warnings: Vec::new() });
}

/// Whether a document is being collected (`--json` was given).
pub fn enabled() -> bool {
    doc().is_some()
}

/// Set a key of the document (nothing without `--json`).
pub fn set(key: &str, value: Json) {
    if let Some(d) = doc().as_mut() {
        d.body.insert(key.to_string(), value);
    }
}

/// Append to the array under `key` (nothing without `--json`).
pub fn push(key: &str, value: Json) {
    if let Some(d) = doc().as_mut() {
        match d.body.entry(key.to_string()).or_insert_with(|| Json::Array(Vec::new())) {
            Json::Array(a) => a.push(value),
            other => *other = Json::Array(vec![value]),
        }
    }
}

/// Say a warning on stderr (`warning: …`) and keep it for the document.
pub fn warn(msg: impl Into<String>) {
    let msg = msg.into();
    eprintln!("warning: {}", crate::util::inert::console(&msg));
    if let Some(d) = doc().as_mut() {
        d.warnings.push(msg);
    }
}

/// The finished document: `schema`, `exit_code`, `errors`, `warnings`, and
/// what the command set. None without `--json`.
pub fn finish(code: u8, error: Option<&Error>) -> Option<Json> {
    let d = doc().take()?;
    Some(document(d.command, d.body, d.warnings, code, error))
}

/// The document of a command that stopped before it could collect anything
/// (its arguments did not parse).
pub fn failed(command: &str, code: u8, message: &str) -> Json {
    let e = json!({ "kind": "usage", "message": message.trim(), "file": null, "line": null });
    let mut m = Map::new();
    m.insert("schema".into(), json!(format!("evalua.{command}/{VERSION}")));
    m.insert("exit_code".into(), json!(code));
    m.insert("errors".into(), json!([e]));
    m.insert("warnings".into(), json!([]));
    Json::Object(m)
}

fn document(command: &str, body: Map<String, Json>, warnings: Vec<String>, code: u8, error: Option<&Error>) -> Json {
    let mut m = Map::new();
    m.insert("schema".into(), json!(format!("evalua.{command}/{VERSION}")));
    m.insert("exit_code".into(), json!(code));
    let errors: Vec<Json> = error.map(error_entries).unwrap_or_default();
    m.insert("errors".into(), Json::Array(errors));
    m.insert("warnings".into(), json!(warnings));
    for (k, v) in body {
        m.entry(k).or_insert(v);
    }
    Json::Object(m)
}

/// An error as the document gives it: one entry per line of the message
/// (`check` reports several problems at once), each with its kind (`input`:
/// exit 2, `environment`: exit 3), its text, and the `file` and `line` it
/// names first (`suites/x.lua:12: …`), when it names one.
pub fn error_entries(e: &Error) -> Vec<Json> {
    let (kind, message) = match e {
        Error::Input(m) => ("input", m),
        Error::Environment(m) => ("environment", m),
    };
    message
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let (file, at) = match located(line) {
                Some((f, l)) => (json!(f), json!(l)),
                None => (Json::Null, Json::Null),
            };
            json!({ "kind": kind, "message": line, "file": file, "line": at })
        })
        .collect()
}

/// The first `path:line:` in a message, as every located error writes it
/// (`suites/x.lua:12: …`, `--labels l.jsonl:3: …`).
fn located(message: &str) -> Option<(String, u64)> {
    message.split_whitespace().find_map(|tok| {
        let (mut file, mut line) = tok.strip_suffix(':')?.rsplit_once(':')?;
        // file:line:column:
        if let Some((f, l)) = file.rsplit_once(':')
            && l.parse::<u64>().is_ok()
        {
            (file, line) = (f, l);
        }
        let line: u64 = line.parse().ok()?;
        (!file.is_empty() && (file.contains('.') || file.contains('/'))).then(|| (file.to_string(), line))
    })
}

/// One run dir (of `run`, `regrade`, `grade` or `report`) as the documents give it.
pub fn run_entry(data: &RunData) -> Json {
    let s = &data.summary;
    let f = &s.figures;
    let mut figures = Map::new();
    for r in figure_rows(s) {
        figures.insert(
            r.name.clone(),
            json!({
                "value": finite(r.value),
                "interval": r.interval.map(|(lo, hi)| json!([lo, hi])).unwrap_or(Json::Null),
                "cases": r.cases,
                "trials": r.trials,
            }),
        );
    }
    // Absolute: a program reading the document may run elsewhere.
    let abs = std::path::absolute(&data.dir).unwrap_or_else(|_| data.dir.clone());
    let dir = abs.display().to_string();
    json!({
        "comparison": comparison(data),
        "failing_trials": failing(data),
        "suite": data.suite(),
        "version": data.version(),
        "run_id": data.run_id(),
        "kind": data.manifest.kind,
        "run_dir": dir,
        "complete": data.complete(),
        "gates_passed": data.gates_passed(),
        "gates": data.gates,
        "figures": figures,
        "counts": {
            "cases": f.capability.cases,
            "trials": f.capability.trials,
            "critical_failures": f.critical_failures,
            "grader_errors": f.grader_errors,
            "infra_errors": f.infra_errors,
            "skipped_checks": f.skipped_checks,
        },
        "total_cost_usd": f.total_cost_usd,
        "p50_ms": f.p50_ms,
        "p95_ms": f.p95_ms,
        "regraded_from": data.manifest.regraded_from.as_ref().map(|r| json!({ "run_id": r.run_id, "dir": r.dir })),
        "warnings": data.warnings,
        "files": {
            "summary": abs.join(files::SUMMARY),
            "trials": abs.join(files::TRIALS),
            "report_md": abs.join(files::REPORT_MD),
            "report_html": abs.join(files::REPORT_HTML),
            "junit": abs.join(files::JUNIT),
            "compare": abs.join(files::COMPARE_JSON).is_file().then(|| abs.join(files::COMPARE_JSON)),
        },
    })
}

/// The trials that were not accepted, in case order, at most
/// [`FAILING_SHOWN`] of them: where `evalua show` should look first. Each
/// with how its agent ended, its first failing check (a critical one first;
/// else the first that raised; null when none: an abnormal end) and why, in a line.
fn failing(data: &RunData) -> Json {
    let mut shown = Vec::new();
    let mut total = 0usize;
    let failed = data.failed().ok();
    for (i, (info, trials)) in data.infos.iter().zip(&data.trials).enumerate() {
        let mut records = failed.as_ref().map(|f| f.places(i).collect::<Vec<_>>()).unwrap_or_default().into_iter();
        for t in trials.iter().filter(|t| t.outcome != Outcome::Accepted) {
            total += 1;
            let at = records.next();
            if shown.len() >= FAILING_SHOWN {
                continue;
            }
            let mut entry = json!({ "case": info.id, "trial": t.trial, "outcome": t.outcome.as_str() });
            if let Some(rec) = at.zip(failed.as_ref()).and_then(|(at, f)| f.read(at).ok()) {
                entry["ended"] = json!(rec.ended.as_str());
                entry["failed_check"] = json!(first_failed_check(&rec));
                entry["why"] = json!(crate::report::text::why_not_accepted(&rec, 200));
            }
            shown.push(entry);
        }
    }
    json!({ "total": total, "shown": shown })
}

/// A trial's first failing check by name: a failed critical one, else a
/// failed one, else one that raised.
fn first_failed_check(rec: &crate::record::TrialRecord) -> Option<&str> {
    use crate::record::Verdict;
    let by = |pick: &dyn Fn(&crate::record::CheckResult) -> bool| rec.checks.iter().find(|c| pick(c));
    by(&|c| c.critical && c.verdict() == Verdict::Fail)
        .or_else(|| by(&|c| c.verdict() == Verdict::Fail))
        .or_else(|| by(&|c| c.verdict() == Verdict::Error))
        .map(|c| c.name.as_str())
}

/// Failing trials listed in a run's entry at most.
pub const FAILING_SHOWN: usize = 100;

/// What `run --baseline` found against its baseline (the run dir's
/// compare.json, in brief): null when the run was compared with nothing.
fn comparison(data: &RunData) -> Json {
    use crate::stats::compare::{Class, Recorded};
    let path = data.dir.join(files::COMPARE_JSON);
    let Some(c) = Recorded::read(&data.dir) else { return Json::Null };
    let (regressed, improved) = (json!(c.ids(Class::Regressed)), json!(c.ids(Class::Improved)));
    json!({
        "base_run_id": c.base.run_id,
        "base_dir": c.base.dir,
        "counts": c.counts,
        "regressed": regressed,
        "improved": improved,
        "new_critical": c.new_critical,
        "measurement_change": c.measurement.is_some(),
        "warnings": c.warnings,
        "file": std::path::absolute(&path).unwrap_or(path),
    })
}

/// A figure that JSON can hold: ∞ (cost per accepted trial with none accepted) is null.
fn finite(v: Option<f64>) -> Json {
    match v {
        Some(v) if v.is_finite() => json!(v),
        _ => Json::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_their_file_and_line() {
        assert_eq!(located("suites/x.lua:12: unknown key 'tirals'"), Some(("suites/x.lua".into(), 12)));
        assert_eq!(located("--labels l.jsonl:3: not JSON"), Some(("l.jsonl".into(), 3)));
        assert_eq!(located("suites/x.lua: no such file"), None);
        assert_eq!(located("run dir: cannot write: disk full"), None);
        assert_eq!(located("x.sql:7:3: syntax error"), Some(("x.sql".into(), 7)));
        let e = &error_entries(&Error::Environment("runs/x: cannot write: disk full".into()))[0];
        assert_eq!(e["kind"], "environment");
        assert_eq!(e["file"], Json::Null);
        let two = error_entries(&Error::Input("a.lua:3: one\nb.lua:9: two".into()));
        assert_eq!((two.len(), two[1]["file"].as_str(), two[1]["line"].as_u64()), (2, Some("b.lua"), Some(9)));
    }

    #[test]
    fn the_document_has_its_schema_code_and_error() {
        let d = document("check", Map::new(), vec!["w".into()], 2, Some(&Error::Input("s.lua:4: bad".into())));
        assert_eq!(d["schema"], "evalua.check/1");
        assert_eq!(d["exit_code"], 2);
        assert_eq!(d["errors"][0]["line"], 4);
        assert_eq!(d["warnings"][0], "w");
    }
}
