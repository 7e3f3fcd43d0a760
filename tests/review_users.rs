//! `evalua view --review users [--sample N] [--seed S]` (SPEC §18, issue 39
//! item 5): a seeded sample of the trials with a simulated user queued for
//! labelling with the criterion "the simulated user followed its profile",
//! labels that store what the user's adherence judge reads, and
//! `evalua calibrate --labels` measuring that judge against them.

use serde_json::{Value, json};

use crate::annotate::{post, token};
use crate::browser::Driver;
use crate::common::*;
use crate::models::{Mock, oa};
use crate::view::{Viewer, enc, wait_js};

const CRITERION: &str = "the simulated user followed its profile";

/// The adherence judge's verdict on trial `t`: passed on odd trials.
fn judged_pass(t: u64) -> bool {
    t % 2 == 1
}

/// A project whose suite has a simulated user with an adherence judge named
/// `conduct`, run once (4 trials) into runs/users/r1; the mock that played
/// the user and the judge.
fn reviewed_project() -> (tempfile::TempDir, Mock) {
    let mut replies = Vec::new();
    for t in 1..=4u64 {
        // The user, asked for the order (each trial's conversation its own).
        replies.push(oa(Some(&format!("P-9930 (call {t})")), &[], 100, 10));
        let v = if judged_pass(t) {
            json!({ "evidence": [], "passed_criteria": [1], "failed_criteria": [], "undeterminable": [], "failure_mode": null })
        } else {
            json!({ "evidence": [{ "criterion": 1, "quote": "P-9930" }], "passed_criteria": [], "failed_criteria": [1],
                    "undeterminable": [], "failure_mode": "solved the task for the agent" })
        };
        replies.push(oa(Some(&v.to_string()), &[], 300, 20)); // the adherence judge
    }
    // The judge once more for each of the two items `calibrate` measures: failed.
    let failed = json!({ "evidence": [{ "criterion": 1, "quote": "P-9930" }], "passed_criteria": [], "failed_criteria": [1],
                         "undeterminable": [], "failure_mode": "solved the task for the agent" });
    replies.extend([oa(Some(&failed.to_string()), &[], 300, 20), oa(Some(&failed.to_string()), &[], 300, 20)]);
    let mock = Mock::start(replies);
    let model = format!(
        "evalua.model {{ model = \"gpt-4.1-mini\", base_url = {:?}, api_key_env = \"EVALUA_TEST_KEY\" }}",
        mock.openai_url()
    );
    let suite = format!(
        r#"local evalua = require("evalua")
local check = require("evalua.check")
local judge = require("evalua.judge")
local suite = evalua.suite {{
  name = "users", trials = 4,
  agent = evalua.agent.scripted(function(task, env)
    local said = env.say("Which order is it?") or ""
    return "Refunded " .. said
  end),
}}
suite:case {{
  id = "refund", input = "My refund is missing.",
  user = evalua.user.llm {{
    profile = "Order P-9930, one unit missing.", goal = "Get the missing unit refunded.",
    model = {model},
    adherence = judge.rubric {{ "the user never does the agent's work for it", name = "conduct", model = {model} }},
  }},
  expect = {{ check.answer {{ contains = "Refunded P-9930" }} }},
}}
return suite
"#
    );
    let dir = project(&[("s.lua", &suite)]);
    let o = bin()
        .current_dir(dir.path())
        .env("EVALUA_TEST_KEY", "k")
        .args(["run", "s.lua", "--out", "runs/users/r1", "--jobs", "1", "-q"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(mock.seen().len(), 8);
    for r in trials(&dir.path().join("runs/users/r1")) {
        let t = r["trial"].as_u64().unwrap();
        assert_eq!(r["user"]["adherence"]["passed"], judged_pass(t), "{r}");
    }
    (dir, mock)
}

fn review(v: &Viewer) -> Value {
    v.json("/api/review")["sample"].clone()
}

fn sampled(s: &Value) -> Vec<u64> {
    s["trials"].as_array().unwrap().iter().map(|t| t["trial"].as_u64().unwrap()).collect()
}

fn start(dir: &std::path::Path, seed: &str) -> Viewer {
    Viewer::start_with(dir, &["runs"], &["--annotator", "ana", "--review", "users", "--sample", "2", "--seed", seed])
}

fn store(dir: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("labels/users.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_sample_is_the_same_for_a_seed_and_the_queue_holds_only_it() {
    let (dir, _mock) = reviewed_project();
    let v = start(dir.path(), "7");
    let s = review(&v);
    assert_eq!((s["seed"].as_u64(), s["sample"].as_u64(), s["eligible"].as_u64()), (Some(7), Some(2), Some(4)), "{s}");
    let picked = sampled(&s);
    assert_eq!(picked.len(), 2);
    // The same seed, another session: the same sample; another seed: another one.
    assert_eq!(sampled(&review(&start(dir.path(), "7"))), picked);
    let others: Vec<Vec<u64>> = ["1", "2", "3"].iter().map(|seed| sampled(&review(&start(dir.path(), seed)))).collect();
    assert!(others.iter().any(|o| *o != picked), "{picked:?} {others:?}");
    // A review labels as someone.
    let o = bin()
        .current_dir(dir.path())
        .env_remove("EVALUA_ANNOTATOR")
        .args(["view", "runs", "--port", "0", "--review", "users"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--review users labels as someone: give --annotator NAME"), "{}", stderr(&o));
    // --sample larger than the population: all of them.
    let all = Viewer::start_with(dir.path(), &["runs"], &["--annotator", "ana", "--review", "users", "--sample", "9"]);
    assert_eq!(sampled(&review(&all)), [1, 2, 3, 4]);

    // A sampled trial offers the user's conduct, under its adherence judge's name.
    let run = v.runs()[0]["id"].as_str().unwrap().to_string();
    let t = v.json(&format!("/api/trial?r={}&case=refund&trial={}", enc(&run), picked[0]));
    assert_eq!(t["labels"]["criteria"], json!([{ "rubric": "conduct", "criterion": CRITERION }]), "{t}");
    assert!(t["labels"]["item"].as_str().unwrap().ends_with(&format!("/refund/{}/user", picked[0])));
    // The queue: only the sampled trials, in order, then none.
    let next = |from: Option<u64>| {
        let from = from.map(|t| format!("&from_case=refund&from_trial={t}")).unwrap_or_default();
        v.json(&format!("/api/next?r={}{from}", enc(&run)))
    };
    let first = next(None);
    assert_eq!((first["trial"].as_u64(), first["left"].as_u64()), (Some(picked[0]), Some(2)), "{first}");
    assert_eq!(next(Some(picked[0]))["trial"].as_u64(), Some(picked[1]));
    assert_eq!(next(Some(picked[1]))["trial"], Value::Null);

    // Label both through the API (the page's own post): human pass on the first, fail on the second.
    let tok = token(&v, &run);
    let ok = [("x-evalua-token", tok.as_str()), ("content-type", "application/json")];
    for (t, verdict) in [(picked[0], "pass"), (picked[1], "fail")] {
        let body = json!({ "r": run, "case": "refund", "trial": t, "criterion": CRITERION, "verdict": verdict });
        let (status, got) = post(&v, &ok, &body);
        assert_eq!(status, 200, "{got}");
    }
    assert_eq!(next(None)["trial"], Value::Null, "both labelled: the queue is empty");
    let lines = store(dir.path());
    assert_eq!(lines.len(), 2);
    let d = &lines[0]["data"];
    assert_eq!((d["rubric"].as_str(), d["case"].as_str()), (Some("conduct"), Some("refund")), "{d}");
    assert!(d["input"].as_str().unwrap().contains("Order P-9930, one unit missing."), "{d}");
    assert!(d["input"].as_str().unwrap().contains("Get the missing unit refunded."), "{d}");
    assert_eq!(d["answer"], format!("P-9930 (call {})", picked[0]));
    assert_eq!(d["messages"][1], json!({ "role": "agent", "content": "Which order is it?" }), "{d}");
    assert_eq!(d["messages"][2]["role"], "simulated_user", "{d}");

    // The stored data is what the judge read in the run: its cached verdicts are found.
    let r = calibrate(dir.path(), &[]);
    assert_eq!(_mock.seen().len(), 8, "the judge's verdicts came from the run's cache");
    let judge = picked.iter().map(|t| judged_pass(*t)).collect::<Vec<_>>();
    assert_eq!(confusion(&r), counts(&judge), "{r}");
    calibrates_the_adherence_judge(dir.path(), &_mock);
}

/// `evalua calibrate s.lua --labels labels/users.jsonl --json`: the `conduct` rubric's measurement.
fn calibrate(dir: &std::path::Path, more: &[&str]) -> Value {
    let o = bin()
        .current_dir(dir)
        .env("EVALUA_TEST_KEY", "k")
        .args(["calibrate", "s.lua", "--labels", "labels/users.jsonl", "--json"])
        .args(more)
        .output()
        .unwrap();
    let j: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    assert_eq!(o.status.code(), Some(0), "{j} {}", stderr(&o));
    j["rubrics"].as_array().unwrap().iter().find(|r| r["rubric"] == "conduct").expect("conduct measured").clone()
}

/// The confusion matrix as [human pass × judge pass, pass × fail, fail × pass, fail × fail].
fn confusion(r: &Value) -> [u64; 4] {
    let c = &r["confusion"];
    [
        &c["human_pass"]["judge_pass"],
        &c["human_pass"]["judge_fail"],
        &c["human_fail"]["judge_pass"],
        &c["human_fail"]["judge_fail"],
    ]
    .map(|v| v.as_u64().unwrap())
}

/// The matrix the humans' pass, fail against these judge verdicts make.
fn counts(judge: &[bool]) -> [u64; 4] {
    let mut m = [0; 4];
    for (human, judge) in [true, false].iter().zip(judge) {
        m[(!human as usize) * 2 + !judge as usize] += 1;
    }
    m
}

/// `calibrate --labels --no-cache` measures the adherence judge `conduct`
/// against the mock, asked again (it fails both).
fn calibrates_the_adherence_judge(dir: &std::path::Path, mock: &Mock) {
    let r = calibrate(dir, &["--no-cache"]);
    assert_eq!(mock.seen().len(), 10, "the judge was asked about each labelled item");
    let sent = mock.seen()[8].body.to_string();
    assert!(sent.contains("Order P-9930, one unit missing.") && sent.contains("simulated_user"), "{sent}");
    // Human: pass, fail. The judge, asked again: fail, fail.
    assert_eq!(r["compared"], 2, "{r}");
    assert_eq!(confusion(&r), counts(&[false, false]), "{r}");
    assert!(r.get("false_pass_rate").is_some() && r.get("kappa").is_some(), "{r}");
}

#[test]
fn chromium_labels_the_sampled_users_by_keyboard() {
    let Some(d) = Driver::start() else { return };
    let (dir, _mock) = reviewed_project();
    let v = start(dir.path(), "7");
    let picked = sampled(&review(&v));
    let run = v.runs()[0]["id"].as_str().unwrap().to_string();
    let key = |k: &str| {
        d.post("/actions", json!({ "actions": [{ "type": "key", "id": "kb", "actions":
            k.chars().flat_map(|c| [json!({ "type": "keyDown", "value": c.to_string() }), json!({ "type": "keyUp", "value": c.to_string() })]).collect::<Vec<_>>() }] }));
    };
    let saved = |n: u64| {
        wait_js(
            &d,
            "return (document.getElementById('labels')||{getAttribute:()=>''}).getAttribute('data-saved')",
            &json!(n.to_string()),
        )
    };
    let title =
        || d.js("return (document.getElementById('trajtitle')||{}).innerText||''").as_str().unwrap_or("").to_string();
    d.goto(&format!("{}/run?r={}", v.base, enc(&run)));
    wait_js(&d, "return document.body.getAttribute('data-ready')", &json!("1"));
    let line = d.js("return document.getElementById('review').innerText").as_str().unwrap().to_string();
    assert!(line.contains("sample of 2 of the 4") && line.contains("--seed 7") && line.contains(CRITERION), "{line}");
    for (i, (t, k)) in picked.iter().zip(["p", "f"]).enumerate() {
        key("n");
        assert!(
            eventually(|| title().starts_with(&format!("refund · trial {t} ·"))),
            "trial {t} of the sample was not opened: {}",
            title()
        );
        assert_eq!(d.js("return document.querySelectorAll('#labtab tr.lab').length"), 1);
        let row = d.js("return document.querySelector('#labtab tr.lab').innerText").as_str().unwrap().to_string();
        assert!(row.contains(CRITERION), "{row}");
        key(k);
        saved(i as u64 + 1);
    }
    // Nothing but the sample is queued.
    key("n");
    assert!(
        eventually(|| d
            .js("return (document.getElementById('queue')||document.getElementById('traj')).innerText")
            .as_str()
            .unwrap_or("")
            .contains("left to label")),
        "the queue did not end after the sample"
    );
    assert_eq!(d.js("return window.__evalua_errors"), json!([]));
    assert_eq!(d.console_errors(), Vec::<String>::new());
    let lines = store(dir.path());
    let got: Vec<(String, String, String)> = lines
        .iter()
        .map(|l| {
            let s = |k: &str| l[k].as_str().unwrap_or_default().to_string();
            (s("item").rsplit('/').nth(1).unwrap_or_default().to_string(), s("criterion"), s("verdict"))
        })
        .collect();
    let want: Vec<(String, String, String)> = picked
        .iter()
        .zip(["pass", "fail"])
        .map(|(t, v)| (t.to_string(), CRITERION.to_string(), v.to_string()))
        .collect();
    assert_eq!(got, want);
}
