//! The database handle Lua sees: `ctx.db` (read-write, for tool handlers) and
//! `t.db` / `t.initial` (read-only, for checks).
//!
//! The handles speak to a `sandbox::db::Database`, whatever the backend
//! (SQLite or PostgreSQL). Read-only is the backend's to enforce: SQLite
//! refuses a statement that is not read-only before it runs and switches the
//! connection to `query_only`; PostgreSQL runs each statement in a read-only
//! transaction.

use std::rc::Rc;

use mlua::{Lua, LuaSerdeExt, MultiValue, UserData, UserDataMethods, Value};

use super::phase::Phase;
use crate::sandbox::db::{Database, DbError, LazyDb, SqlValue as Sql};

/// The database behind a handle: open, or opened on first use (the initial
/// state is only copied when a check asks for it).
pub enum Conn {
    Open(Rc<dyn Database>),
    Lazy(Rc<LazyDb>),
}

pub struct Db {
    conn: Conn,
    read_only: bool,
    label: &'static str,
    /// The handle works only during this phase of the trial.
    phase: Phase,
}

impl Db {
    pub fn read_write(db: Rc<dyn Database>, phase: Phase) -> Self {
        Db { conn: Conn::Open(db), read_only: false, label: "ctx.db", phase }
    }
    pub fn read_only(db: Rc<dyn Database>, label: &'static str, phase: Phase) -> Self {
        Db { conn: Conn::Open(db), read_only: true, label, phase }
    }
    pub fn lazy_read_only(db: Rc<LazyDb>, label: &'static str, phase: Phase) -> Self {
        Db { conn: Conn::Lazy(db), read_only: true, label, phase }
    }

    /// The database behind the handle (opened now if lazy), while its phase lasts.
    pub fn database(&self) -> mlua::Result<Rc<dyn Database>> {
        self.phase.check(self.label)?;
        match &self.conn {
            Conn::Open(c) => Ok(c.clone()),
            Conn::Lazy(lazy) => lazy.get().map_err(|e| mlua::Error::runtime(format!("{}: {e}", self.label))),
        }
    }

    fn error(&self, e: DbError, sql: &str) -> mlua::Error {
        match e {
            DbError::ReadOnly => mlua::Error::runtime(format!("{} is read-only: {}", self.label, short(sql))),
            DbError::Sql(m) => mlua::Error::runtime(format!("{}: {m} (in: {})", self.label, short(sql))),
        }
    }

    /// Run `sql` and hand each row (as SQL values) to `f`; stop when it returns false.
    fn query(&self, sql: &str, args: MultiValue, mut f: impl FnMut(&[String], Vec<Sql>) -> bool) -> mlua::Result<()> {
        let db = self.database()?;
        let params = to_params(args)?;
        db.query(sql, &params, self.read_only, &mut f).map_err(|e| self.error(e, sql))
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
                Value::Boolean(b) => Sql::Bool(b),
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
        Sql::Bool(b) => Value::Boolean(b),
    })
}

impl UserData for Db {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("exec", |_, this, (sql, args): (String, MultiValue)| {
            let db = this.database()?;
            let params = to_params(args)?;
            db.execute(&sql, &params, this.read_only).map_err(|e| this.error(e, &sql))
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
        // `db:diff(other[, ignore])`: how this database differs from `other`
        // (one entry per table that differs; empty when they hold the same
        // rows). `ignore` lists "table" or "table.column" to leave out.
        m.add_method("diff", |lua, this, (other, ignore): (mlua::AnyUserData, Option<Vec<String>>)| {
            let other = other.borrow::<Db>()?;
            let (here, there) = (this.database()?, other.database()?);
            let ignore = crate::sandbox::diff::Ignore::parse(&ignore.unwrap_or_default());
            let d = crate::sandbox::diff::diff(&*here, &*there, &ignore)
                .map_err(|e| mlua::Error::runtime(format!("{}:diff: {e}", this.label)))?;
            let list = lua.create_table()?;
            for t in d {
                list.raw_push(lua.to_value(&t)?)?;
            }
            list.set_metatable(Some(lua.array_metatable()))?;
            Ok(list)
        });
        m.add_method("digest", |_, this, ()| {
            this.database()?.digest().map_err(|e| mlua::Error::runtime(format!("{}: {e}", this.label)))
        });
    }
}
