//! The GitHub Action (action.yml) and its script (action/evalua_action.py),
//! driven as the runner drives them, against a mock of GitHub's REST API on
//! 127.0.0.1: the first report creates the pull-request comment, the second
//! updates it (never a duplicate, also past the first page of comments), the
//! token is never printed, a fork's missing or read-only token leaves the
//! report in the step summary, and the job's exit code is the gates'.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::common::repo;

const TOKEN: &str = "ghs_SeCrEtT0kenNeverPrinted42";
const REPO: &str = "acme/shop";
const PR: u64 = 7;

#[derive(Default)]
struct Api {
    /// Comments on the pull request: (id, body).
    comments: Vec<(u64, String)>,
    next_id: u64,
    /// Every request: (method, path and query, authorization header).
    seen: Vec<(String, String, Option<String>)>,
    /// Answer writes with 403, as GitHub does to a fork's read-only token.
    read_only: bool,
    artifacts: Value,
    /// Workflow runs by id, as `GET /repos/{repo}/actions/runs/{id}` answers them.
    runs: BTreeMap<String, Value>,
}

struct Mock {
    addr: SocketAddr,
    api: Arc<Mutex<Api>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Mock {
    fn start(api: Api) -> Mock {
        let api = Arc::new(Mutex::new(api));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let st = api.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let app = Router::new().fallback(answer).with_state(st);
                let l = tokio::net::TcpListener::from_std(listener).unwrap();
                let _ = axum::serve(l, app)
                    .with_graceful_shutdown(async {
                        let _ = rx.await;
                    })
                    .await;
            });
        });
        Mock { addr, api, _stop: tx }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn ours(&self) -> Vec<(u64, String)> {
        self.api
            .lock()
            .unwrap()
            .comments
            .iter()
            .filter(|(_, b)| b.starts_with("<!-- evalua-action:"))
            .cloned()
            .collect()
    }

    fn seen(&self) -> Vec<(String, String, Option<String>)> {
        self.api.lock().unwrap().seen.clone()
    }
}

async fn answer(
    State(st): State<Arc<Mutex<Api>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).map(String::from);
    let pq = uri.path_and_query().map(|p| p.to_string()).unwrap_or_default();
    let mut api = st.lock().unwrap();
    api.seen.push((method.to_string(), pq.clone(), auth.clone()));
    if auth.as_deref() != Some(&format!("Bearer {TOKEN}")) {
        return (StatusCode::UNAUTHORIZED, axum::Json(json!({ "message": "Bad credentials" }))).into_response();
    }
    let path = uri.path();
    let query: BTreeMap<String, String> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
    let comments = format!("/repos/{REPO}/issues/{PR}/comments");
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if (method == Method::POST || method == Method::PATCH) && api.read_only {
        return (StatusCode::FORBIDDEN, axum::Json(json!({ "message": "Resource not accessible by integration" })))
            .into_response();
    }
    if method == Method::GET && path == comments {
        let per: usize = query.get("per_page").and_then(|p| p.parse().ok()).unwrap_or(30);
        let page: usize = query.get("page").and_then(|p| p.parse().ok()).unwrap_or(1);
        let all: Vec<Value> = api.comments.iter().map(|(id, b)| json!({ "id": id, "body": b })).collect();
        let items: Vec<Value> = all.iter().skip((page - 1) * per).take(per).cloned().collect();
        let mut resp = axum::Json(Value::Array(items)).into_response();
        if page * per < all.len() {
            let next = format!("<http://{}{}?per_page={per}&page={}>; rel=\"next\"", "127.0.0.1", comments, page + 1);
            // The script follows the Link header as given: point it back at this server.
            let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or("127.0.0.1");
            resp.headers_mut().insert("link", next.replace("127.0.0.1", host).parse().unwrap());
        }
        return resp;
    }
    if method == Method::POST && path == comments {
        api.next_id += 1;
        let id = 1000 + api.next_id;
        api.comments.push((id, body["body"].as_str().unwrap_or("").to_string()));
        return (
            StatusCode::CREATED,
            axum::Json(json!({ "id": id, "html_url": format!("https://github.invalid/c/{id}") })),
        )
            .into_response();
    }
    if method == Method::PATCH
        && let Some(id) = path.strip_prefix(&format!("/repos/{REPO}/issues/comments/"))
    {
        let id: u64 = id.parse().unwrap_or(0);
        let text = body["body"].as_str().unwrap_or("").to_string();
        return match api.comments.iter_mut().find(|(i, _)| *i == id) {
            Some(c) => {
                c.1 = text;
                axum::Json(json!({ "id": id, "html_url": format!("https://github.invalid/c/{id}") })).into_response()
            }
            None => (StatusCode::NOT_FOUND, axum::Json(json!({ "message": "Not Found" }))).into_response(),
        };
    }
    if method == Method::GET && path == format!("/repos/{REPO}/actions/artifacts") {
        return axum::Json(api.artifacts.clone()).into_response();
    }
    if method == Method::GET
        && let Some(run) = path.strip_prefix(&format!("/repos/{REPO}/actions/runs/")).and_then(|id| api.runs.get(id))
    {
        return axum::Json(run.clone()).into_response();
    }
    (StatusCode::NOT_FOUND, axum::Json(json!({ "message": "Not Found" }))).into_response()
}

