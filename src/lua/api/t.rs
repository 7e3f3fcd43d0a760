//! `t`: the finished trial a check sees (SPEC §3): answer, calls, messages,
//! outbox, usage, the final state read-only (`t.db`), the initial one
//! (`t.initial`, copied only if asked for), the work dir's files, and for
//! coding agents `t.diff`, `t.run_command` and `t.run_tests` (each command
//! runs in a fresh copy of the final tree, so no check changes what the next
//! one sees).

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use mlua::{Lua, LuaSerdeExt, Table, Value};
use serde_json::json;

use super::ctx::argv_of;
use super::db::Db;
use super::phase::Phase;
use crate::lua::engine::{self, convert};
use crate::otel::Span;
use crate::process;
use crate::record::{CallRecord, Ended, Journal, Message, Usage};
use crate::sandbox::db::{Database, LazyDb};
use crate::sandbox::tests::{TestRun, run_tests};
use crate::sandbox::workdir::Diff;
use crate::util::paths::read_confined_at_most;
use crate::util::tree::{copy_tree, list_files, overlay};

/// Defaults of `t.run_command` (`check.command`).
const CHECK_MAX_OUTPUT: usize = 16 * 1024 * 1024;
const CHECK_TAIL: usize = 4 * 1024;

/// What a trial's `t` is made of.
pub struct TParts<'a> {
    pub case_table: &'a Table,
    pub trial: u32,
    pub seed: u64,
    pub answer: &'a str,
    pub ended: Ended,
    pub error: Option<&'a str>,
    pub journal: &'a Journal,
    /// The final database (the trial's own; sealed read-only here).
    pub conn: Rc<dyn Database>,
    /// The case's initial database, for `t.initial` (opened on first use).
    pub initial: Rc<LazyDb>,
    pub workdir: &'a Path,
    /// The trial's change to its work tree (`t.diff`), computed once by the trial.
    pub diff: &'a Diff,
    /// Every test `t.run_tests` ran, for the run's per-test report.
    pub tests_ran: Rc<RefCell<Vec<TestRun>>>,
    /// The grading: `t.db`, `t.initial` and `t`'s commands work only during it.
    pub phase: Phase,
    /// What check commands and test runners see in the sandbox besides their copy of the tree.
    pub view: process::View,
    /// `sandbox.max_file_mb`: `t.files` reads no larger file.
    pub max_file: u64,
}

/// What `t` holds in a run and in a recorded trace alike.
struct Common<'a> {
    case_table: &'a Table,
    trial: u32,
    seed: u64,
    answer: &'a str,
    ended: Ended,
    error: Option<&'a str>,
    calls: &'a [CallRecord],
    messages: &'a [Message],
    usage: &'a Usage,
}

fn common(lua: &Lua, p: Common<'_>) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("case", p.case_table.clone())?;
    t.raw_set("trial", p.trial)?;
    t.raw_set("seed", p.seed as i64)?;
    t.raw_set("answer", p.answer)?;
    t.raw_set("ended", p.ended.as_str())?;
    t.raw_set("error", p.error)?;

    let calls = lua.create_table()?;
    for c in p.calls {
        let ct = lua.create_table()?;
        ct.raw_set("id", c.id.as_str())?;
        ct.raw_set("name", c.name.as_str())?;
        ct.raw_set("args", convert::to_lua(lua, &c.args)?)?;
        ct.raw_set("status", c.status.as_str())?;
        ct.raw_set("effect", c.effect.as_deref())?;
        if let Some(r) = &c.result {
            ct.raw_set("result", convert::to_lua(lua, r)?)?;
        }
        ct.raw_set("error", c.error.as_deref())?;
        ct.raw_set("error_type", c.error_type.as_deref())?;
        if let Some(f) = c.fault() {
            // `{ kind, rule, retry_after_s, message, handler_ran, handler_result, changed }`.
            ct.raw_set("fault", convert::to_lua(lua, &serde_json::to_value(f).unwrap_or_default())?)?;
        }
        ct.raw_set("started_ms", c.started_ms)?;
        ct.raw_set("ended_ms", c.ended_ms)?;
        calls.raw_push(ct)?;
    }
    calls.set_metatable(Some(lua.array_metatable()))?;
    t.raw_set("calls", calls)?;

    t.raw_set("messages", convert::to_lua(lua, &serde_json::to_value(p.messages).unwrap_or_default())?)?;
    let usage = convert::to_lua(lua, &serde_json::to_value(p.usage).unwrap_or_default())?;
    t.raw_set("usage", usage)?;
    Ok(t)
}

