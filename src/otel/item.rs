//! One graded item read from its spans: the calls, messages, answer and usage
//! a check sees, from the OpenTelemetry GenAI conventions (`invoke_agent`,
//! `execute_tool`, `chat`), OpenInference (`openinference.span.kind` AGENT /
//! TOOL / LLM), evalua's own export, or what a suite's `trace_adapter` said
//! about a span. A trace whose only instrumented part is the model client
//! still yields its calls: from the model spans' tool calls and the tool
//! messages that answer them.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value as Json};

use super::span::{Span, Status};
use crate::record::{CallRecord, CallStatus, Ended, FirstFailure, Message, ModelCall, Usage, result_says_error};

/// What a suite's `trace_adapter` said about a span.
#[derive(Debug, Clone, Default)]
pub enum Adapted {
    /// nil: read the span by the conventions.
    #[default]
    Default,
    /// `{ skip = true }`: ignore the span.
    Skip,
    /// `{ call = …, input = …, answer = …, usage = … }`.
    Read(Box<AdaptedSpan>),
}

#[derive(Debug, Clone, Default)]
pub struct AdaptedSpan {
    pub call: Option<AdaptedCall>,
    pub input: Option<String>,
    pub answer: Option<String>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct AdaptedCall {
    pub name: String,
    pub args: Json,
    pub result: Option<Json>,
    pub status: CallStatus,
    pub error: Option<String>,
}

/// A graded item as the checks see it.
#[derive(Debug, Clone, Default)]
pub struct Recorded {
    pub input: String,
    pub answer: String,
    pub messages: Vec<Message>,
    pub calls: Vec<CallRecord>,
    pub model_calls: Vec<ModelCall>,
    pub usage: Usage,
    pub ended: Option<Ended>,
    pub error: Option<String>,
    /// `evalua.case` on an agent span: the case the item belongs to.
    pub case: Option<String>,
    pub conversation_id: Option<String>,
    /// The item's traces, in start order.
    pub trace_ids: Vec<String>,
    pub start_ns: u64,
    pub end_ns: u64,
    pub first_failure: Option<FirstFailure>,
    /// Something was recognised: a tool, model or agent span, or an adapter's reading.
    pub readable: bool,
    /// The recorded results are not in the form the suite's tools return
    /// (AgentDojo's YAML text): a re-executed call diverges only when one of
    /// the two failed and the other did not.
    pub opaque_results: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Agent,
    Tool,
    Llm,
    Other,
}

fn role(s: &Span) -> Role {
    let op = s.attributes.get("gen_ai.operation.name").and_then(|v| v.as_str()).unwrap_or("");
    let oi = s.attributes.get("openinference.span.kind").and_then(|v| v.as_str()).unwrap_or("");
    if op == "execute_tool" || oi.eq_ignore_ascii_case("tool") || s.name.starts_with("execute_tool ") {
        Role::Tool
    } else if matches!(op, "chat" | "text_completion" | "generate_content")
        || oi.eq_ignore_ascii_case("llm")
        || s.name.starts_with("chat ")
    {
        Role::Llm
    } else if matches!(op, "invoke_agent" | "create_agent")
        || oi.eq_ignore_ascii_case("agent")
        || s.name.starts_with("invoke_agent")
    {
        Role::Agent
    } else {
        Role::Other
    }
}

/// JSON text parsed when it is JSON, else kept as a string.
fn json_or_text(v: &Json) -> Json {
    match v {
        Json::String(s) => {
            let t = s.trim_start();
            if t.starts_with('{') || t.starts_with('[') {
                serde_json::from_str(s).unwrap_or_else(|_| v.clone())
            } else {
                v.clone()
            }
        }
        other => other.clone(),
    }
}

fn text_of(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Null => String::new(),
        other => other.to_string(),
    }
}

fn first<'a>(s: &'a Span, keys: &[&str]) -> Option<&'a Json> {
    keys.iter().find_map(|k| s.attributes.get(*k).filter(|v| !v.is_null()))
}

