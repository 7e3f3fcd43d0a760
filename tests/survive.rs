//! Runs that survive (SPEC §11): SIGKILL then --resume gives the records an
//! uninterrupted run gives; SIGINT / SIGTERM end the running trials as
//! interrupted and still write an incomplete summary and reports; a second
//! signal exits at once; --retry-errors; a mismatched run dir is refused;
//! progress lines when stderr is not a terminal.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::*;

/// Six cases of four trials; each trial spins for a few tens of ms (so a run
/// takes a second or two), flips a seeded coin and calls a tool.
const SUITE: &str = r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite { name = "slow", version = "1", trials = 4,
  sandbox = { clock = "2026-11-03T10:00:00Z" },
  agent = evalua.agent.scripted(function(task, env)
    local t0 = os.clock()
    while os.clock() - t0 < 0.04 do end
    if env.random() < 0.3 then return "no" end
    env.call("t", { n = task.trial })
    return "done " .. os.date("%Y-%m-%d")
  end),
  gate = { accepted = 0.1 } }
suite:tool { name = "t", run = function(ctx, args) return { n = args.n } end }
for i = 1, 6 do
  suite:case { id = "c" .. i, input = "x", expect = { check.tools({ "t" }), check.answer { contains = "done" } } }
end
return suite
"#;

fn spawn(dir: &Path, args: &[&str]) -> Child {
    bin().current_dir(dir).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill only sends a signal to our own child.
    unsafe {
        libc::kill(child.id() as i32, sig);
    }
}

/// Wait until the run dir's trials.jsonl holds at least `n` lines (or the child exits).
fn wait_for_lines(child: &mut Child, path: &Path, n: usize) {
    wait_until(&format!("{} to reach {n} lines", path.display()), || {
        let lines = std::fs::read_to_string(path).map(|s| s.lines().count()).unwrap_or(0);
        lines >= n || child.try_wait().unwrap().is_some()
    });
}

/// How many times a test that stops a run part-way tries again when its
/// signal came only after the run had finished (on a busy machine the test's
/// own thread can be kept waiting that long). Every try that lands asserts
/// everything; one that lands is needed.
const TRIES: usize = 5;