/// Set `t.failure_modes`: the monitors the trial failed (SPEC §3).
pub fn set_failure_modes(lua: &Lua, t: &Table, modes: &[String]) -> mlua::Result<()> {
    let list = lua.create_sequence_from(modes.iter().map(String::as_str))?;
    list.set_metatable(Some(lua.array_metatable()))?;
    t.raw_set("failure_modes", list)
}

/// Build the `t` a check sees.
pub fn build(lua: &Lua, p: TParts<'_>) -> mlua::Result<Table> {
    let st = p.journal;
    let t = common(
        lua,
        Common {
            case_table: p.case_table,
            trial: p.trial,
            seed: p.seed,
            answer: p.answer,
            ended: p.ended,
            error: p.error,
            calls: &st.calls,
            messages: &st.messages,
            usage: &st.usage,
        },
    )?;
    t.raw_set("outbox", convert::to_lua(lua, &serde_json::to_value(&st.outbox).unwrap_or_default())?)?;

    // The final state, read-only, and the initial one (copied only if asked for).
    p.conn.seal();
    t.raw_set("db", Db::read_only(p.conn.clone(), "t.db", p.phase.clone()))?;
    t.raw_set("initial", Db::lazy_read_only(p.initial.clone(), "t.initial", p.phase.clone()))?;
    t.raw_set("files", files_table(lua, p.workdir, p.max_file)?)?;
    install_work(lua, &t, &p)?;
    Ok(t)
}

/// What a recorded trace's `t` is made of (`evalua grade`): no sandbox, so
/// no final state.
pub struct RecordedParts<'a> {
    pub case_table: &'a Table,
    pub trial: u32,
    pub answer: &'a str,
    pub ended: Ended,
    pub error: Option<&'a str>,
    pub calls: &'a [CallRecord],
    pub messages: &'a [Message],
    pub usage: &'a Usage,
    /// The item's spans, turned into `t.spans` only if a check reads it.
    pub spans: Rc<Vec<Span>>,
}

/// Set when a check reached for what a recorded trace does not have
/// (`t.db`, `t.files`, …): the check is then *not applicable*, whatever it
/// returned. Read and cleared with [`take_state_needed`].
#[derive(Default)]
pub struct StateNeeded(pub Option<String>);

/// What the check that just ran reached for and the trial did not have, if anything.
pub fn take_state_needed(lua: &Lua) -> Option<String> {
    lua.app_data_mut::<StateNeeded>().and_then(|mut s| s.0.take())
}

/// Why a field of `t` is missing from a recorded trace, if it is one of those.
fn state_field(key: &str) -> Option<&'static str> {
    Some(match key {
        "db" | "initial" | "replay" | "replay_digest" => {
            "it reads the database (t.db / t.initial / t:replay), and a recorded trace has no final state (re-execute it: --reexecute)"
        }
        "files" | "diff" | "run_command" | "run_tests" => "it reads the work dir, and a recorded trace has none",
        "outbox" => "it reads the outbox, and a recorded trace has none",
        _ => return None,
    })
}

/// Build the `t` of a recorded trace: calls, messages, answer, usage and
/// `t.spans`; reading `t.db`, `t.initial`, `t.files`, `t.outbox` or the work
/// dir's functions makes the check not applicable (see [`StateNeeded`]).
pub fn build_recorded(lua: &Lua, p: RecordedParts<'_>) -> mlua::Result<Table> {
    let t = common(
        lua,
        Common {
            case_table: p.case_table,
            trial: p.trial,
            seed: 0,
            answer: p.answer,
            ended: p.ended,
            error: p.error,
            calls: p.calls,
            messages: p.messages,
            usage: p.usage,
        },
    )?;
    if lua.app_data_ref::<StateNeeded>().is_none() {
        lua.set_app_data(StateNeeded::default());
    }
    let spans = p.spans;
    let mt = lua.create_table()?;
    mt.raw_set(
        "__index",
        lua.create_function(move |lua, (t, key): (Table, Value)| {
            let Value::String(k) = key else { return Ok(Value::Nil) };
            let k = k.to_string_lossy();
            if k == "spans" {
                let list = spans_table(lua, &spans)?;
                t.raw_set("spans", list.clone())?;
                return Ok(Value::Table(list));
            }
            match state_field(&k) {
                Some(why) => {
                    if let Some(mut s) = lua.app_data_mut::<StateNeeded>() {
                        s.0.get_or_insert_with(|| format!("not applicable to a recorded trace: {why}"));
                    }
                    Err(mlua::Error::runtime(format!("t.{k}: not applicable to a recorded trace: {why}")))
                }
                None => Ok(Value::Nil),
            }
        })?,
    )?;
    t.set_metatable(Some(mt))?;
    Ok(t)
}