/// What the runner gives a step: its environment, the files it reads back.
struct Runner {
    dir: tempfile::TempDir,
    env: Vec<(String, String)>,
}

impl Runner {
    fn new(api_url: &str, token: &str) -> Runner {
        let dir = tempfile::tempdir().unwrap();
        let event = dir.path().join("event.json");
        std::fs::write(
            &event,
            json!({ "number": PR, "pull_request": { "number": PR, "base": { "ref": "main" } } }).to_string(),
        )
        .unwrap();
        let env = vec![
            ("GITHUB_API_URL".into(), api_url.to_string()),
            ("GITHUB_SERVER_URL".into(), "https://github.invalid".into()),
            ("GITHUB_REPOSITORY".into(), REPO.into()),
            ("GITHUB_RUN_ID".into(), "555".into()),
            ("GITHUB_EVENT_PATH".into(), event.display().to_string()),
            ("GITHUB_STEP_SUMMARY".into(), dir.path().join("summary.md").display().to_string()),
            ("GITHUB_OUTPUT".into(), dir.path().join("output").display().to_string()),
            ("GITHUB_ENV".into(), dir.path().join("env").display().to_string()),
            ("RUNNER_TEMP".into(), dir.path().display().to_string()),
            ("EVALUA_BIN".into(), env!("CARGO_BIN_EXE_evalua").into()),
            ("EVALUA_RUNS_DIR".into(), dir.path().join("runs").display().to_string()),
            ("EVALUA_TOKEN".into(), token.into()),
        ];
        Runner { dir, env }
    }

    fn step(&self, sub: &str, extra: &[(&str, &str)]) -> Output {
        let _ = std::fs::remove_file(self.dir.path().join("output"));
        let mut c = Command::new("python3");
        c.arg(repo().join("action/evalua_action.py")).arg(sub).current_dir(repo()).env_remove("GITHUB_ACTIONS");
        for (k, v) in &self.env {
            c.env(k, v);
        }
        for (k, v) in extra {
            c.env(k, v);
        }
        let o = c.output().expect("python3 runs the action's script");
        let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(!all.contains(TOKEN), "the token was printed by `{sub}`:\n{all}");
        o
    }

    fn outputs(&self) -> BTreeMap<String, String> {
        let text = std::fs::read_to_string(self.dir.path().join("output")).unwrap_or_default();
        let mut out = BTreeMap::new();
        let mut lines = text.lines();
        while let Some(l) = lines.next() {
            if let Some((k, delim)) = l.split_once("<<") {
                let mut v = Vec::new();
                for l in lines.by_ref() {
                    if l == delim {
                        break;
                    }
                    v.push(l);
                }
                out.insert(k.to_string(), v.join("\n"));
            } else if let Some((k, v)) = l.split_once('=') {
                out.insert(k.to_string(), v.to_string());
            }
        }
        out
    }

