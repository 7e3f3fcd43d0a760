//! Whole trajectories in other harnesses' formats, for `evalua grade`:
//!
//! - **τ-bench's results** (`run.py`'s output, and its published
//!   `historical_trajectories/`): a JSON list of `{task_id, trial, reward,
//!   info: {task, reward_info}, traj}`, `traj` an OpenAI chat transcript.
//!   Each entry is trial `trial + 1` of case `task_<task_id>`, carrying the
//!   task it ran on (graded against that, not the suite's copy); an entry
//!   τ-bench never scored (`reward_info: null`: its step limit) ended on its
//!   budget. Re-execution is on for these (SPEC §14).
//! - **ATIF** (Harbor's Agent Trajectory Interchange Format, RFC 0001,
//!   v1.0 to v1.7, field names checked against the RFC's v1.4 text and the
//!   later models): one trajectory per document, `{schema_version:
//!   "ATIF-v1.N", session_id, agent: {name, version, model_name},
//!   steps: [{step_id, source: system|user|agent, message, model_name,
//!   tool_calls: [{tool_call_id, function_name, arguments}], observation:
//!   {results: [{source_call_id, content}]}, metrics: {prompt_tokens,
//!   completion_tokens, cost_usd}}], final_metrics: {total_prompt_tokens,
//!   total_completion_tokens, total_cost_usd}}`. A `message` or a result's
//!   `content` may be a list of content parts (v1.6: `{type: "text", text}` or
//!   an image): its text parts are read. `final_metrics` gives the usage when
//!   no step has `metrics`. What is not read: `reasoning_content`, token ids,
//!   logprobs, `subagent_trajectory_ref` (a delegated trajectory is its own
//!   file), `extra`.
//!
//! Both become [`Trajectory`] items: the calls with their recorded results,
//! the conversation, the final answer and how it ended, as a recorded trace
//! is read. A bad entry is a warning naming it; the others are still read.

use serde_json::{Map, Value as Json};

use super::item::Recorded;
use crate::record::{CallRecord, CallStatus, Ended, Message, ModelCall};

/// What a whole-trajectory file holds, from its top level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    TauBench,
    Atif,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::TauBench => "taubench_results",
            Kind::Atif => "atif",
        }
    }
}

/// A trajectory read whole: one item to grade.
#[derive(Debug, Clone)]
pub struct Trajectory {
    /// How it is named in warnings and `source` (`task_7 trial 2`, a session id).
    pub key: String,
    /// Where it is in its file, for warnings (`entry 3`, `session s1`).
    pub at: String,
    pub file: String,
    /// The case it is a trial of (`task_<task_id>`), when the format says.
    pub case: Option<String>,
    /// Its trial number (τ-bench's `trial + 1`), when the format says.
    pub trial: Option<u32>,
    pub recorded: Recorded,
    /// The task it ran on (τ-bench's `info.task`): the row its case is built from.
    pub task: Option<Json>,
    pub kind: Kind,
    /// The entry's recorded score, when it has one (τ-bench's `reward`).
    pub reward: Option<f64>,
}

/// Which whole-trajectory format a parsed document is in, if either.
pub fn kind_of(doc: &Json) -> Option<Kind> {
    match doc {
        Json::Object(o) => {
            let v = o.get("schema_version").and_then(|v| v.as_str())?;
            (v.starts_with("ATIF-v1") && o.get("steps").is_some_and(|s| s.is_array())).then_some(Kind::Atif)
        }
        Json::Array(a) => {
            let first = a.iter().find(|e| e.is_object())?;
            let o = first.as_object()?;
            (o.contains_key("task_id") && o.contains_key("traj")).then_some(Kind::TauBench)
        }
        _ => None,
    }
}

/// Whether the first bytes of a file look like a whole-trajectory document
/// (so a file need not be parsed twice to find out): a JSON list whose first
/// object has `task_id`, or an object with an ATIF `schema_version`.
pub fn sniff(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start();
    (t.starts_with('[') && text.contains("\"task_id\"")) || (t.starts_with('{') && text.contains("\"ATIF-v1"))
}

/// τ-bench's entry number `i`, or None (said to `warn`) when it cannot be read.
pub fn taubench_one(e: Json, i: usize, file: &str, warn: &mut dyn FnMut(String)) -> Option<Trajectory> {
    match taubench_entry(e, file) {
        Ok(mut t) => {
            t.at = format!("entry {i}");
            Some(t)
        }
        Err(why) => {
            warn(format!("{file}: entry {i}: {why}: not graded"));
            None
        }
    }
}

