//! A real trace store: Arize Phoenix (started here on 127.0.0.1 with a temp
//! working dir) receives a run's trials over OTLP/HTTP protobuf, from
//! `evalua run --otlp` and from `evalua export`, and its REST API gives them
//! back: one trace per trial, a tool span per call with its status, and an
//! evaluation event per check.
//!
//! Skips with a loud message when EVALUA_PHOENIX_BIN is unset, unless
//! EVALUA_REQUIRE_PHOENIX=1 (set by .ci/run), where its absence fails.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;

/// How long Phoenix may take to start (a Python server that migrates its database first).
const START_PATIENCE: Duration = Duration::from_secs(600);

struct Phoenix {
    child: Child,
    base: String,
    agent: ureq::Agent,
    _dir: tempfile::TempDir,
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        // Its own process group: stop the server and whatever it started.
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

impl Phoenix {
    /// Start Phoenix, or None (skip) when it is not installed.
    fn start() -> Option<Phoenix> {
        let required = std::env::var("EVALUA_REQUIRE_PHOENIX").as_deref() == Ok("1");
        let Some(bin) = std::env::var_os("EVALUA_PHOENIX_BIN").filter(|b| Path::new(b).is_file()) else {
            if required {
                panic!(
                    "EVALUA_REQUIRE_PHOENIX=1 but EVALUA_PHOENIX_BIN is unset or missing: run .ci/run (it installs Phoenix)"
                );
            }
            eprintln!(
                "\n*** SKIPPED: the Phoenix tests need EVALUA_PHOENIX_BIN (.ci/run installs Arize Phoenix) ***\n"
            );
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(bin)
            .arg("serve")
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", "0")
            .env("PHOENIX_ALLOW_EXTERNAL_RESOURCES", "false")
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .env("PHOENIX_LOG_MIGRATIONS", "false")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start phoenix");
        let agent: ureq::Agent = ureq::Agent::config_builder()
            // Far above the need: a busy machine makes Phoenix slow to answer, not wrong.
            .timeout_global(Some(Duration::from_secs(120)))
            .http_status_as_error(false)
            .build()
            .into();
        let mut p = Phoenix { child, base: format!("http://127.0.0.1:{port}"), agent, _dir: dir };
        let started = Instant::now();
        loop {
            if let Ok(r) = p.agent.get(&format!("{}/healthz", p.base)).call()
                && r.status() == 200
            {
                eprintln!("phoenix up in {:.1} s", started.elapsed().as_secs_f64());
                return Some(p);
            }
            if let Ok(Some(st)) = p.child.try_wait() {
                panic!("phoenix exited during its start: {st}");
            }
            // Phoenix starts in seconds on an idle machine; two of them starting
            // beside a loaded build took more than 120 s.
            assert!(started.elapsed() < START_PATIENCE, "phoenix did not answer /healthz within {START_PATIENCE:?}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Every span of a project, once `want` of them are stored (ingestion is asynchronous).
    fn spans(&self, project: &str, want: usize) -> Vec<Value> {
        let started = Instant::now();
        loop {
            let mut all = Vec::new();
            let mut cursor: Option<String> = None;
            loop {
                let mut url = format!("{}/v1/projects/{project}/spans?limit=1000", self.base);
                if let Some(c) = &cursor {
                    url.push_str(&format!("&cursor={c}"));
                }
                let mut r = self.agent.get(&url).call().unwrap();
                if r.status() == 404 {
                    break; // no span stored yet
                }
                assert_eq!(r.status(), 200, "GET {url}");
                let v: Value = r.body_mut().read_json().unwrap();
                all.extend(v["data"].as_array().unwrap().iter().cloned());
                match v["next_cursor"].as_str() {
                    Some(c) => cursor = Some(c.to_string()),
                    None => break,
                }
            }
            if all.len() >= want {
                return all;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "phoenix holds {} of the {want} spans sent after {PATIENCE:?}",
                all.len()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// What Phoenix stored for a run: the checks of SPEC §9's span table.
fn check_stored(phoenix: &Phoenix, run: &Path) {
    let records = trials(run);
    let calls: u64 = records.iter().map(|r| r["calls"]["requested"].as_u64().unwrap()).sum();
    let spans = phoenix.spans("refunds", records.len() + calls as usize);
    let roots: Vec<&Value> = spans.iter().filter(|s| s["parent_id"].is_null()).collect();
    assert_eq!(roots.len(), records.len(), "one trace per trial");
    assert_eq!(spans.len() as u64, records.len() as u64 + calls, "a root and a tool span per call, nothing else");
    let mut by_trace: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for s in &spans {
        by_trace.entry(s["context"]["trace_id"].as_str().unwrap()).or_default().push(s);
    }
    for root in &roots {
        assert_eq!(root["span_kind"], "AGENT", "Phoenix reads gen_ai.operation.name = invoke_agent as an agent");
        let a = &root["attributes"];
        let (case, trial) = (a["evalua.case"].as_str().unwrap(), a["evalua.trial"].as_u64().unwrap());
        let r = records.iter().find(|r| r["case"] == case && r["trial"] == trial).expect("the root names its trial");
        assert_eq!(a["evalua.outcome"], r["outcome"]);
        // One evaluation event per check, labelled as the record says.
        let evals: Vec<&Value> =
            root["events"].as_array().unwrap().iter().filter(|e| e["name"] == "gen_ai.evaluation.result").collect();
        let checks = r["checks"].as_array().unwrap();
        assert_eq!(evals.len(), checks.len(), "{case}#{trial}: evaluation events");
        for c in checks {
            let e = evals
                .iter()
                .find(|e| e["attributes"]["gen_ai.evaluation.name"] == c["name"])
                .unwrap_or_else(|| panic!("no evaluation event for {}", c["name"]));
            let label = if c["passed"] == true { "pass" } else { "fail" };
            assert_eq!(e["attributes"]["gen_ai.evaluation.score.label"], label, "{}", c["name"]);
        }
        // Tool spans, in order, with their statuses.
        let trace = root["context"]["trace_id"].as_str().unwrap();
        let mut tools: Vec<&&Value> = by_trace[trace].iter().filter(|s| s["span_kind"] == "TOOL").collect();
        tools.sort_by_key(|s| s["start_time"].as_str().unwrap().to_string());
        let want: Vec<&str> =
            r["tool_spans"].as_array().unwrap().iter().map(|s| s["status"].as_str().unwrap()).collect();
        let got: Vec<&str> = tools.iter().map(|s| s["attributes"]["evalua.tool.status"].as_str().unwrap()).collect();
        assert_eq!(got, want, "{case}#{trial}: tool statuses");
        for t in tools {
            let executed = t["attributes"]["evalua.tool.status"] == "executed";
            assert_eq!(t["status_code"] == "ERROR", !executed, "{case}#{trial}: {}", t["name"]);
        }
    }
}

#[test]
fn phoenix_receives_a_run_exported_with_otlp() {
    let Some(phoenix) = Phoenix::start() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let o = evalua(
        &repo(),
        &["run", "suites/refunds.lua", "--seed", "7", "-q", "--out", run.to_str().unwrap(), "--otlp", &phoenix.base],
    );
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(stdout(&o).contains("exported 15 trial trace(s) to"), "{}", stdout(&o));
    check_stored(&phoenix, &run);
}

#[test]
fn phoenix_receives_a_finished_run_from_evalua_export() {
    let Some(phoenix) = Phoenix::start() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let o = evalua(&repo(), &["run", "suites/refunds.lua", "--seed", "11", "-q", "--out", run.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let o = evalua(&repo(), &["export", run.to_str().unwrap(), "--otlp", &format!("{}/v1/traces", phoenix.base)]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    check_stored(&phoenix, &run);
    let m = json(&run.join("manifest.json"));
    assert_eq!(m["exports"][0]["endpoint"], format!("{}/v1/traces", phoenix.base));
    assert_eq!(m["exports"][0]["project"], "refunds");
}
