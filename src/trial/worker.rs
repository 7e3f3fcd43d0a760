//! A worker thread's Lua state and what it keeps evaluated in it: the one
//! worker of every kind of unit (a trial of a plan, a recorded item of a
//! grade). A thread keeps a state per owner (a plan, a grading context; a
//! grade that re-executes items on a plan uses both), reuses it across the
//! owner's units, keeps what the owner evaluated in it ([`keep`]) while the
//! units prove it unchanged, and retires it when a limit tripped or memory
//! grew ([`retire_if_dirty`]).
//!
//! A plan's trials: the state is reused across the worker's trials. The suite file is evaluated
//! in it once, in a fresh environment, and reused for the next trial, of any
//! case, while the reachability walk proves the last trial changed nothing
//! (see `lua::engine::reuse`). The evaluation keeps each case's declaration
//! aside (out of the trials' reach); a trial materialises the one case it
//! runs: its declared table, or its dataset row read again and mapped, with
//! its checks built. So a trial costs the same whatever the suite's size.
//!
//! A worker keeps at most [`WINDOW`] declarations: those of the planned cases
//! from the one it needed when it evaluated the suite onwards (work runs in
//! plan order). A trial of a case past the window evaluates the suite again
//! from there. So a worker's memory is bounded whatever the suite's size, and
//! a suite of up to `WINDOW` cases is evaluated once per worker.

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::File;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlua::{Function, Lua, Table, Value};

use super::plan::{CasePlan, Plan};
use crate::lua::api::declare::{self, DatasetDecl, Declarations};
use crate::lua::engine::{self, Log, Segment, convert, limits::Guarded, reuse};
use crate::lua::{api, load};
use crate::spec::{CaseSource, DatasetSpec};
use crate::util::dataset::{self, RowPos};

/// A worker thread's Lua state for one owner, reused across its units (see `lua::engine::new_state`).
struct Worker {
    owner: u64,
    lua: Lua,
    /// What the owner evaluated in this state (a plan's [`Evaluated`], a
    /// grading context's suite), while the units prove it unchanged.
    kept: Option<Box<dyn Any>>,
    /// Memory in use right after the last evaluation.
    baseline: usize,
}

/// The states a thread keeps at most, the least recently made dropped first.
const OWNERS: usize = 2;

/// A new owner of worker states (a plan, a grading context): unique in the process.
pub fn new_owner() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The thread's Lua state for `owner`, made from `config` when it has none.
pub fn state(owner: u64, config: impl FnOnce() -> crate::lua::engine::StateConfig) -> Result<Lua, String> {
    WORKERS.with(|w| {
        let mut w = w.borrow_mut();
        if let Some(worker) = w.iter().find(|x| x.owner == owner) {
            return Ok(worker.lua.clone());
        }
        let lua = api::new_state(config()).map_err(|e| format!("cannot create a Lua state: {e}"))?;
        // Generational collection: the evaluated suite (every case's
        // declaration) is old and stays; what a unit leaves behind is young
        // and goes in the next minor collection, instead of piling up until
        // the whole heap has doubled (which on a 100,000-case suite was
        // thousands of trials' garbage).
        lua.gc_set_mode(mlua::state::GcMode::Generational(mlua::state::GcGenParams::default()));
        if w.len() >= OWNERS {
            w.remove(0);
        }
        w.push(Worker { owner, lua: lua.clone(), kept: None, baseline: 0 });
        Ok(lua)
    })
}

/// `f` on what `owner`'s state keeps, if it keeps a `T`.
pub fn with_kept<T: 'static, R>(owner: u64, f: impl FnOnce(Option<&mut T>) -> R) -> R {
    WORKERS.with(|w| {
        let mut w = w.borrow_mut();
        let kept = w.iter_mut().find(|x| x.owner == owner).and_then(|x| x.kept.as_mut()?.downcast_mut::<T>());
        f(kept)
    })
}

/// Keep `value`, just evaluated in `owner`'s state, for the next units. The
/// evaluation's garbage goes now, not when a major collection comes round:
/// memory stays what is kept, the baseline [`retire_if_dirty`] measures from.
pub fn keep<T: 'static>(owner: u64, lua: &Lua, value: T) {
    let _ = lua.gc_collect();
    let used = lua.used_memory();
    WORKERS.with(|w| {
        if let Some(worker) = w.borrow_mut().iter_mut().find(|x| x.owner == owner) {
            worker.kept = Some(Box::new(value));
            worker.baseline = used;
        }
    });
}

