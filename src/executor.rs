//! One door for every tool call, whatever the agent: validate, authorise, run,
//! record. A request is recorded with its status whether or not it ran:
//!
//! - `rejected`: unknown tool, or arguments that fail the tool's JSON schema;
//! - `denied`: a budget is spent (the trial then ends as `budget`) or a
//!   `requires` policy is not met;
//! - `failed`: the handler raised (or hit its limits);
//! - `executed`: the handler returned; its result is recorded;
//! - `faulted`: a fault rule of the suite fired on the call (see [`fault`]):
//!   the handler did not run, or its result was reshaped (attacker text
//!   planted in it, for `inject`), or withheld behind a timeout after its
//!   effect happened (`timeout` with `effect = "applied"`).

pub mod fault;

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
    pub tools: Arc<Vec<Arc<ToolDef>>>,
    pub budget: Budget,
    pub journal: Rc<RefCell<Journal>>,
    /// The suite's `_tool_index` table in the trial's Lua state.
    pub handlers: Table,
    pub ctx: Table,
    /// The case's fault rules (SPEC §11).
    pub faults: fault::Injector,
    /// The trial's deadline: a handler (and the SQL or command it runs) never
    /// runs past it, whatever its own limit leaves.
    pub deadline: Instant,
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
        let (started_ms, (id, requested_id), verdict) = {
            let st = state.borrow();
            (st.elapsed_ms(), unique_id(&st.calls, id), self.authorise(&st, name, &args))
        };
        let tool = self.tool(name);
        let mut record = CallRecord {
            id,
            requested_id,
            name: name.to_string(),
            args: args.clone(),
            status: CallStatus::Executed,
            effect: tool.map(|t| t.spec.effect.clone()),
            result: None,
            error: None,
            error_type: None,
            started_ms,
            ended_ms: started_ms,
            diverged: false,
            recorded: None,
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
            Ok(()) => match self.faults.fire(name) {
                Some(f) if f.before().is_some() => {
                    // The fault stands in for the handler, which does not run.
                    let message = f.before();
                    record.error = message.clone();
                    record.status = CallStatus::faulted(f.record(false, message, None, None));
                }
                fired => {
                    state.borrow_mut().denied = None;
                    let (status, result, error, stop) = run_handler(lua, handlers, ctx, name, &args, self.deadline);
                    record.status = status;
                    record.result = result;
                    record.error = error;
                    unwind = stop;
                    if let Some(why) = state.borrow_mut().denied.take() {
                        record.status = CallStatus::Denied;
                        record.result = None;
                        record.error = Some(format!("policy: {why}"));
                    }
                    // A fault that acts on the result applies only to a call that succeeded.
                    if let Some(f) = fired
                        && record.status == CallStatus::Executed
                    {
                        let original = record.result.take().unwrap_or(Json::Null);
                        record.status = CallStatus::faulted(match f.after(&original) {
                            fault::After::Result(shaped, changed) => {
                                record.result = Some(shaped);
                                f.record(true, None, Some(original), Some(changed))
                            }
                            fault::After::Error(message) => {
                                record.error = Some(message.clone());
                                f.record(true, Some(message), Some(original), None)
                            }
                            fault::After::Injected(planted, target) => {
                                record.result = Some(planted);
                                let mut r = f.record(true, None, Some(original), Some(1));
                                r.injected = f.rule.text.clone();
                                r.target = Some(target);
                                r
                            }
                        });
                    }
                }
            },
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
        if let Json::String(text) = args {
            // A model's arguments that did not parse arrive as their text.
            let what = match serde_json::from_str::<Json>(text) {
                Ok(_) => "a JSON string, not an object".to_string(),
                Err(e) => format!("not valid JSON ({e})"),
            };
            return Err(Refusal::Rejected(format!("invalid arguments for {name}: {what}: {}", snippet(text))));
        }
        let errors = if tool.spec.validate { schema::errors(&tool.validator, args) } else { Vec::new() };
        if !errors.is_empty() {
            return Err(Refusal::Rejected(format!("invalid arguments for {name}: {}", errors.join("; "))));
        }
        for req in &tool.spec.requires {
            let ok = st.calls.iter().any(|c| &c.name == req && c.handler_succeeded());
            if !ok {
                return Err(Refusal::Policy(format!("{name} requires a successful {req} first")));
            }
        }
        Ok(())
    }
}

/// A call id unique in the trial, and the agent's own id when it had to be
/// replaced: an id the agent gives is kept when no earlier call has it, else
/// suffixed (`c1` → `c1.2`); a call without one gets the first free `cN`.
/// (MCP calls carry no id of the agent's; JSON Lines and model calls do, and
/// one trial may mix them.)
fn unique_id(calls: &[CallRecord], wanted: Option<String>) -> (String, Option<String>) {
    let taken = |id: &str| calls.iter().any(|c| c.id == id);
    match wanted {
        Some(w) if !taken(&w) => (w, None),
        Some(w) => {
            let id = (2..).map(|k| format!("{w}.{k}")).find(|id| !taken(id)).expect("a free suffix");
            (id, Some(w))
        }
        None => ((calls.len() + 1..).map(|n| format!("c{n}")).find(|id| !taken(id)).expect("a free id"), None),
    }
}

/// The start of a long text, for an error message.
fn snippet(text: &str) -> String {
    const MAX: usize = 200;
    if text.chars().count() > MAX {
        format!("{}…", text.chars().take(MAX).collect::<String>())
    } else {
        text.to_string()
    }
}

type HandlerOutcome = (CallStatus, Option<Json>, Option<String>, Option<mlua::Error>);

fn run_handler(lua: &Lua, handlers: &Table, ctx: &Table, name: &str, args: &Json, until: Instant) -> HandlerOutcome {
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
        deadline: Some((Instant::now() + Duration::from_secs(TOOL_SECONDS)).min(until)),
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
