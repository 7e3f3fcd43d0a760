//! `evalua synth` (SPEC §23): drafts from a mock model on 127.0.0.1, each
//! validated by replaying its reference path; the written module; pending
//! cases out of every figure and gate until `evalua review` approves them.
//! (tests/synth.rs is the helper writing synthetic run dirs.)

use std::path::Path;

use serde_json::{Value, json};

use crate::common::*;
use crate::models::{Mock, Reply, oa};

const SUITE: &str = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {
  name = "shop", version = "1", trials = 2,
  budget = { deadline_s = 30, max_tool_calls = 6 },
  sandbox = { db = "sqlite", schema = "schema.sql" },
  agent = evalua.agent.scripted("agent.lua"),
  gate = { ["pass^1"] = 1.0, critical_failures = 0 },
}
suite:tool {
  name = "refund", description = "Refund an order", effect = "write",
  params = { type = "object", properties = { order = { type = "string" } }, required = { "order" }, additionalProperties = false },
  run = function(ctx, args)
    if not ctx.db:row("SELECT id FROM orders WHERE id = ?", args.order) then error("no order " .. args.order) end
    ctx.db:exec("INSERT INTO refunds(order_id) VALUES (?)", args.order)
    return { refunded = args.order }
  end,
}
suite:case {
  id = "hand_written", input = "Refund order A-1",
  expect = { check.sql("SELECT count(*) FROM refunds WHERE order_id = 'A-1'", { equals = 1 }) },
}
suite:cases(require("drafts"))
return suite
"#;

const SCHEMA: &str = "CREATE TABLE orders(id TEXT PRIMARY KEY, status TEXT);\n\
CREATE TABLE refunds(order_id TEXT);\nINSERT INTO orders VALUES ('A-1', 'paid');\n";

/// Refunds the order the input names, except B-2 (so that case fails when it counts).
const AGENT: &str = r#"return function(task, env)
  local o = task.input:match("[A-Z]%-%d+")
  if o ~= "B-2" then env.call("refund", { order = o }) end
  return "done"
end"#;

fn draft(id: &str, input: &str, order: &str, calls: &[&str], extra: Value) -> Value {
    let calls: Vec<Value> = calls.iter().map(|o| json!({ "name": "refund", "arguments": { "order": o } })).collect();
    let mut d = json!({
        "id": id, "family": "happy", "input": input,
        "fixture_sql": format!("INSERT INTO orders VALUES ('{order}', 'paid');"),
        "expect_sql": [{ "query": format!("SELECT count(*) FROM refunds WHERE order_id = '{order}'"), "equals": 1 }],
        "prohibited": [format!("SELECT count(*) FROM refunds WHERE order_id <> '{order}'")],
        "reference_calls": calls, "rationale": "a refund of one order",
    });
    for (k, v) in extra.as_object().unwrap() {
        d[k] = v.clone();
    }
    d
}

/// One draft of every fate.
fn drafts() -> Value {
    json!({ "cases": [
        draft("refund_b2", "Refund order B-2", "B-2", &["B-2"], json!({})),
        draft("refund_f6", "Refund order F-6", "F-6", &["F-6"], json!({ "family": "wrong_permissions" })),
        // Its reference refunds another order: its own check fails.
        draft("wrong_reference", "Refund order C-3", "C-3", &["A-1"], json!({ "prohibited": [] })),
        // Its reference also refunds A-1: a prohibited state.
        draft("reaches_prohibited", "Refund order D-4", "D-4", &["D-4", "A-1"], json!({})),
        // The input of refund_b2 again, spaced and cased otherwise.
        draft("same_input", "refund  ORDER b-2", "G-7", &["G-7"], json!({})),
        // A tool the suite does not have.
        draft("unknown_tool", "Refund order E-5", "E-5", &[], json!({ "reference_calls": [{ "name": "teleport", "arguments": {} }] })),
        // Rows for a table the schema does not have.
        draft("bad_rows", "Refund order H-8", "H-8", &["H-8"], json!({ "fixture_sql": "INSERT INTO nowhere VALUES (1);" })),
    ] })
}

