//! The state itself: creation (sandboxed libraries, limits, the read-only
//! shared base), environments per unit of work, `require`, chunk loading
//! with a process-wide bytecode cache, `print` capture and error text.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use mlua::{Lua, LuaOptions, LuaSerdeExt, StdLib, Table, Value};

use super::limits::Limits;

use crate::spec::Sources;
use crate::util::paths::display_path;

/// The Lua modules embedded in the binary, by module name.
pub const STDLIB: &[(&str, &str, &str)] = &[
    ("evalua", "stdlib/evalua/init.lua", include_str!("../../../stdlib/evalua/init.lua")),
    ("evalua.check", "stdlib/evalua/check.lua", include_str!("../../../stdlib/evalua/check.lua")),
    ("evalua.judge", "stdlib/evalua/judge.lua", include_str!("../../../stdlib/evalua/judge.lua")),
    ("evalua.tools", "stdlib/evalua/tools.lua", include_str!("../../../stdlib/evalua/tools.lua")),
];

/// Memory a single Lua state may allocate.
pub const MEMORY_LIMIT: usize = 256 * 1024 * 1024;

/// What a state needs to know about where it runs.
#[derive(Clone)]
pub struct StateConfig {
    /// The suite file's folder: relative paths start here.
    pub suite_dir: PathBuf,
    /// Where `require` looks for project modules, in order (see `util::paths::module_dirs`).
    pub module_dirs: Arc<[PathBuf]>,
    pub sources: Arc<Sources>,
    /// The frozen clock, as Unix seconds (`os.time()`).
    pub clock: i64,
    /// Validate declarations (loading a suite). A trial re-runs a suite that
    /// was already validated, only to get its functions back, so it skips the
    /// validation-only primitives (schema_error, regex_error, gate_error, exists).
    pub validate: bool,
}

/// Host-side data stored in the state (`lua.app_data_ref::<StateData>()`).
pub struct StateData {
    pub config: StateConfig,
    pub limits: Rc<Limits>,
}

/// Lines of `print` output kept per unit of work.
const LOG_LINES: usize = 200;

/// `print` output of the running unit of work (a suite's evaluation, a
/// trial), kept for the trace; stored as the state's app data while it runs.
#[derive(Default, Clone)]
pub struct Log(pub Vec<String>);

impl Log {
    pub fn push(&mut self, line: String) {
        if self.0.len() < LOG_LINES {
            self.0.push(line);
        } else if self.0.len() == LOG_LINES {
            self.0.push("… (further output dropped)".to_string());
        }
    }
}

/// Fills the host table (`evalua.host`) of a new state: `lua::api` does.
pub type RegisterHost = fn(&Lua, &Table) -> mlua::Result<()>;

/// Create a sandboxed state with `require`, the host module and limits.
///
/// A state outlives one trial (a worker reuses it), so everything shared is
/// made read-only here: the library tables, the stdlib modules, the string
/// metatable. Each trial then runs in its own environment ([`fresh_env`]):
/// its own globals, its own project modules, its own suite closures.
pub fn new_state(config: StateConfig, register_host: RegisterHost) -> mlua::Result<Lua> {
    let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::UTF8 | StdLib::COROUTINE;
    let lua = Lua::new_with(libs, LuaOptions::default())?;
    lua.set_memory_limit(MEMORY_LIMIT)?;
    // Trials allocate many short-lived tables: generational collection fits.
    lua.gc_set_mode(mlua::state::GcMode::Generational(Default::default()));
    let limits = Rc::new(Limits::default());
    limits.install(&lua)?;

    let globals = lua.globals();
    for name in ["dofile", "loadfile"] {
        globals.raw_set(name, Value::Nil)?;
    }
    let string: Table = globals.get("string")?;
    string.raw_set("dump", Value::Nil)?;
    // The raw library tables, for the host (users see read-only proxies).
    lua.set_named_registry_value("evalua.math", globals.get::<Table>("math")?)?;
    // Arrays made by the host share one metatable: hide it.
    lua.array_metatable().raw_set("__metatable", false)?;

    lua.set_app_data(StateData { config: config.clone(), limits });
    let host_table = lua.create_table()?;
    register_host(&lua, &host_table)?;
    register_engine(&lua, &host_table)?;
    lua.set_named_registry_value("evalua.host", host_table.clone())?;
    install_require(&lua)?;
    load_chunk(&lua, "=evalua prelude", PRELUDE, None)?.call::<()>(host_table)?;
    fresh_env(&lua)?;
    Ok(lua)
}

