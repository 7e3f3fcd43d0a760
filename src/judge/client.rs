//! The one place a judge talks to a model: through the model client layer
//! (`crate::model`), with a JSON-schema-constrained answer.

use serde_json::{Value as Json, json};

use crate::model::{ChatRequest, Message, Structured};

use super::resolve::Judge;

/// One request to a judge.
pub struct Request {
    /// The schema's name (OpenAI `response_format.json_schema.name`, the forced tool's name on Anthropic).
    pub name: &'static str,
    pub system: String,
    pub user: String,
    pub schema: Json,
}

/// A judge's answer, parsed as JSON (not yet validated).
pub struct Reply {
    pub answer: Json,
    pub usage: Json,
    pub cost_usd: Option<f64>,
    pub latency_ms: f64,
    pub strategy: Option<String>,
    pub attempts: u32,
}

impl Reply {
    /// What goes into the evidence about the call (never the key).
    pub fn meta(&self) -> Json {
        json!({
            "usage": self.usage,
            "cost_usd": self.cost_usd,
            "latency_ms": self.latency_ms,
            "strategy": self.strategy,
            "attempts": self.attempts,
        })
    }
}

/// A judge call that gave no usable answer: why, and what the call cost
/// (`meta` as [`Reply::meta`]; for an answer that is not JSON, the answer's
/// text too). A grader error that still counts its tokens.
#[derive(Debug, Clone)]
pub struct AskError {
    pub message: String,
    pub meta: Json,
}

/// Ask the judge. Err on an API failure (after the client's retries), a
/// refusal, or an answer that is not JSON: all grader errors.
pub fn ask(judge: &Judge, req: &Request) -> Result<Reply, AskError> {
    let ep = &judge.endpoint;
    let chat = ChatRequest {
        system: Some(req.system.clone()),
        messages: vec![Message::user(req.user.clone())],
        tools: Vec::new(),
        temperature: judge.spec.temperature,
        seed: judge.spec.seed,
        max_tokens: judge.spec.max_tokens,
        structured: Some(Structured { name: req.name.to_string(), schema: req.schema.clone() }),
    };
    let r = ep.chat_counted(&chat).map_err(|f| AskError {
        message: format!("judge call failed: {f}"),
        meta: json!({ "latency_ms": f.latency_ms, "attempts": f.attempts }),
    })?;
    let mut reply = Reply {
        answer: Json::Null,
        usage: json!({ "input_tokens": r.usage.input_tokens, "output_tokens": r.usage.output_tokens }),
        cost_usd: r.cost_usd,
        latency_ms: r.latency_ms,
        strategy: r.strategy.clone(),
        attempts: r.attempts,
    };
    let fail = |message: String, answer: Option<&str>| {
        let mut meta = reply.meta();
        if let Some(a) = answer {
            meta["answer"] = json!(a);
        }
        AskError { message, meta }
    };
    if let Some(why) = &r.refusal {
        return Err(fail(format!("the judge refused to answer: {why}"), None));
    }
    let text = r
        .text
        .clone()
        .filter(|t| !t.trim().is_empty())
        .or_else(|| r.tool_calls.first().map(|c| c.arguments.to_string()));
    let Some(text) = text else {
        return Err(fail(format!("the judge gave no answer (finish_reason {:?})", r.finish_reason), None));
    };
    let answer = super::prompt::parse_json(&text).map_err(|e| fail(e, Some(&text)))?;
    reply.answer = answer;
    Ok(reply)
}