/// `t.spans`: every span of the item, in start order, with its attributes and events.
fn spans_table(lua: &Lua, spans: &[Span]) -> mlua::Result<Table> {
    let list = lua.create_table_with_capacity(spans.len(), 0)?;
    for s in spans {
        list.raw_push(span_table(lua, s)?)?;
    }
    list.set_metatable(Some(lua.array_metatable()))?;
    Ok(list)
}

fn rfc3339(ns: u64) -> Option<String> {
    jiff::Timestamp::from_nanosecond(ns as i128).ok().map(|t| t.to_string())
}

/// A span as Lua sees it (a `trace_adapter`'s argument, an item of `t.spans`):
/// `trace_id`, `span_id`, `parent_span_id`, `name`, `kind`, `start_time` /
/// `end_time` (RFC 3339), `start_ns` / `end_ns`, `duration_ms`, `status`
/// ("unset", "ok", "error"), `status_message`, `attributes` (a flat table),
/// `events` (`{ name, time, attributes }`).
pub fn span_table(lua: &Lua, s: &Span) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 14)?;
    t.raw_set("trace_id", s.trace_id.as_str())?;
    t.raw_set("span_id", s.span_id.as_str())?;
    t.raw_set("parent_span_id", s.parent_span_id.as_deref())?;
    t.raw_set("name", s.name.as_str())?;
    t.raw_set("kind", s.kind.as_deref())?;
    t.raw_set("start_ns", s.start_ns as i64)?;
    t.raw_set("end_ns", s.end_ns as i64)?;
    t.raw_set("start_time", rfc3339(s.start_ns))?;
    t.raw_set("end_time", rfc3339(s.end_ns))?;
    t.raw_set("duration_ms", s.duration_ms())?;
    t.raw_set("status", s.status.as_str())?;
    t.raw_set("status_message", s.status_message.as_str())?;
    let attrs = lua.create_table_with_capacity(0, s.attributes.len())?;
    for (k, v) in &s.attributes {
        attrs.raw_set(k.as_str(), convert::to_lua(lua, v)?)?;
    }
    t.raw_set("attributes", attrs)?;
    let events = lua.create_table_with_capacity(s.events.len(), 0)?;
    for e in &s.events {
        let et = lua.create_table()?;
        et.raw_set("name", e.name.as_str())?;
        et.raw_set("time", rfc3339(e.time_ns))?;
        et.raw_set("time_ns", e.time_ns as i64)?;
        let a = lua.create_table()?;
        for (k, v) in &e.attributes {
            a.raw_set(k.as_str(), convert::to_lua(lua, v)?)?;
        }
        et.raw_set("attributes", a)?;
        events.raw_push(et)?;
    }
    events.set_metatable(Some(lua.array_metatable()))?;
    t.raw_set("events", events)?;
    Ok(t)
}

/// `t.files`: the work dir's files by relative path, read on demand.
fn files_table(lua: &Lua, dir: &Path, max: u64) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let mt = lua.create_table()?;
    let read = move |root: &Path, rel: &str| -> mlua::Result<Option<Vec<u8>>> {
        read_confined_at_most(root, rel, max).map_err(|len| {
            mlua::Error::runtime(format!(
                "t.files[{rel:?}]: a file of {len} bytes, over sandbox.max_file_mb ({} MiB): not read",
                max >> 20
            ))
        })
    };
    let root = dir.to_path_buf();
    mt.raw_set(
        "__index",
        lua.create_function(move |lua, (_t, key): (Value, String)| match read(&root, &key)? {
            Some(bytes) => Ok(Value::String(lua.create_string(bytes)?)),
            None => Ok(Value::Nil),
        })?,
    )?;
    let root = dir.to_path_buf();
    mt.raw_set(
        "__pairs",
        lua.create_function(move |lua, _t: Value| {
            let snapshot = lua.create_table()?;
            for rel in list_files(&root) {
                if let Some(bytes) = read(&root, &rel)? {
                    snapshot.raw_set(rel, lua.create_string(bytes)?)?;
                }
            }
            let next: mlua::Function = lua.globals().get("next")?;
            Ok((next, snapshot, Value::Nil))
        })?,
    )?;
    t.set_metatable(Some(mt))?;
    Ok(t)
}

