//! The HTTP server of `evalua view`: axum on the process's tokio runtime,
//! bound to 127.0.0.1 only. Every request must name this server in its
//! `Host` header (127.0.0.1:PORT or localhost:PORT), so a web page elsewhere
//! cannot reach it through a rebound DNS name; every response forbids
//! sniffing, framing and (pages) any script or fetch from outside the
//! viewer. File reads run on the blocking pool, so a large run being read
//! never stalls the other requests.

use crate::record::files;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;

use super::app::{App, blocking, json_err, json_ok, text};
use super::catalog::{self, plain_relative};
use super::index::Filter;
use super::label_api;
use super::labels::{self as labelling, Labelling};
use super::list::{Listing, RunRow};
use super::pages;
use super::review;
use super::state::{Cache, Kind, Loaded};
use super::trial;
use crate::error::{Error, Result};
use crate::report::html;
use crate::stats::compare;
use crate::util::paths::{confine, read_confined};

/// The port tried first when `--port` is not given (then the next few).
pub const DEFAULT_PORT: u16 = 8787;
/// Raw files larger than this are not served (open them from disk).
const MAX_FILE: u64 = 64 << 20;

pub struct Options {
    pub dirs: Vec<PathBuf>,
    pub port: Option<u16>,
    pub open: bool,
    /// A URL template for a trial's trace in a trace store.
    pub trace_url: Option<String>,
    /// Who labels in this session (`--annotator`, `EVALUA_ANNOTATOR`); None: labelling is off.
    pub annotator: Option<String>,
    /// `--labels STORE`: every run's labels go there (default: beside each run's suite).
    pub labels: Option<PathBuf>,
    /// `--review users`: (sample size, seed) of the trials with a simulated user to label.
    pub review: Option<(usize, u64)>,
    /// `--review synthetic`: the queue of drafted cases awaiting review (SPEC §23).
    pub synthetic: bool,
}

const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
/// report.html carries its own inline script: it runs sandboxed (an opaque origin), with nothing to fetch.
const REPORT_CSP: &str = "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'";

const JS: &str = include_str!("assets/view.js");
const VIEW_CSS: &str = include_str!("assets/view.css");
const SYNTHETIC_JS: &str = include_str!("assets/synthetic.js");

fn bind(port: Option<u16>) -> Result<TcpListener> {
    match port {
        Some(p) => TcpListener::bind(("127.0.0.1", p)).map_err(|e| {
            Error::Input(format!(
                "--port {p}: cannot listen on 127.0.0.1:{p}: {e}; choose another port (0: any free one)"
            ))
        }),
        None => (DEFAULT_PORT..DEFAULT_PORT + 20)
            .find_map(|p| TcpListener::bind(("127.0.0.1", p)).ok())
            .map(Ok)
            .unwrap_or_else(|| TcpListener::bind(("127.0.0.1", 0)))
            .map_err(|e| Error::Environment(format!("cannot listen on 127.0.0.1: {e}"))),
    }
}

