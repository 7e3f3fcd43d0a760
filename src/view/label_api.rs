//! The labelling API of `evalua view` (SPEC §15): the queue of trials this
//! annotator has not labelled (`/api/next`), restricted to the sample under
//! `--review users`, and a label posted to the store (`/api/label`).

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;

use super::app::{App, blocking, json_err, json_ok};
use super::index::Filter;
use super::labels as labelling;
use super::trial;
use crate::error::Error;

#[derive(Deserialize)]
pub(super) struct NextQ {
    r: String,
    #[serde(default)]
    case: Option<String>,
    #[serde(default)]
    tag: Option<String>,
    #[serde(default)]
    outcome: Option<String>,
    #[serde(default)]
    check: Option<String>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    ended: Option<String>,
    /// The trial open now (the queue goes on from it).
    #[serde(default)]
    from_case: Option<String>,
    #[serde(default)]
    from_trial: Option<u32>,
    /// `next` (default) or `prev`.
    #[serde(default)]
    dir: Option<String>,
}

/// The next (or previous) trial in file order that matches the run page's
/// filters and that this annotator has not labelled on every criterion.
pub(super) async fn api_next(State(app): State<Arc<App>>, Query(q): Query<NextQ>) -> Response {
    blocking(app, move |app| {
        let Some(r) = app.run(&q.r) else { return json_err(StatusCode::NOT_FOUND, "no such run") };
        let filter = Filter {
            case: q.case.clone(),
            tag: q.tag.clone(),
            outcome: q.outcome.clone(),
            check: q.check.clone(),
            mode: q.mode.clone(),
            ended: q.ended.clone(),
            labels: Some("unlabelled".into()),
        };
        let back = q.dir.as_deref() == Some("prev");
        let out = app.cache.with(&r, |l| {
            let f = app.compile(&r, l, &filter)?;
            // Under --review users, only the sampled trials are queued.
            let review = app.review.as_ref().map(|s| s.for_run(&r.dir, &l.run.manifest));
            let queued = |row: &super::index::Row| {
                f.matches(row) && review.as_ref().is_none_or(|v| v.has(&l.index.case_ids[row.case as usize], row.trial))
            };
            let rows = &l.index.rows;
            let at = q
                .from_case
                .as_deref()
                .and_then(|c| l.run.case_index(c))
                .zip(q.from_trial)
                .and_then(|(c, t)| l.index.row_no(c, t));
            let hit = if back {
                let end = at.unwrap_or(rows.len());
                (0..end).rev().find(|&i| queued(&rows[i]))
            } else {
                let start = at.map_or(0, |i| i + 1);
                (start..rows.len()).find(|&i| queued(&rows[i]))
            };
            let left = rows.iter().filter(|r| queued(r)).count();
            Ok::<_, String>(match hit {
                Some(i) => json!({
                    "case": l.index.case_ids[rows[i].case as usize],
                    "trial": rows[i].trial,
                    "left": left,
                }),
                None => json!({ "case": null, "trial": null, "left": left }),
            })
        });
        match out {
            Ok(Ok(v)) => json_ok(&v),
            Ok(Err(e)) => json_err(StatusCode::BAD_REQUEST, &e),
            Err(e) => json_err(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string()),
        }
    })
    .await
}

/// A label, as the page posts it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelPost {
    r: String,
    case: String,
    trial: u32,
    #[serde(default)]
    criterion: Option<String>,
    verdict: crate::record::labels::Verdict,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    note: String,
}

/// Tags one label may carry.
const MAX_TAGS: usize = 50;