/// Drop what `owner`'s state keeps: its next unit evaluates afresh. Returns
/// whether it kept something (its old declarations then go in a full collection).
pub fn discard(owner: u64) -> bool {
    let had = WORKERS.with(|w| w.borrow_mut().iter_mut().find(|x| x.owner == owner).and_then(|x| x.kept.take()));
    had.is_some()
}

/// An evaluated suite, the declarations it made, the snapshot that proves it
/// unchanged, and the case materialised last.
struct Evaluated {
    suite: Table,
    /// Case id → its declaration (`suite:case`), for the planned cases in `window`.
    decls: Table,
    /// The plan indexes of the cases whose declarations are kept.
    window: std::ops::Range<usize>,
    /// The `suite:dataset` registrations, in order: `{ path = ..., map = fn }`.
    datasets: Table,
    snapshot: Table,
    /// What the suite file printed while it was evaluated: every trial's log starts with it.
    log: Vec<String>,
    case: Option<Materialized>,
    /// The last trial's case was built from its item's own row (`with_row`):
    /// not kept, and the next trial builds its own afresh, so nothing of it
    /// is reused and nothing of it needs comparing.
    own_row: bool,
    /// Dataset files opened to read rows again, by dataset index.
    files: HashMap<u32, File>,
}

/// The case the last trial ran, reused by the next trial of the same case
/// while nothing reachable from it changed.
struct Materialized {
    id: String,
    table: Table,
    roots: Vec<Value>,
    snapshot: Table,
}

/// Run `f` with the dataset row a case is built from replaced by `row` (a
/// re-executed item that carries the task it ran on, SPEC §14): the case's
/// dataset `map` sees that row instead of the file's, and the case table is
/// neither reused from nor kept for another trial.
pub fn with_row<R>(row: Option<&serde_json::Value>, f: impl FnOnce() -> R) -> R {
    let Some(row) = row else { return f() };
    ROW.with(|r| *r.borrow_mut() = Some(row.clone()));
    let out = f();
    ROW.with(|r| *r.borrow_mut() = None);
    out
}

fn row_override() -> Option<serde_json::Value> {
    ROW.with(|r| r.borrow().clone())
}

thread_local! {
    static ROW: RefCell<Option<serde_json::Value>> = const { RefCell::new(None) };
    static WORKERS: RefCell<Vec<Worker>> = const { RefCell::new(Vec::new()) };
}

/// How many case declarations a worker keeps (~650 bytes each for a plain
/// case: ~32 MB), from the case it needed when it evaluated the suite.
/// `EVALUA_CASE_WINDOW` changes it (less memory, more evaluations).
const WINDOW: usize = 50_000;

fn window() -> usize {
    static WINDOW_SIZE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *WINDOW_SIZE.get_or_init(|| {
        std::env::var("EVALUA_CASE_WINDOW").ok().and_then(|v| v.parse().ok()).filter(|&n| n > 0).unwrap_or(WINDOW)
    })
}

/// Memory growth above which a worker collects its garbage in full.
const COLLECT_ABOVE_BYTES: usize = 16 * 1024 * 1024;

/// Memory growth (after a full collection) above which a worker's state is
/// replaced rather than reused.
const RETIRE_ABOVE_BYTES: usize = 64 * 1024 * 1024;
/// Limits on materialising one case (a dataset row's `map`, building checks).
const MATERIALIZE_INSTRUCTIONS: u64 = 10_000_000;
const MATERIALIZE_SECONDS: u64 = 5;

/// The worker's state for `plan`'s trials.
pub fn worker_state(plan: &Plan) -> Result<Lua, String> {
    state(plan.id, || crate::lua::engine::StateConfig {
        judge_cache: plan.switches.judge_cache,
        ..load::state_config(&plan.suite.path, plan.suite.sources.clone(), 0, false)
    })
}

/// A trial's evaluation keeps each planned case's declaration aside, and
/// each dataset's `map`, for the worker to materialise later.
struct Keep {
    wanted: Arc<HashMap<String, usize>>,
    window: std::ops::Range<usize>,
    decls: Table,
    datasets: Table,
}

impl Declarations for Keep {
    fn case(&self, lua: &Lua, case: Table) -> mlua::Result<Option<String>> {
        engine::limits(lua).extend(load::CASE_INSTRUCTIONS, load::CASE_TIME);
        if let Ok(Value::String(id)) = case.raw_get::<Value>("id")
            && self.wanted.get(&*id.to_str()?).is_some_and(|i| self.window.contains(i))
        {
            self.decls.raw_set(id, case)?;
        }
        Ok(None)
    }

