//! Labelling in `evalua view --annotator NAME` (SPEC §15): what a trial
//! offers to label (its rubric's criteria from the manifest, and the trial as
//! a whole), the store beside the suite, writes refused without the session
//! token or from another origin, a run dir that would lead the store out of
//! the project refused, two annotators writing one store at once losing no
//! line, the queue of unlabelled trials, and in headless Chromium the whole
//! flow by keyboard: open a failed trial, label two criteria, tag a failure
//! mode, reload, the labels are there.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;

use serde_json::{Value, json};

use crate::browser::Driver;
use crate::common::{bin, project, stderr};
use crate::view::{Viewer, enc, wait_js};

pub const C1: &str = "The reply states the refunded amount";
pub const C2: &str = "The reply is polite";

/// Odd trials answer without the amount: the check `states the amount` and
/// the monitor `amount_missing` fail there. The rubric has no reachable judge
/// (skipped), but its criteria are in the manifest.
pub const SUITE: &str = r#"local evalua = require("evalua")
local check = require("evalua.check")
local judge = require("evalua.judge")
local suite = evalua.suite { name = "annotated", trials = 4,
  agent = evalua.agent.scripted(function(task, env)
    if task.trial % 2 == 0 then return "Refunded 19.90 EUR. Have a nice day." end
    return "Done."
  end),
  monitors = { amount_missing = check.answer { contains = "19.90" } },
}
suite:case { id = "refund", input = "Refund order P-9930 and tell the customer.", expect = {
  check.answer { contains = "19.90", name = "states the amount" },
  judge.rubric { "The reply states the refunded amount", "The reply is polite", name = "reply",
                 model = judge.model { model = "judge-m" } },
} }
suite:case { id = "plain", input = "Say hello.", expect = { check.answer { contains = "19.90", name = "states the amount" } } }
return suite
"#;