/// The work-dir side of `t`: `t.diff`, `t.run_command`, `t.run_tests`.
fn install_work(lua: &Lua, t: &Table, p: &TParts<'_>) -> mlua::Result<()> {
    let d = p.diff;
    let files: Vec<serde_json::Value> =
        d.files.iter().map(|(p, s)| json!({ "path": p, "status": s.as_str() })).collect();
    let diff = lua.create_table()?;
    diff.raw_set("text", d.text.as_str())?;
    diff.raw_set("files", convert::to_lua(lua, &serde_json::Value::Array(files))?)?;
    t.raw_set("diff", diff)?;

    let copies = Rc::new(Cell::new(0u32));
    let base = p.workdir.to_path_buf();
    let make_copy = move |inject: Option<String>| -> Result<Copy, String> {
        copies.set(copies.get() + 1);
        let name = format!("{}.check-{}", base.file_name().and_then(|n| n.to_str()).unwrap_or("trial"), copies.get());
        let dir = base.with_file_name(name);
        let copy = Copy(dir.clone());
        if base.exists() {
            copy_tree(&base, &dir).map_err(|e| format!("cannot copy the final work dir: {e}"))?;
        } else {
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        }
        if let Some(inj) = inject {
            overlay(Path::new(&inj), &dir).map_err(|e| format!("cannot inject {inj}: {e}"))?;
        }
        Ok(copy)
    };
    let make_copy = Rc::new(make_copy);

    let mk = make_copy.clone();
    let (phase, view) = (p.phase.clone(), p.view.clone());
    t.raw_set(
        "run_command",
        lua.create_function(move |lua, spec: Table| {
            phase.check("t.run_command")?;
            let argv = argv_of(&spec.get::<Value>("cmd")?, "t.run_command")?;
            let timeout = Duration::from_secs_f64(spec.get::<Option<f64>>("timeout_s")?.unwrap_or(60.0).max(0.001));
            let max_output = spec.get::<Option<f64>>("max_output")?.map(|v| v as usize).unwrap_or(CHECK_MAX_OUTPUT);
            let tail = spec.get::<Option<f64>>("tail")?.map(|v| v as usize).unwrap_or(CHECK_TAIL);
            let copy = match mk(spec.get::<Option<String>>("inject")?) {
                Ok(c) => c,
                Err(e) => return Ok((Value::Nil, Some(e))),
            };
            let pspec = process::Spec { argv: &argv, cwd: &copy.0, timeout, max_output, tail, view: &view };
            let limits = engine::limits(lua);
            match limits.blocking(|| process::run(&pspec)) {
                Ok(out) => {
                    Ok((convert::to_lua(lua, &serde_json::to_value(&out).map_err(mlua::Error::external)?)?, None))
                }
                Err(e) => Ok((Value::Nil, Some(e.to_string()))),
            }
        })?,
    )?;
    let mk = make_copy;
    let ran = p.tests_ran.clone();
    let (phase, view) = (p.phase.clone(), p.view.clone());
    t.raw_set(
        "run_tests",
        lua.create_function(move |lua, spec: Table| {
            phase.check("t.run_tests")?;
            let runner: Vec<String> = spec.get("runner")?;
            let tests: Vec<String> = spec.get("tests")?;
            let timeout = Duration::from_secs_f64(spec.get::<Option<f64>>("timeout_s")?.unwrap_or(60.0).max(0.001));
            let copy = match mk(spec.get::<Option<String>>("inject")?) {
                Ok(c) => c,
                Err(e) => return Ok((Value::Nil, Some(e))),
            };
            let limits = engine::limits(lua);
            match limits.blocking(|| run_tests(&copy.0, &runner, &tests, timeout, &view)) {
                Ok(runs) => {
                    ran.borrow_mut().extend(runs.iter().cloned());
                    let v = serde_json::to_value(&runs).map_err(mlua::Error::external)?;
                    let lv = convert::to_lua(lua, &v)?;
                    if let Value::Table(t) = &lv {
                        t.set_metatable(Some(lua.array_metatable()))?;
                    }
                    Ok((lv, None))
                }
                Err(e) => Ok((Value::Nil, Some(e.to_string()))),
            }
        })?,
    )?;
    Ok(())
}

/// A check's private copy of the final tree, removed when dropped.
struct Copy(PathBuf);

impl Drop for Copy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
