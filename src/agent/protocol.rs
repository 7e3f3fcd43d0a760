//! The JSON Lines protocol of command agents (SPEC §4), agent → host side:
//! one line in, one typed message out, or why the line breaks the protocol.
//! Pure (no I/O, no trial), so it can be fuzzed on its own
//! (`fuzz/fuzz_targets/protocol_line.rs`).

use serde_json::{Value as Json, json};

/// A message an agent sent.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentMessage {
    /// `{"type":"tool_call","id":…,"name":…,"arguments":{…}}`; a missing
    /// name is the empty name (the executor rejects it as unknown), missing
    /// arguments are `{}`.
    ToolCall { id: Option<String>, name: String, arguments: Json },
    /// `{"type":"usage","input_tokens":…,"output_tokens":…,"cost_usd":…}`.
    Usage { input_tokens: u64, output_tokens: u64, cost_usd: f64 },
    /// `{"type":"message","content":"…"}`: a turn to the user.
    Message { content: String },
    /// `{"type":"final","content":…}`: the answer (a non-string content is
    /// kept as its JSON text). `"abstain": true`: the agent declines the
    /// task, and `content` is its reason (SPEC §22).
    Final { content: String, abstain: bool },
}

/// How much of an offending line an error quotes.
const QUOTE: usize = 200;

/// The start of a line, for an error message.
pub fn quote(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let s = s.trim_end();
    if s.chars().count() > QUOTE { format!("{}…", s.chars().take(QUOTE).collect::<String>()) } else { s.to_string() }
}

/// Read one line the agent printed: `Ok(None)` for a blank line, the message,
/// or `Err(why)` (a protocol error, quoting the line).
pub fn parse_line(bytes: &[u8]) -> Result<Option<AgentMessage>, String> {
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(None);
    }
    let msg: Json = match serde_json::from_slice(bytes) {
        Ok(m @ Json::Object(_)) => m,
        _ => return Err(format!("not a JSON object: {}", quote(bytes))),
    };
    let text = |k: &str| msg.get(k).and_then(|v| v.as_str()).map(String::from);
    Ok(Some(match msg.get("type").and_then(|t| t.as_str()).unwrap_or("") {
        "tool_call" => AgentMessage::ToolCall {
            id: text("id"),
            name: text("name").unwrap_or_default(),
            arguments: msg.get("arguments").cloned().unwrap_or_else(|| json!({})),
        },
        "usage" => {
            let n = |k: &str| msg.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
            let cost_usd = msg.get("cost_usd").and_then(|v| v.as_f64()).unwrap_or(0.0);
            if !cost_usd.is_finite() || cost_usd < 0.0 {
                return Err(format!("usage: cost_usd must be a non-negative number: {}", quote(bytes)));
            }
            AgentMessage::Usage { input_tokens: n("input_tokens"), output_tokens: n("output_tokens"), cost_usd }
        }
        "message" => AgentMessage::Message { content: text("content").unwrap_or_default() },
        "final" => AgentMessage::Final {
            content: match msg.get("content") {
                Some(Json::String(s)) => s.clone(),
                Some(Json::Null) | None => String::new(),
                Some(other) => other.to_string(),
            },
            abstain: match msg.get("abstain") {
                None | Some(Json::Null) => false,
                Some(Json::Bool(b)) => *b,
                Some(_) => return Err(format!("final: \"abstain\" must be true or false: {}", quote(bytes))),
            },
        },
        "" => return Err(format!("a message without a \"type\": {}", quote(bytes))),
        other => return Err(format!("unknown message type {other:?}: {}", quote(bytes))),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        assert_eq!(parse_line(b"  \n"), Ok(None));
        assert_eq!(
            parse_line(br#"{"type":"tool_call","id":"c1","name":"t","arguments":{"a":1}}"#),
            Ok(Some(AgentMessage::ToolCall { id: Some("c1".into()), name: "t".into(), arguments: json!({"a": 1}) }))
        );
        assert_eq!(
            parse_line(br#"{"type":"final","content":{"x":1}}"#),
            Ok(Some(AgentMessage::Final { content: r#"{"x":1}"#.into(), abstain: false }))
        );
        assert_eq!(
            parse_line(br#"{"type":"final","abstain":true,"content":"not enough evidence"}"#),
            Ok(Some(AgentMessage::Final { content: "not enough evidence".into(), abstain: true }))
        );
        assert!(parse_line(br#"{"type":"final","abstain":"yes","content":"x"}"#).unwrap_err().contains("abstain"));
        assert!(parse_line(b"[1]").unwrap_err().starts_with("not a JSON object"));
        assert!(parse_line(br#"{"a":1}"#).unwrap_err().starts_with("a message without"));
        assert!(parse_line(br#"{"type":"nope"}"#).unwrap_err().starts_with("unknown message type \"nope\""));
        assert!(parse_line(br#"{"type":"usage","cost_usd":-5}"#).unwrap_err().contains("non-negative"));
        let long = format!("{{{}", "x".repeat(1000));
        assert!(parse_line(long.as_bytes()).unwrap_err().len() < 300);
    }
}