/// The exception event's message and type, if the span has one.
fn exception(s: &Span) -> (Option<String>, Option<String>) {
    match s.events.iter().find(|e| e.name == "exception") {
        Some(e) => (
            e.attributes.get("exception.message").map(text_of).filter(|m| !m.is_empty()),
            e.attributes.get("exception.type").map(text_of).filter(|m| !m.is_empty()),
        ),
        None => (None, None),
    }
}

fn ms(ns: u64, base: u64) -> f64 {
    ns.saturating_sub(base) as f64 / 1e6
}

/// A tool span as a call.
fn tool_call(s: &Span, base: u64) -> CallRecord {
    let name = first(s, &["gen_ai.tool.name", "tool.name"])
        .map(text_of)
        .unwrap_or_else(|| s.name.strip_prefix("execute_tool ").unwrap_or(&s.name).to_string());
    let args = first(s, &["gen_ai.tool.call.arguments", "input.value", "tool.parameters"])
        .map(json_or_text)
        .unwrap_or_else(|| Json::Object(Map::new()));
    let result = first(s, &["gen_ai.tool.call.result", "output.value"]).map(json_or_text);
    let own = s.attributes.get("evalua.tool.status").and_then(|v| serde_json::from_value::<CallStatus>(v.clone()).ok());
    let status = own.unwrap_or(if s.status == Status::Error { CallStatus::Failed } else { CallStatus::Executed });
    let (ex_message, ex_type) = exception(s);
    let executed = status == CallStatus::Executed;
    let error = (!executed).then(|| {
        Some(s.status_message.clone())
            .filter(|m| !m.is_empty())
            .or(ex_message)
            .or_else(|| result.as_ref().map(text_of).filter(|r| !r.is_empty()))
            .unwrap_or_else(|| "the tool span's status is ERROR".into())
    });
    CallRecord {
        requested_id: None,
        diverged: false,
        recorded: None,
        id: first(s, &["gen_ai.tool.call.id", "tool_call.id"]).map(text_of).unwrap_or_else(|| s.span_id.clone()),
        name,
        args,
        status,
        effect: None,
        result,
        error,
        error_type: first(s, &["error.type"]).map(text_of).or(ex_type).filter(|_| !executed),
        started_ms: ms(s.start_ns, base),
        ended_ms: ms(s.end_ns, base),
    }
}

/// A model span as a model call.
fn model_call(s: &Span, base: u64) -> ModelCall {
    let (ex_message, _) = exception(s);
    ModelCall {
        api: None,
        by: "agent".into(),
        provider: first(s, &["gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system"])
            .map(text_of)
            .unwrap_or_default(),
        model: first(s, &["gen_ai.request.model", "gen_ai.response.model", "llm.model_name"])
            .map(text_of)
            .unwrap_or_default(),
        started_ms: ms(s.start_ns, base),
        latency_ms: s.duration_ms(),
        input_tokens: s.count("gen_ai.usage.input_tokens").or(s.count("llm.token_count.prompt")).unwrap_or(0),
        output_tokens: s.count("gen_ai.usage.output_tokens").or(s.count("llm.token_count.completion")).unwrap_or(0),
        cost_usd: s.number("operation.cost").or(s.number("gen_ai.usage.cost")),
        finish_reason: first(s, &["gen_ai.response.finish_reasons", "llm.finish_reason"]).map(|v| match v {
            Json::Array(a) => a.iter().map(text_of).collect::<Vec<_>>().join(","),
            other => text_of(other),
        }),
        attempts: 1,
        error: (s.status == Status::Error).then(|| {
            Some(s.status_message.clone()).filter(|m| !m.is_empty()).or(ex_message).unwrap_or_else(|| "ERROR".into())
        }),
    }
}

/// A message of a model span, whatever convention wrote it.
#[derive(Debug, Clone, Default)]
struct Msg {
    role: String,
    text: String,
    /// Tool calls the message asks for: (id, name, arguments).
    calls: Vec<(String, String, Json)>,
    /// A tool result: (call id, content).
    result: Option<(String, Json)>,
}

