//! `env`: what a scripted agent gets (SPEC §4): `env.call(name, args)`
//! (through the trial's executor, returning `result, status, error`),
//! `env.say(text)` (a turn to the user, returning the reply),
//! `env.abstain(reason)` (decline the task, SPEC §22) and
//! `env.random()` (seeded per trial). The agent layer provides the calls
//! through [`AgentSide`]; this module only binds them into Lua.

use std::cell::RefCell;
use std::rc::Rc;

use mlua::{Lua, Table, Value};

use super::ctx::random_fn;
use super::phase::Phase;
use crate::lua::engine::convert;
use crate::sandbox::TrialRng;

/// The agent side of a trial, as a scripted agent reaches it.
pub trait AgentSide {
    /// One tool call: `(result, status, error)` with status `ok | error | denied`.
    /// An `Err` is raised in the agent (its budget is spent, or a limit tripped).
    fn call(
        &self,
        lua: &Lua,
        name: &str,
        args: serde_json::Value,
    ) -> mlua::Result<(Value, &'static str, Option<String>)>;
    /// A turn to the user; Err(why) when the turn budget is spent.
    fn say(&self, text: String) -> Result<Option<String>, String>;
    /// The agent declines the task: the trial ends as `abstained` when the
    /// agent's function returns, with `reason` as its answer.
    fn abstain(&self, reason: String);
}

/// Build the `env` table for one trial.
/// `env` works only during the agent's turn (`phase`).
pub fn build(lua: &Lua, side: Rc<dyn AgentSide>, rng: Rc<RefCell<TrialRng>>, phase: Phase) -> mlua::Result<Table> {
    let env = lua.create_table()?;
    let s = side.clone();
    let p = phase.clone();
    env.raw_set(
        "call",
        lua.create_function(move |lua, (name, args): (String, Value)| {
            p.check("env.call")?;
            let args = match &args {
                Value::Nil => serde_json::json!({}),
                other => convert::to_json(lua, other)
                    .map_err(|e| mlua::Error::runtime(format!("env.call('{name}'): arguments are not JSON: {e}")))?,
            };
            s.call(lua, &name, args)
        })?,
    )?;
    env.raw_set("random", random_fn(lua, rng)?)?;
    let (s, p) = (side.clone(), phase.clone());
    env.raw_set(
        "abstain",
        lua.create_function(move |_, reason: Value| {
            p.check("env.abstain")?;
            let Value::String(reason) = reason else {
                return Err(mlua::Error::runtime("env.abstain(reason): the reason must be a string"));
            };
            let reason = reason.to_string_lossy();
            s.abstain(reason.clone());
            Ok(reason)
        })?,
    )?;
    env.raw_set(
        "say",
        lua.create_function(move |_, text: String| {
            phase.check("env.say")?;
            side.say(text).map_err(|why| mlua::Error::runtime(format!("budget spent: {why}")))
        })?,
    )?;
    Ok(env)
}
