//! Reusing an evaluated suite for the next trial, only when that is safe.
//!
//! Evaluating the suite file again for every trial gives each trial fresh
//! closures, but it costs more than the trial itself once a suite has many
//! cases. So a worker evaluates the suite once and reuses it for its next
//! trials, of any case, as long as it can prove each trial changed nothing
//! the next one could see.
//!
//! The proof is a walk: in a fixed order, it lists every value reachable from
//! a set of roots (table contents and metatables, function upvalues). The
//! walk right after the evaluation is the snapshot; the walk after each trial
//! must list the same values (`rawequal`: tables and functions by identity,
//! the rest by value), or the next trial evaluates afresh. The worker walks
//! two sets of roots: the evaluated suite (the suite table, the trial's
//! globals, its project modules, the dataset maps), and the case the trial
//! ran (its declaration and its materialised table with its checks). Other
//! cases' declarations are not walked: a trial reaches one only through
//! these roots, and then the walk covers it; so a walk costs what the suite
//! and one case hold, not what all the cases do. A counter in a file-level local, a
//! global, a module's table, a case table changed through `ctx.case`: each
//! changes the list. A coroutine's state cannot be listed, so a suite that
//! keeps one is never reused.
//!
//! Objects users cannot change are *trusted* and listed by identity only:
//! the shared base environment, the host table and the stdlib (which must
//! keep no mutable state of its own). The walk runs in the C API, without
//! the instruction hook: it is the host's code, bounded by what it walks.

use std::collections::HashSet;
use std::ffi::{c_int, c_void};

use mlua::{Lua, Table, Value, ffi};

/// Ends an object's entries in the list, so that moving a value from one
/// object to the next changes the list.
static END: u8 = 0;

/// Objects reachable from the host's own roots, by address. They live as
/// long as the state, so an address cannot be reused while it is listed.
#[derive(Default)]
struct Trusted(HashSet<usize>);

enum Mode {
    /// Add everything reachable to the trusted set.
    Trust,
    /// Record the list into a new table (stack index 2 on return).
    Record,
    /// Compare with the list in the table at stack index 2.
    Compare,
}

struct Walk<'a> {
    state: *mut ffi::lua_State,
    mode: Mode,
    trusted: &'a mut HashSet<usize>,
    /// Objects listed in this walk. Owned outside the raw call, which can
    /// longjmp (on a Lua memory error) past anything it would have to drop.
    seen: &'a mut HashSet<usize>,
    /// Stack index of the recorded or compared list.
    list: c_int,
    queue: c_int,
    n: ffi::lua_Integer,
    queued: ffi::lua_Integer,
}

impl Walk<'_> {
    /// List the value on top of the stack and pop it. False when it differs
    /// from the snapshot.
    ///
    /// # Safety
    ///
    /// `self.state` must be the running Lua state, inside the protected call
    /// of [`walk`], with the list at `self.list`, the queue at `self.queue`
    /// (absolute indexes) and at least 3 free stack slots; a value to list
    /// must be on top of the stack.
    unsafe fn emit(&mut self) -> bool {
        // SAFETY: the caller upholds the contract above; every index used is
        // absolute or relative to the value it pushed itself.
        unsafe {
            let l = self.state;
            self.n += 1;
            match self.mode {
                Mode::Compare => {
                    ffi::lua_rawgeti(l, self.list, self.n);
                    let same = ffi::lua_rawequal(l, -1, -2) != 0;
                    ffi::lua_pop(l, 1);
                    if !same {
                        ffi::lua_pop(l, 1);
                        return false;
                    }
                }
                Mode::Record => {
                    ffi::lua_pushvalue(l, -1);
                    ffi::lua_rawseti(l, self.list, self.n);
                }
                Mode::Trust => {}
            }
            let t = ffi::lua_type(l, -1);
            if matches!(t, ffi::LUA_TTABLE | ffi::LUA_TFUNCTION | ffi::LUA_TTHREAD | ffi::LUA_TUSERDATA) {
                let p = ffi::lua_topointer(l, -1) as usize;
                let new = match self.mode {
                    Mode::Trust => self.trusted.insert(p),
                    _ => !self.trusted.contains(&p) && self.seen.insert(p),
                };
                if new {
                    self.queued += 1;
                    ffi::lua_pushvalue(l, -1);
                    ffi::lua_rawseti(l, self.queue, self.queued);
                }
            }
            ffi::lua_pop(l, 1);
            true
        }
    }

    /// Walk from the roots (a sequence at stack index 1). False when the
    /// list differs from the snapshot, or holds something that cannot be
    /// listed (a coroutine).
    ///
    /// # Safety
    ///
    /// As for [`Walk::emit`]: the running state, inside [`walk`]'s protected
    /// call, with the roots at index 1 and the list and queue set up.
    unsafe fn run(&mut self) -> bool {
        // SAFETY: the caller upholds the contract above; the stack space the
        // walk needs is checked first (lua_checkstack) and each object's
        // entries are pushed and popped in balance.
        unsafe {
            let l = self.state;
            if ffi::lua_checkstack(l, 8) == 0 {
                return false;
            }
            let roots = ffi::lua_rawlen(l, 1) as ffi::lua_Integer;
            for i in 1..=roots {
                ffi::lua_rawgeti(l, 1, i);
                if !self.emit() {
                    return false;
                }
            }
            let mut head = 1;
            while head <= self.queued {
                ffi::lua_rawgeti(l, self.queue, head);
                head += 1;
                let o = ffi::lua_gettop(l);
                match ffi::lua_type(l, o) {
                    ffi::LUA_TTABLE => {
                        // The raw metatable, even one hidden by __metatable.
                        if ffi::lua_getmetatable(l, o) == 0 {
                            ffi::lua_pushnil(l);
                        }
                        if !self.emit() {
                            return false;
                        }
                        ffi::lua_pushnil(l);
                        while ffi::lua_next(l, o) != 0 {
                            ffi::lua_pushvalue(l, -2);
                            if !self.emit() || !self.emit() {
                                return false;
                            }
                        }
                    }
                    ffi::LUA_TFUNCTION => {
                        let mut i = 1;
                        while !ffi::lua_getupvalue(l, o, i).is_null() {
                            if !self.emit() {
                                return false;
                            }
                            i += 1;
                        }
                    }
                    ffi::LUA_TTHREAD if !matches!(self.mode, Mode::Trust) => return false,
                    // The host's read-only proxies keep their content in their
                    // (hidden) metatable: trusted with everything they hold.
                    ffi::LUA_TUSERDATA
                        if matches!(self.mode, Mode::Trust) && ffi::lua_getmetatable(l, o) != 0 && !self.emit() =>
                    {
                        return false;
                    }
                    _ => {}
                }
                ffi::lua_pushlightuserdata(l, &END as *const u8 as *mut c_void);
                if !self.emit() {
                    return false;
                }
                ffi::lua_pop(l, 1);
            }
            true
        }
    }
}

