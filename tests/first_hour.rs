//! A newcomer's first hour (issue 27): why trials failed is on the console,
//! `check` finds every mistake at once, and real traces grade without
//! reading source.

use crate::common::*;

/// A suite whose three cases' agents fail for plain reasons: a missing
/// script (crashed), a stray stdout line (protocol_error), a hang (deadline).
/// Only the hang needs the deadline; the other two end on their own long
/// before it, even on a busy machine (2 s was too close).
fn plain_failures() -> tempfile::TempDir {
    project(&[
        (
            "diag.lua",
            r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {
  name = "diag", trials = 1, budget = { deadline_s = 15 },
  agent = evalua.agent.command { cmd = { "python3", "missing_agent.py" } },
}
suite:tool { name = "ping", run = function(ctx, args) return { ok = true } end }
suite:case { id = "missing", input = "hi", expect = { check.answer { contains = "x" } } }
suite:case { id = "noisy", input = "hi", agent = evalua.agent.command { cmd = { "python3", evalua.path("noisy.py") } },
  expect = { check.answer { contains = "x" } } }
suite:case { id = "hangs", input = "hi", agent = evalua.agent.command { cmd = { "python3", evalua.path("hang.py") } },
  expect = { check.answer { contains = "x" } } }
return suite
"#,
        ),
        ("noisy.py", "print('hello there')\n"),
        ("hang.py", "import time\ntime.sleep(3600)\n"),
    ])
}

/// Item 1: after the table, the console says how the non-accepted trials
/// ended, with counts, each ending's first error line (a crash's last stderr
/// line too) and the command that shows the trial whole; the reports say the same.
#[test]
fn the_console_says_how_failed_trials_ended_and_how_to_see_them() {
    let dir = plain_failures();
    let o = run_suite(dir.path(), "diag.lua", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let at = out.find("not accepted: 3 trials, by how they ended: crashed 1, deadline 1, protocol_error 1");
    let table_end = out.find("┘").expect("a table");
    assert!(at.is_some_and(|a| a > table_end && a < out.find("diag: 3 cases").unwrap()), "{out}");
    assert!(out.contains("crashed: first missing #1: the agent exited before its final message"), "{out}");
    assert!(out.contains("stderr: python3: can't open file") && out.contains("missing_agent.py"), "{out}");
    assert!(out.contains("protocol_error: first noisy #1: not a JSON object: hello there"), "{out}");
    assert!(out.contains("deadline: first hangs #1"), "{out}");
    for (case, ended) in [("missing", "crashed"), ("noisy", "protocol_error"), ("hangs", "deadline")] {
        let cmd = format!("evalua show out {case} 1");
        assert!(out.contains(&cmd), "{cmd}: {out}");
        // The command works as printed.
        let shown = evalua(dir.path(), &["show", "out", case, "1"]);
        assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
        assert!(stdout(&shown).contains(&format!("ended: {ended}")), "{}", stdout(&shown));
    }
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains("## How the trials not accepted ended"), "{md}");
    let abs = dir.path().join("out").canonicalize().unwrap();
    assert!(md.contains("| crashed | 1 | missing #1 |"), "{md}");
    assert!(md.contains(&format!("`evalua show {} missing 1`", abs.display())), "{md}");
    assert!(md.contains("stderr: python3: can't open file"), "{md}");
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(html.contains("How the trials not accepted ended"));
    assert!(html.contains(&format!("evalua show {} noisy 1", abs.display())));
    // `evalua report` renders the same again.
    let again = evalua(dir.path(), &["report", "out"]);
    assert!(matches!(again.status.code(), Some(0 | 1)), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(dir.path().join("out/report.md")).unwrap(), md);
}

