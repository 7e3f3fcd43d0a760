//! OpenAI-compatible Chat Completions: request body and response parsing.
//!
//! Quirks absorbed here, shared by several servers (llama.cpp's among them):
//! an assistant message with tool calls is sent with `content: ""`, never
//! `null` (answered with HTTP 500 otherwise); `response_format` of type
//! `json_schema` may be refused with a 400, and the caller then falls back to
//! `json_object` with the schema in the prompt (see [`refuses_json_schema`]);
//! `tool_choice: "auto"` is sent explicitly with tools (llama-cpp-python's
//! server leaves the tools out of the prompt without it); and a tool call's
//! `arguments` go back as a JSON object even when the model's were not JSON
//! (llama.cpp parses them, and answers 500 otherwise; see
//! [`ToolCall::arguments_object`]).

use serde_json::{Value as Json, json};

use super::types::{
    ChatRequest, ChatResponse, Endpoint, Message, ModelError, Role, Strategy, ToolCall, Usage, snippet,
};

pub fn body(ep: &Endpoint, req: &ChatRequest, strategy: Option<Strategy>) -> Json {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    let mut system = req.system.clone();
    if let (Some(Strategy::JsonObject), Some(s)) = (strategy, &req.structured) {
        let extra = format!(
            "Answer with one JSON object only, no other text, that validates against this JSON schema:\n{}",
            s.schema
        );
        system = Some(match system {
            Some(sys) => format!("{sys}\n\n{extra}"),
            None => extra,
        });
    }
    if let Some(sys) = system {
        messages.push(json!({ "role": "system", "content": sys }));
    }
    messages.extend(req.messages.iter().map(message));
    let mut b = json!({ "model": ep.model, "messages": messages });
    if !req.tools.is_empty() {
        b["tools"] = req
            .tools
            .iter()
            .map(|t| {
                json!({ "type": "function",
                        "function": { "name": t.name, "description": t.description, "parameters": t.parameters } })
            })
            .collect();
        // OpenAI's default, but llama.cpp's Python server (chatml-function-calling)
        // drops the tools from the prompt unless `tool_choice` is given.
        b["tool_choice"] = json!("auto");
    }
    if let Some(t) = req.temperature {
        b["temperature"] = json!(t);
    }
    if let Some(s) = req.seed {
        b["seed"] = json!(s);
    }
    if let Some(m) = req.max_tokens {
        b["max_tokens"] = json!(m);
    }
    if let Some(s) = &req.structured {
        match strategy {
            Some(Strategy::JsonObject) => {
                // `schema` beside `json_object` is llama.cpp's extension (it
                // turns it into a grammar); other servers ignore it.
                b["response_format"] = json!({ "type": "json_object", "schema": s.schema });
            }
            _ => {
                b["response_format"] = json!({ "type": "json_schema",
                    "json_schema": { "name": s.name, "schema": s.schema, "strict": true } });
            }
        }
    }
    b
}

fn message(m: &Message) -> Json {
    match m.role {
        Role::System => json!({ "role": "system", "content": m.content }),
        Role::User => json!({ "role": "user", "content": m.content }),
        Role::Assistant if m.tool_calls.is_empty() => json!({ "role": "assistant", "content": m.content }),
        Role::Assistant => {
            let calls: Vec<Json> = m
                .tool_calls
                .iter()
                .map(|c| {
                    let args = c.arguments_object().to_string();
                    json!({ "id": c.id, "type": "function", "function": { "name": c.name, "arguments": args } })
                })
                .collect();
            // Never `null` beside tool_calls: some servers answer that with a 500.
            json!({ "role": "assistant", "content": m.content, "tool_calls": calls })
        }
        Role::Tool => json!({ "role": "tool", "tool_call_id": m.tool_call_id.clone().unwrap_or_default(),
                              "content": m.content }),
    }
}

/// Does a 400's message say the server refuses `json_schema` structured output?
pub fn refuses_json_schema(msg: &str) -> bool {
    let m = msg.to_ascii_lowercase();
    m.contains("response_format") || m.contains("json_schema") || m.contains("response format")
}

