//! A worker thread's Lua state and the evaluated suite it keeps: a state is
//! reused across the worker's trials (each in a fresh environment), and the
//! suite evaluated for a case is reused for its next trial while the
//! reachability walk proves nothing changed it (see `lua::engine::reuse`).

use std::cell::RefCell;

use mlua::{Lua, Table};

use super::plan::{CasePlan, Plan};
use crate::lua::engine::{self, Log, reuse};
use crate::lua::{api, load};
use crate::sandbox;

/// A worker thread's Lua state, reused across its trials (see `lua::engine::new_state`).
struct Worker {
    plan: u64,
    lua: Lua,
    /// The suite as last evaluated in this state, while it may be reused.
    evaluated: Option<Evaluated>,
}

/// A suite evaluated for one case, and the snapshot that proves it unchanged
/// (see `lua::reuse`).
struct Evaluated {
    case: String,
    suite: Table,
    snapshot: Table,
    /// What the suite file printed while it was evaluated: every trial's log starts with it.
    log: Vec<String>,
}

thread_local! {
    static WORKER: RefCell<Option<Worker>> = const { RefCell::new(None) };
}

/// Memory above which a worker's state is replaced rather than reused.
const RETIRE_ABOVE_BYTES: usize = 64 * 1024 * 1024;

pub fn worker_state(plan: &Plan) -> Result<Lua, String> {
    WORKER.with(|w| {
        let mut w = w.borrow_mut();
        if let Some(worker) = &*w
            && worker.plan == plan.id
        {
            return Ok(worker.lua.clone());
        }
        let cfg = load::state_config(&plan.suite.path, plan.suite.sources.clone(), 0, false);
        let lua = api::new_state(cfg).map_err(|e| format!("cannot create a Lua state: {e}"))?;
        *w = Some(Worker { plan: plan.id, lua: lua.clone(), evaluated: None });
        Ok(lua)
    })
}

/// The suite table for this trial: the one evaluated for an earlier trial of
/// the same case on this worker when nothing has changed it since, else a
/// fresh evaluation in a fresh environment. Returns it with the log lines the
/// evaluation printed.
pub fn evaluated_suite(lua: &Lua, plan: &Plan, case: &CasePlan) -> Result<(Table, Vec<String>), String> {
    let reused = WORKER.with(|w| {
        let w = w.borrow();
        let e = w.as_ref()?.evaluated.as_ref()?;
        (e.case == case.spec.id).then(|| (e.suite.clone(), e.log.clone()))
    });
    if let Some(found) = reused {
        return Ok(found);
    }
    engine::fresh_env(lua).map_err(|e| e.to_string())?;
    lua.set_app_data(Log::default());
    lua.set_named_registry_value("evalua.target", case.spec.id.as_str()).map_err(|e| e.to_string())?;
    // Code at the top of the suite file sees the same random numbers in every
    // trial of a case, whether or not its evaluation is reused.
    seed_math_random(lua, sandbox::trial_seed(plan.seed ^ 0x5417e, &case.spec.id, 0))?;
    let suite_t = load::eval_suite(lua, &plan.suite.path)?;
    let log = lua.remove_app_data::<Log>().map(|l| l.0).unwrap_or_default();
    let snapshot = reuse::snapshot(lua, &suite_t).ok().flatten();
    WORKER.with(|w| {
        if let Some(worker) = w.borrow_mut().as_mut() {
            worker.evaluated = snapshot.map(|snapshot| Evaluated {
                case: case.spec.id.clone(),
                suite: suite_t.clone(),
                snapshot,
                log: log.clone(),
            });
        }
    });
    Ok((suite_t, log))
}

/// After a trial: keep the evaluated suite for the next trial only if the
/// trial changed nothing reachable from it (a counter in a file-level local,
/// a global, a module's table, …). Otherwise the next trial evaluates afresh.
pub fn keep_suite_if_unchanged(lua: &Lua) {
    WORKER.with(|w| {
        let mut w = w.borrow_mut();
        let Some(worker) = w.as_mut() else { return };
        let unchanged = match &worker.evaluated {
            Some(e) => reuse::unchanged(lua, &e.suite, &e.snapshot).unwrap_or(false),
            None => return,
        };
        if !unchanged {
            worker.evaluated = None;
        }
    });
}

pub fn seed_math_random(lua: &Lua, seed: u64) -> Result<(), String> {
    // The raw library table: users see a read-only proxy of it.
    let math: Table = lua.named_registry_value("evalua.math").map_err(|e| e.to_string())?;
    math.get::<mlua::Function>("randomseed").and_then(|f| f.call::<()>(seed as i64)).map_err(|e| e.to_string())
}

/// Keep the worker's state for the next trial only if this one left it clean:
/// no limit tripped (a stopped script may have left half-done work behind) and
/// memory back to normal. Otherwise the next trial starts from a new state.
pub fn retire_if_dirty(lua: &Lua, trips_before: u64) {
    if engine::limits(lua).trips() != trips_before || lua.used_memory() > RETIRE_ABOVE_BYTES {
        WORKER.with(|w| *w.borrow_mut() = None);
    }
}

/// Forget the worker's state: its next trial starts from a new one.
pub fn forget() {
    WORKER.with(|w| *w.borrow_mut() = None);
}
