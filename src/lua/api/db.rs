//! The database handle Lua sees: `ctx.db` (read-write, for tool handlers) and
//! `t.db` / `t.initial` (read-only, for checks).
//!
//! Read-only is enforced twice: a statement that is not read-only is refused
//! before it runs, and the connection is switched to `query_only`.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use mlua::{Lua, LuaSerdeExt, MultiValue, UserData, UserDataMethods, Value};
use rusqlite::types::{Value as Sql, ValueRef};
use rusqlite::{Connection, params_from_iter};

use super::phase::Phase;
use crate::sandbox::open_copy;
use crate::sandbox::sqlite::interrupted;

/// A connection that may be opened lazily (the initial state is only copied
/// when a check asks for it).
pub enum Conn {
    Open(Rc<Connection>),
    Lazy(Arc<Vec<u8>>, RefCell<Option<Rc<Connection>>>),
}

pub struct Db {
    conn: Conn,
    read_only: bool,
    label: &'static str,
    /// The handle works only during this phase of the trial.
    phase: Phase,
}

impl Db {
    pub fn read_write(conn: Rc<Connection>, phase: Phase) -> Self {
        Db { conn: Conn::Open(conn), read_only: false, label: "ctx.db", phase }
    }
    pub fn read_only(conn: Rc<Connection>, label: &'static str, phase: Phase) -> Self {
        Db { conn: Conn::Open(conn), read_only: true, label, phase }
    }
    pub fn lazy_read_only(image: Arc<Vec<u8>>, label: &'static str, phase: Phase) -> Self {
        Db { conn: Conn::Lazy(image, RefCell::new(None)), read_only: true, label, phase }
    }

    /// An SQLite error as a Lua error: a query stopped at the deadline says so.
    fn sql_error(&self, e: rusqlite::Error, sql: &str) -> mlua::Error {
        if interrupted(&e) {
            return mlua::Error::runtime(format!(
                "{}: time limit exceeded: the query was interrupted (in: {})",
                self.label,
                short(sql)
            ));
        }
        if crate::sandbox::sqlite::denied(&e) {
            let why = crate::sandbox::sqlite::DENIED;
            return mlua::Error::runtime(format!("{}: not allowed: {why} (in: {})", self.label, short(sql)));
        }
        mlua::Error::runtime(format!("{}: {e} (in: {})", self.label, short(sql)))
    }

    /// The underlying connection (opened now if lazy).
    pub fn shared_conn(&self) -> mlua::Result<Rc<Connection>> {
        self.conn()
    }

    fn conn(&self) -> mlua::Result<Rc<Connection>> {
        self.phase.check(self.label)?;
        match &self.conn {
            Conn::Open(c) => Ok(c.clone()),
            Conn::Lazy(image, cell) => {
                if let Some(c) = &*cell.borrow() {
                    return Ok(c.clone());
                }
                let c = open_copy(image, true).map_err(|e| mlua::Error::runtime(format!("{}: {e}", self.label)))?;
                let c = Rc::new(c);
                *cell.borrow_mut() = Some(c.clone());
                Ok(c)
            }
        }
    }

    fn prepare<'c>(&self, conn: &'c Connection, sql: &str) -> mlua::Result<rusqlite::CachedStatement<'c>> {
        let stmt = conn.prepare_cached(sql).map_err(|e| self.sql_error(e, sql))?;
        if self.read_only && !stmt.readonly() {
            return Err(mlua::Error::runtime(format!("{} is read-only: {}", self.label, short(sql))));
        }
        Ok(stmt)
    }

    /// Run `sql` and hand each row (as SQL values) to `f`; stop when it returns false.
    fn query(&self, sql: &str, args: MultiValue, mut f: impl FnMut(&[String], Vec<Sql>) -> bool) -> mlua::Result<()> {
        let conn = self.conn()?;
        let mut stmt = self.prepare(&conn, sql)?;
        let names: Vec<String> = stmt.column_names().map(String::from).collect();
        let params = to_params(args)?;
        let mut rows = stmt.query(params_from_iter(params)).map_err(|e| self.sql_error(e, sql))?;
        loop {
            let row = rows.next().map_err(|e| self.sql_error(e, sql))?;
            let Some(row) = row else { break };
            let mut vals = Vec::with_capacity(names.len());
            for i in 0..names.len() {
                vals.push(row.get_ref(i).ok().and_then(|v| Sql::try_from(v).ok()).unwrap_or(Sql::Null));
            }
            if !f(&names, vals) {
                break;
            }
        }
        Ok(())
    }
}

fn short(sql: &str) -> String {
    let s: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() > 80 { format!("{}…", s.chars().take(79).collect::<String>()) } else { s }
}

fn to_params(args: MultiValue) -> mlua::Result<Vec<Sql>> {
    args.into_iter()
        .enumerate()
        .map(|(i, v)| {
            Ok(match v {
                Value::Nil => Sql::Null,
                Value::LightUserData(p) if p.0.is_null() => Sql::Null,
                Value::Boolean(b) => Sql::Integer(b as i64),
                Value::Integer(n) => Sql::Integer(n),
                Value::Number(n) => Sql::Real(n),
                Value::String(s) => Sql::Text(s.to_string_lossy()),
                other => {
                    return Err(mlua::Error::runtime(format!(
                        "SQL parameter {} is a {}; use a string, number, boolean or nil",
                        i + 1,
                        other.type_name()
                    )));
                }
            })
        })
        .collect()
}