/// Runs once per state, in the shared base environment.
///
/// Every shared table users can reach (the library tables, the stdlib
/// modules, the host table, and the tables inside them) becomes a *proxy*: a
/// userdata with no storage of its own whose metatable (hidden behind
/// `__metatable`) reads from a private shadow copy. `rawset` and
/// `setmetatable` refuse userdata, so nothing can change them, not even
/// through `rawset`; `pairs` goes through `__pairs` with an iterator that
/// never hands out the shadow table.
const PRELUDE: &str = r##"
local host = ...   -- the raw host table (users only ever see a proxy)
local raw_load, raw_setmetatable, raw_collect, raw_xpcall = load, setmetatable, collectgarbage, xpcall
local raw_next, raw_type, raw_error = next, type, error
local tripped, new_proxy = host.tripped, host.new_proxy
-- new_proxy would make a userdata with any metatable (a __gc finaliser
-- included): it stays with the prelude.
host.new_proxy = nil

local views = raw_setmetatable({}, { __mode = "k" })
local function refuse(_, k)
  raw_error("evalua: shared library tables are read-only (tried to set '" .. tostring(k) .. "')", 2)
end
local function readonly(t, name)
  if views[t] then return views[t] end
  local shadow = {}
  local view = new_proxy({
    __index = shadow, __newindex = refuse, __metatable = false, __name = name or "evalua.readonly",
    __pairs = function()
      local k
      return function()
        local v
        k, v = raw_next(shadow, k)
        return k, v
      end
    end,
    __len = function() return #shadow end,
  })
  views[t] = view
  for k, v in pairs(t) do
    if raw_type(v) == "table" and getmetatable(v) == nil then v = readonly(v) end
    shadow[k] = v
  end
  return view
end
host.readonly = readonly

-- Text only; a chunk without an explicit env gets the running trial's.
load = function(chunk, name, _mode, env)
  return raw_load(chunk, name, "t", env or host.env())
end
-- A finaliser could run during a later trial: refuse them.
setmetatable = function(t, mt)
  if raw_type(mt) == "table" and rawget(mt, "__gc") ~= nil then
    raw_error("evalua: __gc metamethods are not allowed in suites", 2)
  end
  return raw_setmetatable(t, mt)
end
-- A message handler runs while an error propagates, where the instruction
-- hook cannot stop it: once a limit has tripped, the script's own handler is
-- skipped and the error goes on unchanged.
xpcall = function(f, handler, ...)
  if raw_type(handler) ~= "function" then return raw_xpcall(f, handler, ...) end
  return raw_xpcall(f, function(e)
    if tripped() then return e end
    return handler(e)
  end, ...)
end
-- A coroutine whose error came out of the instruction hook is left with
-- hooks off (Lua restores them only for a pcall inside the coroutine), and
-- closing it (coroutine.close, or coroutine.wrap after an error) would run
-- its __close metamethods where no limit can stop them: such a coroutine is
-- never closed.
local raw_create, raw_resume, raw_close = coroutine.create, coroutine.resume, coroutine.close
local raw_pack, raw_unpack = table.pack, table.unpack
local stopped = raw_setmetatable({}, { __mode = "k" })
coroutine.resume = function(co, ...)
  local r = raw_pack(raw_resume(co, ...))
  if not r[1] and tripped() then stopped[co] = true end
  return raw_unpack(r, 1, r.n)
end
coroutine.close = function(co)
  if stopped[co] then return false, "the coroutine was stopped by a limit" end
  return raw_close(co)
end
coroutine.wrap = function(f)
  local co = raw_create(f)
  return function(...)
    local r = raw_pack(raw_resume(co, ...))
    if r[1] then return raw_unpack(r, 2, r.n) end
    if tripped() then stopped[co] = true else raw_close(co) end
    raw_error(r[2], 2)
  end
end
-- Reading the collector is fine; steering it would leak into later trials.
collectgarbage = function(opt, ...)
  opt = opt or "collect"
  if opt == "count" or opt == "collect" or opt == "step" or opt == "isrunning" then return raw_collect(opt, ...) end
  raw_error("evalua: collectgarbage('" .. tostring(opt) .. "') is not allowed in suites", 2)
end
-- table.move in Lua: the C loop could copy 2^63 nils without the hook ever seeing an instruction.
table.move = function(a1, f, e, t, a2)
  a2 = a2 == nil and a1 or a2
  if e >= f then
    if t > e or t <= f or a1 ~= a2 then
      for i = 0, e - f do a2[t + i] = a1[f + i] end
    else
      for i = e - f, 0, -1 do a2[t + i] = a1[f + i] end
    end
  end
  return a2
