//! `host.judge_rubric` and `host.judge_pairwise`: the Lua side of the judges
//! (stdlib/evalua/judge.lua builds the checks; the work is in `crate::judge`).
//!
//! Each returns what a check returns: `true` / `false` and evidence, or
//! `host.SKIP` (no judge reachable by configuration), or `host.UNDECIDED`,
//! evidence and a message (a grader error that keeps its evidence: the votes,
//! the invalid answer).

use std::sync::Arc;
use std::time::Instant;

use mlua::{IntoLuaMulti, Lua, LuaSerdeExt, MultiValue, Table, UserData, UserDataRef, Value};
use serde_json::Value as Json;

use super::marks;
use crate::judge::prompt::{TrialData, strip_call};
use crate::judge::{self, Status};
use crate::lua::engine::{self, convert};
use crate::spec::{JudgeSpec, ModelSpec};

/// A judge check's spec, parsed once when the check is declared
/// (`host.judge_spec`), not at every check: the checks' closures hold it.
pub struct Parsed(pub Arc<JudgeSpec>);

impl UserData for Parsed {}

fn spec_of(lua: &Lua, v: &Value) -> mlua::Result<JudgeSpec> {
    let j = convert::to_json(lua, v).map_err(mlua::Error::runtime)?;
    serde_json::from_value(j).map_err(|e| mlua::Error::runtime(format!("judge: bad spec: {e}")))
}

fn list(lua: &Lua, t: &Table, key: &str) -> mlua::Result<Vec<Json>> {
    let v: Value = t.get(key)?;
    Ok(match convert::to_json(lua, &v).map_err(mlua::Error::runtime)? {
        Json::Array(a) => a,
        _ => Vec::new(),
    })
}

/// What the judge sees of the trial `t`. Timings and call ids are left out:
/// they change from run to run and would defeat the cache.
pub fn trial_data(lua: &Lua, t: &Table) -> mlua::Result<TrialData> {
    let case: Option<Table> = t.get("case")?;
    let input = match case {
        Some(c) => c.get::<Option<String>>("input")?.unwrap_or_default(),
        None => String::new(),
    };
    let calls = list(lua, t, "calls")?.iter().map(strip_call).collect();
    Ok(TrialData {
        input,
        answer: t.get::<Option<String>>("answer")?.unwrap_or_default(),
        calls,
        messages: list(lua, t, "messages")?,
        outbox: list(lua, t, "outbox")?,
    })
}

/// The state's judge cache (off under the run's `--no-cache`).
fn cache_of(lua: &Lua) -> judge::cache::Cache {
    judge::cache::Cache::of(&engine::suite_dir(lua), engine::judge_cache(lua))
}

/// Run `f` (a blocking judge call) without charging its time to the check's limits.
fn blocking<R>(lua: &Lua, f: impl FnOnce() -> R) -> R {
    let started = Instant::now();
    // The judge has its own timeouts: no deadline is published meanwhile (see util::watch).
    crate::util::watch::publish(None);
    let r = f();
    engine::limits(lua).extend_deadlines(started.elapsed());
    r
}

fn conclude(lua: &Lua, c: judge::Conclusion) -> mlua::Result<MultiValue> {
    // The calls go to the trial's trace, as `chat` spans when exported.
    if !c.calls.is_empty() {
        let mut calls = lua.remove_app_data::<judge::JudgeCalls>().unwrap_or_default();
        calls.0.extend(c.calls);
        lua.set_app_data(calls);
    }
    let evidence = lua.to_value(&c.evidence)?;
    match c.status {
        Status::Passed => (true, evidence).into_lua_multi(lua),
        Status::Failed => (false, evidence).into_lua_multi(lua),
        Status::Skipped(why) => (marks::SKIP, why).into_lua_multi(lua),
        Status::Undecided(msg) => (marks::UNDECIDED, evidence, msg).into_lua_multi(lua),
    }
}

pub fn register(lua: &Lua, h: &Table) -> mlua::Result<()> {
    h.raw_set(
        "judge_spec",
        lua.create_function(|lua, spec: Value| lua.create_userdata(Parsed(Arc::new(spec_of(lua, &spec)?))))?,
    )?;
    h.raw_set(
        "judge_rubric",
        lua.create_function(|lua, (spec, t): (UserDataRef<Parsed>, Table)| {
            let JudgeSpec::Rubric { criteria, models, panel, .. } = &*spec.0 else {
                return Err(mlua::Error::runtime("judge_rubric: not a rubric spec"));
            };
            let data = trial_data(lua, &t)?;
            let cache = cache_of(lua);
            let c = blocking(lua, || judge::rubric(criteria, models, *panel, &data, &cache));
            conclude(lua, c)
        })?,
    )?;
    h.raw_set(
        "judge_pairwise",
        lua.create_function(|lua, (spec, a, b, t): (UserDataRef<Parsed>, String, String, Table)| {
            let JudgeSpec::Pairwise { question, models, pass, .. } = &*spec.0 else {
                return Err(mlua::Error::runtime("judge_pairwise: not a pairwise spec"));
            };
            let task = trial_data(lua, &t)?.input;
            let cache = cache_of(lua);
            let c = blocking(lua, || judge::pairwise(question, models, pass, &task, &a, &b, &cache));
            conclude(lua, c)
        })?,
    )?;
    h.raw_set(
        "judge_cascade",
        lua.create_function(|lua, (spec, t): (UserDataRef<Parsed>, Table)| {
            let JudgeSpec::Cascade { first, then, escalate, .. } = &*spec.0 else {
                return Err(mlua::Error::runtime("judge_cascade: not a cascade spec"));
            };
            let data = trial_data(lua, &t)?;
            let cache = cache_of(lua);
            let c = blocking(lua, || judge::verdict::cascade(first, then, escalate, &data, &cache));
            conclude(lua, c)
        })?,
    )?;
    // Whether a model spec is reachable by configuration, and why not.
    h.raw_set(
        "judge_reachable",
        lua.create_function(|lua, m: Value| {
            let j = convert::to_json(lua, &m).map_err(mlua::Error::runtime)?;
            let spec: ModelSpec =
                serde_json::from_value(j).map_err(|e| mlua::Error::runtime(format!("judge.model: {e}")))?;
            Ok(match judge::resolve(&spec) {
                Ok(_) => (true, None),
                Err(e) => (false, Some(e)),
            })
        })?,
    )?;
    Ok(())
}