/// GenAI messages: `[{"role", "parts": [{"type": "text" | "tool_call" | "tool_call_response", …}]}]`.
fn genai_messages(v: &Json) -> Vec<Msg> {
    let parsed;
    let list = match v {
        Json::String(s) => {
            parsed = serde_json::from_str::<Json>(s).unwrap_or(Json::Null);
            &parsed
        }
        other => other,
    };
    let mut out = Vec::new();
    for m in list.as_array().into_iter().flatten() {
        let role = m.get("role").map(text_of).unwrap_or_default();
        let mut text = Vec::new();
        let mut msg = Msg { role: role.clone(), ..Default::default() };
        for p in m.get("parts").and_then(|p| p.as_array()).into_iter().flatten() {
            match p.get("type").and_then(|t| t.as_str()).unwrap_or("") {
                "text" => text.push(p.get("content").map(text_of).unwrap_or_default()),
                "tool_call" => msg.calls.push((
                    p.get("id").map(text_of).unwrap_or_default(),
                    p.get("name").map(text_of).unwrap_or_default(),
                    p.get("arguments").map(json_or_text).unwrap_or(Json::Null),
                )),
                "tool_call_response" => {
                    let content = p.get("result").or(p.get("response")).map(json_or_text).unwrap_or(Json::Null);
                    // One message per result.
                    out.push(Msg {
                        role: "tool".into(),
                        result: Some((p.get("id").map(text_of).unwrap_or_default(), content)),
                        ..Default::default()
                    });
                }
                _ => {}
            }
        }
        if let Some(c) = m.get("content").filter(|c| c.is_string()) {
            text.push(text_of(c));
        }
        msg.text = text.join("\n");
        if !msg.text.is_empty() || !msg.calls.is_empty() {
            out.push(msg);
        }
    }
    out
}

/// OpenInference's flattened messages: `<prefix>.<i>.message.role`, `.content`,
/// `.tool_call_id`, `.tool_calls.<j>.tool_call.{id,function.name,function.arguments}`.
fn openinference_messages(s: &Span, prefix: &str) -> Vec<Msg> {
    let mut by_index: BTreeMap<usize, Msg> = BTreeMap::new();
    let mut calls: BTreeMap<(usize, usize), (String, String, Json)> = BTreeMap::new();
    let mut tool_call_ids: HashMap<usize, String> = HashMap::new();
    let mut contents: HashMap<usize, Json> = HashMap::new();
    let p = format!("{prefix}.");
    for (k, v) in &s.attributes {
        let Some(rest) = k.strip_prefix(&p) else { continue };
        let Some((i, rest)) = rest.split_once('.') else { continue };
        let Ok(i) = i.parse::<usize>() else { continue };
        let Some(rest) = rest.strip_prefix("message.") else { continue };
        let m = by_index.entry(i).or_default();
        match rest {
            "role" => m.role = text_of(v),
            "content" => {
                m.text = text_of(v);
                contents.insert(i, v.clone());
            }
            "tool_call_id" => {
                tool_call_ids.insert(i, text_of(v));
            }
            _ => {
                if let Some(tc) = rest.strip_prefix("tool_calls.")
                    && let Some((j, field)) = tc.split_once('.')
                    && let Ok(j) = j.parse::<usize>()
                {
                    let e = calls.entry((i, j)).or_insert_with(|| (String::new(), String::new(), Json::Null));
                    match field {
                        "tool_call.id" => e.0 = text_of(v),
                        "tool_call.function.name" => e.1 = text_of(v),
                        "tool_call.function.arguments" => e.2 = json_or_text(v),
                        _ => {}
                    }
                }
            }
        }
    }
    for ((i, _), c) in calls {
        if let Some(m) = by_index.get_mut(&i) {
            m.calls.push(c);
        }
    }
    for (i, id) in tool_call_ids {
        if let Some(m) = by_index.get_mut(&i) {
            m.result = Some((id, contents.get(&i).map(json_or_text).unwrap_or(Json::Null)));
        }
    }
    by_index.into_values().collect()
}