end
-- table.insert at a position and table.remove at a position shift every
-- element up to #t in C: with a __len that says 2^62 the loop never ends and
-- the hook never fires. Both are Lua here, with the C versions' semantics
-- and messages (metamethods included); a userdata goes to the C version
-- (the only ones a suite sees are the read-only proxies, which refuse the
-- first write).
local raw = { insert = table.insert, remove = table.remove, rep = string.rep }
local raw_select, raw_pcall, tointeger, ult = select, pcall, math.tointeger, math.ult
local function integer_arg(v, i, fname)
  local n = raw_type(v) == "string" and tonumber(v) or v
  if raw_type(n) ~= "number" then
    raw_error("bad argument #" .. i .. " to '" .. fname .. "' (number expected, got " .. raw_type(v) .. ")", 3)
  end
  local k = tointeger(n)
  if k == nil then raw_error("bad argument #" .. i .. " to '" .. fname .. "' (number has no integer representation)", 3) end
  return k
end
local function string_arg(v, i, fname)
  local tv = raw_type(v)
  if tv ~= "string" and tv ~= "number" then
    raw_error("bad argument #" .. i .. " to '" .. fname .. "' (string expected, got " .. tv .. ")", 3)
  end
  return #(v .. "")
end
local function table_arg(t, fname)
  if raw_type(t) ~= "table" then
    raw_error("bad argument #1 to '" .. fname .. "' (table expected, got " .. raw_type(t) .. ")", 3)
  end
  local n = tointeger(#t)
  if n == nil then raw_error("object length is not an integer", 3) end
  return n
end
table.insert = function(t, ...)
  if raw_type(t) == "userdata" then raw.insert(t, ...) return end
  local nargs = raw_select("#", ...)
  if nargs ~= 1 and nargs ~= 2 then raw_error("wrong number of arguments to 'insert'", 2) end
  local e = table_arg(t, "table.insert") + 1
  if nargs == 1 then t[e] = ... return end
  local pos, v = ...
  pos = integer_arg(pos, 2, "table.insert")
  if not ult(pos - 1, e) then raw_error("bad argument #2 to 'table.insert' (position out of bounds)", 2) end
  for i = e, pos + 1, -1 do t[i] = t[i - 1] end
  t[pos] = v
end
table.remove = function(t, pos)
  if raw_type(t) == "userdata" then return (raw.remove(t, pos)) end
  local size = table_arg(t, "table.remove")
  if pos == nil then pos = size else pos = integer_arg(pos, 2, "table.remove") end
  if pos ~= size and pos - 1 ~= size and not ult(pos - 1, size) then
    raw_error("bad argument #2 to 'table.remove' (position out of bounds)", 2)
  end
  local v = t[pos]
  while pos < size do
    t[pos] = t[pos + 1]
    pos = pos + 1
  end
  t[pos] = nil
  return v
end
-- string.rep's C loop runs once per copy. Any result but the empty one is
-- bounded by the state's memory limit, and so is the loop; the empty one
-- (an empty string and separator) costs no memory, so 2^53 copies of ""
-- would spin for days where the hook never fires: it is returned at once.
string.rep = function(s, n, sep)
  local empty = string_arg(s, 1, "string.rep") == 0
  local k = integer_arg(n, 2, "string.rep")
  if sep ~= nil then empty = string_arg(sep, 3, "string.rep") == 0 and empty end
  if empty and k > 1 then return "" end
  local ok, r = raw_pcall(raw.rep, s, n, sep)
  if not ok then raw_error(r, 2) end
  return r
end
for k, f in pairs(host.bounded_patterns) do string[k] = f end
host.bounded_patterns = nil
os = { time = host.os_time, date = host.os_date, clock = host.os_clock,
       difftime = function(a, b) return a - (b or 0) end }
print = host.print
-- A table raised as an error stays a table for pcall, but reads as
-- `file:line: error object {...}` if it reaches the host (which would
-- otherwise see only `table: 0x…`).
local raw_error, raw_getmetatable = error, getmetatable
error = function(v, level)
  level = level or 1
  if type(v) == "table" and raw_getmetatable(v) == nil then
    local where = level > 0 and host.caller(level + 1) or "?"
    local ok, text = pcall(host.json_encode, v)
    text = ok and text or "(a table)"
    if #text > 200 then text = text:sub(1, 200) .. "…" end
    raw_setmetatable(v, { __tostring = function() return where .. ": error object " .. text end })
  end
  raw_error(v, level > 0 and level + 1 or 0)
end
getmetatable("").__metatable = false
for _, name in ipairs({ "string", "table", "math", "utf8", "coroutine", "os" }) do
  _G[name] = readonly(_G[name], name)
end
"##;

/// The engine's own host primitives: `tripped` (a limit has stopped the
/// running code) and `new_proxy` (a userdata with the given metatable).
fn register_engine(lua: &Lua, host: &Table) -> mlua::Result<()> {
    host.raw_set("tripped", lua.create_function(|lua, ()| Ok(limits(lua).is_tripped()))?)?;
    host.raw_set(
        "new_proxy",
        lua.create_function(|lua, mt: Table| {
            // SAFETY: the closure pushes a new userdata (no user value, no
            // storage), sets the metatable given as argument 1 on it and
            // leaves it alone on the stack; exec_raw runs it protected.
            unsafe {
                lua.exec_raw::<mlua::AnyUserData>(mt, |l| {
                    mlua::ffi::lua_newuserdatauv(l, 0, 0);
                    mlua::ffi::lua_pushvalue(l, 1);
                    mlua::ffi::lua_setmetatable(l, -2);
                    mlua::ffi::lua_replace(l, 1);
                })
            }
        })?,
    )?;
    host.raw_set("bounded_patterns", super::patterns::functions(lua)?)?;
    Ok(())
}

/// Give the state a pristine environment for the next unit of work (a trial):
/// a new globals table over the read-only base, and a new module cache for
/// the project's own modules. Returns the environment.
pub fn fresh_env(lua: &Lua) -> mlua::Result<Table> {
    let env = lua.create_table()?;
    let mt = lua.create_table()?;
    mt.raw_set("__index", lua.globals())?;
    mt.raw_set("__metatable", false)?;
    env.set_metatable(Some(mt))?;
    env.raw_set("_G", env.clone())?;
    lua.set_named_registry_value("evalua.env", env.clone())?;
    lua.set_named_registry_value("evalua.loaded", lua.create_table()?)?;
    Ok(env)
}

/// The environment of the running unit of work.
pub fn env(lua: &Lua) -> mlua::Result<Table> {
    lua.named_registry_value("evalua.env")
}

pub fn limits(lua: &Lua) -> Rc<Limits> {
    lua.app_data_ref::<StateData>().expect("state data").limits.clone()
}

pub fn suite_dir(lua: &Lua) -> PathBuf {
    lua.app_data_ref::<StateData>().expect("state data").config.suite_dir.clone()
}

/// Bytecode of every chunk compiled in this process, by chunk name and source
/// hash: each trial re-runs the suite file, and parsing the same text again
/// for every trial would be most of a trial's cost.
type BytecodeCache = HashMap<(String, u64), Arc<Vec<u8>>>;
static BYTECODE: std::sync::LazyLock<Mutex<BytecodeCache>> = std::sync::LazyLock::new(Default::default);

fn text_hash(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// Compile `text` as chunk `name` (once per process) and load it into `lua`.
/// Debug info is kept, so errors still read `file:line:`.
/// The chunk's globals are `env` (the trial's), or the shared base when None.
pub fn load_chunk(lua: &Lua, name: &str, text: &str, env: Option<Table>) -> mlua::Result<mlua::Function> {
    let key = (name.to_string(), text_hash(text));
    let cached = BYTECODE.lock().unwrap().get(&key).cloned();
    fn with_env<'a>(c: mlua::chunk::Chunk<'a>, env: &Option<Table>) -> mlua::chunk::Chunk<'a> {
        match env {
            Some(e) => c.set_environment(e.clone()),
            None => c,
        }
    }
    if let Some(code) = cached {
        return with_env(lua.load(&code[..]).set_name(name).set_mode(mlua::chunk::ChunkMode::Binary), &env)
            .into_function();
    }
    let f = with_env(lua.load(text).set_name(name).set_mode(mlua::chunk::ChunkMode::Text), &env).into_function()?;
    BYTECODE.lock().unwrap().insert(key, Arc::new(f.dump(false)));
    Ok(f)
}

