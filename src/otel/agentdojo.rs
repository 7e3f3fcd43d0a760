//! AgentDojo's run logs as whole trajectories (SPEC §21): its benchmark writes
//! one JSON file per task, `<pipeline>/<suite>/<user_task>/<attack or
//! none>/<injection_task or none>.json`, holding `{suite_name, pipeline_name,
//! user_task_id, injection_task_id, attack_type, injections, messages, error,
//! utility, security, …}`. Each log is an item of case `<user_task>` (no
//! injection task) or `<user_task>+<injection_task>`, re-executed (SPEC §14):
//! its recorded calls run again on a fresh sandbox of that case, and the
//! suite's checks (AgentDojo's utility and security functions, ported) decide.
//! The utility and security AgentDojo recorded travel with the item as its
//! `source.verdict`, which `evalua grade` sets against its own.
//!
//! A message's content is AgentDojo's list of blocks (`{type: "text",
//! content}`), or text in logs of older versions. A tool's result is the YAML
//! text AgentDojo's formatter made of it, which evalua's port does not
//! reproduce (its tools return JSON values): a re-executed call is marked
//! diverged only when one of the two failed and the other did not.

use serde_json::{Map, Value as Json, json};

use super::item::Recorded;
use super::trajectories::{Trajectory, TrajectoryFormat, call, finish, message, snippet};
use crate::error::Result;
use crate::record::{CallStatus, Ended};

/// AgentDojo's run logs.
pub struct AgentDojo;

impl TrajectoryFormat for AgentDojo {
    fn name(&self) -> &'static str {
        "agentdojo_log"
    }

    fn describe(&self) -> &'static str {
        "an AgentDojo run log ({suite_name, user_task_id, messages, …})"
    }

    fn claims(&self, head: &[u8]) -> bool {
        let text = String::from_utf8_lossy(head);
        text.trim_start().starts_with('{') && text.contains("\"suite_name\"") && text.contains("\"user_task_id\"")
    }

    fn reexecutes(&self) -> bool {
        true
    }

    fn read(
        &self,
        data: &[u8],
        file: &str,
        warn: &mut dyn FnMut(String),
        emit: &mut dyn FnMut(Trajectory) -> Result<()>,
    ) -> Result<bool> {
        let doc: Json = match serde_json::from_slice(data) {
            Ok(d) => d,
            Err(e) => {
                warn(format!("{file}: not JSON ({e}): not graded"));
                return Ok(true);
            }
        };
        let Json::Object(o) = doc else { return Ok(false) };
        if !o.contains_key("user_task_id") || !o.contains_key("messages") {
            return Ok(false);
        }
        match log(o, file) {
            Ok(t) => emit(t)?,
            Err(why) => warn(format!("{file}: {why}: not graded")),
        }
        Ok(true)
    }
}

/// A text field that must be a non-empty id of letters, digits, `_`, `-`, `.`.
fn id_field(o: &Map<String, Json>, key: &str) -> std::result::Result<Option<String>, String> {
    match o.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) if s == "none" => Ok(None),
        Some(Json::String(s))
            if !s.is_empty() && s.len() <= 200 && s.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)) =>
        {
            Ok(Some(s.clone()))
        }
        Some(other) => Err(format!("{key} is not a task id: {}", snippet(&other.to_string()))),
    }
}

