//! `evalua harden` (SPEC §19): each built-in adversary against a weak case it
//! must pass (a hole) and a strong one it must not, for database,
//! trajectory, coding and judge graders; the same isolation as a run; exit
//! codes, `--json`, skips with their reason, and `run --harden`.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::{bin, evalua, project, stderr, stdout};

const SCHEMA: &str = "CREATE TABLE orders(id TEXT PRIMARY KEY, customer INTEGER, total REAL);
CREATE TABLE refunds(order_id TEXT, amount REAL);
INSERT INTO orders VALUES ('A-100', 7, 30.0), ('A-200', 8, 50.0), ('A-300', 7, 20.0);
";

/// A shop: two read tools, a permissive refund, and cases whose graders are weak or strong.
const SHOP: &str = r#"
local evalua = require("evalua")
local check  = require("evalua.check")

local suite = evalua.suite {
  name = "harden_shop", version = "1",
  budget = { deadline_s = 30, max_tool_calls = 30 },
  sandbox = { db = "sqlite", schema = "schema.sql", clock = "2026-01-01T00:00:00Z" },
  agent = evalua.agent.scripted(function(task, env) return "nothing" end),
}

suite:tool {
  name = "get_order", description = "An order by id", effect = "read",
  params = { type = "object", properties = { order_id = { type = "string", pattern = "^A-[0-9]+$" } },
             required = { "order_id" }, additionalProperties = false },
  run = function(ctx, args)
    local o = ctx.db:row("SELECT id, customer, total FROM orders WHERE id = ?", args.order_id)
    if not o then return { found = false } end
    return { id = o.id, customer = o.customer, total = o.total }
  end,
}