/// A project with the suite run once into runs/annotated/r1.
pub fn annotated_project() -> tempfile::TempDir {
    let dir = project(&[("suites/annotated.lua", SUITE)]);
    let o = bin()
        .current_dir(dir.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("EVALUA_OPENAI_BASE_URL")
        .args(["run", "suites/annotated.lua", "--out", "runs/annotated/r1", "-q"])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    dir
}

/// The session token the run page carries.
pub fn token(v: &Viewer, run: &str) -> String {
    let (status, page) = v.get(&format!("/run?r={}", enc(run)));
    assert_eq!(status, 200);
    let at = page.find("\"token\":\"").expect("the page carries a token") + 9;
    page[at..at + 32].to_string()
}

pub fn run_id(v: &Viewer) -> String {
    v.runs()[0]["id"].as_str().unwrap().to_string()
}

/// POST /api/label with these headers: (status, body).
pub fn post(v: &Viewer, headers: &[(&str, &str)], body: &Value) -> (u16, Value) {
    let mut req = v.agent.post(format!("{}/api/label", v.base));
    for (k, val) in headers {
        req = req.header(*k, *val);
    }
    let mut r = req.send(body.to_string()).unwrap();
    let status = r.status().as_u16();
    let text = r.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn label(run: &str, trial: u32, criterion: Option<&str>, verdict: &str) -> Value {
    json!({ "r": run, "case": "refund", "trial": trial, "criterion": criterion, "verdict": verdict,
            "tags": ["amount_missing"], "note": "no amount" })
}

fn store_lines(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("suites/labels/annotated.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn a_trial_offers_its_criteria_and_a_label_goes_to_the_store_beside_the_suite() {
    let dir = annotated_project();
    let v = Viewer::start_with(dir.path(), &["runs"], &["--annotator", "ana"]);
    let run = run_id(&v);
    let t = v.json(&format!("/api/trial?r={}&case=refund&trial=1", enc(&run)));
    let l = &t["labels"];
    assert_eq!(l["enabled"], true, "{l}");
    assert_eq!(l["annotator"], "ana");
    assert_eq!(l["store"], "suites/labels/annotated.jsonl");
    assert_eq!(
        l["criteria"],
        json!([{ "rubric": "reply", "criterion": C1 }, { "rubric": "reply", "criterion": C2 }, { "rubric": null, "criterion": null }])
    );
    assert_eq!(l["monitors"], json!(["amount_missing"]));
    assert!(l["item"].as_str().unwrap().ends_with("/refund/1"), "{l}");
    // A case without a rubric: the trial as a whole only.
    let p = v.json(&format!("/api/trial?r={}&case=plain&trial=1", enc(&run)));
    assert_eq!(p["labels"]["criteria"], json!([{ "rubric": null, "criterion": null }]));

    let tok = token(&v, &run);
    let ok = [("x-evalua-token", tok.as_str()), ("content-type", "application/json")];
    let (status, body) = post(&v, &ok, &label(&run, 1, Some(C1), "fail"));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["mine"][0]["verdict"], "fail");
    assert_eq!(body["mine"][0]["tags"], json!(["amount_missing"]));
    let lines = store_lines(dir.path());
    assert_eq!(lines.len(), 1);
    let s = &lines[0];
    assert_eq!(s["item"], l["item"]);
    assert_eq!(
        (s["annotator"].as_str(), s["criterion"].as_str(), s["verdict"].as_str()),
        (Some("ana"), Some(C1), Some("fail"))
    );
    assert_eq!(s["note"], "no amount");
    assert_eq!(s["data"]["answer"], "Done.");
    assert_eq!(s["data"]["input"], "Refund order P-9930 and tell the customer.");
    assert_eq!(s["data"]["rubric"], "reply");
    assert_eq!(s["data"]["case"], "refund");
    let manifest: Value = crate::common::json(&dir.path().join("runs/annotated/r1/manifest.json"));
    assert_eq!(s["run"], manifest["run_id"]);
    assert_eq!(s["trace_id"].as_str().unwrap().len(), 32, "{s}");
    assert!(s["at"].as_str().unwrap().starts_with("20"), "{s}");
    // The store is one calibrate reads: its item grades without the run dir.
    let o = bin().current_dir(dir.path()).args(["labels", "export", "suites/labels/annotated.jsonl"]).output().unwrap();
    let exported: Value = serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(exported["labels"], json!({ C1: false }));
    assert_eq!(exported["rubric"], "reply");

    // A later label supersedes; the trial's view says so.
    let (status, body) = post(&v, &ok, &label(&run, 1, Some(C1), "unsure"));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["mine"].as_array().unwrap().len(), 1);
    assert_eq!(body["mine"][0]["verdict"], "unsure");
    // Not a criterion of the case; a bad verdict; too many tags: refused, nothing written.
    for bad in [
        label(&run, 1, Some("Something else"), "pass"),
        json!({ "r": run, "case": "refund", "trial": 1, "criterion": null, "verdict": "maybe" }),
        json!({ "r": run, "case": "refund", "trial": 1, "criterion": null, "verdict": "pass", "tags": vec!["x"; 51] }),
        json!({ "r": run, "case": "refund", "trial": 9, "criterion": null, "verdict": "pass" }),
        json!({ "r": "0:../..", "case": "refund", "trial": 1, "criterion": null, "verdict": "pass" }),
    ] {
        let (status, body) = post(&v, &ok, &bad);
        assert!(matches!(status, 400 | 404), "{status} {body}");
    }
    assert_eq!(store_lines(dir.path()).len(), 2);

    // The queue: the refund trials not labelled by ana on every criterion, after trial 1.
    let next = v.json(&format!("/api/next?r={}&case=refund&from_case=refund&from_trial=1", enc(&run)));
    assert_eq!((next["case"].as_str(), next["trial"].as_u64()), (Some("refund"), Some(2)), "{next}");
    assert_eq!(next["left"], 4);
    // Failed trials of the check, unlabelled: 1 and 3; trial 1 done on all three rows leaves 3.
    for c in [Some(C1), Some(C2), None] {
        assert_eq!(post(&v, &ok, &label(&run, 1, c, "fail")).0, 200);
    }
    let q = |extra: &str| {
        v.json(&format!("/api/trials?r={}&check=states%20the%20amount{extra}", enc(&run)))["total"].clone()
    };
    assert_eq!(q(""), 4);
    assert_eq!(q("&labels=unlabelled"), 3);
    assert_eq!(q("&labels=labelled"), 1);
    let next = v.json(&format!("/api/next?r={}&check=states%20the%20amount&case=refund", enc(&run)));
    assert_eq!(next["trial"], 3, "{next}");
    let prev = v.json(&format!("/api/next?r={}&case=refund&from_case=refund&from_trial=3&dir=prev", enc(&run)));
    assert_eq!(prev["trial"], 2, "{prev}");
}

/// One raw HTTP/1.1 POST; the status code.
fn raw_post(addr: &str, headers: &str, body: &str) -> u16 {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "POST /api/label HTTP/1.1\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_write_without_the_session_token_or_from_another_site_is_refused() {
    let dir = annotated_project();
    let v = Viewer::start_with(dir.path(), &["runs"], &["--annotator", "ana"]);
    let run = run_id(&v);
    let tok = token(&v, &run);
    let addr = format!("127.0.0.1:{}", v.port);
    let body = label(&run, 1, Some(C1), "pass").to_string();
    let host = format!("Host: {addr}\r\n");
    // What a page on another site can send without the viewer's help: a form
    // post (text/plain), or JSON without the token (its page cannot read it).
    for (headers, want) in [
        (format!("{host}Origin: http://evil.example\r\nContent-Type: text/plain\r\n"), 403),
        (format!("{host}Origin: http://evil.example\r\nContent-Type: application/json\r\n"), 403),
        (format!("{host}Content-Type: application/json\r\n"), 403),
        (format!("{host}Content-Type: application/json\r\nX-Evalua-Token: {}\r\n", "0".repeat(32)), 403),
        (format!("{host}Content-Type: application/json\r\nX-Evalua-Token: {}\r\n", &tok[..31]), 403),
        // With the token, from another origin: still refused.
        (
            format!("{host}Origin: http://evil.example\r\nContent-Type: application/json\r\nX-Evalua-Token: {tok}\r\n"),
            403,
        ),
        (
            format!("{host}Sec-Fetch-Site: cross-site\r\nContent-Type: application/json\r\nX-Evalua-Token: {tok}\r\n"),
            403,
        ),
        // Through a rebound DNS name: the Host is not the viewer's.
        (format!("Host: evil.example:{}\r\nContent-Type: application/json\r\nX-Evalua-Token: {tok}\r\n", v.port), 403),
        // The token, but a form's content type.
        (format!("{host}Content-Type: application/x-www-form-urlencoded\r\nX-Evalua-Token: {tok}\r\n"), 415),
    ] {
        assert_eq!(raw_post(&addr, &headers, &body), want, "{headers}");
    }
    assert!(store_lines(dir.path()).is_empty(), "a refused write wrote nothing");
    // The viewer's own page: its origin and its token.
    let headers = format!(
        "{host}Origin: http://{addr}\r\nSec-Fetch-Site: same-origin\r\nContent-Type: application/json\r\nX-Evalua-Token: {tok}\r\n"
    );
    assert_eq!(raw_post(&addr, &headers, &body), 200);
    assert_eq!(store_lines(dir.path()).len(), 1);
    // Another viewer session has another token.
    let other = Viewer::start_with(dir.path(), &["runs"], &["--annotator", "bo"]);
    assert_ne!(token(&other, &run), tok);
    let (status, _) = post(&other, &[("x-evalua-token", &tok), ("content-type", "application/json")], &json!({}));
    assert_eq!(status, 403);
    // Without --annotator: no labelling, and the page says how to turn it on.
    let off = Viewer::start(dir.path(), &["runs"]);
    let t = off.json(&format!("/api/trial?r={}&case=refund&trial=1", enc(&run)));
    assert_eq!(t["labels"]["enabled"], false);
    assert!(t["labels"]["why"].as_str().unwrap().contains("--annotator"), "{t}");
    let (status, _) =
        post(&off, &[("x-evalua-token", &token(&off, &run)), ("content-type", "application/json")], &json!({}));
    assert_eq!(status, 409);
}

#[test]
fn a_run_dir_cannot_lead_the_store_out_of_the_project() {
    let dir = annotated_project();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("evil.lua"), "return 1").unwrap();
    let m = dir.path().join("runs/annotated/r1/manifest.json");
    let mut manifest: Value = crate::common::json(&m);
    manifest["suite"]["path"] = json!(outside.path().join("evil.lua").to_str().unwrap());
    std::fs::write(&m, manifest.to_string()).unwrap();
    let v = Viewer::start_with(dir.path(), &["runs"], &["--annotator", "ana"]);
    let run = run_id(&v);
    let t = v.json(&format!("/api/trial?r={}&case=refund&trial=1", enc(&run)));
    assert_eq!(t["labels"]["enabled"], false, "{t}");
    assert!(t["labels"]["why"].as_str().unwrap().contains("outside"), "{t}");
    let tok = token(&v, &run);
    let (status, _) =
        post(&v, &[("x-evalua-token", &tok), ("content-type", "application/json")], &label(&run, 1, Some(C1), "pass"));
    assert_eq!(status, 409);
    assert!(!outside.path().join("labels").exists());
    // A store given on the command line is used as given.
    let v = Viewer::start_with(dir.path(), &["runs"], &["--annotator", "ana", "--labels", "mine.jsonl"]);
    let tok = token(&v, &run);
    let (status, body) =
        post(&v, &[("x-evalua-token", &tok), ("content-type", "application/json")], &label(&run, 1, Some(C1), "pass"));
    assert_eq!(status, 200, "{body}");
    assert_eq!(std::fs::read_to_string(dir.path().join("mine.jsonl")).unwrap().lines().count(), 1);
}

