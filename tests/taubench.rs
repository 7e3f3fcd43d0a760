//! τ-bench inside evalua (SPEC §14): the two domains' suites with the gold
//! agent, the port's tool results against τ-bench's own, and
//! `check.same_state`, the stdlib check τ-bench's `r_actions` is.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::common::*;

/// What τ-bench's own tools return for each task's gold actions
/// (tests/fixtures/taubench/reference.json, written by
/// suites/taubench/make_reference.py from τ-bench's Python).
fn reference() -> Value {
    json(&repo().join("tests/fixtures/taubench/reference.json"))
}

/// The traces of a run dir, by case.
fn traces_by_case(run: &Path) -> HashMap<String, Value> {
    std::fs::read_to_string(run.join("traces/traces.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["case"].as_str().unwrap().to_string(), v)
        })
        .collect()
}

/// A call's result as the agent saw it (τ-bench: the tool's string, or `Error: <message>`).
fn seen(call: &Value) -> String {
    match &call["result"] {
        Value::String(s) => s.clone(),
        // A tool that returned None (τ-bench's agent sees null).
        Value::Null if call["status"] == "executed" => "null".into(),
        Value::Null => format!("Error: {}", call["error"].as_str().unwrap_or("")),
        other => other.to_string(),
    }
}

fn sha256(s: &str) -> String {
    Sha256::digest(s.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// A copy of suites/taubench in a temp dir: a run of held-out cases appends to
/// the ledger beside its suite, and a test never writes into the repository.
pub fn taubench_copy() -> tempfile::TempDir {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let name = e.file_name();
            if name == ".evalua" {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &to.join(&name));
            } else {
                std::fs::copy(e.path(), to.join(&name)).unwrap();
            }
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    copy(&repo().join("suites/taubench"), &tmp.path().join("taubench"));
    tmp
}

/// Run `domain`'s suite with the gold agent on the cases matching `glob`;
/// every trial must be accepted and every call's result must be τ-bench's, byte for byte.
fn gold_run_matches_taubench(domain: &str, glob: &str, want_cases: usize) {
    let tmp = taubench_copy();
    let out = tmp.path().join("out");
    let suite = tmp.path().join(format!("taubench/{domain}.lua"));
    let o = evalua(
        tmp.path(),
        &["run", suite.to_str().unwrap(), "--agent", "gold", "--case", glob, "--out", out.to_str().unwrap(), "-q"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let records = trials(&out);
    assert_eq!(records.len(), want_cases);
    for r in &records {
        assert_eq!(r["outcome"], "accepted", "{domain} {}: {}", r["case"], r["checks"]);
    }
    assert_eq!(json(&out.join("manifest.json"))["agent"]["name"], "gold");
    let reference = reference();
    let mut compared = 0;
    for (case, trace) in traces_by_case(&out) {
        let want = reference[domain][&case]["results"].as_array().unwrap();
        let calls = trace["calls"].as_array().unwrap();
        assert_eq!(calls.len(), want.len(), "{domain} {case}: calls");
        for (i, (c, w)) in calls.iter().zip(want).enumerate() {
            let text = seen(c);
            assert_eq!(
                sha256(&text),
                w["sha256"].as_str().unwrap(),
                "{domain} {case} call {i} ({}): the port says {:?}…, τ-bench {:?}…",
                c["name"],
                text.chars().take(60).collect::<String>(),
                w["start"]
            );
            compared += 1;
        }
    }
    assert!(compared > want_cases, "the gold calls ran ({compared} compared)");
}

#[test]
fn airline_gold_agent_is_accepted_and_its_results_are_taubenchs() {
    // task_1, task_10..task_19: 11 of the 50 (the full run is in docs/benchmarks.md).
    gold_run_matches_taubench("airline", "task_1*", 11);
}

#[test]
fn retail_gold_agent_is_accepted_and_its_results_are_taubenchs() {
    // task_2, task_20..29: 11 of the 115.
    gold_run_matches_taubench("retail", "task_2?", 10);
}

#[test]
fn the_taubench_suites_declare_their_cases_agents_and_splits() {
    let o = evalua(&repo(), &["check", "suites/taubench/airline.lua"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("50 cases"), "{}", stdout(&o));
    assert!(stdout(&o).contains("gold (default), model"), "{}", stdout(&o));
    let o = evalua(&repo(), &["check", "suites/taubench/retail.lua"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // 115 test tasks (held_out) and 20 dev tasks.
    assert!(stdout(&o).contains("135 cases"), "{}", stdout(&o));
    let o = evalua(&repo(), &["list", "suites/taubench/retail.lua", "--split", "dev"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("dev_0") && out.contains("dev_19") && !out.contains("task_0"), "{out}");
}

/// A shop of two tables; the gold calls add one order and raise once (a
/// call that raises changes nothing, and the replay goes on).
const SHOP: &str = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local s = evalua.suite {
  name = "shop",
  sandbox = { schema = "shop.sql" },
  agents = {
    right = evalua.agent.scripted(function(task, env)
      env.call("add_order", { id = 7, item = "lamp" })
      return "done"
    end),
    wrong = evalua.agent.scripted(function(task, env)
      env.call("add_order", { id = 7, item = "desk" })
      return "done"
    end),
    idle = evalua.agent.scripted(function(task, env) return "done" end),
  },
  default_agent = "right",
}
s:tool { name = "add_order", effect = "write",
  params = { type = "object", properties = { id = { type = "integer" }, item = { type = "string" } } },
  run = function(ctx, args)
    if args.item == "boom" then error("no such item", 0) end
    ctx.db:exec("INSERT INTO orders (id, item) VALUES (?, ?)", args.id, args.item)
    return "ok"
  end }
s:case { id = "c", input = "order a lamp",
  expect = { check.same_state({ { name = "add_order", args = { id = 7, item = "lamp" } },
                                { name = "add_order", args = { id = 8, item = "boom" } } }) } }
return s
"#;

const SHOP_SQL: &str = "CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT);\n\
                        CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);\n\
                        INSERT INTO users VALUES (1, 'ann');\n";

#[test]
fn same_state_fails_a_wrong_write_and_a_missing_one_and_accepts_the_gold_state() {
    let p = project(&[("s.lua", SHOP), ("shop.sql", SHOP_SQL)]);
    for (agent, want) in [("wrong", "failed"), ("idle", "failed"), ("right", "accepted")] {
        let out = format!("out_{agent}");
        let o = evalua(p.path(), &["run", "s.lua", "--agent", agent, "--out", &out, "-q"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let records = trials(&p.path().join(&out));
        assert_eq!(records[0]["outcome"], want, "{agent}: {}", records[0]["checks"]);
        let c = check(&records[0], "same state as the gold calls");
        match agent {
            "wrong" => {
                // The evidence says which row differs, and how.
                let t = &c["evidence"]["tables"][0];
                assert_eq!(t["table"], "orders", "{c}");
                assert_eq!(t["changed"][0]["key"], 7, "{c}");
                assert_eq!(t["changed"][0]["columns"]["item"]["here"], "desk", "{c}");
                assert_eq!(t["changed"][0]["columns"]["item"]["there"], "lamp", "{c}");
            }
            "idle" => assert_eq!(c["evidence"]["tables"][0]["only_there"][0]["item"], "lamp", "{c}"),
            _ => assert_eq!(c["evidence"], "same state", "{c}"),
        }
    }
}

#[test]
fn same_state_names_a_bad_call_at_the_suites_line() {
    let bad = SHOP.replace(r#"{ name = "add_order", args = { id = 7, item = "lamp" } }"#, r#"{ args = {} }"#);
    let p = project(&[("s.lua", &bad), ("shop.sql", SHOP_SQL)]);
    let o = evalua(p.path(), &["check", "s.lua"]);
    assert_user_error(&o, "check.same_state: call 1 must be { name = \"tool\", args = { … } }");
    assert!(stderr(&o).contains("s.lua:"), "{}", stderr(&o));
}

/// τ-bench's results for `domain`, one entry per probe sequence of
/// tests/fixtures/taubench/probes.json (calls τ-bench's tools answer with
/// errors as well as results), each on task 0, as a results file.
fn probe_results(domain: &str) -> Value {
    let probes = json(&repo().join("tests/fixtures/taubench/probes.json"));
    let tasks = json(&repo().join(format!("suites/taubench/{domain}/tasks_test.json")));
    let entries: Vec<Value> = probes[domain]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, seq)| {
            let mut traj = vec![serde_json::json!({ "role": "user", "content": "hi" })];
            for (k, c) in seq.as_array().unwrap().iter().enumerate() {
                let id = format!("call_{i}_{k}");
                traj.push(serde_json::json!({ "role": "assistant", "content": null, "tool_calls": [
                    { "id": id, "type": "function",
                      "function": { "name": c["name"], "arguments": c["args"].to_string() } }] }));
                traj.push(serde_json::json!({ "role": "tool", "tool_call_id": id, "name": c["name"], "content": "(not recorded)" }));
            }
            serde_json::json!({ "task_id": 0, "trial": i, "reward": 0.0,
              "info": { "task": tasks[0], "reward_info": { "reward": 0.0 } }, "traj": traj })
        })
        .collect();
    Value::Array(entries)
}

/// Every probe call re-executed through the port answers what τ-bench's tools
/// answer, errors included, byte for byte.
#[test]
fn reexecuted_probes_answer_what_taubenchs_tools_answer() {
    let tmp = taubench_copy();
    let reference = reference();
    for domain in ["airline", "retail"] {
        let file = tmp.path().join(format!("{domain}_probes.json"));
        std::fs::write(&file, probe_results(domain).to_string()).unwrap();
        let out = tmp.path().join(format!("out_{domain}"));
        let suite = tmp.path().join(format!("taubench/{domain}.lua"));
        let o = evalua(
            tmp.path(),
            &[
                "grade",
                suite.to_str().unwrap(),
                "--traces",
                file.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
                "-q",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let probes = reference[domain]["probes"].as_array().unwrap();
        let records = trials(&out);
        assert_eq!(records.len(), probes.len());
        let mut compared = 0;
        for (i, want) in probes.iter().enumerate() {
            let t = trace(&out, "task_0", i as u64 + 1);
            let calls = t["calls"].as_array().unwrap();
            let want = want["results"].as_array().unwrap();
            assert_eq!(calls.len(), want.len(), "{domain} probe {i}");
            for (k, (c, w)) in calls.iter().zip(want).enumerate() {
                let text = seen(c);
                assert_eq!(
                    sha256(&text),
                    w["sha256"].as_str().unwrap(),
                    "{domain} probe {i} call {k} ({} {}): the port says {:?}, τ-bench {:?}…",
                    c["name"],
                    c["args"],
                    text.chars().take(100).collect::<String>(),
                    w["start"]
                );
                // Every recorded result here is a placeholder: each call diverged.
                assert_eq!(c["diverged"], true, "{c}");
                assert_eq!(c["recorded"], "(not recorded)", "{c}");
                compared += 1;
            }
        }
        assert!(compared >= 30, "{domain}: {compared} calls compared");
    }
}

/// τ-bench's own results (the shared sample: two gold trajectories, an
/// altered copy and an unfinished one) graded by re-execution: the outcomes
/// are τ-bench's rewards.
#[test]
fn grade_reexecutes_taubench_results_and_agrees_with_their_rewards() {
    let tmp = taubench_copy();
    let sample = repo().join("tests/fixtures/taubench/sample_trajectories.json");
    let suite = tmp.path().join("taubench/airline.lua");
    let o = evalua(
        tmp.path(),
        &["grade", suite.to_str().unwrap(), "--traces", sample.to_str().unwrap(), "--out", "out", "-q"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = tmp.path().join("out");
    let records = trials(&out);
    let samples = json(&sample);
    assert_eq!(records.len(), samples.as_array().unwrap().len());
    for e in samples.as_array().unwrap() {
        let case = format!("task_{}", e["task_id"]);
        let r = record(&records, &case, e["trial"].as_u64().unwrap() + 1);
        let want = if e["reward"].as_f64() == Some(1.0) { "accepted" } else { "failed" };
        assert_eq!(r["outcome"], want, "{case} trial {}: {}", e["trial"], r["checks"]);
        if e["info"]["reward_info"].is_null() {
            // Never scored by τ-bench: it hit its step limit.
            assert_eq!(r["ended"], "budget", "{r}");
        } else if want == "failed" {
            // The altered trajectory's calls ran again: the state check sees the difference.
            let c = check(r, "database as the gold actions leave it");
            assert_eq!(c["passed"], false, "{c}");
            assert_eq!(c["evidence"]["tables"][0]["table"], "reservations", "{c}");
        }
    }
    let m = json(&out.join("manifest.json"));
    assert_eq!(m["trace_inputs"][0]["format"], "taubench_results", "{m}");
    // Each entry's reward travels with its item and is set against evalua's verdict.
    let v = json(&out.join("summary.json"))["recorded_verdicts"].clone();
    let scored = samples.as_array().unwrap().iter().filter(|e| e["reward"].is_number()).count() as u64;
    assert_eq!((v["reward"]["n"].as_u64(), v["reward"]["agree"].as_u64()), (Some(scored), Some(scored)), "{v}");
}

#[test]
fn divergent_results_are_marked_per_call_and_bad_entries_are_warnings() {
    let tmp = taubench_copy();
    let mut samples = json(&repo().join("tests/fixtures/taubench/sample_trajectories.json"));
    let list = samples.as_array_mut().unwrap();
    // Entry 0: its tool's recorded result altered.
    let tool = list[0]["traj"].as_array_mut().unwrap().iter_mut().find(|m| m["role"] == "tool").unwrap();
    tool["content"] = Value::String("{\"altered\": true}".into());
    // Entry 1: a task the suite does not have; entry 2: arguments that are not JSON; entry 3: an unknown tool.
    list[1]["task_id"] = 999.into();
    let call = list[2]["traj"].as_array_mut().unwrap().iter_mut().find(|m| m["tool_calls"].is_array()).unwrap();
    call["tool_calls"][0]["function"]["arguments"] = Value::String("{not json".into());
    let mut unknown = list[0].clone();
    unknown["trial"] = 5.into();
    let call = unknown["traj"].as_array_mut().unwrap().iter_mut().find(|m| m["tool_calls"].is_array()).unwrap();
    call["tool_calls"][0]["function"]["name"] = Value::String("teleport".into());
    list.push(unknown);
    let file = tmp.path().join("results.json");
    std::fs::write(&file, samples.to_string()).unwrap();
    let suite = tmp.path().join("taubench/airline.lua");
    let o = evalua(tmp.path(), &["grade", suite.to_str().unwrap(), "--traces", file.to_str().unwrap(), "--out", "out"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("entry 2") && err.contains("arguments are not JSON"), "{err}");
    assert!(err.contains("task_999") && err.contains("does not declare"), "{err}");
    assert!(err.contains("teleport"), "{err}");
    let out = tmp.path().join("out");
    let records = trials(&out);
    // Entries 0, 3 and the unknown tool's are graded; 1 and 2 are not.
    assert_eq!(records.len(), 3, "{records:?}");
    let t = trace(&out, "task_1", 1);
    let c = &t["calls"][0];
    assert_eq!(c["diverged"], true, "{c}");
    assert_eq!(c["recorded"], "{\"altered\": true}", "{c}");
    assert!(c["result"].as_str().unwrap().contains("\"status\": \"cancelled\""), "{c}");
    let t = trace(&out, "task_1", 6);
    assert_eq!(t["calls"][0]["status"], "rejected", "{}", t["calls"][0]);
    assert_eq!(record(&records, "task_1", 6)["outcome"], "failed");
}

#[test]
fn a_results_file_with_nothing_gradable_is_exit_2() {
    let tmp = taubench_copy();
    let file = tmp.path().join("results.json");
    std::fs::write(
        &file,
        r#"[{"task_id": 999, "trial": 0, "info": {"task": {}}, "traj": []}, {"task_id": "x", "traj": []}]"#,
    )
    .unwrap();
    let suite = tmp.path().join("taubench/airline.lua");
    let o = evalua(tmp.path(), &["grade", suite.to_str().unwrap(), "--traces", file.to_str().unwrap(), "--out", "out"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.lines().any(|l| l.starts_with("error: ") && l.contains("no item could be graded")), "{err}");
    assert!(err.contains("entry 0") && err.contains("task_999"), "{err}");
    assert!(err.contains("entry 1") && err.contains("task_id"), "{err}");
}

/// Items re-executed one after another on one worker (`--jobs 1`) reuse
/// its evaluated suite, each with its case built afresh from the task its
/// entry carries. Each way an item could carry state into the next is tried
/// alone (one would hide another): every item's call must still see 1.
#[test]
fn a_reexecuted_item_never_sees_what_an_earlier_item_did() {
    let leaks = [
        ("file_local_number", "local n = 0", "", "n = n + 1 return n"),
        ("global", "", "", "LEAK_N = (LEAK_N or 0) + 1 return LEAK_N"),
        ("project_module", "local counter = require('counter')", "", "return counter.bump()"),
        ("case_table", "", "", "ctx.case.touched = (ctx.case.touched or 0) + 1 return ctx.case.touched"),
        (
            "task_row",
            "",
            "",
            "ctx.case.metadata.task.seen = (ctx.case.metadata.task.seen or 0) + 1 return ctx.case.metadata.task.seen",
        ),
        (
            "table_the_map_shares",
            "local shared = { n = 0 }",
            "shared = shared,",
            "ctx.case.metadata.shared.n = ctx.case.metadata.shared.n + 1 return ctx.case.metadata.shared.n",
        ),
        ("stashed_case", "", "", "STASH = STASH or ctx.case STASH.k = (STASH.k or 0) + 1 return STASH.k"),
    ];
    let module = "local M = { n = 0 }\nfunction M.bump() M.n = M.n + 1 return M.n end\nreturn M\n";
    let tasks = r#"[{"instruction": "a"}, {"instruction": "b"}]"#;
    // Four trials of each task, each calling `leak` once and recorded as seeing 1.
    let mut entries = Vec::new();
    for task in 0..2 {
        let instruction = ["a", "b"][task];
        for trial in 0..4 {
            entries.push(serde_json::json!({
                "task_id": task, "trial": trial, "reward": 1.0,
                "info": { "task": { "instruction": instruction }, "reward_info": { "reward": 1.0 } },
                "traj": [
                    { "role": "system", "content": "policy" },
                    { "role": "user", "content": instruction },
                    { "role": "assistant", "content": null, "tool_calls": [
                        { "id": "c1", "type": "function", "function": { "name": "leak", "arguments": "{}" } } ] },
                    { "role": "tool", "tool_call_id": "c1", "name": "leak", "content": "1" },
                    { "role": "assistant", "content": "done" }
                ]
            }));
        }
    }
    let results = Value::Array(entries).to_string();
    let mut leaked = Vec::new();
    for (name, setup, field, body) in leaks {
        let suite = format!(
            r#"
local evalua = require("evalua")
{setup}
local suite = evalua.suite {{ name = "{name}", agent = evalua.agent.scripted(function() return "" end) }}
suite:tool {{ name = "leak", validate = false, run = function(ctx) local function f() {body} end return tostring(f()) end }}
local runs = 0
suite:dataset("tasks.json", {{ format = "json", map = function(task, i)
  return {{ id = "task_" .. (i - 1), input = task.instruction, metadata = {{ {field} task = task }},
    expect = {{ function(t) runs = runs + 1 return t.calls[1].result == "1" and runs == 1, {{ result = t.calls[1].result, runs = runs }} end }} }}
end }})
return suite
"#
        );
        let dir = project(&[
            ("leak.lua", suite.as_str()),
            ("counter.lua", module),
            ("tasks.json", tasks),
            ("results.json", results.as_str()),
        ]);
        let o =
            evalua(dir.path(), &["grade", "leak.lua", "--traces", "results.json", "--jobs", "1", "--out", "out", "-q"]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        let recs = trials(&dir.path().join("out"));
        assert_eq!(recs.len(), 8, "{name}: {}", stderr(&o));
        let bad: Vec<String> = recs
            .iter()
            .filter(|r| r["outcome"] != "accepted")
            .map(|r| format!("{}.{}: {}", r["case"], r["trial"], r["checks"][0]["evidence"]))
            .collect();
        if !bad.is_empty() {
            leaked.push(format!("{name}: {bad:?}"));
        }
    }
    assert!(leaked.is_empty(), "an item saw an earlier item's state: {leaked:#?}");
}

/// Re-execution is general: evalua's own run dirs, with `--reexecute`, get
/// their state checks back (without it they are not applicable).
#[test]
fn reexecute_gives_a_run_dirs_trials_their_state_checks_back() {
    let p = project(&[("s.lua", SHOP), ("shop.sql", SHOP_SQL)]);
    for agent in ["wrong", "right"] {
        let o = evalua(p.path(), &["run", "s.lua", "--agent", agent, "--out", agent, "-q"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let name = "same state as the gold calls";
    let o = evalua(p.path(), &["grade", "s.lua", "--traces", "wrong", "--out", "as_recorded", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let c = check(&trials(&p.path().join("as_recorded"))[0], name).clone();
    assert!(c["passed"].is_null() && c["error"].is_null(), "not applicable without re-execution: {c}");
    for (dir, want) in [("wrong", "failed"), ("right", "accepted")] {
        let out = format!("re_{dir}");
        let o = evalua(p.path(), &["grade", "s.lua", "--traces", dir, "--reexecute", "--out", &out, "-q"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let records = trials(&p.path().join(&out));
        assert_eq!(records[0]["outcome"], want, "{dir}: {}", records[0]["checks"]);
        assert_eq!(check(&records[0], name)["passed"], want == "accepted");
        assert_eq!(records[0]["source"]["file"].as_str().map(|f| f.contains(dir)), Some(true), "{}", records[0]);
    }
}

// ---------------------------------------------------------------------------
// The live path: `--agent model` driven by τ-bench's simulated user, against
// mock model servers on 127.0.0.1 (one plays the agent's model, one the user's).

use crate::models::{Mock, oa};

/// τ-bench's user simulator's system prompt (tau_bench/envs/user.py,
/// LLMUserSimulationEnv.build_system_prompt), written out here independently
/// of the suite's copy.
fn taubench_user_prompt(instruction: &str) -> String {
    format!(
        "You are a user interacting with an agent.\n\nInstruction: {instruction}\n\nRules:
- Just generate one line at a time to simulate the user's message.
- Do not give away all the instruction at once. Only provide the information that is necessary for the current step.
- Do not hallucinate information that is not provided in the instruction. For example, if the agent asks for the order id but it is not mentioned in the instruction, do not make up an order id, just say you do not remember or have it.
- If the instruction goal is satisified, generate '###STOP###' as a standalone message without anything else to end the conversation.
- Do not repeat the exact instruction in the conversation. Instead, use your own words to convey the same information.
- Try to make the conversation as natural as possible, and stick to the personalities in the instruction."
    )
}

/// `evalua run airline.lua --agent model --case CASE`, the agent's model at
/// `agent`, the simulated user's at `user`; the run dir.
fn run_model(tmp: &Path, case: &str, agent: &Mock, user: &Mock) -> std::path::PathBuf {
    let out = tmp.join(format!("out_{case}"));
    let suite = tmp.join("taubench/airline.lua");
    let o = bin()
        .current_dir(tmp)
        .args([
            "run",
            suite.to_str().unwrap(),
            "--agent",
            "model",
            "--case",
            case,
            "--out",
            out.to_str().unwrap(),
            "-q",
        ])
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env("EVALUA_OPENAI_BASE_URL", agent.openai_url())
        .env("EVALUA_OPENAI_MODEL", "mock-agent")
        .env("EVALUA_USER_BASE_URL", user.openai_url())
        .env("EVALUA_USER_MODEL", "mock-user")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    out
}

fn airline_task(i: usize) -> Value {
    json(&repo().join("suites/taubench/airline/tasks_test.json"))[i].clone()
}

/// A model playing task 1's gold call (cancel Z7GOZK) in τ-bench's loop is
/// accepted; what each model saw is what τ-bench's loop shows it.
#[test]
fn model_agent_playing_the_gold_calls_with_the_simulated_user_is_accepted() {
    let tmp = taubench_copy();
    let task = airline_task(1);
    let instruction = task["instruction"].as_str().unwrap();
    let opening = "Hi, I need to cancel my reservation Z7GOZK.";
    let user = Mock::start(vec![oa(Some(opening), &[], 50, 10), oa(Some("###STOP###"), &[], 60, 2)]);
    let agent = Mock::start(vec![
        // A raising tool: the model sees τ-bench's "Error: <message>".
        oa(None, &[("c0", "calculate", serde_json::json!({ "expression": "1 / 0" }))], 100, 10),
        // Two calls in one response: τ-bench runs the first only; the second
        // (a write that would spoil the state) never runs.
        oa(
            None,
            &[
                ("c1", "get_reservation_details", serde_json::json!({ "reservation_id": "Z7GOZK" })),
                ("c2", "cancel_reservation", serde_json::json!({ "reservation_id": "H9ZU1C" })),
            ],
            100,
            10,
        ),
        oa(None, &[("c3", "cancel_reservation", serde_json::json!({ "reservation_id": "Z7GOZK" }))], 100, 10),
        oa(Some("Your reservation Z7GOZK is cancelled; the refund goes to the original payment."), &[], 100, 10),
    ]);
    let out = run_model(tmp.path(), "task_1", &agent, &user);
    let r = &trials(&out)[0];
    assert_eq!(r["outcome"], "accepted", "{}", r["checks"]);
    assert_eq!(r["agent"], "model");
    let t = trace_of(&out, r);
    let calls: Vec<&str> = t["calls"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(
        calls,
        ["calculate", "get_reservation_details", "cancel_reservation"],
        "the second call of a step never ran"
    );

    // The user opened: the agent's first message is the user's line, never the instruction.
    let seen = agent.seen();
    assert_eq!(seen.len(), 4);
    let first = &seen[0].body["messages"];
    assert_eq!(first[0]["role"], "system");
    assert!(first[0]["content"].as_str().unwrap().starts_with("# Airline Agent Policy"), "{}", first[0]);
    assert_eq!(first[1], serde_json::json!({ "role": "user", "content": opening }));
    assert_eq!(first.as_array().unwrap().len(), 2);
    for s in &seen {
        assert!(!s.body.to_string().contains(&instruction[..60]), "the instruction reached the agent");
        assert!(!s.body.to_string().contains("How can I help you today"), "the greeting reached the agent");
    }
    assert_eq!(t["messages"][0]["content"], opening);
    assert_eq!(t["input"], opening);

    // Tool results reach the model as τ-bench's text, not wrapped in JSON.
    let msgs = seen[3].body["messages"].as_array().unwrap();
    let tool_text = |id: &str| {
        msgs.iter().find(|m| m["role"] == "tool" && m["tool_call_id"] == id).unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(tool_text("c0"), "Error: division by zero");
    let details = tool_text("c1");
    assert!(details.starts_with("{\"reservation_id\": \"Z7GOZK\", "), "{details}");
    assert_eq!(details, t["calls"][1]["result"].as_str().unwrap());
    // The dropped call is not in the conversation either.
    let asked: Vec<&str> =
        msgs.iter().filter_map(|m| m["tool_calls"].as_array()).flatten().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(asked, ["c0", "c1", "c3"]);
    assert!(!seen[3].body.to_string().contains("H9ZU1C"));

    // The user simulator: τ-bench's prompt, opened by the greeting, then the agent's words.
    let us = user.seen();
    assert_eq!(us.len(), 2);
    assert_eq!(
        us[0].body["messages"],
        serde_json::json!([
            { "role": "system", "content": taubench_user_prompt(instruction) },
            { "role": "user", "content": "Hi! How can I help you today?" },
        ])
    );
    assert_eq!(us[1].body["messages"][2], serde_json::json!({ "role": "assistant", "content": opening }));
    assert_eq!(
        us[1].body["messages"][3]["content"],
        "Your reservation Z7GOZK is cancelled; the refund goes to the original payment."
    );
}

/// A model that cancels the wrong reservation fails, and the final-state
/// check names the rows that differ.
#[test]
fn model_agent_making_a_wrong_write_fails_and_the_state_check_names_the_difference() {
    let tmp = taubench_copy();
    let user = Mock::start(vec![
        oa(Some("Please cancel reservation Z7GOZK."), &[], 50, 10),
        oa(Some("###STOP###"), &[], 60, 2),
    ]);
    let agent = Mock::start(vec![
        oa(None, &[("c1", "cancel_reservation", serde_json::json!({ "reservation_id": "H9ZU1C" }))], 100, 10),
        oa(Some("Done: your reservation is cancelled."), &[], 100, 10),
    ]);
    let out = run_model(tmp.path(), "task_1", &agent, &user);
    let r = &trials(&out)[0];
    assert_eq!(r["outcome"], "failed", "{}", r["checks"]);
    let c = check(r, "database as the gold actions leave it");
    assert_eq!(c["passed"], false, "{c}");
    let t = &c["evidence"]["tables"][0];
    assert_eq!(t["table"], "reservations", "{c}");
    let keys: Vec<&str> = t["changed"].as_array().unwrap().iter().map(|k| k["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["H9ZU1C", "Z7GOZK"], "{c}");
    // The conversation ended as τ-bench's would (the user's ###STOP###): only the state failed.
    assert_eq!(check(r, "ended before the step limit")["passed"], true);
}

/// `transfer_to_human_agents` ends the conversation, as in τ-bench: the agent
/// gets no further step and the trial is graded (task 13's gold is that transfer).
#[test]
fn transfer_to_human_agents_ends_the_conversation() {
    let tmp = taubench_copy();
    let user = Mock::start(vec![oa(Some("I want to change my flight to a nonstop one to Las Vegas."), &[], 50, 10)]);
    let agent = Mock::start(vec![
        oa(None, &[("c1", "transfer_to_human_agents", serde_json::json!({ "summary": "wants a nonstop" }))], 100, 10),
        oa(None, &[("c2", "cancel_reservation", serde_json::json!({ "reservation_id": "XEWRD9" }))], 100, 10),
    ]);
    let out = run_model(tmp.path(), "task_13", &agent, &user);
    let r = &trials(&out)[0];
    assert_eq!(r["outcome"], "accepted", "{}", r["checks"]);
    assert_eq!(r["ended"], "final");
    assert_eq!(agent.seen().len(), 1, "the agent got a step after the transfer");
    assert_eq!(user.seen().len(), 1, "the user was asked after the transfer");
    let t = trace_of(&out, r);
    assert_eq!(t["calls"].as_array().unwrap().len(), 1);
    assert_eq!(t["calls"][0]["result"], "Transfer successful");
}