    fn dataset(&self, lua: &Lua, d: DatasetDecl) -> mlua::Result<Option<String>> {
        let reg = lua.create_table()?;
        reg.raw_set("path", d.path)?;
        reg.raw_set("map", d.function)?;
        self.datasets.raw_push(reg)?;
        Ok(None)
    }
}

/// Evaluate the suite file in a fresh environment of `lua`, keeping the
/// declarations of the planned cases in `window`.
fn evaluate(lua: &Lua, plan: &Plan, window: std::ops::Range<usize>) -> Result<Evaluated, String> {
    engine::fresh_env(lua).map_err(|e| e.to_string())?;
    lua.set_app_data(Log::default());
    let decls = lua.create_table().map_err(|e| e.to_string())?;
    let datasets = lua.create_table().map_err(|e| e.to_string())?;
    lua.set_app_data(declare::Declare(Rc::new(Keep {
        wanted: plan.ids.clone(),
        window: window.clone(),
        decls: decls.clone(),
        datasets: datasets.clone(),
    })));
    // Code at the top of the suite file sees the same random numbers in every
    // trial, whether or not its evaluation is reused.
    let evaluated = seed_math_random(lua, crate::sandbox::trial_seed(plan.seed ^ 0x5417e, "", 0))
        .and_then(|_| load::eval_suite(lua, &plan.suite.path));
    // Cases are declared while the file is evaluated, never during a trial.
    lua.remove_app_data::<declare::Declare>();
    let suite = evaluated?;
    let log = lua.remove_app_data::<Log>().map(|l| l.0).unwrap_or_default();
    let snapshot = reuse::trust_host(lua)
        .and_then(|_| reuse::suite_roots(lua, &suite, &[Value::Table(datasets.clone())]))
        .and_then(|roots| reuse::snapshot(lua, roots))
        .map_err(|e| e.to_string())?;
    // A suite that keeps a coroutine is evaluated afresh for every trial: an
    // empty list never matches a walk.
    let snapshot = match snapshot {
        Some(s) => s,
        None => {
            let never = lua.create_table().map_err(|e| e.to_string())?;
            never.raw_set(0, -1).map_err(|e| e.to_string())?;
            never
        }
    };
    Ok(Evaluated { suite, decls, window, datasets, snapshot, log, case: None, own_row: false, files: HashMap::new() })
}

/// The evaluated suite and the case table for this trial: reused when the
/// last trial proved unchanged, else evaluated and materialised afresh. The
/// trial's log (the state's `Log`) starts with what the evaluation printed.
pub fn case_table(lua: &Lua, plan: &Plan, case: &CasePlan) -> Result<(Table, Table), String> {
    // A declared case's index in the plan: outside the kept window, evaluate again from it.
    let index = match case.spec.source {
        CaseSource::Declared => plan.ids.get(&case.spec.id).copied(),
        CaseSource::Row { .. } => None,
    };
    let fresh =
        with_kept::<Evaluated, _>(plan.id, |ev| ev.is_none_or(|ev| index.is_some_and(|i| !ev.window.contains(&i))));
    if fresh {
        // The last evaluation's declarations go before the next one builds its
        // own (they are old: only a full collection frees them).
        if discard(plan.id) {
            let _ = lua.gc_collect();
        }
        // The file's top level sees the clock it saw when the suite loaded,
        // whichever case's trial happens to evaluate it.
        let clock = set_clock(lua, 0);
        let start = index.unwrap_or(0);
        let ev = evaluate(lua, plan, start..start.saturating_add(window()));
        set_clock(lua, clock);
        // Every case it built and did not keep goes now: memory stays what the kept window holds.
        keep(plan.id, lua, ev?);
    }
    let (suite, log, reused, decls, datasets) = with_kept::<Evaluated, _>(plan.id, |ev| {
        let ev = ev.ok_or("the worker's state was dropped while the suite was evaluated")?;
        let reused = ev.case.as_ref().filter(|m| m.id == case.spec.id).map(|m| m.table.clone());
        Ok::<_, String>((ev.suite.clone(), ev.log.clone(), reused, ev.decls.clone(), ev.datasets.clone()))
    })?;
    lua.set_app_data(Log(log));
    let own_row = row_override().is_some() && matches!(case.spec.source, CaseSource::Row { .. });
    if let Some(t) = reused.filter(|_| !own_row) {
        return Ok((suite, t));
    }
    // A dataset's `map` sees the same random numbers whichever trial runs it first.
    seed_math_random(lua, crate::sandbox::trial_seed(plan.seed ^ 0x5417e, &case.spec.id, 0))?;
    let (decl, table) = materialize(lua, plan, case, &suite, &decls, &datasets)?;
    let roots = vec![decl, Value::Table(table.clone())];
    let snapshot = if own_row { None } else { reuse::snapshot(lua, roots.clone()).map_err(|e| e.to_string())? };
    with_kept::<Evaluated, _>(plan.id, |ev| {
        if let Some(ev) = ev {
            ev.own_row = own_row;
            ev.case = snapshot.map(|snapshot| Materialized {
                id: case.spec.id.clone(),
                table: table.clone(),
                roots,
                snapshot,
            });
        }
    });
    Ok((suite, table))
}

