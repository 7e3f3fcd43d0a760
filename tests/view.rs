//! `evalua view`: the server over run dirs. Over HTTP: what it lists, what
//! the filters and pages return, that it binds 127.0.0.1 only and answers
//! only requests addressed to it, that nothing outside the given folders is
//! served, and that a run still writing is followed. In headless Chromium
//! (as tests/browser.rs): the list, a filter's count, a trial's trajectory,
//! agent output kept as text, a planted regression in compare, no console
//! errors.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::browser::Driver;
use crate::common::*;
use crate::synth::{self, Synth};

/// A running `evalua view`, stopped when dropped.
pub struct Viewer {
    child: Child,
    pub base: String,
    pub port: u16,
    pub agent: ureq::Agent,
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Viewer {
    pub fn start(cwd: &Path, dirs: &[&str]) -> Viewer {
        Viewer::start_with(cwd, dirs, &[])
    }

    /// With more arguments (`--annotator NAME`, `--labels STORE`).
    pub fn start_with(cwd: &Path, dirs: &[&str], args: &[&str]) -> Viewer {
        let mut child = bin()
            .current_dir(cwd)
            .env_remove("EVALUA_ANNOTATOR")
            .arg("view")
            .args(dirs)
            .args(["--port", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let Some(at) = line.find("http://127.0.0.1:") else {
            let mut err = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            panic!("the viewer did not start: {line:?} {err}");
        };
        let base = line[at..].split_whitespace().next().unwrap().trim_end_matches('/').to_string();
        let port = base.rsplit(':').next().unwrap().parse().unwrap();
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(120)))
            .build()
            .into();
        Viewer { child, base, port, agent }
    }

    pub fn get(&self, path: &str) -> (u16, String) {
        let mut r = self.agent.get(format!("{}{path}", self.base)).call().unwrap();
        (r.status().as_u16(), r.body_mut().read_to_string().unwrap())
    }

    pub fn json(&self, path: &str) -> Value {
        let (status, body) = self.get(path);
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    pub fn runs(&self) -> Vec<Value> {
        self.json("/api/runs")["runs"].as_array().unwrap().clone()
    }
}

pub fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A real run of the refunds example (it writes summary.json and the reports).
fn real_run(out: &Path, seed: &str) {
    let o = bin()
        .current_dir(repo())
        .args(["run", "suites/refunds.lua", "--out", out.to_str().unwrap(), "-q", "--seed", seed, "--trials", "3"])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
}

/// Edit a run dir's manifest.json.
fn edit_manifest(dir: &Path, f: impl FnOnce(&mut Value)) {
    let mut m = json(&dir.join("manifest.json"));
    f(&mut m);
    std::fs::write(dir.join("manifest.json"), serde_json::to_string_pretty(&m).unwrap()).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn row<'a>(runs: &'a [Value], path_end: &str) -> &'a Value {
    runs.iter().find(|r| r["path"].as_str().unwrap().ends_with(path_end)).unwrap_or_else(|| panic!("no {path_end}"))
}

#[test]
fn the_list_shows_every_run_with_its_kind_status_and_figures() {
    let dir = project(&[]);
    let runs = dir.path().join("runs");
    real_run(&runs.join("refunds/a"), "1");
    // The same run as other kinds, and stopped halfway.
    copy_dir(&runs.join("refunds/a"), &runs.join("refunds/graded"));
    edit_manifest(&runs.join("refunds/graded"), |m| m["kind"] = json!("graded"));
    // A real re-grade of run a.
    let o = bin()
        .current_dir(repo())
        .args(["regrade", runs.join("refunds/a").to_str().unwrap(), "--out"])
        .arg(runs.join("refunds/regraded"))
        .arg("-q")
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    copy_dir(&runs.join("refunds/a"), &runs.join("refunds/interrupted"));
    let mut s = json(&runs.join("refunds/interrupted/summary.json"));
    s["complete"] = json!(false);
    std::fs::write(runs.join("refunds/interrupted/summary.json"), s.to_string()).unwrap();
    // No summary.json yet, records fresh: running.
    synth::write(&runs.join("synthetic/live"), &Synth::new(&[("one", "aaf"), ("two", "ac")]));
    // Not a run dir: ignored; an unreadable manifest: listed with its error.
    std::fs::create_dir_all(runs.join("notes")).unwrap();
    std::fs::write(runs.join("notes/todo.txt"), "x").unwrap();
    std::fs::create_dir_all(runs.join("broken")).unwrap();
    std::fs::write(runs.join("broken/manifest.json"), "{ not json").unwrap();

    let v = Viewer::start(dir.path(), &[]);
    let list = v.runs();
    assert_eq!(list.len(), 6, "{list:#?}");
    let a = row(&list, "refunds/a");
    let summary = json(&runs.join("refunds/a/summary.json"));
    assert_eq!(a["suite"], "refunds");
    assert_eq!(a["version"], "2026-11-29");
    assert_eq!(a["kind"], "run");
    assert_eq!(a["status"], "complete");
    assert_eq!(a["trials_planned"], 9);
    assert_eq!(a["figures"]["trials"], summary["figures"]["trials"]);
    assert_eq!(a["figures"]["accepted"]["value"], summary["figures"]["accepted_rate"]);
    assert_eq!(a["figures"]["accepted"]["low"], summary["figures"]["intervals"]["accepted"]["lower"]);
    // The suite gates pass^3: the headline k is 3.
    assert_eq!(a["figures"]["k"], 3);
    assert_eq!(a["figures"]["pass_hat"]["value"], summary["figures"]["pass_hat_k"]["3"]);
    assert_eq!(a["figures"]["pass_hat"]["high"], summary["figures"]["intervals"]["pass^3"]["upper"]);
    assert_eq!(a["gates"]["total"], summary["gates"].as_array().unwrap().len());
    assert_eq!(row(&list, "refunds/graded")["kind"], "graded");
    assert_eq!(row(&list, "refunds/regraded")["kind"], "regraded");
    assert_eq!(row(&list, "refunds/regraded")["regraded_from"], runs.join("refunds/a").to_str().unwrap());
    assert_eq!(row(&list, "refunds/interrupted")["status"], "incomplete");
    let live = row(&list, "synthetic/live");
    assert_eq!(live["status"], "running");
    assert_eq!(live["figures"]["trials_all"], 5);
    assert_eq!(live["trials_planned"], 5);
    // 4 accepted of 5 trials; c = critical.
    assert!(close(live["figures"]["accepted"]["value"].as_f64().unwrap(), (2.0 / 3.0 + 0.5) / 2.0));
    assert_eq!(live["figures"]["critical_failures"], 1);
    let broken = row(&list, "broken");
    assert!(broken["error"].as_str().unwrap().contains("manifest.json:1"), "{broken}");

    // An unchanged list is not sent again.
    let stamp = v.json("/api/runs")["stamp"].as_str().unwrap().to_string();
    assert_eq!(v.json(&format!("/api/runs?stamp={stamp}"))["unchanged"], true);

    // The run page carries the report's sections; a compare page the comparison.
    let (status, page) = v.get(&format!("/run?r={}", enc(a["id"].as_str().unwrap())));
    assert_eq!(status, 200);
    assert!(page.contains("<svg id=\"curve\"") && page.contains("<svg id=\"checkbars\"") && page.contains("Figures"));
    let live_page = format!("/run?r={}", enc(live["id"].as_str().unwrap()));
    for path in ["/", "/assets/view.js", "/assets/view.css", live_page.as_str()] {
        let (status, body) = v.get(path);
        assert_eq!(status, 200, "{path}");
        assert!(!body.contains("http://") && !body.contains("https://"), "{path} must not reach the network");
    }
    let (status, page) = v.get(&format!(
        "/compare?a={}&b={}",
        enc(a["id"].as_str().unwrap()),
        enc(row(&list, "refunds/regraded")["id"].as_str().unwrap())
    ));
    assert_eq!(status, 200);
    assert!(page.contains("id=\"mchange\"") && page.contains("Measurement change"), "{page}");
    let (_, page) = v.get(&format!(
        "/compare?a={}&b={}",
        enc(a["id"].as_str().unwrap()),
        enc(row(&list, "refunds/interrupted")["id"].as_str().unwrap())
    ));
    assert!(page.contains("per-case accepted rate") && !page.contains("Measurement change"), "{page}");
    let (status, _) =
        v.get(&format!("/compare?a={}&b={}", enc(a["id"].as_str().unwrap()), enc(live["id"].as_str().unwrap())));
    assert_eq!(status, 400, "runs of two suites are not compared");
}

/// Five cases; the check "refund amount" fails in the f trials, "no other
/// order refunded" in the c ones.
fn known() -> Synth<'static> {
    let mut s = Synth::new(&[
        ("all_pass", "aaaaa"),
        ("flaky", "aaaff"),
        ("leaky", "aaaac"),
        ("judged", "aagaa"),
        ("down", "faiff"),
    ]);
    s.gates = json!([{ "name": "critical_failures", "threshold": 0.0, "on": "point" }]);
    s
}

