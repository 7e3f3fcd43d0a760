//! One door for every tool call, whatever the agent: validate, authorise, run,
//! record. A request is recorded with its status whether or not it ran:
//!
//! - `rejected`: unknown tool, or arguments that fail the tool's JSON schema;
//! - `denied`: a budget is spent (the trial then ends as `budget`) or a
//!   `requires` policy is not met;
//! - `failed`: the handler raised (or hit its limits);
//! - `executed`: the handler returned; its result is recorded.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlua::{Function, Lua, Table, Value};
use serde_json::Value as Json;

use crate::lua::engine::{self as lua, Segment, convert, limits::Guarded};
use crate::record::journal::{BudgetHit, Journal, spent_budget};
use crate::record::{CallRecord, CallStatus};
use crate::spec::{Budget, ToolSpec};
use crate::util::schema;

/// Limits on one tool handler call.
const TOOL_INSTRUCTIONS: u64 = 50_000_000;
const TOOL_SECONDS: u64 = 10;

pub struct ToolDef {
    pub spec: ToolSpec,
    pub validator: jsonschema::Validator,
}

/// A trial's executor: the tools its case offers, the budget, and where
/// calls run (the handlers and `ctx` in the trial's Lua state) and are
/// recorded (the trial's journal).
pub struct Executor {
    /// The tools offered in this case.
    pub tools: Vec<Arc<ToolDef>>,
    pub budget: Budget,
    pub journal: Rc<RefCell<Journal>>,
    /// The suite's `_tool_index` table in the trial's Lua state.
    pub handlers: Table,
    pub ctx: Table,
}

/// Why the executor refused a request before its handler ran.
#[derive(Debug, Clone, PartialEq)]
enum Refusal {
    /// Unknown tool or arguments that fail its schema: `rejected`.
    Rejected(String),
    /// A `requires` policy is not met: `denied`.
    Policy(String),
    /// A budget is spent: `denied`, and the trial ends as `budget`.
    Budget(BudgetHit),
}

impl Refusal {
    fn status(&self) -> CallStatus {
        match self {
            Refusal::Rejected(_) => CallStatus::Rejected,
            Refusal::Policy(_) | Refusal::Budget(_) => CallStatus::Denied,
        }
    }
    /// The error the call is recorded with (and the agent told).
    fn message(&self) -> String {
        match self {
            Refusal::Rejected(m) => m.clone(),
            Refusal::Policy(m) => format!("policy: {m}"),
            Refusal::Budget(hit) => format!("budget: {hit}"),
        }
    }
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

    /// Validate, authorise and run one request.
    pub fn call(&self, lua: &Lua, id: Option<String>, name: &str, args: Json) -> Reply {
        let (state, handlers, ctx) = (&*self.journal, &self.handlers, &self.ctx);
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
            error_type: None,
            started_ms,
            ended_ms: started_ms,
        };
        let mut unwind = None;
        match verdict {
            Err(refusal) => {
                record.status = refusal.status();
                record.error = Some(refusal.message());
                if let Refusal::Budget(hit) = refusal {
                    state.borrow_mut().budget_hit = Some(hit);
                }
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

    fn authorise(&self, st: &Journal, name: &str, args: &Json) -> Result<(), Refusal> {
        if let Some(hit) = spent_budget(&self.budget, &st.usage, st.calls.len()) {
            return Err(Refusal::Budget(hit));
        }
        let Some(tool) = self.tool(name) else {
            let offered: Vec<&str> = self.tools.iter().map(|t| t.spec.name.as_str()).collect();
            return Err(Refusal::Rejected(format!("unknown tool '{name}' (offered: {})", offered.join(", "))));
        };
        let errors = schema::errors(&tool.validator, args);
        if !errors.is_empty() {
            return Err(Refusal::Rejected(format!("invalid arguments for {name}: {}", errors.join("; "))));
        }
        for req in &tool.spec.requires {
            let ok = st.calls.iter().any(|c| &c.name == req && c.status == CallStatus::Executed);
            if !ok {
                return Err(Refusal::Policy(format!("{name} requires a successful {req} first")));
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
