//! A person's decision on a drafted case (SPEC §23), from `evalua review` or
//! the viewer's queue (`evalua view --review synthetic`): written to the
//! label store (SPEC §15, with the reviewer's name) and to the case's
//! `review` in the module that holds it. Approved cases count from the next
//! run; rejected ones stay in the module and are skipped.

use std::path::{Path, PathBuf};

use serde_json::{Value as Json, json};

use super::module;
use crate::error::{Error, Result};
use crate::record::labels::{self, Label, Verdict};
use crate::spec::synthetic::ReviewStatus;
use crate::util::paths::display_path;

/// The criterion a review's label is stored under.
pub const CRITERION: &str = "the drafted case's expected result is right";

/// A review to record.
pub struct Decision<'a> {
    /// The suite file.
    pub suite: &'a Path,
    pub case: &'a str,
    pub status: ReviewStatus,
    pub reviewer: &'a str,
    pub note: Option<&'a str>,
    /// The label store (default: `labels/<suite name>.jsonl` beside the suite).
    pub store: Option<&'a Path>,
}

/// What was recorded, and where.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Recorded {
    pub case: String,
    pub status: ReviewStatus,
    pub reviewer: String,
    pub at: String,
    pub module: PathBuf,
    pub store: PathBuf,
}

/// The label store's item id of a drafted case.
pub fn item_id(suite: &str, case: &str) -> String {
    format!("synthetic:{suite}/{case}")
}

/// The modules a suite file requires by name, in the order written: where its drafted cases are.
fn required_modules(text: &str) -> Vec<String> {
    let re = regex::Regex::new(r#"require\s*\(?\s*["']([A-Za-z0-9_.\-]+)["']"#).expect("a valid regex");
    let mut out: Vec<String> = Vec::new();
    for c in re.captures_iter(text) {
        let name = c[1].to_string();
        if !name.starts_with("evalua") && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// The module (and its cases) that holds `case`, among those the suite requires.
pub fn find(suite: &Path, case: &str) -> Result<(PathBuf, Vec<Json>)> {
    let text = std::fs::read_to_string(suite).map_err(|e| Error::Input(format!("{}: {e}", display_path(suite))))?;
    let dir = suite.parent().unwrap_or(Path::new("."));
    for name in required_modules(&text) {
        let rel = format!("{}.lua", name.replace('.', "/"));
        for base in crate::util::paths::module_dirs(dir) {
            let p = base.join(&rel);
            if !p.is_file() {
                continue;
            }
            // A module that is not a list of cases is not one of these.
            let Ok(cases) = module::read(&p) else { break };
            if cases.iter().any(|c| c["id"] == case && c.get("review").is_some()) {
                return Ok((p, cases));
            }
            break;
        }
    }
    Err(Error::Input(format!(
        "{}: no drafted case '{case}' in the modules it requires (a case written by evalua synth, declared with suite:cases(require(\"…\")))",
        display_path(suite)
    )))
}

/// Record the decision in the module and in the label store.
pub fn record(d: &Decision) -> Result<Recorded> {
    let suite = crate::lua::load::load(d.suite)?;
    let (path, mut cases) = find(&suite.path, d.case)?;
    let at = jiff::Timestamp::now().to_string();
    let store = d.store.map(Path::to_path_buf).unwrap_or_else(|| labels::default_path(&suite.dir, &suite.name));
    let case = cases.iter_mut().find(|c| c["id"] == d.case).expect("found above");
    let mut review = json!({ "status": d.status.as_str(), "reviewer": d.reviewer, "at": at });
    if let Some(n) = d.note.filter(|n| !n.is_empty()) {
        review["note"] = json!(n);
    }
    let label = Label {
        item: item_id(&suite.name, d.case),
        annotator: d.reviewer.to_string(),
        criterion: Some(CRITERION.to_string()),
        verdict: if d.status == ReviewStatus::Approved { Verdict::Pass } else { Verdict::Fail },
        tags: vec!["synthetic".to_string()],
        note: d.note.unwrap_or("").to_string(),
        data: json!({ "kind": "synthetic_case", "suite": suite.name, "module": display_path(&path), "case": case.clone() }),
        run: None,
        trace_id: None,
        at: at.clone(),
    };
    if let Some(why) = label.problem() {
        return Err(Error::Input(format!("the review cannot be stored: {why}")));
    }
    case["review"] = review;
    labels::append(&store, &label)?;
    module::write(&path, &cases)?;
    Ok(Recorded {
        case: d.case.to_string(),
        status: d.status,
        reviewer: d.reviewer.to_string(),
        at,
        module: path,
        store,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_required_by_name() {
        let text = "local evalua = require(\"evalua\")\nsuite:cases(require('synthetic.refunds'))\nlocal x = require \"shared.shop\"";
        assert_eq!(required_modules(text), vec!["synthetic.refunds".to_string(), "shared.shop".to_string()]);
    }
}
