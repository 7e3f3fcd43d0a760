//! `judge.cascade` (SPEC §15) against two mock judge servers, one per stage:
//! the cheap judge grades every item, the big one only what `escalate`
//! selects (uncertain → escalated, certain → not; every fail; a panel that
//! disagrees); the record says which judge decided; summary.json gives the
//! escalation rate and each judge's calls and cost; `calibrate` measures the
//! cascade as a whole and each stage alone.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::common::{assert_user_error, check, json, project, record, stderr, stdout, trials};
use crate::judge::{Mock, block, completion, criteria_count, evalua_env, message, mock, verdict};

/// The cheap judge: can't tell criterion 1 when the answer says UNSURE,
/// fails it on BAD, passes the rest; on SPLIT, `cheap-b` fails criterion 1.
fn cheap() -> Mock {
    mock(|body| {
        let user = message(body, "user");
        let all: Vec<u32> = (1..=criteria_count(&user) as u32).collect();
        let answer = block(&user, "final_answer").unwrap_or_default();
        if answer.contains("SPLIT") && body["model"] == "cheap-b" {
            return completion(&verdict(&all[1..], &[1], &[]));
        }
        if answer.contains("UNSURE") {
            completion(&verdict(&all[1..], &[], &[1]))
        } else if answer.contains("BAD") {
            completion(&verdict(&all[1..], &[1], &[]))
        } else {
            completion(&verdict(&all, &[], &[]))
        }
    })
}

/// The big judge: fails criterion 1 when the answer says WRONG, passes the rest.
fn big() -> Mock {
    mock(|body| {
        let user = message(body, "user");
        let all: Vec<u32> = (1..=criteria_count(&user) as u32).collect();
        let answer = block(&user, "final_answer").unwrap_or_default();
        if answer.contains("WRONG") {
            completion(&verdict(&all[1..], &[1], &[]))
        } else {
            completion(&verdict(&all, &[], &[]))
        }
    })
}

fn model(url: &str, name: &str, input: f64, output: f64) -> String {
    format!(
        "judge.model {{ model = \"{name}\", base_url = \"{url}\", api_key_env = \"EVALUA_TEST_JUDGE_KEY\", max_retries = 0, \
         timeout_s = 10, prices = {{ input = {input}, output = {output} }} }}"
    )
}

/// A suite of four cases (answers GOOD, UNSURE WRONG, UNSURE, BAD) graded by one cascade.
fn suite(cheap: &str, big: &str, escalate: &str, first: &str) -> String {
    format!(
        r#"local evalua = require("evalua")
local judge = require("evalua.judge")
local C = {c}
local B = {b}
local CA = {ca}
local CB = {cb}
local suite = evalua.suite {{ name = "cascaded", trials = 1,
  agent = evalua.agent.scripted(function(task, env) return (task.input:match("ANSWER: (.*)$")) end) }}
local reply = judge.cascade {{ name = "reply", escalate = "{escalate}",
  first = {first},
  ["then"] = judge.rubric {{ "The reply states the refunded amount", "The reply is polite", name = "big", model = B }} }}
for _, a in ipairs {{ "GOOD", "UNSURE WRONG", "UNSURE", "BAD", "SPLIT" }} do
  suite:case {{ id = a:lower():gsub(" ", "_"), input = "Refund P-9930. ANSWER: " .. a, expect = {{ reply }} }}
end
return suite
"#,
        c = model(cheap, "cheap-1", 1.0, 2.0),
        b = model(big, "big-1", 10.0, 30.0),
        ca = model(cheap, "cheap-a", 1.0, 2.0),
        cb = model(cheap, "cheap-b", 1.0, 2.0),
    )
}

const ONE: &str =
    r#"judge.rubric { "The reply states the refunded amount", "The reply is polite", name = "cheap", model = C }"#;
const PANEL: &str = r#"judge.rubric { "The reply states the refunded amount", "The reply is polite", name = "cheap", panel = { CA, CB } }"#;

fn run(dir: &Path, args: &[&str]) -> Output {
    evalua_env(dir, args, &[("EVALUA_TEST_JUDGE_KEY", "sk-test")])
}

fn verdict_of(out: &Path, case: &str) -> Value {
    check(record(&trials(out), case, 1), "reply").clone()
}

