//! Command agents: real processes speaking JSON Lines, and everything they do
//! wrong recorded as an outcome while the run goes on.

use std::path::Path;

use serde_json::Value;

use crate::common::*;

/// A test agent (tests/agents/), else an example agent (suites/agents/).
fn agent(name: &str) -> String {
    let test = repo().join("tests/agents").join(name);
    let p = if test.exists() { test } else { repo().join("suites/agents").join(name) };
    p.to_str().unwrap().to_string()
}

/// A suite whose cases each run one reference agent against a `lookup_order` tool.
fn suite(budget: &str, cases: &[(&str, &str)]) -> String {
    let helpers = repo().join("suites/agents").display().to_string();
    let mut s = format!(
        r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {{ name = "cmd", trials = 1, budget = {{ {budget} }},
  -- The test agents import the protocol helpers from suites/agents.
  sandbox = {{ expose = {{ {helpers:?} }} }} }}
suite:tool {{ name = "lookup_order",
  params = {{ type = "object", properties = {{ order_id = {{ type = "string" }} }}, required = {{ "order_id" }} }},
  run = function(ctx, a) return {{ order_id = a.order_id, units = 3, delivered = 2 }} end }}
local any = {{ name = "graded", run = function(t) return true, {{ calls = #t.calls }} end }}
"#
    );
    for (id, agent_spec) in cases {
        s.push_str(&format!(
            "suite:case {{ id = {id:?}, input = 'P-9930', agent = {agent_spec}, expect = {{ any }} }}\n"
        ));
    }
    s.push_str("return suite\n");
    s
}

fn cmd(file: &str, extra: &str) -> String {
    format!("evalua.agent.command {{ cmd = {{ 'python3', {:?} {extra} }} }}", agent(file))
}

fn alive(pid: i32) -> bool {
    // A zombie (Z) has exited; only a live process counts.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
        Err(_) => false,
    }
}

/// What `evalua check` refuses, a run refuses before any trial: a program
/// that is not there, a script that is not executable (issue 43 item 9).
#[test]
fn a_run_refuses_agents_check_refuses_before_any_trial() {
    let dir = project(&[]);
    let cases = [
        ("missing_program", "evalua.agent.command { cmd = { '/nonexistent/agent' } }".to_string()),
        ("not_executable", format!("evalua.agent.command {{ cmd = {{ {:?} }} }}", agent("evalua_protocol.py"))),
        ("fine", cmd("bad_args_agent.py", "")),
    ];
    let cases: Vec<(&str, &str)> = cases.iter().map(|(a, b)| (*a, b.as_str())).collect();
    std::fs::write(dir.path().join("cmd.lua"), suite("deadline_s = 15", &cases)).unwrap();
    let checked = evalua(dir.path(), &["check", "cmd.lua"]);
    assert_eq!(checked.status.code(), Some(2), "{}", stderr(&checked));
    let o = evalua(dir.path(), &["run", "cmd.lua", "--out", "out", "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o), stderr(&checked), "run names what check names");
    assert!(stderr(&o).contains("/nonexistent/agent") && stderr(&o).contains("evalua_protocol.py"), "{}", stderr(&o));
    assert!(!dir.path().join("out").exists(), "no run dir, no trial");
}

#[test]
fn misbehaving_agents_become_recorded_outcomes_and_the_run_goes_on() {
    let dir = project(&[]);
    let pidfile = dir.path().join("pids.txt");
    let cases = [
        ("ok", cmd("bad_args_agent.py", "")),
        ("hangs", cmd("hang_agent.py", "")),
        ("floods", cmd("flood_agent.py", "")),
        ("garbage", cmd("garbage_agent.py", "")),
        ("unknown_message", cmd("garbage_agent.py", ", 'unknown'")),
        ("crashes", cmd("crash_agent.py", "")),
        (
            "forks",
            format!(
                "evalua.agent.command {{ cmd = {{ 'python3', {:?} }}, env = {{ 'EVALUA_TEST_PIDFILE' }} }}",
                agent("fork_agent.py")
            ),
        ),
        // A program that is not there, or not executable, is refused before any
        // trial (as `evalua check` refuses it): a_run_refuses_agents_check_refuses_before_any_trial.
    ];
    let cases: Vec<(&str, &str)> = cases.iter().map(|(a, b)| (*a, b.as_str())).collect();
    // Only `hangs` needs the deadline; the others end on their own long before
    // it (0.4 s at most with the load average at 24 on 2 cores; a deadline of
    // 3 s once ended a slow-starting one).
    std::fs::write(dir.path().join("cmd.lua"), suite("deadline_s = 15", &cases)).unwrap();
    let out = output_within(
        bin()
            .current_dir(dir.path())
            .env("EVALUA_TEST_PIDFILE", &pidfile)
            .args(["run", "cmd.lua", "--out", "out", "-q", "--jobs", "4"]),
        PATIENCE,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let recs = trials(&dir.path().join("out"));
    assert_eq!(recs.len(), cases.len(), "every trial is recorded");
    let get = |id: &str| record(&recs, id, 1).clone();

    // The well-behaved one: unknown tool and bad arguments are rejected, and it goes on.
    let ok = get("ok");
    assert_eq!(ok["ended"], "final");
    assert_eq!(ok["answer"], "error,error,ok");
    assert_eq!(ok["calls"]["rejected"], 2);
    assert_eq!(ok["calls"]["executed"], 1);
    assert_eq!(ok["outcome"], "accepted");

    assert_eq!(get("hangs")["ended"], "deadline");
    let floods = get("floods");
    assert_eq!(floods["ended"], "protocol_error");
    assert!(floods["error"].as_str().unwrap().contains("longer than"), "{}", floods["error"]);
    let garbage = get("garbage");
    assert_eq!(garbage["ended"], "protocol_error");
    assert!(garbage["error"].as_str().unwrap().contains("this is not json {"), "quotes the line: {}", garbage["error"]);
    let unknown = get("unknown_message");
    assert_eq!(unknown["ended"], "protocol_error");
    assert!(unknown["error"].as_str().unwrap().contains("\"dance\""), "{}", unknown["error"]);

    let crashes = get("crashes");
    assert_eq!(crashes["ended"], "crashed");
    assert!(crashes["error"].as_str().unwrap().contains("exit status 3"), "{}", crashes["error"]);
    assert_eq!(crashes["calls"]["executed"], 1, "graded on what it did");
    let trace = trace_of(&dir.path().join("out"), &crashes);
    assert!(trace["stderr_tail"].as_str().unwrap().contains("about to fail: boom"));

    let summary = json(&dir.path().join("out/summary.json"));
    assert_eq!(summary["figures"]["infra_errors"], 0);
    assert_eq!(summary["figures"]["trials"], 7);

    // The forked child outlived its parent; it died with the trial's process group.
    let forks = get("forks");
    assert_eq!(forks["ended"], "final");
    assert_eq!(forks["answer"], "parent done");
    // In the process sandbox the agent cannot write the harness's files (nor would
    // its pids mean anything outside its PID namespace): then only the ps check below applies.
    // (A killed process takes a moment to die on a busy machine: wait for it.)
    if let Ok(text) = std::fs::read_to_string(&pidfile) {
        let pids: Vec<i32> = text.lines().map(|l| l.trim().parse().unwrap()).collect();
        assert_eq!(pids.len(), 2);
        for pid in pids {
            wait_until(&format!("process {pid} of the trial to die"), || !alive(pid));
        }
    }
    // No agent process of the run is left at all.
    let running = |name: &str| {
        let ps = std::process::Command::new("ps").args(["-eo", "stat,args"]).output().unwrap();
        let ps = String::from_utf8_lossy(&ps.stdout).into_owned();
        let left: Vec<String> = ps
            .lines()
            .filter(|l| !l.starts_with('Z'))
            .filter(|l| {
                l.contains(name) && l.contains(dir.path().to_str().unwrap_or("-"))
                    || l.contains(name) && l.contains("sleep(600)")
            })
            .map(str::to_string)
            .collect();
        left
    };
    for name in ["hang_agent.py", "flood_agent.py", "garbage_agent.py", "fork_agent.py", "time.sleep(600)"] {
        assert!(eventually(|| running(name).is_empty()), "{name} still running: {:?}", running(name));
    }
}

#[test]
fn the_environment_is_scrubbed_and_the_cwd_is_a_fresh_dir() {
    let dir = project(&[("notes.txt", "expected answers live here")]);
    // The interpreter itself, not a launcher shim that would add variables of its own.
    let real =
        std::process::Command::new("python3").args(["-c", "import sys; print(sys.executable)"]).output().unwrap();
    let python = String::from_utf8(real.stdout).unwrap().trim().to_string();
    let spec = format!("evalua.agent.command {{ cmd = {{ {python:?}, {:?} }} }}", agent("env_agent.py"));
    let s = suite("", &[("env", &spec)]);
    std::fs::write(dir.path().join("cmd.lua"), s).unwrap();
    let out = bin()
        .current_dir(dir.path())
        .env("SECRET_TOKEN", "hunter2")
        .env("LANG", "C.UTF-8")
        .args(["run", "cmd.lua", "--out", "out", "-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rec = record(&trials(&dir.path().join("out")), "env", 1).clone();
    let seen: Value = serde_json::from_str(rec["answer"].as_str().unwrap()).unwrap();
    let env = seen["env"].as_object().unwrap();
    assert!(!env.contains_key("SECRET_TOKEN"), "a harness secret leaked: {env:?}");
    assert!(!seen.to_string().contains("hunter2"));
    // Nothing but PATH, HOME and LANG (Python adds LC_CTYPE itself under the C locale;
    // bubblewrap sets PWD to the agent's own working dir).
    for k in env.keys() {
        assert!(["PATH", "HOME", "LANG", "LC_CTYPE", "PWD"].contains(&k.as_str()), "variable {k} reached the agent");
    }
    assert_eq!(env.get("LANG").and_then(|v| v.as_str()), Some("C.UTF-8"), "LANG passes through");
    let cwd = seen["cwd"].as_str().unwrap();
    assert!(!Path::new(cwd).starts_with(dir.path()), "the agent ran inside the suite's folder: {cwd}");
    if let Some(pwd) = env.get("PWD").and_then(|v| v.as_str()) {
        assert_eq!(pwd, cwd, "PWD is the agent's own working dir");
    }
    assert_eq!(seen["files"], serde_json::json!([]), "the agent sees no suite file");
    assert!(!Path::new(cwd).exists(), "the work dir is removed after the trial");
}

#[test]
fn usage_messages_feed_token_and_cost_budgets() {
    for (budget, why) in [("max_tokens = 25000", "max_tokens"), ("max_cost_usd = 0.12", "max_cost_usd")] {
        let dir = project(&[]);
        std::fs::write(dir.path().join("cmd.lua"), suite(budget, &[("spender", &cmd("usage_agent.py", ""))])).unwrap();
        let out = evalua(dir.path(), &["run", "cmd.lua", "--out", "out", "-q"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let rec = record(&trials(&dir.path().join("out")), "spender", 1).clone();
        assert_eq!(rec["ended"], "budget", "{budget}: {rec}");
        assert!(rec["error"].as_str().unwrap().contains(why));
        assert_eq!(rec["usage"]["input_tokens"], 30000, "three usage messages were counted before the stop");
        assert!(rec["calls"]["executed"].as_u64().unwrap() <= 3);
    }
}

#[test]
fn tool_call_budget_denies_the_call_over_it() {
    let dir = project(&[]);
    std::fs::write(dir.path().join("cmd.lua"), suite("max_tool_calls = 2", &[("spender", &cmd("usage_agent.py", ""))]))
        .unwrap();
    evalua(dir.path(), &["run", "cmd.lua", "--out", "out", "-q"]);
    let rec = record(&trials(&dir.path().join("out")), "spender", 1).clone();
    assert_eq!(rec["ended"], "budget");
    assert_eq!(rec["calls"]["executed"], 2);
    assert_eq!(rec["calls"]["denied"], 1);
}

#[test]
fn multi_turn_agents_get_the_scripted_user() {
    let dir = project(&[]);
    let s = suite("", &[("chat", &cmd("chatty_agent.py", ""))])
        .replace("input = 'P-9930', agent", "input = 'P-9930', user = evalua.user.script { '28013' }, agent");
    std::fs::write(dir.path().join("cmd.lua"), s).unwrap();
    evalua(dir.path(), &["run", "cmd.lua", "--out", "out", "-q"]);
    let rec = record(&trials(&dir.path().join("out")), "chat", 1).clone();
    assert_eq!(rec["answer"], "user said: 28013 | -");
    assert_eq!(rec["usage"]["turns"], 3);
}

#[test]
fn replay_rechecks_a_recorded_run_without_the_agent() {
    // Record the Python refunds agent, then replay its run dir through the
    // scripted refunds suite's cases: same calls, same answers, same outcomes.
    let dir = project(&[]);
    let rec_dir = dir.path().join("recorded");
    let o = bin()
        .current_dir(repo())
        .args(["run", "suites/refunds_python.lua", "--trials", "1", "--out", rec_dir.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let replay = std::fs::read_to_string(repo().join("suites/refunds_python.lua")).unwrap().replace(
        r#"evalua.agent.command { cmd = { "python3", evalua.path("agents/refund_agent.py") } }"#,
        &format!("evalua.agent.replay({:?})", rec_dir.to_str().unwrap()),
    );
    std::fs::write(repo().join("suites/.replay_test.lua"), replay).unwrap();
    let out_dir = dir.path().join("replayed");
    let o = bin()
        .current_dir(repo())
        .args(["run", "suites/.replay_test.lua", "--trials", "1", "--out", out_dir.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    std::fs::remove_file(repo().join("suites/.replay_test.lua")).unwrap();
    // With one trial per case the pass^3 gate is undefined, so the run exits 1.
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let a = trials(&rec_dir);
    let b = trials(&out_dir);
    assert_eq!(a.len(), 3);
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x["answer"], y["answer"]);
        assert_eq!(x["outcome"], y["outcome"]);
        assert_eq!(x["calls"], y["calls"]);
    }
}

/// The agent's exit is seen from the process itself, not only from its stdout
/// closing: a child left holding stdout does not turn an ended agent into a
/// `deadline`, and whatever the agent left running dies with its group.
#[test]
fn an_agent_exit_is_noticed_while_a_child_still_holds_its_stdout() {
    let dir = project(&[]);
    let cases = [
        // Plain io: exit 0 with an answer; a background child keeps stdout open.
        ("plain_ok", r#"evalua.agent.command { cmd = { "sh", "-c", "sleep 317 & echo answer" }, io = "plain" }"#),
        // JSON Lines: reads `start`, leaves a child on stdout, exits 3 before `final`.
        ("jsonl_crash", r#"evalua.agent.command { cmd = { "sh", "-c", "read start; sleep 317 & exit 3" } }"#),
        // JSON Lines: its final line, then exit 0, a child still on stdout.
        (
            "jsonl_final",
            r#"evalua.agent.command { cmd = { "sh", "-c", "read start; sleep 317 & echo '{\"type\":\"final\",\"content\":\"done\"}'" } }"#,
        ),
    ];
    // A deadline far above the need: each record's `ended` (not a wall time)
    // says whether its trial waited for it.
    std::fs::write(dir.path().join("cmd.lua"), suite("deadline_s = 120", &cases)).unwrap();
    let out = output_within(
        bin().current_dir(dir.path()).args(["run", "cmd.lua", "--out", "out", "-q", "--jobs", "3"]),
        PATIENCE,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let recs = trials(&dir.path().join("out"));

    let r = record(&recs, "plain_ok", 1);
    assert_eq!((r["ended"].as_str(), r["answer"].as_str()), (Some("final"), Some("answer")), "{r}");
    let r = record(&recs, "jsonl_crash", 1);
    assert_eq!(r["ended"], "crashed", "{r}");
    assert!(r["error"].as_str().unwrap().contains("exit status 3"), "{r}");
    let r = record(&recs, "jsonl_final", 1);
    assert_eq!((r["ended"].as_str(), r["answer"].as_str()), (Some("final"), Some("done")), "{r}");

    // They were killed with the trials' groups; on a busy machine dying takes a moment.
    let left = || {
        let ps = std::process::Command::new("ps").args(["-eo", "stat,args"]).output().unwrap();
        let ps = String::from_utf8_lossy(&ps.stdout).into_owned();
        ps.lines().filter(|l| l.contains("sleep 317") && !l.starts_with('Z')).map(str::to_string).collect::<Vec<_>>()
    };
    assert!(eventually(|| left().is_empty()), "children of the agents are still alive: {:?}", left());
}
