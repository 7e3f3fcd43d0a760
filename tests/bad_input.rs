//! A wrong suite, flag or input file: one line naming file:line, exit 2, no panic.

use crate::common::*;

const HEADER: &str = r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite { name = "bad", agent = evalua.agent.scripted(function() return "" end),
  sandbox = { db = "sqlite", schema = "schema.sql" } }
"#;

fn suite_with(body: &str) -> tempfile::TempDir {
    let src = format!("{HEADER}{body}\nreturn suite\n");
    project(&[("bad.lua", &src), ("schema.sql", "CREATE TABLE t (x);\n"), ("ok.sql", "INSERT INTO t VALUES (1);\n")])
}

fn check_and_run(dir: &tempfile::TempDir, needle: &str) {
    assert_user_error(&evalua(dir.path(), &["check", "bad.lua"]), needle);
    assert_user_error(&run_suite(dir.path(), "bad.lua", &[]), needle);
    assert!(!dir.path().join("out").exists(), "no run dir for a suite that does not load");
}

#[test]
fn lua_syntax_error_names_file_and_line() {
    let dir = suite_with("suite:case { id = 'a', input = 'x' \nlocal = 3");
    check_and_run(&dir, "bad.lua:6:");
}

#[test]
fn missing_fixture() {
    let dir = suite_with("suite:case { id = 'a', input = 'x', fixture = 'nope.sql' }");
    check_and_run(&dir, "bad.lua:5: suite:case 'a': fixture not found");
}

#[test]
fn fixture_with_bad_sql_names_its_line() {
    let dir = suite_with("suite:case { id = 'a', input = 'x', fixture = 'broken.sql' }");
    std::fs::write(dir.path().join("broken.sql"), "INSERT INTO t VALUES (1);\n\nINSRT INTO t VALUES (2);\n").unwrap();
    check_and_run(&dir, "broken.sql:3:");
}

#[test]
fn duplicate_case_ids() {
    let dir = suite_with("suite:case { id = 'a', input = 'x' }\nsuite:case { id = 'a', input = 'y' }");
    check_and_run(&dir, "bad.lua:6: suite:case: duplicate case id 'a'");
}

#[test]
fn tool_params_that_are_not_a_json_schema() {
    let dir = suite_with("suite:tool { name = 't', params = { type = 'objekt' }, run = function() end }");
    check_and_run(&dir, "bad.lua:5: suite:tool 't': 'params' is not a valid JSON schema");
}

#[test]
fn unknown_check_option() {
    let dir = suite_with("suite:case { id = 'a', input = 'x', expect = { check.sql('SELECT 1', { equal = 1 }) } }");
    check_and_run(&dir, "bad.lua:5: check.sql: unknown key 'equal'");
}

#[test]
fn unknown_key_in_a_case() {
    let dir = suite_with("suite:case { id = 'a', input = 'x', expcet = {} }");
    check_and_run(&dir, "bad.lua:5: suite:case: unknown key 'expcet'");
}

#[test]
fn unknown_gate_is_an_error_not_ignored() {
    let dir = project(&[(
        "bad.lua",
        "local evalua = require('evalua')\nlocal s = evalua.suite { name = 'g', gate = { ['pass^3'] = 0.8, acepted = 0.5 } }\nreturn s\n",
    )]);
    check_and_run(&dir, "bad.lua:2: evalua.suite.gate: unknown gate 'acepted'");
}

#[test]
fn os_execute_at_load_time_is_refused() {
    let dir = suite_with("os.execute('touch pwned')");
    check_and_run(&dir, "bad.lua:5:");
    assert!(!dir.path().join("pwned").exists());
}

#[test]
fn endless_loop_at_load_time_is_stopped() {
    let dir = suite_with("while true do end");
    check_and_run(&dir, "instruction limit");
}

#[test]
fn suite_that_does_not_return_a_suite() {
    let dir = project(&[("bad.lua", "local evalua = require('evalua')\nlocal s = evalua.suite { name = 'g' }\n")]);
    check_and_run(&dir, "must end with `return suite`");
}

#[test]
fn missing_module_in_require() {
    let dir = suite_with("local g = require('graders.nope')");
    check_and_run(&dir, "bad.lua:5: module 'graders.nope' not found");
}

#[test]
fn missing_suite_file_and_bad_flags() {
    let dir = project(&[]);
    assert_user_error(&evalua(dir.path(), &["run", "nope.lua"]), "nope.lua: no such suite file");
    let o = evalua(dir.path(), &["run", "nope.lua", "--trials", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let o = evalua(dir.path(), &["run", "nope.lua", "--split", "test"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn no_case_matches_the_filters() {
    let dir = suite_with("suite:case { id = 'a', input = 'x' }");
    assert_user_error(&run_suite(dir.path(), "bad.lua", &["--case", "zzz*"]), "no case matches");
}

#[test]
fn run_dir_that_is_not_empty_is_refused() {
    let dir = suite_with("suite:case { id = 'a', input = 'x' }");
    std::fs::create_dir_all(dir.path().join("out")).unwrap();
    std::fs::write(dir.path().join("out/keep.txt"), "precious").unwrap();
    assert_user_error(&run_suite(dir.path(), "bad.lua", &[]), "not empty");
    assert_eq!(std::fs::read_to_string(dir.path().join("out/keep.txt")).unwrap(), "precious");
}
