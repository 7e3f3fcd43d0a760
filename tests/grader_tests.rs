//! `evalua test` (SPEC §10): graders run on their must-pass / must-fail
//! examples. The project's own grader tests (graders/, and the stdlib's
//! checks in stdlib/tests/) run here, so `cargo test` covers them.

use crate::common::*;

#[test]
fn the_projects_grader_tests_pass() {
    let o = evalua(&repo(), &["test", "graders", "stdlib/tests"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("running 21 examples from graders/policy_test.lua"), "{out}");
    assert!(out.contains("from stdlib/tests/check_test.lua"), "{out}");
    assert!(out.contains("test writes need verify_identity :: refund alone ... ok"), "{out}");
    assert!(out.contains("test result: ok."), "{out}");
    assert!(!out.contains("FAILED"), "{out}");
    // `evalua test` alone runs graders/.
    let o = evalua(&repo(), &["test"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("21 passed; 0 failed; 1 file"), "{}", stdout(&o));
}

const GRADER: &str = r#"
local g = {}
-- A buggy grader: it means "no refund above 100" but reads the wrong field.
g.small_refunds = {
  name = "small refunds",
  run = function(t)
    for _, c in ipairs(t.calls) do
      if c.name == "refund" and (c.args.amount or 0) > 10000 then return false, "refund of " .. c.args.amount end
    end
    return true, "ok"
  end,
}
return g
"#;

const TESTS: &str = r#"
local g = require("graders.mine")
return evalua.grader_tests(g.small_refunds, {
  { name = "a big refund", expect = "fail", calls = { { name = "refund", args = { amount_cents = 50000 } } } },
  { name = "a small refund", expect = "pass", calls = { { name = "refund", args = { amount_cents = 500 } } } },
})
"#;

#[test]
fn a_wrong_verdict_fails_with_what_the_grader_said() {
    let dir = project(&[("graders/mine.lua", GRADER), ("graders/mine_test.lua", TESTS)]);
    let o = evalua(dir.path(), &["test"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(out.contains("test small refunds :: a big refund ... FAILED"), "{out}");
    assert!(out.contains("test small refunds :: a small refund ... ok"), "{out}");
    assert!(out.contains("---- small refunds :: a big refund (graders/mine_test.lua:4) ----"), "{out}");
    assert!(out.contains("expected fail, got pass"), "{out}");
    assert!(out.contains("test result: FAILED. 1 passed; 1 failed"), "{out}");

    // Fixed: the grader reads the field the tools send.
    std::fs::write(dir.path().join("graders/mine.lua"), GRADER.replace("c.args.amount", "c.args.amount_cents"))
        .unwrap();
    let o = evalua(dir.path(), &["test", "graders/mine_test.lua"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn examples_build_databases_work_dirs_and_messages() {
    let tests = r#"
local check = require("evalua.check")
return {
  evalua.grader_tests(check.no_writes(), {
    { name = "a row written", expect = "fail", db = { schema = "schema.sql", fixture = "rows.sql", sql = "INSERT INTO t VALUES (3)" } },
    { name = "untouched", expect = "pass", db = { schema = "schema.sql", fixture = "rows.sql" } },
  }),
  evalua.grader_tests(function(t)
    return t.messages[2].content == "ok?" and t.case.id == "custom" and t.usage.tool_calls == 0 and #t.diff.files == 1,
      { messages = #t.messages, diff = t.diff.files }
  end, {
    { name = "everything", expect = "pass", case = { id = "custom" },
      messages = { { role = "user", content = "hi" }, { role = "agent", content = "ok?" } },
      workdir = "tree", files = { ["a.txt"] = false } },
  }),
  evalua.grader_tests(function(t) return evalua.SKIP end, { { name = "not applicable", expect = "skip" } }),
  evalua.grader_tests(function(t) error("boom") end, { { name = "raises", expect = "error" } }),
}
"#;
    let dir = project(&[
        ("checks/db_test.lua", tests),
        ("checks/schema.sql", "CREATE TABLE t (n INTEGER);\n"),
        ("checks/rows.sql", "INSERT INTO t VALUES (1), (2);\n"),
        ("checks/tree/a.txt", "a\n"),
        ("checks/tree/b.txt", "b\n"),
    ]);
    let o = evalua(dir.path(), &["test", "checks"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("5 passed; 0 failed"), "{}", stdout(&o));
}

#[test]
fn malformed_test_files_are_exit_2_with_file_and_line() {
    let cases: &[(&str, &str)] = &[
        (
            "return evalua.grader_tests(function() return true end, {\n  { name = 'x', expect = 'maybe' },\n})\n",
            "graders/bad_test.lua:1: evalua.grader_tests: example 1 ('x'): 'expect' must be",
        ),
        (
            "local x = 1\nreturn evalua.grader_tests(function() return true end, {\n  { name = 'x', expect = 'pass', colls = {} },\n})\n",
            "graders/bad_test.lua:2: evalua.grader_tests: example 1 ('x'): unknown key 'colls'",
        ),
        (
            "return evalua.grader_tests(function() return true end, {\n  { name = 'x', expect = 'pass', db = { sql = 'INSERT INTO nope VALUES (1)' } },\n})\n",
            "graders/bad_test.lua:2: example 'x': db.sql: no such table: nope",
        ),
        (
            "return evalua.grader_tests(function() return true end, {\n  { name = 'x', expect = 'pass', db = { schema = 'missing.sql' } },\n})\n",
            "db.schema: file not found",
        ),
        (
            "return evalua.grader_tests(function() return true end, {\n  { name = 'x', expect = 'pass' \n})\n",
            "graders/bad_test.lua:3:",
        ),
        ("return 42\n", "graders/bad_test.lua: a test file must return evalua.grader_tests"),
        ("return evalua.grader_tests('nope', { { name = 'x', expect = 'pass' } })\n", "the first argument is a check"),
    ];
    for (text, needle) in cases {
        let dir = project(&[("graders/bad_test.lua", text)]);
        let o = evalua(dir.path(), &["test"]);
        assert_user_error(&o, needle);
    }
    let dir = project(&[("graders/policy.lua", "return {}")]);
    assert_user_error(&evalua(dir.path(), &["test"]), "graders: no *_test.lua file there");
    assert_user_error(&evalua(dir.path(), &["test", "nowhere"]), "nowhere: no such file or folder");
}