#[test]
fn filters_and_pages_agree_with_the_records() {
    let dir = project(&[]);
    let run = dir.path().join("runs/synthetic/r1");
    synth::write(&run, &known());
    let v = Viewer::start(dir.path(), &["runs"]);
    let id = v.runs()[0]["id"].as_str().unwrap().to_string();
    let q = |extra: &str| v.json(&format!("/api/trials?r={}{extra}", enc(&id)));
    let records = trials(&run);
    let failed_check = |r: &Value, name: &str| check(r, name)["passed"] == false;
    let with_check = records
        .iter()
        .filter(|r| {
            r["checks"].as_array().unwrap().iter().any(|c| c["name"] == "refund amount" && c["passed"] == false)
        })
        .count();
    assert_eq!(with_check, 5);
    assert_eq!(q("")["total"], 25);
    assert_eq!(q("&check=refund%20amount")["total"], with_check);
    assert_eq!(q("&check=refund%20amount&outcome=failed")["total"], with_check);
    assert_eq!(q("&check=no%20other%20order%20refunded")["total"], 1);
    assert_eq!(q("&outcome=not_accepted")["total"], records.iter().filter(|r| r["outcome"] != "accepted").count());
    assert_eq!(q("&outcome=infra_error")["total"], 1);
    assert_eq!(q("&ended=not_started")["total"], 1);
    assert_eq!(q("&case=fla")["total"], 5);
    assert_eq!(q("&case=*a*&outcome=accepted")["total"], 5 + 3 + 4);
    assert_eq!(q("&check=no%20such%20check")["total"], 0);
    let rows = q("&check=refund%20amount&per=500")["rows"].as_array().unwrap().clone();
    for r in &rows {
        let rec = record(&records, r["case"].as_str().unwrap(), r["trial"].as_u64().unwrap());
        assert!(failed_check(rec, "refund amount"), "{r}");
        assert!(r["failed"].as_array().unwrap().contains(&json!("refund amount")));
    }
    // Pages of 7 cover every trial once, in file order.
    let mut seen = Vec::new();
    for p in 0..4 {
        let page = q(&format!("&per=7&page={p}"));
        assert_eq!(page["total"], 25);
        seen.extend(page["rows"].as_array().unwrap().iter().map(|r| (r["case"].clone(), r["trial"].clone())));
    }
    let expected: Vec<(Value, Value)> = records.iter().map(|r| (r["case"].clone(), r["trial"].clone())).collect();
    assert_eq!(seen, expected);
    // A bad filter is said, not a crash.
    let (status, body) = v.get(&format!("/api/trials?r={}&outcome=passed", enc(&id)));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("outcome \\\"passed\\\"") || body.contains("outcome"), "{body}");
    // The grid keeps the cases with a matching trial and marks which cells match.
    let g = v.json(&format!("/api/grid?r={}&check=refund%20amount", enc(&id)));
    assert_eq!(g["total"], 2);
    assert_eq!(g["rows"][0]["id"], "flaky");
    assert_eq!(g["rows"][0]["cells"], "aaaff");
    assert_eq!(g["rows"][0]["matched"], "00011");
    // A trial opened: record, trace, checks and calls.
    let t = v.json(&format!("/api/trial?r={}&case=leaky&trial=5", enc(&id)));
    assert_eq!(t["record"]["outcome"], "critical");
    assert_eq!(t["trace"]["calls"].as_array().unwrap().len(), 2);
    assert_eq!(t["trace"]["calls"][1]["args"]["order_id"], "P-1");
    assert_eq!(t["trace_file"], "traces/leaky.5.json");
    assert!(t["conversation_id"].as_str().unwrap().ends_with("/leaky/5"));
    let (status, _) = v.get(&format!("/api/trial?r={}&case=leaky&trial=9", enc(&id)));
    assert_eq!(status, 404);
}