fn input_messages(s: &Span) -> Vec<Msg> {
    match s.attributes.get("gen_ai.input.messages") {
        Some(v) => genai_messages(v),
        None => openinference_messages(s, "llm.input_messages"),
    }
}

fn output_messages(s: &Span) -> Vec<Msg> {
    match s.attributes.get("gen_ai.output.messages") {
        Some(v) => genai_messages(v),
        None => openinference_messages(s, "llm.output_messages"),
    }
}

fn is_user(m: &Msg) -> bool {
    m.role == "user" && !m.text.is_empty()
}

fn is_agent(m: &Msg) -> bool {
    matches!(m.role.as_str(), "assistant" | "model" | "agent") && !m.text.is_empty()
}

/// Read an item from its spans (sorted by start time) and what the suite's
/// adapter said about each (`adapted[i]` for `spans[i]`; empty when the suite
/// has no adapter).
pub fn read(spans: &[Span], adapted: &[Adapted]) -> Recorded {
    let base = spans.iter().map(|s| s.start_ns).min().unwrap_or(0);
    let end = spans.iter().map(|s| s.end_ns).max().unwrap_or(base);
    let mut r = Recorded { start_ns: base, end_ns: end, ..Default::default() };
    let mut seen_traces = HashSet::new();
    for s in spans {
        if seen_traces.insert(s.trace_id.as_str()) {
            r.trace_ids.push(s.trace_id.clone());
        }
    }
    let mut llm: Vec<&Span> = Vec::new();
    let mut agents: Vec<&Span> = Vec::new();
    let mut tool_spans = 0;
    let mut adapted_input = None;
    let mut adapted_answer = None;
    let mut adapted_tokens = (0u64, 0u64, 0f64, false);
    for (i, s) in spans.iter().enumerate() {
        if r.conversation_id.is_none() {
            r.conversation_id = first(s, &["gen_ai.conversation.id", "session.id"]).map(text_of);
        }
        match adapted.get(i).cloned().unwrap_or_default() {
            Adapted::Skip => continue,
            Adapted::Read(a) => {
                r.readable = true;
                if let Some(c) = a.call {
                    let error = c.error.or_else(|| {
                        (c.status != CallStatus::Executed).then(|| c.result.as_ref().map(text_of)).flatten()
                    });
                    r.calls.push(CallRecord {
                        requested_id: None,
                        diverged: false,
                        recorded: None,
                        id: s.span_id.clone(),
                        name: c.name,
                        args: c.args,
                        status: c.status,
                        effect: None,
                        result: c.result,
                        error,
                        error_type: None,
                        started_ms: ms(s.start_ns, base),
                        ended_ms: ms(s.end_ns, base),
                    });
                    tool_spans += 1;
                }
                if a.input.is_some() {
                    adapted_input = a.input;
                }
                if a.answer.is_some() {
                    adapted_answer = a.answer;
                }
                if a.input_tokens.is_some() || a.output_tokens.is_some() || a.cost_usd.is_some() {
                    adapted_tokens.0 += a.input_tokens.unwrap_or(0);
                    adapted_tokens.1 += a.output_tokens.unwrap_or(0);
                    adapted_tokens.2 += a.cost_usd.unwrap_or(0.0);
                    adapted_tokens.3 = true;
                }
                continue;
            }
            Adapted::Default => {}
        }
        match role(s) {
            Role::Tool => {
                r.calls.push(tool_call(s, base));
                tool_spans += 1;
                r.readable = true;
            }
            // evalua's own judge calls: not the agent's; grading asks the judges again.
            Role::Llm if s.text("evalua.model_call.by").as_deref() == Some("judge") => {}
            Role::Llm => {
                r.model_calls.push(model_call(s, base));
                llm.push(s);
                r.readable = true;
            }
            Role::Agent => {
                agents.push(s);
                r.readable = true;
            }
            Role::Other => {}
        }
        if r.case.is_none() {
            r.case = s.text("evalua.case");
        }
    }

    // Only the model client was instrumented: the calls are in the model spans.
    if tool_spans == 0 && !llm.is_empty() {
        r.calls = calls_from_model_spans(&llm, base);
    }

    // Messages: the last model call saw the whole conversation (each call repeats the history).
    let mut msgs: Vec<Msg> = Vec::new();
    if let Some(last) = llm.last() {
        msgs = input_messages(last);
        msgs.extend(output_messages(last));
    }
    let first_user = llm
        .first()
        .and_then(|s| input_messages(s).into_iter().find(is_user))
        .map(|m| m.text)
        .or_else(|| agents.iter().find_map(|a| agent_input(a)));
    r.input = adapted_input.or(first_user).unwrap_or_default();
    // The answer: the adapter's, else the last agent span's, else the last model output's text.
    let agent_answer = agents.iter().rev().find_map(|a| agent_answer(a));
    let model_answer = llm.last().and_then(|s| output_messages(s).into_iter().rev().find(is_agent)).map(|m| m.text);
    r.answer = adapted_answer.or(agent_answer).or(model_answer).unwrap_or_default();
    r.messages = if msgs.iter().any(|m| is_user(m) || is_agent(m)) {
        let mut out: Vec<Message> = msgs
            .iter()
            .filter(|m| is_user(m) || is_agent(m))
            .map(|m| Message {
                role: if m.role == "user" { "user".into() } else { "agent".into() },
                content: m.text.clone(),
                call_id: None,
            })
            .collect();
        if !r.answer.is_empty() && out.last().is_none_or(|m| m.role != "agent" || m.content != r.answer) {
            out.push(Message { role: "agent".into(), content: r.answer.clone(), call_id: None });
        }
        out
    } else {
        let mut out = Vec::new();
        if !r.input.is_empty() {
            out.push(Message { role: "user".into(), content: r.input.clone(), call_id: None });
        }
        if !r.answer.is_empty() {
            out.push(Message { role: "agent".into(), content: r.answer.clone(), call_id: None });
        }
        out
    };

    // Usage: the model spans' sum, else the agent span's own figures, else the adapter's.
    let (mut input_tokens, mut output_tokens, mut cost) = (0u64, 0u64, 0f64);
    for m in &r.model_calls {
        input_tokens += m.input_tokens;
        output_tokens += m.output_tokens;
        cost += m.cost_usd.unwrap_or(0.0);
    }
    if r.model_calls.is_empty() {
        for a in &agents {
            input_tokens +=
                a.count("gen_ai.usage.input_tokens").or(a.count("gen_ai.aggregated_usage.input_tokens")).unwrap_or(0);
            output_tokens +=
                a.count("gen_ai.usage.output_tokens").or(a.count("gen_ai.aggregated_usage.output_tokens")).unwrap_or(0);
        }
    }
    if adapted_tokens.3 {
        input_tokens += adapted_tokens.0;
        output_tokens += adapted_tokens.1;
        cost += adapted_tokens.2;
    }
    r.usage = Usage {
        input_tokens,
        output_tokens,
        cost_usd: cost,
        turns: r.messages.iter().filter(|m| m.role == "agent").count() as u32,
        tool_calls: r.calls.len() as u32,
        wall_ms: ms(end, base),
    };

    // How it ended: an agent span with status ERROR crashed, unless evalua wrote it (`evalua.ended`).
    let last_agent = agents.last();
    r.ended =
        last_agent.and_then(|a| a.attributes.get("evalua.ended")).and_then(|v| serde_json::from_value(v.clone()).ok());
    if let Some(a) = agents.iter().rev().find(|a| a.status == Status::Error) {
        let (ex, _) = exception(a);
        r.error = Some(a.status_message.clone()).filter(|m| !m.is_empty()).or(ex).or(Some("ERROR".into()));
        r.ended.get_or_insert(Ended::Crashed);
    }
    r.first_failure = first_failure(&r, spans, adapted, base);
    r
}

