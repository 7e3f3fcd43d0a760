//! Lua bindings for work-dir trials (coding agents):
//!
//! - `ctx.confine`, `ctx.list_dir`, `ctx.exec`, `ctx.deny` for tool handlers
//!   (the `evalua.tools` kit is written on them);
//! - `t.diff`, `t.run_command`, `t.run_tests` for checks (each command runs
//!   in a fresh copy of the final tree, so no check changes what the next sees);
//! - `host.glob_match`, `host.glob_error`, `host.find_secrets` for
//!   `check.scope` and `check.no_secrets`.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use mlua::{Lua, LuaSerdeExt, Table, Value};
use serde_json::json;

use super::convert;
use crate::coding;
use crate::executor::TrialState;
use crate::process;
use crate::trial::Trial;

/// Defaults of `ctx.exec` (the `run` tool).
const EXEC_TIMEOUT_S: f64 = 30.0;
const EXEC_MAX_OUTPUT: usize = 4 * 1024 * 1024;
const EXEC_TAIL: usize = 16 * 1024;
/// Defaults of `t.run_command` (`check.command`).
const CHECK_MAX_OUTPUT: usize = 16 * 1024 * 1024;
const CHECK_TAIL: usize = 4 * 1024;
/// The shortest secret value looked for (shorter ones would match by chance).
const MIN_SECRET: usize = 4;

fn rt(msg: impl Into<String>) -> mlua::Error {
    mlua::Error::runtime(msg.into())
}

