//! A connection to one of the run's databases, as a [`Database`]: statements
//! prepared once per connection, read-only ones in a transaction rolled
//! back after, rows decoded by type (`wire`), the digest of the state.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{Client, Statement};

use super::placeholders::placeholders;
use super::server::{Server, db_message};
use super::wire::{Out, Param};
use crate::sandbox::sql::{Database, DbError, SqlValue};

/// A connection to one of the run's databases, as a [`Database`].
pub struct PgDb {
    server: Arc<Server>,
    name: String,
    /// The trial's own role (a trial's copy), dropped after its database.
    role: Option<String>,
    client: RefCell<Option<Client>>,
    statements: RefCell<HashMap<String, Statement>>,
    /// Dropped on close (a trial's copy), or only disconnected (t.initial's).
    owned: bool,
    sealed: Cell<bool>,
}

impl PgDb {
    pub(super) fn new(
        server: Arc<Server>,
        name: String,
        role: Option<String>,
        client: Client,
        owned: bool,
        sealed: bool,
    ) -> Self {
        PgDb {
            server,
            name,
            role,
            client: RefCell::new(Some(client)),
            statements: RefCell::new(HashMap::new()),
            owned,
            sealed: Cell::new(sealed),
        }
    }

    /// The database's name on the server.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Prepare (once per connection) and run the statement, inside a
    /// read-only transaction when asked: its rows, or the count it changed.
    fn run(&self, sql: &str, params: &[SqlValue], read_only: bool, rows: bool) -> std::result::Result<Ran, DbError> {
        let mut slot = self.client.borrow_mut();
        let client = slot.as_mut().ok_or_else(|| DbError::Sql("the trial's database is closed".into()))?;
        let sql = placeholders(sql);
        let cached = self.statements.borrow().get(sql.as_ref()).cloned();
        let stmt = match cached {
            Some(s) => s,
            None => {
                let s = client.prepare(&sql).map_err(|e| pg_err(&e))?;
                self.statements.borrow_mut().insert(sql.to_string(), s.clone());
                s
            }
        };
        if stmt.params().len() != params.len() {
            return Err(DbError::Sql(format!(
                "the statement takes {} parameter(s), {} given",
                stmt.params().len(),
                params.len()
            )));
        }
        let wrapped: Vec<Param<'_>> = params.iter().map(Param).collect();
        let refs: Vec<&(dyn ToSql + Sync)> = wrapped.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        let ran = if read_only || self.sealed.get() {
            // Its own transaction, rolled back: a statement that writes fails
            // there, and nothing it does (SET, a COMMIT) outlives it.
            let mut tx = client.build_transaction().read_only(true).start().map_err(|e| pg_err(&e))?;
            let r = if rows { tx.query(&stmt, &refs).map(Ran::Rows) } else { tx.execute(&stmt, &refs).map(Ran::Count) };
            drop(tx);
            r
        } else if rows {
            client.query(&stmt, &refs).map(Ran::Rows)
        } else {
            client.execute(&stmt, &refs).map(Ran::Count)
        };
        let ran = ran.map_err(|e| pg_err(&e))?;
        Ok(match ran {
            Ran::Rows(r) => Ran::Named(stmt.columns().iter().map(|c| c.name().to_string()).collect(), r),
            other => other,
        })
    }
}

enum Ran {
    Rows(Vec<postgres::Row>),
    Named(Vec<String>, Vec<postgres::Row>),
    Count(u64),
}

fn pg_err(e: &postgres::Error) -> DbError {
    if e.code() == Some(&SqlState::READ_ONLY_SQL_TRANSACTION) { DbError::ReadOnly } else { DbError::Sql(db_message(e)) }
}

impl Database for PgDb {
    fn query(
        &self,
        sql: &str,
        params: &[SqlValue],
        read_only: bool,
        each: &mut dyn FnMut(&[String], Vec<SqlValue>) -> bool,
    ) -> std::result::Result<(), DbError> {
        let Ran::Named(names, rows) = self.run(sql, params, read_only, true)? else {
            return Ok(());
        };
        for row in rows {
            let mut vals = Vec::with_capacity(names.len());
            for (i, name) in names.iter().enumerate() {
                match row.try_get::<_, Out>(i) {
                    Ok(v) => vals.push(v.0),
                    Err(e) => {
                        let why = std::error::Error::source(&e).map(|s| s.to_string()).unwrap_or(e.to_string());
                        return Err(DbError::Sql(format!("column \"{name}\": {why}")));
                    }
                }
            }
            if !each(&names, vals) {
                break;
            }
        }
        Ok(())
    }

    fn prepare(&self, sql: &str) -> std::result::Result<(), DbError> {
        let mut slot = self.client.borrow_mut();
        let client = slot.as_mut().ok_or_else(|| DbError::Sql("the database is closed".into()))?;
        client.prepare(&placeholders(sql)).map(drop).map_err(|e| pg_err(&e))
    }

    fn execute(&self, sql: &str, params: &[SqlValue], read_only: bool) -> std::result::Result<usize, DbError> {
        match self.run(sql, params, read_only, false)? {
            Ran::Count(n) => Ok(n as usize),
            _ => Ok(0),
        }
    }

    fn digest(&self) -> std::result::Result<String, DbError> {
        use sha2::{Digest, Sha256};
        let mut tables = Vec::new();
        self.query(
            "SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relkind = 'r' AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%' ORDER BY 1",
            &[],
            true,
            &mut |_, mut row| {
                if let Some(SqlValue::Text(t)) = row.pop() {
                    tables.push(t);
                }
                true
            },
        )?;
        let mut h = Sha256::new();
        for t in tables {
            h.update(t.as_bytes());
            h.update([0]);
            let mut lines: Vec<Vec<u8>> = Vec::new();
            self.query(&format!("SELECT * FROM {t}"), &[], true, &mut |_, row| {
                let mut line = Vec::new();
                for v in row {
                    match v {
                        SqlValue::Null => line.push(b'N'),
                        SqlValue::Integer(i) => line.extend_from_slice(format!("I{i}").as_bytes()),
                        SqlValue::Real(f) => line.extend_from_slice(format!("R{f:?}").as_bytes()),
                        SqlValue::Text(s) => {
                            line.push(b'T');
                            line.extend_from_slice(s.as_bytes());
                        }
                        SqlValue::Blob(b) => {
                            line.push(b'B');
                            line.extend_from_slice(&b);
                        }
                        SqlValue::Bool(b) => line.extend_from_slice(if b { b"b1" } else { b"b0" }),
                    }
                    line.push(0x1f);
                }
                lines.push(line);
                true
            })?;
            lines.sort();
            for l in lines {
                h.update(&l);
                h.update([0x1e]);
            }
        }
        Ok(crate::util::digest::hex(&h.finalize()))
    }

    fn seal(&self) {
        self.sealed.set(true);
    }

    fn close(&self) {
        let client = self.client.borrow_mut().take();
        if client.is_none() {
            return;
        }
        drop(client);
        self.statements.borrow_mut().clear();
        if self.owned && !self.server.closed.load(Ordering::SeqCst) {
            self.server.drop_database(&self.name);
            if let Some(role) = &self.role {
                self.server.drop_role(role);
            }
        }
    }
}

impl Drop for PgDb {
    fn drop(&mut self) {
        self.close();
    }
}
