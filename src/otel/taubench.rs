//! τ-bench's results as whole trajectories (`run.py`'s output, and its
//! published `historical_trajectories/`): a JSON list of `{task_id, trial,
//! reward, info: {task, reward_info}, traj}`, `traj` an OpenAI chat
//! transcript. Each entry is trial `trial + 1` of case `task_<task_id>`,
//! carrying the task it ran on (graded against that, not the suite's copy);
//! an entry τ-bench never scored (`reward_info: null`: its step limit) ended
//! on its budget. Re-execution is on for these (SPEC §14). The list is read
//! one entry at a time, never whole as values.

use serde_json::Value as Json;

use super::item::Recorded;
use super::trajectories::{Trajectory, TrajectoryFormat, arguments, call, finish, message, text};
use crate::error::{Error, Result};
use crate::record::Ended;

/// τ-bench's results.
pub struct TauBench;

impl TrajectoryFormat for TauBench {
    fn name(&self) -> &'static str {
        "taubench_results"
    }

    fn describe(&self) -> &'static str {
        "τ-bench's results (a list of {task_id, trial, info, traj})"
    }

    fn claims(&self, head: &[u8]) -> bool {
        let text = String::from_utf8_lossy(head);
        text.trim_start().starts_with('[') && text.contains("\"task_id\"")
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
        enum Stop {
            Neither,
            Failed(Error),
        }
        let (mut known, mut not_objects) = (false, 0usize);
        let mut each = |i: usize, raw: &serde_json::value::RawValue| -> std::result::Result<(), Stop> {
            if let Some(why) = super::stream::dense(raw.get().as_bytes()) {
                warn(format!("{file}: entry {i}: {why}: not graded"));
                return Ok(());
            }
            let Ok(e) = serde_json::from_str::<Json>(raw.get()) else { return Ok(()) };
            if !e.is_object() {
                // Counted, said once below: not a warning per element.
                not_objects += 1;
                return Ok(());
            }
            if !known {
                if !is_entry(&e) {
                    return Err(Stop::Neither);
                }
                known = true;
            }
            if let Some(t) = one(e, i, file, warn) {
                emit(t).map_err(Stop::Failed)?;
            }
            Ok(())
        };
        let mine = match super::stream::each_element(data, &mut each) {
            Ok(Ok(())) => known,
            Ok(Err(Stop::Neither)) => false,
            Ok(Err(Stop::Failed(e))) => return Err(e),
            Err(e) => {
                warn(format!("{file}: not JSON ({e}): read up to there"));
                true
            }
        };
        if not_objects > 0 {
            warn(format!("{file}: {not_objects} entries are not objects: not graded"));
        }
        Ok(mine)
    }
}

/// τ-bench's entry number `i`, or None (said to `warn`) when it cannot be read.
pub fn one(e: Json, i: usize, file: &str, warn: &mut dyn FnMut(String)) -> Option<Trajectory> {
    match entry(e, file) {
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
fn is_entry(e: &Json) -> bool {
    e.as_object().is_some_and(|o| o.contains_key("task_id") && o.contains_key("traj"))
}

/// One entry of τ-bench's results.
fn entry(e: Json, file: &str) -> std::result::Result<Trajectory, String> {
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
    let verdict = o.get("reward").and_then(|v| v.as_f64()).map(|r| serde_json::json!({ "reward": r }));
    Ok(Trajectory {
        key: format!("task_{task_id}.{}", trial + 1),
        at: String::new(),
        file: file.to_string(),
        case: Some(format!("task_{task_id}")),
        trial: Some(trial + 1),
        recorded: r,
        task: Some(task),
        format: TauBench.name(),
        reexecute: true,
        verdict,
        suite: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warnings(doc: Json) -> (Vec<Trajectory>, Vec<String>) {
        let (mut w, mut t) = (Vec::new(), Vec::new());
        let data = serde_json::to_vec(&doc).unwrap();
        assert!(TauBench.claims(&data));
        let mine = TauBench
            .read(&data, "f.json", &mut |m| w.push(m), &mut |x| {
                t.push(x);
                Ok(())
            })
            .unwrap();
        assert!(mine);
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
}