/// `cmd` as an argv: a list of strings, or a string run by `sh -c`.
fn argv_of(v: &Value, what: &str) -> mlua::Result<Vec<String>> {
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

/// The tool-handler side: registered on the trial's `ctx`.
pub fn install_ctx(
    lua: &Lua,
    ctx: &Table,
    workdir: &Path,
    state: &Rc<RefCell<TrialState>>,
    deadline: Instant,
) -> mlua::Result<()> {
    let st = state.clone();
    ctx.raw_set(
        "deny",
        lua.create_function(move |_, reason: String| -> mlua::Result<()> {
            st.borrow_mut().denied = Some(reason.clone());
            Err(rt(format!("denied: {reason}")))
        })?,
    )?;
    let root = workdir.to_path_buf();
    ctx.raw_set(
        "confine",
        lua.create_function(move |_, rel: String| {
            Ok(match crate::sandbox::inside(&root, &rel) {
                Ok(p) => (Some(p.display().to_string()), None),
                Err(e) => (None, Some(e)),
            })
        })?,
    )?;
    let root = workdir.to_path_buf();
    ctx.raw_set(
        "list_dir",
        lua.create_function(move |lua, rel: Option<String>| {
            let rel = rel.unwrap_or_default();
            let dir = if rel.is_empty() || rel == "." {
                std::fs::create_dir_all(&root).map_err(|e| rt(format!("ctx.list_dir: {e}")))?;
                root.clone()
            } else {
                crate::sandbox::inside(&root, &rel).map_err(|e| rt(format!("ctx.list_dir: {e}")))?
            };
            let rd = std::fs::read_dir(&dir).map_err(|e| rt(format!("ctx.list_dir: {rel}: {e}")))?;
            let mut entries: Vec<(String, &str, u64)> = Vec::new();
            for e in rd.flatten() {
                let Ok(ft) = e.file_type() else { continue };
                let kind = if ft.is_symlink() {
                    "symlink"
                } else if ft.is_dir() {
                    "dir"
                } else {
                    "file"
                };
                let size = if kind == "file" { e.metadata().map(|m| m.len()).unwrap_or(0) } else { 0 };
                entries.push((e.file_name().to_string_lossy().into_owned(), kind, size));
            }
            entries.sort();
            let out = lua.create_table()?;
            for (name, kind, size) in entries {
                let t = lua.create_table()?;
                t.raw_set("name", name)?;
                t.raw_set("type", kind)?;
                t.raw_set("size", size)?;
                out.raw_push(t)?;
            }
            out.set_metatable(Some(lua.array_metatable()))?;
            Ok(out)
        })?,
    )?;
    let root = workdir.to_path_buf();
    ctx.raw_set(
        "exec",
        lua.create_function(move |lua, (cmd, opts): (Value, Option<Table>)| {
            let argv = argv_of(&cmd, "ctx.exec")?;
            let limits = super::limits(lua);
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
            let spec = process::Spec { argv: &argv, cwd: &root, timeout: want.min(left), max_output, tail };
            let out = limits.blocking(|| process::run(&spec)).map_err(|e| rt(format!("ctx.exec: {e}")))?;
            convert::to_lua(lua, &serde_json::to_value(&out).map_err(mlua::Error::external)?)
        })?,
    )?;
    Ok(())
}

/// The check side: `t.diff`, `t.run_command`, `t.run_tests`.
pub fn extend_t(lua: &Lua, t: &Table, trial: &Trial<'_>) -> mlua::Result<()> {
    let before = trial.case.work.as_ref().map(|w| w.dir.clone());
    let d = if before.is_none() && !trial.workdir.exists() {
        crate::workdir::Diff::default()
    } else {
        crate::workdir::diff(before.as_deref(), &trial.workdir).map_err(|e| rt(format!("t.diff: {e}")))?
    };
    let files: Vec<serde_json::Value> =
        d.files.iter().map(|(p, s)| json!({ "path": p, "status": s.as_str() })).collect();
    let diff = lua.create_table()?;
    diff.raw_set("text", d.text)?;
    diff.raw_set("files", convert::to_lua(lua, &serde_json::Value::Array(files))?)?;
    t.raw_set("diff", diff)?;

    let copies = Rc::new(Cell::new(0u32));
    let base = trial.workdir.clone();
    let make_copy = move |inject: Option<String>| -> Result<Copy, String> {
        copies.set(copies.get() + 1);
        let name = format!("{}.check-{}", base.file_name().and_then(|n| n.to_str()).unwrap_or("trial"), copies.get());
        let dir = base.with_file_name(name);
        let copy = Copy(dir.clone());
        if base.exists() {
            crate::workdir::copy_tree(&base, &dir).map_err(|e| format!("cannot copy the final work dir: {e}"))?;
        } else {
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        }
        if let Some(inj) = inject {
            coding::overlay(Path::new(&inj), &dir).map_err(|e| format!("cannot inject {inj}: {e}"))?;
        }
        Ok(copy)
    };
    let make_copy = Rc::new(make_copy);

    let mk = make_copy.clone();
    t.raw_set(
        "run_command",
        lua.create_function(move |lua, spec: Table| {
            let argv = argv_of(&spec.get::<Value>("cmd")?, "t.run_command")?;
            let timeout = Duration::from_secs_f64(spec.get::<Option<f64>>("timeout_s")?.unwrap_or(60.0).max(0.001));
            let max_output = spec.get::<Option<f64>>("max_output")?.map(|v| v as usize).unwrap_or(CHECK_MAX_OUTPUT);
            let tail = spec.get::<Option<f64>>("tail")?.map(|v| v as usize).unwrap_or(CHECK_TAIL);
            let copy = match mk(spec.get::<Option<String>>("inject")?) {
                Ok(c) => c,
                Err(e) => return Ok((Value::Nil, Some(e))),
            };
            let pspec = process::Spec { argv: &argv, cwd: &copy.0, timeout, max_output, tail };
            let limits = super::limits(lua);
            match limits.blocking(|| process::run(&pspec)) {
                Ok(out) => {
                    Ok((convert::to_lua(lua, &serde_json::to_value(&out).map_err(mlua::Error::external)?)?, None))
                }
                Err(e) => Ok((Value::Nil, Some(e))),
            }
        })?,
    )?;
    let mk = make_copy;
    t.raw_set(
        "run_tests",
        lua.create_function(move |lua, spec: Table| {
            let runner: Vec<String> = spec.get("runner")?;
            let tests: Vec<String> = spec.get("tests")?;
            let timeout = Duration::from_secs_f64(spec.get::<Option<f64>>("timeout_s")?.unwrap_or(60.0).max(0.001));
            let copy = match mk(spec.get::<Option<String>>("inject")?) {
                Ok(c) => c,
                Err(e) => return Ok((Value::Nil, Some(e))),
            };
            let limits = super::limits(lua);
            match limits.blocking(|| coding::run_tests(&copy.0, &runner, &tests, timeout)) {
                Ok(runs) => {
                    let v = serde_json::to_value(&runs).map_err(mlua::Error::external)?;
                    let lv = convert::to_lua(lua, &v)?;
                    if let Value::Table(t) = &lv {
                        t.set_metatable(Some(lua.array_metatable()))?;
                    }
                    Ok((lv, None))
                }
                Err(e) => Ok((Value::Nil, Some(e))),
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

fn glob(p: &str) -> Result<globset::GlobMatcher, String> {
    globset::GlobBuilder::new(p).literal_separator(true).build().map(|g| g.compile_matcher()).map_err(|e| e.to_string())
}

/// Replace every secret value and pattern match in `text` with `[REDACTED <label>]`.
fn redact(text: &str, values: &[(String, String)], patterns: &[(String, regex::Regex)]) -> String {
    let mut s = text.to_string();
    for (label, v) in values {
        s = s.replace(v.as_str(), &format!("[REDACTED {label}]"));
    }
    for (label, re) in patterns {
        s = re.replace_all(&s, format!("[REDACTED {label}]").as_str()).into_owned();
    }
    s
}

/// A short window of `text` around byte `at`, on char boundaries.
fn window(text: &str, at: usize, len: usize) -> String {
    let mut lo = at.saturating_sub(40);
    while !text.is_char_boundary(lo) {
        lo -= 1;
    }
    let mut hi = (at + len + 40).min(text.len());
    while !text.is_char_boundary(hi) {
        hi += 1;
    }
    let mut out = String::new();
    if lo > 0 {
        out.push('…');
    }
    out.push_str(&text[lo..hi]);
    if hi < text.len() {
        out.push('…');
    }
    out.replace('\n', "⏎")
}

pub fn register_host(lua: &Lua, h: &Table) -> mlua::Result<()> {
    h.raw_set("glob_error", lua.create_function(|_, p: String| Ok(glob(&p).err()))?)?;
    h.raw_set(
        "glob_match",
        lua.create_function(|_, (patterns, path): (Vec<String>, String)| {
            for (i, p) in patterns.iter().enumerate() {
                if glob(p).map_err(rt)?.is_match(&path) {
                    return Ok(Some(i + 1));
                }
            }
            Ok(None)
        })?,
    )?;
    h.raw_set(
        "find_secrets",
        lua.create_function(|lua, (names, patterns, items): (Vec<String>, Vec<String>, Vec<Table>)| {
            let mut notes = Vec::new();
            let mut values = Vec::new();
            for n in &names {
                match std::env::var(n) {
                    Ok(v) if v.len() >= MIN_SECRET => values.push((format!("env {n}"), v)),
                    Ok(v) if v.is_empty() => notes.push(format!("{n} is empty: not looked for")),
                    Ok(_) => notes.push(format!("{n} is shorter than {MIN_SECRET} characters: not looked for")),
                    Err(_) => notes.push(format!("{n} is not set: not looked for")),
                }
            }
            let mut res = Vec::new();
            for (i, p) in patterns.iter().enumerate() {
                let re = regex::Regex::new(p).map_err(|e| rt(format!("find_secrets: pattern {}: {e}", i + 1)))?;
                res.push((format!("pattern {}", i + 1), re));
            }
            let mut findings = Vec::new();
            for item in items {
                let place: String = item.get("where")?;
                let text: mlua::LuaString = item.get("text")?;
                let text = text.to_string_lossy();
                let mut hits: Vec<&str> = Vec::new();
                for (label, v) in &values {
                    if text.contains(v.as_str()) {
                        hits.push(label);
                    }
                }
                for (label, re) in &res {
                    if re.is_match(&text) {
                        hits.push(label);
                    }
                }
                if hits.is_empty() {
                    continue;
                }
                let clean = redact(&text, &values, &res);
                let at = clean.find("[REDACTED ").unwrap_or(0);
                let excerpt = window(&clean, at, clean[at..].find(']').map(|e| e + 1).unwrap_or(0));
                findings.push(json!({ "where": place, "secret": hits, "excerpt": excerpt }));
            }
            let f = convert::to_lua(lua, &serde_json::Value::Array(findings))?;
            if let Value::Table(t) = &f {
                t.set_metatable(Some(lua.array_metatable()))?;
            }
            let n = lua.create_sequence_from(notes)?;
            n.set_metatable(Some(lua.array_metatable()))?;
            Ok((f, n))
        })?,
    )?;
    Ok(())
}
