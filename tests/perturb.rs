//! Perturbations (SPEC §17, issue 38): declared in the suite and in a case,
//! and checked like cases: a bad one is one line naming its file:line, exit 2.

use crate::common::*;

/// A suite with two tools whose `evalua.suite {}` (line 3) holds `suite_keys`,
/// then `body` (from line 8).
fn suite(suite_keys: &str, body: &str) -> tempfile::TempDir {
    let src = r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite { name = "p", agent = evalua.agent.scripted(function() return "" end),
  sandbox = { db = "sqlite", schema = "schema.sql" }, {suite_keys} }
suite:tool { name = "lookup_order", effect = "read", run = function() return {} end }
suite:tool { name = "issue_refund", effect = "write", run = function() return {} end }
suite:case { id = "a", input = "hola", expect = {} }
{body}
return suite
"#
    .replace("{suite_keys}", suite_keys)
    .replace("{body}", body);
    project(&[("p.lua", &src), ("schema.sql", "CREATE TABLE t (x);\n"), ("other.sql", "INSERT INTO t VALUES (1);\n")])
}

#[test]
fn perturbations_of_the_suite_and_of_a_case_check_ok() {
    let dir = suite(
        r#"perturb = { no_lookup = { drop_tools = { "lookup_order" } },
    refund_429 = { faults = { issue_refund = { kind = "rate_limit", on_call = 1 } } } }"#,
        r#"suite:case { id = "b", input = "x", expect = {},
  perturb = { reworded = { input = "y", fixture = "other.sql", expect = { check.answer { contains = "y" } } },
              no_lookup = { drop_tools = { "issue_refund" } } } }"#,
    );
    let o = evalua(dir.path(), &["check", "p.lua"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_bad_perturbation_is_an_error_at_its_line() {
    let cases: [(&str, &str, &str); 6] = [
        (
            r#"perturb = { x = { drop_tool = { "lookup_order" } } }"#,
            "",
            "p.lua:3: evalua.suite.perturb.x: unknown key 'drop_tool'",
        ),
        (
            r#"perturb = { x = { drop_tools = { "lookup_ordr" } } }"#,
            "",
            "p.lua:3: perturbation 'x': 'drop_tools' names an unknown tool 'lookup_ordr' (did you mean 'lookup_order'?)",
        ),
        (
            r#"perturb = { x = { faults = { refund = { kind = "error", on_call = 1 } } } }"#,
            "",
            "p.lua:3: perturbation 'x': 'faults' names an unknown tool 'refund'",
        ),
        (r#"perturb = { x = 3 }"#, "", "p.lua:3: evalua.suite.perturb.x: a perturbation is a table"),
        (
            "",
            r#"suite:case { id = "b", input = "x", expect = {}, perturb = { y = { input = 3 } } }"#,
            "p.lua:8: suite:case 'b'.perturb.y: 'input' must be a string",
        ),
        (
            "",
            r#"suite:case { id = "b", input = "x", expect = {}, perturb = { y = { drop_tools = { "nope" } } } }"#,
            "p.lua:8: case 'b': perturbation 'y': 'drop_tools' names an unknown tool 'nope'",
        ),
    ];
    for (keys, body, needle) in cases {
        let dir = suite(keys, body);
        assert_user_error(&evalua(dir.path(), &["check", "p.lua"]), needle);
    }
}
