//! The trial's database, whatever the backend: the embedded SQLite (a copy
//! of an in-memory image per trial) or a PostgreSQL server (a database per
//! trial, copied from a template database per fixture). The Lua handles
//! (`ctx.db`, `t.db`, `t.initial`) speak to a [`Database`] and never know
//! which one it is.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use super::{pg, sqlite};
use crate::error::Result;
use crate::record::manifest::DbEntry;
use crate::spec::DbSpec;

/// A value going into or coming out of SQL.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
    /// PostgreSQL's boolean (SQLite has none: it stores 0 and 1).
    Bool(bool),
}

/// Why a statement did not run.
#[derive(Debug, Clone, PartialEq)]
pub enum DbError {
    /// A statement that writes, through a read-only handle.
    ReadOnly,
    /// The database's own message, on one line.
    Sql(String),
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbError::ReadOnly => f.write_str("the handle is read-only"),
            DbError::Sql(m) => f.write_str(m),
        }
    }
}

/// One database a trial uses. Statements use `?` placeholders (`$1` works on
/// PostgreSQL too), one statement per call.
pub trait Database {
    /// Run one statement and hand each row (column names, values) to `each`;
    /// stop when it returns false. `read_only` refuses a statement that writes.
    fn query(
        &self,
        sql: &str,
        params: &[SqlValue],
        read_only: bool,
        each: &mut dyn FnMut(&[String], Vec<SqlValue>) -> bool,
    ) -> std::result::Result<(), DbError>;

    /// Check that one statement prepares (its tables and columns exist)
    /// without running it; the database's message when it does not.
    fn prepare(&self, sql: &str) -> std::result::Result<(), DbError>;

    /// Run one statement; the number of rows it changed.
    fn execute(&self, sql: &str, params: &[SqlValue], read_only: bool) -> std::result::Result<usize, DbError>;

    /// A digest of every table's rows (as multisets), to compare two states of
    /// one backend.
    fn digest(&self) -> std::result::Result<String, DbError>;

    /// From now on no handle writes to this database (the agent is done; the
    /// checks read the final state).
    fn seal(&self);

    /// Release the database: a PostgreSQL copy is dropped now. Idempotent; a
    /// statement afterwards is an error.
    fn close(&self);

    /// The SQLite connection, for what only SQLite offers (sessions, hooks).
    fn sqlite(&self) -> Option<&rusqlite::Connection> {
        None
    }
}

/// A case's initial database, from which each trial gets its own copy.
#[derive(Clone)]
pub enum DbTemplate {
    Sqlite(sqlite::DbImage),
    Postgres(Arc<pg::Template>),
}

/// What a trial's copy is opened with.
#[derive(Debug, Clone, Copy)]
pub struct OpenOptions {
    /// No single statement runs longer (the trial's deadline): a query that
    /// hangs cannot hold a worker for ever.
    pub statement_timeout: Duration,
}

impl DbTemplate {
    /// The trial's own read-write copy.
    pub fn open_trial(&self, opts: OpenOptions) -> std::result::Result<Rc<dyn Database>, String> {
        match self {
            DbTemplate::Sqlite(image) => Ok(Rc::new(
                sqlite::SqliteDb::copy(image, false).map_err(|e| format!("cannot copy the fixture database: {e}"))?,
            )),
            DbTemplate::Postgres(t) => Ok(Rc::new(t.open_copy(opts)?)),
        }
    }

    /// A read-only view of the initial state (`t.initial`).
    pub fn open_initial(&self) -> std::result::Result<Rc<dyn Database>, String> {
        match self {
            DbTemplate::Sqlite(image) => Ok(Rc::new(sqlite::SqliteDb::copy(image, true).map_err(|e| e.to_string())?)),
            DbTemplate::Postgres(t) => Ok(Rc::new(t.open_initial()?)),
        }
    }

    /// The SQLite image, when the backend is SQLite.
    pub fn sqlite_image(&self) -> Option<&sqlite::DbImage> {
        match self {
            DbTemplate::Sqlite(i) => Some(i),
            DbTemplate::Postgres(_) => None,
        }
    }
}

/// An empty in-memory SQLite database: the trial's database when the suite
/// declares no schema and the case no fixture.
pub fn empty(read_only: bool) -> std::result::Result<Rc<dyn Database>, String> {
    Ok(Rc::new(sqlite::SqliteDb::empty(read_only).map_err(|e| e.to_string())?))
}

/// `t.initial`: opened when a check first asks for it, closed with the trial.
pub struct LazyDb {
    template: Option<DbTemplate>,
    open: RefCell<Option<Rc<dyn Database>>>,
}

impl LazyDb {
    pub fn new(template: Option<DbTemplate>) -> Self {
        LazyDb { template, open: RefCell::new(None) }
    }

    pub fn get(&self) -> std::result::Result<Rc<dyn Database>, String> {
        if let Some(db) = &*self.open.borrow() {
            return Ok(db.clone());
        }
        let db = match &self.template {
            Some(t) => t.open_initial()?,
            None => empty(true)?,
        };
        *self.open.borrow_mut() = Some(db.clone());
        Ok(db)
    }

    pub fn close(&self) {
        if let Some(db) = self.open.borrow_mut().take() {
            db.close();
        }
    }
}

/// The run's database backend: it builds the cases' templates, and for
/// PostgreSQL it owns the run's databases on the server, dropped when the
/// backend is (see `pg`).
pub enum Backend {
    Sqlite,
    Postgres(Arc<pg::Server>),
}

impl Backend {
    /// Connect to the backend the suite declares (PostgreSQL: the server in
    /// `url_env`, sweeping databases that dead runs left behind).
    pub fn connect(spec: &DbSpec) -> Result<Backend> {
        Ok(match spec {
            DbSpec::Sqlite => Backend::Sqlite,
            DbSpec::Postgres { url_env } => Backend::Postgres(pg::Server::connect(url_env)?),
        })
    }

    /// The template for these SQL files (the suite's schema, then the case's
    /// fixture). SQLite without files needs none; PostgreSQL always gets a
    /// database, empty if need be.
    /// A fixture larger than `max_bytes` is refused before it is read.
    pub fn template(&self, files: &[&Path], max_bytes: u64) -> Result<Option<DbTemplate>> {
        match self {
            Backend::Sqlite if files.is_empty() => Ok(None),
            Backend::Sqlite => Ok(Some(DbTemplate::Sqlite(sqlite::build_template(files, max_bytes)?))),
            Backend::Postgres(server) => Ok(Some(DbTemplate::Postgres(server.template(files, max_bytes)?))),
        }
    }

    /// What the manifest records about the backend (nothing for SQLite).
    pub fn manifest_entry(&self) -> Option<DbEntry> {
        match self {
            Backend::Sqlite => None,
            Backend::Postgres(s) => Some(DbEntry {
                kind: "postgres".into(),
                server_version: Some(s.server_version().to_string()),
                prefix: Some(s.prefix()),
            }),
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        if let Backend::Postgres(s) = self {
            s.shutdown();
        }
    }
}