#[test]
fn two_annotators_writing_one_store_at_once_lose_no_line() {
    let dir = annotated_project();
    let viewers = [
        Viewer::start_with(dir.path(), &["runs"], &["--annotator", "ana"]),
        Viewer::start_with(dir.path(), &["runs"], &["--annotator", "bo"]),
    ];
    let run = run_id(&viewers[0]);
    let per_thread = 40;
    std::thread::scope(|s| {
        for v in &viewers {
            let tok = token(v, &run);
            for thread in 0..3 {
                let (tok, run) = (tok.clone(), run.clone());
                s.spawn(move || {
                    for i in 0..per_thread {
                        let trial = 1 + (i % 4) as u32;
                        let c = [Some(C1), Some(C2), None][thread];
                        let mut body = label(&run, trial, c, if i % 2 == 0 { "pass" } else { "fail" });
                        // A long note makes each line several KB: a torn or interleaved write would show.
                        body["note"] = json!(format!("t{thread} i{i} {}", "x".repeat(5000)));
                        let (status, out) =
                            post(v, &[("x-evalua-token", tok.as_str()), ("content-type", "application/json")], &body);
                        assert_eq!(status, 200, "{out}");
                    }
                });
            }
        }
    });
    let lines = store_lines(dir.path());
    assert_eq!(lines.len(), 2 * 3 * per_thread, "every label kept, each line whole");
    for who in ["ana", "bo"] {
        for thread in 0..3 {
            for i in 0..per_thread {
                let note = format!("t{thread} i{i} ");
                assert!(
                    lines.iter().any(|l| l["annotator"] == who && l["note"].as_str().unwrap().starts_with(&note)),
                    "{who} {note} is missing"
                );
            }
        }
    }
    // And agreement reads it.
    let o = bin()
        .current_dir(dir.path())
        .args(["labels", "agree", "suites/labels/annotated.jsonl", "--json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["annotators"], json!(["ana", "bo"]));
    assert_eq!(v["lines"], 240);
}

#[test]
fn chromium_labels_a_failed_trial_by_keyboard_and_the_labels_survive_a_reload() {
    let Some(d) = Driver::start() else { return };
    let dir = annotated_project();
    let v = Viewer::start_with(dir.path(), &["runs"], &["--annotator", "ana"]);
    let run = run_id(&v);
    let key = |k: &str| {
        // Keys as a person types them: to the page, not into a field.
        d.post("/actions", json!({ "actions": [{ "type": "key", "id": "kb", "actions":
            k.chars().flat_map(|c| [json!({ "type": "keyDown", "value": c.to_string() }), json!({ "type": "keyUp", "value": c.to_string() })]).collect::<Vec<_>>() }] }));
    };
    let ready = || wait_js(&d, "return document.body.getAttribute('data-ready')", &json!("1"));
    let saved = |n: u64| {
        wait_js(
            &d,
            "return (document.getElementById('labels')||{getAttribute:()=>''}).getAttribute('data-saved')",
            &json!(n.to_string()),
        )
    };

    // The failed trials of the check, not labelled by me: the queue.
    d.goto(&format!("{}/run?r={}&outcome=failed&labels=unlabelled", v.base, enc(&run)));
    ready();
    d.js("var s=document.getElementById('f-check');s.value='states the amount';s.dispatchEvent(new Event('change'))");
    wait_js(&d, "return document.getElementById('count').getAttribute('data-total')", &json!("4"));
    // n opens the first unlabelled trial of the list: a failed one.
    key("n");
    wait_js(&d, "return !!document.getElementById('labtab')", &json!(true));
    let title = d.js("return document.getElementById('trajtitle').innerText").as_str().unwrap().to_string();
    assert!(title.starts_with("refund · trial 1 · failed"), "{title}");
    assert_eq!(d.js("return document.querySelectorAll('#labtab tr.lab').length"), 3);
    // p on the first criterion, f on the second (focus moves down after a verdict).
    key("p");
    saved(1);
    key("f");
    saved(2);
    // A failure mode on the second criterion: k back up from the third row, t, type, Enter.
    key("k");
    key("t");
    wait_js(&d, "return document.activeElement.className", &json!("tag-in"));
    key("amount_missing\u{E007}");
    saved(3);
    let rows =
        d.js("return Array.from(document.querySelectorAll('#labtab tr.lab')).map(r=>r.getAttribute('data-verdict'))");
    assert_eq!(rows, json!(["pass", "fail", ""]));
    d.screenshot("view-labels.png");
    assert_eq!(d.js("return window.__evalua_errors"), json!([]));
    assert_eq!(d.console_errors(), Vec::<String>::new());

    // Reload: the labels come back from the store.
    d.js("location.reload()");
    ready();
    wait_js(&d, "return !!document.getElementById('labtab')", &json!(true));
    let rows =
        d.js("return Array.from(document.querySelectorAll('#labtab tr.lab')).map(r=>r.getAttribute('data-verdict'))");
    assert_eq!(rows, json!(["pass", "fail", ""]));
    let chips = d.js("return Array.from(document.querySelectorAll('#labtab tr.lab')[1].querySelectorAll('.tag')).map(t=>t.firstChild.textContent)");
    assert_eq!(chips, json!(["amount_missing"]));
    assert!(d.js("return document.getElementById('labstate').innerText").as_str().unwrap().contains("2 of 3"));
    // The store holds the three lines, in SPEC §15's shape.
    let lines = store_lines(dir.path());
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[2]["tags"], json!(["amount_missing"]));
    assert_eq!(lines[2]["verdict"], "fail");
    assert_eq!(lines[2]["criterion"], C2);

    // u on the last row finishes trial 1; n goes on to trial 3 (2 and 4 passed the check).
    key("u");
    saved(1);
    key("n");
    wait_js(
        &d,
        "return (document.getElementById('trajtitle')||{}).innerText||''",
        &json!("refund · trial 3 · failed · ended final"),
    );
    assert!(
        crate::common::eventually(|| !d
            .js("return document.getElementById('queue').innerText")
            .as_str()
            .unwrap_or("")
            .is_empty()),
        "the queue line never came"
    );
    assert!(d.js("return document.getElementById('queue').innerText").as_str().unwrap().starts_with("3 trial(s)"));
    assert_eq!(d.js("return window.__evalua_errors"), json!([]));
    assert_eq!(d.console_errors(), Vec::<String>::new());
}

/// POST one label the viewer's own page would send; the status.
fn post_label(v: &Viewer, run: &str) -> u16 {
    let tok = token(v, run);
    post(v, &[("x-evalua-token", &tok), ("content-type", "application/json")], &label(run, 1, Some(C1), "pass")).0
}

#[test]
fn the_viewer_appends_only_to_a_regular_store_no_run_dir_chose() {
    let dir = annotated_project();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("bashrc");
    let planted = "alias ls='ls --color'\n";
    std::fs::write(&victim, planted).unwrap();
    let store = dir.path().join("suites/labels/annotated.jsonl");
    std::fs::create_dir_all(store.parent().unwrap()).unwrap();
    let refused = |why: &str| {
        let v = Viewer::start_with(dir.path(), &["runs"], &["--annotator", "ana"]);
        let run = run_id(&v);
        let t = v.json(&format!("/api/trial?r={}&case=refund&trial=1", enc(&run)));
        assert_eq!(t["labels"]["enabled"], false, "{why}: {t}");
        assert_ne!(post_label(&v, &run), 200, "{why}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), planted, "{why}: the victim was written");
    };
    // The store beside the project's suite is a symlink to a file outside.
    std::os::unix::fs::symlink(&victim, &store).unwrap();
    refused("a symlinked store");
    std::fs::remove_file(&store).unwrap();
    // …or a hard link to it.
    std::fs::hard_link(&victim, &store).unwrap();
    refused("a hard-linked store");
    std::fs::remove_file(&store).unwrap();
    // …or a FIFO: refused, never waited on (before: the trial's page hung).
    let c = std::ffi::CString::new(store.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    refused("a FIFO store");
    std::fs::remove_file(&store).unwrap();
    // A downloaded run dir carrying its own suite and a store linked to the victim:
    // the manifest names that suite (found from the folder above the run dir).
    let r1 = dir.path().join("runs/annotated/r1");
    std::fs::create_dir_all(r1.join("evil/labels")).unwrap();
    std::fs::write(r1.join("evil/s.lua"), "return 1").unwrap();
    std::os::unix::fs::symlink(&victim, r1.join("evil/labels/annotated.jsonl")).unwrap();
    let m = r1.join("manifest.json");
    let mut manifest: Value = crate::common::json(&m);
    manifest["suite"]["path"] = json!("r1/evil/s.lua");
    std::fs::write(&m, manifest.to_string()).unwrap();
    refused("a store inside the run dir");
    // Without the link, still nothing is written where the run dir's content chose.
    std::fs::remove_file(r1.join("evil/labels/annotated.jsonl")).unwrap();
    refused("a suite inside the run dir");
    assert!(!r1.join("evil/labels/annotated.jsonl").exists());
    // The project's own store, a regular file, is still written.
    manifest["suite"]["path"] = json!("suites/annotated.lua");
    std::fs::write(&m, manifest.to_string()).unwrap();
    let v = Viewer::start_with(dir.path(), &["runs"], &["--annotator", "ana"]);
    assert_eq!(post_label(&v, &run_id(&v)), 200);
    assert_eq!(store_lines(dir.path()).len(), 1);
}