#[test]
fn uncertain_items_are_escalated_and_certain_ones_are_not() {
    let (c, b) = (cheap(), big());
    let dir = project(&[("s.lua", &suite(&c.url, &b.url, "uncertain", ONE))]);
    let o = run(dir.path(), &["run", "s.lua", "--out", "out", "-q", "--no-cache"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}{}", stdout(&o), stderr(&o));
    let out = dir.path().join("out");
    // Certain: decided by the cheap judge alone.
    let good = verdict_of(&out, "good");
    assert_eq!(good["passed"], true, "{good}");
    assert_eq!(good["evidence"]["decided_by"], "first");
    assert_eq!(good["evidence"]["escalated"], false);
    let bad = verdict_of(&out, "bad");
    assert_eq!((bad["passed"].clone(), bad["evidence"]["decided_by"].clone()), (json!(false), json!("first")));
    // Uncertain: escalated, and the big judge decides either way.
    let wrong = verdict_of(&out, "unsure_wrong");
    assert_eq!(wrong["passed"], false, "{wrong}");
    assert_eq!(wrong["evidence"]["decided_by"], "then");
    assert!(wrong["evidence"]["escalated_because"].as_str().unwrap().starts_with("uncertain"), "{wrong}");
    assert_eq!(wrong["evidence"]["first"]["verdict"], "undeterminable", "the first judge's evidence is kept");
    let unsure = verdict_of(&out, "unsure");
    assert_eq!((unsure["passed"].clone(), unsure["evidence"]["decided_by"].clone()), (json!(true), json!("then")));
    // The big judge was asked exactly twice; the cheap one once per item.
    assert_eq!(b.count(), 2);
    assert_eq!(c.count(), 5);
    // summary.json: the escalation rate and each judge's calls and cost.
    let s = json(&out.join("summary.json"));
    let r = &s["judge_cascades"]["reply"];
    assert_eq!((r["items"].as_u64(), r["escalated"].as_u64()), (Some(5), Some(2)), "{r}");
    assert!((r["escalation_rate"].as_f64().unwrap() - 0.4).abs() < 1e-9);
    let first = &r["judges"][0];
    assert_eq!((first["stage"].as_str(), first["judge"].as_str()), (Some("first"), Some("openai:cheap-1")), "{r}");
    assert_eq!((first["items"].as_u64(), first["calls"].as_u64()), (Some(5), Some(5)));
    // 120 tokens in at $1/M and 30 out at $2/M per call: $0.00018; the big judge $0.0021 a call.
    assert!((first["cost_usd"].as_f64().unwrap() - 5.0 * 0.00018).abs() < 1e-9, "{r}");
    let then = &r["judges"][1];
    assert_eq!((then["stage"].as_str(), then["calls"].as_u64()), (Some("then"), Some(2)), "{r}");
    assert!((then["cost_usd"].as_f64().unwrap() - 2.0 * 0.0021).abs() < 1e-9, "{r}");
    assert!(stdout(&o).contains("judge cascades"), "{}", stdout(&o));
    assert!(stdout(&o).contains("reply  2 / 5  40.0%"), "{}", stdout(&o));
    // The manifest names both stages.
    let m = json(&out.join("manifest.json"));
    let j = &m["judges"][0];
    assert_eq!(j["type"], "cascade");
    assert_eq!(j["stages"]["escalate"], "uncertain");
    assert_eq!(j["stages"]["then"]["judge"], "openai:big-1");
    assert_eq!(j["criteria"], json!(["The reply states the refunded amount", "The reply is polite"]));
}

#[test]
fn always_on_fail_escalates_every_fail_and_disagree_a_split_panel() {
    let (c, b) = (cheap(), big());
    let dir = project(&[("s.lua", &suite(&c.url, &b.url, "always_on_fail", ONE))]);
    let o = run(dir.path(), &["run", "s.lua", "--out", "out", "-q", "--no-cache"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let out = dir.path().join("out");
    // The cheap judge's fail goes to the big judge, who passes it.
    let bad = verdict_of(&out, "bad");
    assert_eq!((bad["passed"].clone(), bad["evidence"]["decided_by"].clone()), (json!(true), json!("then")), "{bad}");
    // Uncertain is not a fail: a grader error of the first judge, not escalated.
    let unsure = verdict_of(&out, "unsure");
    assert_eq!(unsure["passed"], Value::Null);
    assert_eq!(unsure["evidence"]["decided_by"], "first");
    assert_eq!(b.count(), 1);

    let (c, b) = (cheap(), big());
    std::fs::write(dir.path().join("s.lua"), suite(&c.url, &b.url, "disagree", PANEL)).unwrap();
    let o = run(dir.path(), &["run", "s.lua", "--out", "out2", "-q", "--no-cache"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let out = dir.path().join("out2");
    let split = verdict_of(&out, "split");
    assert_eq!(split["evidence"]["decided_by"], "then", "{split}");
    assert!(split["evidence"]["escalated_because"].as_str().unwrap().contains("differ on criterion 1"), "{split}");
    assert_eq!(split["passed"], true);
    // A unanimous panel is not escalated, even when it fails the item.
    assert_eq!(verdict_of(&out, "good")["evidence"]["decided_by"], "first");
    assert_eq!(verdict_of(&out, "bad")["evidence"]["decided_by"], "first");
    // UNSURE: both cheap judges say undeterminable: unanimous, not escalated.
    assert_eq!(verdict_of(&out, "unsure")["evidence"]["decided_by"], "first");
    assert_eq!(b.count(), 1);
}

#[test]
fn a_cascade_that_cannot_work_is_a_user_error_with_its_line() {
    let dir = project(&[]);
    let write = |text: String| std::fs::write(dir.path().join("s.lua"), text).unwrap();
    let base = suite("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1", "uncertain", ONE);
    write(base.replace(r#"escalate = "uncertain""#, r#"escalate = "sometimes""#));
    assert_user_error(&run(dir.path(), &["check", "s.lua"]), "s.lua:9: judge.cascade: escalate");
    write(base.replace(r#""The reply is polite", name = "big""#, r#""The reply is kind", name = "big""#));
    assert_user_error(&run(dir.path(), &["check", "s.lua"]), "the same criteria");
    write(suite("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1", "disagree", ONE));
    assert_user_error(&run(dir.path(), &["check", "s.lua"]), "needs a panel");
    write(
        base.replace("first = judge.rubric", "first = judge.pairwise { b = \"x\", model = C }, unused = judge.rubric"),
    );
    assert_user_error(&run(dir.path(), &["check", "s.lua"]), "judge.cascade: unknown option 'unused'");
    write(
        base.replace("first = judge.rubric", "first = judge.pairwise { b = \"x\", model = C }, second = judge.rubric"),
    );
    assert_user_error(&run(dir.path(), &["check", "s.lua"]), "give the second judge once");
    write(base.replace("[\"then\"] =", "second ="));
    let o = run(dir.path(), &["check", "s.lua"]);
    assert_eq!(o.status.code(), Some(0), "second = ... is [\"then\"] = ...: {}", stderr(&o));
}

#[test]
fn calibrate_measures_the_cascade_as_a_whole_and_each_stage_alone() {
    let (c, b) = (cheap(), big());
    let labels: String = [("GOOD", true), ("UNSURE WRONG", false), ("UNSURE", true), ("BAD", false)]
        .iter()
        .map(|(a, h)| {
            json!({ "id": a, "input": "Refund P-9930.", "answer": a, "labels": { "The reply states the refunded amount": h } })
                .to_string()
                + "\n"
        })
        .collect();
    let dir = project(&[("s.lua", &suite(&c.url, &b.url, "uncertain", ONE)), ("labels.jsonl", &labels)]);
    let o = run(dir.path(), &["calibrate", "s.lua", "--labels", "labels.jsonl", "--no-cache"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    let blocks: Vec<&str> =
        out.split("\n").filter(|l| l.contains("judge openai:") || l.contains("judge cascade[")).collect();
    assert_eq!(blocks.len(), 3, "{out}");
    assert!(
        blocks[0].starts_with("cascade 'reply'  judge cascade[openai:cheap-1 then openai:big-1 on uncertain]"),
        "{out}"
    );
    assert!(blocks[1].contains("stage first of cascade 'reply': rubric 'cheap'"), "{out}");
    assert!(blocks[2].contains("stage then of cascade 'reply': rubric 'big'"), "{out}");
    assert!(out.contains("escalated (uncertain) 2 of 4 items (50.0%)"), "{out}");
    let kappas: Vec<&str> = out.lines().filter(|l| l.contains("Cohen's kappa")).collect();
    // The cascade: every item right. The cheap judge alone: two undeterminable, the other two right.
    // The big judge alone passes BAD: pp 2, ff 1, fp 1 → κ = (0.75 − 0.5) / 0.5 = 0.5.
    assert!(kappas[0].ends_with("1.000") && kappas[1].ends_with("1.000") && kappas[2].ends_with("0.500"), "{out}");
    assert!(out.contains("4 items, 4 labels: 2 compared, 2 undeterminable"), "{out}");
    let records = std::fs::read_dir(dir.path().join(".evalua/calibration")).unwrap().count();
    assert_eq!(records, 3, "one record for the cascade, one for each stage");
    // Calibrated: the run no longer warns about the cascade.
    let o = run(dir.path(), &["run", "s.lua", "--out", "out", "-q"]);
    assert!(!stderr(&o).contains("no calibration record"), "{}", stderr(&o));
}