pub fn parse(raw: &str, _req: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let v: Json = serde_json::from_str(raw)
        .map_err(|e| ModelError::Malformed(format!("the body is not JSON ({e}): {}", snippet(raw))))?;
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| ModelError::Malformed(format!("no choices[0] in the answer: {}", snippet(raw))))?;
    let msg = choice
        .get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| ModelError::Malformed(format!("no choices[0].message in the answer: {}", snippet(raw))))?;
    let text = match msg.get("content") {
        Some(Json::String(s)) => Some(s.clone()),
        Some(Json::Null) | None => None,
        // Some servers send content parts.
        Some(Json::Array(parts)) => Some(parts.iter().filter_map(|p| p.get("text").and_then(|t| t.as_str())).collect()),
        Some(other) => return Err(ModelError::Malformed(format!("message.content is {other}"))),
    };
    let mut tool_calls = Vec::new();
    if let Some(calls) = msg.get("tool_calls").filter(|c| !c.is_null()) {
        let calls = calls.as_array().ok_or_else(|| {
            ModelError::Malformed(format!("tool_calls is not a list: {}", snippet(&calls.to_string())))
        })?;
        for (i, c) in calls.iter().enumerate() {
            let f = c.get("function").ok_or_else(|| {
                ModelError::Malformed(format!("tool_calls[{i}] has no function: {}", snippet(&c.to_string())))
            })?;
            let name = f.get("name").and_then(|n| n.as_str()).unwrap_or("").to_string();
            let arguments = match f.get("arguments") {
                Some(Json::String(s)) if s.trim().is_empty() => json!({}),
                Some(Json::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| Json::String(s.clone())),
                Some(Json::Null) | None => json!({}),
                Some(other) => other.clone(),
            };
            let id = c
                .get("id")
                .and_then(|i| i.as_str())
                .filter(|s| !s.is_empty())
                .map(String::from)
                .unwrap_or_else(|| format!("call_{}", i + 1));
            tool_calls.push(ToolCall { id, name, arguments });
        }
    }
    let u = v.get("usage");
    let n = |k: &str| u.and_then(|u| u.get(k)).and_then(|x| x.as_u64()).unwrap_or(0);
    let usage = Usage { input_tokens: n("prompt_tokens"), output_tokens: n("completion_tokens") };
    let refusal = msg.get("refusal").and_then(|r| r.as_str()).filter(|s| !s.is_empty()).map(String::from);
    let finish_reason = choice.get("finish_reason").and_then(|f| f.as_str()).unwrap_or("").to_string();
    Ok(ChatResponse::parsed(text, tool_calls, usage, finish_reason, refusal))
}

#[cfg(test)]
mod tests {
    use super::super::types::{Provider, Structured, ToolSchema};
    use super::*;

    fn ep() -> Endpoint {
        Endpoint::new(Provider::OpenAI, "http://x/v1", "m")
    }

    #[test]
    fn tool_call_turn_sends_empty_content_not_null() {
        let req = ChatRequest {
            messages: vec![
                Message::user("hi"),
                Message::assistant("", vec![ToolCall { id: "c1".into(), name: "f".into(), arguments: json!({"a":1}) }]),
                Message::tool("c1", "{\"ok\":true}"),
            ],
            tools: vec![ToolSchema { name: "f".into(), description: "d".into(), parameters: json!({"type":"object"}) }],
            seed: Some(7),
            temperature: Some(0.0),
            ..Default::default()
        };
        let b = body(&ep(), &req, None);
        assert_eq!(b["messages"][1]["content"], json!(""));
        assert_eq!(b["messages"][1]["tool_calls"][0]["function"]["arguments"], json!("{\"a\":1}"));
        assert_eq!(b["messages"][2]["tool_call_id"], json!("c1"));
        assert_eq!(b["seed"], json!(7));
        assert_eq!(b["temperature"], json!(0.0));
        assert_eq!(b["tools"][0]["function"]["name"], json!("f"));
        assert_eq!(b["tool_choice"], json!("auto"));
    }

    #[test]
    fn structured_strategies() {
        let req = ChatRequest {
            messages: vec![Message::user("x")],
            structured: Some(Structured { name: "verdict".into(), schema: json!({"type":"object"}) }),
            ..Default::default()
        };
        let b = body(&ep(), &req, Some(Strategy::JsonSchema));
        assert_eq!(b["response_format"]["type"], json!("json_schema"));
        let b = body(&ep(), &req, Some(Strategy::JsonObject));
        assert_eq!(b["response_format"]["type"], json!("json_object"));
        assert!(b["messages"][0]["content"].as_str().unwrap().contains("JSON schema"));
    }

    #[test]
    fn parses_tool_calls_and_usage() {
        let raw = r#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
            {"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":2}"}},
            {"type":"function","function":{"name":"g","arguments":"not json"}}]},"finish_reason":"tool_calls"}],
            "usage":{"prompt_tokens":10,"completion_tokens":3}}"#;
        let r = parse(raw, &ChatRequest::default()).unwrap();
        assert_eq!(r.text, None);
        assert_eq!(r.tool_calls[0].arguments, json!({"x":2}));
        assert_eq!(r.tool_calls[1].id, "call_2");
        assert_eq!(r.tool_calls[1].arguments, json!("not json"));
        assert_eq!(r.usage, Usage { input_tokens: 10, output_tokens: 3 });
        assert_eq!(r.finish_reason, "tool_calls");
    }

    #[test]
    fn malformed_bodies() {
        assert!(matches!(parse("{not json", &ChatRequest::default()), Err(ModelError::Malformed(_))));
        assert!(matches!(parse("{\"choices\":[]}", &ChatRequest::default()), Err(ModelError::Malformed(_))));
    }
}
