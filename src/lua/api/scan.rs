//! `host.glob_error`, `host.glob_match`, `host.find_secrets`: the primitives
//! `check.scope` and `check.no_secrets` are written on. Secret values are
//! read here and never enter Lua; what a check sees is redacted.

use mlua::{Lua, LuaSerdeExt, Table, Value};
use serde_json::json;

use crate::lua::engine::convert;

/// The shortest secret value looked for (shorter ones would match by chance).
const MIN_SECRET: usize = 4;

fn rt(msg: impl Into<String>) -> mlua::Error {
    mlua::Error::runtime(msg.into())
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

/// Register `host.glob_error`, `host.glob_match` and `host.find_secrets`.
pub fn register(lua: &Lua, h: &Table) -> mlua::Result<()> {
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
