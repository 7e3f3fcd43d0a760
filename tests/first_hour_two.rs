//! The first hour, round two (issue 43): a crash is never a pass, the PR
//! comment says why, and the defects held-out checks found.

use crate::common::*;

/// A fresh `evalua init` project in `<tmp>/proj`.
fn init_project(tmp: &std::path::Path) -> std::path::PathBuf {
    let o = evalua(tmp, &["init", "proj"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    tmp.join("proj")
}

/// The init project's agent, made to crash after its write (after a stray
/// line on stdout too, when `noisy`).
fn crash_after_write(p: &std::path::Path, noisy: bool) {
    let path = p.join("agents/agent.py");
    let agent = std::fs::read_to_string(&path).unwrap();
    let call = "    status, content, error = call(\"close_ticket\", {\"ticket_id\": match.group(0)})\n";
    assert!(agent.contains(call), "the template's tool call moved");
    let crashing = agent.replace(
        call,
        &format!(
            "{call}{}    raise RuntimeError(\"boom after the write\")\n",
            if noisy { "    print(\"debug\")\n" } else { "" }
        ),
    );
    std::fs::write(&path, crashing).unwrap();
}

/// Item 1, the issue's "done when": an agent that crashes after its write is
/// never accepted; the run exits 1 and names the crash on the console and in
/// the PR comment.
#[test]
fn a_fresh_init_project_whose_agent_crashes_after_its_write_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let p = init_project(tmp.path());
    crash_after_write(&p, false);
    let o = evalua(&p, &["run", "suites/tickets.lua", "--out", "runs/crash"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(out.contains("not accepted: 3 trials, by how they ended: crashed 3"), "{out}");
    assert!(
        out.contains("crashed: first close_resolved_ticket #1: the agent exited before its final message"),
        "{out}"
    );
    assert!(out.contains("stderr: RuntimeError: boom after the write"), "{out}");
    assert!(out.contains("FAIL pass^3: 0.0%"), "{out}");
    // The checks still ran, and are shown: the state check passed.
    let recs = trials(&p.join("runs/crash"));
    assert_eq!(recs.len(), 3);
    for r in &recs {
        assert_eq!(r["outcome"], "failed", "{r}");
        assert_eq!(r["ended"], "crashed", "{r}");
        assert_eq!(check(r, "sql: SELECT status FROM tickets WHERE id = 'T-42'")["passed"], true, "{r}");
    }
    // The PR comment names the crash too.
    let o = evalua(&p, &["report", "runs/crash", "--format", "github"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let comment = stdout(&o);
    assert!(comment.contains("3 trials not accepted, by how they ended: crashed 3"), "{comment}");
    assert!(comment.contains("- #1 failed · ended crashed: the agent exited before its final message"), "{comment}");
    assert!(comment.contains("**close_resolved_ticket** — 0 of 3 accepted"), "{comment}");
}

/// Item 1: an agent killed by a signal after its write (SIGKILL, as an
/// out-of-memory kill ends it) is a crash too: never accepted, its checks shown.
#[test]
fn an_agent_killed_after_its_write_is_never_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let p = init_project(tmp.path());
    let path = p.join("agents/agent.py");
    let agent = std::fs::read_to_string(&path).unwrap();
    let call = "    status, content, error = call(\"close_ticket\", {\"ticket_id\": match.group(0)})\n";
    let killed =
        agent.replace(call, &format!("{call}    import os, signal\n    os.kill(os.getpid(), signal.SIGKILL)\n"));
    assert_ne!(killed, agent);
    std::fs::write(&path, killed).unwrap();
    let o = evalua(&p, &["run", "suites/tickets.lua", "--out", "runs/killed"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    for r in trials(&p.join("runs/killed")) {
        assert_eq!((r["outcome"].as_str(), r["ended"].as_str()), (Some("failed"), Some("crashed")), "{r}");
        assert!(r["error"].as_str().unwrap().contains("killed by signal 9 (SIGKILL)"), "{r}");
        assert_eq!(check(&r, "sql: SELECT status FROM tickets WHERE id = 'T-42'")["passed"], true, "{r}");
    }
}

/// Item 1: a case may accept an abnormal end, with its reason; anything but
/// a non-empty reason is a mistake at the case's line.
#[test]
fn a_case_may_accept_an_abnormal_end_with_a_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let p = init_project(tmp.path());
    crash_after_write(&p, true);
    let suite = std::fs::read_to_string(p.join("suites/tickets.lua")).unwrap();
    let opted = suite.replace(
        "  fixture = \"fixtures/tickets.sql\",\n",
        "  fixture = \"fixtures/tickets.sql\",\n  accept_abnormal_end = \"the agent's exit status is not ours to judge\",\n",
    );
    assert_ne!(opted, suite);
    std::fs::write(p.join("suites/tickets.lua"), &opted).unwrap();
    let o = evalua(&p, &["run", "suites/tickets.lua", "--out", "runs/opted", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(trials(&p.join("runs/opted")).iter().all(|r| r["outcome"] == "accepted"));

    std::fs::write(
        p.join("suites/tickets.lua"),
        suite.replace(
            "  fixture = \"fixtures/tickets.sql\",\n",
            "  fixture = \"fixtures/tickets.sql\",\n  accept_abnormal_end = true,\n",
        ),
    )
    .unwrap();
    let o = evalua(&p, &["check", "suites/tickets.lua"]);
    assert_user_error(&o, "'accept_abnormal_end' must be the reason");
    assert!(stderr(&o).contains("tickets.lua:"), "{}", stderr(&o));
}

/// Item 2: a suite whose tool keeps a JSON document in a column; the gold
/// call writes it with its keys in one order, agents in another.
const PROFILES: &str = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local function writes(doc)
  return evalua.agent.scripted(function(task, env) env.call("save_profile", { id = 1, doc = doc }) return "saved" end)
end
local s = evalua.suite {
  name = "profiles",
  sandbox = { schema = "profiles.sql" },
  agents = {
    reordered = writes('{"name": "ann", "address": {"zip": "28013", "city": "Madrid"}, "tags": [1, 2]}'),
    changed = writes('{"address": {"city": "Madrid", "zip": "28014"}, "name": "ann", "tags": [1, 2]}'),
    float = writes('{"address": {"city": "Madrid", "zip": "28013"}, "name": "ann", "tags": [1.0, 2]}'),
  },
  default_agent = "reordered",
}
s:tool { name = "save_profile", effect = "write",
  params = { type = "object", properties = { id = { type = "integer" }, doc = { type = "string" } } },
  run = function(ctx, args)
    ctx.db:exec("UPDATE users SET profile = ? WHERE id = ?", args.doc, args.id)
    return "ok"
  end }
s:case { id = "c", input = "save the profile",
  expect = { check.same_state({ { name = "save_profile",
    args = { id = 1, doc = '{"address":{"city":"Madrid","zip":"28013"},"name":"ann","tags":[1,2]}' } } }) } }
return s
"#;

const PROFILES_SQL: &str = "CREATE TABLE users (id INTEGER PRIMARY KEY, profile TEXT);\n\
                            INSERT INTO users VALUES (1, '{}'), (2, '{\"b\": 1, \"a\": 2}');\n";

/// Item 2: final states are compared as JSON values, not text: in a run
/// (`check.same_state`, τ-bench's "database as the gold actions leave it"),
/// in a re-grade and in a re-execution; a changed value, or 1.0 for 1, still differs.
#[test]
fn final_states_compare_json_held_in_a_column_as_values() {
    let p = project(&[("s.lua", PROFILES), ("profiles.sql", PROFILES_SQL)]);
    let name = "same state as the gold calls";
    for (agent, want) in [("reordered", "accepted"), ("changed", "failed"), ("float", "failed")] {
        let o = evalua(p.path(), &["run", "s.lua", "--agent", agent, "--out", agent, "-q"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let r = &trials(&p.path().join(agent))[0];
        assert_eq!(r["outcome"], want, "{agent}: {}", r["checks"]);
        if agent == "changed" {
            let t = &check(r, name)["evidence"]["tables"][0];
            assert_eq!(t["changed"][0]["key"], 1, "{t}");
        }
    }
    // A re-grade of the kept state, and a re-execution of the recorded calls, agree.
    let o = evalua(p.path(), &["regrade", "reordered", "--out", "regraded", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(trials(&p.path().join("regraded"))[0]["outcome"], "accepted");
    let o = evalua(p.path(), &["grade", "s.lua", "--traces", "reordered", "--reexecute", "--out", "reexec", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = &trials(&p.path().join("reexec"))[0];
    assert_eq!(r["outcome"], "accepted", "{}", r["checks"]);
}

/// Item 3: a `prohibited` query that does not prepare is named at the suite's
/// `file:line` (its case's), by `check` and by `run`, as `check.sql` is.
#[test]
fn a_prohibited_query_that_does_not_prepare_is_named_at_its_case() {
    let tmp = tempfile::tempdir().unwrap();
    let p = init_project(tmp.path());
    let suite = std::fs::read_to_string(p.join("suites/tickets.lua")).unwrap();
    let bad = suite.replace("prohibited = { \"SELECT count", "prohibited = { \"SELEC nope\", \"SELECT count");
    assert_ne!(bad, suite);
    std::fs::write(p.join("suites/tickets.lua"), &bad).unwrap();
    let line = bad.lines().position(|l| l.starts_with("suite:case {")).unwrap() + 1;
    for args in [&["check", "suites/tickets.lua"][..], &["run", "suites/tickets.lua", "-q"]] {
        let o = evalua(&p, args);
        assert_user_error(&o, &format!("suites/tickets.lua:{line}: check 'prohibited: SELEC nope'"));
        assert!(!stderr(&o).contains("[C]"), "{}", stderr(&o));
    }
}

/// Item 5: a closed pipe ends every printing command quietly: no panic, the
/// command's own exit code (0, or a run's failed gates' 1).
#[test]
fn a_closed_pipe_ends_every_printing_command_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let p = init_project(tmp.path());
    let o = evalua(&p, &["run", "suites/tickets.lua", "--out", "runs/ok", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Every write to this stdout fails with EPIPE: its reader is gone before the command starts.
    let closed = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        writer
    };
    let cases: &[(&[&str], i32)] = &[
        (&["show", "runs/ok", "close_resolved_ticket", "1", "--json"], 0),
        (&["show", "runs/ok", "close_resolved_ticket", "1"], 0),
        (&["report", "runs/ok", "--format", "github"], 0),
        (&["report", "runs/ok"], 0),
        (&["compare", "runs/ok", "runs/ok"], 0),
        (&["list", "suites/tickets.lua"], 0),
        (&["check", "suites/tickets.lua"], 0),
        (&["check", "suites/tickets.lua", "--json"], 0),
        (&["test"], 0),
        (&["run", "suites/tickets.lua", "--out", "runs/again"], 0),
        (&["--help"], 0),
    ];
    for (args, code) in cases {
        let o = bin().current_dir(&p).args(*args).stdout(closed()).output().unwrap();
        assert_eq!(o.status.code(), Some(*code), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("internal error"), "{args:?}: {}", stderr(&o));
    }
    // A run whose gates fail still says so.
    crash_after_write(&p, false);
    let o = bin().current_dir(&p).args(["run", "suites/tickets.lua", "--out", "runs/bad"]).stdout(closed()).output();
    let o = o.unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!stderr(&o).contains("internal error"), "{}", stderr(&o));
}

/// Item 9: `check` names every mistake at once: an unknown key hides neither
/// the rest of its declaration nor the later ones, a typo repeated in two
/// cases is named for both; `run` refuses the same suite with the same lines,
/// before any trial (a missing agent script among them).
#[test]
fn check_names_every_mistake_at_once_and_run_refuses_what_check_refuses() {
    let suite = r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite { name = "s", agent = evalua.agent.command { cmd = { "python3", evalua.path("gone.py") } } }
suite:tool { name = "ping", run = function() return {} end, efect = "write" }
suite:case { id = "a", input = "x", expct = {}, trials = 0 }
suite:case { id = "b", input = "x", expect = { check.answer { contans = "x" } } }
suite:case { id = "c", input = "x", expect = { check.answer { contans = "x" } } }
suite:case { id = "d", input = "x", tools = { "pign" } }
return suite
"#;
    let dir = project(&[("s.lua", suite)]);
    let o = evalua(dir.path(), &["check", "s.lua"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    for want in [
        "s.lua:3: the agent's command `python3 ",
        "gone.py does not exist",
        "s.lua:4: suite:tool: unknown key 'efect'",
        "s.lua:5: suite:case: unknown key 'expct'",
        "s.lua:5: suite:case 'a': 'trials' must be a positive integer, got 0",
        "s.lua:6: check.answer: unknown key 'contans'",
        "s.lua:7: check.answer: unknown key 'contans'",
        "s.lua:8: suite:case 'd': 'tools' names an undeclared tool 'pign' (did you mean 'ping'?)",
    ] {
        assert!(err.contains(want), "{want}: {err}");
    }
    let r = evalua(dir.path(), &["run", "s.lua", "--out", "out"]);
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    assert_eq!(stderr(&r), err, "run refuses with what check says");
    assert!(!dir.path().join("out").exists(), "no trial ran");

    // The missing script alone: check refuses it, and so does run, before any trial.
    let fine = suite.lines().take(4).collect::<Vec<_>>().join("\n").replace(", efect = \"write\"", "")
        + "\nsuite:case { id = \"a\", input = \"x\" }\nreturn suite\n";
    std::fs::write(dir.path().join("s.lua"), fine).unwrap();
    let c = evalua(dir.path(), &["check", "s.lua"]);
    assert_user_error(&c, "gone.py does not exist");
    let r = evalua(dir.path(), &["run", "s.lua", "--out", "out"]);
    assert_user_error(&r, "gone.py does not exist");
    assert!(!dir.path().join("out").exists(), "no trial ran");
}

/// Item 11: `evalua test` names the line of the example that went wrong, not
/// its group's.
#[test]
fn evalua_test_names_the_line_of_the_wrong_example() {
    let tmp = tempfile::tempdir().unwrap();
    let p = init_project(tmp.path());
    let path = p.join("graders/tickets_test.lua");
    let text = std::fs::read_to_string(&path).unwrap();
    let wrong =
        text.replace(r#"name = "closes nothing", expect = "pass""#, r#"name = "closes nothing", expect = "fail""#);
    assert_ne!(wrong, text);
    std::fs::write(&path, &wrong).unwrap();
    let line = wrong.lines().position(|l| l.contains("\"closes nothing\"")).unwrap() + 1;
    let o = evalua(&p, &["test"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let want = format!(":: closes nothing (graders/tickets_test.lua:{line}) ----");
    assert!(stdout(&o).contains(&want), "{want}: {}", stdout(&o));
    let o = evalua(&p, &["test", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ex = &doc["files"][0]["examples"][3];
    assert_eq!(ex["location"], format!("graders/tickets_test.lua:{line}"), "{ex}");
    // The examples above it keep their own lines.
    let first = wrong.lines().position(|l| l.contains("\"closes a ticket the request does not name\"")).unwrap() + 1;
    assert_eq!(doc["files"][0]["examples"][0]["location"], format!("graders/tickets_test.lua:{first}"));
}

/// Item 11: `run --json`'s failing trials say how each ended and its failed check.
#[test]
fn run_json_failing_trials_say_how_they_ended_and_which_check_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let p = init_project(tmp.path());
    let agent = std::fs::read_to_string(p.join("agents/agent.py")).unwrap();
    std::fs::write(p.join("agents/agent.py"), agent.replace("match.group(0)}", "\"T-43\"}")).unwrap();
    let o = evalua(&p, &["run", "suites/tickets.lua", "--json", "--out", "runs/bad"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let shown = &doc["runs"][0]["failing_trials"]["shown"][0];
    assert_eq!(shown["ended"], "final", "{shown}");
    assert_eq!(shown["outcome"], "critical", "{shown}");
    assert_eq!(
        shown["failed_check"], "prohibited: SELECT count(*) FROM tickets WHERE id <> 'T-42' AND status = 'closed'",
        "a critical check first: {shown}"
    );
    assert!(shown["why"].as_str().unwrap().contains("(critical)"), "{shown}");
    // An abnormal end: no failed check, the ending says why.
    std::fs::write(p.join("agents/agent.py"), &agent).unwrap();
    crash_after_write(&p, false);
    let o = evalua(&p, &["run", "suites/tickets.lua", "--json", "--out", "runs/crash"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let shown = &doc["runs"][0]["failing_trials"]["shown"][0];
    assert_eq!((shown["ended"].as_str(), shown["failed_check"].as_null()), (Some("crashed"), Some(())), "{shown}");
    assert!(shown["why"].as_str().unwrap().contains("the agent exited before its final message"), "{shown}");
}

/// Item 11: the generated .gitignore keeps the judge cache beside every
/// suite out of git (`suites/.evalua/judge-cache/`), not the project root's only.
#[test]
fn the_generated_gitignore_ignores_the_judge_cache_beside_a_suite() {
    let tmp = tempfile::tempdir().unwrap();
    let p = init_project(tmp.path());
    let git = |args: &[&str]| std::process::Command::new("git").current_dir(&p).args(args).output().unwrap();
    assert!(git(&["init", "-q"]).status.success());
    for ignored in ["suites/.evalua/judge-cache/ab/cd.json", ".evalua/judge-cache/x.json", "runs/x/summary.json"] {
        let o = git(&["check-ignore", "-q", "--no-index", ignored]);
        assert_eq!(o.status.code(), Some(0), "{ignored} is not ignored");
    }
    for kept in [".evalua/types/evalua.lua", "suites/tickets.lua"] {
        let o = git(&["check-ignore", "-q", "--no-index", kept]);
        assert_eq!(o.status.code(), Some(1), "{kept} is ignored");
    }
}

/// Item 11: `labels agree` names an annotator who overlaps no one.
#[test]
fn labels_agree_names_an_annotator_who_overlaps_no_one() {
    let line = |item: &str, who: &str, verdict: &str| crate::labels::line(item, who, Some("c"), verdict, "x");
    let mut lines = Vec::new();
    for i in 0..4 {
        lines.push(line(&format!("i{i}"), "ana", "pass"));
        lines.push(line(&format!("i{i}"), "bo", if i < 3 { "pass" } else { "fail" }));
        lines.push(line(&format!("j{i}"), "carol", "fail"));
    }
    let dir = project(&[("labels/s.jsonl", &(lines.join("\n") + "\n"))]);
    let o = evalua(dir.path(), &["labels", "agree", "labels/s.jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("overlapping no one: carol gave no pass/fail verdict on an item"), "{}", stdout(&o));
    let o = evalua(dir.path(), &["labels", "agree", "labels/s.jsonl", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["overlapping_no_one"], serde_json::json!(["carol"]), "{doc}");
}

/// Item 11: `--trials 0` is said in words, not as a Rust range.
#[test]
fn trials_zero_is_said_in_words() {
    let tmp = tempfile::tempdir().unwrap();
    let p = init_project(tmp.path());
    let o = evalua(&p, &["run", "suites/tickets.lua", "--trials", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("'--trials <TRIALS>': must be at least 1"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("..="), "{}", stderr(&o));
    let o = evalua(&p, &["run", "suites/tickets.lua", "--jobs", "0"]);
    assert!(stderr(&o).contains("must be at least 1") && !stderr(&o).contains("..="), "{}", stderr(&o));
}

/// Item 6: the PR comment says why trials failed, folded: per case (worst
/// first) its first failures with how they ended and the failing check, a
/// failed prohibited query first, as report.md's worst cases do.
#[test]
fn the_pr_comment_says_why_trials_failed_in_a_folded_section() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let o = evalua(&repo(), &["run", "suites/refunds.lua", "-q", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = evalua(&repo(), &["report", out.to_str().unwrap(), "--format", "github"]);
    let c = stdout(&o);
    let at = c.find("<details><summary>Why trials failed: 4 trials not accepted, by how they ended: final 4</summary>");
    let at = at.unwrap_or_else(|| panic!("a folded section: {c}"));
    let section = &c[at..at + c[at..].find("</details>").unwrap()];
    assert!(section.contains("**reembolso_parcial_01** — 2 of 5 accepted"), "{section}");
    assert!(section.contains("- #1 failed · ended final: 'sql: SELECT importe FROM reembolsos"), "{section}");
    assert!(section.contains("- #3 critical · ended final: 'prohibited: SELECT count(*) FROM reembolsos"), "{section}");
    assert!(section.contains("**pedido_entregado_03** — 4 of 5 accepted"), "{section}");
    // The worst case first; the comment's verdict and figures stay above it.
    assert!(section.find("reembolso_parcial_01") < section.find("pedido_entregado_03"), "{section}");
    assert!(c.find("| figure | value |").unwrap() < at, "{c}");
}

/// GitHub's anchor of a heading: lower case, spaces to `-`, punctuation
/// but `-` and `_` dropped (letters of any script kept: `τ-bench`).
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Item 8: the README opens for users (what evalua is, then pip install,
/// init, run, test), the contributors' build further down; the guide starts
/// with `evalua init`, and its table of contents lists every section and
/// links only to headings it has.
#[test]
fn the_readme_and_the_guide_open_for_users() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let first_block = &readme[readme.find("```sh").unwrap()..];
    let first_block = &first_block[..first_block[5..].find("```").unwrap()];
    for want in ["pip install", "evalua init", "evalua run", "evalua test"] {
        assert!(first_block.contains(want), "the README's first commands lack {want}: {first_block}");
    }
    assert!(!first_block.contains("cargo"), "a user's first commands need no cargo: {first_block}");
    let at = |s: &str| readme.find(s).unwrap_or_else(|| panic!("README: {s}"));
    assert!(at("## Get started") < at("## A suite, in ten minutes"));
    assert!(at("## A suite, in ten minutes") < at("cargo build --release"), "the build is further down");
    assert!(at("## A suite, in ten minutes") < at(".ci/run"), "the CI services are further down");
    assert!(at("## A suite, in ten minutes") < at("5½–7 minutes"), "the build's timings are further down");

    let guide = std::fs::read_to_string(repo().join("docs/guide.md")).unwrap();
    let first_section = guide.find("\n## ").unwrap();
    let toc = &guide[..first_section];
    let headings: Vec<&str> = guide.lines().filter_map(|l| l.strip_prefix("## ")).collect();
    assert!(headings[0].contains("evalua init"), "the guide starts with init: {headings:?}");
    for h in &headings {
        assert!(toc.contains(&format!("](#{})", anchor(h))), "the table of contents lacks '{h}' (#{})", anchor(h));
    }
    let anchors: Vec<String> =
        guide.lines().filter_map(|l| l.strip_prefix("## ").or_else(|| l.strip_prefix("### "))).map(anchor).collect();
    for link in toc.split("](#").skip(1) {
        let target = &link[..link.find(')').unwrap()];
        assert!(anchors.iter().any(|a| a == target), "the table of contents links to no heading: #{target}");
    }
}

/// Item 7: `evalua init`'s workflow is copied as is: no placeholder; the
/// action it uses is the copy init wrote beside it (the repository's own
/// action.yml and script, byte for byte, which tests/action.rs drives), and
/// it pins this evalua's version, which the action installs from a wheel and
/// then from its cache, never with cargo.
#[test]
fn the_init_workflow_names_nothing_to_fill_in() {
    let tmp = tempfile::tempdir().unwrap();
    let p = init_project(tmp.path());
    let wf = std::fs::read_to_string(p.join(".github/workflows/evalua.yml")).unwrap();
    assert!(!wf.contains("{{") && !wf.contains("@v0") && !wf.contains("evalua/evalua"), "{wf}");
    let uses: Vec<&str> = wf.lines().filter_map(|l| l.trim().strip_prefix("- uses: ")).collect();
    assert_eq!(uses, ["actions/checkout@v4", "./.github/actions/evalua"], "{wf}");
    assert!(wf.contains(&format!("version: {}", env!("CARGO_PKG_VERSION"))), "{wf}");
    for (copy, original) in [
        (".github/actions/evalua/action.yml", "action.yml"),
        (".github/actions/evalua/action/evalua_action.py", "action/evalua_action.py"),
    ] {
        assert_eq!(
            std::fs::read_to_string(p.join(copy)).unwrap(),
            std::fs::read_to_string(repo().join(original)).unwrap(),
            "{copy} is the repository's {original}"
        );
    }
    // Every input the workflow gives is one the action declares.
    let action = std::fs::read_to_string(p.join(".github/actions/evalua/action.yml")).unwrap();
    let with = wf.split("        with:\n").nth(1).unwrap();
    for key in with.lines().filter_map(|l| l.trim().split_once(':').map(|(k, _)| k)) {
        assert!(action.contains(&format!("\n  {key}:\n")), "the action has no input {key}");
    }
}

/// Item 10: an ablation's gate line and its pair line agree in unit (points)
/// and, read in the direction each states, in sign.
#[test]
fn an_ablations_gate_line_and_pair_line_agree_in_sign_and_unit() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("a");
    let o = evalua(
        &repo(),
        &[
            "run",
            "suites/refunds_ablation.lua",
            "--agent",
            "full",
            "--agent",
            "no_retry",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let text = stdout(&o);
    let gate = text.lines().find(|l| l.contains("delta pass^1 full-no_retry")).unwrap_or_else(|| panic!("{text}"));
    let pair =
        text.lines().find(|l| l.starts_with("no_retry − full (paired by case")).unwrap_or_else(|| panic!("{text}"));
    // `+6.7 pt` → 6.7; `−6.7 pt` → -6.7.
    let points = |s: &str| -> f64 {
        let s = s.trim();
        let (sign, rest) = match s.chars().next() {
            Some('−') => (-1.0, &s['−'.len_utf8()..]),
            Some('+') => (1.0, &s[1..]),
            _ => panic!("no sign: {s}"),
        };
        sign * rest.trim_end_matches(" pt").parse::<f64>().unwrap_or_else(|e| panic!("{s}: {e}"))
    };
    let gate_value = gate.split(": ").nth(1).unwrap().split(" (").next().unwrap();
    assert!(gate_value.ends_with(" pt"), "the gate's difference in points: {gate}");
    assert!(gate.contains("(full − no_retry)") && gate.contains("required ≥ +5.0 pt"), "{gate}");
    let pair_value = pair.split("pass^1 ").nth(1).unwrap().split(" [").next().unwrap();
    assert!(pair_value.ends_with(" pt"), "{pair}");
    assert_eq!(points(gate_value), -points(pair_value), "full − no_retry is minus no_retry − full: {gate} / {pair}");
}
