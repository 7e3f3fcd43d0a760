//! Asking judges: a rubric (a binary verdict per criterion, one judge or a
//! panel voting by majority) and a pairwise comparison (both orders; a tie
//! when they disagree). Only valid answers are cached.

use std::sync::Mutex;
use std::time::Instant;

use serde_json::{Value as Json, json};

use super::cache::{self, Cache};
use super::client;
use super::prompt::{self, Better, Mark, TrialData};
use super::resolve::{Judge, resolve};
use crate::record::ModelCall;
use crate::spec::ModelSpec;
use crate::util::digest::sha256_hex;

/// What a judge check concluded.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Passed,
    Failed,
    /// A grader error: invalid answer, refusal, API failure, undeterminable.
    Undecided(String),
    /// Not reachable by configuration: counted as skipped, never passed.
    Skipped(String),
}

#[derive(Debug, Clone)]
pub struct Conclusion {
    pub status: Status,
    pub evidence: Json,
    /// A rubric's verdict per criterion, when the judge (or the panel) gave a valid one.
    pub marks: Option<Vec<Mark>>,
    /// The model calls it made (none for answers read from the cache).
    pub calls: Vec<JudgeCall>,
}

impl Conclusion {
    /// No judge reachable by configuration: skipped, never passed.
    fn skipped(why: String) -> Conclusion {
        Conclusion { status: Status::Skipped(why.clone()), evidence: json!(why), marks: None, calls: Vec::new() }
    }
}

/// Run `ask_all` with a place for the calls it makes, and put them in its conclusion.
fn collecting_calls(ask_all: impl FnOnce(&Mutex<Vec<JudgeCall>>) -> Conclusion) -> Conclusion {
    let calls = Mutex::new(Vec::new());
    let mut c = ask_all(&calls);
    c.calls = calls.into_inner().unwrap_or_else(|p| p.into_inner());
    c
}

/// The judges' model calls made in a Lua state since they were last taken
/// (its app data; see `trial::checks::take_judge_calls`).
#[derive(Debug, Default)]
pub struct JudgeCalls(pub Vec<JudgeCall>);

/// A judge's model call, for the trial's trace (a `chat` span when exported).
#[derive(Debug, Clone)]
pub struct JudgeCall {
    pub started: Instant,
    /// `by` is "judge"; `started_ms` is left for the trial to set from `started`.
    pub call: ModelCall,
}

impl JudgeCall {
    /// The call as `meta` ([`client::Reply::meta`] or an error's) describes it.
    fn of(judge: &Judge, started: Instant, meta: &Json, error: Option<&str>) -> JudgeCall {
        let ep = &judge.endpoint;
        let tokens = |k: &str| meta["usage"][k].as_u64().unwrap_or(0);
        JudgeCall {
            started,
            call: ModelCall {
                by: "judge".into(),
                provider: ep.provider.as_str().to_string(),
                api: Some(ep.chat_api()),
                model: ep.model.clone(),
                started_ms: 0.0,
                latency_ms: meta["latency_ms"].as_f64().unwrap_or(0.0),
                input_tokens: tokens("input_tokens"),
                output_tokens: tokens("output_tokens"),
                cost_usd: meta["cost_usd"].as_f64(),
                finish_reason: None,
                attempts: meta["attempts"].as_u64().unwrap_or(0) as u32,
                error: error.map(str::to_string),
            },
        }
    }
}

/// One judge's answer to one request (a rubric vote, or one order of a pair).
struct Answer {
    judge: String,
    cached: bool,
    value: Result<Json, String>,
    meta: Json,
}

