//! Anthropic Messages: request body and response parsing.
//!
//! Tool results travel as `tool_result` blocks in a user turn; consecutive
//! turns of one role are merged (the API wants user and assistant turns to
//! alternate). Structured output is a forced tool whose input schema is the
//! wanted schema; its input comes back as the response's text. Anthropic has
//! no seed: it is not sent.

use serde_json::{Value as Json, json};

use super::types::{ChatRequest, ChatResponse, Endpoint, ModelError, Role, ToolCall, Usage, snippet};

/// Anthropic requires `max_tokens`; this is used when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

pub fn body(ep: &Endpoint, req: &ChatRequest) -> Json {
    let mut system: Vec<String> = req.system.iter().cloned().collect();
    let mut turns: Vec<(&'static str, Vec<Json>)> = Vec::new();
    for m in &req.messages {
        let (role, blocks) = match m.role {
            Role::System => {
                system.push(m.content.clone());
                continue;
            }
            Role::User => ("user", vec![json!({ "type": "text", "text": m.content })]),
            Role::Tool => (
                "user",
                vec![json!({ "type": "tool_result", "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                             "content": m.content })],
            ),
            Role::Assistant => {
                let mut b = Vec::new();
                if !m.content.is_empty() {
                    b.push(json!({ "type": "text", "text": m.content }));
                }
                for c in &m.tool_calls {
                    let input = c.arguments_object();
                    b.push(json!({ "type": "tool_use", "id": c.id, "name": c.name, "input": input }));
                }
                if b.is_empty() {
                    b.push(json!({ "type": "text", "text": "" }));
                }
                ("assistant", b)
            }
        };
        match turns.last_mut() {
            Some((r, prev)) if *r == role => prev.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let messages: Vec<Json> =
        turns.into_iter().map(|(role, content)| json!({ "role": role, "content": content })).collect();
    let mut b = json!({
        "model": ep.model,
        "max_tokens": req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
    });
    if !system.is_empty() {
        b["system"] = json!(system.join("\n\n"));
    }
    if let Some(t) = req.temperature {
        b["temperature"] = json!(t);
    }
    let mut tools: Vec<Json> = req
        .tools
        .iter()
        .map(|t| json!({ "name": t.name, "description": t.description, "input_schema": t.parameters }))
        .collect();
    if let Some(s) = &req.structured {
        tools.push(json!({ "name": s.name, "description": "Give your answer by calling this tool.",
                           "input_schema": s.schema }));
        b["tool_choice"] = json!({ "type": "tool", "name": s.name });
    }
    if !tools.is_empty() {
        b["tools"] = Json::Array(tools);
    }
    b
}

pub fn parse(raw: &str, req: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let v: Json = serde_json::from_str(raw)
        .map_err(|e| ModelError::Malformed(format!("the body is not JSON ({e}): {}", snippet(raw))))?;
    let content = v
        .get("content")
        .and_then(|c| c.as_array())
        .ok_or_else(|| ModelError::Malformed(format!("no content list in the answer: {}", snippet(raw))))?;
    let structured = req.structured.as_ref().map(|s| s.name.as_str());
    let mut text: Option<String> = None;
    let mut tool_calls = Vec::new();
    let mut answer: Option<String> = None;
    for (i, block) in content.iter().enumerate() {
        match block.get("type").and_then(|t| t.as_str()) {
            Some("text") => {
                let t = block.get("text").and_then(|t| t.as_str()).unwrap_or("");
                text.get_or_insert_with(String::new).push_str(t);
            }
            Some("tool_use") => {
                let name = block.get("name").and_then(|n| n.as_str()).unwrap_or("").to_string();
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                if Some(name.as_str()) == structured {
                    answer = Some(input.to_string());
                    continue;
                }
                let id = block
                    .get("id")
                    .and_then(|i| i.as_str())
                    .map(String::from)
                    .unwrap_or_else(|| format!("toolu_{}", i + 1));
                tool_calls.push(ToolCall { id, name, arguments: input });
            }
            _ => {}
        }
    }
    if structured.is_some() {
        text = answer;
    }
    let stop = v.get("stop_reason").and_then(|s| s.as_str()).unwrap_or("").to_string();
    let refusal = (stop == "refusal").then(|| text.clone().unwrap_or_else(|| "the model refused".into()));
    let u = v.get("usage");
    let n = |k: &str| u.and_then(|u| u.get(k)).and_then(|x| x.as_u64()).unwrap_or(0);
    let usage = Usage {
        input_tokens: n("input_tokens") + n("cache_read_input_tokens") + n("cache_creation_input_tokens"),
        output_tokens: n("output_tokens"),
    };
    Ok(ChatResponse::parsed(text, tool_calls, usage, stop, refusal))
}

#[cfg(test)]
mod tests {
    use super::super::types::{Message, Provider, Structured};
    use super::*;

    #[test]
    fn tool_results_merge_into_one_user_turn() {
        let ep = Endpoint::new(Provider::Anthropic, "http://x", "claude");
        let req = ChatRequest {
            system: Some("sys".into()),
            messages: vec![
                Message::user("hi"),
                Message::assistant(
                    "",
                    vec![
                        ToolCall { id: "a".into(), name: "f".into(), arguments: json!({}) },
                        ToolCall { id: "b".into(), name: "f".into(), arguments: json!({}) },
                    ],
                ),
                Message::tool("a", "1"),
                Message::tool("b", "2"),
            ],
            seed: Some(3),
            ..Default::default()
        };
        let b = body(&ep, &req);
        assert_eq!(b["system"], json!("sys"));
        assert_eq!(b["messages"].as_array().unwrap().len(), 3);
        assert_eq!(b["messages"][2]["content"].as_array().unwrap().len(), 2);
        assert!(b.get("seed").is_none());
    }

    #[test]
    fn forced_tool_answer_becomes_text() {
        let req = ChatRequest {
            structured: Some(Structured { name: "verdict".into(), schema: json!({"type":"object"}) }),
            ..Default::default()
        };
        let raw = r#"{"content":[{"type":"tool_use","id":"t","name":"verdict","input":{"ok":true}}],
                      "stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":2}}"#;
        let r = parse(raw, &req).unwrap();
        assert_eq!(r.text.as_deref(), Some("{\"ok\":true}"));
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.usage.input_tokens, 5);
    }
}