fn agent_input(a: &Span) -> Option<String> {
    if let Some(v) = a.attributes.get("gen_ai.input.messages") {
        return genai_messages(v).into_iter().find(is_user).map(|m| m.text);
    }
    a.text("input.value").filter(|s| !s.is_empty())
}

fn agent_answer(a: &Span) -> Option<String> {
    if let Some(v) = first(a, &["final_result"]) {
        return Some(text_of(v));
    }
    if let Some(v) = a.attributes.get("gen_ai.output.messages") {
        return genai_messages(v).into_iter().rev().find(is_agent).map(|m| m.text);
    }
    a.text("output.value").filter(|s| !s.is_empty())
}

/// Calls from model spans alone: each tool call a model asked for (deduplicated
/// by id, as each span repeats the history), answered by a later tool message.
fn calls_from_model_spans(llm: &[&Span], base: u64) -> Vec<CallRecord> {
    let mut order: Vec<String> = Vec::new();
    let mut calls: HashMap<String, CallRecord> = HashMap::new();
    for s in llm {
        let mut msgs = input_messages(s);
        msgs.extend(output_messages(s));
        for m in msgs {
            for (id, name, args) in &m.calls {
                if id.is_empty() || calls.contains_key(id) {
                    continue;
                }
                order.push(id.clone());
                calls.insert(
                    id.clone(),
                    CallRecord {
                        requested_id: None,
                        diverged: false,
                        recorded: None,
                        id: id.clone(),
                        name: name.clone(),
                        args: args.clone(),
                        status: CallStatus::Executed,
                        effect: None,
                        result: None,
                        error: None,
                        error_type: None,
                        // Requested when the model span that asked for it ended.
                        started_ms: ms(s.end_ns, base),
                        ended_ms: ms(s.end_ns, base),
                    },
                );
            }
            if let Some((id, content)) = &m.result
                && let Some(c) = calls.get_mut(id)
                && c.result.is_none()
            {
                // Answered by the time this model span started.
                c.ended_ms = ms(s.start_ns, base).max(c.started_ms);
                if let Some(e) = result_says_error(content) {
                    c.status = CallStatus::Failed;
                    c.error = Some(e);
                }
                c.result = Some(content.clone());
            }
        }
    }
    order.into_iter().filter_map(|id| calls.remove(&id)).collect()
}