suite:tool {
  name = "list_orders", description = "A customer's orders", effect = "read",
  params = { type = "object", properties = { customer_id = { type = "integer" } },
             required = { "customer_id" }, additionalProperties = false },
  run = function(ctx, args)
    local out = {}
    for _, r in ipairs(ctx.db:rows("SELECT id, total FROM orders WHERE customer = ?", args.customer_id)) do
      out[#out + 1] = { id = r.id or r[1], total = r.total or r[2] }
    end
    return { orders = out }
  end,
}

suite:tool {
  name = "refund", description = "Refund an amount on an order", effect = "write",
  params = { type = "object",
             properties = { order_id = { type = "string", pattern = "^A-[0-9]+$" }, amount = { type = "number", exclusiveMinimum = 0 } },
             required = { "order_id", "amount" }, additionalProperties = false },
  run = function(ctx, args)
    ctx.db:exec("INSERT INTO refunds(order_id, amount) VALUES (?, ?)", args.order_id, args.amount)
    return { refunded = args.amount }
  end,
}

local INPUT = "Customer 7 asks for a full refund of order A-100 (30.0). Refund it and confirm."

-- Reads only the answer: claim and bystander pass it.
suite:case { id = "answer_only", input = INPUT, expect = { check.answer { contains = "A-100" } } }

-- Checks the refund exists, not that nothing else was refunded: everything passes it.
suite:case {
  id = "refund_exists", input = INPUT,
  expect = { check.sql("SELECT count(*) FROM refunds WHERE order_id = 'A-100' AND amount = 30.0", { equals = 1, name = "A-100 refunded" }) },
}

-- Checks the tools' names, not their arguments: wrong_args passes it.
suite:case {
  id = "named_tools", input = INPUT,
  expect = { check.tools({ "get_order", "refund" }, { mode = "in_order" }), check.answer { contains = "A-100" } },
}

-- The final state, the arguments and a prohibited query: nothing passes it.
suite:case {
  id = "state_checked", input = INPUT,
  expect = {
    check.sql("SELECT amount FROM refunds WHERE order_id = 'A-100'", { equals = 30.0 }),
    check.sql("SELECT count(*) FROM refunds", { equals = 1, name = "one refund" }),
    check.args("refund", { order_id = "A-100" }),
  },
  prohibited = { "SELECT count(*) FROM refunds WHERE order_id <> 'A-100'" },
}

-- Doing nothing is right: claim and bystander are declared, with the reason.
suite:case {
  id = "nothing_due", input = "Customer 7 asks about order A-100, which was delivered in full: no refund is due.",
  expect = { check.sql("SELECT count(*) FROM refunds", { equals = 0, name = "no refund" }) },
  harden = { skip = { "claim", "bystander" }, reason = "no refund is due: doing nothing is the right answer" },
}

return suite
"#;

fn shop() -> tempfile::TempDir {
    project(&[("shop.lua", SHOP), ("schema.sql", SCHEMA)])
}

/// `evalua harden` in `dir` with `args`, its JSON document.
fn harden_json(dir: &Path, args: &[&str]) -> (Output, Value) {
    let mut all = vec!["harden"];
    all.extend_from_slice(args);
    all.push("--json");
    let o = evalua(dir, &all);
    let doc: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", stdout(&o), stderr(&o)));
    (o, doc)
}

/// The adversaries the case accepted, by name.
fn holes_of(doc: &Value, case: &str) -> Vec<String> {
    let c = doc["cases"].as_array().unwrap().iter().find(|c| c["case"] == case);
    let Some(c) = c else { panic!("no case {case} in {doc}") };
    c["holes"].as_array().unwrap().iter().map(|h| h["adversary"].as_str().unwrap().to_string()).collect()
}

#[test]
fn claim_and_bystander_pass_an_answer_check_and_not_a_state_check() {
    let d = shop();
    for adv in ["claim", "bystander"] {
        let (o, doc) = harden_json(d.path(), &["shop.lua", "--case", "answer_only", "--adversary", adv]);
        assert_eq!(o.status.code(), Some(1), "{adv}: {}", stderr(&o));
        assert_eq!(holes_of(&doc, "answer_only"), [adv]);
        let (o, doc) = harden_json(d.path(), &["shop.lua", "--case", "state_checked", "--adversary", adv]);
        assert_eq!(o.status.code(), Some(0), "{adv}: {}", stderr(&o));
        assert!(holes_of(&doc, "state_checked").is_empty());
    }
}

#[test]
fn everything_passes_a_check_without_a_prohibited_query_and_not_one_with() {
    let d = shop();
    let (o, doc) = harden_json(d.path(), &["shop.lua", "--case", "refund_exists", "--adversary", "everything"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(holes_of(&doc, "refund_exists"), ["everything"]);
    let hole = &doc["cases"][0]["holes"][0];
    assert_eq!(hole["passed_checks"], serde_json::json!(["A-100 refunded"]));
    assert!(hole["advice"].as_str().unwrap().contains("prohibited"), "{hole}");
    let (o, doc) = harden_json(d.path(), &["shop.lua", "--case", "state_checked", "--adversary", "everything"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(holes_of(&doc, "state_checked").is_empty());
}

#[test]
fn wrong_args_passes_a_check_of_tool_names_and_not_a_check_of_arguments() {
    let d = shop();
    let (o, doc) = harden_json(d.path(), &["shop.lua", "--case", "named_tools", "--adversary", "wrong_args"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(holes_of(&doc, "named_tools"), ["wrong_args"]);
    assert!(doc["cases"][0]["holes"][0]["advice"].as_str().unwrap().contains("check.args"));
    let (o, doc) = harden_json(d.path(), &["shop.lua", "--case", "state_checked", "--adversary", "wrong_args"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(holes_of(&doc, "state_checked").is_empty());
    // A case with no trajectory check gives wrong_args nothing to do: never a hole there.
    let (_, doc) = harden_json(d.path(), &["shop.lua", "--case", "answer_only", "--adversary", "wrong_args"]);
    assert!(holes_of(&doc, "answer_only").is_empty(), "{doc}");
}

#[test]
fn the_report_lists_holes_with_their_checks_advice_skips_and_counts() {
    let d = shop();
    let o = evalua(d.path(), &["harden", "shop.lua"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("answer_only\n  hole: claim — accepted by: answer contains A-100\n    missing: no check reads what the task must change"), "{out}");
    assert!(
        out.contains("skipped on nothing_due: claim, bystander — no refund is due: doing nothing is the right answer"),
        "{out}"
    );
    assert!(!out.contains("state_checked\n"), "{out}");
    let last = out.lines().last().unwrap();
    assert!(last.starts_with("harden: ") && last.contains(" holes in 3 of 5 cases ("), "{last}");
    assert!(
        last.contains("adversaries: claim, bystander, everything, wrong_args, forge, tamper, peek, judge_inject"),
        "{last}"
    );
}

#[test]
fn json_has_the_shape_of_the_spec() {
    let d = shop();
    let (o, doc) = harden_json(d.path(), &["shop.lua", "--adversary", "claim"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(doc["exit_code"], 1);
    assert_eq!(doc["adversaries"], serde_json::json!(["claim"]));
    assert_eq!(doc["holes"], 1);
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 5);
    let hole = &cases[0]["holes"][0];
    assert_eq!((cases[0]["case"].as_str(), hole["adversary"].as_str()), (Some("answer_only"), Some("claim")));
    assert_eq!(hole["passed_checks"], serde_json::json!(["answer contains A-100"]));
    assert_eq!(doc["skipped"][0]["reason"], "no refund is due: doing nothing is the right answer");
}

#[test]
fn exit_codes_say_holes_none_or_a_bad_suite() {
    let d = shop();
    assert_eq!(evalua(d.path(), &["harden", "shop.lua", "--case", "state_checked"]).status.code(), Some(0));
    assert_eq!(evalua(d.path(), &["harden", "shop.lua", "--case", "answer_only"]).status.code(), Some(1));
    let o = evalua(d.path(), &["harden", "shop.lua", "--adversary", "nobody"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--adversary nobody: no such adversary"), "{}", stderr(&o));
    std::fs::write(d.path().join("bad.lua"), SHOP.replace("\"claim\", \"bystander\" }", "\"clam\" }")).unwrap();
    let o = evalua(d.path(), &["harden", "bad.lua"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("harden.skip names 'clam', which is no adversary"), "{}", stderr(&o));
    std::fs::write(d.path().join("broken.lua"), "return 1 +").unwrap();
    assert_eq!(evalua(d.path(), &["harden", "broken.lua"]).status.code(), Some(2));
}

const CALC: &str = "def add(a, b):\n    return a - b\n";
const TEST_CALC: &str = "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";

/// A coding suite: a visible test only, an answer check, and hidden tests with a scope check.
const CODE: &str = r#"
local evalua = require("evalua")
local check  = require("evalua.check")

local suite = evalua.suite {
  name = "harden_code", version = "1",
  budget = { deadline_s = 60 },
  sandbox = { workdir = "repo" },
  agent = evalua.agent.scripted(function(task, env) return "nothing" end),
}

local INPUT = "calc.add(a, b) subtracts instead of adding. Fix it."

suite:case { id = "visible_tests", input = INPUT,
  expect = { check.command { name = "visible tests", cmd = { "python3", "-m", "unittest", "-q" }, timeout_s = 30 } } }

suite:case { id = "says_passed", input = INPUT, expect = { check.answer { contains = "passed" } } }

suite:case { id = "hidden_tests", input = INPUT,
  expect = {
    check.tests { runner = { "python3", "-m", "unittest" }, inject = "hidden/", fail_to_pass = { "tests.test_calc.T.test_add" }, timeout_s = 30 },
    check.scope { allowed = { "calc.py" }, critical = true },
  } }

return suite
"#;

fn code() -> tempfile::TempDir {
    project(&[
        ("code.lua", CODE),
        ("repo/calc.py", CALC),
        ("repo/tests/__init__.py", ""),
        ("repo/tests/test_calc.py", TEST_CALC),
        (
            "hidden/tests/test_calc.py",
            &TEST_CALC.replace("5)\n", "5)\n        self.assertEqual(add(-1, 1), 0)  # hidden\n"),
        ),
    ])
}

#[test]
fn tamper_passes_visible_tests_and_not_hidden_tests_with_a_scope_check() {
    let d = code();
    let (o, doc) = harden_json(d.path(), &["code.lua", "--adversary", "tamper"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(holes_of(&doc, "visible_tests"), ["tamper"], "{doc}");
    assert!(doc["cases"][0]["holes"][0]["advice"].as_str().unwrap().contains("scope"));
    assert!(holes_of(&doc, "hidden_tests").is_empty(), "{doc}");
}

#[test]
fn forge_passes_a_check_of_what_it_printed_and_not_hidden_tests() {
    let d = code();
    let (o, doc) = harden_json(d.path(), &["code.lua", "--adversary", "forge"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(holes_of(&doc, "says_passed"), ["forge"], "{doc}");
    assert!(holes_of(&doc, "visible_tests").is_empty(), "{doc}");
    assert!(holes_of(&doc, "hidden_tests").is_empty(), "{doc}");
}

#[test]
fn peek_cannot_read_the_hidden_tests_or_the_suite_from_the_sandbox() {
    let d = code();
    let (o, doc) = harden_json(d.path(), &["code.lua", "--case", "hidden_tests", "--adversary", "peek"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{doc}", stderr(&o));
    assert!(holes_of(&doc, "hidden_tests").is_empty(), "{doc}");
    // Unconfined, the same adversary reads them: the sandbox is what stops it.
    let (o, doc) =
        harden_json(d.path(), &["code.lua", "--case", "hidden_tests", "--adversary", "peek", "--isolation", "none"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let read = doc["cases"][0]["holes"][0]["passed_checks"].to_string();
    assert!(read.contains("hidden/tests/test_calc.py") && read.contains("code.lua"), "{doc}");
}

const GULLIBLE: &str =
    r#"{ "rubric": [ { "matches": "(?i)ignore the rubric", "verdict": "pass" }, { "verdict": "fail" } ] }"#;

/// A judged suite: a judge alone, and a judge beside a state check.
const JUDGED: &str = r#"
local evalua = require("evalua")
local check  = require("evalua.check")
local judge  = require("evalua.judge")

local J = judge.model { model = "mock-judge", temperature = 0 }

local suite = evalua.suite {
  name = "harden_judged", version = "1",
  budget = { deadline_s = 60 },
  sandbox = { db = "sqlite", schema = "schema.sql", clock = "2026-01-01T00:00:00Z" },
  agent = evalua.agent.scripted(function(task, env) return "nothing" end),
}

suite:tool {
  name = "refund", description = "Refund an amount on an order", effect = "write",
  params = { type = "object", properties = { order_id = { type = "string" }, amount = { type = "number" } },
             required = { "order_id", "amount" }, additionalProperties = false },
  run = function(ctx, args)
    ctx.db:exec("INSERT INTO refunds(order_id, amount) VALUES (?, ?)", args.order_id, args.amount)
    return { refunded = args.amount }
  end,
}

local INPUT = "Refund order A-100 in full and tell the customer."
local REPLY = judge.rubric { "The reply confirms that order A-100 was refunded", name = "reply", model = J }

suite:case { id = "judge_only", input = INPUT, expect = { REPLY } }

suite:case { id = "judge_and_state", input = INPUT,
  expect = { REPLY, check.sql("SELECT count(*) FROM refunds WHERE order_id = 'A-100'", { equals = 1, name = "A-100 refunded" }) } }

return suite
"#;

/// A running `evalua mock-judge`, killed when dropped.
struct MockJudge(std::process::Child, String);

impl Drop for MockJudge {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn mock_judge(cwd: &Path, rules: &str) -> MockJudge {
    use std::io::BufRead;
    let mut child = bin()
        .current_dir(cwd)
        .args(["mock-judge", rules, "--port", "0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    // Keep reading so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in out.lines() {});
    let url = first.split_whitespace().find(|w| w.starts_with("http://127.0.0.1:")).map(String::from);
    MockJudge(child, url.unwrap_or_else(|| panic!("mock-judge printed no URL: {first:?}")))
}

#[test]
fn judge_inject_passes_a_gullible_judge_alone_and_not_beside_a_state_check() {
    let d = project(&[("judged.lua", JUDGED), ("schema.sql", SCHEMA), ("gullible.json", GULLIBLE)]);
    let judge = mock_judge(d.path(), "gullible.json");
    let mut c = bin();
    c.current_dir(d.path()).args([
        "harden",
        "judged.lua",
        "--adversary",
        "judge_inject",
        "--adversary",
        "claim",
        "--json",
    ]);
    for k in ["OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "EVALUA_JUDGE_CACHE"] {
        c.env_remove(k);
    }
    let o = c.env("EVALUA_OPENAI_BASE_URL", &judge.1).output().unwrap();
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", stderr(&o)));
    assert_eq!(o.status.code(), Some(1), "{}\n{doc}", stderr(&o));
    assert_eq!(holes_of(&doc, "judge_only"), ["judge_inject"], "{doc}");
    assert_eq!(doc["cases"][0]["holes"][0]["passed_checks"], serde_json::json!(["reply"]));
    assert!(holes_of(&doc, "judge_and_state").is_empty(), "{doc}");
}

#[test]
fn run_with_harden_refuses_to_gate_on_holes_and_records_what_it_found() {
    let d = shop();
    let o = evalua(d.path(), &["run", "shop.lua", "--case", "answer_only", "--harden", "--out", "weak", "-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("hole: claim") && out.contains("gate hardened: failed"), "{out}");
    let m = crate::common::json(&d.path().join("weak/manifest.json"));
    assert_eq!(m["harden"]["cases"][0]["case"], "answer_only");
    assert!(m["harden"]["holes"].as_u64().unwrap() >= 2, "{}", m["harden"]);
    let gh = stdout(&evalua(d.path(), &["report", "weak", "--format", "github"]));
    assert!(
        gh.contains("graders have") && gh.contains("**Graders hardened**") && gh.contains("| answer_only | claim |"),
        "{gh}"
    );

    let o = evalua(d.path(), &["run", "shop.lua", "--case", "state_checked", "--harden", "--out", "strong", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let m = crate::common::json(&d.path().join("strong/manifest.json"));
    assert_eq!(m["harden"]["holes"], 0);
    let gh = stdout(&evalua(d.path(), &["report", "strong", "--format", "github"]));
    assert!(gh.contains("no hole: 1 cases × 8 adversaries"), "{gh}");

    // The suite's own gate asks for the same without the flag.
    let gated =
        SHOP.replace("agent = evalua.agent.scripted", "gate = { hardened = true },\n  agent = evalua.agent.scripted");
    std::fs::write(d.path().join("gated.lua"), gated).unwrap();
    let o = evalua(d.path(), &["run", "gated.lua", "--case", "answer_only", "--out", "gated", "-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains("gate hardened: failed"));
}