/// Ask `judge` (or read the cache) and validate with `read`. Only answers that
/// pass `read` are cached.
fn ask<T>(
    judge: &Judge,
    request: &client::Request,
    key: &str,
    cache: &Cache,
    calls: &Mutex<Vec<JudgeCall>>,
    read: impl Fn(&Json) -> Result<T, String>,
) -> (Answer, Option<T>) {
    let id = judge.id();
    if let Some(v) = cache.get(key)
        && let Ok(t) = read(&v)
    {
        return (Answer { judge: id, cached: true, value: Ok(v), meta: json!({}) }, Some(t));
    }
    let started = Instant::now();
    let asked = client::ask(judge, request);
    let call = match &asked {
        Err(e) => JudgeCall::of(judge, started, &e.meta, Some(&e.message)),
        Ok(reply) => JudgeCall::of(judge, started, &reply.meta(), None),
    };
    calls.lock().unwrap_or_else(|p| p.into_inner()).push(call);
    match asked {
        Err(e) => (Answer { judge: id, cached: false, value: Err(e.message), meta: e.meta }, None),
        Ok(reply) => {
            let meta = reply.meta();
            match read(&reply.answer) {
                Ok(t) => {
                    cache.put(key, json!({ "judge": judge.endpoint_id(), "request": request.name }), &reply.answer);
                    (Answer { judge: id, cached: false, value: Ok(reply.answer), meta }, Some(t))
                }
                Err(e) => {
                    let mut meta = meta;
                    meta["answer"] = reply.answer;
                    (Answer { judge: id, cached: false, value: Err(e), meta }, None)
                }
            }
        }
    }
}

fn resolve_all(models: &[ModelSpec]) -> Result<Vec<Judge>, String> {
    if models.is_empty() {
        return Err("no judge model configured (give the rubric model = judge.model { ... })".into());
    }
    models.iter().map(resolve).collect()
}

fn mark_str(m: Mark) -> &'static str {
    match m {
        Mark::Pass => "pass",
        Mark::Fail => "fail",
        Mark::Undeterminable => "undeterminable",
    }
}

/// Run a rubric on a trial's data.
pub fn rubric(criteria: &[String], models: &[ModelSpec], panel: bool, data: &TrialData, cache: &Cache) -> Conclusion {
    collecting_calls(|calls| rubric_with(criteria, models, panel, data, cache, calls))
}

