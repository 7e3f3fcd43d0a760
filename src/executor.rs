//! One door for every tool call, whatever the agent: validate, authorise, run,
//! record. A request is recorded with its status whether or not it ran:
//!
//! - `rejected`: unknown tool, or arguments that fail the tool's JSON schema;
//! - `denied`: a budget is spent (the trial then ends as `budget`) or a
//!   `requires` policy is not met;
//! - `failed`: the handler raised (or hit its limits);
//! - `executed`: the handler returned; its result is recorded.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlua::{Function, Lua, Table, Value};
use serde_json::Value as Json;

use crate::lua::{self, Segment, convert, limits::Guarded};
use crate::record::{CallRecord, CallStatus, Message, ModelCall, OutboxItem, Usage};
use crate::suite::{Budget, ToolSpec};

/// Limits on one tool handler call.
const TOOL_INSTRUCTIONS: u64 = 50_000_000;
const TOOL_SECONDS: u64 = 10;

pub struct ToolDef {
    pub spec: ToolSpec,
    pub validator: jsonschema::Validator,
}

/// What a trial accumulates while the agent runs.
pub struct TrialState {
    pub started: Instant,
    pub calls: Vec<CallRecord>,
    pub messages: Vec<Message>,
    pub outbox: Vec<OutboxItem>,
    pub usage: Usage,
    /// Set when a budget is spent: the trial ends as `budget`.
    pub budget_hit: Option<String>,
    /// Set by a handler's `ctx.deny(reason)`: the call is recorded as `denied`.
    pub denied: Option<String>,
    /// Model calls made for the trial (model agents, simulated users, the model proxy).
    pub model_calls: Vec<ModelCall>,
    /// Set when something the harness provides (a simulated user's model)
    /// failed: the trial is then an infrastructure error.
    pub infra: Option<String>,
}

impl TrialState {
    pub fn new() -> Self {
        TrialState {
            started: Instant::now(),
            calls: Vec::new(),
            messages: Vec::new(),
            outbox: Vec::new(),
            usage: Usage::default(),
            budget_hit: None,
            denied: None,
            model_calls: Vec::new(),
            infra: None,
        }
    }
    pub fn elapsed_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1000.0
    }
}

impl Default for TrialState {
    fn default() -> Self {
        Self::new()
    }
}

/// Which budget, if any, a trial with `calls` requests so far has spent.
pub fn spent_budget(budget: &Budget, usage: &Usage, calls: usize) -> Option<String> {
    if let Some(max) = budget.max_tool_calls
        && calls >= max as usize
    {
        return Some(format!("max_tool_calls ({max}) reached"));
    }
    usage_budget(budget, usage)
}

/// Which token or cost budget, if any, the usage so far has spent.
pub fn usage_budget(budget: &Budget, usage: &Usage) -> Option<String> {
    if let Some(max) = budget.max_tokens
        && usage.input_tokens + usage.output_tokens > max
    {
        return Some(format!("max_tokens ({max}) exceeded"));
    }
    if let Some(max) = budget.max_cost_usd
        && usage.cost_usd > max
    {
        return Some(format!("max_cost_usd ({max}) exceeded"));
    }
    None
}

pub struct Executor {
    /// The tools offered in this case.
    pub tools: Vec<Arc<ToolDef>>,
    pub budget: Budget,
}

/// A recorded call, and an error to re-raise in the agent when an enclosing
/// limit (the trial's deadline) stopped the handler.
pub struct Reply {
    pub record: CallRecord,
    pub unwind: Option<mlua::Error>,
}

impl Executor {
    pub fn tool(&self, name: &str) -> Option<&Arc<ToolDef>> {
        self.tools.iter().find(|t| t.spec.name == name)
    }

