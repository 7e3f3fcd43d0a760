//! The scripted agent: a Lua function `function(task, env) ... return answer end`
//! that plays the agent, deterministic given the trial's seed.
//!
//! `env.call(name, args)` goes through the executor like any other agent's
//! request and returns `result, status, error` with status `ok | error | denied`.
//! `env.say(text)` is a turn to the user and returns the user's reply, if any.

use mlua::{Function, Lua, Table, Value};

use crate::lua::{self, Segment, convert, limits::Guarded};
use crate::record::Ended;
use crate::trial::{AgentEnd, Trial, agent_turn, random_fn};

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
            lua::display_path(std::path::Path::new(&path)),
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
    task.raw_set("input", trial.case.spec.input.as_str())?;
    task.raw_set("case", trial.case.spec.id.as_str())?;
    task.raw_set("trial", trial.number)?;
    task.raw_set("seed", trial.seed as i64)?;
    let tools = lua.create_table()?;
    for t in &trial.case.tools {
        let tt = lua.create_table()?;
        tt.raw_set("name", t.spec.name.as_str())?;
        tt.raw_set("description", t.spec.description.as_str())?;
        tt.raw_set("parameters", convert::to_lua(lua, &t.spec.params)?)?;
        tools.raw_push(tt)?;
    }
    task.raw_set("tools", tools)?;
    Ok(task)
}

fn env_table(trial: &Trial<'_>) -> mlua::Result<Table> {
    let lua = &trial.lua;
    let env = lua.create_table()?;

    let (state, executor, handlers, ctx) =
        (trial.state.clone(), trial.executor.clone(), trial.handlers.clone(), trial.ctx.clone());
    env.raw_set(
        "call",
        lua.create_function(move |lua, (name, args): (String, Value)| {
            let args = match &args {
                Value::Nil => serde_json::json!({}),
                other => convert::to_json(lua, other)
                    .map_err(|e| mlua::Error::runtime(format!("env.call('{name}'): arguments are not JSON: {e}")))?,
            };
            let reply = executor.call(lua, &state, &handlers, &ctx, None, &name, args);
            if let Some(e) = reply.unwind {
                return Err(e);
            }
            if let Some(why) = state.borrow().budget_hit.clone() {
                return Err(mlua::Error::runtime(format!("budget spent: {why}")));
            }
            let result = match &reply.record.result {
                Some(r) => convert::to_lua(lua, r)?,
                None => Value::Nil,
            };
            Ok((result, reply.record.status.reply(), reply.record.error))
        })?,
    )?;

    env.raw_set("random", random_fn(lua, trial.rng.clone())?)?;

    let (state, max_turns, user) = (trial.state.clone(), trial.plan.suite.budget.max_turns, trial.user.clone());
    env.raw_set(
        "say",
        lua.create_function(move |_, text: String| {
            agent_turn(&state, max_turns, &user, text)
                .map_err(|why| mlua::Error::runtime(format!("budget spent: {why}")))
        })?,
    )?;
    Ok(env)
}