/// One raw HTTP/1.1 request; the status code.
fn raw_status(addr: &str, host: &str, path: &str) -> u16 {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn the_viewer_listens_on_127_0_0_1_only_and_answers_only_requests_to_it() {
    let dir = project(&[]);
    synth::write(&dir.path().join("runs/x"), &known());
    let v = Viewer::start(dir.path(), &[]);
    let port = v.port;
    // 127.0.0.2 is loopback too: a server bound to 0.0.0.0 (or 127.0.0.0/8) would answer there.
    assert!(TcpStream::connect(("127.0.0.2", port)).is_err(), "the viewer answers on 127.0.0.2:{port}");
    assert!(TcpStream::connect(("::1", port)).is_err(), "the viewer answers on [::1]:{port}");
    // And on this machine's other addresses, if it has any.
    if let Ok(sock) = std::net::UdpSocket::bind("0.0.0.0:0")
        && sock.connect("192.0.2.1:9").is_ok()
        && let Ok(local) = sock.local_addr()
        && !local.ip().is_loopback()
        && !local.ip().is_unspecified()
    {
        assert!(TcpStream::connect((local.ip(), port)).is_err(), "the viewer answers on {}:{port}", local.ip());
    }
    let addr = format!("127.0.0.1:{port}");
    assert_eq!(raw_status(&addr, &addr, "/"), 200);
    assert_eq!(raw_status(&addr, &format!("localhost:{port}"), "/api/runs"), 200);
    // A page elsewhere reaching it through a rebound DNS name sends its own Host.
    assert_eq!(raw_status(&addr, &format!("evil.example:{port}"), "/api/runs"), 403);
    assert_eq!(raw_status(&addr, "127.0.0.1", "/api/runs"), 403);
    let (status, _) = v.get("/");
    assert_eq!(status, 200);
}

#[test]
fn nothing_outside_the_given_folders_is_served() {
    let dir = project(&[]);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "TOP-SECRET").unwrap();
    let run = dir.path().join("runs/s/r1");
    synth::write(&run, &known());
    // A run dir outside, linked in; a trace linked out; a record naming a path out.
    synth::write(&outside.path().join("elsewhere"), &known());
    std::os::unix::fs::symlink(outside.path().join("elsewhere"), dir.path().join("runs/s/linked")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), run.join("traces/leak.json")).unwrap();
    let jsonl = std::fs::read_to_string(run.join("trials.jsonl")).unwrap();
    std::fs::write(
        run.join("trials.jsonl"),
        jsonl.replace("traces/flaky.4.json", "traces/leak.json").replace("traces/flaky.5.json", "../../../secret.txt"),
    )
    .unwrap();
    std::fs::write(dir.path().join("runs/s/outside-root.txt"), "not a run file").unwrap();

    let v = Viewer::start(dir.path(), &["runs"]);
    let list = v.json("/api/runs");
    let runs = list["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{list}");
    assert!(list["skipped"].to_string().contains("linked"), "{list}");
    let id = enc(runs[0]["id"].as_str().unwrap());
    let ok = v.get(&format!("/file?r={id}&path=traces/flaky.1.json"));
    assert_eq!(ok.0, 200);
    assert!(ok.1.contains("\"case\":\"flaky\""));
    for path in [
        "../outside-root.txt",
        "..%2Foutside-root.txt",
        "traces/../../outside-root.txt",
        "%2Fetc%2Fpasswd",
        "traces/leak.json",
        "traces",
        "",
    ] {
        let (status, body) = v.get(&format!("/file?r={id}&path={path}"));
        assert_eq!(status, 404, "{path}: {body}");
        assert!(!body.contains("TOP-SECRET") && !body.contains("not a run file") && !body.contains("root:"), "{path}");
    }
    for r in ["0:s/linked", "0:s/r1/..", "0:..", "0:/etc", "0:s/../s/r1", "1:s/r1", "s/r1"] {
        let (status, body) = v.get(&format!("/file?r={}&path=manifest.json", enc(r)));
        assert_eq!(status, 404, "{r}: {body}");
        let (status, _) = v.get(&format!("/run?r={}", enc(r)));
        assert_eq!(status, 404, "{r}");
        let (status, _) = v.get(&format!("/api/trials?r={}", enc(r)));
        assert_eq!(status, 404, "{r}");
    }
    // Trials whose trace leads out: opened without the content.
    for trial in [4, 5] {
        let t = v.json(&format!("/api/trial?r={id}&case=flaky&trial={trial}"));
        assert!(t["trace"].is_null(), "{t}");
        assert!(!t.to_string().contains("TOP-SECRET"));
        assert!(
            t["trace_error"].as_str().unwrap().contains("inside the run dir")
                || t["trace_error"].as_str().unwrap().contains("leads out"),
            "{t}"
        );
    }
    // Only the run's report.html is served as a page, sandboxed; the rest is text.
    evalua(dir.path(), &["report", "runs/s/r1"]);
    let mut r = v.agent.get(format!("{}/file?r={id}&path=report.html", v.base)).call().unwrap();
    assert_eq!(r.headers().get("content-type").unwrap(), "text/html; charset=utf-8");
    assert!(r.headers().get("content-security-policy").unwrap().to_str().unwrap().starts_with("sandbox"));
    assert!(r.body_mut().read_to_string().unwrap().contains("<svg id=\"curve\""));
    std::fs::write(run.join("traces/page.html"), "<script>alert(1)</script>").unwrap();
    let r = v.agent.get(format!("{}/file?r={id}&path=traces/page.html", v.base)).call().unwrap();
    assert_eq!(r.headers().get("content-type").unwrap(), "text/plain; charset=utf-8");
    assert_eq!(r.headers().get("x-content-type-options").unwrap(), "nosniff");
}