/// Serve until the process is stopped.
pub fn serve(o: Options) -> Result<()> {
    let roots = catalog::roots(&o.dirs)?;
    if let Some(t) = &o.trace_url
        && !(t.starts_with("http://") || t.starts_with("https://"))
    {
        return Err(Error::Input(format!("--trace-url {t:?}: give an http:// or https:// URL template")));
    }
    let listener = bind(o.port)?;
    let addr = listener.local_addr().map_err(|e| Error::Environment(e.to_string()))?;
    listener.set_nonblocking(true).map_err(|e| Error::Environment(e.to_string()))?;
    let port = addr.port();
    let (runs, _) = catalog::discover(&roots);
    let annotator = o.annotator.as_deref().map(labelling::check_annotator).transpose().map_err(Error::Input)?;
    if (o.review.is_some() || o.synthetic) && annotator.is_none() {
        let what = if o.synthetic { "synthetic" } else { "users" };
        return Err(Error::Input(format!(
            "--review {what} labels as someone: give --annotator NAME (or EVALUA_ANNOTATOR)"
        )));
    }
    let canon: Vec<PathBuf> = roots.iter().map(|r| r.canon.clone()).collect();
    let labelling = Labelling::new(annotator, o.labels, &canon)
        .map_err(|e| Error::Environment(format!("cannot make a session token: {e}")))?;
    let review = o.review.map(|(n, seed)| review::sample(&runs, n, seed));
    let app = Arc::new(App {
        review,
        labelling,
        origins: [format!("http://127.0.0.1:{port}"), format!("http://localhost:{port}")],
        roots,
        cache: Cache::default(),
        listing: Listing::default(),
        trace_url: o.trace_url,
        hosts: [format!("127.0.0.1:{port}"), format!("localhost:{port}")],
    });
    let url = format!("http://127.0.0.1:{port}/");
    let dirs: Vec<String> = app.roots.iter().map(|r| r.given.display().to_string()).collect();
    let labelling = match &app.labelling.annotator {
        Some(a) => format!("; labelling as {a} (open a trial: p / f / u, n for the next unlabelled one)"),
        None => String::new(),
    };
    // One line: whoever started the viewer may read only its first.
    let mut review = app.review.as_ref().map(|s| format!("; {}", s.describe())).unwrap_or_default();
    if o.synthetic {
        review.push_str(&format!("; drafted cases to review at {url}synthetic"));
    }
    println!(
        "evalua view: {} run dir(s) under {} at {url} (Ctrl-C to stop){labelling}{review}",
        runs.len(),
        dirs.join(", ")
    );
    use std::io::Write;
    let _ = std::io::stdout().flush();
    if o.open {
        open_browser(&url);
    }
    let router = router(app);
    crate::model::runtime().block_on(async move {
        let listener =
            tokio::net::TcpListener::from_std(listener).map_err(|e| Error::Environment(format!("{addr}: {e}")))?;
        axum::serve(listener, router).await.map_err(|e| Error::Environment(format!("{addr}: {e}")))
    })
}

fn open_browser(url: &str) {
    let program = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| if cfg!(target_os = "macos") { "open".into() } else { "xdg-open".into() });
    let started = std::process::Command::new(&program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = started {
        eprintln!("warning: could not open a browser with {program}: {e}; open {url} yourself");
    }
}

fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(list_page))
        .route("/run", get(run_page))
        .route("/compare", get(compare_page))
        .route("/file", get(file))
        .route("/trace", get(raw_trace))
        .route("/api/runs", get(api_runs))
        .route("/api/run", get(api_run))
        .route("/api/trials", get(api_trials))
        .route("/api/grid", get(api_grid))
        .route("/api/trial", get(api_trial))
        .route("/api/next", get(label_api::api_next))
        .route("/api/label", post(label_api::api_label))
        .route("/api/review", get(api_review))
        .route("/synthetic", get(synthetic_page))
        .route("/api/synthetic", get(super::synthetic::api_queue).post(super::synthetic::api_decide))
        .route(
            "/assets/synthetic.js",
            get(|| async { asset("text/javascript; charset=utf-8", SYNTHETIC_JS.to_string()) }),
        )
        .route("/assets/view.js", get(|| async { asset("text/javascript; charset=utf-8", JS.to_string()) }))
        .route(
            "/assets/view.css",
            get(|| async { asset("text/css; charset=utf-8", format!("{}\n{VIEW_CSS}", html::CSS)) }),
        )
        .fallback(|| async { text(StatusCode::NOT_FOUND, "not found") })
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// Only requests addressed to this server; safe headers on every answer.
async fn guard(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let host = req.headers().get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if !app.hosts.iter().any(|h| h == host) {
        return text(StatusCode::FORBIDDEN, "evalua view answers only requests to 127.0.0.1 or localhost on its port");
    }
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
        h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(PAGE_CSP));
    }
    res
}

