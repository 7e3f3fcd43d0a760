//! ATIF (Harbor's Agent Trajectory Interchange Format, RFC 0001,
//! v1.0 to v1.7, field names checked against the RFC's v1.4 text and the
//! later models): one trajectory per document, `{schema_version:
//! "ATIF-v1.N", session_id, agent: {name, version, model_name},
//! steps: [{step_id, source: system|user|agent, message, model_name,
//! tool_calls: [{tool_call_id, function_name, arguments}], observation:
//! {results: [{source_call_id, content}]}, metrics: {prompt_tokens,
//! completion_tokens, cost_usd}}], final_metrics: {total_prompt_tokens,
//! total_completion_tokens, total_cost_usd}}`. A `message` or a result's
//! `content` may be a list of content parts (v1.6: `{type: "text", text}` or
//! an image): its text parts are read. `final_metrics` gives the usage when
//! no step has `metrics`. What is not read: `reasoning_content`, token ids,
//! logprobs, `subagent_trajectory_ref` (a delegated trajectory is its own
//! file), `extra`.
//!
//! The document is parsed whole (one trajectory per file).

use serde_json::Value as Json;

use super::item::Recorded;
use super::trajectories::{Trajectory, TrajectoryFormat, arguments, call, finish, message, text};
use crate::error::Result;
use crate::record::{Ended, ModelCall};

/// Harbor's ATIF.
pub struct Atif;

impl TrajectoryFormat for Atif {
    fn name(&self) -> &'static str {
        "atif"
    }

    fn describe(&self) -> &'static str {
        "an ATIF trajectory (schema_version ATIF-v1.x, steps)"
    }

    fn claims(&self, head: &[u8]) -> bool {
        let text = String::from_utf8_lossy(head);
        text.trim_start().starts_with('{') && text.contains("\"ATIF-v1")
    }

    fn reexecutes(&self) -> bool {
        false
    }

    fn read(
        &self,
        data: &[u8],
        file: &str,
        warn: &mut dyn FnMut(String),
        emit: &mut dyn FnMut(Trajectory) -> Result<()>,
    ) -> Result<bool> {
        if let Some(why) = super::stream::dense(data) {
            warn(format!("{file}: {why}: not read"));
            return Ok(true);
        }
        let doc: Json = match serde_json::from_slice(data) {
            Ok(d) => d,
            Err(e) => {
                warn(format!("{file}: not JSON ({e}): not read"));
                return Ok(true);
            }
        };
        let is_atif = doc.get("schema_version").and_then(|v| v.as_str()).is_some_and(|v| v.starts_with("ATIF-v1"))
            && doc.get("steps").is_some_and(|s| s.is_array());
        if !is_atif {
            return Ok(false);
        }
        match atif(doc, file) {
            Ok(t) => emit(t)?,
            Err(why) => warn(format!("{file}: {why}: not graded")),
        }
        Ok(true)
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

/// An ATIF trajectory.
fn atif(doc: Json, file: &str) -> std::result::Result<Trajectory, String> {
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
        format: Atif.name(),
        reexecute: false,
        verdict: None,
        suite: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warnings(doc: Json) -> (Vec<Trajectory>, Vec<String>) {
        let (mut w, mut t) = (Vec::new(), Vec::new());
        let data = serde_json::to_vec(&doc).unwrap();
        assert!(Atif.claims(&data));
        let mine = Atif
            .read(&data, "f.json", &mut |m| w.push(m), &mut |x| {
                t.push(x);
                Ok(())
            })
            .unwrap();
        assert!(mine);
        (t, w)
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
