//! Human labels (SPEC §15): the label store read back as untrusted input,
//! `evalua labels agree` against hand-computed κ and α (and an undefined κ),
//! `labels split` (deterministic, stratified, not silently replaced),
//! `labels export`, and `calibrate --labels STORE` (majority decides, ties
//! and `unsure` left out and counted, the held-out part kept apart and its
//! use counted in the ledger), against the mock judge of tests/judge.rs.

use serde_json::{Value, json};

use crate::common::{assert_user_error, close, evalua, project, stderr, stdout};
use crate::judge::{judge_server, run, suite};

/// One line of a store.
pub fn line(item: &str, who: &str, criterion: Option<&str>, verdict: &str, answer: &str) -> String {
    json!({
        "item": item, "annotator": who, "criterion": criterion, "verdict": verdict, "tags": [], "note": "",
        "data": { "input": "Refund order P-9930 and tell the customer.", "answer": answer, "calls": [], "messages": [], "outbox": [] },
        "run": "r1", "trace_id": null, "at": "2026-12-01T10:00:00Z",
    })
    .to_string()
}

const A: &str = "The message states the refunded amount";
const B: &str = "The message is polite";

/// ana and bo on criterion A over 10 items: 4 both pass, 1 ana pass / bo fail,
/// 2 ana fail / bo pass, 3 both fail. On B both pass items 0–4. cy says
/// unsure on item 0 of A. bo's first verdict on item 0 is superseded.
fn agreement_store() -> String {
    let a = [(true, true), (true, true), (true, true), (true, true), (true, false)]
        .into_iter()
        .chain([(false, true); 2])
        .chain([(false, false); 3]);
    let v = |p: bool| if p { "pass" } else { "fail" };
    let mut lines = vec![line("i0", "bo", Some(A), "fail", "x")];
    for (i, (x, y)) in a.enumerate() {
        lines.push(line(&format!("i{i}"), "ana", Some(A), v(x), "x"));
        lines.push(line(&format!("i{i}"), "bo", Some(A), v(y), "x"));
    }
    for i in 0..5 {
        lines.push(line(&format!("i{i}"), "ana", Some(B), "pass", "x"));
        lines.push(line(&format!("i{i}"), "bo", Some(B), "pass", "x"));
    }
    lines.push(line("i0", "cy", Some(A), "unsure", "x"));
    lines.insert(3, "{oops".to_string());
    lines.insert(5, json!({ "item": "i9", "annotator": "ana", "verdict": "maybe", "at": "" }).to_string());
    lines.join("\n") + "\n"
}

fn pair<'a>(agreement: &'a Value, a: &str, b: &str) -> &'a Value {
    agreement["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["a"] == a && p["b"] == b)
        .unwrap_or_else(|| panic!("no pair {a} × {b}: {agreement}"))
}