fn rubric_with(
    criteria: &[String],
    models: &[ModelSpec],
    panel: bool,
    data: &TrialData,
    cache: &Cache,
    calls: &Mutex<Vec<JudgeCall>>,
) -> Conclusion {
    let judges = match resolve_all(models) {
        Ok(j) => j,
        Err(why) => return Conclusion::skipped(why),
    };
    let prompt_hash = prompt::rubric_prompt_hash(criteria);
    let input_hash = data.hash();
    let n = criteria.len();
    let one = |i: usize, judge: &Judge| {
        let nonce = prompt::nonce();
        let request = client::Request {
            name: "rubric_verdict",
            system: prompt::RUBRIC_SYSTEM.to_string(),
            user: prompt::rubric_user(criteria, data, &nonce),
            schema: prompt::rubric_schema(n),
        };
        let seat = if panel { i.to_string() } else { "0".into() };
        let key = cache::key(&judge.cache_id(), &prompt_hash, &input_hash, &seat);
        ask(judge, &request, &key, cache, calls, |v| prompt::read_rubric(v, n))
    };
    let results: Vec<(Answer, Option<prompt::RubricVerdict>)> = if judges.len() == 1 {
        vec![one(0, &judges[0])]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = judges.iter().enumerate().map(|(i, j)| s.spawn(move || one(i, j))).collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        (
                            Answer {
                                judge: "?".into(),
                                cached: false,
                                value: Err("the judge call panicked".into()),
                                meta: json!({}),
                            },
                            None,
                        )
                    })
                })
                .collect()
        })
    };

    let seats = results.len();
    let valid: Vec<&prompt::RubricVerdict> = results.iter().filter_map(|(_, v)| v.as_ref()).collect();
    let mut votes = Vec::new();
    let mut quotes = Vec::new();
    for (a, v) in &results {
        let mut vote = json!({ "judge": a.judge, "cached": a.cached });
        match (&a.value, v) {
            (Ok(raw), Some(v)) => {
                vote["marks"] = json!(v.marks.iter().map(|m| mark_str(*m)).collect::<Vec<_>>());
                vote["failure_mode"] = raw["failure_mode"].clone();
                for e in raw["evidence"].as_array().into_iter().flatten() {
                    let q = e["quote"].as_str().unwrap_or("");
                    if q.trim().is_empty() {
                        continue;
                    }
                    quotes.push(json!({ "judge": a.judge, "criterion": e["criterion"], "quote": q,
                                        "found_in_data": prompt::quote_found(q, data) }));
                }
            }
            _ => vote["error"] = json!(a.value.as_ref().err().cloned().unwrap_or_else(e_none)),
        }
        if let Json::Object(m) = &a.meta {
            for (k, v) in m {
                vote[k] = v.clone();
            }
        }
        votes.push(vote);
    }

    let mut evidence = json!({
        "judge": if panel { format!("panel of {seats}") } else { judges[0].id() },
        "prompt_sha256": prompt_hash,
        "votes": votes,
    });
    if !quotes.is_empty() {
        evidence["quotes"] = json!(quotes);
    }
    // A verdict needs a majority of the whole panel: errors count as abstentions.
    let need = seats / 2 + 1;
    if valid.len() < need {
        let first = results.iter().find_map(|(a, _)| a.value.as_ref().err().cloned()).unwrap_or_default();
        let msg = if seats == 1 {
            format!("judge error: {first}")
        } else {
            format!("judge error: {} of {seats} judges gave no valid verdict (first: {first})", seats - valid.len())
        };
        evidence["verdict"] = json!("error");
        evidence["error"] = json!(msg);
        return Conclusion { status: Status::Undecided(msg), evidence, marks: None, calls: Vec::new() };
    }
    let mut per = Vec::new();
    let mut marks = Vec::new();
    for (i, c) in criteria.iter().enumerate() {
        let count = |m: Mark| valid.iter().filter(|v| v.marks[i] == m).count();
        let (p, f, u) = (count(Mark::Pass), count(Mark::Fail), count(Mark::Undeterminable));
        let mark = if p >= need {
            Mark::Pass
        } else if f >= need {
            Mark::Fail
        } else {
            Mark::Undeterminable
        };
        marks.push(mark);
        let mut entry = json!({ "criterion": c, "verdict": mark_str(mark) });
        if seats > 1 {
            entry["votes"] = json!({ "pass": p, "fail": f, "undeterminable": u, "error": seats - valid.len() });
        }
        per.push(entry);
    }
    evidence["criteria"] = json!(per);
    if !panel && let Some(v) = valid.first() {
        evidence["failure_mode"] = v.raw["failure_mode"].clone();
    }
    let status = if marks.contains(&Mark::Fail) {
        Status::Failed
    } else if let Some(i) = marks.iter().position(|m| *m == Mark::Undeterminable) {
        let why = if seats > 1 { "no majority of the panel on" } else { "the judge could not determine" };
        Status::Undecided(format!("undeterminable: {why} criterion {}: {:?}", i + 1, criteria[i]))
    } else {
        Status::Passed
    };
    evidence["verdict"] = json!(match &status {
        Status::Passed => "passed",
        Status::Failed => "failed",
        _ => "undeterminable",
    });
    if let Status::Undecided(m) = &status {
        evidence["error"] = json!(m);
    }
    Conclusion { status, evidence, marks: Some(marks), calls: Vec::new() }
}

fn e_none() -> String {
    "no valid verdict".into()
}

/// Compare `a` and `b` in both orders; a tie when the orders disagree.
pub fn pairwise(
    question: &str,
    models: &[ModelSpec],
    pass: &str,
    task: &str,
    a: &str,
    b: &str,
    cache: &Cache,
) -> Conclusion {
    collecting_calls(|calls| pairwise_with(question, models, pass, task, (a, b), cache, calls))
}

