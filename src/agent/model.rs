//! Model-driven agents (`evalua.agent.openai` / `evalua.agent.anthropic`):
//! the tool loop runs in the host. Each model turn's tool calls go through
//! the same executor as every other agent's; each call's usage and cost count
//! against the suite's budgets; a text answer without tool calls is a turn to
//! the (simulated) user while the case has one with something to say, else
//! the final answer. An API failure after retries is an infrastructure error
//! (the agent never got its full chance), not an agent failure.

use std::path::PathBuf;
use std::time::Instant;

use mlua::{Lua, Table};
use serde::Serialize;
use serde_json::json;

use crate::executor::usage_budget;
use crate::lua::{convert, display_path};
use crate::model::{ChatRequest, ChatResponse, Endpoint, Message, ModelError, ToolSchema};
use crate::record::{Ended, ModelCall};
use crate::trial::{AgentEnd, Trial};

/// Model calls per trial when the agent sets no `max_turns`.
pub const DEFAULT_MAX_TURNS: u32 = 20;

#[derive(Debug, Clone, Serialize)]
pub struct ModelAgent {
    pub endpoint: Endpoint,
    /// The system prompt's text (not in the manifest: its sha256 is).
    #[serde(skip)]
    pub system: Option<String>,
    pub system_path: Option<String>,
    pub system_sha256: Option<String>,
    /// Model calls (steps of the tool loop) per trial.
    pub max_turns: u32,
    pub temperature: Option<f64>,
    /// `None`: each trial passes its own seed (reproducible where the server honours it).
    pub seed: Option<u64>,
    pub max_tokens: Option<u32>,
}

impl ModelAgent {
    /// From the table `evalua.agent.openai{}` / `anthropic{}` made.
    pub fn read(lua: &Lua, t: &Table) -> Result<Self, String> {
        let v = convert::to_json(lua, &mlua::Value::Table(t.clone()))?;
        let what = format!("evalua.agent.{}", v["kind"].as_str().unwrap_or("openai"));
        let mut opts = v.clone();
        opts["provider"] = v["kind"].clone();
        let endpoint = crate::model::endpoint_from_options(&opts).map_err(|e| format!("{what}: {e}"))?;
        let (system, system_path) = match v.get("system_path").and_then(|p| p.as_str()) {
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .map_err(|e| format!("{what}: cannot read the system prompt {}: {e}", display_path(p.as_ref())))?;
                (Some(text), Some(display_path(PathBuf::from(p).as_path())))
            }
            None => (v.get("system").and_then(|s| s.as_str()).map(String::from), None),
        };
        let system_sha256 = system.as_ref().map(|s| crate::lua::sha256_hex(s.as_bytes()));
        let int = |k: &str| v.get(k).and_then(|x| x.as_u64());
        Ok(ModelAgent {
            endpoint,
            system,
            system_path,
            system_sha256,
            max_turns: int("max_turns").map(|n| n as u32).unwrap_or(DEFAULT_MAX_TURNS),
            temperature: v.get("temperature").and_then(|x| x.as_f64()),
            seed: int("seed"),
            max_tokens: int("max_tokens").map(|n| n as u32),
        })
    }
}

/// Add a model call's usage to the trial and record it; returns the budget
/// spent by it, if any.
pub fn account(trial: &Trial<'_>, by: &str, ep: &Endpoint, started_ms: f64, r: &ChatResponse) -> Option<String> {
    let mut st = trial.state.borrow_mut();
    st.usage.input_tokens += r.usage.input_tokens;
    st.usage.output_tokens += r.usage.output_tokens;
    st.usage.cost_usd += r.cost_usd.unwrap_or(0.0);
    st.model_calls.push(ModelCall {
        by: by.to_string(),
        provider: ep.provider.as_str().to_string(),
        model: ep.model.clone(),
        started_ms,
        latency_ms: r.latency_ms,
        input_tokens: r.usage.input_tokens,
        output_tokens: r.usage.output_tokens,
        cost_usd: r.cost_usd,
        finish_reason: Some(r.finish_reason.clone()),
        attempts: r.attempts,
        error: None,
    });
    let why = usage_budget(&trial.plan.suite.budget, &st.usage);
    if let Some(w) = &why {
        st.budget_hit = Some(w.clone());
    }
    why
}

