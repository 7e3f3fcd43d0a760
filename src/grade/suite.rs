//! The suite a worker grades items with: evaluated once in the worker's Lua
//! state (`trial::worker`, the one worker of every unit), in full (every
//! declared case and dataset row: any case may match an item), and reused
//! while the reachability walk of `lua::engine::reuse` proves an item
//! changed nothing in it.

use std::rc::Rc;

use mlua::{Lua, Table, Value};

use super::context::Context;
use crate::lua::api::declare;
use crate::lua::engine::{self as engine, Log, convert, reuse};
use crate::lua::load;
use crate::trial::worker;
use crate::util::dataset::{self, Format};

/// `evalua grade`'s declarations: every case table the suite declares (each
/// dataset row through its row function), kept by id. The suite was checked
/// when it loaded; a row that fails here is left out.
struct Collect(Table);

impl declare::Declarations for Collect {
    fn case(&self, lua: &Lua, case: Table) -> mlua::Result<Option<String>> {
        engine::limits(lua).extend(load::CASE_INSTRUCTIONS, load::CASE_TIME);
        if let Ok(Value::String(id)) = case.raw_get::<Value>("id") {
            self.0.raw_set(id, case)?;
        }
        Ok(None)
    }

    fn dataset(&self, lua: &Lua, d: declare::DatasetDecl) -> mlua::Result<Option<String>> {
        let path = std::path::PathBuf::from(&d.path);
        let Some(format) = d.format.as_deref().map_or_else(|| Format::from_path(&path), Format::from_name) else {
            return Ok(Some(format!("{}: unknown dataset format", d.path)));
        };
        let Some(row_fn) = d.function else { return Ok(None) };
        let mut i = 0u32;
        let streamed = dataset::stream(&path, format, |pos, row| -> Result<(), String> {
            i += 1;
            engine::limits(lua).extend(load::CASE_INSTRUCTIONS * 10, load::CASE_TIME * 10);
            let Ok(json) = row else { return Ok(()) };
            let at = format!("{}:{}", d.path, pos.line);
            let case = convert::to_lua(lua, &json).and_then(|v| row_fn.call::<Table>((v, i, at)));
            if let Ok(case) = case
                && let Ok(Value::String(id)) = case.raw_get::<Value>("id")
            {
                self.0.raw_set(id, case).map_err(|e| e.to_string())?;
            }
            Ok(())
        });
        Ok(match streamed {
            Ok(Ok(_)) => None,
            Ok(Err(e)) => Some(e),
            Err(e) => Some(format!("{}: cannot read: {e}", d.path)),
        })
    }
}

/// The suite as evaluated in the worker's state (`trial::worker`): every
/// case table, by id, on it. Kept while no item changes it.
struct Evaluated(Table);

/// The worker's state for `ctx` and the suite evaluated in it, in full: any case may match an item.
pub(super) fn evaluated(ctx: &Context) -> Result<(Lua, Table), String> {
    let lua = worker::state(ctx.id, || load::state_config(&ctx.suite.path, ctx.suite.sources.clone(), 0, true))?;
    if let Some(suite) = worker::with_kept::<Evaluated, _>(ctx.id, |e| e.map(|e| e.0.clone())) {
        return Ok((lua, suite));
    }
    {
        lua.set_app_data(Log::default());
        // The suite's case tables (declared and dataset rows), by id, kept on
        // the suite table where an item's case is looked up.
        let cases = lua.create_table().map_err(|e| e.to_string())?;
        lua.set_app_data(declare::Declare(Rc::new(Collect(cases.clone()))));
        let evaluated = load::eval_suite(&lua, &ctx.suite.path);
        lua.remove_app_data::<declare::Declare>();
        let suite = evaluated?;
        suite.raw_set("_case_index", cases).map_err(|e| e.to_string())?;
        // Trusts the host's objects for the per-item snapshots (see `Guard`).
        reuse::trust_host(&lua).map_err(|e| e.to_string())?;
        worker::keep(ctx.id, &lua, Evaluated(suite.clone()));
        Ok((lua, suite))
    }
}

/// What proves an item left the evaluated suite as it found it: snapshots
/// (`lua::engine::reuse`) of the parts of the suite that run for the item,
/// taken before they run: the monitors, adapter and `match`, then the
/// matched case. Anything an item's code can change is reachable from them
/// (or from the globals and project modules, which every snapshot lists).
#[derive(Default)]
pub(super) struct Guard {
    parts: Vec<(Table, Table)>,
    /// A part could not be listed (it holds a coroutine): evaluate afresh.
    unlisted: bool,
}

impl Guard {
    pub(super) fn watch(&mut self, lua: &Lua, values: &[Value]) {
        let Ok(part) = lua.create_sequence_from(values.iter().cloned()) else {
            self.unlisted = true;
            return;
        };
        match reuse::snapshot_part(lua, &part) {
            Ok(Some(snap)) => self.parts.push((part, snap)),
            _ => self.unlisted = true,
        }
    }

    fn unchanged(&self, lua: &Lua) -> bool {
        !self.unlisted
            && self.parts.iter().all(|(p, s)| {
                reuse::suite_roots(lua, p, &[]).and_then(|r| reuse::unchanged(lua, r, s)).unwrap_or(false)
            })
    }
}

/// After an item: keep the evaluated suite only if the item left it as it
/// was, and the state only if no limit tripped.
pub(super) fn after_item(ctx: &Context, lua: &Lua, trips_before: u64, guard: &Guard) {
    if !worker::retire_if_dirty(ctx.id, lua, trips_before) && !guard.unchanged(lua) {
        worker::discard(ctx.id);
    }
}
