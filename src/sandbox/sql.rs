//! What every database backend speaks: the values going in and out of SQL,
//! the errors, the [`Database`] trait the Lua handles use, and the options a
//! trial's copy is opened with. `sqlite.rs` and `pg.rs` implement it; `db.rs`
//! picks one.

use std::time::Duration;

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

/// What a trial's copy is opened with.
#[derive(Debug, Clone, Copy)]
pub struct OpenOptions {
    /// No single statement runs longer (the trial's deadline): a query that
    /// hangs cannot hold a worker for ever.
    pub statement_timeout: Duration,
}