/// Record a failed model call (no usage).
pub fn account_failure(trial: &Trial<'_>, by: &str, ep: &Endpoint, started_ms: f64, e: &ModelError) {
    let mut st = trial.state.borrow_mut();
    let latency_ms = st.elapsed_ms() - started_ms;
    st.model_calls.push(ModelCall {
        by: by.to_string(),
        provider: ep.provider.as_str().to_string(),
        model: ep.model.clone(),
        started_ms,
        latency_ms,
        error: Some(e.to_string()),
        ..Default::default()
    });
}

/// The endpoint for one call: its timeout cut to the trial's deadline.
pub fn bounded(ep: &Endpoint, deadline: Instant) -> Option<Endpoint> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return None;
    }
    let mut ep = ep.clone();
    ep.timeout = ep.timeout.min(left);
    ep.deadline = Some(deadline);
    Some(ep)
}

fn deadline_end() -> AgentEnd {
    AgentEnd {
        ended: Ended::Deadline,
        error: Some("the agent did not finish before the deadline".into()),
        ..AgentEnd::running()
    }
}

pub fn run(trial: &Trial<'_>, m: &ModelAgent) -> AgentEnd {
    let tools: Vec<ToolSchema> = trial
        .case
        .tools
        .iter()
        .map(|t| ToolSchema {
            name: t.spec.name.clone(),
            description: t.spec.description.clone(),
            parameters: t.spec.params.clone(),
        })
        .collect();
    let mut req = ChatRequest {
        system: m.system.clone(),
        messages: vec![Message::user(trial.case.spec.input.clone())],
        tools,
        temperature: m.temperature,
        seed: Some(m.seed.unwrap_or(trial.seed & 0x7fff_ffff)),
        max_tokens: m.max_tokens,
        structured: None,
    };
    let mut steps = 0u32;
    loop {
        if steps >= m.max_turns {
            let why = format!("the agent's max_turns ({}) model calls reached", m.max_turns);
            trial.state.borrow_mut().budget_hit = Some(why.clone());
            return AgentEnd::budget(&why);
        }
        steps += 1;
        let Some(ep) = bounded(&m.endpoint, trial.deadline) else {
            return deadline_end();
        };
        let started_ms = trial.state.borrow().elapsed_ms();
        let resp = match ep.chat(&req) {
            Ok(r) => r,
            Err(e) => {
                account_failure(trial, "agent", &ep, started_ms, &e);
                if matches!(e, ModelError::Timeout(_)) && Instant::now() >= trial.deadline {
                    return deadline_end();
                }
                return AgentEnd::infra(e.to_string());
            }
        };
        if let Some(why) = account(trial, "agent", &ep, started_ms, &resp) {
            return AgentEnd::budget(&why);
        }
        let text = resp.text.clone().unwrap_or_default();
        if resp.tool_calls.is_empty() {
            let text = resp.refusal.clone().filter(|_| text.is_empty()).unwrap_or(text);
            if trial.has_user() {
                match trial.agent_says(text.clone()) {
                    Ok(Some(reply)) => {
                        req.messages.push(Message::assistant(text, Vec::new()));
                        req.messages.push(Message::user(reply));
                        continue;
                    }
                    // The user has nothing more to say: this was the final answer.
                    Ok(None) => {
                        trial.state.borrow_mut().messages.pop();
                    }
                    Err(why) => return AgentEnd::budget(&why),
                }
            } else {
                trial.state.borrow_mut().usage.turns += 1;
            }
            let mut end = AgentEnd::running();
            end.answer = text;
            return end;
        }
        req.messages.push(Message::assistant(text, resp.tool_calls.clone()));
        for call in &resp.tool_calls {
            let reply = trial.call_tool(Some(call.id.clone()), &call.name, call.arguments.clone());
            if reply.unwind.is_some() {
                return deadline_end();
            }
            let r = &reply.record;
            let mut content = json!({ "status": r.status.reply() });
            if let Some(v) = &r.result {
                content["content"] = v.clone();
            }
            if let Some(e) = &r.error {
                content["error"] = json!(e);
            }
            req.messages.push(Message::tool(call.id.clone(), content.to_string()));
            if let Some(why) = trial.state.borrow().budget_hit.clone() {
                return AgentEnd::budget(&why);
            }
        }
    }
}