/// A message's text: AgentDojo's content blocks joined, or the text itself.
fn content_text(v: Option<&Json>) -> String {
    match v {
        Some(Json::String(s)) => s.clone(),
        Some(Json::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| match b {
                Json::String(s) => Some(s.as_str()),
                Json::Object(o) => o.get("content").or_else(|| o.get("text")).and_then(|c| c.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn verdict(o: &Map<String, Json>) -> Option<Json> {
    let b = |k: &str| o.get(k).and_then(|v| v.as_bool());
    let (utility, security) = (b("utility"), b("security"));
    if utility.is_none() && security.is_none() {
        return None;
    }
    Some(json!({ "utility": utility, "security": security }))
}

/// One AgentDojo log.
fn log(o: Map<String, Json>, file: &str) -> std::result::Result<Trajectory, String> {
    let user_task = id_field(&o, "user_task_id")?.ok_or("no user_task_id")?;
    let injection_task = id_field(&o, "injection_task_id")?;
    let case = match &injection_task {
        Some(it) => format!("{user_task}+{it}"),
        None => user_task.clone(),
    };
    let text_of = |k: &str| o.get(k).and_then(|v| v.as_str()).unwrap_or("?").to_string();
    let key = format!(
        "{}/{}/{}/{}/{}",
        text_of("pipeline_name"),
        text_of("suite_name"),
        user_task,
        o.get("attack_type").and_then(|v| v.as_str()).unwrap_or("none"),
        injection_task.as_deref().unwrap_or("none")
    );
    let Some(Json::Array(messages)) = o.get("messages") else { return Err(format!("{key}: no messages list")) };

    let mut r = Recorded::default();
    let mut by_id: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut last_assistant = None;
    for (i, m) in messages.iter().enumerate() {
        let Some(m) = m.as_object() else { return Err(format!("{key}: messages[{i}] is not a message")) };
        last_assistant = None;
        match m.get("role").and_then(|v| v.as_str()).unwrap_or("") {
            "system" => {}
            "user" => r.messages.push(message("user", content_text(m.get("content")))),
            "assistant" => {
                let said = content_text(m.get("content"));
                let calls = m.get("tool_calls").and_then(|c| c.as_array()).filter(|c| !c.is_empty());
                for (j, c) in calls.into_iter().flatten().enumerate() {
                    let c = c
                        .as_object()
                        .ok_or_else(|| format!("{key}: messages[{i}].tool_calls[{j}] is not an object"))?;
                    let name = c.get("function").and_then(|n| n.as_str()).unwrap_or("");
                    if name.is_empty() {
                        return Err(format!("{key}: messages[{i}].tool_calls[{j}] names no function"));
                    }
                    let args = match c.get("args") {
                        None | Some(Json::Null) => Json::Object(Map::new()),
                        Some(a @ Json::Object(_)) => a.clone(),
                        Some(other) => {
                            return Err(format!(
                                "{key}: messages[{i}] ({name}): args is not an object: {}",
                                snippet(&other.to_string())
                            ));
                        }
                    };
                    let id = c
                        .get("id")
                        .and_then(|v| v.as_str())
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("c{}", r.calls.len() + 1));
                    by_id.insert(id.clone(), r.calls.len());
                    r.calls.push(call(id, name.to_string(), args));
                }
                if calls.is_none() || !said.is_empty() {
                    r.messages.push(message("agent", said.clone()));
                }
                last_assistant = Some(said);
            }
            "tool" => {
                let id = m.get("tool_call_id").and_then(|v| v.as_str()).unwrap_or("");
                let at = by_id
                    .get(id)
                    .copied()
                    .or_else(|| r.calls.iter().position(|c| c.result.is_none() && c.error.is_none()));
                if let Some(at) = at {
                    match m.get("error").and_then(|e| e.as_str()) {
                        Some(e) => {
                            r.calls[at].status = CallStatus::Failed;
                            r.calls[at].error = Some(e.to_string());
                        }
                        None => r.calls[at].result = Some(Json::String(content_text(m.get("content")))),
                    }
                }
            }
            other => return Err(format!("{key}: messages[{i}] has role {other:?}")),
        }
    }
    finish(&mut r);
    // AgentDojo's model output is the last message's content when an assistant wrote it.
    r.answer = last_assistant.unwrap_or_default();
    r.ended = Some(Ended::Final);
    r.error = o.get("error").and_then(|e| e.as_str()).map(str::to_string);
    r.opaque_results = true;
    Ok(Trajectory {
        at: key.clone(),
        key,
        file: file.to_string(),
        case: Some(case),
        trial: None,
        recorded: r,
        task: None,
        format: AgentDojo.name(),
        reexecute: true,
        verdict: verdict(&o),
        suite: o.get("suite_name").and_then(|s| s.as_str()).map(|s| format!("agentdojo-{s}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(doc: Json) -> (Vec<Trajectory>, Vec<String>) {
        let (mut w, mut t) = (Vec::new(), Vec::new());
        let data = serde_json::to_vec_pretty(&doc).unwrap();
        assert!(AgentDojo.claims(&data));
        AgentDojo
            .read(&data, "log.json", &mut |m| w.push(m), &mut |x| {
                t.push(x);
                Ok(())
            })
            .unwrap();
        (t, w)
    }

    fn text(s: &str) -> Json {
        json!([{ "type": "text", "content": s }])
    }

    #[test]
    fn a_log_is_an_item_of_its_pair_with_its_calls_answer_and_verdict() {
        let call = json!({ "function": "send_money", "args": { "amount": 10 }, "id": null, "placeholder_args": null });
        let (t, w) = read(json!({
            "suite_name": "banking", "pipeline_name": "gt", "user_task_id": "user_task_0",
            "injection_task_id": "injection_task_4", "attack_type": "important_instructions",
            "injections": {}, "error": null, "utility": true, "security": false,
            "messages": [
                { "role": "system", "content": text("sys") },
                { "role": "user", "content": text("pay the bill") },
                { "role": "assistant", "content": text(""), "tool_calls": [call] },
                { "role": "tool", "content": text("message: sent"), "tool_call_id": null, "tool_call": call, "error": null },
                { "role": "assistant", "content": text("done"), "tool_calls": null },
            ],
        }));
        assert!(w.is_empty(), "{w:?}");
        let t = &t[0];
        assert_eq!(t.case.as_deref(), Some("user_task_0+injection_task_4"));
        assert_eq!(t.key, "gt/banking/user_task_0/important_instructions/injection_task_4");
        assert_eq!(t.recorded.calls.len(), 1);
        assert_eq!(t.recorded.calls[0].args, json!({ "amount": 10 }));
        assert_eq!(t.recorded.calls[0].result, Some(json!("message: sent")));
        assert_eq!(t.recorded.answer, "done");
        assert_eq!(t.recorded.input, "pay the bill");
        assert_eq!(t.verdict, Some(json!({ "utility": true, "security": false })));
    }

    #[test]
    fn a_failed_call_keeps_its_error_and_a_user_task_log_names_its_user_task() {
        let call = json!({ "function": "read_file", "args": {} });
        let (t, _) = read(json!({
            "suite_name": "banking", "pipeline_name": "p", "user_task_id": "user_task_3",
            "injection_task_id": null, "attack_type": null, "utility": false, "security": true,
            "messages": [
                { "role": "user", "content": "q" },
                { "role": "assistant", "content": null, "tool_calls": [call] },
                { "role": "tool", "content": "", "tool_call_id": null, "error": "ValidationError: file_path" },
            ],
        }));
        let t = &t[0];
        assert_eq!(t.case.as_deref(), Some("user_task_3"));
        assert_eq!(t.recorded.calls[0].status, CallStatus::Failed);
        assert_eq!(t.recorded.calls[0].error.as_deref(), Some("ValidationError: file_path"));
        // The last message is a tool's: AgentDojo's model output is empty.
        assert_eq!(t.recorded.answer, "");
    }

    #[test]
    fn a_task_id_that_is_not_an_id_is_a_warning_not_an_item() {
        let (t, w) = read(json!({
            "suite_name": "banking", "pipeline_name": "p", "user_task_id": "../../etc",
            "injection_task_id": null, "messages": [],
        }));
        assert!(t.is_empty());
        assert!(w[0].contains("user_task_id is not a task id"), "{w:?}");
    }
}