/// Set the state's frozen clock (`os.time()`); returns the one it had.
fn set_clock(lua: &Lua, clock: i64) -> i64 {
    match lua.app_data_mut::<engine::StateData>() {
        Some(mut data) => std::mem::replace(&mut data.config.clock, clock),
        None => clock,
    }
}

/// Build the case table a trial runs: its declaration (or its dataset row,
/// read again and mapped) through the stdlib's `_materialize`. Returns the
/// declaration and the table.
fn materialize(
    lua: &Lua,
    plan: &Plan,
    case: &CasePlan,
    suite: &Table,
    decls: &Table,
    datasets: &Table,
) -> Result<(Value, Table), String> {
    let id = &case.spec.id;
    let limits = engine::limits(lua);
    let seg = Segment {
        instructions: Some(MATERIALIZE_INSTRUCTIONS),
        deadline: Some(Instant::now() + Duration::from_secs(MATERIALIZE_SECONDS)),
    };
    let decl: Value = match case.spec.source {
        CaseSource::Declared => match decls.raw_get::<Value>(id.as_str()).map_err(|e| e.to_string())? {
            Value::Nil => return Err(format!("case '{id}' was not declared when the suite was evaluated again")),
            v => v,
        },
        CaseSource::Row { dataset, row, line, offset, length } => {
            let spec = plan
                .suite
                .datasets
                .get(dataset as usize)
                .ok_or_else(|| format!("case '{id}': no dataset #{dataset}"))?;
            let reg: Table = datasets.raw_get(dataset as i64 + 1).map_err(|_| {
                format!("case '{id}': {} was not declared when the suite was evaluated again", spec.path)
            })?;
            let json = match row_override() {
                Some(own) => own,
                None => read_row(plan.id, dataset, spec, RowPos { line, offset, length })
                    .map_err(|e| format!("{}:{line}: {e}", spec.path))?,
            };
            let value = convert::to_lua(lua, &json).map_err(|e| e.to_string())?;
            match reg.raw_get::<Option<Function>>("map").map_err(|e| e.to_string())? {
                None => value,
                Some(map) => match limits.guard(lua, seg, || map.call::<Value>((value, row))) {
                    Guarded::Done(Ok(v)) => v,
                    Guarded::Done(Err(e)) => {
                        return Err(format!("{}:{line}: map: {}", spec.path, engine::describe(&e)));
                    }
                    Guarded::Stopped(s) => return Err(format!("{}:{line}: map stopped: {}", spec.path, s.describe())),
                },
            }
        }
    };
    let build = || -> mlua::Result<Table> {
        // The loaded module is a read-only proxy (a userdata; see `lua::engine::state`).
        let materialize: Function =
            match lua.named_registry_value::<Table>("evalua.stdlib")?.raw_get::<Value>("evalua")? {
                Value::Table(t) => t.get("_materialize")?,
                Value::UserData(u) => mlua::ObjectLike::get(&u, "_materialize")?,
                _ => return Err(mlua::Error::runtime("the stdlib is not loaded")),
            };
        materialize.call::<Table>((suite.clone(), decl.clone()))
    };
    let table = match limits.guard(lua, seg, build) {
        Guarded::Done(Ok(t)) => t,
        Guarded::Done(Err(e)) => return Err(format!("case '{id}': {}", engine::describe(&e))),
        Guarded::Stopped(s) => return Err(format!("case '{id}': materialising it stopped: {}", s.describe())),
    };
    let got: Option<String> = table.raw_get("id").map_err(|e| e.to_string())?;
    if got.as_deref() != Some(id.as_str()) {
        return Err(format!(
            "case '{id}' ({}) now declares case '{}': its declaration must not depend on when it is read",
            case.spec.location,
            got.unwrap_or_default()
        ));
    }
    Ok((decl, table))
}

