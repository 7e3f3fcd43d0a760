//! `ctx`: what a tool handler gets (SPEC §3): the trial's database
//! (`ctx.db`), its frozen clock, outbox, seeded RNG and work dir, and the
//! work-dir primitives the `evalua.tools` kit is written on (`ctx.confine`,
//! `ctx.list_dir`, `ctx.exec`, `ctx.deny`).

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use mlua::{Lua, LuaSerdeExt, Table, Value};

use super::db::Db;
use super::phase::Phase;
use crate::lua::engine::{self, convert};
use crate::process;
use crate::record::{Journal, OutboxItem};
use crate::sandbox::TrialRng;
use crate::sandbox::db::Database;
use crate::util::paths::{confine, list_confined, read_file_confined, write_confined};

/// Defaults of `ctx.exec` (the `run` tool).
const EXEC_TIMEOUT_S: f64 = 30.0;
const EXEC_MAX_OUTPUT: usize = 4 * 1024 * 1024;
const EXEC_TAIL: usize = 16 * 1024;

fn rt(msg: impl Into<String>) -> mlua::Error {
    mlua::Error::runtime(msg.into())
}

/// `cmd` as an argv: a list of strings, or a string run by `sh -c`.
pub fn argv_of(v: &Value, what: &str) -> mlua::Result<Vec<String>> {
    match v {
        Value::String(s) => Ok(vec!["sh".into(), "-c".into(), s.to_str()?.to_string()]),
        Value::Table(t) => {
            let argv: Vec<String> = t.sequence_values::<String>().collect::<mlua::Result<_>>()?;
            if argv.is_empty() {
                return Err(rt(format!("{what}: the command is empty")));
            }
            Ok(argv)
        }
        other => {
            Err(rt(format!("{what}: the command must be a list of strings or a string, got {}", other.type_name())))
        }
    }
}

fn opt_f64(t: &Option<Table>, k: &str) -> mlua::Result<Option<f64>> {
    match t {
        Some(t) => t.get::<Option<f64>>(k),
        None => Ok(None),
    }
}

/// What a trial's `ctx` is made of.
pub struct CtxParts<'a> {
    pub case_table: &'a Table,
    pub trial: u32,
    pub seed: u64,
    pub conn: Rc<dyn Database>,
    pub journal: &'a Rc<RefCell<Journal>>,
    pub rng: &'a Rc<RefCell<TrialRng>>,
    pub workdir: &'a Path,
    /// The frozen clock, as Unix seconds and as written.
    pub clock: i64,
    pub clock_text: &'a str,
    /// The trial's deadline: `ctx.exec` never runs past it.
    pub deadline: Instant,
    /// The agent's turn: `ctx` and `ctx.db` work only during it.
    pub phase: Phase,
    /// What `ctx.exec`'s commands see in the sandbox besides the work dir.
    pub view: process::View,
}

/// Build the trial's `ctx` table.
pub fn build(lua: &Lua, p: CtxParts<'_>) -> mlua::Result<Table> {
    let ctx = lua.create_table()?;
    ctx.raw_set("db", Db::read_write(p.conn.clone(), p.phase.clone()))?;
    ctx.raw_set("case", p.case_table.clone())?;
    ctx.raw_set("trial", p.trial)?;
    ctx.raw_set("seed", p.seed as i64)?;
    ctx.raw_set("workdir", p.workdir.display().to_string())?;
    let clock_text = p.clock_text.to_string();
    ctx.raw_set("now", lua.create_function(move |_, ()| Ok(clock_text.clone()))?)?;
    let clock = p.clock;
    ctx.raw_set("time", lua.create_function(move |_, ()| Ok(clock))?)?;
    let st = p.journal.clone();
    let phase = p.phase.clone();
    ctx.raw_set(
        "send",
        lua.create_function(move |lua, (kind, to, body): (String, Value, Value)| {
            phase.check("ctx.send")?;
            let to = match to {
                Value::String(s) => s.to_string_lossy(),
                Value::Integer(i) => i.to_string(),
                Value::Number(n) => n.to_string(),
                other => {
                    return Err(rt(format!("ctx.send: 'to' must be a string or number, got {}", other.type_name())));
                }
            };
            let body = convert::to_json(lua, &body).map_err(|e| rt(format!("ctx.send: body: {e}")))?;
            st.borrow_mut().outbox.push(OutboxItem { kind, to, body });
            Ok(())
        })?,
    )?;
    ctx.raw_set("random", random_fn(lua, p.rng.clone())?)?;
    let root = p.workdir.to_path_buf();
    let phase = p.phase.clone();
    ctx.raw_set(
        "write_file",
        lua.create_function(move |_, (rel, content): (String, mlua::LuaString)| {
            phase.check("ctx.write_file")?;
            write_confined(&root, &rel, &content.as_bytes()).map_err(|e| rt(format!("ctx.write_file: {e}")))
        })?,
    )?;
    let root = p.workdir.to_path_buf();
    let phase = p.phase.clone();
    ctx.raw_set(
        "read_file",
        lua.create_function(move |lua, rel: String| {
            phase.check("ctx.read_file")?;
            match read_file_confined(&root, &rel).map_err(|e| rt(format!("ctx.read_file: {e}")))? {
                Some(b) => Ok(Value::String(lua.create_string(b)?)),
                None => Ok(Value::Nil),
            }
        })?,
    )?;
    install_work(lua, &ctx, &p)?;
    Ok(ctx)
}

