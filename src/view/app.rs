//! The viewer's shared state and the helpers every handler uses: the
//! served folders and runs, the labelling session, JSON answers, file work
//! on the blocking pool.

use std::sync::Arc;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::catalog::{self, Root, RunRef};
use super::index::{Compiled, Filter, TrialIndex};
use super::labels::{Labelling, RunContext};
use super::list::{Listing, RunRow};
use super::review::Sample;
use super::state::{Cache, Loaded};

pub(super) struct App {
    pub(super) roots: Vec<Root>,
    pub(super) cache: Cache,
    pub(super) listing: Listing,
    pub(super) trace_url: Option<String>,
    pub(super) hosts: [String; 2],
    /// `Origin` values of this server's own pages.
    pub(super) origins: [String; 2],
    pub(super) labelling: Labelling,
    /// `--review users`: the sample this session labels.
    pub(super) review: Option<Sample>,
}

pub(super) fn text(status: StatusCode, body: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body.to_string()).into_response()
}

pub(super) fn json_ok<T: serde::Serialize>(v: &T) -> Response {
    match serde_json::to_vec(v) {
        Ok(bytes) => ([(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(e) => json_err(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

pub(super) fn json_err(status: StatusCode, msg: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], json!({ "error": msg }).to_string()).into_response()
}

/// Run file work on the blocking pool.
pub(super) async fn blocking(app: Arc<App>, f: impl FnOnce(&App) -> Response + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(move || f(&app)).await {
        Ok(r) => r,
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &format!("internal error: {e}")),
    }
}

impl App {
    pub(super) fn run(&self, id: &str) -> Option<RunRef> {
        catalog::resolve(&self.roots, id)
    }
    pub(super) fn row(&self, r: &RunRef) -> RunRow {
        self.listing.row_of(&self.roots, r, &self.cache)
    }
}

impl App {
    /// The labelling context of a loaded run.
    pub(super) fn context(&self, r: &RunRef, l: &Loaded) -> RunContext {
        let mut ctx = self.labelling.context(&l.run.manifest, &r.dir);
        ctx.review = self.review.as_ref().map(|s| s.for_run(&r.dir, &l.run.manifest));
        ctx
    }

    /// Compile a filter; a `labels` filter gets the trials this annotator labelled.
    pub(super) fn compile(&self, r: &RunRef, l: &Loaded, f: &Filter) -> std::result::Result<Compiled, String> {
        let mut c = f.compile(&l.index)?;
        if c.labels.is_some() {
            let ctx = self.context(r, l);
            let (Some(me), Ok(store)) = (&self.labelling.annotator, &ctx.store) else {
                return Err(match &ctx.store {
                    Err(why) if self.labelling.annotator.is_some() => format!("labels filter: {why}"),
                    _ => "the labels filter needs an annotator: start evalua view with --annotator NAME".into(),
                });
            };
            c.labelled =
                labelled_by(&l.index, &ctx, &self.labelling.index(store).lock().unwrap_or_else(|e| e.into_inner()), me);
        }
        Ok(c)
    }
}

/// The (case, trial) pairs `me` gave a verdict on every criterion of.
fn labelled_by(
    ix: &TrialIndex,
    ctx: &RunContext,
    store: &super::labels::StoreIndex,
    me: &str,
) -> std::collections::HashSet<(u32, u32)> {
    let offers: Vec<Vec<Option<String>>> =
        ix.case_ids.iter().map(|c| ctx.offers(c, None).into_iter().map(|(_, c)| c).collect()).collect();
    let mut out = std::collections::HashSet::new();
    let user = [Some(crate::judge::labels::USER_CRITERION.to_string())];
    for (n, r) in ix.rows.iter().enumerate() {
        let case = &ix.case_ids[r.case as usize];
        let item = ctx.item_of(case, r.trial, ix.sources.get(&(n as u32)).map(|s| &**s));
        let criteria = if ctx.reviewed(case, r.trial).is_some() { &user[..] } else { &offers[r.case as usize] };
        if store.done(&item, me, criteria) {
            out.insert((r.case, r.trial));
        }
    }
    out
}