    fn summary(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("summary.md")).unwrap_or_default()
    }

    fn runs(&self) -> PathBuf {
        self.dir.path().join("runs")
    }
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The runner's `run` step on suites/refunds.lua: the gates fail by design (exit 1).
fn run_refunds(r: &Runner, extra: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut env = vec![("EVALUA_SUITES", "suites/refunds.lua"), ("EVALUA_ARGS", "--trials 3 -q")];
    env.extend_from_slice(extra);
    let o = r.step("run", &env);
    assert!(o.status.success(), "the run step never fails the job itself: {}", text(&o));
    r.outputs()
}

#[test]
fn the_first_report_creates_the_comment_the_second_updates_it() {
    // 120 comments by others first: the action's comment is on the second page.
    let others = (1..=120).map(|i| (i, format!("comment {i} by someone else"))).collect();
    let mock = Mock::start(Api { comments: others, next_id: 0, ..Default::default() });
    let r = Runner::new(&mock.url(), TOKEN);
    let out = run_refunds(&r, &[]);
    assert_eq!(out["exit-code"], "1", "{out:?}");
    let run_dir = out["run-dirs"].clone();
    assert!(Path::new(&run_dir).join("summary.json").is_file(), "{run_dir}");

    let env = [("EVALUA_RUN_DIRS", run_dir.as_str())];
    let o = r.step("comment", &env);
    assert!(o.status.success(), "{}", text(&o));
    let ours = mock.ours();
    assert_eq!(ours.len(), 1, "one comment: {ours:?}");
    let (id, body) = ours[0].clone();
    assert!(body.starts_with("<!-- evalua-action:evalua -->\n"), "{body}");
    assert!(body.contains("evalua · <code>refunds</code>") && body.contains("gates failed"), "{body}");
    assert!(body.contains("| pass^3 |") && body.contains("95% interval"), "{body}");
    assert!(body.contains("https://github.invalid/acme/shop/actions/runs/555"), "a link to the run: {body}");
    assert!(r.summary().contains("evalua · <code>refunds</code>"), "the step summary has the report too");
    assert_eq!(r.outputs()["comment-url"], format!("https://github.invalid/c/{id}"));

    // Again (a new push): the same comment, updated; still one.
    let o = r.step("comment", &env);
    assert!(o.status.success(), "{}", text(&o));
    let ours = mock.ours();
    assert_eq!(ours.len(), 1, "no duplicate: {ours:?}");
    assert_eq!(ours[0].0, id);
    let seen = mock.seen();
    assert_eq!(seen.iter().filter(|(m, ..)| m == "POST").count(), 1, "{seen:?}");
    assert_eq!(seen.iter().filter(|(m, ..)| m == "PATCH").count(), 1, "{seen:?}");
    assert!(seen.iter().all(|(.., a)| a.as_deref() == Some(&format!("Bearer {TOKEN}") as &str)));
    assert!(!r.summary().contains(TOKEN));

    // A second use of the action in the same workflow keeps its own comment.
    let o = r.step("comment", &[("EVALUA_RUN_DIRS", run_dir.as_str()), ("EVALUA_COMMENT_KEY", "nightly")]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(mock.ours().len(), 2);
}

#[test]
fn a_fork_without_a_usable_token_gets_the_step_summary_only() {
    let mock = Mock::start(Api::default());
    // No token at all (a fork's pull request gets no secrets).
    let r = Runner::new(&mock.url(), "");
    let out = run_refunds(&r, &[]);
    let env = [("EVALUA_RUN_DIRS", out["run-dirs"].as_str())];
    let o = r.step("comment", &env);
    assert!(o.status.success(), "never fails the job: {}", text(&o));
    assert!(text(&o).contains("::warning::") && text(&o).contains("no token"), "{}", text(&o));
    assert!(mock.seen().is_empty(), "nothing sent without a token: {:?}", mock.seen());
    assert!(
        r.summary().contains("evalua · <code>refunds</code>") && r.summary().contains("no token"),
        "{}",
        r.summary()
    );

    // A read-only token (GITHUB_TOKEN on a fork's pull request): the write is refused.
    let mock = Mock::start(Api { read_only: true, ..Default::default() });
    let r = Runner::new(&mock.url(), TOKEN);
    let out = run_refunds(&r, &[]);
    let o = r.step("comment", &[("EVALUA_RUN_DIRS", out["run-dirs"].as_str())]);
    assert!(o.status.success(), "never fails the job: {}", text(&o));
    assert!(text(&o).contains("HTTP 403") && text(&o).contains("Resource not accessible"), "{}", text(&o));
    assert!(mock.ours().is_empty());
    assert!(r.summary().contains("could not comment"), "{}", r.summary());
}

#[test]
fn the_job_fails_exactly_when_a_gate_fails() {
    let r = Runner::new("http://127.0.0.1:9", "");
    for (code, want) in [("0", 0), ("1", 1), ("2", 2), ("", 2)] {
        let o = r.step("conclude", &[("EVALUA_EXIT_CODE", code)]);
        assert_eq!(o.status.code(), Some(want), "exit code {code:?}: {}", text(&o));
    }
    // A suite whose gates hold: the run step reports 0.
    let dir = crate::common::project(&[(
        "ok.lua",
        r#"local evalua = require("evalua")
local suite = evalua.suite { name = "ok", trials = 2, agent = evalua.agent.scripted(function() return "hi" end),
  gate = { ["pass^2"] = 1.0 } }
suite:case { id = "a", input = "x", expect = { function(t) return t.answer == "hi", t.answer end } }
return suite
"#,
    )]);
    let ok = dir.path().join("ok.lua").display().to_string();
    let o = r.step("run", &[("EVALUA_SUITES", ok.as_str()), ("EVALUA_ARGS", "-q")]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(r.outputs()["exit-code"], "0", "{}", text(&o));
    // A suite that does not load: exit 2, and the job fails.
    let bad = dir.path().join("bad.lua");
    std::fs::write(&bad, "return 1 +").unwrap();
    let bad = bad.display().to_string();
    let o = r.step("run", &[("EVALUA_SUITES", bad.as_str())]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(r.outputs()["exit-code"], "2");
}

/// A workflow run as GitHub's API gives it: of `repo`'s workflow `file`, on `head` of `head_repo`.
fn workflow_run(id: u64, event: &str, head_repo: &str, head: &str, file: &str) -> (String, Value) {
    let run = json!({ "id": id, "event": event, "head_branch": head, "name": "evalua",
        "path": format!(".github/workflows/{file}"),
        "repository": { "full_name": REPO }, "head_repository": { "full_name": head_repo } });
    (id.to_string(), run)
}

/// An artifact of run `id` (the list's short summary of the run: its branch only).
fn artifact(id: u64, head: &str) -> Value {
    json!({ "id": id, "name": "evalua-runs", "expired": false, "workflow_run": { "id": id, "head_branch": head } })
}

#[test]
fn a_baseline_artifact_is_found_and_the_comparison_lists_regressions() {
    let artifacts = json!({ "total_count": 3, "artifacts": [
        { "id": 1, "name": "evalua-runs", "expired": false, "workflow_run": { "id": 555, "head_branch": "feature" } },
        { "id": 2, "name": "evalua-runs", "expired": true, "workflow_run": { "id": 41, "head_branch": "main" } },
        { "id": 3, "name": "evalua-runs", "expired": false, "workflow_run": { "id": 40, "head_branch": "main" } },
    ]});
    let runs = [workflow_run(40, "push", REPO, "main", "evalua.yml")].into_iter().collect();
    let mock = Mock::start(Api { artifacts, runs, ..Default::default() });
    let r = Runner::new(&mock.url(), TOKEN);
    let o = r.step("find-baseline", &[("EVALUA_BASELINE_ARTIFACT", "evalua-runs")]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(r.outputs()["run-id"], "40", "the newest unexpired artifact of the base branch: {}", text(&o));
    let (.., auth) = mock.seen().pop().unwrap();
    assert!(auth.is_some());

    // The base branch's runs (as the artifact would hold them), then this branch's with --baseline.
    let base = Runner::new(&mock.url(), TOKEN);
    run_refunds(&base, &[("EVALUA_ARGS", "--trials 3 -q --seed 1")]);
    let baseline = base.runs().display().to_string();
    let out = run_refunds(&r, &[("EVALUA_ARGS", "--trials 3 -q --seed 5"), ("EVALUA_BASELINE", baseline.as_str())]);
    let run_dir = PathBuf::from(&out["run-dirs"]);
    assert!(run_dir.join("compare.json").is_file(), "ran with --baseline");
    let o = r.step("comment", &[("EVALUA_RUN_DIRS", out["run-dirs"].as_str())]);
    assert!(o.status.success(), "{}", text(&o));
    let body = mock.ours().pop().unwrap().1;
    assert!(body.contains("Against the baseline"), "{body}");
    assert!(body.contains("regressed"), "{body}");
}

#[test]
fn a_baseline_comes_only_from_a_push_to_the_base_repositorys_branch() {
    // Newest first: a fork's pull request from its own branch named `main` (before: taken as
    // the baseline, so the fork's report spoke in the bot's comment), a pull request inside the
    // repository from its `main`, a scheduled run, then a push to main: the push is the baseline.
    let artifacts = json!({ "artifacts": [artifact(44, "main"), artifact(43, "main"), artifact(42, "main"),
        artifact(40, "main")] });
    let all = [
        workflow_run(44, "pull_request", "mallory/shop", "main", "evalua.yml"),
        workflow_run(43, "pull_request", REPO, "main", "evalua.yml"),
        workflow_run(42, "schedule", REPO, "main", "nightly.yml"),
        workflow_run(40, "push", REPO, "main", "evalua.yml"),
    ];
    let mock =
        Mock::start(Api { artifacts: artifacts.clone(), runs: all.iter().cloned().collect(), ..Default::default() });
    let r = Runner::new(&mock.url(), TOKEN);
    let o = r.step("find-baseline", &[("EVALUA_BASELINE_ARTIFACT", "evalua-runs")]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(r.outputs()["run-id"], "40", "{}", text(&o));
    assert_eq!(r.outputs()["note"], "");
    // The workflow the user names: its scheduled run is taken.
    let o = r.step(
        "find-baseline",
        &[("EVALUA_BASELINE_ARTIFACT", "evalua-runs"), ("EVALUA_BASELINE_WORKFLOW", "nightly.yml")],
    );
    assert_eq!(r.outputs()["run-id"], "42", "{}", text(&o));

    // Without the push: no baseline, and the comment says why.
    let mock = Mock::start(Api { artifacts, runs: all[..3].iter().cloned().collect(), ..Default::default() });
    let r = Runner::new(&mock.url(), TOKEN);
    let o = r.step("find-baseline", &[("EVALUA_BASELINE_ARTIFACT", "evalua-runs")]);
    assert!(o.status.success(), "{}", text(&o));
    let out = r.outputs();
    assert_eq!(out["run-id"], "", "{}", text(&o));
    let note = out["note"].clone();
    assert!(note.contains("No baseline") && note.contains("run 44: a run of a fork's pull request"), "{note}");
    assert!(note.contains("run 43: a run of a pull_request event, not a push"), "{note}");
    let run = run_refunds(&r, &[]);
    let o =
        r.step("comment", &[("EVALUA_RUN_DIRS", run["run-dirs"].as_str()), ("EVALUA_BASELINE_NOTE", note.as_str())]);
    assert!(o.status.success(), "{}", text(&o));
    let body = mock.ours().pop().unwrap().1;
    assert!(body.contains("No baseline") && body.contains("fork"), "{body}");
    assert!(!body.contains("Against the baseline"), "{body}");
}

#[test]
fn the_action_calls_only_steps_the_script_has() {
    let yml = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    let script = std::fs::read_to_string(repo().join("action/evalua_action.py")).unwrap();
    let steps: Vec<&str> =
        yml.split("evalua_action.py\" ").skip(1).map(|rest| rest.split_whitespace().next().unwrap_or("")).collect();
    assert_eq!(steps, ["version", "install", "find-baseline", "run", "comment", "conclude"], "{yml}");
    for s in steps {
        assert!(script.contains(&format!("\"{s}\": cmd_")), "the script has no step {s}");
    }
    // Every input the action declares reaches a step.
    let inputs_block = yml.split("\ninputs:\n").nth(1).unwrap().split("\noutputs:\n").next().unwrap();
    for name in inputs_block
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .map(|l| l.trim().trim_end_matches(':'))
    {
        assert!(yml.contains(&format!("inputs.{name}")), "input {name} is declared but never used");
    }
}

#[test]
fn the_install_step_takes_a_given_binary_and_refuses_what_is_not_evalua() {
    let r = Runner::new("http://127.0.0.1:9", "");
    // A binary given as a relative path: the later steps get it absolute, through GITHUB_ENV.
    let bin = Path::new(env!("CARGO_BIN_EXE_evalua"));
    let rel = pathdiff(bin, &repo());
    let o = r.step("install", &[("EVALUA_GIVEN_BIN", rel.as_str())]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains(&format!("evalua {}", env!("CARGO_PKG_VERSION"))), "{}", text(&o));
    let genv = std::fs::read_to_string(r.dir.path().join("env")).unwrap();
    assert_eq!(genv.trim(), format!("EVALUA_BIN={}", bin.canonicalize().unwrap().display()));
    assert_eq!(PathBuf::from(&r.outputs()["binary"]), bin.canonicalize().unwrap());

    // Not a file, and a program that is not evalua: the job stops there, saying why.
    let o = r.step("install", &[("EVALUA_GIVEN_BIN", "no/such/evalua")]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no/such/evalua is not an executable file"), "{}", text(&o));
    let o = r.step("install", &[("EVALUA_GIVEN_BIN", "/bin/false")]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not evalua"), "{}", text(&o));
    // Nothing to install from.
    let o = r.step("install", &[("EVALUA_WHEEL", ""), ("ACTION_PATH", "")]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("give the input `version`, `wheel` or `binary`"), "{}", text(&o));
}

/// A wheel of evalua `version` in `dir`, as pip's index would serve it: its
/// `evalua` script runs this build's binary (pip installs it offline).
fn wheel(dir: &Path, version: &str) {
    let script = format!("#!/bin/sh\nexec {:?} \"$@\"\n", env!("CARGO_BIN_EXE_evalua"));
    let py = r#"
import sys, zipfile
out, version, script = sys.argv[1], sys.argv[2], sys.argv[3]
name = "evalua-%s" % version
files = {
    "%s.data/scripts/evalua" % name: script,
    "%s.dist-info/METADATA" % name: "Metadata-Version: 2.1\nName: evalua\nVersion: %s\n" % version,
    "%s.dist-info/WHEEL" % name: "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: false\nTag: py3-none-any\n",
}
with zipfile.ZipFile("%s/%s-py3-none-any.whl" % (out, name), "w") as z:
    for path, text in files.items():
        info = zipfile.ZipInfo(path)
        info.external_attr = 0o100755 << 16  # a regular file, executable: pip keeps the bits
        info.create_system = 3
        z.writestr(info, text)
    z.writestr("%s.dist-info/RECORD" % name, "".join("%s,,\n" % p for p in list(files) + ["%s.dist-info/RECORD" % name]))
"#;
    let o = Command::new("python3").args(["-c", py, &dir.display().to_string(), version, &script]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
}

/// The action installs the evalua version it is given from a prebuilt wheel
/// (never cargo) the first time, keeps it in the cache keyed by that version,
/// and a later job takes it from there without installing anything; a cached
/// evalua of another version is not used (issue 43 item 7).
#[test]
fn the_install_step_takes_a_prebuilt_wheel_then_the_cache_keyed_by_version() {
    let version = env!("CARGO_PKG_VERSION");
    let index = tempfile::tempdir().unwrap();
    wheel(index.path(), version);
    let cache = tempfile::tempdir().unwrap();
    let cache_root = cache.path().display().to_string();
    let find_links = index.path().display().to_string();
    // No index but the folder of wheels; and no source to build from (ACTION_PATH unset).
    let first = Runner::new("http://127.0.0.1:9", "");
    let pip = [("PIP_NO_INDEX", "1"), ("PIP_FIND_LINKS", find_links.as_str()), ("ACTION_PATH", "")];
    let mut env = vec![("EVALUA_VERSION", version), ("EVALUA_CACHE_ROOT", cache_root.as_str())];
    let o = first.step("version", &env);
    assert!(o.status.success(), "{}", text(&o));
    let cache_dir = Path::new(&cache_root).join(version);
    assert_eq!(
        (first.outputs()["version"].as_str(), PathBuf::from(&first.outputs()["cache-dir"])),
        (version, cache_dir.clone())
    );
    env.extend_from_slice(&pip);
    let o = first.step("install", &env);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(first.outputs()["source"], "wheel", "{}", text(&o));
    assert!(!text(&o).contains("cargo"), "{}", text(&o));
    assert!(cache_dir.join("evalua").is_file(), "kept in the cache");
    // The installed evalua runs the later steps.
    let genv = std::fs::read_to_string(first.dir.path().join("env")).unwrap();
    let bin = genv.trim().strip_prefix("EVALUA_BIN=").unwrap().to_string();
    let v = Command::new(&bin).arg("--version").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&v.stdout).trim(), format!("evalua {version}"));

    // A later job (a fresh runner, the cache restored): nothing is installed.
    let next = Runner::new("http://127.0.0.1:9", "");
    let no_pip = [
        ("EVALUA_VERSION", version),
        ("EVALUA_CACHE_ROOT", cache_root.as_str()),
        ("PIP_NO_INDEX", "1"),
        ("ACTION_PATH", ""),
    ];
    let o = next.step("install", &no_pip);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(next.outputs()["source"], "cache", "{}", text(&o));
    assert!(!text(&o).contains("pip install"), "{}", text(&o));

    // Another version: the cache keeps none, the index has no wheel of it, there is no source: refused.
    let o = next.step(
        "install",
        &[
            ("EVALUA_VERSION", "9.9.9"),
            ("EVALUA_CACHE_ROOT", cache_root.as_str()),
            ("PIP_NO_INDEX", "1"),
            ("PIP_FIND_LINKS", find_links.as_str()),
            ("ACTION_PATH", ""),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("evalua 9.9.9 could not be installed"), "{}", text(&o));
    // A version that is not one is never used in a path or a requirement.
    let o = next.step("version", &[("EVALUA_VERSION", "../../x; rm"), ("ACTION_PATH", "")]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(next.outputs()["version"], "", "{}", text(&o));
}

/// `path` relative to `base` (both absolute), with `..` where needed.
fn pathdiff(path: &Path, base: &Path) -> String {
    let (p, b): (Vec<_>, Vec<_>) = (path.components().collect(), base.components().collect());
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out: Vec<String> = vec!["..".into(); b.len() - common];
    out.extend(p[common..].iter().map(|c| c.as_os_str().to_string_lossy().into_owned()));
    out.join("/")
}

#[test]
fn the_scripts_log_and_markdown_are_inert() {
    // What the script logs or writes into the comment itself (evalua's stderr, a note) goes
    // through log_text / md_text: no control character, no workflow command, nothing that opens.
    let probe = r#"import sys; sys.path.insert(0, "action"); import evalua_action as a
evil = "\x1b]0;t\x07 ok\n  ::add-mask::x\r\n##[group]g"
print(a.log_text(evil)); print("=====", a.md_text("@octocat <img src=x> [l](https://e.example) ``` " + evil))"#;
    let o = Command::new("python3").current_dir(repo()).args(["-c", probe]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let (log, md) = out.split_once("=====").unwrap();
    assert!(log.chars().all(|c| c == '\n' || !c.is_control()), "{log:?}");
    assert_eq!(log.lines().collect::<Vec<_>>(), ["\\x1b]0;t\\x07 ok", "\\  ::add-mask::x\\x0d", "\\##[group]g"]);
    assert_eq!(md.trim_end().lines().count(), 1, "{md}");
    for planted in ["@octocat", "<img", "](https", "```", "https://"] {
        assert!(!md.contains(planted), "{planted}: {md}");
    }
}
