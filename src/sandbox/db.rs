//! The trial's database, whatever the backend: the embedded SQLite (a copy
//! of an in-memory image per trial) or a PostgreSQL server (a database per
//! trial, copied from a template database per fixture). The Lua handles
//! (`ctx.db`, `t.db`, `t.initial`) speak to a [`Database`] and never know
//! which one it is.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

pub use super::sql::{Database, DbError, OpenOptions, SqlValue};
use super::{pg, sqlite};
use crate::error::Result;
use crate::record::manifest::DbEntry;
use crate::spec::DbSpec;

/// A case's initial database, from which each trial gets its own copy.
#[derive(Clone)]
pub enum DbTemplate {
    Sqlite(sqlite::DbImage),
    Postgres(Arc<pg::Template>),
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