fn pairwise_with(
    question: &str,
    models: &[ModelSpec],
    pass: &str,
    task: &str,
    (a, b): (&str, &str),
    cache: &Cache,
    calls: &Mutex<Vec<JudgeCall>>,
) -> Conclusion {
    let judges = match resolve_all(models) {
        Ok(j) => j,
        Err(why) => return Conclusion::skipped(why),
    };
    let judge = &judges[0];
    let prompt_hash = prompt::pairwise_prompt_hash(question);
    let mut orders = Vec::new();
    let mut winners = Vec::new();
    for (first, second, label) in [(a, b, "a,b"), (b, a, "b,a")] {
        let nonce = prompt::nonce();
        let request = client::Request {
            name: "pairwise_verdict",
            system: prompt::PAIRWISE_SYSTEM.to_string(),
            user: prompt::pairwise_user(question, task, first, second, &nonce),
            schema: prompt::pairwise_schema(),
        };
        let input_hash = sha256_hex(json!([task, first, second]).to_string().as_bytes());
        let key = cache::key(&judge.cache_id(), &prompt_hash, &input_hash, "0");
        let (answer, better) = ask(judge, &request, &key, cache, calls, prompt::read_pairwise);
        let winner = better.map(|b| match (b, label) {
            (Better::Tie, _) => "tie",
            (Better::First, "a,b") | (Better::Second, "b,a") => "a",
            _ => "b",
        });
        let mut o = json!({ "shown": label, "cached": answer.cached, "winner": winner });
        match &answer.value {
            Ok(v) => o["evidence"] = v["evidence"].clone(),
            Err(e) => o["error"] = json!(e),
        }
        if let Json::Object(m) = &answer.meta {
            for (k, v) in m {
                o[k] = v.clone();
            }
        }
        orders.push(o);
        winners.push(winner.map(|w| w.to_string()).ok_or_else(|| answer.value.err().unwrap_or_else(e_none)));
    }
    let mut evidence =
        json!({ "judge": judge.id(), "prompt_sha256": prompt_hash, "question": question, "orders": orders });
    let (w1, w2) = match (&winners[0], &winners[1]) {
        (Ok(x), Ok(y)) => (x.clone(), y.clone()),
        (Err(e), _) | (_, Err(e)) => {
            let msg = format!("judge error: {e}");
            evidence["winner"] = json!(null);
            evidence["error"] = json!(msg);
            return Conclusion { status: Status::Undecided(msg), evidence, marks: None, calls: Vec::new() };
        }
    };
    let winner = if w1 == w2 { w1 } else { "tie".to_string() };
    if winners[0] != winners[1] {
        evidence["note"] = json!("the two orders disagree: reported as a tie");
    }
    let passed = winner == "a" || (winner == "tie" && pass == "a_or_tie");
    evidence["winner"] = json!(winner);
    Conclusion {
        status: if passed { Status::Passed } else { Status::Failed },
        evidence,
        marks: None,
        calls: Vec::new(),
    }
}

/// A rubric stage of a cascade, on a trial's data.
pub fn rubric_of(spec: &crate::spec::JudgeSpec, data: &TrialData, cache: &Cache) -> Conclusion {
    match spec {
        crate::spec::JudgeSpec::Rubric { criteria, models, panel, .. } => rubric(criteria, models, *panel, data, cache),
        other => {
            let msg = format!("a cascade stage must be a judge.rubric, not a {}", other.kind());
            Conclusion {
                status: Status::Undecided(msg.clone()),
                evidence: json!({ "error": msg }),
                marks: None,
                calls: Vec::new(),
            }
        }
    }
}

