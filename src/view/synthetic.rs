//! `evalua view --review synthetic` (SPEC §23): the queue of drafted cases
//! awaiting a person's review in the served runs (their manifests mark them
//! `pending_review`), each shown with what it asks, its expected state, its
//! reference path and how the run's trials of it went; a decision posted
//! (`/api/synthetic`) is recorded as `evalua review` records it, under the
//! viewer's annotator: in the label store and in the case's module.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use super::app::{App, blocking, json_err, json_ok};
use super::catalog;
use crate::record::RunDir;
use crate::report::html::{esc, script_json};
use crate::spec::synthetic::ReviewStatus;
use crate::synth::review;

/// One drafted case awaiting review.
#[derive(Debug, Clone, Serialize)]
pub struct Queued {
    /// The run it was played in (`/run?r=…`).
    pub r: String,
    /// The suite file, as found from here.
    pub suite: String,
    pub case: String,
    /// The run's trials of it, and how many were accepted.
    pub trials: u32,
    pub accepted: u32,
    /// The case as its module holds it (None when it is no longer pending).
    pub draft: Json,
}

/// The run's suite file, as found from here or above the run dir.
fn suite_of(rel: &str, run_dir: &Path) -> Option<PathBuf> {
    let rel = Path::new(rel);
    if rel.extension().is_none_or(|e| e != "lua") {
        return None;
    }
    let mut tries: Vec<PathBuf> = vec![rel.to_path_buf()];
    if rel.is_relative() {
        tries.extend(run_dir.ancestors().skip(1).map(|a| a.join(rel)));
    }
    tries.into_iter().find(|p| p.is_file()).and_then(|p| p.canonicalize().ok())
}

/// A module under the folder the viewer was started in: the only place a decision writes.
fn confined(module: &Path) -> bool {
    let here = std::env::current_dir().ok().and_then(|d| d.canonicalize().ok());
    let m = module.canonicalize().ok();
    matches!((here, m), (Some(h), Some(m)) if m.starts_with(&h))
}

/// The drafted cases still pending in the served runs (a case once per suite, its latest run first).
pub(super) fn queue(app: &App) -> Vec<Queued> {
    let (mut runs, _) = catalog::discover(&app.roots);
    runs.sort_by(|a, b| b.id.cmp(&a.id));
    let mut out: Vec<Queued> = Vec::new();
    for r in runs {
        let Ok(m) = RunDir::open(&r.dir).and_then(|d| d.read_manifest()) else { continue };
        if !m.cases.iter().any(|c| c.pending_review) {
            continue;
        }
        let Some(suite) = suite_of(&m.suite.path, &r.dir) else { continue };
        let played = app.cache.with(&r, |l| l.run.summary.pending_review.clone()).ok().flatten();
        for c in m.cases.iter().filter(|c| c.pending_review) {
            if out.iter().any(|q| q.case == c.id && q.suite == suite.display().to_string()) {
                continue;
            }
            let Ok((_, cases)) = review::find(&suite, &c.id) else { continue };
            let Some(draft) = cases.into_iter().find(|d| d["id"] == c.id.as_str()) else { continue };
            if draft["review"]["status"] != "pending" {
                continue;
            }
            let (trials, accepted) = played
                .as_ref()
                .and_then(|p| p.by_case.iter().find(|b| b.id == c.id))
                .map(|b| (b.trials, b.accepted))
                .unwrap_or((0, 0));
            out.push(Queued {
                r: r.id.clone(),
                suite: suite.display().to_string(),
                case: c.id.clone(),
                trials,
                accepted,
                draft,
            });
        }
    }
    out
}

pub(super) async fn api_queue(State(app): State<Arc<App>>) -> Response {
    blocking(app, |app| json_ok(&json!({ "queue": queue(app), "annotator": app.labelling.annotator }))).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Decide {
    suite: String,
    case: String,
    /// `approve` or `reject`.
    decision: String,
    #[serde(default)]
    note: String,
}

/// A decision on a queued case, recorded as `evalua review` records it.
pub(super) async fn api_decide(
    State(app): State<Arc<App>>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if let Some(refused) = super::label_api::refuse_write(&app, &headers) {
        return refused;
    }
    blocking(app, move |app| {
        let Some(me) = app.labelling.annotator.clone() else {
            return json_err(StatusCode::CONFLICT, "reviewing is off: start evalua view with --annotator NAME");
        };
        let d: Decide = match serde_json::from_slice(&body) {
            Ok(d) => d,
            Err(e) => return json_err(StatusCode::BAD_REQUEST, &format!("not a decision: {e}")),
        };
        let status = match d.decision.as_str() {
            "approve" => ReviewStatus::Approved,
            "reject" => ReviewStatus::Rejected,
            other => return json_err(StatusCode::BAD_REQUEST, &format!("decision {other:?}: approve or reject")),
        };
        // Only a case of the queue: a suite and case the served runs name, pending.
        if !queue(app).iter().any(|q| q.suite == d.suite && q.case == d.case) {
            return json_err(StatusCode::NOT_FOUND, "no such drafted case awaiting review in the served runs");
        }
        let suite = PathBuf::from(&d.suite);
        match review::find(&suite, &d.case) {
            Ok((module, _)) if confined(&module) => {}
            Ok(_) => {
                return json_err(StatusCode::FORBIDDEN, "its module lies outside the folder the viewer was started in");
            }
            Err(e) => return json_err(StatusCode::NOT_FOUND, &e.to_string()),
        }
        let note = Some(d.note.as_str()).filter(|n| !n.trim().is_empty());
        let decision = review::Decision {
            suite: &suite,
            case: &d.case,
            status,
            reviewer: &me,
            note,
            store: app.labelling.store_override(),
        };
        match review::record(&decision) {
            Ok(r) => json_ok(&r),
            Err(e) => json_err(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string()),
        }
    })
    .await
}

/// The queue's page: the cases are drawn by `synthetic.js` from `/api/synthetic`.
pub fn page(token: &str, annotator: &str) -> String {
    format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>evalua view: drafted cases to review</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/assets/view.css"><script src="/assets/synthetic.js" defer></script></head><body data-page="synthetic"><header class="top"><a href="/" class="brand">evalua view</a><span class="meta">› drafted cases to review, as {}</span></header><main><h1>Drafted cases awaiting review</h1><p class="hint">A drafted case counts in no figure until a person approves its expected result; a rejected one is skipped by every run. Each decision goes to the label store and to the case's module.</p><div id="queue"></div><script type="application/json" id="boot">{}</script></main></body></html>"#,
        esc(annotator),
        script_json(&json!({ "token": token }))
    )
}
