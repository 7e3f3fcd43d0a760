//! Interleaved runs of several named agents (`evalua run SUITE --agent A
//! --agent B`): blocks of (case, trial), the agents' order alternating and
//! seeded, each agent's part a run dir of its own, the paired comparison,
//! the gates that name agents or differences, the periods, and bad flags.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::common::*;

/// A passes `easy` and fails `hard`; B passes both. Each calls `lookup` once
/// and says which seed it got, so pairs of trials can be matched.
fn pair_suite(gates: &str) -> String {
    format!(
        r#"
local evalua = require("evalua")
local check = require("evalua.check")
local function bot(passes_hard)
  return evalua.agent.scripted(function(task, env)
    env.call("lookup", {{}})
    if task.case == "hard" and not passes_hard then return "no" end
    return "ok"
  end)
end
local suite = evalua.suite {{
  name = "pair", trials = 4,
  agents = {{ A = bot(false), B = bot(true) }},
  default_agent = "A",
  gate = {{ {gates} }},
}}
suite:tool {{ name = "lookup", run = function() return {{ ok = true }} end }}
suite:case {{ id = "easy", input = "x", reference = {{ calls = 1 }}, expect = {{ check.answer {{ equals = "ok" }} }} }}
suite:case {{ id = "hard", input = "x", reference = {{ calls = 1 }}, expect = {{ check.answer {{ equals = "ok" }} }} }}
return suite
"#
    )
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn orders(run: &Path) -> Vec<Vec<String>> {
    lines(&run.join("blocks.jsonl"))
        .iter()
        .map(|b| b["order"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect())
        .collect()
}

#[test]
fn blocks_alternate_the_agents_order_the_same_way_for_a_seed() {
    let dir = project(&[("pair.lua", &pair_suite(""))]);
    let run = |out: &str, seed: &str, jobs: &str| {
        let o = evalua(
            dir.path(),
            &["run", "pair.lua", "--agent", "A", "--agent", "B", "--seed", seed, "--jobs", jobs, "--out", out, "-q"],
        );
        assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
        dir.path().join(out)
    };
    let one = run("one", "3", "1");
    let blocks = lines(&one.join("blocks.jsonl"));
    // 2 cases × 4 trials: 8 blocks, in plan order.
    let keys: Vec<(String, u64)> =
        blocks.iter().map(|b| (b["case"].as_str().unwrap().to_string(), b["trial"].as_u64().unwrap())).collect();
    let want: Vec<(String, u64)> =
        ["easy", "hard"].iter().flat_map(|c| (1..=4).map(move |t| (c.to_string(), t))).collect();
    assert_eq!(keys, want);
    let o = orders(&one);
    for b in 1..o.len() {
        assert_ne!(o[b][0], o[b - 1][0], "block {b} starts with the agent block {} started with: {o:?}", b - 1);
    }
    // Each block's trials: one per agent, in the block's order, from the block's seed.
    for b in &blocks {
        let agents: Vec<&str> = b["trials"].as_array().unwrap().iter().map(|t| t["agent"].as_str().unwrap()).collect();
        let order: Vec<&str> = b["order"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        assert_eq!(agents, order);
    }
    // Each agent's part is a run dir whose records carry the agent and the block's seed.
    let seeds = |agent: &str| -> BTreeMap<(String, u64), u64> {
        trials(&one.join("agents").join(agent))
            .iter()
            .map(|r| {
                assert_eq!(r["agent"], agent);
                ((r["case"].as_str().unwrap().to_string(), r["trial"].as_u64().unwrap()), r["seed"].as_u64().unwrap())
            })
            .collect()
    };
    let (a, b) = (seeds("A"), seeds("B"));
    assert_eq!(a.len(), 8);
    assert_eq!(a, b, "both agents of a block ran from the same seed");
    for blk in &blocks {
        let key = (blk["case"].as_str().unwrap().to_string(), blk["trial"].as_u64().unwrap());
        assert_eq!(blk["seed"].as_u64(), a.get(&key).copied());
    }
    let m = json(&one.join("agents/B/manifest.json"));
    assert_eq!(m["agent"]["name"], "B");
    assert_eq!(m["interleaved"]["agents"], serde_json::json!(["A", "B"]));

    // The same seed: the same orders, whatever --jobs is; the records in the same order.
    let two = run("two", "3", "2");
    assert_eq!(orders(&two), o);
    let outcomes = |d: &Path, agent: &str| -> Vec<(String, u64, String)> {
        trials(&d.join("agents").join(agent))
            .iter()
            .map(|r| {
                (
                    r["case"].as_str().unwrap().into(),
                    r["trial"].as_u64().unwrap(),
                    r["outcome"].as_str().unwrap().into(),
                )
            })
            .collect()
    };
    assert_eq!(outcomes(&one, "A"), outcomes(&two, "A"));
    assert_eq!(outcomes(&one, "B"), outcomes(&two, "B"));
    // The seed decides which agent starts: across seeds, both do.
    let starts: std::collections::BTreeSet<String> =
        (1..=6).map(|s| orders(&run(&format!("s{s}"), &s.to_string(), "1"))[0][0].clone()).collect();
    assert_eq!(starts.len(), 2, "{starts:?}");
}

#[test]
fn the_summary_pairs_the_agents_and_gates_name_them() {
    // Failing gates first: B must not be worse than A is met, A against B is not.
    let dir = project(&[("pair.lua", &pair_suite(r#"["pass^1@B"] = 0.9, ["delta pass^1 A-B"] = 0, accepted = 0.9"#))]);
    let o = evalua(dir.path(), &["run", "pair.lua", "--agent", "A", "--agent", "B", "--out", "out", "-q"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let s = json(&dir.path().join("out/summary.json"));
    assert_eq!(s["kind"], "interleaved");
    assert_eq!(s["blocks"], 8);
    let agents = s["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    // Each agent's figures with their denominators: A accepts easy only (0.5), B everything.
    assert!(close(agents[0]["figures"]["pass_hat_k"]["1"].as_f64().unwrap(), 0.5));
    assert!(close(agents[1]["figures"]["pass_hat_k"]["1"].as_f64().unwrap(), 1.0));
    assert_eq!(agents[0]["figures"]["trials"], 8);
    assert_eq!(agents[0]["first_in"].as_u64().unwrap() + agents[1]["first_in"].as_u64().unwrap(), 8);
    assert_eq!(agents[0]["first_in"], 4, "two agents alternate: each first in half the blocks");
    // The paired comparison: B − A, per case and overall.
    let c = &s["comparisons"][0];
    let pass1 = c["figures"].as_array().unwrap().iter().find(|f| f["name"] == "pass^1").unwrap();
    assert!(close(pass1["delta"].as_f64().unwrap(), 0.5), "{pass1}");
    assert_eq!(c["counts"]["improved"], 1);
    assert_eq!(c["counts"]["unchanged"], 1);
    // Gates: a plain gate for each agent, the named one, the difference.
    let gate = |name: &str| {
        s["gates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no gate {name}: {}", s["gates"]))
    };
    assert_eq!(gate("pass^1@B")["passed"], true);
    assert_eq!(gate("accepted@A")["passed"], false);
    assert_eq!(gate("accepted@B")["passed"], true);
    let d = gate("delta pass^1 A-B");
    assert_eq!(d["passed"], false);
    assert!(close(d["value"].as_f64().unwrap(), -0.5), "{d}");
    // Both agents side by side on the console, with their denominators.
    let out = stdout(&o);
    assert!(out.contains("FAIL delta pass^1 A-B"), "{out}");
    assert!(out.contains("8 trials, 2 cases"), "{out}");
    assert!(out.contains("B − A (paired by case, 2 cases)"), "{out}");
    assert!(out.contains("  cases: 1 improved, 0 regressed, 1 unchanged"), "{out}");
    // Each agent's own run dir: its own summary and reports; its gates are its own only.
    let b = json(&dir.path().join("out/agents/B/summary.json"));
    let names: Vec<&str> = b["gates"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["accepted", "pass^1@B"], "the differences are decided by the interleaved run");
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains("## Side by side") && md.contains("## Paired comparison") && md.contains("## Periods"), "{md}");
    // `evalua report` on the top dir re-renders the side-by-side reports; its exit code is the gates'.
    std::fs::remove_file(dir.path().join("out/report.md")).unwrap();
    let o = evalua(dir.path(), &["report", "out"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("FAIL delta pass^1 A-B"), "{}", stdout(&o));
    assert_eq!(std::fs::read_to_string(dir.path().join("out/report.md")).unwrap(), md);
    // … and its pull-request comment is the side-by-side report.
    let o = evalua(dir.path(), &["report", "out", "--format", "github"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains("## Paired comparison"), "{}", stdout(&o));
    // A command that takes one run names the agents' run dirs instead.
    let o = evalua(dir.path(), &["show", "out", "easy", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("an interleaved run") && stderr(&o).contains("(A, B)"), "{}", stderr(&o));

    // The passing gates: B no worse than A.
    let dir = project(&[("pair.lua", &pair_suite(r#"["pass^1@B"] = 0.9, ["delta pass^1 B-A"] = 0"#))]);
    let o = evalua(dir.path(), &["run", "pair.lua", "--agent", "A", "--agent", "B", "--out", "out", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    // One agent alone cannot decide a difference: it fails, saying why.
    let o = evalua(dir.path(), &["run", "pair.lua", "--agent", "B", "--out", "alone", "-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("FAIL delta pass^1 B-A"), "{}", stdout(&o));
    assert!(stdout(&o).contains("--agent A --agent B"), "{}", stdout(&o));
    assert!(stdout(&o).contains("PASS pass^1@B"), "{}", stdout(&o));
}

#[test]
fn bad_agents_and_gates_are_exit_2() {
    let dir = project(&[
        ("pair.lua", &pair_suite("")),
        ("bad.lua", &pair_suite(r#"["pass^1@Z"] = 0.5"#)),
        ("bad2.lua", &pair_suite(r#"["delta pass^1 B-Z"] = 0"#)),
    ]);
    let o = evalua(dir.path(), &["run", "pair.lua", "--agent", "A", "--agent", "Z", "--out", "o1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("'Z'") && e.contains("A (default), B"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    let o = evalua(dir.path(), &["run", "pair.lua", "--agent", "A", "--agent", "A", "--out", "o2"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--agent A is given twice"), "{}", stderr(&o));
    for (file, want) in [("bad.lua", "'pass^1@Z' names agent 'Z'"), ("bad2.lua", "'delta pass^1 B-Z'")] {
        let o = evalua(dir.path(), &["check", file]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(want) && e.contains("A, B") && e.contains(&format!("{file}:")), "{e}");
    }
    let o = evalua(
        dir.path(),
        &["run", "pair.lua", "--agent", "A", "--agent", "B", "--partition", "hash:1/2", "--out", "o3"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// A slow stretch of the run, planted by position: the agents share a
/// counter of trials started, and trials 9 to 16 are slow. Two separate runs
/// put the whole stretch on the second agent; the interleaved run gives each
/// agent half of it, block by block, and the paired difference is the one a
/// run without any slow stretch gives.
#[test]
fn a_slow_stretch_hits_both_agents_alike() {
    let agent = r#"
import json, os, sys, time
start = json.loads(sys.stdin.readline())
path = os.environ["EVALUA_TEST_COUNTER"]
n = int(open(path).read() or "0") + 1 if os.path.exists(path) else 1
open(path, "w").write(str(n))
slow = int(os.environ["EVALUA_TEST_SLOW_FROM"]) <= n
if slow:
    time.sleep(0.3)
passes = start["case"] != "hard" or sys.argv[1] == "B"
answer = ("ok" if passes else "no") + (" slow" if slow else "")
print(json.dumps({"type": "final", "content": answer}), flush=True)
"#;
    let suite = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local function bot(name)
  return evalua.agent.command { cmd = { "python3", evalua.path("agent.py"), name },
                                env = { "EVALUA_TEST_COUNTER", "EVALUA_TEST_SLOW_FROM" } }
end
local suite = evalua.suite { name = "slow", trials = 4, agents = { A = bot("A"), B = bot("B") }, default_agent = "A" }
suite:case { id = "easy", input = "x", expect = { check.answer { matches = "^ok" } } }
suite:case { id = "hard", input = "x", expect = { check.answer { matches = "^ok" } } }
return suite
"#;
    let dir = project(&[("slow.lua", suite), ("agent.py", agent)]);
    let run = |args: &[&str], counter: &str, slow_from: &str| {
        let mut cmd = bin();
        cmd.current_dir(dir.path()).args(["run", "slow.lua", "--isolation", "none", "--jobs", "1", "-q"]).args(args);
        cmd.env("EVALUA_TEST_COUNTER", dir.path().join(counter)).env("EVALUA_TEST_SLOW_FROM", slow_from);
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    };
    let slow_of = |run_dir: &Path| -> BTreeMap<(String, u64), bool> {
        trials(run_dir)
            .iter()
            .map(|r| {
                let key = (r["case"].as_str().unwrap().to_string(), r["trial"].as_u64().unwrap());
                (key, r["answer"].as_str().unwrap().ends_with("slow"))
            })
            .collect()
    };
    let count = |m: &BTreeMap<(String, u64), bool>| m.values().filter(|s| **s).count();

    // Two separate runs, one after the other: the stretch lands on B alone.
    run(&["--agent", "A", "--out", "sep_a"], "c1", "9");
    run(&["--agent", "B", "--out", "sep_b"], "c1", "9");
    assert_eq!(count(&slow_of(&dir.path().join("sep_a"))), 0);
    assert_eq!(count(&slow_of(&dir.path().join("sep_b"))), 8);

    // Interleaved: the same stretch, trials 9-16, is blocks 5-8, and hits both agents in each.
    run(&["--agent", "A", "--agent", "B", "--out", "mixed"], "c2", "9");
    let (a, b) = (slow_of(&dir.path().join("mixed/agents/A")), slow_of(&dir.path().join("mixed/agents/B")));
    assert_eq!((count(&a), count(&b)), (4, 4));
    assert_eq!(a, b, "in every block, both agents or neither had the slow stretch");
    // Every period holds both agents' trials of its blocks.
    let s = json(&dir.path().join("mixed/summary.json"));
    let periods = s["periods"].as_array().unwrap();
    assert!(!periods.is_empty());
    for p in periods {
        let ag = p["agents"].as_array().unwrap();
        assert_eq!(ag[0]["trials"], ag[1]["trials"], "{p}");
        assert_eq!(ag[0]["trials"].as_u64().unwrap(), p["blocks"].as_u64().unwrap());
    }
    let delta = |s: &Value| {
        let f =
            s["comparisons"][0]["figures"].as_array().unwrap().iter().find(|f| f["name"] == "pass^1").unwrap().clone();
        f["delta"].as_f64().unwrap()
    };
    // The same interleaved run with no slow stretch: the same paired difference (B passes hard, A does not).
    run(&["--agent", "A", "--agent", "B", "--out", "calm"], "c3", "1000");
    let calm = json(&dir.path().join("calm/summary.json"));
    assert!(close(delta(&s), 0.5) && close(delta(&calm), 0.5), "{} {}", delta(&s), delta(&calm));
}

#[test]
fn the_ablation_example_shows_what_each_component_is_worth() {
    // suites/refunds_ablation.lua: retrying a 429 is worth success, memory only calls.
    let out = tempfile::tempdir().unwrap();
    let run = out.path().join("run");
    let o = evalua(
        &repo(),
        &[
            "run",
            "suites/refunds_ablation.lua",
            "--agent",
            "full",
            "--agent",
            "no_retry",
            "--agent",
            "no_memory",
            "--out",
            run.to_str().unwrap(),
            "-q",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let s = json(&run.join("summary.json"));
    let agent = |name: &str| s["agents"].as_array().unwrap().iter().find(|a| a["name"] == name).cloned().unwrap();
    let pass1 = |name: &str| agent(name)["figures"]["pass_hat_k"]["1"].as_f64().unwrap();
    assert!(pass1("full") > pass1("no_retry") + 0.04, "retrying must be worth success: {}", s["agents"]);
    assert!(close(pass1("full"), pass1("no_memory")), "memory must cost no success: {}", s["agents"]);
    // Every comparison is against the first agent named.
    let name = |v: &Value| v["dir"].as_str().unwrap().rsplit('/').next().unwrap().to_string();
    let deltas: Vec<(String, String)> =
        s["comparisons"].as_array().unwrap().iter().map(|c| (name(&c["base"]), name(&c["cand"]))).collect();
    assert_eq!(deltas, [("full".into(), "no_retry".into()), ("full".into(), "no_memory".into())]);
    // Memory's price is in calls: a second lookup before the refund, 5 calls where the reference takes 4.
    let calls = |name: &str| agent(name)["efficiency"]["all"]["calls"]["median"].as_f64().unwrap();
    assert!(close(calls("full"), 1.0) && close(calls("no_memory"), 1.25), "{}", s["agents"]);
}
