//! Instruction-count and wall-clock limits on every call into Lua.
//!
//! Calls nest (an agent calls a tool handler; a check is called on its own), so
//! limits form a stack of segments; the hook stops code when any segment on the
//! stack is over its budget. A script can catch the hook's error with `pcall`,
//! so once a segment trips the hook fires on *every* instruction and raises
//! again until control is back in Rust, and the host decides the outcome from
//! its own flag, never from whether the Lua call happened to return normally.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;

use std::ffi::{c_char, c_int, c_void};

use mlua::{Lua, ffi};

use crate::util::watch;

/// How many VM instructions run between two hook calls in normal operation.
const EVERY: u32 = 1000;

/// Why a segment was stopped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    Instructions(u64),
    Deadline,
    /// The run was asked to stop (SIGINT, SIGTERM): see `util::cancel`.
    Interrupted,
}

impl Stop {
    /// The error the hook raises (the count is in [`Stop::describe`]).
    fn message(&self) -> &'static str {
        match self {
            Stop::Instructions(_) => "instruction limit exceeded",
            Stop::Deadline => "time limit exceeded",
            Stop::Interrupted => "interrupted: the run was stopped",
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Stop::Instructions(n) => format!("instruction limit exceeded ({n} instructions)"),
            Stop::Deadline => "time limit exceeded".to_string(),
            Stop::Interrupted => "interrupted: the run was stopped".to_string(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Segment {
    /// At most this many instructions (None: unlimited).
    pub instructions: Option<u64>,
    pub deadline: Option<Instant>,
}

struct Active {
    limit: Option<u64>,
    budget: Option<u64>,
    deadline: Option<Instant>,
}

#[derive(Default)]
pub struct Limits {
    count: Cell<u64>,
    stack: RefCell<Vec<Active>>,
    tripped: Cell<Option<(usize, Stop)>>,
    trips: Cell<u64>,
}

/// The result of running a closure under a segment.
pub enum Guarded<R> {
    Done(mlua::Result<R>),
    /// This segment's own limit stopped it.
    Stopped(Stop),
}

/// The registry key under which a state keeps a pointer to its [`Limits`]
/// (the hook reads it; the `Rc` in the state's app data keeps it alive).
static LIMITS_KEY: u8 = 0;

/// The instruction hook, installed with `lua_sethook` directly rather than
/// through mlua: mlua's hook wrapper, on an error, truncates the stack with
/// `lua_settop`, and a hook runs in the frame of the Lua function it
/// interrupted, so that truncation ran the function's `__close` metamethods
/// inside the hook, where hooks are off: a `__close` that loops could never
/// be stopped. This hook raises with `lua_error` and touches nothing else;
/// `__close` metamethods then run as the error unwinds, with hooks on.
///
/// # Safety
/// Called by Lua only, on a state whose registry holds a live `Limits` under
/// [`LIMITS_KEY`] (set by [`Limits::arm`]).
unsafe extern "C-unwind" fn hook(l: *mut ffi::lua_State, _ar: *mut ffi::lua_Debug) {
    // Every Rust value is gone before lua_error jumps out of this frame.
    let raise = {
        // SAFETY: the key's lightuserdata points at the state's Limits, which
        // the state's app data keeps alive as long as the state.
        let limits = unsafe {
            ffi::lua_rawgetp(l, ffi::LUA_REGISTRYINDEX, &LIMITS_KEY as *const u8 as *const c_void);
            let p = ffi::lua_touserdata(l, -1) as *const Limits;
            ffi::lua_settop(l, -2);
            p.as_ref()
        };
        // SAFETY: reads a field of the running state.
        let every = unsafe { ffi::lua_gethookcount(l) }.max(1) as u32;
        match limits.map(|x| x.on_hook(every)) {
            Some(Hooked::Raise { msg, newly }) => {
                if newly {
                    // Fire on every instruction until the host regains control.
                    // SAFETY: l is the running state; sethook only sets fields.
                    unsafe { arm_raw(l, 1) };
                }
                Some(msg)
            }
            Some(Hooked::Continue) if every != EVERY => {
                // A coroutine still on the tripped rate: back to sampling.
                // SAFETY: as above.
                unsafe { arm_raw(l, EVERY) };
                None
            }
            _ => None,
        }
    };
    if let Some(msg) = raise {
        // SAFETY: a hook may raise; the message is copied by Lua before `msg`
        // would be freed, and no Rust value with a destructor is live across
        // the jump (msg is a &'static str).
        unsafe {
            ffi::lua_pushlstring(l, msg.as_ptr() as *const c_char, msg.len());
            ffi::lua_error(l);
        }
    }
}

/// Set the count hook on `l` and on the state's main thread (coroutines
/// created later inherit it).
///
/// # Safety
/// `l` is a live Lua state with at least one free stack slot.
unsafe fn arm_raw(l: *mut ffi::lua_State, every: u32) {
    unsafe {
        ffi::lua_sethook(l, Some(hook), ffi::LUA_MASKCOUNT, every as c_int);
        ffi::lua_rawgeti(l, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_MAINTHREAD);
        let main = ffi::lua_tothread(l, -1);
        ffi::lua_settop(l, -2);
        if !main.is_null() && main != l {
            ffi::lua_sethook(main, Some(hook), ffi::LUA_MASKCOUNT, every as c_int);
        }
    }
}

/// What the hook must do.
enum Hooked {
    Continue,
    /// Raise `msg`; `newly`: this call tripped the limit.
    Raise {
        msg: &'static str,
        newly: bool,
    },
}

impl Limits {
    pub fn install(self: &Rc<Self>, lua: &Lua) -> mlua::Result<()> {
        let ptr = Rc::as_ptr(self) as *mut c_void;
        // SAFETY: stores a pointer to this Limits in the registry (the state
        // keeps the Rc in its app data, so it outlives every hook call) and
        // sets the hook; exec_raw runs it protected with stack room.
        unsafe {
            lua.exec_raw::<()>((), |l| {
                ffi::lua_pushlightuserdata(l, ptr);
                ffi::lua_rawsetp(l, ffi::LUA_REGISTRYINDEX, &LIMITS_KEY as *const u8 as *const c_void);
            })?;
        }
        self.arm(lua, EVERY)
    }

    fn arm(&self, lua: &Lua, every: u32) -> mlua::Result<()> {
        // SAFETY: exec_raw gives a live state with stack room.
        unsafe { lua.exec_raw::<()>((), |l| arm_raw(l, every)) }
    }

    /// One hook call, `every` instructions after the last on this thread.
    fn on_hook(&self, every: u32) -> Hooked {
        if let Some((_, stop)) = self.tripped.get() {
            return Hooked::Raise { msg: stop.message(), newly: false };
        }
        let count = self.count.get() + every as u64;
        self.count.set(count);
        let stack = self.stack.borrow();
        if stack.is_empty() {
            return Hooked::Continue;
        }
        let now = Instant::now();
        let interrupted = crate::util::cancel::requested();
        for (i, seg) in stack.iter().enumerate() {
            // A stop request stops the outermost segment: everything unwinds.
            let stop = if interrupted {
                Some(Stop::Interrupted)
            } else if seg.limit.is_some_and(|l| count > l) {
                Some(Stop::Instructions(seg.budget.unwrap_or(0)))
            } else if seg.deadline.is_some_and(|d| now >= d) {
                Some(Stop::Deadline)
            } else {
                None
            };
            if let Some(stop) = stop {
                drop(stack);
                self.tripped.set(Some((i, stop)));
                self.trips.set(self.trips.get() + 1);
                return Hooked::Raise { msg: stop.message(), newly: true };
            }
        }
        Hooked::Continue
    }

    /// Run `f` under `seg`. If this segment's limit stops it, the result is
    /// `Stopped`; if an outer segment's limit stops it, the error propagates
    /// as `Done(Err)` and the outer segment will report `Stopped`.
    pub fn guard<R>(self: &Rc<Self>, lua: &Lua, seg: Segment, f: impl FnOnce() -> mlua::Result<R>) -> Guarded<R> {
        let index = {
            let mut stack = self.stack.borrow_mut();
            let count = self.count.get();
            stack.push(Active {
                limit: seg.instructions.map(|n| count.saturating_add(n)),
                budget: seg.instructions,
                deadline: seg.deadline,
            });
            stack.len() - 1
        };
        self.publish();
        let result = f();
        self.stack.borrow_mut().truncate(index);
        self.publish();
        match self.tripped.get() {
            Some((i, stop)) if i == index => {
                self.tripped.set(None);
                // Back to sampling every EVERY instructions; ignore a failure to
                // re-arm (it only costs speed, never safety).
                let _ = self.arm(lua, EVERY);
                Guarded::Stopped(stop)
            }
            Some(_) => Guarded::Done(result.and_then(|_| Err(mlua::Error::runtime("stopped by an enclosing limit")))),
            None => Guarded::Done(result),
        }
    }

    /// Move every active deadline `by` later: time spent blocked in the host
    /// (waiting for a judge model) is not the script's time.
    pub fn extend_deadlines(&self, by: std::time::Duration) {
        for seg in self.stack.borrow_mut().iter_mut() {
            if let Some(d) = &mut seg.deadline {
                *d += by;
            }
        }
        self.publish();
    }

    /// The earliest deadline on the stack: code running now must be back by then.
    fn earliest(&self) -> Option<Instant> {
        self.stack.borrow().iter().filter_map(|s| s.deadline).min()
    }

    /// Tell code the hook cannot reach (SQLite, the pattern matcher) and the
    /// run's watchdog when the running code must be back (see `util::watch`).
    fn publish(&self) {
        watch::publish(self.earliest());
    }

    /// Give every active segment `instructions` and `time` more: loading a
    /// suite grants each declared case its own share, so a suite of any size
    /// loads while a runaway loop that declares nothing is still stopped.
    pub fn extend(&self, instructions: u64, time: std::time::Duration) {
        for seg in self.stack.borrow_mut().iter_mut() {
            seg.limit = seg.limit.map(|l| l.saturating_add(instructions));
            seg.budget = seg.budget.map(|b| b.saturating_add(instructions));
            if let Some(d) = &mut seg.deadline {
                *d += time;
            }
        }
    }

    /// How many times a limit has stopped code in this state.
    pub fn trips(&self) -> u64 {
        self.trips.get()
    }

    /// True while an enclosing segment has tripped (callers should unwind).
    pub fn is_tripped(&self) -> bool {
        self.tripped.get().is_some()
    }
}

impl Limits {
    /// Run `f`, a host call that blocks (a child process), without charging
    /// its wall time to the innermost segment (the tool handler's or the
    /// check's own time limit, meant for Lua code). Enclosing segments (the
    /// trial's deadline) still count it: callers bound `f` by
    /// [`Limits::outer_deadline`].
    pub fn blocking<R>(&self, f: impl FnOnce() -> R) -> R {
        let started = Instant::now();
        // The call has its own timeout: no deadline is published meanwhile.
        watch::publish(None);
        let r = f();
        let spent = started.elapsed();
        if let Some(last) = self.stack.borrow_mut().last_mut() {
            last.deadline = last.deadline.map(|d| d + spent);
        }
        self.publish();
        r
    }

    /// The earliest deadline of the segments enclosing the innermost one.
    pub fn outer_deadline(&self) -> Option<Instant> {
        let stack = self.stack.borrow();
        let n = stack.len().saturating_sub(1);
        stack[..n].iter().filter_map(|s| s.deadline).min()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::lua::engine::{StateConfig, limits as state_limits, new_state};

    fn state() -> Lua {
        let config = StateConfig {
            suite_dir: std::env::temp_dir(),
            module_dirs: vec![std::env::temp_dir()].into(),
            sources: Default::default(),
            clock: 0,
            validate: false,
        };
        new_state(config, |_, _| Ok(())).unwrap()
    }

    /// Run `code` (which never ends) under a 200 ms deadline: the deadline
    /// stops it (a bound far above the need: a busy machine is slow, not wrong).
    fn stops(code: &str) {
        let lua = state();
        let limits = state_limits(&lua);
        let started = Instant::now();
        let seg = Segment { instructions: None, deadline: Some(started + Duration::from_millis(200)) };
        let f = lua.load(code).into_function().unwrap();
        let r = limits.guard(&lua, seg, || f.call::<()>(()));
        assert!(matches!(r, Guarded::Stopped(Stop::Deadline)), "{code}");
        assert!(started.elapsed() < Duration::from_secs(60), "{code}: took {:?}", started.elapsed());
    }

    #[test]
    fn limits_hold_against_pcall_xpcall_and_close() {
        stops("while true do pcall(function() while true do end end) end");
        stops("xpcall(error, function() while true do end end)");
        stops("while true do xpcall(function() while true do end end, function() while true do end end) end");
        stops("local x <close> = setmetatable({}, { __close = function() while true do end end }); while true do end");
        stops("local x <close> = setmetatable({}, { __close = function() while true do end end }); error('e')");
        stops(
            "coroutine.wrap(function() local x <close> = setmetatable({}, { __close = function() while true do end end }); while true do end end)()",
        );
        stops(
            "while true do pcall(coroutine.wrap(function() local x <close> = setmetatable({}, { __close = function() while true do end end }); while true do end end)) end",
        );
        stops(
            "for i = 1, 3 do pcall(function() local x <close> = setmetatable({}, { __close = function() while true do end end }); while true do end end) end while true do end",
        );
    }
}