#[test]
fn a_run_being_written_is_followed() {
    let dir = project(&[]);
    let run = dir.path().join("runs/synthetic/live");
    synth::write(&run, &Synth::new(&[("one", "aaaa"), ("two", "afaa")]));
    let full = std::fs::read_to_string(run.join("trials.jsonl")).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    std::fs::write(run.join("trials.jsonl"), format!("{}\n", lines[..3].join("\n"))).unwrap();
    let v = Viewer::start(dir.path(), &[]);
    let first = v.runs();
    assert_eq!(first[0]["status"], "running");
    assert_eq!(first[0]["figures"]["trials_all"], 3);
    let id = enc(first[0]["id"].as_str().unwrap());
    assert_eq!(v.json(&format!("/api/trials?r={id}"))["total"], 3);
    let version = v.json(&format!("/api/run?r={id}"))["version"].as_u64().unwrap();

    // Two more lines, the second one half written.
    let mut f = std::fs::OpenOptions::new().append(true).open(run.join("trials.jsonl")).unwrap();
    let (half_a, half_b) = lines[4].split_at(lines[4].len() / 2);
    write!(f, "{}\n{half_a}", lines[3]).unwrap();
    f.flush().unwrap();
    let wait = |want: u64| {
        let t0 = Instant::now();
        loop {
            let n = v.json(&format!("/api/trials?r={id}"))["total"].as_u64().unwrap();
            if n == want {
                return;
            }
            assert!(t0.elapsed() < PATIENCE, "still {n} trials, want {want}");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    wait(4);
    let now = v.json(&format!("/api/run?r={id}&v={version}"));
    assert!(now["version"].as_u64().unwrap() > version && now["overview"].is_string(), "{now}");
    write!(f, "{half_b}\n{}\n", lines[5..].join("\n")).unwrap();
    f.flush().unwrap();
    wait(8);
    let t0 = Instant::now();
    while v.runs()[0]["figures"]["trials_all"] != 8 {
        assert!(t0.elapsed() < PATIENCE, "the run list still says {}", v.runs()[0]["figures"]["trials_all"]);
        std::thread::sleep(Duration::from_millis(200));
    }
    // A new run dir appears in the list.
    synth::write(&dir.path().join("runs/synthetic/second"), &Synth::new(&[("one", "a")]));
    assert_eq!(v.runs().len(), 2);
}

#[test]
fn bad_arguments_are_one_line_errors() {
    let dir = project(&[]);
    let o = evalua(dir.path(), &["view", "no_such_dir", "--port", "0"]);
    assert_user_error(&o, "no_such_dir: no such folder");
    // Default folder runs/ absent.
    let o = evalua(dir.path(), &["view", "--port", "0"]);
    assert_user_error(&o, "runs: no such folder");
    std::fs::create_dir(dir.path().join("runs")).unwrap();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let o = evalua(dir.path(), &["view", "runs", "--port", &port]);
    assert_user_error(&o, &format!("--port {port}: cannot listen on 127.0.0.1:{port}"));
    let o = evalua(dir.path(), &["view", "runs", "--port", "0", "--trace-url", "javascript:alert(1)"]);
    assert_user_error(&o, "--trace-url");
}

#[test]
fn run_ends_by_naming_report_html_and_evalua_view() {
    let dir = project(&[]);
    let o = bin()
        .current_dir(repo())
        .args(["run", "suites/refunds.lua", "--trials", "1", "-q", "--out"])
        .arg(dir.path().join("r"))
        .output()
        .unwrap();
    let out = stdout(&o);
    let tail: Vec<&str> = out.lines().rev().take(3).collect();
    assert!(tail.iter().any(|l| l.contains("report.html")), "{out}");
    assert!(tail.iter().any(|l| l.contains("evalua view")), "{out}");
}

// ---------------------------------------------------------------- in Chromium

pub fn wait_js(d: &Driver, script: &str, want: &Value) -> Value {
    let t0 = Instant::now();
    loop {
        let got = d.js(script);
        if &got == want {
            return got;
        }
        assert!(t0.elapsed() < PATIENCE, "{script}: {got} (want {want})");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_viewer_in_chromium_lists_filters_opens_and_compares() {
    let Some(d) = Driver::start() else { return };
    let dir = project(&[]);
    let runs = dir.path().join("runs/synthetic");
    let base = Synth::new(&[
        ("all_pass", "aaaaa"),
        ("flaky", "aaaaa"),
        ("leaky", "aaaac"),
        ("judged", "aagaa"),
        ("down", "aaiaa"),
    ]);
    synth::write(&runs.join("base"), &base);
    // The candidate: flaky regressed (planted), leaky's critical trial gone.
    let mut cand = known();
    cand.seed = 2;
    synth::write(&runs.join("cand"), &cand);
    // Markup in agent output (answer, a call's arguments and result, check evidence) must stay text.
    let cdir = runs.join("cand");
    let jsonl = std::fs::read_to_string(cdir.join("trials.jsonl")).unwrap();
    std::fs::write(
        cdir.join("trials.jsonl"),
        jsonl
            .replace("Refunded 19.90", "Refunded </script><b id=x>19.90</b>")
            .replace("\"P-1\"", "\"<img src=x onerror=window.__pwned=1>\""),
    )
    .unwrap();
    let trace = cdir.join("traces/flaky.4.json");
    let t = std::fs::read_to_string(&trace).unwrap();
    std::fs::write(
        &trace,
        t.replace("\"P-9930\"", "\"<img src=x id=y onerror=window.__pwned=1>\"")
            .replace("Refunded 19.90", "Refunded </script><b id=x>19.90</b>"),
    )
    .unwrap();
    let v = Viewer::start(dir.path(), &["runs"]);
    let no_errors = |page: &str| {
        assert_eq!(d.js("return window.__evalua_errors"), json!([]), "script errors on {page}");
        assert_eq!(d.console_errors(), Vec::<String>::new(), "console errors on {page}");
    };

    // The list shows every run; it follows a new one.
    d.goto(&format!("{}/", v.base));
    wait_js(&d, "return document.body.getAttribute('data-ready')", &json!("1"));
    assert_eq!(d.js("return document.querySelectorAll('#runs tbody tr').length"), 2);
    synth::write(&runs.join("third"), &Synth::new(&[("one", "af")]));
    wait_js(&d, "return document.querySelectorAll('#runs tbody tr').length", &json!(3));
    let text = d.js("return document.getElementById('runs').innerText").as_str().unwrap().to_string();
    assert!(text.contains("synthetic") && text.contains("running"), "{text}");
    d.screenshot("view-list.png");
    no_errors("the list");

    // Compare: select base and cand, the button opens compare with base older.
    let cand_id = v.runs().iter().find(|r| r["path"].as_str().unwrap().ends_with("cand")).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let base_id = v.runs().iter().find(|r| r["path"].as_str().unwrap().ends_with("base")).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    d.goto(&format!("{}/compare?a={}&b={}", v.base, enc(&base_id), enc(&cand_id)));
    wait_js(&d, "return document.body.getAttribute('data-ready')", &json!("1"));
    let regressed =
        d.js("var e=document.getElementById('c-regressed');return e?e.innerText:''").as_str().unwrap().to_string();
    assert!(regressed.contains("flaky") && regressed.contains("5/5") && regressed.contains("3/5"), "{regressed}");
    assert!(d.js("return document.getElementById('counts').innerText").as_str().unwrap().contains("regressed"));
    d.screenshot("view-compare.png");
    no_errors("compare");

    // The run: filter to the failed trials of one check.
    d.goto(&format!("{}/run?r={}", v.base, enc(&cand_id)));
    wait_js(&d, "return document.body.getAttribute('data-ready')", &json!("1"));
    assert!(
        d.js("return document.getElementById('overview').innerHTML").as_str().unwrap().contains("<svg id=\"curve\"")
    );
    assert_eq!(d.js("return document.getElementById('count').getAttribute('data-total')"), "25");
    d.js("var s=document.getElementById('f-check');s.value='refund amount';s.dispatchEvent(new Event('change'))");
    wait_js(&d, "return document.getElementById('count').getAttribute('data-total')", &json!("5"));
    assert_eq!(d.js("return document.querySelectorAll('#trials tbody tr.t').length"), 5);
    d.js("var s=document.getElementById('f-outcome');s.value='failed';s.dispatchEvent(new Event('change'))");
    wait_js(&d, "return document.getElementById('count').getAttribute('data-total')", &json!("5"));
    assert!(d.js("return location.search").as_str().unwrap().contains("check=refund+amount"));

    // A click opens the trajectory, with agent output as text.
    d.click("#trials tbody tr[data-case='flaky'][data-trial='4']");
    wait_js(&d, "return !!document.querySelector('#traj tr.call')", &json!(true));
    let traj = d.js("return document.getElementById('traj').innerText").as_str().unwrap().to_string();
    assert!(traj.contains("flaky · trial 4 · failed"), "{traj}");
    assert!(
        traj.contains("Tool calls, in order") && traj.contains("denied") && traj.contains("requires verify_identity"),
        "{traj}"
    );
    assert_eq!(d.js("return document.querySelectorAll('#traj tr.call').length"), 2);
    assert!(traj.contains("Refunded </script><b id=x>19.90</b>"), "{traj}");
    assert!(traj.contains("<img src=x id=y onerror=window.__pwned=1>"), "{traj}");
    assert_eq!(
        d.js("return [document.getElementById('x'), document.getElementById('y'), window.__pwned||null]"),
        json!([null, null, null])
    );
    d.screenshot("view-trial.png");

    // The grid view under the same filter, and a cell opens its trial.
    d.click("#tab-grid");
    wait_js(&d, "return document.querySelectorAll('#grid .gr').length", &json!(2));
    assert_eq!(d.js("return document.querySelectorAll('#grid .cell.dim').length"), 5);
    d.screenshot("view-grid.png");
    d.click("#f-clear");
    wait_js(&d, "return document.querySelectorAll('#grid .gr').length", &json!(5));
    assert_eq!(d.js("return document.querySelectorAll('#grid .cell.dim').length"), 0);
    d.click("#grid .cell.o-c");
    wait_js(
        &d,
        "return (document.getElementById('trajtitle')||{}).innerText||''",
        &json!("leaky · trial 5 · critical · ended final"),
    );
    let traj = d.js("return document.getElementById('traj').innerText").as_str().unwrap().to_string();
    assert!(
        traj.contains("<img src=x onerror=window.__pwned=1>") && traj.contains("no other order refunded ⚑ critical"),
        "{traj}"
    );
    assert_eq!(d.js("return window.__pwned||null"), Value::Null);
    no_errors("the run");
}

#[test]
fn compare_lists_at_most_200_cases_a_class_and_counts_the_rest() {
    let dir = project(&[]);
    let names: Vec<String> = (0..250).map(|i| format!("case_{i:03}")).collect();
    let cases: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "aa")).collect();
    synth::write(&dir.path().join("runs/big/a"), &Synth::new(&cases));
    synth::write(&dir.path().join("runs/big/b"), &Synth::new(&cases));
    let v = Viewer::start(dir.path(), &["runs"]);
    let list = v.runs();
    let (a, b) = (row(&list, "big/a")["id"].as_str().unwrap(), row(&list, "big/b")["id"].as_str().unwrap());
    let (status, page) = v.get(&format!("/compare?a={}&b={}", enc(a), enc(b)));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Unchanged (250)"), "{page}");
    assert_eq!(page.matches("<tr class=\"unchanged\">").count(), 200);
    assert!(page.contains("… and 50 more"), "{page}");
}

#[test]
fn a_packed_trace_is_shown_and_served_raw() {
    let dir = project(&[]);
    let runs = dir.path().join("runs");
    real_run(&runs.join("refunds/a"), "3");
    let v = Viewer::start(dir.path(), &["runs"]);
    let id = row(&v.runs(), "refunds/a")["id"].as_str().unwrap().to_string();
    let rec = &trials(&runs.join("refunds/a"))[0];
    assert_eq!(rec["trace"], "traces/traces.jsonl");
    let (case, trial) = (rec["case"].as_str().unwrap(), rec["trial"].as_u64().unwrap());
    // The trial's trace comes from the pack, through its index.
    let t = v.json(&format!("/api/trial?r={}&case={}&trial={trial}", enc(&id), enc(case)));
    assert_eq!(t["trace"]["case"], case, "{t}");
    assert!(t["trace_error"].is_null(), "{t}");
    assert!(t["trace_file"].is_null(), "no file of its own: {t}");
    // Raw: the stored trace alone, as `evalua show --json` prints it.
    let (status, body) = v.get(&format!("/trace?r={}&case={}&trial={trial}", enc(&id), enc(case)));
    assert_eq!(status, 200, "{body}");
    let raw: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(raw, trace(&runs.join("refunds/a"), case, trial));
    let (status, _) = v.get(&format!("/trace?r={}&case={}&trial=99", enc(&id), enc(case)));
    assert_eq!(status, 404);
}

/// Issue 27, item 14: the compare page of a re-grade leads with the checks
/// that changed verdict (as `evalua compare` does: trials, which way, the
/// cases), and at 1280 px wide neither the runs list nor that page is wider
/// than the window.
#[test]
fn a_regrades_compare_page_names_the_checks_that_changed_and_nothing_overflows_at_1280_px() {
    let dir = project(&[]);
    let d = dir.path();
    for sub in ["suites", "graders"] {
        copy_dir(&repo().join(sub), &d.join(sub));
    }
    // The example with its loop check named, without the monitor that would fail the same trials.
    let suite = d.join("suites/refunds.lua");
    let s = std::fs::read_to_string(&suite).unwrap();
    std::fs::write(&suite, s.replace("  monitors = shop.monitors(),\n", "")).unwrap();
    let shop = d.join("suites/shared/refunds_shop.lua");
    let text = std::fs::read_to_string(&shop).unwrap();
    let at = text.find("function shop.tools").unwrap();
    let (head, cases) = text.split_at(at);
    assert!(cases.contains("check.no_loops { max_repeats = 2 }"));
    let named = format!(
        "{head}{}",
        cases.replace("check.no_loops { max_repeats = 2 }", "check.no_loops { max_repeats = 2, name = \"no loops\" }")
    );
    std::fs::write(&shop, &named).unwrap();
    let long = "runs/refunds-nightly-2026-12-02-candidate-with-the-new-prompt/base";
    let o = evalua(d, &["run", "suites/refunds.lua", "--seed", "7", "-q", "--out", long]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    // The grader is fixed: three repeats of a lookup are fine.
    std::fs::write(&shop, named.replace("max_repeats = 2, name", "max_repeats = 4, name")).unwrap();
    let fixed = "runs/refunds-nightly-2026-12-02-candidate-with-the-new-prompt/regraded-with-the-fixed-loop-check";
    let o = evalua(d, &["regrade", long, "--out", fixed, "-q"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let o = evalua(d, &["compare", long, fixed, "--json"]);
    let c: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let ch = &c["measurement"]["checks"][0];
    assert_eq!(ch["check"], "no loops", "{c}");
    let n = ch["fail_to_pass"].as_u64().unwrap();
    assert!(n >= 1, "{ch}");

    let v = Viewer::start(d, &["runs"]);
    let list = v.runs();
    let (a, b) = (row(&list, "/base")["id"].as_str().unwrap(), row(&list, "fixed-loop-check")["id"].as_str().unwrap());
    let cmp = format!("/compare?a={}&b={}", enc(a), enc(b));
    let (status, page) = v.get(&cmp);
    assert_eq!(status, 200, "{page}");
    let table = page.split("id=\"checkchanges\"").nth(1).expect("the checks that changed verdict").to_string();
    let first = table.split("</tr>").nth(1).unwrap();
    assert!(first.contains("<code>no loops</code>"), "{first}");
    let cells: Vec<&str> = first.split("<td").skip(1).collect();
    let num = |i: usize| cells[i].split('>').nth(1).unwrap().split('<').next().unwrap().to_string();
    assert_eq!([num(1), num(2), num(3), num(4)], [n.to_string(), "0".into(), n.to_string(), "0".into()], "{first}");
    let case = ch["cases"][0].as_str().unwrap();
    assert!(cells[5].contains(&format!("case={}", enc(case))), "each case links to its trials: {first}");
    assert!(page.contains("of 15 paired trials changed outcome"), "{page}");
    // Two runs of the agent: no such section.
    let (_, other) = v.get(&format!("/compare?a={}&b={}", enc(b), enc(a)));
    assert!(other.contains("id=\"checkchanges\""), "the swapped pair is a measurement change too");

    let Some(br) = Driver::start() else { return };
    br.post("/window/rect", json!({ "width": 1280, "height": 900 }));
    assert_eq!(br.js("return window.outerWidth"), json!(1280));
    let fits = |what: &str| {
        let (sw, cw) = (
            br.js("return document.documentElement.scrollWidth"),
            br.js("return document.documentElement.clientWidth"),
        );
        assert!(sw.as_u64().unwrap() <= cw.as_u64().unwrap(), "{what} is {sw} px wide in a {cw} px window");
    };
    br.goto(&format!("{}/", v.base));
    wait_js(&br, "return document.querySelectorAll('#runs tbody tr').length", &json!(2));
    br.screenshot("view-list-1280.png");
    fits("the runs list");
    br.goto(&format!("{}{cmp}", v.base));
    wait_js(&br, "return document.body.getAttribute('data-ready')", &json!("1"));
    let t = br.js("return document.getElementById('checkchanges').innerText").as_str().unwrap().to_string();
    assert!(t.contains("no loops") && t.contains("fail → pass"), "{t}");
    br.screenshot("view-compare-regrade-1280.png");
    fits("the compare page");
}