fn reference(dir: &Path) -> Vec<Value> {
    let o = evalua(dir, &["run", "s.lua", "-q", "--jobs", "2", "--out", "ref"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    without_timings(&dir.join("ref"))
}

#[test]
fn killed_at_random_points_and_resumed_the_records_equal_an_uninterrupted_run() {
    let dir = project(&[("s.lua", SUITE)]);
    let want = reference(dir.path());
    assert_eq!(want.len(), 24);
    let mut rng = fastrand::Rng::with_seed(16);
    for round in 0..4 {
        // Kill after a random number of finished trials (0 = before the first).
        let mut tries = 0;
        let out = loop {
            tries += 1;
            let out = format!("run{round}.{tries}");
            let trials = dir.path().join(&out).join("trials.jsonl");
            let mut child = spawn(dir.path(), &["run", "s.lua", "-q", "--jobs", "2", "--out", &out]);
            wait_for_lines(&mut child, &trials, rng.usize(0..20));
            std::thread::sleep(Duration::from_millis(rng.u64(0..30)));
            signal(&child, libc::SIGKILL);
            child.wait().unwrap();
            if !dir.path().join(&out).join("summary.json").exists() {
                break out; // killed before the summary
            }
            assert!(tries < TRIES, "round {round}: the run ended before each of {TRIES} kills");
        };
        let trials = dir.path().join(&out).join("trials.jsonl");
        // A resume may itself be killed: resume again.
        if round % 2 == 1 {
            let mut child = spawn(dir.path(), &["run", "s.lua", "-q", "--resume", &out]);
            wait_for_lines(&mut child, &trials, 20);
            signal(&child, libc::SIGKILL);
            child.wait().unwrap();
        }
        let o = evalua(dir.path(), &["run", "s.lua", "-q", "--jobs", "3", "--resume", &out]);
        assert_eq!(o.status.code(), Some(0), "round {round}: {}", stderr(&o));
        let got = without_timings(&dir.path().join(&out));
        assert_eq!(got, want, "round {round}: resumed records differ from the uninterrupted run's");
        let summary = json(&dir.path().join(&out).join("summary.json"));
        assert_eq!(summary["complete"], true);
        let m = json(&dir.path().join(&out).join("manifest.json"));
        assert!(!m["resumes"].as_array().unwrap().is_empty());
    }
}

#[test]
fn a_killed_run_without_a_summary_reports_incomplete_and_no_gate_passes() {
    let dir = project(&[("s.lua", SUITE)]);
    for tries in 1.. {
        let _ = std::fs::remove_dir_all(dir.path().join("out"));
        let trials = dir.path().join("out/trials.jsonl");
        let mut child = spawn(dir.path(), &["run", "s.lua", "-q", "--jobs", "1", "--out", "out"]);
        wait_for_lines(&mut child, &trials, 3);
        signal(&child, libc::SIGKILL);
        child.wait().unwrap();
        if !dir.path().join("out/summary.json").exists() && trials_of(&dir.path().join("out")).len() < 24 {
            break;
        }
        assert!(tries < TRIES, "the run ended before each of {TRIES} kills");
    }
    let o = evalua(dir.path(), &["report", "out"]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.lines().next().unwrap().starts_with("INCOMPLETE run:"), "{text}");
    assert!(text.contains("no summary.json"), "{text}");
    assert!(text.contains("FAIL accepted"), "{text}");
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.lines().next().unwrap().contains("INCOMPLETE"), "{md}");
    let summary = json(&dir.path().join("out/summary.json"));
    assert_eq!(summary["complete"], false);
    assert_eq!(summary["caveats"]["incomplete"], true);
    // Deciding on what ran is a choice the user makes.
    let o = evalua(dir.path(), &["report", "out", "--allow-incomplete"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn sigint_ends_running_trials_as_interrupted_and_writes_incomplete_reports() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let dir = project(&[("s.lua", SUITE)]);
        let mut tries = 0;
        let o = loop {
            tries += 1;
            let _ = std::fs::remove_dir_all(dir.path().join("out"));
            let trials = dir.path().join("out/trials.jsonl");
            let mut child = spawn(dir.path(), &["run", "s.lua", "--jobs", "2", "--out", "out"]);
            wait_for_lines(&mut child, &trials, 4);
            signal(&child, sig);
            let o = child.wait_with_output().unwrap();
            // Every trial had run before the signal came: try again.
            if trials_of(&dir.path().join("out")).len() < 24 {
                break o;
            }
            assert!(tries < TRIES, "the run ended before each of {TRIES} signals");
        };
        let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
        assert!(err.contains("received: no new trials"), "{err}");
        assert!(out.lines().next().unwrap().starts_with("INCOMPLETE run:"), "{out}");
        assert!(out.contains("FAIL accepted"), "{out}");
        let run = dir.path().join("out");
        let recs = trials_of(&run);
        assert!(recs.len() < 24, "the run stopped early: {}", recs.len());
        for r in recs.iter().filter(|r| r["ended"] == "interrupted") {
            assert_eq!(r["outcome"], "infra_error");
            assert!(r["error"].as_str().unwrap().contains("interrupted"), "{r}");
        }
        let summary = json(&run.join("summary.json"));
        assert_eq!(summary["complete"], false);
        assert_eq!(summary["coverage"]["planned"], 24);
        // Every report says so in its first line.
        for f in ["report.md", "report.html", "junit.xml"] {
            let text = std::fs::read_to_string(run.join(f)).unwrap();
            assert!(text.lines().next().unwrap().contains("INCOMPLETE"), "{f}: {}", text.lines().next().unwrap());
        }
        // Resumed, the interrupted trials run again and the run is whole.
        let o = evalua(dir.path(), &["run", "s.lua", "-q", "--resume", "out"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_eq!(json(&run.join("summary.json"))["complete"], true);
        assert_eq!(without_timings(&run), reference(dir.path()));
    }
}

/// Records as JSON (tolerating none).
fn trials_of(dir: &Path) -> Vec<Value> {
    if dir.join("trials.jsonl").exists() { trials(dir) } else { Vec::new() }
}

/// An agent (or setup command) that ignores SIGINT and SIGTERM, tells the
/// test it started (connects to the beacon at port `$1`), then sleeps an hour.
const HANG_AGENT: &str = "trap '' INT TERM; \
    python3 -c 'import socket, sys; socket.create_connection((\"127.0.0.1\", int(sys.argv[1]))).recv(3)' \"$1\"; \
    sleep 1800; sleep 1800";

/// Processes whose command line mentions `needle`.
fn left(needle: &str) -> Vec<String> {
    let ps = Command::new("ps").args(["-eo", "stat,args"]).output().unwrap();
    String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|l| l.contains(needle) && !l.starts_with('Z'))
        .map(String::from)
        .collect()
}

/// No process whose command line mentions `needle` is left (once the killed
/// ones are gone: on a busy machine dying takes a moment).
fn none_left(needle: &str) {
    assert!(eventually(|| left(needle).is_empty()), "processes left behind: {:?}", left(needle));
}

/// Wait (up to PATIENCE) for `child` to exit; its output.
fn output_of(mut child: Child, what: &str) -> std::process::Output {
    let mut status = None;
    wait_until(what, || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    child.wait_with_output().unwrap()
}

#[test]
fn a_signal_kills_the_agents_process_groups_and_still_writes_the_summary() {
    // The agents would sleep an hour, past no deadline: a run that ends was ended by the signal.
    let beacon = Rendezvous::start(1);
    let src = format!(
        r#"local evalua = require("evalua")
local suite = evalua.suite {{ name = "hang", trials = 2, budget = {{ deadline_s = 7200 }},
  agent = evalua.agent.command {{ cmd = {{ "sh", evalua.path("hang.sh"), "{port}" }} }} }}
suite:case {{ id = "c1", input = "x" }}
suite:case {{ id = "c2", input = "x",
  agent = evalua.agent.command {{ cmd = {{ "sh", "-c", "true" }}, setup = {{ "sh", evalua.path("hang.sh"), "{port}" }} }} }}
return suite
"#,
        port = beacon.port
    );
    let dir = project(&[("s.lua", &src), ("hang.sh", HANG_AGENT)]);
    let child = bin()
        .current_dir(dir.path())
        .args(["run", "s.lua", "-q", "--jobs", "4", "--out", "out"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // All four (two agents, two setups) are running.
    wait_until("the four hanging processes to start", || beacon.arrived() == 4);
    signal(&child, libc::SIGTERM);
    let o = output_of(child, "the run to end on SIGTERM");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let recs = trials(&dir.path().join("out"));
    assert_eq!(recs.len(), 4, "{recs:?}");
    assert!(recs.iter().all(|r| r["ended"] == "interrupted" && r["outcome"] == "infra_error"), "{recs:?}");
    assert_eq!(json(&dir.path().join("out/summary.json"))["complete"], false);
    // The agents (and a setup command) ignore SIGINT and SIGTERM: their groups were killed.
    none_left(dir.path().join("hang.sh").to_str().unwrap());
}

#[test]
fn a_second_signal_exits_at_once() {
    // A model agent whose API never answers (for an hour): the first signal
    // cannot end the trial until the request times out; the second does not wait.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (asked_tx, asked) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming() {
            held.push(s);
            let _ = asked_tx.send(());
        }
    });
    let src = format!(
        r#"local evalua = require("evalua")
local suite = evalua.suite {{ name = "stuck", trials = 1,
  agent = evalua.agent.openai {{ model = "m", base_url = "http://127.0.0.1:{port}/v1", api_key_env = "EVALUA_TEST_KEY",
                                timeout_s = 3600, max_retries = 0 }} }}
suite:case {{ id = "c1", input = "x" }}
return suite
"#
    );
    let dir = project(&[("s.lua", &src)]);
    let mut child = bin()
        .current_dir(dir.path())
        .args(["run", "s.lua", "-q", "--out", "out"])
        .env("EVALUA_TEST_KEY", "k")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its stderr, line by line, as it comes.
    let (line_tx, lines) = std::sync::mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for l in std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok) {
            let _ = line_tx.send(l);
        }
    });
    let mut err = String::new();
    let wait_for_line = |needle: &str, err: &mut String| {
        while !err.contains(needle) {
            match lines.recv_timeout(PATIENCE) {
                Ok(l) => {
                    err.push_str(&l);
                    err.push('\n');
                }
                Err(e) => panic!("no {needle:?} on stderr ({e}): {err}"),
            }
        }
    };
    // The trial's request is in flight.
    asked.recv_timeout(PATIENCE).expect("the agent's model request");
    signal(&child, libc::SIGINT);
    wait_for_line("SIGINT received", &mut err);
    assert!(child.try_wait().unwrap().is_none(), "the first signal waits for the running trial: {err}");
    signal(&child, libc::SIGINT);
    let mut status = None;
    wait_until("the run to exit on the second signal", || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    wait_for_line("second signal: exiting now", &mut err);
    assert_eq!(status.unwrap().code(), Some(130), "{err}");
}

#[test]
fn retry_errors_runs_only_the_infra_errors_again() {
    let src = r#"local evalua = require("evalua")
local ok = evalua.agent.command { cmd = { "sh", "-c", "read l; echo '{\"type\":\"final\",\"content\":\"ok\"}'" } }
-- The setup looks at a file beside the suite: the sandbox must show the suite's folder.
local suite = evalua.suite { name = "flaky_infra", trials = 2, agent = ok, sandbox = { expose = { "." } } }
suite:case { id = "good", input = "x" }
suite:case { id = "broken", input = "x",
  agent = evalua.agent.command { cmd = { "sh", "-c", "read l; echo '{\"type\":\"final\",\"content\":\"ok\"}'" },
                                 setup = { "sh", "-c", "test ! -e " .. evalua.path("broken") } } }
return suite
"#;
    let dir = project(&[("s.lua", src), ("broken", "")]);
    let o = run_suite(dir.path(), "s.lua", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let first = std::fs::read_to_string(dir.path().join("out/trials.jsonl")).unwrap();
    let recs = trials(&dir.path().join("out"));
    assert_eq!(recs.iter().filter(|r| r["outcome"] == "infra_error").count(), 2);
    // Resume keeps them (they finished, as infrastructure errors)...
    let o = evalua(dir.path(), &["run", "s.lua", "-q", "--resume", "out"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(dir.path().join("out/trials.jsonl")).unwrap(), first);
    // ...--retry-errors runs just them again, once the infrastructure is fixed.
    std::fs::remove_file(dir.path().join("broken")).unwrap();
    let o = evalua(dir.path(), &["run", "s.lua", "-q", "--retry-errors", "out"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("2 kept, 2 to run"), "{}", stderr(&o));
    let after = std::fs::read_to_string(dir.path().join("out/trials.jsonl")).unwrap();
    let lines: Vec<&str> = after.lines().collect();
    assert_eq!(lines.len(), 4);
    // The good case's records are the very same lines, still in plan order.
    assert_eq!(&lines[..2], &first.lines().take(2).collect::<Vec<_>>()[..]);
    let recs = trials(&dir.path().join("out"));
    assert!(recs.iter().all(|r| r["outcome"] == "accepted"), "{recs:?}");
    assert_eq!(json(&dir.path().join("out/manifest.json"))["resumes"][1]["mode"], "retry_errors");
}

#[test]
fn a_run_dir_of_another_suite_fixture_or_flags_is_refused() {
    let dir = project(&[("s.lua", SUITE), ("f.sql", "CREATE TABLE t (x);\n")]);
    let o = run_suite(dir.path(), "s.lua", &["--trials", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The flags it ran with are the defaults of a resume; others are refused.
    let o = evalua(dir.path(), &["run", "s.lua", "-q", "--resume", "out"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_user_error(
        &evalua(dir.path(), &["run", "s.lua", "--resume", "out", "--seed", "9"]),
        "(--seed: 1 then, 9 now)",
    );
    assert_user_error(
        &evalua(dir.path(), &["run", "s.lua", "--resume", "out", "--trials", "2"]),
        "(--trials: 1 then, 2 now)",
    );
    assert_user_error(&evalua(dir.path(), &["run", "s.lua", "--resume", "out", "--case", "c1"]), "the case filters");
    // The suite changed.
    std::fs::write(dir.path().join("s.lua"), SUITE.replace("version = \"1\"", "version = \"2\"")).unwrap();
    assert_user_error(&evalua(dir.path(), &["run", "s.lua", "--resume", "out"]), "the suite's version: 1 then, 2 now");
    // A fixture changed (same suite file).
    let with_fixture = SUITE.replace("input = \"x\",", "input = \"x\", fixture = \"f.sql\",");
    std::fs::write(dir.path().join("s.lua"), &with_fixture).unwrap();
    let o = evalua(dir.path(), &["run", "s.lua", "-q", "--trials", "1", "--out", "fx"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::write(dir.path().join("f.sql"), "CREATE TABLE t (x, y);\n").unwrap();
    assert_user_error(&evalua(dir.path(), &["run", "s.lua", "--resume", "fx"]), "case 'c1': its fixture changed");
    // A last line cut short by a kill is dropped (that trial runs again);
    // a broken line elsewhere is an error with its line.
    let t = dir.path().join("out/trials.jsonl");
    let whole = std::fs::read_to_string(&t).unwrap();
    std::fs::write(
        &t,
        format!("{}{{\"case\":\"c6\",\"tri", whole.lines().take(5).map(|l| format!("{l}\n")).collect::<String>()),
    )
    .unwrap();
    std::fs::write(dir.path().join("s.lua"), SUITE).unwrap();
    let o = evalua(dir.path(), &["run", "s.lua", "-q", "--resume", "out"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("its last line was cut short"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&t).unwrap().lines().count(), 6);
    assert_eq!(without_timings(&dir.path().join("out"))[5]["case"], "c6");
    std::fs::write(
        &t,
        format!("{}garbage\n{}", whole.lines().next().unwrap().to_owned() + "\n", whole.lines().nth(1).unwrap()),
    )
    .unwrap();
    assert_user_error(&evalua(dir.path(), &["run", "s.lua", "--resume", "out"]), "trials.jsonl:2: not a trial record");
    // Not a run dir at all.
    assert_user_error(&evalua(dir.path(), &["run", "s.lua", "--resume", "nope"]), "not a run dir");
}

#[test]
fn without_a_terminal_progress_is_a_line_per_case_and_a_heartbeat() {
    let dir = project(&[("s.lua", SUITE)]);
    let o = bin()
        .current_dir(dir.path())
        .args(["run", "s.lua", "--jobs", "1", "--out", "out"])
        .env("EVALUA_HEARTBEAT_S", "0.2")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("running 6 cases of slow (24 trials)"), "{err}");
    for i in 1..=6 {
        assert!(err.contains(&format!("[{i}/6] c{i}: ")), "{err}");
    }
    assert!(err.lines().any(|l| l.starts_with("… ") && l.contains("of 24 trials done")), "no heartbeat: {err}");
    // The run's last lines name the reports, then where to browse the runs.
    let out = stdout(&o);
    let last: Vec<&str> = out.lines().rev().take(3).collect();
    assert!(last[2].starts_with("report: ") && last[2].ends_with("report.html"), "{out}");
    assert!(last[1].starts_with("report: ") && last[1].ends_with("report.md"), "{out}");
    assert_eq!(last[0], "browse the runs: evalua view out", "{out}");
    // -q: quiet.
    let o = evalua(dir.path(), &["run", "s.lua", "-q", "--out", "q"]);
    assert!(!stderr(&o).contains("[1/6]"), "{}", stderr(&o));
}
