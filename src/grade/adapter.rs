//! The suite's `trace_adapter` (and `match`): Lua hooks run on a recorded
//! item under their own limits, and what the adapter returns read strictly.

use std::time::{Duration, Instant};

use mlua::{Function, Lua, Table, Value};
use serde_json::Value as Json;

use crate::lua::api::t as tapi;
use crate::lua::engine::{self as engine, Segment, convert, limits::Guarded};
use crate::otel::item::{Adapted, AdaptedCall, AdaptedSpan};
use crate::otel::span::Span;
use crate::record::CallStatus;

/// Limits on the adapter (per span) and on `match` (per item).
const HOOK_INSTRUCTIONS: u64 = 10_000_000;
const HOOK_SECONDS: u64 = 5;

/// A span as Lua sees it (the adapter's argument, `t.spans`' items).
pub fn span_table(lua: &Lua, s: &Span) -> mlua::Result<Table> {
    tapi::span_table(lua, s)
}

fn hook<R: mlua::FromLuaMulti>(lua: &Lua, f: &Function, arg: impl mlua::IntoLuaMulti) -> Result<R, String> {
    let seg = Segment {
        instructions: Some(HOOK_INSTRUCTIONS),
        deadline: Some(Instant::now() + Duration::from_secs(HOOK_SECONDS)),
    };
    match engine::limits(lua).guard(lua, seg, || f.call::<R>(arg)) {
        Guarded::Done(Ok(v)) => Ok(v),
        Guarded::Done(Err(e)) => Err(engine::describe(&e)),
        Guarded::Stopped(stop) => Err(format!("stopped: {}", stop.describe())),
    }
}

/// The suite's `trace_adapter`, on every span.
pub(super) fn adapt(lua: &Lua, suite_t: &Table, spans: &[Span]) -> Result<Vec<Adapted>, String> {
    let f: Function = suite_t.get("trace_adapter").map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(spans.len());
    for s in spans {
        let arg = span_table(lua, s).map_err(|e| e.to_string())?;
        let v: Value = hook(lua, &f, arg).map_err(|e| format!("span {} ({}): {e}", s.span_id, s.name))?;
        out.push(adapted(lua, v).map_err(|e| format!("span {} ({}): {e}", s.span_id, s.name))?);
    }
    Ok(out)
}

const ADAPTED_KEYS: [&str; 5] = ["skip", "call", "input", "answer", "usage"];

/// What an adapter returned, read strictly.
fn adapted(lua: &Lua, v: Value) -> Result<Adapted, String> {
    let t = match v {
        Value::Nil => return Ok(Adapted::Default),
        Value::Table(t) => t,
        other => return Err(format!("trace_adapter must return nil or a table, got {}", other.type_name())),
    };
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair.map_err(|e| e.to_string())?;
        let name = k.as_string().map(|s| s.to_string_lossy()).unwrap_or_default();
        if !ADAPTED_KEYS.contains(&name.as_str()) {
            return Err(format!("trace_adapter returned an unknown key {k:?} (known: {})", ADAPTED_KEYS.join(", ")));
        }
    }
    if t.get::<Option<bool>>("skip").map_err(|e| e.to_string())? == Some(true) {
        return Ok(Adapted::Skip);
    }
    let text = |k: &str| -> Result<Option<String>, String> {
        match t.get::<Value>(k).map_err(|e| e.to_string())? {
            Value::Nil => Ok(None),
            Value::String(s) => Ok(Some(s.to_string_lossy())),
            other => Ok(Some(convert::to_json(lua, &other)?.to_string())),
        }
    };
    let mut a = AdaptedSpan { input: text("input")?, answer: text("answer")?, ..Default::default() };
    if let Some(c) = t.get::<Option<Table>>("call").map_err(|e| e.to_string())? {
        let name: String =
            c.get::<Option<String>>("name").map_err(|e| e.to_string())?.ok_or("call.name is required")?;
        let json = |k: &str| -> Result<Option<Json>, String> {
            match c.get::<Value>(k).map_err(|e| e.to_string())? {
                Value::Nil => Ok(None),
                v => Ok(Some(convert::to_json(lua, &v)?)),
            }
        };
        let status = match c.get::<Option<String>>("status").map_err(|e| e.to_string())?.as_deref() {
            None | Some("executed") | Some("ok") => CallStatus::Executed,
            Some("failed") | Some("error") => CallStatus::Failed,
            Some("denied") => CallStatus::Denied,
            Some("rejected") => CallStatus::Rejected,
            Some("faulted") => CallStatus::Faulted(None),
            Some(other) => {
                return Err(format!("call.status {other:?} is not executed, failed, denied, rejected or faulted"));
            }
        };
        a.call = Some(AdaptedCall {
            name,
            args: json("args")?.unwrap_or(Json::Object(Default::default())),
            result: json("result")?,
            status,
            error: c.get::<Option<String>>("error").map_err(|e| e.to_string())?,
        });
    }
    if let Some(u) = t.get::<Option<Table>>("usage").map_err(|e| e.to_string())? {
        a.input_tokens = u.get::<Option<f64>>("input_tokens").map_err(|e| e.to_string())?.map(|v| v.max(0.0) as u64);
        a.output_tokens = u.get::<Option<f64>>("output_tokens").map_err(|e| e.to_string())?.map(|v| v.max(0.0) as u64);
        a.cost_usd = u.get::<Option<f64>>("cost_usd").map_err(|e| e.to_string())?;
    }
    Ok(Adapted::Read(Box::new(a)))
}

/// The suite's `match(item)`: a case id, or nil.
pub(super) fn call_match(lua: &Lua, suite_t: &Table, t: &Table) -> Result<Option<String>, String> {
    let f: Function = suite_t.get("match").map_err(|e| e.to_string())?;
    match hook::<Value>(lua, &f, t.clone())? {
        Value::Nil => Ok(None),
        Value::String(s) => Ok(Some(s.to_string_lossy())),
        other => Err(format!("match must return a case id (a string) or nil, got {}", other.type_name())),
    }
}
