//! The sandboxed Lua 5.4 state every suite, tool handler, scripted agent and
//! check runs in.
//!
//! One state per unit of work (loading a suite, running one trial), so trials
//! never share Lua globals. The state has no `io`, `os.execute`, `debug`,
//! `dofile`/`loadfile` or bytecode loading; `require` only finds the embedded
//! stdlib and `.lua` files below the suite's folder or the working directory.
//! Every call into Lua runs under [`limits::Limits`].

pub mod convert;
pub mod db;
pub mod host;
pub mod limits;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use mlua::{Lua, LuaOptions, StdLib, Table, Value};
use sha2::{Digest, Sha256};

pub use limits::{Limits, Segment, Stop};

/// The Lua modules embedded in the binary, by module name.
pub const STDLIB: &[(&str, &str, &str)] = &[
    (
        "evalua",
        "stdlib/evalua/init.lua",
        include_str!("../../stdlib/evalua/init.lua"),
    ),
    (
        "evalua.check",
        "stdlib/evalua/check.lua",
        include_str!("../../stdlib/evalua/check.lua"),
    ),
    (
        "evalua.judge",
        "stdlib/evalua/judge.lua",
        include_str!("../../stdlib/evalua/judge.lua"),
    ),
];

/// Memory a single Lua state may allocate.
pub const MEMORY_LIMIT: usize = 256 * 1024 * 1024;

/// Source files read by `require`, shared by every state of a run so each file
/// is read from disk once and its hash can go into the manifest.
#[derive(Default, Debug)]
pub struct Sources {
    files: Mutex<HashMap<PathBuf, Arc<SourceFile>>>,
}

#[derive(Debug)]
pub struct SourceFile {
    pub path: PathBuf,
    pub display: String,
    pub text: Arc<str>,
    pub sha256: String,
}

impl Sources {
    pub fn get(&self, path: &Path) -> std::io::Result<Arc<SourceFile>> {
        if let Some(f) = self.files.lock().unwrap().get(path) {
            return Ok(f.clone());
        }
        let text = std::fs::read_to_string(path)?;
        let file = Arc::new(SourceFile {
            path: path.to_path_buf(),
            display: display_path(path),
            sha256: sha256_hex(text.as_bytes()),
            text: text.into(),
        });
        self.files
            .lock()
            .unwrap()
            .insert(path.to_path_buf(), file.clone());
        Ok(file)
    }

