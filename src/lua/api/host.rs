//! `evalua.host`: the primitives the Lua stdlib is written on. Kept small and
//! general (regex, JSON, JSON Schema, instants, paths, source locations) so the
//! checks themselves stay in Lua where teammates can read them.

use std::path::Path;

use jiff::tz::TimeZone;
use jiff::{Timestamp, ZonedDateTime as Zoned};
use mlua::{Function, Lua, LuaSerdeExt, Table, Value, Variadic};

use crate::lua::engine::{self, StateData, caller, convert};
use crate::util::paths::resolve;
use crate::util::regex::with_regex;
use crate::util::schema;
use crate::util::time::instant;

pub use super::marks::{SKIP, UNDECIDED};

/// False in a trial's state: see [`engine::StateConfig::validate`].
fn validating(lua: &Lua) -> bool {
    lua.app_data_ref::<StateData>().map(|d| d.config.validate).unwrap_or(true)
}

fn frozen_clock(lua: &Lua) -> i64 {
    lua.app_data_ref::<StateData>().map(|d| d.config.clock).unwrap_or(0)
}

fn err<T>(msg: impl Into<String>) -> mlua::Result<T> {
    Err(mlua::Error::runtime(msg.into()))
}

/// Fill the host table of a new state (see [`engine::new_state`]).
pub fn register(lua: &Lua, h: &Table) -> mlua::Result<()> {
    let null = Value::LightUserData(mlua::LightUserData(std::ptr::null_mut()));
    h.raw_set("null", null)?;
    // Returned by a check as its first value: "could not be decided here" (e.g. no judge configured).
    h.raw_set("SKIP", SKIP)?;
    h.raw_set("UNDECIDED", UNDECIDED)?;
    super::judge::register(lua, h)?;
    h.raw_set("env", lua.create_function(|lua, ()| engine::env(lua))?)?;
    h.raw_set("validating", lua.create_function(|lua, ()| Ok(validating(lua)))?)?;
    // Model configuration (issue 5): only EVALUA_* variables are readable; keys never enter Lua.
    h.raw_set(
        "getenv",
        lua.create_function(|_, name: String| {
            if !name.starts_with("EVALUA_") {
                return err(format!("only variables named EVALUA_* are readable, got {name}"));
            }
            Ok(std::env::var(&name).ok().filter(|v| !v.is_empty()))
        })?,
    )?;
    // What the DSL checks a suite's tables against, from the Rust declarations.
    h.raw_set(
        "fault_kinds",
        lua.create_function(|lua, ()| {
            let t = lua.create_table()?;
            for kind in crate::spec::FaultKind::ALL {
                t.raw_set(kind.as_str(), kind.keys())?;
            }
            Ok(t)
        })?,
    )?;
    h.raw_set(
        "fields",
        lua.create_function(|_, what: String| {
            crate::lua::api::fields::declared(&what)
                .ok_or_else(|| mlua::Error::runtime(format!("host.fields: no declaration named '{what}'")))
        })?,
    )?;
    h.raw_set(
        "default",
        lua.create_function(|_, name: String| {
            let v = crate::lua::api::fields::default_of(&name)
                .ok_or_else(|| mlua::Error::runtime(format!("host.default: no default named '{name}'")))?;
            // A whole default is a Lua integer, as a suite would write it (`2`, not `2.0`).
            Ok(if v.fract() == 0.0 && v.abs() < 2f64.powi(53) { Value::Integer(v as i64) } else { Value::Number(v) })
        })?,
    )?;
    h.raw_set(
        "model_configured",
        lua.create_function(|_, provider: String| {
            // An unknown name is no configured provider (the stdlib names only known ones).
            Ok(crate::spec::Provider::from_name(&provider).is_some_and(crate::model::configured))
        })?,
    )?;
    // Whether a variable is set (e.g. a database URL, which may hold a password): its value stays out of Lua.
    h.raw_set(
        "env_is_set",
        lua.create_function(|_, name: String| Ok(std::env::var_os(&name).is_some_and(|v| !v.is_empty())))?,
    )?;
    super::declare::register(lua, h)?;

    h.raw_set(
        "array",
        lua.create_function(|lua, t: Table| {
            t.set_metatable(Some(lua.array_metatable()))?;
            Ok(t)
        })?,
    )?;
    h.raw_set(
        "abspath",
        lua.create_function(|lua, rel: String| Ok(resolve(&engine::suite_dir(lua), &rel).display().to_string()))?,
    )?;
    h.raw_set("exists", lua.create_function(|lua, p: String| Ok(!validating(lua) || Path::new(&p).exists()))?)?;
    h.raw_set("caller", lua.create_function(|lua, level: Option<usize>| Ok(caller(lua, level.unwrap_or(1))))?)?;
    // `located(f)`: a host function calling `f(where, ...)` with its caller's
    // `file:line`, which prefixes any error `f` raises. Being a host function,
    // it keeps that line even when called in a tail call (`return g(...)`).
    h.raw_set(
        "located",
        lua.create_function(|lua, f: Function| {
            lua.create_function(move |lua, args: mlua::MultiValue| {
                let at = caller(lua, 1);
                let mut all = mlua::MultiValue::new();
                all.push_back(Value::String(lua.create_string(&at)?));
                all.extend(args);
                f.call::<mlua::MultiValue>(all).map_err(|e| {
                    // A message that names its own line (a declaration's report) keeps it.
                    let msg = engine::describe(&e);
                    if crate::util::names::has_location(&msg) {
                        mlua::Error::runtime(msg)
                    } else {
                        mlua::Error::runtime(format!("{at}: {msg}"))
                    }
                })
            })
        })?,
    )?;
    h.raw_set(
        "where",
        lua.create_function(|_, f: Function| {
            let info = f.info();
            let src = info.source.unwrap_or_default();
            Ok(format!("{}:{}", src.strip_prefix('@').unwrap_or(&src), info.line_defined.unwrap_or(0)))
        })?,
    )?;

    h.raw_set(
        "instant",
        lua.create_function(|_, (text, zone): (String, Option<String>)| {
            Ok(match instant(&text, zone.as_deref().unwrap_or("UTC")) {
                Ok(v) => (Value::Number(v), None),
                Err(e) => (Value::Nil, Some(e)),
            })
        })?,
    )?;

    h.raw_set("regex_error", lua.create_function(|_, p: String| Ok(with_regex(&p, |_| ()).err()))?)?;
    // `exclude = { … }` (SPEC §22): the outcomes and endings a suite may leave out.
    h.raw_set(
        "exclusion_error",
        lua.create_function(|_, name: String| {
            Ok((!crate::spec::EXCLUDABLE.contains(&name.as_str())).then(|| {
                let why = match name.as_str() {
                    "accepted" => "an accepted trial is never left out",
                    _ => "unknown",
                };
                format!("{name:?}: {why}; it may name {}", crate::spec::EXCLUDABLE.join(", "))
            }))
        })?,
    )?;
    h.raw_set(
        "regex_is_match",
        lua.create_function(|_, (p, s): (String, mlua::LuaString)| {
            with_regex(&p, |re| re.is_match(&s.to_string_lossy())).or_else(err)
        })?,
    )?;
    h.raw_set(
        "regex_find",
        lua.create_function(|_, (p, s): (String, mlua::LuaString)| {
            let s = s.to_string_lossy();
            with_regex(&p, |re| re.find(&s).map(|m| m.as_str().to_string())).or_else(err)
        })?,
    )?;
    h.raw_set(
        "regex_all",
        lua.create_function(|lua, (p, s): (String, mlua::LuaString)| {
            let s = s.to_string_lossy();
            let items = with_regex(&p, |re| {
                re.captures_iter(&s)
                    .map(|c| c.get(1).or_else(|| c.get(0)).map(|m| m.as_str().to_string()).unwrap_or_default())
                    .collect::<Vec<_>>()
            })
            .or_else(err)?;
            let t = lua.create_sequence_from(items)?;
            t.set_metatable(Some(lua.array_metatable()))?;
            Ok(t)
        })?,
    )?;

    h.raw_set(
        "json_encode",
        lua.create_function(|lua, v: Value| {
            let j = convert::to_json(lua, &v).or_else(err)?;
            Ok(j.to_string())
        })?,
    )?;
    // Large texts decoded before are copied from a memo (engine::memo).
    h.raw_set("json_decode", lua.create_function(|lua, s: String| engine::memo::json_decode(lua, s))?)?;
    h.raw_set(
        "schema_error",
        lua.create_function(|lua, schema: Value| {
            if !validating(lua) {
                return Ok(None);
            }
            // A value that cannot become JSON (NaN, a function) is the answer, not a raise:
            // the DSL reports it at the suite's line.
            match convert::to_json(lua, &schema) {
                Ok(j) => Ok(schema::validator(&j).err()),
                Err(e) => Ok(Some(e.to_string())),
            }
        })?,
    )?;
    h.raw_set(
        "schema_validate",
        lua.create_function(|lua, (schema, value): (Value, Value)| {
            let s = convert::to_json(lua, &schema).or_else(err)?;
            let v = schema::validator(&s).or_else(err)?;
            let value = convert::to_json(lua, &value).or_else(err)?;
            let errors = schema::errors(&v, &value);
            let list = lua.create_sequence_from(errors.clone())?;
            Ok((errors.is_empty(), list))
        })?,
    )?;
    h.raw_set(
        "gate_error",
        lua.create_function(|lua, gate: Value| {
            if !validating(lua) {
                return Ok(None);
            }
            match convert::to_json(lua, &gate) {
                Ok(j) => Ok(crate::spec::gate::parse(&j).err()),
                Err(e) => Ok(Some(e.to_string())),
            }
        })?,
    )?;

    // A frozen clock: os.time() and os.date() read the trial's clock, in UTC.
    h.raw_set(
        "os_time",
        lua.create_function(|lua, t: Option<Table>| {
            let Some(t) = t else {
                return Ok(frozen_clock(lua));
            };
            let get = |k: &str, d: Option<i64>| -> mlua::Result<i64> {
                match t.get::<Option<i64>>(k)? {
                    Some(v) => Ok(v),
                    None => d.ok_or_else(|| mlua::Error::runtime(format!("os.time: field '{k}' missing"))),
                }
            };
            let dt = jiff::civil::DateTime::new(
                get("year", None)? as i16,
                get("month", None)? as i8,
                get("day", None)? as i8,
                get("hour", Some(12))? as i8,
                get("min", Some(0))? as i8,
                get("sec", Some(0))? as i8,
                0,
            )
            .map_err(|e| mlua::Error::runtime(format!("os.time: {e}")))?;
            Ok(dt
                .to_zoned_datetime(TimeZone::UTC)
                .map_err(|e| mlua::Error::runtime(e.to_string()))?
                .timestamp()
                .as_second())
        })?,
    )?;
    h.raw_set(
        "os_date",
        lua.create_function(|lua, (fmt, t): (Option<String>, Option<i64>)| {
            let secs = t.unwrap_or_else(|| frozen_clock(lua));
            let ts = Timestamp::from_second(secs).map_err(|e| mlua::Error::runtime(e.to_string()))?;
            let z: Zoned = ts.to_zoned_datetime(TimeZone::UTC);
            let fmt = fmt.unwrap_or_else(|| "%c".to_string());
            let fmt = fmt.strip_prefix('!').unwrap_or(&fmt);
            if fmt == "*t" {
                let tbl = lua.create_table()?;
                tbl.raw_set("year", z.year())?;
                tbl.raw_set("month", z.month())?;
                tbl.raw_set("day", z.day())?;
                tbl.raw_set("hour", z.hour())?;
                tbl.raw_set("min", z.minute())?;
                tbl.raw_set("sec", z.second())?;
                tbl.raw_set("wday", z.weekday().to_sunday_one_offset())?;
                tbl.raw_set("yday", z.day_of_year())?;
                tbl.raw_set("isdst", false)?;
                return Ok(Value::Table(tbl));
            }
            let s = jiff::fmt::strtime::format(fmt, &z).map_err(|e| mlua::Error::runtime(format!("os.date: {e}")))?;
            Ok(Value::String(lua.create_string(&s)?))
        })?,
    )?;
    let start = std::time::Instant::now();
    h.raw_set("os_clock", lua.create_function(move |_, ()| Ok(start.elapsed().as_secs_f64()))?)?;
    h.raw_set(
        "print",
        lua.create_function(|lua, args: Variadic<Value>| {
            let parts: Vec<String> = args
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.to_string_lossy(),
                    other => other.to_string().unwrap_or_else(|_| format!("{other:?}")),
                })
                .collect();
            let line = parts.join("\t");
            if let Some(mut log) = lua.app_data_mut::<engine::Log>() {
                log.push(line);
            } else {
                eprintln!("{line}");
            }
            Ok(())
        })?,
    )?;
    super::scan::register(lua, h)?;
    Ok(())
}
