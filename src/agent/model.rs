//! Model-driven agents (`evalua.agent.openai` / `evalua.agent.anthropic`):
//! the tool loop runs in the host. Each model turn's tool calls go through
//! the same executor as every other agent's; each call's usage and cost count
//! against the suite's budgets; a text answer without tool calls is a turn to
//! the (simulated) user while the case has one with something to say, else
//! the final answer. An API failure after retries is an infrastructure error,
//! not an agent failure: before the agent acted, the trial is not graded
//! (`not_started`); after, it ends as `infra_error` and is graded on what the
//! agent did, the failure recorded beside its outcome.
//!
//! What the model sees of a tool call is `tool_results` (evalua's
//! `{status, content, error}` JSON, or the tool's own text as τ-bench shows
//! it); `calls_per_step` keeps only a response's first calls (τ-bench: one);
//! a tool declared `ends` ends the conversation when called; with the suite's
//! `abstention = true` a built-in `abstain { reason }` tool ends it as `abstained`.

use std::time::Instant;

use serde_json::json;

use crate::model::{ChatFailure, ChatRequest, ChatResponse, Endpoint, Message, ModelError, ToolSchema};
use crate::record::{BudgetHit, CallRecord, Ended, ModelCall};
use crate::spec::{ABSTAIN_TOOL, ModelAgentSpec, ToolResults};
use crate::trial::{AgentEnd, Trial};

/// Add a model call's usage to the trial and record it; returns the budget
/// spent by it, if any.
pub fn account(trial: &Trial<'_>, by: &str, ep: &Endpoint, started_ms: f64, r: &ChatResponse) -> Option<BudgetHit> {
    let call = ModelCall {
        by: by.to_string(),
        provider: ep.provider.as_str().to_string(),
        api: Some(ep.chat_api()),
        model: ep.model.clone(),
        started_ms,
        latency_ms: r.latency_ms,
        input_tokens: r.usage.input_tokens,
        output_tokens: r.usage.output_tokens,
        cost_usd: r.cost_usd,
        finish_reason: Some(r.finish_reason.clone()),
        attempts: r.attempts,
        error: None,
    };
    trial.state.borrow_mut().add_model_call(&trial.plan.suite.budget, call)
}

/// Record a failed model call (no usage): its error, attempts and latency.
pub fn account_failure(trial: &Trial<'_>, by: &str, ep: &Endpoint, started_ms: f64, f: &ChatFailure) {
    trial.state.borrow_mut().model_calls.push(ModelCall {
        by: by.to_string(),
        provider: ep.provider.as_str().to_string(),
        api: Some(ep.chat_api()),
        model: ep.model.clone(),
        started_ms,
        latency_ms: f.latency_ms,
        attempts: f.attempts,
        error: Some(f.error.to_string()),
        ..Default::default()
    });
}

fn deadline_end() -> AgentEnd {
    AgentEnd {
        ended: Ended::Deadline,
        error: Some("the agent did not finish before the deadline".into()),
        ..AgentEnd::running()
    }
}

pub fn run(trial: &Trial<'_>, m: &ModelAgentSpec) -> AgentEnd {
    // Resolved at load already; again here for the environment of this process.
    let endpoint = match Endpoint::resolve(&m.model, true) {
        Ok(ep) => ep,
        Err(e) => return AgentEnd::infra(e),
    };
    let mut tools: Vec<ToolSchema> = trial
        .case
        .tools
        .iter()
        .map(|t| ToolSchema {
            name: t.spec.name.clone(),
            description: t.spec.description.clone(),
            parameters: t.spec.params.clone(),
        })
        .collect();
    let abstention = trial.plan.suite.publish.abstention;
    if abstention {
        tools.push(abstain_tool());
    }
    let mut req = ChatRequest {
        system: m.system.clone(),
        messages: vec![Message::user(trial.input.clone())],
        tools,
        temperature: m.model.temperature,
        seed: Some(m.model.seed.unwrap_or(trial.seed & 0x7fff_ffff)),
        max_tokens: m.model.max_tokens,
        structured: None,
    };
    let mut steps = 0u32;
    loop {
        if crate::util::cancel::requested() {
            return AgentEnd::interrupted();
        }
        if steps >= m.max_turns {
            let hit = BudgetHit::ModelCalls(m.max_turns);
            trial.state.borrow_mut().budget_hit = Some(hit.clone());
            return AgentEnd::budget(&hit);
        }
        steps += 1;
        let Some(ep) = endpoint.bounded(trial.deadline) else {
            return deadline_end();
        };
        let started_ms = trial.state.borrow().elapsed_ms();
        let resp = match ep.chat_counted(&req) {
            Ok(r) => r,
            Err(f) => {
                account_failure(trial, "agent", &ep, started_ms, &f);
                if matches!(f.error, ModelError::Timeout(_)) && Instant::now() >= trial.deadline {
                    return deadline_end();
                }
                // Once the agent has acted, its trial is graded on what it did.
                return AgentEnd::infra_in(&trial.state, f.error.to_string());
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
        // Past `calls_per_step`, a response's calls never run and the model
        // never sees them again (τ-bench keeps the first).
        let mut calls = resp.tool_calls;
        if let Some(n) = m.calls_per_step {
            calls.truncate(n as usize);
        }
        req.messages.push(Message::assistant(text, calls.clone()));
        // The built-in `abstain` (SPEC §22): the agent declines, with its reason; no tool runs.
        if abstention && let Some(call) = calls.iter().find(|c| c.name == ABSTAIN_TOOL) {
            let mut end = AgentEnd::running();
            end.ended = Ended::Abstained;
            end.answer = call.arguments.get("reason").and_then(|r| r.as_str()).unwrap_or_default().to_string();
            trial.state.borrow_mut().usage.turns += 1;
            return end;
        }
        for call in &calls {
            let reply = trial.call_tool(Some(call.id.clone()), &call.name, call.arguments.clone());
            if reply.unwind.is_some() {
                return deadline_end();
            }
            req.messages.push(Message::tool(call.id.clone(), seen(m.tool_results, &reply.record)));
            if let Some(why) = trial.state.borrow().budget_hit.clone() {
                return AgentEnd::budget(&why);
            }
            // A tool that ends the conversation (τ-bench's transfer to a human): no further step.
            if trial.case.tools.iter().any(|t| t.spec.ends && t.spec.name == call.name) {
                return AgentEnd::running();
            }
        }
    }
}

/// The built-in tool a model agent abstains with, when the suite sets `abstention = true`.
fn abstain_tool() -> ToolSchema {
    ToolSchema {
        name: ABSTAIN_TOOL.to_string(),
        description: "Decline the task instead of answering, when the evidence is insufficient or the request \
                      must not be carried out. Give the reason."
            .to_string(),
        parameters: json!({
            "type": "object",
            "properties": { "reason": { "type": "string", "description": "Why the task is declined." } },
            "required": ["reason"],
        }),
    }
}

/// A call's result as the model sees it (`tool_results`).
fn seen(how: ToolResults, r: &CallRecord) -> String {
    match how {
        ToolResults::Json => {
            let mut content = json!({ "status": r.reply_status() });
            if let Some(v) = &r.result {
                content["content"] = v.clone();
            }
            if let Some(e) = &r.error {
                content["error"] = json!(e);
            }
            content.to_string()
        }
        ToolResults::Text => match (&r.error, &r.result) {
            (Some(e), _) => format!("Error: {e}"),
            (None, Some(serde_json::Value::String(s))) => s.clone(),
            (None, Some(v)) => v.to_string(),
            (None, None) => "null".into(),
        },
    }
}