fn sql_to_lua(lua: &Lua, v: Sql, keep_null: bool) -> mlua::Result<Value> {
    Ok(match v {
        Sql::Null => {
            if keep_null {
                Value::LightUserData(mlua::LightUserData(std::ptr::null_mut()))
            } else {
                Value::Nil
            }
        }
        Sql::Integer(i) => Value::Integer(i),
        Sql::Real(f) => Value::Number(f),
        Sql::Text(s) => Value::String(lua.create_string(&s)?),
        Sql::Blob(b) => Value::String(lua.create_string(&b)?),
    })
}

/// A stable digest of every table's content, to compare two states.
pub fn digest(conn: &Connection) -> rusqlite::Result<String> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut tables: Vec<String> = {
        let mut s = conn.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )?;
        s.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?
    };
    tables.sort();
    for t in tables {
        h.update(t.as_bytes());
        h.update([0]);
        let mut s = conn.prepare(&format!("SELECT * FROM \"{}\" ORDER BY 1", t.replace('"', "\"\"")))?;
        let n = s.column_count();
        let mut rows = s.query([])?;
        let mut lines = Vec::new();
        while let Some(r) = rows.next()? {
            let mut line = Vec::new();
            for i in 0..n {
                match r.get_ref(i)? {
                    ValueRef::Null => line.extend_from_slice(b"N"),
                    ValueRef::Integer(v) => line.extend_from_slice(format!("I{v}").as_bytes()),
                    ValueRef::Real(v) => line.extend_from_slice(format!("R{v:?}").as_bytes()),
                    ValueRef::Text(v) => {
                        line.push(b'T');
                        line.extend_from_slice(v);
                    }
                    ValueRef::Blob(v) => {
                        line.push(b'B');
                        line.extend_from_slice(v);
                    }
                }
                line.push(0x1f);
            }
            lines.push(line);
        }
        // Order-independent: rows compare as a multiset.
        lines.sort();
        for l in lines {
            h.update(&l);
            h.update([0x1e]);
        }
    }
    Ok(crate::util::digest::hex(&h.finalize()))
}

impl UserData for Db {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("exec", |_, this, (sql, args): (String, MultiValue)| {
            let conn = this.conn()?;
            let mut stmt = this.prepare(&conn, &sql)?;
            let params = to_params(args)?;
            stmt.execute(params_from_iter(params)).map_err(|e| this.sql_error(e, &sql))
        });
        m.add_method("one", |lua, this, (sql, args): (String, MultiValue)| {
            let mut out = Sql::Null;
            this.query(&sql, args, |_, mut row| {
                if !row.is_empty() {
                    out = row.swap_remove(0);
                }
                false
            })?;
            sql_to_lua(lua, out, false)
        });
        m.add_method("row", |lua, this, (sql, args): (String, MultiValue)| {
            let mut out = None;
            this.query(&sql, args, |names, row| {
                out = Some((names.to_vec(), row));
                false
            })?;
            match out {
                None => Ok(Value::Nil),
                Some((names, row)) => {
                    let t = lua.create_table()?;
                    for (n, v) in names.iter().zip(row) {
                        t.raw_set(n.as_str(), sql_to_lua(lua, v, false)?)?;
                    }
                    Ok(Value::Table(t))
                }
            }
        });
        m.add_method("all", |lua, this, (sql, args): (String, MultiValue)| {
            let list = lua.create_table()?;
            let mut err = None;
            this.query(&sql, args, |names, row| {
                let r = (|| -> mlua::Result<()> {
                    let t = lua.create_table()?;
                    for (n, v) in names.iter().zip(row) {
                        t.raw_set(n.as_str(), sql_to_lua(lua, v, false)?)?;
                    }
                    list.raw_push(t)
                })();
                if let Err(e) = r {
                    err = Some(e);
                    return false;
                }
                true
            })?;
            if let Some(e) = err {
                return Err(e);
            }
            list.set_metatable(Some(lua.array_metatable()))?;
            Ok(list)
        });
        m.add_method("rows", |lua, this, (sql, args): (String, MultiValue)| {
            let list = lua.create_table()?;
            let mut err = None;
            this.query(&sql, args, |_, row| {
                let r = (|| -> mlua::Result<()> {
                    let t = lua.create_table()?;
                    for v in row {
                        t.raw_push(sql_to_lua(lua, v, true)?)?;
                    }
                    t.set_metatable(Some(lua.array_metatable()))?;
                    list.raw_push(t)
                })();
                if let Err(e) = r {
                    err = Some(e);
                    return false;
                }
                true
            })?;
            if let Some(e) = err {
                return Err(e);
            }
            list.set_metatable(Some(lua.array_metatable()))?;
            Ok(list)
        });
        m.add_method("digest", |_, this, ()| {
            let conn = this.conn()?;
            digest(&conn).map_err(|e| mlua::Error::runtime(format!("{}: {e}", this.label)))
        });
    }
}