#[test]
fn agree_gives_hand_computed_kappa_and_alpha_and_says_when_kappa_is_undefined() {
    let dir = project(&[("labels/s.jsonl", &agreement_store())]);
    let o = evalua(dir.path(), &["labels", "agree", "labels/s.jsonl", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    // Bad lines: a warning with file:line each, and the rest is used.
    assert!(err.contains("labels/s.jsonl:4: not JSON"), "{err}");
    assert!(err.contains("labels/s.jsonl:6: not a label") && err.contains("maybe"), "{err}");
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["schema"], "evalua.labels/1");
    assert_eq!(v["annotators"], json!(["ana", "bo", "cy"]));
    let crit =
        |c: &str| v["criteria"].as_array().unwrap().iter().find(|x| x["criterion"] == c).unwrap()["agreement"].clone();
    let a = crit(A);
    // κ: po = 0.7, pe = 0.5·0.6 + 0.5·0.4 = 0.5 → 0.4 (bo's superseded line on i0 does not count).
    let k = &pair(&a, "ana", "bo")["kappa"];
    assert!(close(k["value"].as_f64().unwrap(), 0.4), "{a}");
    let [lo, hi] = [k["interval"][0].as_f64().unwrap(), k["interval"][1].as_f64().unwrap()];
    assert!(lo < 0.4 && hi > 0.4, "{k}");
    assert_eq!(pair(&a, "ana", "bo")["compared"], 10);
    // α: o_pp = 8, o_ff = 6, o_pf = 3 → 1 − 19·3 / (11·9) = 42/99.
    assert!(close(a["alpha"]["value"].as_f64().unwrap(), 42.0 / 99.0), "{a}");
    assert_eq!(a["unsure"], 1);
    // cy only said unsure: listed with ana and bo, nothing compared, κ undefined.
    assert_eq!(pair(&a, "ana", "cy")["compared"], 0);
    assert!(pair(&a, "ana", "cy")["kappa"]["note"].as_str().unwrap().contains("undefined"));
    assert_eq!(a["disagreements"].as_array().unwrap().len(), 3);
    // B: both passed everything: κ undefined, and why; α undefined too.
    let b = crit(B);
    let kb = &pair(&b, "ana", "bo")["kappa"];
    assert!(kb["value"].is_null(), "{b}");
    assert!(kb["note"].as_str().unwrap().contains("chance is 1"), "{b}");
    assert!(b["alpha"]["value"].is_null());
    // Pooled: pp 9, pf 1, fp 2, ff 3 → κ = (180 − 130) / (225 − 130) = 50/95; α = 1 − 29·3/(21·9) = 102/189.
    let all = &v["overall"];
    assert!(close(pair(all, "ana", "bo")["kappa"]["value"].as_f64().unwrap(), 50.0 / 95.0), "{all}");
    assert!(close(all["alpha"]["value"].as_f64().unwrap(), 102.0 / 189.0), "{all}");

    // The text says the same.
    let o = evalua(dir.path(), &["labels", "agree", "labels/s.jsonl"]);
    let out = stdout(&o);
    assert!(out.contains("3 annotators: ana, bo, cy"), "{out}");
    assert!(out.contains("ana × bo  0.400  ["), "{out}");
    assert!(out.contains("Krippendorff's α (nominal, 3 annotators)  0.424  ["), "{out}");
    assert!(out.contains("undefined: both gave every item pass"), "{out}");
    assert!(out.contains("unsure verdicts left out: 1"), "{out}");
    assert!(out.contains("i4: ana pass, bo fail"), "{out}");

    // No store: exit 2.
    assert_user_error(&evalua(dir.path(), &["labels", "agree", "labels/none.jsonl"]), "labels/none.jsonl");
}

#[test]
fn split_is_deterministic_stratified_and_not_silently_replaced() {
    // 20 items: 14 majority pass, 6 majority fail.
    let lines: Vec<String> = (0..20)
        .map(|i| line(&format!("it{i:02}"), "ana", Some(A), if i < 14 { "pass" } else { "fail" }, "x"))
        .collect();
    let dir = project(&[("labels/s.jsonl", &(lines.join("\n") + "\n"))]);
    let o = evalua(dir.path(), &["labels", "split", "labels/s.jsonl", "--held-out", "0.5", "--seed", "3", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["schema"], "evalua.labels/1");
    let file = dir.path().join("labels/s.jsonl.split.json");
    let first: Value = crate::common::json(&file);
    assert_eq!(first["seed"], 3);
    assert_eq!(first["fraction"], 0.5);
    let held: Vec<&str> = first["held_out"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
    assert_eq!(held.len(), 10);
    assert_eq!(held.iter().filter(|id| **id >= "it14").count(), 3, "stratified: 3 of the 6 fails");
    // The same again: the same file; lines in another order: the same held-out items.
    let mut rev = lines.clone();
    rev.reverse();
    std::fs::write(dir.path().join("labels/r.jsonl"), rev.join("\n") + "\n").unwrap();
    let o = evalua(dir.path(), &["labels", "split", "labels/r.jsonl", "--held-out", "0.5", "--seed", "3"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(crate::common::json(&dir.path().join("labels/r.jsonl.split.json"))["held_out"], first["held_out"]);
    let o = evalua(dir.path(), &["labels", "split", "labels/s.jsonl", "--held-out", "0.5", "--seed", "3"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Another seed would move held-out items into calibration: refused without --force.
    let o = evalua(dir.path(), &["labels", "split", "labels/s.jsonl", "--held-out", "0.5", "--seed", "4"]);
    assert_user_error(&o, "already holds another split");
    assert_eq!(crate::common::json(&file), first);
    let o = evalua(dir.path(), &["labels", "split", "labels/s.jsonl", "--held-out", "0.5", "--seed", "4", "--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_ne!(crate::common::json(&file)["held_out"], first["held_out"]);
    assert_user_error(
        &evalua(dir.path(), &["labels", "split", "labels/s.jsonl", "--held-out", "1.5", "--seed", "4"]),
        "--held-out 1.5",
    );
    // A malformed split is an input error where it is used.
    std::fs::write(&file, "{\"seed\": 1}").unwrap();
    assert_user_error(&evalua(dir.path(), &["labels", "export", "labels/s.jsonl"]), "s.jsonl.split.json");
}

/// Six items labelled on A (the mock judge passes answers saying GOOD, fails the others):
/// i0 pass (judge pass), i1 tie, i2 fail (judge fail), i3 fail by 2–1 (judge pass: a false pass),
/// i4 pass (judge fail: a false fail), i5 only unsure.
fn calibration_store() -> String {
    let rows = [
        ("i0", "ana", "pass", "GOOD"),
        ("i0", "bo", "pass", "GOOD"),
        ("i1", "ana", "pass", "GOOD"),
        ("i1", "bo", "fail", "GOOD"),
        ("i2", "ana", "fail", "no"),
        ("i2", "bo", "fail", "no"),
        ("i3", "ana", "fail", "GOOD"),
        ("i3", "bo", "fail", "GOOD"),
        ("i3", "cy", "pass", "GOOD"),
        ("i4", "ana", "pass", "no"),
        ("i5", "ana", "unsure", "no"),
    ];
    let mut lines: Vec<String> = rows.iter().map(|(i, w, v, a)| line(i, w, Some(A), v, a)).collect();
    lines.push(line("i2", "ana", None, "fail", "no"));
    lines.join("\n") + "\n"
}

fn confusion(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .filter(|l| l.trim_start().starts_with("human "))
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

#[test]
fn calibrate_reads_a_store_by_majority_and_keeps_the_held_out_part_apart() {
    let m = judge_server();
    let rubric = format!(r#"judge.rubric {{ "{A}", name = "amount", model = J }}"#);
    let cases = format!(r#"case("good", "GOOD", {{ {rubric} }})"#);
    let dir = project(&[("s.lua", &suite(&m.url, &cases)), ("labels/judged.jsonl", &calibration_store())]);
    let o = run(dir.path(), &["calibrate", "s.lua", "--labels", "labels/judged.jsonl"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("4 of 6 labelled items used"), "{out}");
    assert!(out.contains("1 tied") && out.contains("1 only unsure") && out.contains("1 whole-item"), "{out}");
    assert_eq!(confusion(&out), [["human", "pass", "1", "1"], ["human", "fail", "1", "1"]], "{out}");
    assert!(out.contains("Cohen's kappa: 0.000"), "{out}");

    // Export gives the calibration format, and calibrating it gives the same matrix.
    let o = evalua(dir.path(), &["labels", "export", "labels/judged.jsonl", "--out", "calib.jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let exported = std::fs::read_to_string(dir.path().join("calib.jsonl")).unwrap();
    let first: Value = serde_json::from_str(exported.lines().next().unwrap()).unwrap();
    assert_eq!(first["id"], "i0");
    assert_eq!(first["answer"], "GOOD");
    assert_eq!(first["labels"], json!({ A: true }));
    assert_eq!(exported.lines().count(), 4);
    let o = run(dir.path(), &["calibrate", "s.lua", "--labels", "calib.jsonl"]);
    assert_eq!(confusion(&stdout(&o)), [["human", "pass", "1", "1"], ["human", "fail", "1", "1"]]);

    // Hold out i3: calibration no longer sees it; --held-out sees only it, and is counted.
    std::fs::write(
        dir.path().join("labels/judged.jsonl.split.json"),
        json!({ "seed": 1, "fraction": 0.2, "held_out": ["i3"] }).to_string(),
    )
    .unwrap();
    let o = run(dir.path(), &["calibrate", "s.lua", "--labels", "labels/judged.jsonl"]);
    let out = stdout(&o);
    assert!(out.contains("3 of 6 labelled items used, 1 held out left aside"), "{out}");
    assert_eq!(confusion(&out), [["human", "pass", "1", "1"], ["human", "fail", "0", "1"]], "{out}");
    assert!(!dir.path().join(".evalua/ledger.jsonl").exists(), "the calibration part is not counted");
    let o = run(dir.path(), &["calibrate", "s.lua", "--labels", "labels/judged.jsonl", "--held-out"]);
    let out = stdout(&o);
    assert_eq!(confusion(&out), [["human", "pass", "0", "0"], ["human", "fail", "1", "0"]], "{out}{}", stderr(&o));
    let ledger = std::fs::read_to_string(dir.path().join(".evalua/ledger.jsonl")).unwrap();
    let entry: Value = serde_json::from_str(ledger.lines().next().unwrap()).unwrap();
    assert_eq!((entry["kind"].as_str(), entry["cases"].clone()), (Some("labels"), json!(["i3"])), "{ledger}");
    // Past held_out_max_runs (5), a warning.
    for _ in 0..5 {
        run(dir.path(), &["calibrate", "s.lua", "--labels", "labels/judged.jsonl", "--held-out"]);
    }
    let o = run(dir.path(), &["calibrate", "s.lua", "--labels", "labels/judged.jsonl", "--held-out"]);
    assert!(stderr(&o).contains("have now been used 7 times"), "{}", stderr(&o));
    // --held-out on a file in the calibration format: said, exit 2.
    assert_user_error(
        &run(dir.path(), &["calibrate", "s.lua", "--labels", "calib.jsonl", "--held-out"]),
        "calibration format",
    );
}

#[test]
fn a_store_whose_lines_are_all_bad_is_said_not_a_panic() {
    let dir = project(&[("labels/s.jsonl", "\u{0}\u{1}garbage\n{\"item\": 3}\n")]);
    let o = evalua(dir.path(), &["labels", "agree", "labels/s.jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("labels/s.jsonl:1: not JSON") && stderr(&o).contains("labels/s.jsonl:2: not a label"));
    assert!(stdout(&o).contains("0 labels in force"), "{}", stdout(&o));
    // Nothing to split: exit 2, the error on the last line (after the warnings).
    let o = evalua(dir.path(), &["labels", "split", "labels/s.jsonl", "--held-out", "0.3", "--seed", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).trim_end().lines().last().unwrap().contains("no labels to split"), "{}", stderr(&o));
}

/// A judge server: `judge-1` fails the amount criterion unless the answer says
/// GOOD; `judge-lax` passes everything.
fn two_judges() -> crate::judge::Mock {
    use crate::judge::{block, completion, criteria_count, message, mock, verdict};
    mock(|body| {
        let user = message(body, "user");
        let all: Vec<u32> = (1..=criteria_count(&user) as u32).collect();
        let answer = block(&user, "final_answer").unwrap_or_default();
        if body["model"] == "judge-lax" || answer.contains("GOOD") {
            completion(&verdict(&all, &[], &[]))
        } else {
            completion(&verdict(&all[1..], &[1], &[]))
        }
    })
}

fn gated_suite(url: &str, model: &str) -> String {
    format!(
        r#"local evalua = require("evalua")
local judge = require("evalua.judge")
local J = judge.model {{ model = "{model}", base_url = "{url}", api_key_env = "EVALUA_TEST_JUDGE_KEY", max_retries = 0 }}
local suite = evalua.suite {{ name = "judged", trials = 1, gate = {{ judge_kappa = 0.6 }},
  agent = evalua.agent.scripted(function(task, env) return "GOOD refunded" end) }}
suite:case {{ id = "c", input = "Refund P-9930", expect = {{ judge.rubric {{ "{A}", name = "amount", model = J }} }} }}
return suite
"#
    )
}

#[test]
fn recheck_on_the_held_out_labels_shows_a_changed_judge_dropping_and_fails_the_calibration_gate() {
    let m = two_judges();
    // 20 items: the first 10 say GOOD and humans passed them, the others failed.
    let store: String = (0..20)
        .map(|i| {
            let good = i < 10;
            line(
                &format!("it{i:02}"),
                "ana",
                Some(A),
                if good { "pass" } else { "fail" },
                if good { "GOOD" } else { "no" },
            ) + "\n"
        })
        .collect();
    let dir = project(&[("s.lua", &gated_suite(&m.url, "judge-1")), ("labels/judged.jsonl", &store)]);
    let o = evalua(dir.path(), &["labels", "split", "labels/judged.jsonl", "--held-out", "0.5", "--seed", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(dir.path(), &["calibrate", "s.lua", "--labels", "labels/judged.jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("10 of 20 labelled items used, 10 held out left aside"), "{}", stdout(&o));
    // The first recheck: the same judge on the held-out items, against its calibration.
    let o = run(dir.path(), &["calibrate", "s.lua", "--labels", "labels/judged.jsonl", "--recheck"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(
        out.contains("held-out part") && out.contains("recheck against the calibration of openai:judge-1"),
        "{out}"
    );
    assert!(out.contains("kappa            1.000 → 1.000  change +0.000"), "{out}");
    assert!(out.contains("gate judge_kappa = 0.6: held"), "{out}");
    // A run with that judge: the manifest takes its kappa, the gate holds.
    let o = run(dir.path(), &["run", "s.lua", "--out", "r1", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let manifest = crate::common::json(&dir.path().join("r1/manifest.json"));
    assert_eq!(manifest["judges"][0]["calibration_kappa"], 1.0);
    assert_eq!(crate::common::json(&dir.path().join("r1/summary.json"))["judge_kappa"], 1.0);

    // The judge's model changes to one that passes everything: run warns, recheck says how much worse.
    std::fs::write(dir.path().join("s.lua"), gated_suite(&m.url, "judge-lax")).unwrap();
    let o = run(dir.path(), &["calibrate", "s.lua", "--labels", "labels/judged.jsonl", "--recheck"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "a drop beyond the interval fails the gate: {out}{}", stderr(&o));
    assert!(out.contains("recheck against the held-out measurement of openai:judge-1"), "{out}");
    assert!(out.contains("item by item"), "{out}");
    // κ 1 → 0 (po 0.5, pe 0.5); false pass 0% → 100% on the 5 held-out fails.
    assert!(
        out.contains("kappa            1.000 → 0.000  change -1.000  (95% interval -1.000 – -1.000)  DROPPED"),
        "{out}"
    );
    assert!(out.contains("false-pass rate  0.0% → 100.0%  change +100.0 pt") && out.contains("WORSE"), "{out}");
    assert!(out.contains("gate judge_kappa = 0.6: FAILED: 'amount' got worse beyond its interval"), "{out}");
    // Held-out uses are counted: split, no; calibrate, no; two rechecks, yes.
    let ledger = std::fs::read_to_string(dir.path().join(".evalua/ledger.jsonl")).unwrap();
    assert_eq!(ledger.lines().count(), 2, "{ledger}");
    // A run with the changed judge fails its calibration gate too (kappa 0 on the held-out labels).
    let o = run(dir.path(), &["run", "s.lua", "--out", "r2", "-q"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(crate::common::json(&dir.path().join("r2/summary.json"))["judge_kappa"], 0.0);
    // Without any calibration record, the gate cannot hold, and says why.
    std::fs::remove_dir_all(dir.path().join(".evalua/calibration")).unwrap();
    let o = run(dir.path(), &["run", "s.lua", "--out", "r3", "-q"]);
    assert_eq!(o.status.code(), Some(1));
    let gates = crate::common::json(&dir.path().join("r3/summary.json"))["gates"].clone();
    assert!(gates[0]["note"].as_str().unwrap().contains("evalua calibrate"), "{gates}");
}
