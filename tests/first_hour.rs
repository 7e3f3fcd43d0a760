//! A newcomer's first hour (issue 27): why trials failed is on the console,
//! `check` finds every mistake at once, and real traces grade without
//! reading source.

use crate::common::*;

/// A suite whose three cases' agents fail for plain reasons: a script that
/// exits 2 (crashed; a missing one is refused before any trial, issue 43), a stray stdout line (protocol_error), a hang (deadline).
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
  agent = evalua.agent.command { cmd = { "python3", evalua.path("missing_db.py") } },
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
        ("missing_db.py", "import sys\nsys.stderr.write('cannot open the database: missing.db\\n')\nsys.exit(2)\n"),
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
    assert!(out.contains("stderr: cannot open the database: missing.db"), "{out}");
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
    assert!(md.contains("stderr: cannot open the database: missing.db"), "{md}");
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

/// Items 6 and 9: the smallest trace `grade` reads, suites/traces/minimal.jsonl
/// (three flat spans with `start_ns` / `end_ns`, no adapter), grades as the
/// guide says; with `--traces FILE SUITE` too (item 8).
#[test]
fn the_guides_minimal_trace_grades_with_start_ns_spans() {
    let text = std::fs::read_to_string(repo().join("suites/traces/minimal.jsonl")).unwrap();
    assert_eq!(text.lines().count(), 3, "three flat spans");
    assert!(text.contains("\"start_ns\"") && text.contains("\"end_ns\""));
    let guide = std::fs::read_to_string(repo().join("docs/guide.md")).unwrap();
    assert!(guide.contains("evalua grade suites/refunds_prod.lua --traces suites/traces/minimal.jsonl"));
    let tmp = tempfile::tempdir().unwrap();
    for (i, args) in [
        ["grade", "suites/refunds_prod.lua", "--traces", "suites/traces/minimal.jsonl"],
        // Item 8: the suite after the trace paths is still the suite.
        ["grade", "--traces", "suites/traces/minimal.jsonl", "suites/refunds_prod.lua"],
    ]
    .into_iter()
    .enumerate()
    {
        let out = tmp.path().join(format!("g{i}"));
        let mut a: Vec<&str> = args.to_vec();
        a.extend(["-q", "--out", out.to_str().unwrap()]);
        let o = evalua(&repo(), &a);
        assert_eq!(o.status.code(), Some(1), "the accepted gate fails: {}", stderr(&o));
        assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
        let recs = trials(&out);
        assert_eq!(recs.len(), 1, "one item");
        assert_eq!(recs[0]["failure_modes"], serde_json::json!(["missing_identity_verification"]));
        assert_eq!(recs[0]["calls"]["executed"], 2);
        let t = trace_of(&out, &recs[0]);
        assert_eq!(t["calls"][1]["started_ms"], 1000.0, "times read from start_ns: {}", t["calls"][1]);
    }
}

/// Item 8: the usage line of a grade error shows the flags as optional.
#[test]
fn grades_usage_line_shows_no_flag_as_required() {
    let o = evalua(&repo(), &["grade", "-q", "suites/refunds_prod.lua"]);
    assert_eq!(o.status.code(), Some(2));
    let usage = stderr(&o).lines().find(|l| l.starts_with("Usage:")).unwrap_or_default().to_string();
    assert_eq!(usage, "Usage: evalua grade SUITE.lua --traces PATH... [OPTIONS]", "{}", stderr(&o));
    let o = evalua(&repo(), &["grade", "--traces", "suites/traces/minimal.jsonl"]);
    assert_user_error(&o, "which suite? give it first: evalua grade SUITE.lua --traces PATH...");
}