/// `random()` → float in [0,1); `random(n)` → 1..n; `random(a, b)` → a..b.
pub fn random_fn(lua: &Lua, rng: Rc<RefCell<TrialRng>>) -> mlua::Result<mlua::Function> {
    lua.create_function(move |_, (a, b): (Option<i64>, Option<i64>)| {
        let mut r = rng.borrow_mut();
        Ok(match (a, b) {
            (None, _) => Value::Number(r.float()),
            (Some(n), None) if n >= 1 => Value::Integer(r.int(1, n)),
            (Some(lo), Some(hi)) if lo <= hi => Value::Integer(r.int(lo, hi)),
            _ => return Err(rt("random: empty interval")),
        })
    })
}

/// The work-dir side of `ctx`: `deny`, `confine`, `list_dir`, `exec`.
fn install_work(lua: &Lua, ctx: &Table, p: &CtxParts<'_>) -> mlua::Result<()> {
    let (workdir, deadline) = (p.workdir, p.deadline);
    let st = p.journal.clone();
    let phase = p.phase.clone();
    ctx.raw_set(
        "deny",
        lua.create_function(move |_, reason: String| -> mlua::Result<()> {
            phase.check("ctx.deny")?;
            st.borrow_mut().denied = Some(reason.clone());
            Err(rt(format!("denied: {reason}")))
        })?,
    )?;
    let root = workdir.to_path_buf();
    let phase = p.phase.clone();
    ctx.raw_set(
        "confine",
        lua.create_function(move |_, rel: String| {
            phase.check("ctx.confine")?;
            Ok(match confine(&root, &rel) {
                Ok(p) => (Some(p.display().to_string()), None),
                Err(e) => (None, Some(e)),
            })
        })?,
    )?;
    let root = workdir.to_path_buf();
    let phase = p.phase.clone();
    ctx.raw_set(
        "list_dir",
        lua.create_function(move |lua, rel: Option<String>| {
            phase.check("ctx.list_dir")?;
            let rel = rel.unwrap_or_default();
            let entries = list_confined(&root, &rel).map_err(|e| rt(format!("ctx.list_dir: {e}")))?;
            let out = lua.create_table()?;
            for e in entries {
                let t = lua.create_table()?;
                t.raw_set("name", e.name)?;
                t.raw_set("type", e.kind)?;
                t.raw_set("size", e.size)?;
                out.raw_push(t)?;
            }
            out.set_metatable(Some(lua.array_metatable()))?;
            Ok(out)
        })?,
    )?;
    let root = workdir.to_path_buf();
    let (phase, view) = (p.phase.clone(), p.view.clone());
    ctx.raw_set(
        "exec",
        lua.create_function(move |lua, (cmd, opts): (Value, Option<Table>)| {
            phase.check("ctx.exec")?;
            let argv = argv_of(&cmd, "ctx.exec")?;
            let limits = engine::limits(lua);
            let mut until = deadline;
            if let Some(d) = limits.outer_deadline() {
                until = until.min(d);
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(rt("ctx.exec: the trial's deadline has passed"));
            }
            let want = Duration::from_secs_f64(opt_f64(&opts, "timeout_s")?.unwrap_or(EXEC_TIMEOUT_S).max(0.001));
            let max_output = opt_f64(&opts, "max_output")?.map(|v| v as usize).unwrap_or(EXEC_MAX_OUTPUT);
            let tail = opt_f64(&opts, "tail")?.map(|v| v as usize).unwrap_or(EXEC_TAIL);
            std::fs::create_dir_all(&root).map_err(|e| rt(format!("ctx.exec: {e}")))?;
            let spec =
                process::Spec { argv: &argv, cwd: &root, timeout: want.min(left), max_output, tail, view: &view };
            let out = limits.blocking(|| process::run(&spec)).map_err(|e| rt(format!("ctx.exec: {e}")))?;
            convert::to_lua(lua, &serde_json::to_value(&out).map_err(mlua::Error::external)?)
        })?,
    )?;
    Ok(())
}