/// The first call or span that went wrong: a call that failed (or whose result
/// says so), a model span or another non-root span with status ERROR, by start
/// time; else an agent (root) span with status ERROR.
fn first_failure(r: &Recorded, spans: &[Span], adapted: &[Adapted], base: u64) -> Option<FirstFailure> {
    let mut best = FirstFailure::of(&r.calls, &r.model_calls);
    let ids: HashSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    let mut root_error = None;
    for (i, s) in spans.iter().enumerate() {
        if s.status != Status::Error || !matches!(adapted.get(i), None | Some(Adapted::Default)) {
            continue;
        }
        let role = role(s);
        if matches!(role, Role::Tool | Role::Llm) {
            continue; // counted as calls and model calls above
        }
        let (ex, _) = exception(s);
        let f = FirstFailure {
            kind: if role == Role::Agent { "agent".into() } else { "span".into() },
            name: s.name.clone(),
            call: None,
            status: "error".into(),
            error: Some(s.status_message.clone()).filter(|m| !m.is_empty()).or(ex),
            at_ms: ms(s.start_ns, base),
        };
        let is_root = s.parent_span_id.as_deref().is_none_or(|p| !ids.contains(p));
        if role == Role::Agent || is_root {
            root_error.get_or_insert(f);
        } else if best.as_ref().is_none_or(|b| f.at_ms < b.at_ms) {
            best = Some(f);
        }
    }
    best.or(root_error)
}