/// Item 7: a gate whose figure is undefined for graded traces (pass^2, each
/// trace one trial) says so and is not decided; `grade = { gate = … }` gives
/// grading its own gates.
#[test]
fn grading_has_its_own_gates_and_undefined_figures_do_not_fail() {
    let suite = |grade: &str| {
        format!(
            r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {{ name = "g", agent = evalua.agent.scripted(function() return "x" end),
  monitors = {{ tool_loop = check.no_loops {{ max_repeats = 2 }} }},
  gate = {{ ["pass^2"] = 0.5, accepted = 0.5 }}{grade} }}
suite:tool {{ name = "t", run = function() return {{}} end }}
suite:case {{ id = "c", input = "x" }}
return suite
"#
        )
    };
    let trace = std::fs::read_to_string(repo().join("suites/traces/minimal.jsonl")).unwrap();
    let dir = project(&[
        ("run_gates.lua", &suite("")),
        ("grade_gates.lua", &suite(", grade = { gate = { accepted = 1.0, critical_failures = 0 } }")),
        ("t.jsonl", &trace),
    ]);
    let o = evalua(dir.path(), &["grade", "run_gates.lua", "--traces", "t.jsonl", "-q", "--out", "a"]);
    assert_eq!(o.status.code(), Some(0), "pass^2 is undefined, accepted 100% ≥ 50%: {}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("gates: 1 passed, 1 not decided (undefined for this input)"), "{out}");
    assert!(out.contains("UNDEFINED pass^2: required ≥ 50.0% (undefined for these items"), "{out}");
    let s = json(&dir.path().join("a/summary.json"));
    let g = s["gates"].as_array().unwrap().iter().find(|g| g["name"] == "pass^2").unwrap().clone();
    assert_eq!(
        (g["passed"].clone(), g["undefined"].clone(), g["value"].clone()),
        (true.into(), true.into(), serde_json::Value::Null)
    );

    let o = evalua(dir.path(), &["grade", "grade_gates.lua", "--traces", "t.jsonl", "-q", "--out", "b"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("gates: all 2 passed") && !out.contains("pass^2:"), "grading's own gates: {out}");
    // A run of the same suite keeps its run gates.
    let o = run_suite(dir.path(), "grade_gates.lua", &["--trials", "2"]);
    assert!(stdout(&o).contains("pass^2"), "{}", stdout(&o));
    // grade = { … } is checked like every key.
    let dir = project(&[("bad.lua", &suite(", grade = { gates = {} }"))]);
    assert_user_error(&evalua(dir.path(), &["check", "bad.lua"]), "evalua.suite.grade: unknown key 'gates'");
}

/// Polish: a graded run's reports give each item (a row named by trace id)
/// its failure modes, and draw no one-point pass^k chart.
#[test]
fn a_graded_runs_report_shows_failure_modes_and_no_one_point_chart() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("g");
    let o = evalua(
        &repo(),
        &[
            "grade",
            "suites/refunds_prod.lua",
            "--traces",
            "tests/fixtures/traces/pydantic_ai/",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| infra err | failure modes |"), "{md}");
    let flagged =
        trials(&out).into_iter().find(|r| r["failure_modes"].as_array().is_some_and(|m| !m.is_empty())).unwrap();
    let mode = flagged["failure_modes"][0].as_str().unwrap();
    let row = md.lines().find(|l| l.starts_with(&format!("| {} |", flagged["case"].as_str().unwrap()))).unwrap();
    assert!(row.trim_end().ends_with(&format!("{mode} |")), "{row}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(!html.contains("<svg id=\"curve\""), "no one-point chart");
    assert!(html.contains("Every case has one graded item (a trace is one trial)"));
    assert!(html.contains(&format!(",\"{mode}\"]")), "the grid row carries the item's failure modes");
}

/// Item 5: `--resume` compares an agent's program by what it runs: a pyenv
/// shim found on PATH then, the interpreter it starts found directly now, is
/// the same program. When the agent really changed, one short line names the
/// one thing that changed.
#[test]
fn resume_compares_programs_by_what_they_run_and_names_what_changed() {
    let real = match std::fs::canonicalize("/usr/bin/python3") {
        Ok(p) => p,
        Err(_) => return eprintln!("skipped: no /usr/bin/python3"),
    };
    let agent =
        "import sys, json\nsys.stdin.readline()\nprint(json.dumps({'type': 'final', 'content': 'ok'}), flush=True)\n";
    let dir = project(&[
        (
            "s.lua",
            r#"local evalua = require("evalua")
local suite = evalua.suite { name = "pyenv", trials = 2,
  agent = evalua.agent.command { cmd = { "python3", evalua.path("agent.py") } } }
suite:tool { name = "t", run = function() return {} end }
suite:case { id = "c", input = "x", expect = { function(t) return t.answer == "ok" end } }
return suite
"#,
        ),
        ("agent.py", agent),
        // A pyenv root: its shim (what pyenv writes), the version it selects, that version's interpreter.
        (
            "pyenv/shims/python3",
            "#!/usr/bin/env bash\nset -e\nprogram=\"${0##*/}\"\nexec \"/nonexistent/libexec/pyenv\" exec \"$program\" \"$@\"\n",
        ),
        ("pyenv/version", "9.9.9\n"),
    ]);
    let root = dir.path().join("pyenv");
    std::fs::create_dir_all(root.join("versions/9.9.9/bin")).unwrap();
    std::os::unix::fs::symlink(&real, root.join("versions/9.9.9/bin/python3")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(root.join("shims/python3"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = |path: String, extra: &[&str]| {
        let mut args = vec!["run", "s.lua", "-q", "--isolation", "none"];
        args.extend_from_slice(extra);
        bin().current_dir(dir.path()).env("PATH", path).env("PYENV_ROOT", &root).args(&args).output().unwrap()
    };
    // First with the shim first on PATH (the interpreter found through it)…
    let o = run(format!("{}:/usr/bin:/bin", root.join("shims").display()), &["--out", "out"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let m = json(&dir.path().join("out/manifest.json"));
    assert_eq!(m["agent"]["program"]["executable"]["path"], real.display().to_string(), "{}", m["agent"]);
    assert!(m["agent"]["program"]["via"].as_str().unwrap().ends_with("pyenv/shims/python3"));
    // …then, one trial lost, resumed with the interpreter found directly.
    let text = std::fs::read_to_string(dir.path().join("out/trials.jsonl")).unwrap();
    std::fs::write(dir.path().join("out/trials.jsonl"), text.lines().next().unwrap().to_string() + "\n").unwrap();
    let o = run("/usr/bin:/bin".into(), &["--resume", "out"]);
    assert_eq!(o.status.code(), Some(0), "the same program: {}", stderr(&o));
    assert_eq!(trials(&dir.path().join("out")).len(), 2);
    // The agent's script really changed: one short line says which file.
    std::fs::write(dir.path().join("out/trials.jsonl"), text.lines().next().unwrap().to_string() + "\n").unwrap();
    std::fs::write(dir.path().join("agent.py"), format!("{agent}# changed\n")).unwrap();
    let o = run("/usr/bin:/bin".into(), &["--resume", "out"]);
    assert_eq!(o.status.code(), Some(2));
    let err: Vec<String> = stderr(&o).lines().filter(|l| l.starts_with("error:")).map(String::from).collect();
    assert_eq!(err.len(), 1, "{}", stderr(&o));
    assert!(err[0].contains("(the agent's file ") && err[0].contains("agent.py changed (sha256 "), "{}", err[0]);
    assert!(err[0].len() < 400, "one short line, not the agent's JSON: {}", err[0]);
}

/// Flat spans of conversations that each refund without verifying the
/// customer (one cluster: the same failure mode and tool sequence), as
/// (trace id, first user message).
fn unverified_refunds(items: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, (trace, input)) in items.iter().enumerate() {
        let t0 = 1_793_693_575_000_000_000u64 + i as u64 * 10_000_000_000;
        let span = |id: &str, parent: Option<&str>, name: &str, at: u64, attrs: serde_json::Value| {
            let mut s = serde_json::json!({"trace_id": trace, "span_id": id, "name": name,
                "start_ns": t0 + at * 100_000_000, "end_ns": t0 + (at + 1) * 100_000_000, "attributes": attrs});
            if let Some(p) = parent {
                s["parent_span_id"] = p.into();
            }
            s.to_string() + "\n"
        };
        out += &span(
            "a1",
            None,
            "invoke_agent support",
            0,
            serde_json::json!({"gen_ai.operation.name": "invoke_agent", "input.value": input, "output.value": "Refunded."}),
        );
        for (j, tool) in ["lookup_order", "issue_refund"].iter().enumerate() {
            out += &span(
                &format!("b{j}"),
                Some("a1"),
                &format!("execute_tool {tool}"),
                j as u64 + 1,
                serde_json::json!({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
                    "gen_ai.tool.call.arguments": "{\"order_id\": \"P-9930\"}", "gen_ai.tool.call.result": "{}"}),
            );
        }
    }
    out
}

fn graded(dir: &std::path::Path, name: &str, traces: &str) -> std::path::PathBuf {
    let file = dir.join(format!("{name}.jsonl"));
    std::fs::write(&file, traces).unwrap();
    let out = dir.join(name);
    let o = evalua(
        &repo(),
        &["grade", "suites/refunds_prod.lua", "--traces", file.to_str().unwrap(), "-q", "--out", out.to_str().unwrap()],
    );
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    out
}

/// Item 10: promote keeps up to N distinct inputs of a cluster (default 3) as
/// its golden cases; new trace ids alone leave the version; a golden's check
/// is its failure mode's monitor; `--into` a missing folder is refused.
#[test]
fn promote_keeps_several_wordings_a_cluster_and_versions_only_new_cases() {
    let tmp = tempfile::tempdir().unwrap();
    let first = graded(
        tmp.path(),
        "first",
        &unverified_refunds(&[
            ("t1", "Refund the missing unit of P-9930."),
            ("t2", "P-9930 arrived with one unit missing; please refund it."),
            ("t3", "Refund the missing unit of P-9930."),
            ("t4", "I was charged for 3 units of P-9930 but got 2."),
            ("t5", "Where is my refund for P-9930?"),
        ]),
    );
    let into = tmp.path().join("goldens.lua");
    let o = evalua(&repo(), &["promote", first.to_str().unwrap(), "--into", into.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&into).unwrap();
    assert!(text.contains("version = 1"), "{text}");
    let inputs = text.matches("input = ").count();
    assert_eq!(inputs, 3, "three distinct wordings kept: {text}");
    for t in ["t1", "t2", "t3", "t4", "t5"] {
        assert!(text.contains(&format!("\"{t}\"")), "every trace id is listed: {t}\n{text}");
    }
    assert!(!text.contains("Where is my refund"), "the fourth wording is over the cluster's three: {text}");
    let ids: Vec<&str> = text.lines().filter_map(|l| l.trim().strip_prefix("id = \"")).collect();
    assert_eq!(ids.len(), 3);
    assert!(ids[1].ends_with("_2\",") && ids[2].ends_with("_3\","), "{ids:?}");

    // The same wordings again, under new trace ids: traces added, the version stays.
    let again = graded(
        tmp.path(),
        "again",
        &unverified_refunds(&[
            ("t6", "Refund the missing unit of P-9930."),
            ("t7", "I was charged for 3 units of P-9930 but got 2."),
        ]),
    );
    let o = evalua(&repo(), &["promote", again.to_str().unwrap(), "--into", into.to_str().unwrap()]);
    assert!(stdout(&o).contains("version 1 (unchanged: only trace ids added)"), "{}", stdout(&o));
    let text = std::fs::read_to_string(&into).unwrap();
    assert!(text.contains("version = 1") && text.contains("\"t6\"") && text.contains("\"t7\""), "{text}");

    // --per-cluster 1: one case a cluster, every trace on it.
    let one = tmp.path().join("one.lua");
    let o =
        evalua(&repo(), &["promote", first.to_str().unwrap(), "--into", one.to_str().unwrap(), "--per-cluster", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&one).unwrap().matches("input = ").count(), 1);

    // A golden's check is its failure mode's monitor: it fails with the monitor's evidence.
    std::fs::write(
        tmp.path().join("g.lua"),
        r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite { name = "g",
  agent = evalua.agent.scripted(function(task, env)
    env.call("lookup_order", { order_id = "P-9930" })
    env.call("issue_refund", { order_id = "P-9930", amount = 19.9 })
    return "Refunded."
  end),
  monitors = { missing_identity_verification = check.before("verify_identity", "issue_refund") } }
for _, name in ipairs { "lookup_order", "verify_identity", "issue_refund" } do
  suite:tool { name = name, run = function() return {} end }
end
suite:goldens(require("goldens"))
return suite
"#,
    )
    .unwrap();
    let o = evalua(tmp.path(), &["run", "g.lua", "-q", "--out", "run"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let recs = trials(&tmp.path().join("run"));
    assert_eq!(recs.len(), 3, "the three goldens");
    let c = check(&recs[0], "does not re-fire missing_identity_verification");
    assert_eq!(c["passed"], false);
    assert!(c["evidence"]["reason"].as_str().unwrap().contains("before any executed verify_identity"), "{c}");

    // --into a folder that does not exist: refused, nothing created.
    let nowhere = tmp.path().join("no/such/dir/x.lua");
    assert_user_error(
        &evalua(&repo(), &["promote", first.to_str().unwrap(), "--into", nowhere.to_str().unwrap()]),
        "does not exist (create it first",
    );
    assert!(!tmp.path().join("no").exists());
}

/// A running `evalua mock-judge`, killed when dropped.
pub struct MockJudge {
    child: std::process::Child,
    pub url: String,
    /// Kept open: a closed pipe would end the server at its next line.
    _stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl Drop for MockJudge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `evalua mock-judge RULES --port 0` and read the URL it prints.
pub fn mock_judge(cwd: &std::path::Path, rules: &str) -> MockJudge {
    use std::io::BufRead;
    let mut child = bin()
        .current_dir(cwd)
        .args(["mock-judge", rules, "--port", "0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut first).unwrap();
    let url = first.split_whitespace().find(|w| w.starts_with("http://127.0.0.1:")).map(String::from);
    let Some(url) = url else {
        let _ = child.kill();
        panic!("mock-judge printed no URL: {first:?}");
    };
    MockJudge { child, url, _stdout: stdout }
}

/// `evalua` in `cwd` with the judge pointed at `url` and no other model configuration.
fn with_judge(cwd: &std::path::Path, url: &str, args: &[&str]) -> std::process::Output {
    let mut c = bin();
    c.current_dir(cwd).args(args);
    for k in ["OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "EVALUA_JUDGE_CACHE"] {
        c.env_remove(k);
    }
    c.env("EVALUA_OPENAI_BASE_URL", url).output().unwrap()
}

/// Item 13: an offline OpenAI-compatible judge answering from a rules file,
/// as the guide's judge journey uses it: calibration finds the flaw the
/// example's rules carry, the fixed rules agree with the humans, a run's
/// judge checks are graded (not skipped), and bad rules are one-line errors.
#[test]
fn the_mock_judge_answers_from_a_rules_file_as_the_guide_walks_it() {
    // A copy of the example (calibration records and the cache go beside the suite).
    let dir = tempfile::tempdir().unwrap();
    for sub in ["suites", "graders"] {
        let o = std::process::Command::new("cp").arg("-r").arg(repo().join(sub)).arg(dir.path()).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let d = dir.path();
    let m = mock_judge(d, "suites/judges/refunds_judged.rules.json");
    let calibrate = ["calibrate", "suites/refunds_judged.lua", "--labels", "suites/labels/refunds_judged.jsonl"];
    let o = with_judge(d, &m.url, &calibrate);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    // The flaw: any mention of a refund passes "states the refunded amount".
    assert!(out.contains("2 disagreements"), "{out}");
    assert!(out.contains("h2  suites/labels/refunds_judged.jsonl:3  criterion 1"), "{out}");
    assert!(out.contains("h4  suites/labels/refunds_judged.jsonl:7  criterion 1"), "{out}");
    assert!(out.contains("judge pass, human fail; the judge's reason: quoted \"reembols\""), "{out}");
    assert!(out.contains("Cohen's kappa: 0.000"), "{out}");

    // Fixed as the guide says: the judge agrees with every compared label.
    let rules = std::fs::read_to_string(d.join("suites/judges/refunds_judged.rules.json")).unwrap();
    assert!(rules.contains(r#""matches": "(?i)reembols""#));
    std::fs::write(d.join("fixed.json"), rules.replace(r#""matches": "(?i)reembols""#, r#""matches": "19[,.]90""#))
        .unwrap();
    let fixed = mock_judge(d, "fixed.json");
    let mut again = calibrate.to_vec();
    again.push("--no-cache");
    let o = with_judge(d, &fixed.url, &again);
    let out = stdout(&o);
    assert!(out.contains("Cohen's kappa: 1.000") && !out.contains("disagreement"), "{out}{}", stderr(&o));

    // A run grades its judge checks against it: nothing skipped, the gate of --require-judge holds.
    let o = with_judge(d, &fixed.url, &["run", "suites/refunds_judged.lua", "--require-judge", "-q", "--out", "r"]);
    assert!(o.status.code() == Some(0) || o.status.code() == Some(1), "{}{}", stdout(&o), stderr(&o));
    let s = json(&d.join("r/summary.json"));
    assert_eq!(s["figures"]["skipped_checks"], 0, "{s}");
    for rec in trials(&d.join("r")) {
        let reply = check(&rec, "reply");
        assert!(reply["passed"].is_boolean(), "graded by the mock judge: {reply}");
        assert_eq!(reply["evidence"]["judge"], "openai:gpt-4.1-mini", "{reply}");
    }

    // Bad rules: exit 2, one line, where.
    std::fs::write(d.join("bad.json"), "{\"rubric\": [\n  {\"verdict\": \"pass\", \"when\": \"x\"}\n]}\n").unwrap();
    let o = evalua(d, &["mock-judge", "bad.json", "--port", "0"]);
    assert_user_error(&o, "bad.json:2:");
    assert!(stderr(&o).contains("unknown field `when`"), "{}", stderr(&o));
    std::fs::write(d.join("bad.json"), r#"{"rubric": [{"verdict": "pass", "matches": "(unclosed"}]}"#).unwrap();
    assert_user_error(&evalua(d, &["mock-judge", "bad.json", "--port", "0"]), "bad.json: rubric rule 1");
}