    /// Validate, authorise and run one request. `handlers` is the suite's
    /// `_tool_index` table in this trial's Lua state.
    pub fn call(
        &self,
        lua: &Lua,
        state: &RefCell<TrialState>,
        handlers: &Table,
        ctx: &Table,
        id: Option<String>,
        name: &str,
        args: Json,
    ) -> Reply {
        let (started_ms, id, verdict) = {
            let st = state.borrow();
            let id = id.unwrap_or_else(|| format!("c{}", st.calls.len() + 1));
            (st.elapsed_ms(), id, self.authorise(&st, name, &args))
        };
        let tool = self.tool(name);
        let mut record = CallRecord {
            id,
            name: name.to_string(),
            args: args.clone(),
            status: CallStatus::Executed,
            effect: tool.map(|t| t.spec.effect.clone()),
            result: None,
            error: None,
            started_ms,
            ended_ms: started_ms,
        };
        let mut unwind = None;
        match verdict {
            Err((status, msg)) => {
                if status == CallStatus::Denied && msg.starts_with("budget:") {
                    state.borrow_mut().budget_hit = Some(msg.trim_start_matches("budget: ").to_string());
                }
                record.status = status;
                record.error = Some(msg);
            }
            Ok(()) => {
                state.borrow_mut().denied = None;
                let (status, result, error, stop) = run_handler(lua, handlers, ctx, name, &args);
                record.status = status;
                record.result = result;
                record.error = error;
                unwind = stop;
                if let Some(why) = state.borrow_mut().denied.take() {
                    record.status = CallStatus::Denied;
                    record.result = None;
                    record.error = Some(format!("policy: {why}"));
                }
            }
        }
        let mut st = state.borrow_mut();
        record.ended_ms = st.elapsed_ms();
        st.usage.tool_calls += 1;
        st.calls.push(record.clone());
        Reply { record, unwind }
    }

    fn authorise(&self, st: &TrialState, name: &str, args: &Json) -> Result<(), (CallStatus, String)> {
        if let Some(why) = spent_budget(&self.budget, &st.usage, st.calls.len()) {
            return Err((CallStatus::Denied, format!("budget: {why}")));
        }
        let Some(tool) = self.tool(name) else {
            let offered: Vec<&str> = self.tools.iter().map(|t| t.spec.name.as_str()).collect();
            return Err((CallStatus::Rejected, format!("unknown tool '{name}' (offered: {})", offered.join(", "))));
        };
        let errors = lua::host::schema_errors(&tool.validator, args);
        if !errors.is_empty() {
            return Err((CallStatus::Rejected, format!("invalid arguments for {name}: {}", errors.join("; "))));
        }
        for req in &tool.spec.requires {
            let ok = st.calls.iter().any(|c| &c.name == req && c.status == CallStatus::Executed);
            if !ok {
                return Err((CallStatus::Denied, format!("policy: {name} requires a successful {req} first")));
            }
        }
        Ok(())
    }
}

type HandlerOutcome = (CallStatus, Option<Json>, Option<String>, Option<mlua::Error>);

fn run_handler(lua: &Lua, handlers: &Table, ctx: &Table, name: &str, args: &Json) -> HandlerOutcome {
    let handler: mlua::Result<Function> = handlers.get::<Table>(name).and_then(|t| t.get("run"));
    let handler = match handler {
        Ok(f) => f,
        Err(e) => {
            return (CallStatus::Failed, None, Some(format!("no handler for {name}: {e}")), None);
        }
    };
    let args_lua = match convert::to_lua(lua, args) {
        Ok(v) => v,
        Err(e) => {
            return (CallStatus::Failed, None, Some(format!("arguments: {e}")), None);
        }
    };
    let limits = lua::limits(lua);
    let seg = Segment {
        instructions: Some(TOOL_INSTRUCTIONS),
        deadline: Some(Instant::now() + Duration::from_secs(TOOL_SECONDS)),
    };
    match limits.guard(lua, seg, || handler.call::<Value>((ctx.clone(), args_lua))) {
        Guarded::Done(Ok(v)) => match convert::to_json(lua, &v) {
            Ok(j) => (CallStatus::Executed, Some(j), None, None),
            Err(e) => (CallStatus::Failed, None, Some(format!("{name} returned a value that is not JSON: {e}")), None),
        },
        Guarded::Done(Err(e)) => {
            let msg = lua::describe(&e);
            let unwind = limits.is_tripped().then_some(e);
            (CallStatus::Failed, None, Some(msg), unwind)
        }
        Guarded::Stopped(stop) => {
            (CallStatus::Failed, None, Some(format!("{name} handler stopped: {}", stop.describe())), None)
        }
    }
}
