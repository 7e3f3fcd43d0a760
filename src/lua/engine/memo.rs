//! `evalua.json.decode`'s memo of large texts.
//!
//! A suite that keeps its state as JSON text (AgentDojo's environment: one
//! row of 20 to 50 KB per key, read by every tool call and every check of
//! every trial) decodes the same texts again and again. Parsing the text and
//! building its tables costs far more than copying tables already built: so
//! the state keeps the tables decoded from its last few large texts (in the
//! registry, out of every script's reach), and decoding one of those texts
//! again returns a fresh deep copy of them. The caller gets what decoding
//! gives (new tables it may change, the array metatable where decoding sets
//! it, no table shared with the memo or with an earlier result).

use std::ffi::c_int;

use mlua::{Lua, RegistryKey, Table, Value, ffi};

/// Texts shorter than this are decoded each time (parsing them is cheap).
const MIN_BYTES: usize = 4096;
/// How many texts the memo keeps (the oldest goes first).
const ENTRIES: usize = 16;
/// Deeper tables are not memoised (serde_json stops at 128 levels anyway).
const MAX_DEPTH: u32 = 200;

/// The memo: each text with the registry key of the tables decoded from it.
#[derive(Default)]
struct Memo(Vec<(String, RegistryKey)>);

/// `json_decode(s)`: the decoded value and nil, or nil and the parse error.
pub fn json_decode(lua: &Lua, s: String) -> mlua::Result<(Value, Option<String>)> {
    if s.len() < MIN_BYTES {
        return decode(lua, &s);
    }
    if let Some(kept) = lookup(lua, &s)? {
        if let Some(copy) = deep_copy(lua, &kept)? {
            return Ok((Value::Table(copy), None));
        }
    }
    let (value, err) = decode(lua, &s)?;
    if let Value::Table(t) = &value {
        if let Some(copy) = deep_copy(lua, t)? {
            keep(lua, s, copy)?;
        }
    }
    Ok((value, err))
}

fn decode(lua: &Lua, s: &str) -> mlua::Result<(Value, Option<String>)> {
    Ok(match serde_json::from_str::<serde_json::Value>(s) {
        Ok(j) => (super::convert::to_lua(lua, &j)?, None),
        Err(e) => (Value::Nil, Some(e.to_string())),
    })
}

fn lookup(lua: &Lua, s: &str) -> mlua::Result<Option<Table>> {
    let key = {
        let Some(memo) = lua.app_data_ref::<Memo>() else { return Ok(None) };
        match memo.0.iter().find(|(text, _)| text.len() == s.len() && text == s) {
            Some((_, key)) => lua.registry_value::<Table>(key)?,
            None => return Ok(None),
        }
    };
    Ok(Some(key))
}

fn keep(lua: &Lua, s: String, t: Table) -> mlua::Result<()> {
    let key = lua.create_registry_value(t)?;
    let mut memo = lua.remove_app_data::<Memo>().unwrap_or_default();
    if memo.0.len() >= ENTRIES {
        let (_, old) = memo.0.remove(0);
        lua.remove_registry_value(old)?;
    }
    memo.0.push((s, key));
    lua.set_app_data(memo);
    Ok(())
}

/// A deep copy of `t` (tables copied, with their metatables; other values
/// as they are), or None when `t` is deeper than [`MAX_DEPTH`].
fn deep_copy(lua: &Lua, t: &Table) -> mlua::Result<Option<Table>> {
    // SAFETY: the closure runs inside the protected call exec_raw makes (a
    // memory error becomes an Err), uses absolute indexes, checks the stack
    // space each level needs, and owns nothing that needs dropping.
    unsafe {
        lua.exec_raw::<Option<Table>>(t, |l| {
            if !copy_table(l, 1, 0) {
                ffi::lua_pushnil(l);
            }
            ffi::lua_replace(l, 1);
            ffi::lua_settop(l, 1);
        })
    }
}