/// A dataset row read again through this worker's handle on the file.
fn read_row(owner: u64, index: u32, spec: &DatasetSpec, pos: RowPos) -> Result<serde_json::Value, String> {
    with_kept::<Evaluated, _>(owner, |ev| {
        let ev = ev.ok_or("no worker state")?;
        if let std::collections::hash_map::Entry::Vacant(e) = ev.files.entry(index) {
            let f = File::open(&spec.abs).map_err(|e| e.to_string())?;
            let meta = f.metadata().map_err(|e| e.to_string())?;
            if spec.stamp.is_some_and(|(len, mtime)| meta.len() != len || meta.modified().ok() != Some(mtime)) {
                return Err("the file changed since the suite was loaded".to_string());
            }
            e.insert(f);
        }
        dataset::read_row(&ev.files[&index], spec.format, pos, &spec.headers)
    })
}

/// After a trial: keep the evaluated suite (and the case) for the next trial
/// only if the trial changed nothing reachable from them (a counter in a
/// file-level local, a global, a module's table, the case table, …).
/// Otherwise the next trial evaluates afresh.
pub fn keep_suite_if_unchanged(plan: &Plan, lua: &Lua) {
    let same = with_kept::<Evaluated, _>(plan.id, |ev| {
        let Some(ev) = ev else { return true };
        let suite_same = reuse::suite_roots(lua, &ev.suite, &[Value::Table(ev.datasets.clone())])
            .and_then(|roots| reuse::unchanged(lua, roots, &ev.snapshot))
            .unwrap_or(false);
        let case_same = match &ev.case {
            Some(m) => reuse::unchanged(lua, m.roots.clone(), &m.snapshot).unwrap_or(false),
            // Built from the item's own row: the next trial builds its case
            // afresh, and what the suite holds was walked above.
            None if ev.own_row => true,
            // Not kept (it holds a coroutine): its declaration may have changed too.
            None => false,
        };
        suite_same && case_same
    });
    if !same {
        discard(plan.id);
    }
}

pub fn seed_math_random(lua: &Lua, seed: u64) -> Result<(), String> {
    // The raw library table: users see a read-only proxy of it.
    let math: Table = lua.named_registry_value("evalua.math").map_err(|e| e.to_string())?;
    math.get::<mlua::Function>("randomseed").and_then(|f| f.call::<()>(seed as i64)).map_err(|e| e.to_string())
}

/// Keep `owner`'s state for the next unit only if this one left it clean:
/// no limit tripped (a stopped script may have left half-done work behind) and
/// memory back near what the kept evaluation holds. Otherwise the next unit
/// starts from a new state. Returns whether the state was retired.
pub fn retire_if_dirty(owner: u64, lua: &Lua, trips_before: u64) -> bool {
    WORKERS.with(|w| {
        let mut w = w.borrow_mut();
        let Some(i) = w.iter().position(|x| x.owner == owner) else { return false };
        let baseline = w[i].baseline;
        let grown = || {
            // Much of a trial's garbage grows old before it dies, and the
            // collector's own major collections let it reach twice the heap
            // (~7 KB a plain trial: 35 MB per 5,000 trials). A full collection
            // at 16 MB above the baseline (every ~2,000 plain trials, ~20 ms)
            // keeps a worker near what its window of declarations holds.
            if lua.used_memory() > baseline + COLLECT_ABOVE_BYTES && lua.gc_collect().is_err() {
                return true;
            }
            lua.used_memory() > baseline + RETIRE_ABOVE_BYTES
        };
        let dirty = engine::limits(lua).trips() != trips_before || grown();
        if dirty {
            w.remove(i);
        }
        dirty
    })
}

/// Forget `owner`'s state: its next unit starts from a new one.
pub fn forget(owner: u64) {
    WORKERS.with(|w| w.borrow_mut().retain(|x| x.owner != owner));
}

/// The suite's agent table a trial uses: the one of `agents` named `name`,
/// else the default (`agent`).
pub fn suite_agent(suite_t: &Table, name: Option<&str>) -> Result<Table, String> {
    // A suite adversary of `evalua harden` (SPEC §19), played as a named agent.
    if let Some(adv) = name.and_then(|n| n.strip_prefix(crate::spec::harden::ADVERSARY_PREFIX)) {
        let all = suite_t.get::<Option<Table>>("_adversaries").map_err(|e| e.to_string())?;
        return all
            .and_then(|t| t.get::<Option<Table>>(adv).ok().flatten())
            .ok_or_else(|| format!("the suite has no adversary named '{adv}'"));
    }
    if let Some(name) = name
        && let Some(agents) = suite_t.get::<Option<Table>>("_agents").map_err(|e| e.to_string())?
    {
        return agents
            .get::<Option<Table>>(name)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("the suite has no agent named '{name}'"));
    }
    suite_t.get("agent").map_err(|e| format!("the suite has no agent: {e}"))
}