/// Refused unless the request comes from this viewer's own page: its
/// session token in `X-Evalua-Token`, a JSON body, and no foreign `Origin`.
pub(super) fn refuse_write(app: &App, headers: &axum::http::HeaderMap) -> Option<Response> {
    let h = |k: &str| headers.get(k).and_then(|v| v.to_str().ok());
    if let Some(origin) = h("origin")
        && !app.origins.iter().any(|o| o == origin)
    {
        return Some(json_err(StatusCode::FORBIDDEN, "a write from another origin is refused"));
    }
    if h("sec-fetch-site").is_some_and(|s| s == "cross-site") {
        return Some(json_err(StatusCode::FORBIDDEN, "a cross-site write is refused"));
    }
    if !h("x-evalua-token").is_some_and(|t| app.labelling.token_ok(t)) {
        return Some(json_err(
            StatusCode::FORBIDDEN,
            "a write needs this viewer session's token (the page carries it): reload the page",
        ));
    }
    if !h("content-type").is_some_and(|t| t.split(';').next().is_some_and(|t| t.trim() == "application/json")) {
        return Some(json_err(StatusCode::UNSUPPORTED_MEDIA_TYPE, "a label is posted as application/json"));
    }
    None
}

pub(super) async fn api_label(
    State(app): State<Arc<App>>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if let Some(refused) = refuse_write(&app, &headers) {
        return refused;
    }
    blocking(app, move |app| {
        let Some(me) = app.labelling.annotator.clone() else {
            return json_err(StatusCode::CONFLICT, "labelling is off: start evalua view with --annotator NAME");
        };
        let p: LabelPost = match serde_json::from_slice(&body) {
            Ok(p) => p,
            Err(e) => return json_err(StatusCode::BAD_REQUEST, &format!("not a label: {e}")),
        };
        let tags: Vec<String> = p.tags.iter().map(|t| t.trim().to_string()).filter(|t| !t.is_empty()).collect();
        if tags.len() > MAX_TAGS {
            return json_err(StatusCode::BAD_REQUEST, &format!("at most {MAX_TAGS} tags"));
        }
        let Some(r) = app.run(&p.r) else { return json_err(StatusCode::NOT_FOUND, "no such run") };
        let found = app.cache.with(&r, |l| {
            let case = l.run.case_index(&p.case)?;
            let ctx = app.context(&r, l);
            Some(l.record(case, p.trial)?.map(|(rec, _)| (rec, ctx)))
        });
        let (rec, ctx) = match found {
            Ok(Some(Ok(x))) => x,
            Ok(Some(Err(e))) | Err(e) => return json_err(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string()),
            Ok(None) => return json_err(StatusCode::NOT_FOUND, "no such trial in this run"),
        };
        let store = match &ctx.store {
            Ok(s) => s.clone(),
            Err(why) => return json_err(StatusCode::CONFLICT, why),
        };
        let offers = ctx.offers_of(&rec.case, rec.trial, Some(&rec));
        let Some((rubric, _)) = offers.iter().find(|(_, c)| c == &p.criterion) else {
            return json_err(StatusCode::BAD_REQUEST, "not a criterion of this trial's case");
        };
        let (trace, _) = trial::load_trace(&r.dir, &rec);
        let source = labelling::source_id(&rec);
        let item = ctx.item_of(&rec.case, rec.trial, source.as_deref());
        let data = match ctx.reviewed(&rec.case, rec.trial) {
            Some(v) => v.item_data(&rec, trace.as_ref().ok()),
            None => labelling::item_data(&rec, trace.as_ref().ok(), rubric.as_deref()),
        };
        let trace_id = match rec.source.as_ref() {
            Some(s) => s.trace_id.clone(),
            None => Some(crate::otel::export::trace_id(&ctx.trajectories_run_id, &rec.case, rec.trial)),
        };
        let label = crate::record::labels::Label {
            item,
            annotator: me,
            criterion: p.criterion.clone(),
            verdict: p.verdict,
            tags,
            note: p.note.clone(),
            data,
            run: Some(ctx.trajectories_run_id.clone()),
            trace_id,
            at: jiff::Timestamp::now().to_string(),
        };
        if let Err(e) = crate::record::labels::append(&store, &label) {
            let status = match e {
                Error::Input(_) => StatusCode::BAD_REQUEST,
                Error::Environment(_) => StatusCode::INTERNAL_SERVER_ERROR,
            };
            return json_err(status, &e.to_string());
        }
        json_ok(&labelling::trial_labels(&app.labelling, &ctx, &rec))
    })
    .await
}
