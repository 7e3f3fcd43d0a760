//! The scripted agent: a Lua function `function(task, env) ... return answer end`
//! that plays the agent, deterministic given the trial's seed.
//!
//! `env.call(name, args)` goes through the executor like any other agent's
//! request and returns `result, status, error` with status `ok | error | denied`.
//! `env.say(text)` is a turn to the user and returns the user's reply, if any.

use std::cell::RefCell;
use std::rc::Rc;

use mlua::{Function, Lua, Table, Value};

use crate::executor::Executor;
use crate::lua::api::env::{self, AgentSide};
use crate::lua::engine::{self as lua, Segment, convert, limits::Guarded};
use crate::record::{Ended, Journal};
use crate::trial::user::User;
use crate::trial::{AgentEnd, Trial, agent_turn};
use crate::util::paths::display_path;

pub fn run(trial: &Trial<'_>) -> AgentEnd {
    let lua = &trial.lua;
    let limits = lua::limits(lua);
    let seg = Segment { instructions: None, deadline: Some(trial.deadline) };
    let result = limits.guard(lua, seg, || {
        let f = agent_function(lua, &trial.agent)?;
        let task = task_table(trial)?;
        let env = env_table(trial)?;
        f.call::<Value>((task, env))
    });
    let budget_hit = trial.state.borrow().budget_hit.clone();
    let mut end = AgentEnd::running();
    match result {
        Guarded::Done(Ok(v)) => {
            end.answer = answer_text(lua, &v);
            trial.state.borrow_mut().usage.turns += 1;
            if let Some(reason) = trial.state.borrow_mut().abstained.take() {
                end.ended = Ended::Abstained;
                end.answer = reason;
            }
        }
        Guarded::Done(Err(e)) => {
            end.ended = Ended::Crashed;
            end.error = Some(lua::describe(&e));
        }
        Guarded::Stopped(stop) => {
            end.ended = Ended::Deadline;
            end.error = Some(format!("the agent was stopped: {}", stop.describe()));
        }
    }
    if let Some(why) = budget_hit {
        end.ended = Ended::Budget;
        end.error = Some(format!("budget spent: {why}"));
    }
    end
}

fn agent_function(lua: &Lua, agent: &Table) -> mlua::Result<Function> {
    if let Some(f) = agent.get::<Option<Function>>("fn")? {
        return Ok(f);
    }
    let path: String = agent.get("path")?;
    match lua::run_file(lua, std::path::Path::new(&path))? {
        Value::Function(f) => Ok(f),
        other => Err(mlua::Error::runtime(format!(
            "{}: a scripted agent file must return function(task, env), got {}",
            display_path(std::path::Path::new(&path)),
            other.type_name()
        ))),
    }
}

fn answer_text(lua: &Lua, v: &Value) -> String {
    match v {
        Value::Nil => String::new(),
        Value::String(s) => s.to_string_lossy(),
        Value::Integer(i) => i.to_string(),
        Value::Number(n) => n.to_string(),
        other => {
            convert::to_json(lua, other).map(|j| j.to_string()).unwrap_or_else(|e| format!("(unprintable answer: {e})"))
        }
    }
}

fn task_table(trial: &Trial<'_>) -> mlua::Result<Table> {
    let lua = &trial.lua;
    let task = lua.create_table()?;
    task.raw_set("input", trial.input.as_str())?;
    task.raw_set("case", trial.case.spec.id.as_str())?;
    task.raw_set("trial", trial.number)?;
    task.raw_set("seed", trial.seed as i64)?;
    let tools = lua.create_table()?;
    for t in trial.case.tools.iter() {
        let tt = lua.create_table()?;
        tt.raw_set("name", t.spec.name.as_str())?;
        tt.raw_set("description", t.spec.description.as_str())?;
        tt.raw_set("parameters", convert::to_lua(lua, &t.spec.params)?)?;
        tools.raw_push(tt)?;
    }
    task.raw_set("tools", tools)?;
    // The case's metadata: a scripted agent is the suite's own code, and a
    // gold agent plays the case's reference solution from it (SPEC §14).
    task.raw_set("metadata", trial.case_table.raw_get::<Value>("metadata")?)?;
    Ok(task)
}

/// What `env.call` and `env.say` reach: the trial's executor and user.
struct Side {
    state: Rc<RefCell<Journal>>,
    executor: Rc<Executor>,
    user: Rc<User>,
    max_turns: Option<u32>,
    deadline: std::time::Instant,
}

impl AgentSide for Side {
    fn call(
        &self,
        lua: &Lua,
        name: &str,
        args: serde_json::Value,
    ) -> mlua::Result<(Value, &'static str, Option<String>)> {
        let reply = self.executor.call(lua, None, name, args);
        if let Some(e) = reply.unwind {
            return Err(e);
        }
        if let Some(why) = self.state.borrow().budget_hit.clone() {
            return Err(mlua::Error::runtime(format!("budget spent: {why}")));
        }
        let result = match &reply.record.result {
            Some(r) => convert::to_lua(lua, r)?,
            None => Value::Nil,
        };
        Ok((result, reply.record.reply_status(), reply.record.error))
    }

    fn say(&self, text: String) -> Result<Option<String>, String> {
        agent_turn(&self.state, self.max_turns, &self.user, self.deadline, text)
    }

    fn abstain(&self, reason: String) {
        self.state.borrow_mut().abstained = Some(reason);
    }
}

fn env_table(trial: &Trial<'_>) -> mlua::Result<Table> {
    let side = Side {
        state: trial.state.clone(),
        executor: trial.executor.clone(),
        user: trial.user.clone(),
        max_turns: trial.plan.suite.budget.max_turns,
        deadline: trial.deadline,
    };
    env::build(&trial.lua, Rc::new(side), trial.rng.clone(), trial.agent_phase.clone())
}
