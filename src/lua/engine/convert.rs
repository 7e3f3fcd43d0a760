//! Lua values ↔ JSON, strictly.
//!
//! Tool arguments, results, evidence and traces cross this boundary. A sparse
//! or mixed table would silently lose items through a generic serde bridge, so
//! such tables are refused with a message instead. An empty table becomes `{}`
//! unless it was made with `evalua.array()` (or came from a JSON array).

use mlua::serde::SerializeOptions;
use mlua::{Lua, LuaSerdeExt, Table, Value};
use serde_json::{Map, Number, Value as Json};

const MAX_DEPTH: usize = 64;

/// Why a Lua value cannot become JSON.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConvertError {
    #[error("value nested too deeply (or a table that contains itself)")]
    TooDeep,
    #[error("{0} is not a finite number")]
    NotFinite(f64),
    #[error("a {0} cannot become JSON")]
    Unsupported(&'static str),
    #[error("table has integer key {key} outside 1..{len} (a sparse list cannot become JSON)")]
    KeyOutsideList { key: i64, len: usize },
    #[error("table has number key {0}")]
    NumberKey(f64),
    #[error("table has a {0} key")]
    BadKey(&'static str),
    #[error("table mixes list items and named fields (cannot become JSON)")]
    Mixed,
    #[error("a sparse list cannot become JSON")]
    Sparse,
    #[error("{0}")]
    Lua(String),
}

impl From<ConvertError> for String {
    fn from(e: ConvertError) -> String {
        e.to_string()
    }
}

pub fn to_json(lua: &Lua, v: &Value) -> Result<Json, ConvertError> {
    to_json_at(&lua.array_metatable(), v, 0)
}

fn to_json_at(array_mt: &Table, v: &Value, depth: usize) -> Result<Json, ConvertError> {
    if depth > MAX_DEPTH {
        return Err(ConvertError::TooDeep);
    }
    Ok(match v {
        Value::Nil => Json::Null,
        Value::Boolean(b) => Json::Bool(*b),
        Value::Integer(i) => Json::Number((*i).into()),
        Value::Number(n) => Json::Number(Number::from_f64(*n).ok_or(ConvertError::NotFinite(*n))?),
        Value::String(s) => Json::String(s.to_string_lossy()),
        Value::Table(t) => table_to_json(array_mt, t, depth)?,
        Value::LightUserData(p) if p.0.is_null() => Json::Null,
        other => return Err(ConvertError::Unsupported(other.type_name())),
    })
}

fn table_to_json(array_mt: &Table, t: &Table, depth: usize) -> Result<Json, ConvertError> {
    let lua_err = |e: mlua::Error| ConvertError::Lua(e.to_string());
    let len = t.raw_len();
    let mut string_keys = Vec::new();
    let mut int_keys = 0usize;
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair.map_err(lua_err)?;
        match k {
            Value::String(s) => string_keys.push(s.to_string_lossy()),
            Value::Integer(i) if i >= 1 && (i as usize) <= len => int_keys += 1,
            Value::Integer(i) => return Err(ConvertError::KeyOutsideList { key: i, len }),
            Value::Number(n) => return Err(ConvertError::NumberKey(n)),
            other => return Err(ConvertError::BadKey(other.type_name())),
        }
    }
    if !string_keys.is_empty() && int_keys > 0 {
        return Err(ConvertError::Mixed);
    }
    if int_keys > 0 || (string_keys.is_empty() && t.metatable().as_ref() == Some(array_mt)) {
        if int_keys != len {
            return Err(ConvertError::Sparse);
        }
        let mut out = Vec::with_capacity(len);
        for i in 1..=len {
            out.push(to_json_at(array_mt, &t.raw_get::<Value>(i).map_err(lua_err)?, depth + 1)?);
        }
        return Ok(Json::Array(out));
    }
    string_keys.sort();
    let mut map = Map::new();
    for k in string_keys {
        let v: Value = t.raw_get(k.as_str()).map_err(lua_err)?;
        map.insert(k, to_json_at(array_mt, &v, depth + 1)?);
    }
    Ok(Json::Object(map))
}

/// JSON into Lua: `null` becomes nil (absent fields), arrays keep a marker so
/// they serialise back as arrays even when empty.
pub fn to_lua(lua: &Lua, v: &Json) -> mlua::Result<Value> {
    let opts = SerializeOptions::new().serialize_none_to_null(false).serialize_unit_to_null(false);
    lua.to_value_with(v, opts)
}

/// Like [`to_lua`] but keeps JSON `null` as `evalua.null`, for positional data.
pub fn to_lua_keep_null(lua: &Lua, v: &Json) -> mlua::Result<Value> {
    lua.to_value(v)
}