fn project() -> tempfile::TempDir {
    crate::common::project(&[
        ("suite.lua", SUITE),
        ("schema.sql", SCHEMA),
        ("agent.lua", AGENT),
        ("drafts.lua", "return {}\n"),
        ("requirements.md", "# Refunds\nA paid order may be refunded once, by its id.\n"),
    ])
}

fn synth(dir: &Path, mock: &Mock, extra: &[&str]) -> std::process::Output {
    let mut args =
        vec!["synth", "suite.lua", "--from", "requirements.md", "--into", "drafts.lua", "--model", "drafter"];
    args.extend_from_slice(extra);
    bin().current_dir(dir).env("EVALUA_OPENAI_BASE_URL", mock.openai_url()).args(&args).output().unwrap()
}

fn fates(doc: &Value) -> Vec<(String, String)> {
    doc["drafts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["id"].as_str().unwrap().into(), d["fate"].as_str().unwrap().into()))
        .collect()
}

#[test]
fn drafts_are_validated_written_pending_and_counted_only_once_approved() {
    let p = project();
    let dir = p.path();
    let mock = Mock::start(vec![oa(Some(&drafts().to_string()), &[], 100, 200)]);
    let out = synth(dir, &mock, &["--json", "--n", "7", "--families", "happy,wrong_permissions"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let want = [
        ("refund_b2", "valid"),
        ("refund_f6", "valid"),
        ("wrong_reference", "invalid"),
        ("reaches_prohibited", "invalid"),
        ("same_input", "duplicate"),
        ("unknown_tool", "invalid"),
        ("bad_rows", "invalid"),
    ];
    let want: Vec<(String, String)> = want.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    assert_eq!(fates(&doc), want, "{doc:#}");
    let reason = |id: &str| {
        doc["drafts"].as_array().unwrap().iter().find(|d| d["id"] == id).unwrap()["reason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(reason("wrong_reference").contains("fails its own check"), "{}", reason("wrong_reference"));
    assert!(reason("reaches_prohibited").contains("prohibited state"), "{}", reason("reaches_prohibited"));
    assert!(reason("same_input").contains("refund_b2"), "{}", reason("same_input"));
    assert!(
        reason("unknown_tool").contains("does not load") && reason("unknown_tool").contains("teleport"),
        "{}",
        reason("unknown_tool")
    );
    assert!(
        reason("bad_rows").contains("fixture_sql does not apply") && reason("bad_rows").contains("nowhere"),
        "{}",
        reason("bad_rows")
    );

    // The request: structured output, the requirements, the tools and the schema.
    let body = &mock.seen()[0].body;
    assert_eq!(body["response_format"]["json_schema"]["name"], "synthetic_cases");
    let sent = body["messages"].to_string();
    for needle in
        ["A paid order may be refunded once", "refund (effect: write)", "CREATE TABLE refunds", "wrong_permissions"]
    {
        assert!(sent.contains(needle), "{needle} not in {sent}");
    }

    // The module: the valid drafts, pending, with their source and reference.
    let text = std::fs::read_to_string(dir.join("drafts.lua")).unwrap();
    assert!(text.contains("refund_b2") && text.contains("refund_f6") && !text.contains("wrong_reference"), "{text}");
    assert!(
        text.contains("status = \"pending\"")
            && text.contains("kind = \"synthetic\"")
            && text.contains("model = \"drafter\""),
        "{text}"
    );
    let sha = doc["prompt_sha256"].as_str().unwrap();
    assert!(text.contains(sha) && dir.join(format!("drafts.synth/prompts/{sha}.md")).is_file(), "{text}");
    assert!(dir.join("drafts.synth/fixtures/refund_b2.sql").is_file());
    let check = evalua(dir, &["check", "suite.lua"]);
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    assert!(stdout(&check).contains("3 cases"), "{}", stdout(&check));

    // Pending: played, reported apart, in no figure or gate (B-2 fails, and the gate still holds).
    let run = evalua(dir, &["run", "suite.lua", "--out", "run1"]);
    assert_eq!(run.status.code(), Some(0), "{}{}", stdout(&run), stderr(&run));
    assert!(
        stdout(&run).contains("pending review (not counted): 2 synthetic case(s), 4 trial(s), 2 accepted"),
        "{}",
        stdout(&run)
    );
    let s = json(&dir.join("run1/summary.json"));
    assert_eq!((s["figures"]["cases"].clone(), s["figures"]["trials"].clone()), (json!(1), json!(2)), "{s:#}");
    assert_eq!(s["pending_review"]["cases"], 2);
    assert_eq!(s["pending_review"]["trials"], 4);
    assert_eq!(trials(&dir.join("run1")).len(), 6);

    // Reviews: in the label store with the reviewer, and in the module.
    let ok = evalua(
        dir,
        &["review", "suite.lua", "refund_b2", "--approve", "--reviewer", "ana", "--note", "checked the refund"],
    );
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    let no = evalua(dir, &["review", "suite.lua", "refund_f6", "--reject", "--reviewer", "bo"]);
    assert_eq!(no.status.code(), Some(0), "{}", stderr(&no));
    let text = std::fs::read_to_string(dir.join("drafts.lua")).unwrap();
    assert!(text.contains("status = \"approved\"") && text.contains("reviewer = \"ana\""), "{text}");
    assert!(text.contains("status = \"rejected\"") && text.contains("reviewer = \"bo\""), "{text}");
    let store = std::fs::read_to_string(dir.join("labels/shop.jsonl")).unwrap();
    let labels: Vec<Value> = store.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(labels.len(), 2, "{store}");
    assert_eq!(
        (labels[0]["item"].as_str(), labels[0]["annotator"].as_str(), labels[0]["verdict"].as_str()),
        (Some("synthetic:shop/refund_b2"), Some("ana"), Some("pass"))
    );
    assert_eq!((labels[1]["annotator"].as_str(), labels[1]["verdict"].as_str()), (Some("bo"), Some("fail")));

    // Approved counts (B-2 fails: the gate now fails); rejected is skipped.
    let run = evalua(dir, &["run", "suite.lua", "--out", "run2"]);
    assert_eq!(run.status.code(), Some(1), "{}{}", stdout(&run), stderr(&run));
    let s = json(&dir.join("run2/summary.json"));
    assert_eq!((s["figures"]["cases"].clone(), s["figures"]["trials"].clone()), (json!(2), json!(4)), "{s:#}");
    assert!(s.get("pending_review").is_none(), "{s:#}");
    let m = json(&dir.join("run2/manifest.json"));
    let ids: Vec<&str> = m["cases"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["hand_written", "refund_b2"]);
}

#[test]
fn a_later_synth_keeps_the_cases_and_reviews_and_finds_their_duplicates() {
    let p = project();
    let dir = p.path();
    let first = json!({ "cases": [draft("refund_b2", "Refund order B-2", "B-2", &["B-2"], json!({}))] });
    let mock = Mock::start(vec![oa(Some(&first.to_string()), &[], 1, 1)]);
    assert_eq!(synth(dir, &mock, &[]).status.code(), Some(0));
    assert_eq!(
        evalua(dir, &["review", "suite.lua", "refund_b2", "--approve", "--reviewer", "ana"]).status.code(),
        Some(0)
    );
    // The same id and state again (a duplicate), and a new case under a taken id (renamed).
    let second = json!({ "cases": [
        draft("refund_b2", "Please refund B-2 now", "B-2", &["B-2"], json!({})),
        draft("refund_b2", "Refund order K-9", "K-9", &["K-9"], json!({})),
    ] });
    let mock = Mock::start(vec![oa(Some(&second.to_string()), &[], 1, 1)]);
    let out = synth(dir, &mock, &["--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let got = fates(&doc);
    assert_eq!(got[0].1, "duplicate", "{doc:#}");
    assert_eq!((got[1].0.as_str(), got[1].1.as_str()), ("refund_b2_3", "valid"), "{doc:#}");
    let text = std::fs::read_to_string(dir.join("drafts.lua")).unwrap();
    assert!(text.contains("reviewer = \"ana\"") && text.contains("refund_b2_3"), "{text}");
}

#[test]
fn model_output_that_is_not_drafts_is_a_clear_error_and_nothing_is_written() {
    for (answer, needle) in [("this is not JSON at all", "not JSON"), (r#"{"drafts": []}"#, "not {\"cases\"")] {
        let p = project();
        let dir = p.path();
        let mock = Mock::start(vec![oa(Some(answer), &[], 1, 1)]);
        let out = synth(dir, &mock, &[]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err}");
        assert_eq!(std::fs::read_to_string(dir.join("drafts.lua")).unwrap(), "return {}\n");
        assert!(!dir.join("drafts.synth").exists());
    }
    // A reply that is not a chat completion at all.
    let p = project();
    let mock = Mock::start(vec![Reply::Raw("[]".into())]);
    let out = synth(p.path(), &mock, &[]);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(p.path().join("drafts.lua")).unwrap(), "return {}\n");
}

/// The guide's walk ("No traces yet: drafting cases"), offline: `evalua
/// mock-judge` answers the drafting request from the shipped rules file.
#[test]
fn the_guides_walk_drafts_offline_with_mock_judge() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("evalua.toml"), "").unwrap();
    for f in [
        "suites/refunds_drafted.lua",
        "suites/shared/refunds_shop.lua",
        "suites/fixtures/shop.sql",
        "suites/fixtures/pedido_9930.sql",
        "suites/fixtures/pedido_7710.sql",
        "suites/fixtures/pedido_4410.sql",
        "suites/agents/refund_bot.lua",
        "suites/synthetic/refunds.lua",
        "suites/requirements/refunds.md",
        "suites/judges/refunds_drafts.rules.json",
        "graders/policy.lua",
    ] {
        std::fs::create_dir_all(dir.join(f).parent().unwrap()).unwrap();
        std::fs::copy(repo().join(f), dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    let judge = crate::first_hour::mock_judge(dir, "suites/judges/refunds_drafts.rules.json");
    let out = bin()
        .current_dir(dir)
        .env("EVALUA_OPENAI_BASE_URL", &judge.url)
        .args(["synth", "suites/refunds_drafted.lua", "--from", "suites/requirements/refunds.md"])
        .args(["--into", "suites/synthetic/refunds.lua", "--model", "mock", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let want = [
        ("reembolso_parcial_8101", "valid"),
        ("identidad_incorrecta_8202", "valid"),
        ("sin_verificar_8303", "invalid"),
        ("parcial_repetido", "duplicate"),
    ];
    let want: Vec<(String, String)> = want.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    assert_eq!(fates(&doc), want, "{doc:#}");
    let why = doc["drafts"][2]["reason"].as_str().unwrap();
    assert!(why.contains("call 2 (issue_refund) denied"), "{why}");
    let run = evalua(dir, &["run", "suites/refunds_drafted.lua", "--out", "runs/one", "-q"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert_eq!(json(&dir.join("runs/one/summary.json"))["pending_review"]["cases"], 2);
    let ok = evalua(
        dir,
        &["review", "suites/refunds_drafted.lua", "reembolso_parcial_8101", "--approve", "--reviewer", "ana"],
    );
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert!(std::fs::read_to_string(dir.join("suites/labels/refunds_drafted.jsonl")).unwrap().contains("\"ana\""));
}

/// `evalua view --review synthetic`: the pending drafted cases of the served
/// runs, and a decision posted from the page recorded as `evalua review` does.
#[test]
fn the_viewers_queue_records_a_review_with_its_reviewer() {
    use crate::view::Viewer;
    let p = project();
    let dir = p.path();
    let mock = Mock::start(vec![oa(Some(&drafts().to_string()), &[], 1, 1)]);
    assert_eq!(synth(dir, &mock, &[]).status.code(), Some(0));
    let run = evalua(dir, &["run", "suite.lua", "--out", "runs/one", "-q"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let v = Viewer::start_with(dir, &["runs"], &["--review", "synthetic", "--annotator", "cy"]);
    let q = v.json("/api/synthetic");
    let cases: Vec<&str> = q["queue"].as_array().unwrap().iter().map(|c| c["case"].as_str().unwrap()).collect();
    assert_eq!(cases, ["refund_b2", "refund_f6"], "{q:#}");
    assert_eq!(q["queue"][0]["trials"], 2);
    assert_eq!(q["queue"][0]["draft"]["input"], "Refund order B-2");
    let (status, page) = v.get("/synthetic");
    assert_eq!(status, 200);
    let at = page.find("\"token\":\"").expect("the page carries a token") + 9;
    let token = page[at..at + 32].to_string();
    let suite = q["queue"][0]["suite"].as_str().unwrap().to_string();
    let post = |headers: &[(&str, &str)], body: Value| {
        let mut req = v.agent.post(format!("{}/api/synthetic", v.base));
        for (k, val) in headers {
            req = req.header(*k, *val);
        }
        let mut r = req.send(body.to_string()).unwrap();
        let status = r.status().as_u16();
        (status, serde_json::from_str::<Value>(&r.body_mut().read_to_string().unwrap()).unwrap())
    };
    let body = json!({ "suite": suite, "case": "refund_b2", "decision": "approve", "note": "right amount" });
    let (status, _) = post(&[("Content-Type", "application/json")], body.clone());
    assert_eq!(status, 403, "a write without the session's token is refused");
    let (status, r) = post(&[("Content-Type", "application/json"), ("X-Evalua-Token", &token)], body);
    assert_eq!(status, 200, "{r}");
    assert_eq!((r["status"].as_str(), r["reviewer"].as_str()), (Some("approved"), Some("cy")));
    let left = v.json("/api/synthetic");
    assert_eq!(left["queue"].as_array().unwrap().len(), 1, "{left:#}");
    let text = std::fs::read_to_string(dir.join("drafts.lua")).unwrap();
    assert!(text.contains("reviewer = \"cy\"") && text.contains("note = \"right amount\""), "{text}");
    let store = std::fs::read_to_string(dir.join("labels/shop.jsonl")).unwrap();
    assert!(store.contains("\"annotator\":\"cy\"") && store.contains("synthetic:shop/refund_b2"), "{store}");
}

/// An adaptive run (SPEC §20): a pending case plays its `min` trials only and
/// weighs nothing in the sequence that decides the gate (its agent always
/// fails it; counted, it would hold the figure at 0.5 and the gate undecided).
#[test]
fn a_pending_case_decides_no_adaptive_gate() {
    let p = project();
    let dir = p.path();
    let suite = SUITE
        .replace("trials = 2,", "trials = { min = 2, max = 20 },")
        .replace(r#"gate = { ["pass^1"] = 1.0, critical_failures = 0 },"#, r#"gate = { ["pass^1"] = 0.5 },"#);
    assert_ne!(suite, SUITE);
    std::fs::write(dir.join("suite.lua"), suite).unwrap();
    let one = json!({ "cases": [draft("refund_b2", "Refund order B-2", "B-2", &["B-2"], json!({}))] });
    let mock = Mock::start(vec![oa(Some(&one.to_string()), &[], 1, 1)]);
    assert_eq!(synth(dir, &mock, &[]).status.code(), Some(0));
    let run = evalua(dir, &["run", "suite.lua", "--out", "run", "-q"]);
    assert_eq!(run.status.code(), Some(0), "{}{}", stdout(&run), stderr(&run));
    let s = json(&dir.join("run/summary.json"));
    assert_eq!(s["adaptive"]["gates"][0]["verdict"], "pass", "{:#}", s["adaptive"]);
    assert_eq!(s["pending_review"]["by_case"][0]["trials"], 2, "{:#}", s["pending_review"]);
}