/// Load and run a Lua file with a chunk name that makes errors read `path:line:`.
pub fn run_file(lua: &Lua, path: &Path) -> mlua::Result<Value> {
    let sources = lua.app_data_ref::<StateData>().expect("state data").config.sources.clone();
    let file = sources.get(path).map_err(|e| {
        // Bytecode or binary: say where (line 1), like any other error in the file.
        let text = e.to_string();
        let (at, msg) = match text.strip_prefix("line ").and_then(|r| r.split_once(": ")) {
            Some((n, m)) => (format!(":{n}"), m.to_string()),
            None if e.kind() == std::io::ErrorKind::InvalidData => (":1".to_string(), text),
            None => (String::new(), text),
        };
        mlua::Error::runtime(format!("{}{at}: {msg}", display_path(path)))
    })?;
    load_chunk(lua, &format!("@{}", file.display), &file.text, Some(env(lua)?))?.call(())
}

fn install_require(lua: &Lua) -> mlua::Result<()> {
    lua.set_named_registry_value("evalua.stdlib", lua.create_table()?)?;
    lua.set_named_registry_value("evalua.loaded", lua.create_table()?)?;
    let require = lua.create_function(|lua, name: String| -> mlua::Result<Value> {
        // The stdlib lives as long as the state, shared read-only; the
        // project's modules are loaded afresh in each environment.
        let is_std = name == "evalua.host" || STDLIB.iter().any(|(n, _, _)| *n == name);
        let loaded: Table = lua.named_registry_value(if is_std { "evalua.stdlib" } else { "evalua.loaded" })?;
        match loaded.raw_get::<Value>(name.as_str())? {
            Value::Nil => {}
            Value::Boolean(false) => {
                return Err(mlua::Error::runtime(format!("require: module '{name}' requires itself (a loop)")));
            }
            v => return Ok(v),
        }
        loaded.raw_set(name.as_str(), false)?;
        let result = load_module(lua, &name);
        let value = match result {
            Ok(v) => v,
            Err(e) => {
                loaded.raw_set(name.as_str(), Value::Nil)?;
                return Err(e);
            }
        };
        let mut value = if value.is_nil() { Value::Boolean(true) } else { value };
        if is_std && let Value::Table(t) = &value {
            let host: Table = lua.named_registry_value("evalua.host")?;
            value = host.get::<mlua::Function>("readonly")?.call(t.clone())?;
        }
        loaded.raw_set(name.as_str(), value.clone())?;
        Ok(value)
    })?;
    lua.globals().raw_set("require", require)
}