/// Whether a parsed element is one of τ-bench's entries (its first object says the file's kind).
pub fn is_taubench_entry(e: &Json) -> bool {
    e.as_object().is_some_and(|o| o.contains_key("task_id") && o.contains_key("traj"))
}

/// The trajectories of a document of `kind`; `warn` gets each entry that cannot be read.
pub fn read(doc: Json, kind: Kind, file: &str, warn: &mut dyn FnMut(String)) -> Vec<Trajectory> {
    match kind {
        Kind::TauBench => match doc {
            Json::Array(entries) => {
                entries.into_iter().enumerate().filter_map(|(i, e)| taubench_one(e, i, file, warn)).collect()
            }
            _ => Vec::new(),
        },
        Kind::Atif => match atif(doc, file) {
            Ok(t) => vec![t],
            Err(why) => {
                warn(format!("{file}: {why}: not graded"));
                Vec::new()
            }
        },
    }
}

fn text(v: Option<&Json>) -> String {
    match v {
        Some(Json::String(s)) => s.clone(),
        None | Some(Json::Null) => String::new(),
        Some(other) => other.to_string(),
    }
}

/// An ATIF `message` or result `content`: a string, or (v1.6) a list of
/// content parts whose text parts are joined (an image part has no text).
fn atif_text(v: Option<&Json>) -> String {
    match v {
        Some(Json::Array(parts)) => parts
            .iter()
            .filter(|p| p.get("type").and_then(|t| t.as_str()) == Some("text"))
            .filter_map(|p| p.get("text").and_then(|t| t.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        other => text(other),
    }
}

/// A tool call's arguments: a JSON object, or the text of one (OpenAI's form).
fn arguments(v: Option<&Json>, what: &str) -> Result<Json, String> {
    match v {
        None | Some(Json::Null) => Ok(Json::Object(Map::new())),
        Some(Json::String(s)) => match serde_json::from_str::<Json>(s) {
            Ok(j @ Json::Object(_)) => Ok(j),
            Ok(_) => Err(format!("{what}: arguments are JSON but not an object: {}", snippet(s))),
            Err(e) => Err(format!("{what}: arguments are not JSON ({e}): {}", snippet(s))),
        },
        Some(j @ Json::Object(_)) => Ok(j.clone()),
        Some(other) => Err(format!("{what}: arguments are not an object: {}", snippet(&other.to_string()))),
    }
}

fn snippet(s: &str) -> String {
    if s.chars().count() > 80 { format!("{}…", s.chars().take(80).collect::<String>()) } else { s.to_string() }
}

fn call(id: String, name: String, args: Json) -> CallRecord {
    CallRecord {
        id,
        requested_id: None,
        name,
        args,
        status: CallStatus::Executed,
        effect: None,
        result: None,
        error: None,
        error_type: None,
        started_ms: 0.0,
        ended_ms: 0.0,
        diverged: false,
        recorded: None,
    }
}

fn message(role: &str, content: String) -> Message {
    Message { role: role.into(), content, call_id: None }
}

/// The recorded conversation's input, answer and turns, from its messages.
fn finish(r: &mut Recorded) {
    r.input = r.messages.iter().find(|m| m.role == "user").map(|m| m.content.clone()).unwrap_or_default();
    r.answer = r.messages.iter().rev().find(|m| m.role == "agent").map(|m| m.content.clone()).unwrap_or_default();
    r.usage.turns = r.messages.iter().filter(|m| m.role == "agent").count() as u32;
    r.usage.tool_calls = r.calls.len() as u32;
    r.readable = true;
}

/// One entry of τ-bench's results.
fn taubench_entry(e: Json, file: &str) -> Result<Trajectory, String> {
    let Json::Object(mut o) = e else { return Err("not an object".into()) };
    let task_id = match o.get("task_id") {
        Some(Json::Number(n)) if n.as_u64().is_some() => n.as_u64().unwrap_or_default(),
        Some(other) => return Err(format!("task_id is not a task index: {other}")),
        None => return Err("no task_id".into()),
    };
    let trial = match o.get("trial") {
        Some(Json::Number(n)) if n.as_u64().is_some_and(|t| t < u32::MAX as u64) => {
            n.as_u64().unwrap_or_default() as u32
        }
        Some(other) => return Err(format!("task {task_id}: trial is not a number: {other}")),
        None => 0,
    };
    let key = format!("task {task_id} trial {trial}");
    let info = o.remove("info").unwrap_or(Json::Null);
    let Json::Object(mut info) = info else { return Err(format!("{key}: no info object")) };
    let task = match info.remove("task") {
        Some(t @ Json::Object(_)) => t,
        _ => return Err(format!("{key}: info.task is missing (the task the trial ran on)")),
    };
    let scored = !matches!(info.get("reward_info"), None | Some(Json::Null));
    let Some(Json::Array(traj)) = o.remove("traj") else { return Err(format!("{key}: no traj list")) };

    let mut r = Recorded::default();
    // tool_call_id → index in r.calls, for the tool messages that answer them.
    let mut by_id: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, m) in traj.iter().enumerate() {
        let Some(m) = m.as_object() else { return Err(format!("{key}: traj[{i}] is not a message")) };
        match m.get("role").and_then(|v| v.as_str()).unwrap_or("") {
            "system" => {}
            "user" => r.messages.push(message("user", text(m.get("content")))),
            "assistant" => {
                let calls = m.get("tool_calls").and_then(|c| c.as_array()).filter(|c| !c.is_empty());
                match calls {
                    // τ-bench acts on a message's first tool call (and keeps only it).
                    Some(calls) => {
                        let c = calls[0]
                            .as_object()
                            .ok_or_else(|| format!("{key}: traj[{i}].tool_calls[0] is not an object"))?;
                        let f = c.get("function").and_then(|f| f.as_object());
                        let name = f.and_then(|f| f.get("name")).and_then(|n| n.as_str()).unwrap_or("");
                        if name.is_empty() {
                            return Err(format!("{key}: traj[{i}]: a tool call without a function name"));
                        }
                        let what = format!("{key}: traj[{i}] ({name})");
                        let args = arguments(f.and_then(|f| f.get("arguments")), &what)?;
                        let id = c
                            .get("id")
                            .and_then(|v| v.as_str())
                            .map(str::to_string)
                            .unwrap_or_else(|| format!("c{}", r.calls.len() + 1));
                        by_id.insert(id.clone(), r.calls.len());
                        r.calls.push(call(id, name.to_string(), args));
                    }
                    None => r.messages.push(message("agent", text(m.get("content")))),
                }
            }
            "tool" => {
                let id = m.get("tool_call_id").and_then(|v| v.as_str()).unwrap_or("");
                let at = by_id.get(id).copied().or_else(|| r.calls.iter().rposition(|c| c.result.is_none()));
                if let Some(at) = at {
                    r.calls[at].result = Some(m.get("content").cloned().unwrap_or(Json::Null));
                }
            }
            other => return Err(format!("{key}: traj[{i}] has role {other:?}")),
        }
    }
    finish(&mut r);
    r.ended = Some(if scored { Ended::Final } else { Ended::Budget });
    if !scored {
        r.error = Some("τ-bench scored no reward (reward_info is null): the conversation hit its step limit".into());
    }
    let reward = o.get("reward").and_then(|v| v.as_f64());
    Ok(Trajectory {
        key: format!("task_{task_id}.{}", trial + 1),
        at: String::new(),
        file: file.to_string(),
        case: Some(format!("task_{task_id}")),
        trial: Some(trial + 1),
        recorded: r,
        task: Some(task),
        kind: Kind::TauBench,
        reward,
    })
}

/// An ATIF trajectory.
fn atif(doc: Json, file: &str) -> Result<Trajectory, String> {
    let Json::Object(mut o) = doc else { return Err("not an ATIF object".into()) };
    let session = o.get("session_id").and_then(|v| v.as_str()).map(str::to_string);
    let Some(session) = session.filter(|s| !s.is_empty()) else {
        return Err("ATIF: session_id is required".into());
    };
    let model = o.get("agent").and_then(|a| a.get("model_name")).and_then(|m| m.as_str()).map(str::to_string);
    let Some(Json::Array(steps)) = o.remove("steps") else { return Err(format!("ATIF {session}: steps is required")) };
    let mut r = Recorded { conversation_id: Some(session.clone()), ..Default::default() };
    let mut by_id: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, s) in steps.iter().enumerate() {
        let Some(s) = s.as_object() else { return Err(format!("ATIF {session}: steps[{i}] is not an object")) };
        let msg = atif_text(s.get("message"));
        match s.get("source").and_then(|v| v.as_str()).unwrap_or("") {
            "system" => {}
            "user" => r.messages.push(message("user", msg)),
            "agent" => {
                let calls = s.get("tool_calls").and_then(|c| c.as_array());
                if !msg.is_empty() && calls.is_none_or(|c| c.is_empty()) {
                    r.messages.push(message("agent", msg));
                }
                for (k, c) in calls.into_iter().flatten().enumerate() {
                    let what = format!("ATIF {session}: steps[{i}].tool_calls[{k}]");
                    let c = c.as_object().ok_or_else(|| format!("{what} is not an object"))?;
                    let name = c.get("function_name").and_then(|v| v.as_str()).unwrap_or("");
                    if name.is_empty() {
                        return Err(format!("{what}: function_name is required"));
                    }
                    let args = arguments(c.get("arguments"), &what)?;
                    let id = c
                        .get("tool_call_id")
                        .and_then(|v| v.as_str())
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("c{}", r.calls.len() + 1));
                    by_id.insert(id.clone(), r.calls.len());
                    r.calls.push(call(id, name.to_string(), args));
                }
                if let Some(m) = s.get("metrics").and_then(|m| m.as_object()) {
                    let n = |k: &str| m.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
                    r.usage.input_tokens += n("prompt_tokens");
                    r.usage.output_tokens += n("completion_tokens");
                    let cost = m.get("cost_usd").and_then(|v| v.as_f64());
                    if let Some(c) = cost {
                        r.usage.cost_usd += c;
                    }
                    r.model_calls.push(ModelCall {
                        by: "agent".into(),
                        model: s
                            .get("model_name")
                            .and_then(|v| v.as_str())
                            .map(str::to_string)
                            .or_else(|| model.clone())
                            .unwrap_or_default(),
                        input_tokens: n("prompt_tokens"),
                        output_tokens: n("completion_tokens"),
                        cost_usd: cost,
                        ..Default::default()
                    });
                }
            }
            other => return Err(format!("ATIF {session}: steps[{i}].source is {other:?}, not system, user or agent")),
        }
        // Observations: each result answers a tool call of this step (by source_call_id).
        let results = s.get("observation").and_then(|ob| ob.get("results")).and_then(|r| r.as_array());
        for res in results.into_iter().flatten() {
            let Some(id) = res.get("source_call_id").and_then(|v| v.as_str()) else { continue };
            if let Some(&at) = by_id.get(id) {
                r.calls[at].result = match res.get("content") {
                    None | Some(Json::Null) => Some(Json::Null),
                    c @ Some(Json::Array(_)) => Some(Json::String(atif_text(c))),
                    Some(c) => Some(c.clone()),
                };
            }
        }
    }
    // The trajectory's totals, when no step said its own.
    if r.model_calls.is_empty()
        && let Some(m) = o.get("final_metrics").and_then(|m| m.as_object())
    {
        let n = |k: &str| m.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
        r.usage.input_tokens = n("total_prompt_tokens");
        r.usage.output_tokens = n("total_completion_tokens");
        r.usage.cost_usd = m.get("total_cost_usd").and_then(|v| v.as_f64()).unwrap_or(0.0);
    }
    finish(&mut r);
    r.ended = Some(Ended::Final);
    Ok(Trajectory {
        at: format!("session {session}"),
        key: session,
        file: file.to_string(),
        case: None,
        trial: None,
        recorded: r,
        task: None,
        kind: Kind::Atif,
        reward: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warnings(doc: Json) -> (Vec<Trajectory>, Vec<String>) {
        let mut w = Vec::new();
        let kind = kind_of(&doc).expect("a known kind");
        let t = read(doc, kind, "f.json", &mut |m| w.push(m));
        (t, w)
    }

    #[test]
    fn a_taubench_entry_is_a_trial_of_its_task_with_its_calls_and_results() {
        let doc = serde_json::json!([{
            "task_id": 7, "trial": 1, "reward": 1.0,
            "info": { "task": { "user_id": "u", "actions": [], "instruction": "i", "outputs": [] },
                      "reward_info": { "reward": 1.0 } },
            "traj": [
                { "role": "system", "content": "policy" },
                { "role": "user", "content": "hi" },
                { "role": "assistant", "content": null, "tool_calls": [
                    { "id": "call_1", "type": "function", "function": { "name": "get_user_details", "arguments": "{\"user_id\": \"u\"}" } }] },
                { "role": "tool", "tool_call_id": "call_1", "name": "get_user_details", "content": "{\"a\": 1}" },
                { "role": "assistant", "content": "Done, 1,000 miles." },
                { "role": "user", "content": "###STOP###" }
            ]
        }]);
        let (t, w) = warnings(doc);
        assert!(w.is_empty(), "{w:?}");
        let t = &t[0];
        assert_eq!((t.case.as_deref(), t.trial), (Some("task_7"), Some(2)));
        assert_eq!(t.recorded.calls[0].args["user_id"], "u");
        assert_eq!(t.recorded.calls[0].result, Some(Json::String("{\"a\": 1}".into())));
        assert_eq!(t.recorded.answer, "Done, 1,000 miles.");
        assert_eq!(t.recorded.ended, Some(Ended::Final));
        assert_eq!(t.task.as_ref().unwrap()["user_id"], "u");
    }

    #[test]
    fn unscored_entries_ended_on_their_budget_and_bad_ones_are_warnings() {
        let doc = serde_json::json!([
            { "task_id": 1, "trial": 0, "info": { "task": {}, "reward_info": null }, "traj": [] },
            { "task_id": 2, "trial": 0, "info": { "task": {} }, "traj": [
                { "role": "assistant", "tool_calls": [{ "id": "x", "function": { "name": "t", "arguments": "{not json" } }] }] },
            { "task_id": "three", "traj": [] },
            { "task_id": 4, "trial": 0, "info": {}, "traj": [] }
        ]);
        let (t, w) = warnings(doc);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].recorded.ended, Some(Ended::Budget));
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].contains("entry 1") && w[0].contains("arguments are not JSON"), "{w:?}");
        assert!(w[1].contains("entry 2") && w[1].contains("task_id"), "{w:?}");
        assert!(w[2].contains("entry 3") && w[2].contains("info.task"), "{w:?}");
    }

    #[test]
    fn an_atif_trajectory_has_its_steps_calls_and_observations() {
        let doc = serde_json::json!({
            "schema_version": "ATIF-v1.4", "session_id": "s1",
            "agent": { "name": "a", "version": "1", "model_name": "m" },
            "steps": [
                { "step_id": 1, "source": "user", "message": "price of GOOGL?" },
                { "step_id": 2, "source": "agent", "message": "Searching.", "tool_calls": [
                    { "tool_call_id": "c1", "function_name": "search", "arguments": { "q": "GOOGL" } }],
                  "observation": { "results": [{ "source_call_id": "c1", "content": "185.35" }] },
                  "metrics": { "prompt_tokens": 10, "completion_tokens": 5, "cost_usd": 0.001 } },
                { "step_id": 3, "source": "agent", "message": "It is 185.35." }
            ]
        });
        let (t, w) = warnings(doc);
        assert!(w.is_empty(), "{w:?}");
        let r = &t[0].recorded;
        assert_eq!(r.input, "price of GOOGL?");
        assert_eq!(r.answer, "It is 185.35.");
        assert_eq!(r.calls[0].name, "search");
        assert_eq!(r.calls[0].result, Some(Json::String("185.35".into())));
        assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (10, 5));
    }

    #[test]
    fn atif_content_parts_are_read_as_text_and_final_metrics_give_the_usage() {
        let doc = serde_json::json!({
            "schema_version": "ATIF-v1.6", "session_id": "s2",
            "agent": { "name": "a", "version": "1" },
            "steps": [
                { "step_id": 1, "source": "user", "message": [
                    { "type": "text", "text": "What is in" },
                    { "type": "image", "source": { "media_type": "image/png", "path": "a.png" } },
                    { "type": "text", "text": "this picture?" }] },
                { "step_id": 2, "source": "agent", "message": "", "tool_calls": [
                    { "tool_call_id": "c1", "function_name": "look", "arguments": {} }],
                  "observation": { "results": [{ "source_call_id": "c1", "content": [{ "type": "text", "text": "a cat" }] }] } },
                { "step_id": 3, "source": "agent", "message": [{ "type": "text", "text": "A cat." }] }
            ],
            "final_metrics": { "total_prompt_tokens": 40, "total_completion_tokens": 9, "total_cost_usd": 0.5 }
        });
        let (t, w) = warnings(doc);
        assert!(w.is_empty(), "{w:?}");
        let r = &t[0].recorded;
        assert_eq!(r.input, "What is in\nthis picture?");
        assert_eq!(r.answer, "A cat.");
        assert_eq!(r.calls[0].result, Some(Json::String("a cat".into())));
        assert_eq!((r.usage.input_tokens, r.usage.output_tokens, r.usage.cost_usd), (40, 9, 0.5));
    }
}