    /// Every file read so far, sorted by path.
    pub fn all(&self) -> Vec<Arc<SourceFile>> {
        let mut v: Vec<_> = self.files.lock().unwrap().values().cloned().collect();
        v.sort_by(|a, b| a.path.cmp(&b.path));
        v
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// A path as users should read it in messages: relative to the working
/// directory when below it.
pub fn display_path(path: &Path) -> String {
    if let Ok(cwd) = std::env::current_dir()
        && let Ok(rel) = path.strip_prefix(&cwd)
    {
        return rel.display().to_string();
    }
    path.display().to_string()
}

/// What a state needs to know about where it runs.
#[derive(Clone)]
pub struct StateConfig {
    /// The suite file's folder: relative paths and `require` start here.
    pub suite_dir: PathBuf,
    pub sources: Arc<Sources>,
    /// The frozen clock, as Unix seconds (`os.time()`).
    pub clock: i64,
}

/// Host-side data stored in the state (`lua.app_data_ref::<StateData>()`).
pub struct StateData {
    pub config: StateConfig,
    pub limits: Rc<Limits>,
}

/// Create a fresh sandboxed state with `require`, the host module and limits.
pub fn new_state(config: StateConfig) -> mlua::Result<Lua> {
    let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::UTF8 | StdLib::COROUTINE;
    let lua = Lua::new_with(libs, LuaOptions::default())?;
    lua.set_memory_limit(MEMORY_LIMIT)?;
    let limits = Rc::new(Limits::default());
    limits.install(&lua)?;

    let globals = lua.globals();
    for name in ["dofile", "loadfile"] {
        globals.raw_set(name, Value::Nil)?;
    }
    let string: Table = globals.get("string")?;
    string.raw_set("dump", Value::Nil)?;

    lua.set_app_data(StateData {
        config: config.clone(),
        limits,
    });
    host::register(&lua)?;
    install_require(&lua)?;

    // Text-only `load`, a frozen `os.time`/`os.date`, and `print` kept off stdout.
    lua.load(PRELUDE).set_name("=evalua prelude").exec()?;
    Ok(lua)
}

const PRELUDE: &str = r#"
local raw_load = load
load = function(chunk, name, _mode, env)
  return raw_load(chunk, name, "t", env)
end
local host = require("evalua.host")
os = { time = host.os_time, date = host.os_date, clock = host.os_clock,
       difftime = function(a, b) return a - (b or 0) end }
print = host.print
"#;

pub fn limits(lua: &Lua) -> Rc<Limits> {
    lua.app_data_ref::<StateData>()
        .expect("state data")
        .limits
        .clone()
}

pub fn suite_dir(lua: &Lua) -> PathBuf {
    lua.app_data_ref::<StateData>()
        .expect("state data")
        .config
        .suite_dir
        .clone()
}

/// Load and run a Lua file with a chunk name that makes errors read `path:line:`.
pub fn run_file(lua: &Lua, path: &Path) -> mlua::Result<Value> {
    let sources = lua
        .app_data_ref::<StateData>()
        .expect("state data")
        .config
        .sources
        .clone();
    let file = sources
        .get(path)
        .map_err(|e| mlua::Error::runtime(format!("{}: {e}", display_path(path))))?;
    lua.load(&*file.text)
        .set_name(format!("@{}", file.display))
        .call(())
}

fn install_require(lua: &Lua) -> mlua::Result<()> {
    let loaded = lua.create_table()?;
    lua.set_named_registry_value("evalua.loaded", loaded)?;
    let require = lua.create_function(|lua, name: String| -> mlua::Result<Value> {
        let loaded: Table = lua.named_registry_value("evalua.loaded")?;
        match loaded.raw_get::<Value>(name.as_str())? {
            Value::Nil => {}
            Value::Boolean(false) => {
                return Err(mlua::Error::runtime(format!(
                    "require: module '{name}' requires itself (a loop)"
                )));
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
        let value = if value.is_nil() {
            Value::Boolean(true)
        } else {
            value
        };
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
        return lua.load(*src).set_name(format!("@{file}")).call(name);
    }
    if name.is_empty() || name.contains("..") || name.contains('/') || name.contains('\\') {
        return Err(mlua::Error::runtime(format!(
            "require: bad module name '{name}'"
        )));
    }
    let rel = format!("{}.lua", name.replace('.', "/"));
    let rel_init = format!("{}/init.lua", name.replace('.', "/"));
    let mut tried = Vec::new();
    let bases = [suite_dir(lua), std::env::current_dir().unwrap_or_default()];
    for base in &bases {
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
        host::caller(lua, 1),
        tried.join(", ")
    )))
}

/// One line describing a Lua error, `file:line: message` when Lua knows where.
pub fn describe(err: &mlua::Error) -> String {
    use mlua::Error as E;
    let s = match err {
        E::CallbackError { cause, .. } => return describe(cause),
        E::WithContext { context, cause } => return format!("{context}: {}", describe(cause)),
        E::SyntaxError { message, .. } => message.clone(),
        E::RuntimeError(m) => m.clone(),
        E::MemoryError(_) => format!(
            "out of memory: a Lua state may use at most {} MiB",
            MEMORY_LIMIT >> 20
        ),
        E::ExternalError(e) => e.to_string(),
        other => other.to_string(),
    };
    s.lines().next().unwrap_or("").trim_end().to_string()
}