fn load_module(lua: &Lua, name: &str) -> mlua::Result<Value> {
    if name == "evalua.host" {
        return lua.named_registry_value("evalua.host");
    }
    if let Some((_, file, src)) = STDLIB.iter().find(|(n, _, _)| *n == name) {
        return load_chunk(lua, &format!("@{file}"), src, None)?.call(name);
    }
    if name.is_empty() || name.contains("..") || name.contains('/') || name.contains('\\') {
        return Err(mlua::Error::runtime(format!("require: bad module name '{name}'")));
    }
    let rel = format!("{}.lua", name.replace('.', "/"));
    let rel_init = format!("{}/init.lua", name.replace('.', "/"));
    let mut tried = Vec::new();
    let bases = lua.app_data_ref::<StateData>().expect("state data").config.module_dirs.clone();
    for base in bases.iter() {
        for r in [&rel, &rel_init] {
            let p = base.join(r);
            if p.is_file() {
                return run_file(lua, &p);
            }
            let shown = display_path(&p);
            if !tried.contains(&shown) {
                tried.push(shown);
            }
        }
    }
    Err(mlua::Error::runtime(format!(
        "{}: module '{name}' not found (tried the embedded stdlib, {})",
        caller(lua, 1),
        tried.join(", ")
    )))
}

/// `file:line` of the function running `level` frames up the Lua stack.
pub fn caller(lua: &Lua, level: usize) -> String {
    lua.inspect_stack(level, |d| {
        let src = d.source().source.map(|s| s.into_owned()).unwrap_or_default();
        let line = d.current_line().unwrap_or(0);
        format!("{}:{line}", src.strip_prefix('@').unwrap_or(&src))
    })
    .unwrap_or_else(|| "?".to_string())
}

/// One line describing a Lua error, `file:line: message` when Lua knows where.
pub fn describe(err: &mlua::Error) -> String {
    use mlua::Error as E;
    let s = match err {
        E::CallbackError { cause, .. } => return describe(cause),
        E::WithContext { context, cause } => return format!("{context}: {}", describe(cause)),
        E::SyntaxError { message, .. } => message.clone(),
        E::RuntimeError(m) => m.clone(),
        E::MemoryError(_) => format!("out of memory: a Lua state may use at most {} MiB", MEMORY_LIMIT >> 20),
        E::ExternalError(e) => e.to_string(),
        other => other.to_string(),
    };
    s.lines().next().unwrap_or("").trim_end().to_string()
}