/// Walk `roots` in `mode`. Record returns the list; Compare returns whether
/// it matched (`list` then holds the snapshot).
fn walk(lua: &Lua, mode: Mode, roots: Vec<Value>, list: Option<&Table>) -> mlua::Result<(bool, Option<Table>)> {
    let mut trusted = lua.remove_app_data::<Trusted>().unwrap_or_default();
    if matches!(mode, Mode::Trust) {
        trusted.0.clear();
    }
    let mut seen = HashSet::new();
    let mut ok = false;
    let record = matches!(mode, Mode::Record);
    let compare = matches!(mode, Mode::Compare);
    // SAFETY: the closure keeps the stack balanced within the protected call
    // exec_raw makes (which also turns a memory error into an Err), uses
    // absolute indexes, and checks the stack space it needs. It owns nothing
    // that needs dropping: a longjmp out of it leaks nothing (`seen` and
    // `trusted` live outside).
    let result = unsafe {
        lua.exec_raw::<Option<Table>>((roots, list.cloned()), |l| {
            if record {
                ffi::lua_settop(l, 1);
                ffi::lua_createtable(l, 0, 0);
            }
            ffi::lua_createtable(l, 0, 0);
            let mut w =
                Walk { state: l, mode, trusted: &mut trusted.0, seen: &mut seen, list: 2, queue: 3, n: 0, queued: 0 };
            ok = w.run();
            if record && ok {
                ffi::lua_pushinteger(l, w.n);
                ffi::lua_rawseti(l, 2, 0);
            } else if compare && ok {
                ffi::lua_rawgeti(l, 2, 0);
                ok = ffi::lua_tointeger(l, -1) == w.n;
            }
            // Return the list (or nil) and nothing else.
            ffi::lua_settop(l, 2);
            ffi::lua_replace(l, 1);
            if !(record && ok) {
                ffi::lua_pushnil(l);
                ffi::lua_replace(l, 1);
            }
        })
    };
    lua.set_app_data(trusted);
    Ok((ok, result?))
}

/// The objects a trial's code could have changed in an evaluated suite: the
/// suite table, the trial's globals, its project modules, and `extra` (what
/// else the evaluation left for later, such as the dataset `map` functions).
pub fn suite_roots(lua: &Lua, suite: &Table, extra: &[Value]) -> mlua::Result<Vec<Value>> {
    let mut roots = vec![
        Value::Table(suite.clone()),
        Value::Table(super::state::env(lua)?),
        lua.named_registry_value::<Value>("evalua.loaded")?,
    ];
    roots.extend(extra.iter().cloned());
    Ok(roots)
}

/// List the host's own objects (the shared base environment, the host table,
/// the stdlib) as trusted: later walks list them by identity only. Once per
/// evaluation is enough: they live as long as the state.
pub fn trust_host(lua: &Lua) -> mlua::Result<()> {
    let host_roots = vec![
        Value::Table(lua.globals()),
        lua.named_registry_value::<Value>("evalua.host")?,
        lua.named_registry_value::<Value>("evalua.stdlib")?,
    ];
    walk(lua, Mode::Trust, host_roots, None)?;
    Ok(())
}

/// The snapshot of everything reachable from `roots`, or None when it
/// cannot be reused (it keeps a coroutine). Call [`trust_host`] first.
pub fn snapshot(lua: &Lua, roots: Vec<Value>) -> mlua::Result<Option<Table>> {
    let (ok, list) = walk(lua, Mode::Record, roots, None)?;
    Ok(if ok { list } else { None })
}

/// A snapshot of what `part` reaches (with the globals and project modules),
/// in a state whose host objects [`trust_host`] has already trusted: cheaper
/// than a whole suite's when only part of it will run (`evalua grade` runs the
/// monitors and one case per item). None when it cannot be listed.
pub fn snapshot_part(lua: &Lua, part: &Table) -> mlua::Result<Option<Table>> {
    snapshot(lua, suite_roots(lua, part, &[])?)
}

/// True when everything the snapshot of the same `roots` listed is as it was.
pub fn unchanged(lua: &Lua, roots: Vec<Value>, snapshot: &Table) -> mlua::Result<bool> {
    Ok(walk(lua, Mode::Compare, roots, Some(snapshot))?.0)
}
