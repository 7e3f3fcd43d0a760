//! What a trial accumulates while its agent runs: calls, messages, outbox,
//! usage, model calls, and the reasons it may have to stop (a spent budget,
//! a handler's denial, a failure of something the harness provides).

use std::fmt;
use std::time::Instant;

use super::call::{CallRecord, ModelCall};
use super::trace::{Message, OutboxItem};
use super::trial::Usage;
use crate::spec::Budget;

/// A budget a trial spent: the trial then ends as `budget`.
#[derive(Debug, Clone, PartialEq)]
pub enum BudgetHit {
    ToolCalls(u32),
    Turns(u32),
    Tokens(u64),
    Cost(f64),
    /// A model agent's own `max_turns`: model calls per trial.
    ModelCalls(u32),
}

impl fmt::Display for BudgetHit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BudgetHit::ToolCalls(n) => write!(f, "max_tool_calls ({n}) reached"),
            BudgetHit::Turns(n) => write!(f, "max_turns ({n}) reached"),
            BudgetHit::Tokens(n) => write!(f, "max_tokens ({n}) exceeded"),
            BudgetHit::Cost(n) => write!(f, "max_cost_usd ({n}) exceeded"),
            BudgetHit::ModelCalls(n) => write!(f, "the agent's max_turns ({n}) model calls reached"),
        }
    }
}

/// Which budget, if any, a trial with `calls` requests so far has spent.
pub fn spent_budget(budget: &Budget, usage: &Usage, calls: usize) -> Option<BudgetHit> {
    if let Some(max) = budget.max_tool_calls
        && calls >= max as usize
    {
        return Some(BudgetHit::ToolCalls(max));
    }
    usage_budget(budget, usage)
}

/// Which token or cost budget, if any, the usage so far has spent.
pub fn usage_budget(budget: &Budget, usage: &Usage) -> Option<BudgetHit> {
    if let Some(max) = budget.max_tokens
        && usage.input_tokens + usage.output_tokens > max
    {
        return Some(BudgetHit::Tokens(max));
    }
    if let Some(max) = budget.max_cost_usd
        && usage.cost_usd > max
    {
        return Some(BudgetHit::Cost(max));
    }
    None
}

/// The trial's journal, written as the agent acts.
pub struct Journal {
    pub started: Instant,
    pub calls: Vec<CallRecord>,
    pub messages: Vec<Message>,
    pub outbox: Vec<OutboxItem>,
    pub usage: Usage,
    /// Set when a budget is spent: the trial ends as `budget`.
    pub budget_hit: Option<BudgetHit>,
    /// Set by a handler's `ctx.deny(reason)`: the call is recorded as `denied`.
    pub denied: Option<String>,
    /// Model calls made for the trial (model agents, simulated users, the model proxy).
    pub model_calls: Vec<ModelCall>,
    /// Set when something the harness provides (a simulated user's model)
    /// failed: the trial is then an infrastructure error.
    pub infra: Option<String>,
    /// Set by a scripted agent's `env.abstain(reason)`: the trial ends as
    /// `abstained`, the reason as its answer (SPEC §22).
    pub abstained: Option<String>,
}

impl Journal {
    pub fn new() -> Self {
        Journal {
            started: Instant::now(),
            calls: Vec::new(),
            messages: Vec::new(),
            outbox: Vec::new(),
            usage: Usage::default(),
            budget_hit: None,
            denied: None,
            model_calls: Vec::new(),
            infra: None,
            abstained: None,
        }
    }

    /// Whether the agent has acted in the trial: requested a tool call or
    /// spoke a turn. An infrastructure failure after that leaves a trial to
    /// grade; before it, the agent never got its chance.
    pub fn agent_acted(&self) -> bool {
        !self.calls.is_empty() || self.messages.iter().any(|m| m.role == "agent")
    }

    pub fn elapsed_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1000.0
    }

    /// Add a model call's usage, record the call, and say which budget it
    /// spent, if any (then remembered as the trial's budget hit).
    pub fn add_model_call(&mut self, budget: &Budget, call: ModelCall) -> Option<BudgetHit> {
        self.usage.input_tokens += call.input_tokens;
        self.usage.output_tokens += call.output_tokens;
        self.usage.cost_usd += call.cost_usd.unwrap_or(0.0);
        self.model_calls.push(call);
        self.note_usage(budget)
    }

    /// Check the token and cost budgets; remember (and return) the first one spent.
    pub fn note_usage(&mut self, budget: &Budget) -> Option<BudgetHit> {
        let hit = usage_budget(budget, &self.usage);
        if let Some(h) = &hit
            && self.budget_hit.is_none()
        {
            self.budget_hit = Some(h.clone());
        }
        hit
    }
}

impl Default for Journal {
    fn default() -> Self {
        Self::new()
    }
}