/// Trials that ended normally but failed their checks name their first failing check.
#[test]
fn trials_that_ended_normally_name_their_first_failing_check() {
    let tmp = tempfile::tempdir().unwrap();
    let o = evalua(&repo(), &["run", "suites/refunds.lua", "-q", "--out", tmp.path().join("r").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("by how they ended: final "), "{out}");
    assert!(out.lines().any(|l| l.trim_start().starts_with("final: first ") && l.contains("failed")), "{out}");
}

/// Polish: an incomplete run's hint names the suite's path and the run dir,
/// a command to copy, not `SUITE`.
#[test]
fn the_resume_hint_names_the_suite_and_the_run_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let o = evalua(&repo(), &["run", "suites/date_filter.lua", "-q", "--out", out.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    // Lose the last trial's record: the run is incomplete.
    let text = std::fs::read_to_string(out.join("trials.jsonl")).unwrap();
    let kept: Vec<&str> = text.lines().collect();
    std::fs::write(out.join("trials.jsonl"), kept[..kept.len() - 1].join("\n") + "\n").unwrap();
    let o = evalua(&repo(), &["report", out.to_str().unwrap()]);
    let want = format!("`evalua run suites/date_filter.lua --resume {}`", out.display());
    assert!(stdout(&o).contains(&want), "{want}: {}", stdout(&o));
    assert!(!stdout(&o).contains("SUITE"), "{}", stdout(&o));
}

/// Polish: a check's evidence shows an empty list as `[]` (not an empty Lua
/// table's `{}`) and ratios at four decimals, not 0.3333333333333333.
#[test]
fn evidence_shows_empty_lists_and_short_ratios() {
    let dir = project(&[(
        "ev.lua",
        r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite { name = "ev", agent = evalua.agent.scripted(function(task, env)
  if task.input == "call" then env.call("a", {}) end
  return "done"
end) }
suite:tool { name = "a", run = function() return {} end }
suite:tool { name = "b", run = function() return {} end }
suite:tool { name = "c", run = function() return {} end }
suite:case { id = "none", input = "x", expect = { check.tools({ "a", "b", "c" }, { mode = "any_order" }) } }
suite:case { id = "some", input = "call", expect = { check.tools({ "a", "b", "c" }, { mode = "any_order" }) } }
return suite
"#,
    )]);
    let o = run_suite(dir.path(), "ev.lua", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.path().join("out/trials.jsonl")).unwrap();
    let recs = trials(&dir.path().join("out"));
    let none = &record(&recs, "none", 1)["checks"][0]["evidence"];
    assert_eq!(none["executed"], serde_json::json!([]), "{text}");
    let some = &record(&recs, "some", 1)["checks"][0]["evidence"];
    assert_eq!(some["executed"], serde_json::json!(["a"]), "{text}");
    assert_eq!(some["recall"], serde_json::json!(0.3333), "{text}");
    assert!(!text.contains("0.3333333"), "{text}");
}

/// The lines of stderr, each expected to be one `error: file:line: …`.
fn error_lines(o: &std::process::Output) -> Vec<String> {
    stderr(o).lines().map(String::from).collect()
}

const MANY_MISTAKES: &str = r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {
  name = "bad",
  budget = { deadline_s = 0/0 },
  sandbox = { schema = "shop.sql" },
  agent = evalua.agent.scripted(function() return "x" end),
}
suite:tool { name = "lookup_order", run = function() return {} end }
suite:tool {
  name = "issue_refund",
  requires = { "verify_identiy" },
  run = function() return {} end,
}
suite:tool { name = "verify_identity", effect = "sometimes", run = function() return {} end }
suite:case { id = "a", input = "x", tools = { "lookup_ordr" },
  expect = { check.sql("SELECT count(*) FROM ordres", { equals = 1 }), check.tools({ "lookup_order", "isue_refund" }) } }
suite:case { id = "b", input = "x", clock = "not a time" }
suite:case { id = "c", input = "x", expect = { check.tools({ "verify_identity" }) } }
return suite
"#;

/// Items 3 and 4: one `check` says every independent error, each at its own
/// `file:line` (a tool's `requires` at the tool, not at `evalua.suite {`),
/// names that refer to a tool with the nearest declared one; then exit 2.
#[test]
fn check_says_every_independent_error_each_at_its_line() {
    let dir = project(&[("bad.lua", MANY_MISTAKES), ("shop.sql", "CREATE TABLE orders(id TEXT, total REAL);\n")]);
    let o = evalua(dir.path(), &["check", "bad.lua"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let lines = error_lines(&o);
    let want = [
        "error: bad.lua:3: evalua.suite.budget: 'deadline_s' must be a number of seconds above 0 and at most 604800 (a week), got NaN (0/0)",
        "error: bad.lua:10: tool 'issue_refund': 'requires' names an unknown tool 'verify_identiy' (did you mean 'verify_identity'?)",
        "error: bad.lua:15: suite:tool 'verify_identity': 'effect' must be",
        "error: bad.lua:16: suite:case 'a': 'tools' names an undeclared tool 'lookup_ordr' (did you mean 'lookup_order'?)",
        "error: bad.lua:17: check 'tools in_order: lookup_order, isue_refund' (case 'a') names an unknown tool 'isue_refund' (did you mean 'issue_refund'?)",
        "error: bad.lua:17: check 'sql: SELECT count(*) FROM ordres' (case 'a'): the query does not prepare against the case's fixture: no such table: ordres",
        "error: bad.lua:18: suite:case 'b': 'clock'",
    ];
    assert_eq!(lines.len(), want.len(), "one line per error:\n{}", lines.join("\n"));
    for (l, w) in lines.iter().zip(want) {
        assert!(l.starts_with(w), "{l}\n  should start with\n{w}");
    }
    // A tool whose declaration failed is said once: case 'c' naming it adds nothing.
    assert!(!stderr(&o).contains("'verify_identity' (did you mean"), "{}", stderr(&o));
    // `run` refuses the same suite with the same errors (those loading finds), before any trial.
    let r = run_suite(dir.path(), "bad.lua", &[]);
    assert_eq!(r.status.code(), Some(2));
    assert!(stderr(&r).contains("bad.lua:10: tool 'issue_refund'") && stderr(&r).contains("got NaN"), "{}", stderr(&r));
    assert!(!dir.path().join("out").exists());
}

/// Item 4: names of monitors get the nearest name too, at the line that names them.
#[test]
fn a_golden_naming_a_mistyped_monitor_gets_the_nearest_name() {
    let dir = project(&[(
        "g.lua",
        r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite { name = "g", agent = evalua.agent.scripted(function() return "x" end),
  monitors = { tool_loop = check.no_loops { max_repeats = 2 } } }
suite:tool { name = "t", run = function() return {} end }
suite:goldens({ version = 1, cases = {
  { id = "g1", input = "hi", failure_modes = { "tool_lop" } },
  { id = "g2", input = "hi", failure_modes = { "tool_loop" } },
} })
suite:case { id = "c", input = "x", tools = { "T" } }
return suite
"#,
    )]);
    let o = evalua(dir.path(), &["check", "g.lua"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let lines = error_lines(&o);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("error: g.lua:6: suite:goldens: cases[1] ('g1') names failure mode 'tool_lop', which is not a monitor of this suite (did you mean 'tool_loop'?)"),
        "{lines:?}"
    );
    assert!(
        lines[1]
            .starts_with("error: g.lua:10: suite:case 'c': 'tools' names an undeclared tool 'T' (did you mean 't'?)"),
        "{lines:?}"
    );
}

/// Item 2: `check` refuses a command agent whose program or script the
/// sandbox would not find, in one line naming the file; one it would find is ok.
#[test]
fn check_refuses_a_command_agent_whose_program_or_script_is_missing() {
    let suite = |agent: &str| {
        format!(
            r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {{ name = "cmd", agent = {agent} }}
suite:tool {{ name = "t", run = function() return {{}} end }}
suite:case {{ id = "a", input = "x" }}
return suite
"#
        )
    };
    let dir = project(&[
        ("missing.lua", &suite(r#"evalua.agent.command { cmd = { "python3", "missing_agent.py" } }"#)),
        ("beside.lua", &suite(r#"evalua.agent.command { cmd = { "python3", "-u", "agent.py" } }"#)),
        ("abs.lua", &suite(r#"evalua.agent.command { cmd = { "python3", evalua.path("agents/nope.py") } }"#)),
        ("noprog.lua", &suite(r#"evalua.agent.command { cmd = { "no-such-agent-program", "x" } }"#)),
        ("good.lua", &suite(r#"evalua.agent.command { cmd = { "python3", evalua.path("agent.py") } }"#)),
        ("module.lua", &suite(r#"evalua.agent.command { cmd = { "python3", "-m", "json.tool" } }"#)),
        ("agent.py", "print('hi')\n"),
    ]);
    let cases = [
        (
            "missing.lua",
            "missing.lua:3: the agent's command `python3 missing_agent.py`: the script missing_agent.py does not exist in the trial's work dir (an empty folder)",
        ),
        (
            "beside.lua",
            "the script agent.py does not exist in the trial's work dir (an empty folder), where the agent starts (it is beside the suite: give evalua.path(\"agent.py\"))",
        ),
        ("abs.lua", "agents/nope.py does not exist"),
        ("noprog.lua", "`no-such-agent-program` is not found on PATH inside the sandbox"),
    ];
    for (file, needle) in cases {
        assert_user_error(&evalua(dir.path(), &["check", file]), needle);
    }
    for file in ["good.lua", "module.lua"] {
        let o = evalua(dir.path(), &["check", file]);
        assert_eq!(o.status.code(), Some(0), "{file}: {}", stderr(&o));
    }
}
