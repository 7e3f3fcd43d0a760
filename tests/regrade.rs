//! Re-grading (SPEC §10): every trial keeps its changes (a SQLite changeset,
//! the work dir's changed files), `evalua regrade` rebuilds each final state
//! and runs the current checks with no agent, model or tool handler, and
//! `compare` calls the difference a measurement change.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::*;
use crate::models::{Mock, oa};

/// trials.jsonl with the volatile parts removed (wall times are carried over
/// by a re-grade, but not by a re-run; a check's command has its own duration).
fn records(dir: &Path) -> Vec<Value> {
    let mut v = without_timings(dir);
    for r in &mut v {
        for c in r["checks"].as_array_mut().unwrap() {
            if let Some(e) = c["evidence"].as_object_mut() {
                e.remove("duration_ms");
            }
        }
    }
    v
}

/// Copy the example project (suites and graders) into a temp dir, so a test may change it.
fn example_project() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for sub in ["suites", "graders"] {
        copy_dir(&repo().join(sub), &tmp.path().join(sub));
    }
    tmp
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

fn regrade(cwd: &Path, args: &[&str]) -> std::process::Output {
    let mut a = vec!["regrade"];
    a.extend_from_slice(args);
    a.push("-q");
    evalua(cwd, &a)
}

fn files_named(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

#[test]
fn a_regrade_of_the_example_suites_gives_their_records_back_and_records_where_it_came_from() {
    let tmp = tempfile::tempdir().unwrap();
    for suite in ["refunds", "date_filter"] {
        let (old, new) = (tmp.path().join(format!("{suite}-old")), tmp.path().join(format!("{suite}-new")));
        let o = evalua(
            &repo(),
            &["run", &format!("suites/{suite}.lua"), "--seed", "7", "-q", "--out", old.to_str().unwrap()],
        );
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
        let m = json(&old.join("manifest.json"));
        assert_eq!(m["trial_state"], "kept");
        assert_eq!(m["kind"], "run");
        // date_filter's agent only reads.
        assert_eq!(files_named(&old, ".changeset").is_empty(), suite == "date_filter", "{suite}");

        let o = regrade(&repo(), &[old.to_str().unwrap(), "--out", new.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(m_code(&old)), "{suite}: {}{}", stdout(&o), stderr(&o));
        // Same trajectories, same checks, same states: the same records, byte for byte.
        assert_eq!(
            std::fs::read_to_string(old.join("trials.jsonl")).unwrap(),
            std::fs::read_to_string(new.join("trials.jsonl")).unwrap(),
            "{suite}"
        );
        let n = json(&new.join("manifest.json"));
        assert_eq!(n["kind"], "regraded");
        assert_eq!(n["regraded_from"]["run_id"], m["run_id"]);
        assert_eq!(n["regraded_from"]["trajectories_run_id"], m["run_id"]);
        assert_eq!(n["regraded_from"]["grader_sha256"], m["grader_sha256"]);
        assert_eq!(n["grader_sha256"], m["grader_sha256"]);
        assert_eq!(n["agent"], m["agent"]);
        assert_eq!(n["seed"], m["seed"]);
        // The kept states go along, so the new run can be re-graded in turn.
        assert_eq!(files_named(&old, ".changeset").len(), files_named(&new, ".changeset").len());
        for f in ["summary.json", "report.md", "report.html", "junit.xml"] {
            assert!(new.join(f).is_file(), "{suite}: {f}");
        }
        assert!(stdout(&o).contains("regraded 15 trials") || suite != "refunds", "{}", stdout(&o));
    }
}

/// The exit code the old run's gates give (a faithful re-grade gives the same).
fn m_code(dir: &Path) -> i32 {
    let s = json(&dir.join("summary.json"));
    if s["gates"].as_array().unwrap().iter().all(|g| g["passed"] == true) { 0 } else { 1 }
}

const MARKED: &str = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {
  name = "marked", trials = 2,
  sandbox = { db = "sqlite", schema = "schema.sql" },
  agent = evalua.agent.command { cmd = { "python3", evalua.path("agent.py"), evalua.path("agent.log") } },
}
suite:tool {
  name = "mark", effect = "write",
  params = { type = "object", properties = { n = { type = "integer" } }, required = { "n" } },
  run = function(ctx, a)
    print("HANDLER RAN " .. a.n)
    ctx.db:exec("INSERT INTO marks(n) VALUES (?)", a.n)
    ctx.write_file("marks/" .. a.n .. ".txt", "mark " .. a.n)
    return { ok = true }
  end,
}
suite:case {
  id = "mark_twice", input = "mark 1 and 2",
  expect = {
    check.sql("SELECT count(*) FROM marks", { equals = 2, name = "two marks in the database" }),
    check.files { ["marks/1.txt"] = { contains = "mark 1" }, ["marks/2.txt"] = { contains = "mark 2" } },
    check.tools({ "mark", "mark" }, { mode = "exact" }),
  },
}
return suite
"#;

const MARKING_AGENT: &str = r#"
import json, sys
with open(sys.argv[1], "a") as f:
    f.write("agent started\n")
def send(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
start = json.loads(sys.stdin.readline())
for n in (1, 2):
    send({"type": "tool_call", "id": "c%d" % n, "name": "mark", "arguments": {"n": n}})
    json.loads(sys.stdin.readline())
send({"type": "final", "content": "marked"})
"#;

#[test]
fn no_agent_process_model_call_or_tool_handler_runs_in_a_regrade() {
    let dir =
        project(&[("s.lua", MARKED), ("agent.py", MARKING_AGENT), ("schema.sql", "CREATE TABLE marks (n INTEGER);\n")]);
    let d = dir.path();
    // Unconfined: the agent marks each start in agent.log beside the suite,
    // which a sandboxed agent could not write.
    let o = run_suite(d, "s.lua", &["--isolation", "none"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let log = d.join("agent.log");
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 2, "the agent ran once per trial");
    let before = records(&d.join("out"));
    assert!(before.iter().all(|r| r["outcome"] == "accepted"), "{before:?}");
    // `marks` has no primary key: its rows are kept by rowid.
    assert!(d.join("out/traces/mark_twice.1.changeset").is_file());
    // The work dir's new files are kept, as files, beside the trace.
    assert_eq!(std::fs::read_to_string(d.join("out/traces/mark_twice.1.files/marks/2.txt")).unwrap(), "mark 2");
    std::fs::remove_file(&log).unwrap();

    let o = regrade(d, &["out", "--out", "again"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(!log.exists(), "the agent process ran during the re-grade");
    let after = records(&d.join("again"));
    assert_eq!(before, after);
    for t in 1..=2 {
        let trace = trace(&d.join("again"), "mark_twice", t);
        let lines: Vec<&str> = trace["log"].as_array().unwrap().iter().filter_map(|l| l.as_str()).collect();
        // The run's handler output is kept; no handler printed during the re-grade.
        assert_eq!(lines.iter().filter(|l| l.starts_with("HANDLER RAN")).count(), 2, "{lines:?}");
        assert!(!lines.iter().any(|l| l.contains("[regrade] HANDLER")), "{lines:?}");
    }
}

#[test]
fn a_regrade_of_a_model_agent_calls_no_model_and_needs_no_key() {
    let mock = Mock::start(vec![
        oa(None, &[("c1", "lookup_order", json!({ "order_id": "P-9930" }))], 10, 5),
        oa(Some("The total is 19.9"), &[], 12, 6),
    ]);
    let suite = format!(
        r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {{ name = "llm", trials = 1,
  agent = evalua.agent.openai {{ model = 'gpt-4.1-mini', base_url = {:?}, api_key_env = 'EVALUA_TEST_KEY' }} }}
suite:tool {{ name = "lookup_order",
  params = {{ type = "object", properties = {{ order_id = {{ type = "string" }} }}, required = {{ "order_id" }} }},
  run = function(ctx, a) print("HANDLER RAN"); return {{ order_id = a.order_id, total = 19.9 }} end }}
suite:case {{ id = "c1", input = "What is the total of P-9930?",
  expect = {{ check.answer {{ contains = "19.9" }}, check.tools({{ "lookup_order" }}) }} }}
return suite
"#,
        mock.openai_url()
    );
    let dir = project(&[("s.lua", &suite)]);
    let d = dir.path();
    let o =
        bin().current_dir(d).env("EVALUA_TEST_KEY", "k").args(["run", "s.lua", "--out", "out", "-q"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let calls = mock.seen().len();
    assert_eq!(calls, 2);
    // No key in the environment: a model call would fail the trial.
    let o = bin()
        .current_dir(d)
        .env_remove("EVALUA_TEST_KEY")
        .args(["regrade", "out", "--out", "again", "-q"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(mock.seen().len(), calls, "the re-grade called the model");
    assert_eq!(records(&d.join("out")), records(&d.join("again")));
    let r = &trials(&d.join("again"))[0];
    assert_eq!(r["outcome"], "accepted");
    assert_eq!(r["usage"]["input_tokens"], 22, "usage is the run's: {r}");
}

#[test]
fn a_missing_or_corrupt_changeset_is_a_grader_error_naming_the_file_and_the_rest_regrade() {
    let tmp = tempfile::tempdir().unwrap();
    let old = tmp.path().join("old");
    let o = evalua(&repo(), &["run", "suites/refunds.lua", "--seed", "7", "-q", "--out", old.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let kept = files_named(&old, ".changeset");
    assert!(kept.len() >= 3, "{kept:?}");
    let name = |p: &PathBuf| p.file_name().unwrap().to_string_lossy().into_owned();
    let (missing, corrupt, garbage) = (&kept[0], &kept[1], &kept[2]);
    std::fs::remove_file(missing).unwrap();
    let mut bytes = std::fs::read(corrupt).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    std::fs::write(corrupt, &bytes).unwrap();
    std::fs::write(garbage, b"not a changeset").unwrap();
    // The third one: a valid-looking file whose hash the trace also claims.
    let stem = name(garbage).strip_suffix(".changeset").unwrap().to_string();
    let (case, trial) = stem.rsplit_once('.').unwrap();
    rewrite_trace(&old, case, trial.parse().unwrap(), |tr| {
        tr["state"]["db"]["sha256"] = json!(evalua::util::digest::sha256_hex(b"not a changeset"));
        tr["state"]["db"]["bytes"] = json!(15);
    });

    let new = tmp.path().join("new");
    let o = regrade(&repo(), &[old.to_str().unwrap(), "--out", new.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}{}", stdout(&o), stderr(&o));
    let (before, after) = (records(&old), records(&new));
    assert_eq!(before.len(), after.len());
    let mut broken = 0;
    for (b, a) in before.iter().zip(&after) {
        let trace = format!("{}.{}.changeset", a["case"].as_str().unwrap(), a["trial"]);
        let hit = [missing, corrupt, garbage].into_iter().find(|p| trace.ends_with(&name(p)));
        match hit {
            Some(p) => {
                broken += 1;
                assert_eq!(a["outcome"], "grader_error", "{a}");
                for c in a["checks"].as_array().unwrap() {
                    let e = c["error"].as_str().unwrap();
                    assert!(e.contains(&name(p)), "the error names the file: {e}");
                }
                assert_eq!(a["calls"], b["calls"]);
            }
            None => assert_eq!(a, b),
        }
    }
    assert_eq!(broken, 3);
    let err = |p: &PathBuf| {
        let rec = after
            .iter()
            .find(|r| format!("{}.{}.changeset", r["case"].as_str().unwrap(), r["trial"]) == name(p))
            .unwrap();
        rec["checks"][0]["error"].as_str().unwrap().to_string()
    };
    assert!(err(corrupt).contains("corrupt"), "{}", err(corrupt));
    assert!(
        err(garbage).contains("not a valid changeset") || err(garbage).contains("does not apply"),
        "{}",
        err(garbage)
    );
}

#[test]
fn a_no_state_run_keeps_nothing_and_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let old = tmp.path().join("old");
    let o = evalua(&repo(), &["run", "suites/refunds.lua", "--no-state", "-q", "--out", old.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert_eq!(json(&old.join("manifest.json"))["trial_state"], "skipped");
    assert!(files_named(&old, ".changeset").is_empty());
    assert!(trace(&old, "reembolso_parcial_01", 1).get("state").is_none());
    let o = regrade(&repo(), &[old.to_str().unwrap(), "--out", tmp.path().join("new").to_str().unwrap()]);
    assert_user_error(&o, "--no-state");
    assert!(!tmp.path().join("new").exists());
}

#[test]
fn a_changed_fixture_is_refused_unless_allowed() {
    let proj = example_project();
    let d = proj.path();
    let o = run_suite(d, "suites/refunds.lua", &["--seed", "7"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let fixture = d.join("suites/fixtures/pedido_9930.sql");
    let text = std::fs::read_to_string(&fixture).unwrap();
    std::fs::write(&fixture, format!("{text}\n-- a comment changes the hash, not the rows\n")).unwrap();
    let o = regrade(d, &["out", "--out", "new"]);
    assert_user_error(&o, "--allow-fixture-change");
    assert!(stderr(&o).contains("reembolso_parcial_01"), "{}", stderr(&o));
    let o = regrade(d, &["out", "--out", "new", "--allow-fixture-change"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(stderr(&o).contains("warning: re-grading over a changed starting state"), "{}", stderr(&o));
    let m = json(&d.join("new/manifest.json"));
    let changes = m["regraded_from"]["fixture_changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(records(&d.join("out")), records(&d.join("new")));
}

const CODING: &str = r##"
local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {
  name = "tree", trials = 1,
  sandbox = { workdir = "repo" },
  agent = evalua.agent.scripted(function(task, env)
    env.call("edit", {})
    return "edited"
  end),
}
suite:tool {
  name = "edit", effect = "write",
  run = function(ctx, a)
    ctx.write_file("src/app.py", "print('fixed')\n")
    ctx.write_file("src/new/helper.py", "X = 1\n")
    ctx.write_file("bin/run.sh", "#!/bin/sh\necho run\n")
    ctx.exec({ "chmod", "+x", "bin/run.sh" })
    ctx.exec({ "rm", "OLD.md" })
    ctx.exec({ "ln", "-s", "src/app.py", "app_link" })
    return { ok = true }
  end,
}
suite:case {
  id = "edit", input = "fix it",
  expect = {
    check.files { ["src/app.py"] = { contains = "fixed" }, ["OLD.md"] = { exists = false } },
    check.scope { allowed = { "src/**", "bin/**", "app_link", "OLD.md" } },
    check.command { cmd = { "sh", "-c", "test -x bin/run.sh && test -L app_link && test ! -e OLD.md" } },
    { name = "diff", run = function(t) return false, t.diff.text end },
  },
}
return suite
"##;

#[test]
fn work_dir_changes_are_kept_and_restored_with_deletions_modes_and_symlinks() {
    let dir = project(&[
        ("s.lua", CODING),
        ("repo/src/app.py", "print('broken')\n"),
        ("repo/OLD.md", "old\n"),
        ("repo/README.md", "unchanged\n"),
    ]);
    let d = dir.path();
    let o = run_suite(d, "s.lua", &[]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}{}", stdout(&o), stderr(&o));
    let before = records(&d.join("out"));
    let state = &trace(&d.join("out"), "edit", 1)["state"];
    assert_eq!(state["deleted"], json!(["OLD.md"]), "{state}");
    let kept: Vec<&str> = state["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(kept, ["app_link", "bin/run.sh", "src/app.py", "src/new/helper.py"], "{state}");
    assert!(!d.join("out/traces/edit.1.files/README.md").exists(), "unchanged files are not kept");
    assert!(!d.join("out/traces/edit.1.files/app_link").exists(), "a symlink is kept in the trace, not as a file");
    assert!(state["db"].is_null(), "{state}");
    let checks = &before[0]["checks"];
    for i in 0..3 {
        assert_eq!(checks[i]["passed"], true, "{}", checks[i]);
    }

    let o = regrade(d, &["out", "--out", "again"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}{}", stdout(&o), stderr(&o));
    // The same verdicts and the same diff text, from the rebuilt tree.
    assert_eq!(before, records(&d.join("again")));

    // A kept file that does not match its recorded hash is refused by name.
    std::fs::write(d.join("out/traces/edit.1.files/src/app.py"), "print('tampered')\n").unwrap();
    let o = regrade(d, &["out", "--out", "third"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let r = &trials(&d.join("third"))[0];
    assert_eq!(r["outcome"], "grader_error", "{r}");
    assert!(r["checks"][0]["error"].as_str().unwrap().contains("edit.1.files/src/app.py: corrupt"), "{r}");
}

#[test]
fn a_kept_path_that_leaves_the_work_dir_is_refused() {
    let dir = project(&[("s.lua", CODING), ("repo/src/app.py", "x\n"), ("repo/OLD.md", "o\n")]);
    let d = dir.path();
    run_suite(d, "s.lua", &[]);
    rewrite_trace(&d.join("out"), "edit", 1, |tr| tr["state"]["files"][1]["path"] = json!("../../escape.sh"));
    let o = regrade(d, &["out", "--out", "again"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let r = &trials(&d.join("again"))[0];
    assert_eq!(r["outcome"], "grader_error");
    assert!(r["checks"][0]["error"].as_str().unwrap().contains("leaves the work dir"), "{r}");
    assert!(!d.join("escape.sh").exists() && !d.parent().unwrap().join("escape.sh").exists());
}

#[test]
fn compare_calls_a_regrade_with_a_fixed_grader_a_measurement_change() {
    let proj = example_project();
    let d = proj.path();
    let o = run_suite(d, "suites/refunds.lua", &["--seed", "7"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    // This suite without its monitors: its `tool_loop` monitor would go on failing
    // the trials the fixed check now accepts.
    let suite = d.join("suites/refunds.lua");
    let s = std::fs::read_to_string(&suite).unwrap();
    assert!(s.contains("  monitors = shop.monitors(),\n"));
    std::fs::write(&suite, s.replace("  monitors = shop.monitors(),\n", "")).unwrap();
    // The grader is fixed: three repeats of a lookup are fine.
    let shop = d.join("suites/shared/refunds_shop.lua");
    let text = std::fs::read_to_string(&shop).unwrap();
    // The cases' check only: the suite's `tool_loop` monitor stays as it is.
    let at = text.find("function shop.tools").unwrap();
    let (monitors, cases) = text.split_at(at);
    assert!(cases.contains("check.no_loops { max_repeats = 2 }"));
    let old = format!(
        "{monitors}{}",
        cases.replace("check.no_loops { max_repeats = 2 }", "check.no_loops { max_repeats = 2, name = \"no loops\" }")
    );
    std::fs::write(&shop, &old).unwrap();
    let o = evalua(d, &["run", "suites/refunds.lua", "--seed", "7", "-q", "--out", "base"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    std::fs::write(&shop, old.replace("max_repeats = 2, name", "max_repeats = 4, name")).unwrap();
    let o = regrade(d, &["base", "--out", "fixed"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));

    let o = evalua(d, &["compare", "base", "fixed", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let c: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let m = &c["measurement"];
    assert_eq!(m["relation"], "regraded_from_base", "{m}");
    assert_eq!(m["paired_trials"], 15);
    let checks = m["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 1, "{checks:?}");
    assert_eq!(checks[0]["check"], "no loops");
    let n = checks[0]["fail_to_pass"].as_u64().unwrap();
    assert!(n >= 1 && checks[0]["pass_to_fail"] == 0 && checks[0]["trials"] == n, "{}", checks[0]);
    let improved: Vec<&Value> = c["cases"].as_array().unwrap().iter().filter(|x| x["class"] == "improved").collect();
    assert!(!improved.is_empty());
    assert!(improved.iter().all(|x| x["change"] == "measurement"), "{improved:?}");

    let o = evalua(d, &["compare", "base", "fixed", "--markdown"]);
    let md = stdout(&o);
    assert!(md.contains("**Measurement change:**"), "{md}");
    assert!(md.contains(&format!("| <code>no loops</code> | {n} | 0 | {n} | 0 |")), "{md}");
    let o = evalua(d, &["compare", "base", "fixed"]);
    assert!(stdout(&o).contains("[measurement change]"), "{}", stdout(&o));

    // Two runs of the agent are not a measurement change, even with the same seed.
    let o = evalua(d, &["run", "suites/refunds.lua", "--seed", "7", "-q", "--out", "rerun"]);
    assert!(matches!(o.status.code(), Some(0 | 1)));
    let o = evalua(d, &["compare", "base", "rerun", "--json", "--allow-revision-change"]);
    let c: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(c.get("measurement").is_none(), "{c}");
    // Two re-grades of one run share its trajectories.
    let o = regrade(d, &["base", "--out", "fixed2"]);
    assert!(matches!(o.status.code(), Some(0 | 1)));
    let o = evalua(d, &["compare", "fixed", "fixed2", "--json"]);
    let c: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(c["measurement"]["relation"], "shared_trajectories");
    assert_eq!(c["measurement"]["checks"], json!([]));
}

#[test]
fn merged_parts_keep_their_states_and_regrade() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    for i in 1..=2 {
        let out = t.join(format!("p{i}"));
        let o = evalua(
            &repo(),
            &[
                "run",
                "suites/refunds.lua",
                "--seed",
                "7",
                "-q",
                "--partition",
                &format!("hash:{i}/2"),
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    }
    let merged = t.join("merged");
    let o = evalua(
        &repo(),
        &["merge", t.join("p1").to_str().unwrap(), t.join("p2").to_str().unwrap(), "--out", merged.to_str().unwrap()],
    );
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(!files_named(&merged, ".changeset").is_empty());
    let o = regrade(&repo(), &[merged.to_str().unwrap(), "--out", t.join("re").to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert_eq!(records(&merged), records(&t.join("re")));
}

#[test]
fn bad_regrade_inputs_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let o = regrade(&repo(), &[tmp.path().join("nope").to_str().unwrap()]);
    assert_user_error(&o, "not a run dir");
    let old = tmp.path().join("old");
    evalua(&repo(), &["run", "suites/refunds.lua", "-q", "--out", old.to_str().unwrap()]);
    let o = regrade(&repo(), &[old.to_str().unwrap(), "--suite", "suites/date_filter.lua"]);
    assert_user_error(&o, "cannot re-grade a run of suite 'refunds'");
    // A run made elsewhere: its suite path does not resolve from here.
    let o = regrade(tmp.path(), &["old"]);
    assert_user_error(&o, "--suite");
}