/// Why `first`'s conclusion sends the item to the second judge under `mode`
/// ("uncertain", "disagree", "always_on_fail"), or None.
pub fn escalates(mode: &str, first: &Conclusion) -> Option<String> {
    match mode {
        "uncertain" => match &first.status {
            Status::Undecided(why) => Some(format!("uncertain: {why}")),
            _ => None,
        },
        "always_on_fail" => {
            (first.status == Status::Failed).then(|| "always_on_fail: the first judge failed it".into())
        }
        "disagree" => {
            // A vote that gave no verdict, or a criterion the panel did not vote on unanimously.
            let votes = first.evidence["votes"].as_array().cloned().unwrap_or_default();
            if votes.iter().any(|v| v.get("error").is_some()) {
                return Some("disagree: a judge of the panel gave no valid verdict".into());
            }
            first.evidence["criteria"].as_array().into_iter().flatten().enumerate().find_map(|(i, c)| {
                let v = &c["votes"];
                let kinds = ["pass", "fail", "undeterminable", "error"]
                    .iter()
                    .filter(|k| v[**k].as_u64().unwrap_or(0) > 0)
                    .count();
                (kinds > 1).then(|| format!("disagree: the panel's votes differ on criterion {}", i + 1))
            })
        }
        _ => None,
    }
}

fn status_word(s: &Status) -> &'static str {
    match s {
        Status::Passed => "passed",
        Status::Failed => "failed",
        Status::Undecided(_) => "undecided",
        Status::Skipped(_) => "skipped",
    }
}

/// What a stage did: its judge, calls, tokens and cost (a cached answer costs nothing).
fn stage(name: &str, judge: &str, c: &Conclusion) -> Json {
    let cost: f64 = c.calls.iter().filter_map(|k| k.call.cost_usd).sum();
    json!({
        "stage": name,
        "judge": judge,
        "verdict": status_word(&c.status),
        "calls": c.calls.len(),
        "input_tokens": c.calls.iter().map(|k| k.call.input_tokens).sum::<u64>(),
        "output_tokens": c.calls.iter().map(|k| k.call.output_tokens).sum::<u64>(),
        "cost_usd": cost,
    })
}

/// `judge.cascade`: the first judge grades the item; the second only when
/// `escalate` selects it, and then its verdict decides. The evidence records
/// `decided_by` ("first" or "then"), whether and why it was escalated, each
/// stage's calls and cost, and, when escalated, the first judge's evidence.
pub fn cascade(
    first: &crate::spec::JudgeSpec,
    then: &crate::spec::JudgeSpec,
    escalate: &str,
    data: &TrialData,
    cache: &Cache,
) -> Conclusion {
    let a = rubric_of(first, data, cache);
    combine(first, then, escalate, a, || rubric_of(then, data, cache))
}

/// The cascade's conclusion from the first stage's, asking `second` only on escalation.
pub fn combine(
    first: &crate::spec::JudgeSpec,
    then: &crate::spec::JudgeSpec,
    escalate: &str,
    a: Conclusion,
    second: impl FnOnce() -> Conclusion,
) -> Conclusion {
    if let Status::Skipped(why) = &a.status {
        return Conclusion::skipped(format!("cascade: the first judge is not reachable: {why}"));
    }
    let mut stages = vec![stage("first", &first.model_id(), &a)];
    let Some(reason) = escalates(escalate, &a) else {
        let mut evidence = a.evidence;
        evidence["decided_by"] = json!("first");
        evidence["escalated"] = json!(false);
        evidence["escalate"] = json!(escalate);
        evidence["stages"] = json!(stages);
        return Conclusion { status: a.status, evidence, marks: a.marks, calls: a.calls };
    };
    let b = second();
    let mut calls = a.calls;
    calls.extend(b.calls.iter().cloned());
    if let Status::Skipped(why) = &b.status {
        let mut c =
            Conclusion::skipped(format!("cascade: escalated ({reason}), but the second judge is not reachable: {why}"));
        c.calls = calls;
        return c;
    }
    stages.push(stage("then", &then.model_id(), &b));
    let mut evidence = b.evidence;
    evidence["decided_by"] = json!("then");
    evidence["escalated"] = json!(true);
    evidence["escalated_because"] = json!(reason);
    evidence["escalate"] = json!(escalate);
    evidence["stages"] = json!(stages);
    evidence["first"] = a.evidence;
    Conclusion { status: b.status, evidence, marks: b.marks, calls }
}