/// Push a copy of the table at absolute index `src`; false (the stack as it
/// was, or with a partial copy above it) when it is too deep.
///
/// # Safety
///
/// `l` is a running state inside a protected call; `src` is a table.
unsafe fn copy_table(l: *mut ffi::lua_State, src: c_int, depth: u32) -> bool {
    // SAFETY: per the contract; every push is covered by the checkstack.
    unsafe {
        if depth > MAX_DEPTH || ffi::lua_checkstack(l, 6) == 0 {
            return false;
        }
        let border = ffi::lua_rawlen(l, src) as c_int;
        let mut entries: c_int = 0;
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, src) != 0 {
            entries += 1;
            ffi::lua_pop(l, 1);
        }
        ffi::lua_createtable(l, border, (entries - border).max(0));
        let dst = ffi::lua_gettop(l);
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, src) != 0 {
            // dst, key, value
            let v = ffi::lua_gettop(l);
            if ffi::lua_type(l, v) == ffi::LUA_TTABLE {
                if !copy_table(l, v, depth + 1) {
                    return false;
                }
                ffi::lua_replace(l, v);
            }
            ffi::lua_pushvalue(l, v - 1);
            ffi::lua_insert(l, v);
            // dst, key, key, value
            ffi::lua_rawset(l, dst);
        }
        if ffi::lua_getmetatable(l, src) != 0 {
            ffi::lua_setmetatable(l, dst);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlua::LuaSerdeExt;

    fn big_text() -> String {
        let items: Vec<String> =
            (0..200).map(|i| format!(r#"{{"id_": "{i}", "tags": ["a", "b"], "n": {i}.5, "x": null}}"#)).collect();
        format!(r#"{{"emails": [{}], "empty": [], "owner": "me"}}"#, items.join(", "))
    }

    #[test]
    fn a_memoised_text_decodes_to_fresh_equal_tables() {
        let lua = Lua::new();
        let text = big_text();
        assert!(text.len() >= MIN_BYTES);
        let (first, _) = json_decode(&lua, text.clone()).unwrap();
        let (second, _) = json_decode(&lua, text.clone()).unwrap();
        let (a, b) = (first.as_table().unwrap().clone(), second.as_table().unwrap().clone());
        assert_ne!(a.to_pointer(), b.to_pointer());
        let fresh = super::super::convert::to_lua(&lua, &serde_json::from_str(&text).unwrap()).unwrap();
        let want = serde_json::to_value(&fresh).unwrap();
        assert_eq!(serde_json::to_value(&second).unwrap(), want);
        // Changing a result (the first, decoded; the second, copied from the
        // memo) changes neither the memo nor the next result.
        for t in [&a, &b] {
            let emails: Table = t.get("emails").unwrap();
            emails.get::<Table>(1).unwrap().set("id_", "changed").unwrap();
            emails.get::<Table>(2).unwrap().get::<Table>("tags").unwrap().set(1, "z").unwrap();
            t.set("owner", "someone else").unwrap();
        }
        let (third, _) = json_decode(&lua, text).unwrap();
        assert_eq!(serde_json::to_value(&third).unwrap(), want);
        // Arrays keep decoding's array metatable (an empty one stays a list).
        let empty: Table = third.as_table().unwrap().get("empty").unwrap();
        assert_eq!(empty.metatable().map(|m| m.to_pointer()), Some(lua.array_metatable().to_pointer()));
        let e2: Table = second.as_table().unwrap().get::<Table>("emails").unwrap().get(2).unwrap();
        let t2: Table = third.as_table().unwrap().get::<Table>("emails").unwrap().get(2).unwrap();
        assert_ne!(e2.to_pointer(), t2.to_pointer());
    }

    #[test]
    fn a_bad_or_small_text_decodes_as_before() {
        let lua = Lua::new();
        let (v, err) = json_decode(&lua, format!("{{\"a\": [{}", "1, ".repeat(3000))).unwrap();
        assert!(v.is_nil() && err.is_some());
        let (v, err) = json_decode(&lua, "[1, 2]".into()).unwrap();
        assert!(err.is_none() && v.as_table().unwrap().raw_len() == 2);
        assert!(lua.app_data_ref::<Memo>().is_none());
    }

    #[test]
    fn the_memo_keeps_the_last_texts_only() {
        let lua = Lua::new();
        for i in 0..ENTRIES + 3 {
            let text = format!(r#"{{"k": {i}, "rest": {}}}"#, big_text());
            let (v, err) = json_decode(&lua, text).unwrap();
            assert!(err.is_none() && v.is_table(), "{err:?}");
        }
        assert_eq!(lua.app_data_ref::<Memo>().unwrap().0.len(), ENTRIES);
    }
}