fn page(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

fn asset(kind: &'static str, body: String) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

/// The `--review users` sample (null without one).
async fn api_review(State(app): State<Arc<App>>) -> Response {
    match &app.review {
        Some(s) => json_ok(&json!({ "sample": s, "line": s.describe() })),
        None => json_ok(&json!({ "sample": null })),
    }
}

/// `--review synthetic`'s queue page.
async fn synthetic_page(State(app): State<Arc<App>>) -> Response {
    match &app.labelling.annotator {
        Some(me) => page(StatusCode::OK, super::synthetic::page(&app.labelling.token, me)),
        None => page(
            StatusCode::CONFLICT,
            pages::error_page(
                "evalua view",
                "reviewing drafted cases needs an annotator: start evalua view --review synthetic --annotator NAME",
            ),
        ),
    }
}

async fn list_page() -> Response {
    page(StatusCode::OK, pages::list_page())
}

#[derive(Deserialize)]
struct StampQ {
    #[serde(default)]
    stamp: Option<String>,
}

async fn api_runs(State(app): State<Arc<App>>, Query(q): Query<StampQ>) -> Response {
    blocking(app, move |app| {
        let list = app.listing.list(&app.roots, &app.cache);
        if q.stamp.as_deref() == Some(list.stamp.as_str()) {
            return json_ok(&json!({ "stamp": list.stamp, "unchanged": true }));
        }
        json_ok(&list)
    })
    .await
}

#[derive(Deserialize)]
struct RunQ {
    r: String,
    /// The version of the figures the page has (`/api/run`).
    #[serde(default)]
    v: Option<u64>,
}

fn not_found_run(id: &str) -> Response {
    page(
        StatusCode::NOT_FOUND,
        pages::error_page("No such run", &format!("{id:?} is not a run dir inside the folders this viewer serves")),
    )
}

const RUN_FILES: [&str; 6] =
    [files::REPORT_HTML, files::REPORT_MD, files::JUNIT, files::MANIFEST, files::SUMMARY, files::COMPARE_MD];

async fn run_page(State(app): State<Arc<App>>, Query(q): Query<RunQ>) -> Response {
    blocking(app, move |app| {
        let Some(r) = app.run(&q.r) else { return not_found_run(&q.r) };
        let row = app.row(&r);
        let others: Vec<(String, String)> = app
            .listing
            .list(&app.roots, &app.cache)
            .runs
            .into_iter()
            .filter(|o| o.suite == row.suite && o.id != row.id)
            .map(|o| (o.id.clone(), format!("{} · {} · {}", o.run_id, o.started_at, o.path)))
            .collect();
        let files: Vec<&'static str> =
            RUN_FILES.iter().copied().filter(|f| confine(&r.dir, f).map(|p| p.is_file()).unwrap_or(false)).collect();
        let loaded = app.cache.with(&r, |l: &Loaded| {
            let facets = l.index.facets();
            let overview = html::overview(&l.run);
            let boot = pages::RunBoot {
                id: &r.id,
                suite: &row.suite,
                run_id: &row.run_id,
                status: row.status,
                version: l.version,
                facets: &facets,
                others: others.clone(),
                annotator: app.labelling.annotator.as_deref(),
                token: &app.labelling.token,
            };
            let review = app.review.as_ref().map(|s| {
                let here: Vec<String> =
                    s.trials.iter().filter(|p| p.dir == r.dir).map(|p| format!("{} #{}", p.case, p.trial)).collect();
                let here = if here.is_empty() { "none".to_string() } else { here.join(", ") };
                format!("{}. In this run: {here} (n: the next one to label).", s.describe())
            });
            pages::run_page(&pages::RunHead { row: &row, overview, files: files.clone(), review }, &boot)
        });
        match loaded {
            Ok(html) => page(StatusCode::OK, html),
            Err(e) => {
                page(StatusCode::UNPROCESSABLE_ENTITY, pages::error_page("This run cannot be read", &e.to_string()))
            }
        }
    })
    .await
}

async fn api_run(State(app): State<Arc<App>>, Query(q): Query<RunQ>) -> Response {
    blocking(app, move |app| {
        let Some(r) = app.run(&q.r) else { return json_err(StatusCode::NOT_FOUND, "no such run") };
        let status = app.row(&r).status;
        let out = app.cache.with(&r, |l| {
            if q.v == Some(l.version) {
                json!({ "version": l.version, "status": status })
            } else {
                json!({
                    "version": l.version,
                    "status": status,
                    "overview": html::overview(&l.run),
                    "facets": l.index.facets(),
                })
            }
        });
        match out {
            Ok(v) => json_ok(&v),
            Err(e) => json_err(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string()),
        }
    })
    .await
}

#[derive(Deserialize)]
struct ListQ {
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
    #[serde(default)]
    labels: Option<String>,
    #[serde(default)]
    page: Option<usize>,
    #[serde(default)]
    per: Option<usize>,
}

impl ListQ {
    fn filter(&self) -> Filter {
        Filter {
            case: self.case.clone(),
            tag: self.tag.clone(),
            outcome: self.outcome.clone(),
            check: self.check.clone(),
            mode: self.mode.clone(),
            ended: self.ended.clone(),
            labels: self.labels.clone(),
        }
    }
}

async fn api_trials(State(app): State<Arc<App>>, Query(q): Query<ListQ>) -> Response {
    listing(app, q, false).await
}

async fn api_grid(State(app): State<Arc<App>>, Query(q): Query<ListQ>) -> Response {
    listing(app, q, true).await
}

async fn listing(app: Arc<App>, q: ListQ, grid: bool) -> Response {
    blocking(app, move |app| {
        let Some(r) = app.run(&q.r) else { return json_err(StatusCode::NOT_FOUND, "no such run") };
        let out = app.cache.with(&r, |l| {
            let f = app.compile(&r, l, &q.filter())?;
            let page = q.page.unwrap_or(0);
            Ok::<_, String>(if grid {
                serde_json::to_value(l.index.grid(&f, page))
            } else {
                serde_json::to_value(l.index.page(&f, page, q.per.unwrap_or(50)))
            })
        });
        match out {
            Ok(Ok(Ok(mut v))) => {
                if let Ok(version) = app.cache.with(&r, |l| l.version) {
                    v["version"] = json!(version);
                }
                json_ok(&v)
            }
            Ok(Ok(Err(e))) => json_err(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
            Ok(Err(e)) => json_err(StatusCode::BAD_REQUEST, &e),
            Err(e) => json_err(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string()),
        }
    })
    .await
}

#[derive(Deserialize)]
struct TrialQ {
    r: String,
    case: String,
    trial: u32,
}

async fn api_trial(State(app): State<Arc<App>>, Query(q): Query<TrialQ>) -> Response {
    blocking(app, move |app| {
        let Some(r) = app.run(&q.r) else { return json_err(StatusCode::NOT_FOUND, "no such run") };
        let found = app.cache.with(&r, |l| {
            let case = l.run.case_index(&q.case)?;
            let ctx = app.context(&r, l);
            Some(l.record(case, q.trial)?.map(|(rec, modes)| (rec, modes, l.run.run_id().to_string(), ctx)))
        });
        match found {
            Ok(Some(Ok((rec, modes, run_id, ctx)))) => {
                let labels = labelling::trial_labels(&app.labelling, &ctx, &rec);
                let mut v = serde_json::to_value(trial::view(&r.dir, &run_id, rec, modes, app.trace_url.as_deref()))
                    .unwrap_or_default();
                v["labels"] = serde_json::to_value(labels).unwrap_or_default();
                json_ok(&v)
            }
            Ok(Some(Err(e))) | Err(e) => json_err(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string()),
            Ok(None) => json_err(StatusCode::NOT_FOUND, "no such trial in this run"),
        }
    })
    .await
}

#[derive(Deserialize)]
struct CompareQ {
    a: String,
    b: String,
    #[serde(default)]
    allow: Option<String>,
}

/// The two runs grade the same trajectories, one of them re-graded (SPEC
/// §10): what differs is the measurement (as `evalua compare` decides it).
fn regraded_pair(x: &RunRow, y: &RunRow) -> bool {
    (x.kind == Kind::Regraded || y.kind == Kind::Regraded)
        && !x.trajectories_run_id.is_empty()
        && x.trajectories_run_id == y.trajectories_run_id
}

async fn compare_page(State(app): State<Arc<App>>, Query(q): Query<CompareQ>) -> Response {
    blocking(app, move |app| {
        let (Some(a), Some(b)) = (app.run(&q.a), app.run(&q.b)) else {
            return not_found_run(if app.run(&q.a).is_none() { &q.a } else { &q.b });
        };
        if a.dir == b.dir {
            return page(
                StatusCode::BAD_REQUEST,
                pages::error_page("One run twice", "pick two different runs to compare"),
            );
        }
        let (ra, rb) = (app.row(&a), app.row(&b));
        if ra.suite != rb.suite {
            return page(
                StatusCode::BAD_REQUEST,
                pages::error_page(
                    "Runs of two suites",
                    &format!(
                        "{} is a run of {}, {} of {}: compare runs of one suite",
                        ra.path, ra.suite, rb.path, rb.suite
                    ),
                ),
            );
        }
        let allow = q.allow.is_some_and(|v| v == "1" || v == "true");
        let cmp = app.cache.with(&a, |la| app.cache.with(&b, |lb| compare::compare(&la.run, &lb.run, allow)));
        match cmp {
            Ok(Ok(Ok(c))) => {
                let h = pages::CompareHead {
                    base: &ra,
                    cand: &rb,
                    measurement_change: regraded_pair(&ra, &rb),
                    robustness: robustness_pair(&ra, &rb, &a.dir, &b.dir),
                };
                page(StatusCode::OK, pages::compare_page(&h, &c))
            }
            Ok(Ok(Err(e))) => page(StatusCode::OK, pages::compare_refused(&ra, &rb, &e.to_string())),
            Ok(Err(e)) | Err(e) => {
                page(StatusCode::UNPROCESSABLE_ENTITY, pages::error_page("These runs cannot be read", &e.to_string()))
            }
        }
    })
    .await
}

/// The candidate's robustness when the base and the candidate are the
/// baseline and a perturbation of one run of perturbations (SPEC §17),
/// paired from their records.
fn robustness_pair(
    a: &RunRow,
    b: &RunRow,
    a_dir: &std::path::Path,
    b_dir: &std::path::Path,
) -> Option<crate::stats::robustness::Robustness> {
    let (pa, pb) = (a.interleaved.as_ref()?, b.interleaved.as_ref()?);
    if !pa.perturbed || pa.run_id != pb.run_id || pa.agent != crate::spec::BASELINE || pb.agent == pa.agent {
        return None;
    }
    let read = |d: &std::path::Path| -> Option<(u64, Vec<crate::record::TrialRecord>)> {
        let dir = crate::record::RunDir::open(d).ok()?;
        let seed = dir.read_manifest().ok()?.seed;
        Some((seed, dir.records().ok()?.filter_map(|r| r.ok().map(|(_, _, rec)| rec)).collect()))
    };
    let ((seed, base), (_, pert)) = (read(a_dir)?, read(b_dir)?);
    let base = crate::stats::robustness::Baseline::new(&base);
    Some(crate::stats::robustness::robustness(&pb.agent, &base, &pert, seed))
}

/// One trial's trace from the run dir's trace pack, as stored (pretty-printed
/// JSON, as `evalua show --json` prints it), shown as text.
async fn raw_trace(State(app): State<Arc<App>>, Query(q): Query<TrialQ>) -> Response {
    blocking(app, move |app| {
        let refused = || text(StatusCode::NOT_FOUND, "no trace of that trial in the run dir");
        let Some(r) = app.run(&q.r) else { return refused() };
        if confine(&r.dir, crate::record::traces::PACK).is_err() {
            return refused();
        }
        let found = crate::record::RunDir::open(&r.dir).and_then(|d| d.find_trace(&q.case, q.trial));
        match found {
            Ok(Some(trace)) => match serde_json::to_string_pretty(&trace) {
                Ok(body) => ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response(),
                Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
            },
            Ok(None) => refused(),
            Err(e) => text(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string()),
        }
    })
    .await
}

#[derive(Deserialize)]
struct FileQ {
    r: String,
    path: String,
}

/// A file of a run dir, confined to it: never rendered as a page, except
/// the run's own report.html (sandboxed).
async fn file(State(app): State<Arc<App>>, Query(q): Query<FileQ>) -> Response {
    blocking(app, move |app| {
        let refused = || text(StatusCode::NOT_FOUND, "no such file inside the run dir");
        let Some(r) = app.run(&q.r) else { return refused() };
        if !plain_relative(&q.path) {
            return refused();
        }
        match confine(&r.dir, &q.path).ok().and_then(|p| p.metadata().ok()) {
            Some(m) if m.is_file() && m.len() > MAX_FILE => {
                return text(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("{} is {} MB: open it from disk", q.path, m.len() >> 20),
                );
            }
            Some(m) if m.is_file() => {}
            _ => return refused(),
        }
        let Some(bytes) = read_confined(&r.dir, &q.path) else { return refused() };
        if q.path == files::REPORT_HTML {
            return (
                [(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CONTENT_SECURITY_POLICY, REPORT_CSP)],
                bytes,
            )
                .into_response();
        }
        let kind =
            if std::str::from_utf8(&bytes).is_ok() { "text/plain; charset=utf-8" } else { "application/octet-stream" };
        let name: String = q
            .path
            .rsplit('/')
            .next()
            .unwrap_or("file")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' })
            .collect();
        (
            [
                (header::CONTENT_TYPE, kind.to_string()),
                (header::CONTENT_DISPOSITION, format!("inline; filename=\"{name}\"")),
            ],
            bytes,
        )
            .into_response()
    })
    .await
}
