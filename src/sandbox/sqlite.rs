//! The SQLite sandbox. The suite schema plus a case's fixture are executed once into an in-memory
//! SQLite database whose image becomes the case's template; each trial
//! deserialises its own copy of that image (a memcpy, not a re-run of the SQL).

use std::path::Path;
use std::sync::Arc;

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, MAIN_DB, params_from_iter};

use super::db::{Database, DbError, SqlValue};
use crate::error::{Error, Result};
use crate::util::paths::display_path;

/// The serialised image of a case's initial database.
pub type DbImage = Arc<Vec<u8>>;

/// Open a private in-memory copy of `image`.
pub fn open_copy(image: &[u8], read_only: bool) -> rusqlite::Result<Connection> {
    let mut conn = Connection::open_in_memory()?;
    conn.deserialize_read_exact(MAIN_DB, image, image.len(), read_only)?;
    if read_only {
        conn.pragma_update(None, "query_only", true)?;
    }
    Ok(conn)
}

/// Run the SQL files in order into a fresh database and return its image.
/// A failing statement is reported as `file:line: message`.
pub fn build_template(files: &[&Path]) -> Result<DbImage> {
    let mut conn = Connection::open_in_memory().map_err(|e| Error::Environment(format!("sqlite: {e}")))?;
    for (i, file) in files.iter().enumerate() {
        let sql = std::fs::read_to_string(file)
            .map_err(|e| Error::Input(format!("{}: cannot read fixture: {e}", display_path(file))))?;
        if let Err(e) = conn.execute_batch(&sql) {
            return Err(Error::Input(locate_sql_error(&files[..i], file, &sql, &e)));
        }
    }
    let data = conn.serialize(MAIN_DB).map_err(|e| Error::Environment(format!("sqlite: {e}")))?;
    Ok(Arc::new(data.to_vec()))
}

/// Find the line of the statement that fails, by replaying the earlier files
/// and then this one, one complete statement at a time, in a scratch database.
fn locate_sql_error(before: &[&Path], file: &Path, sql: &str, first: &rusqlite::Error) -> String {
    let msg = sql_error_message(first);
    let Ok(scratch) = Connection::open_in_memory() else {
        return format!("{}: {msg}", display_path(file));
    };
    for f in before {
        if let Ok(s) = std::fs::read_to_string(f) {
            let _ = scratch.execute_batch(&s);
        }
    }
    let mut stmt = String::new();
    let mut start_line = 0usize;
    for (i, line) in sql.lines().enumerate() {
        if stmt.trim().is_empty() {
            start_line = i + 1;
        }
        stmt.push_str(line);
        stmt.push('\n');
        let complete = std::ffi::CString::new(stmt.as_str())
            // SAFETY: sqlite3_complete only reads the NUL-terminated string, which `c` owns.
            .map(|c| unsafe { rusqlite::ffi::sqlite3_complete(c.as_ptr()) } != 0)
            .unwrap_or(false);
        if complete {
            if let Err(e) = scratch.execute_batch(&stmt) {
                return format!("{}:{start_line}: {}", display_path(file), sql_error_message(&e));
            }
            stmt.clear();
        }
    }
    format!("{}: {msg}", display_path(file))
}

/// SQLite's own message, on one line (rusqlite appends the statement).
pub fn sql_error_message(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        other => other.to_string().lines().next().unwrap_or("").to_string(),
    }
}

/// A trial's SQLite database (its own in-memory copy), as a [`Database`].
/// A read-only handle is refused a statement that is not read-only before it
/// runs, and a read-only or sealed connection is also `query_only`.
pub struct SqliteDb {
    conn: Connection,
}

impl SqliteDb {
    /// A private copy of `image`.
    pub fn copy(image: &[u8], read_only: bool) -> rusqlite::Result<SqliteDb> {
        Ok(SqliteDb { conn: open_copy(image, read_only)? })
    }

    /// An empty database.
    pub fn empty(read_only: bool) -> rusqlite::Result<SqliteDb> {
        let conn = Connection::open_in_memory()?;
        if read_only {
            conn.pragma_update(None, "query_only", true)?;
        }
        Ok(SqliteDb { conn })
    }

    fn prepare(&self, sql: &str, read_only: bool) -> std::result::Result<rusqlite::CachedStatement<'_>, DbError> {
        let stmt = self.conn.prepare_cached(sql).map_err(sql_err)?;
        if read_only && !stmt.readonly() {
            return Err(DbError::ReadOnly);
        }
        Ok(stmt)
    }
}

fn sql_err(e: rusqlite::Error) -> DbError {
    DbError::Sql(e.to_string())
}

impl rusqlite::ToSql for SqlValue {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            SqlValue::Null => ValueRef::Null,
            SqlValue::Integer(i) => ValueRef::Integer(*i),
            SqlValue::Real(f) => ValueRef::Real(*f),
            SqlValue::Text(s) => ValueRef::Text(s.as_bytes()),
            SqlValue::Blob(b) => ValueRef::Blob(b),
            SqlValue::Bool(b) => ValueRef::Integer(*b as i64),
        }))
    }
}

fn value_of(v: ValueRef<'_>) -> SqlValue {
    match v {
        ValueRef::Null => SqlValue::Null,
        ValueRef::Integer(i) => SqlValue::Integer(i),
        ValueRef::Real(f) => SqlValue::Real(f),
        ValueRef::Text(t) => SqlValue::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => SqlValue::Blob(b.to_vec()),
    }
}

impl Database for SqliteDb {
    fn query(
        &self,
        sql: &str,
        params: &[SqlValue],
        read_only: bool,
        each: &mut dyn FnMut(&[String], Vec<SqlValue>) -> bool,
    ) -> std::result::Result<(), DbError> {
        let mut stmt = self.prepare(sql, read_only)?;
        let names: Vec<String> = stmt.column_names().map(String::from).collect();
        let mut rows = stmt.query(params_from_iter(params.iter())).map_err(sql_err)?;
        while let Some(row) = rows.next().map_err(sql_err)? {
            let mut vals = Vec::with_capacity(names.len());
            for i in 0..names.len() {
                vals.push(row.get_ref(i).map(value_of).unwrap_or(SqlValue::Null));
            }
            if !each(&names, vals) {
                break;
            }
        }
        Ok(())
    }

    fn execute(&self, sql: &str, params: &[SqlValue], read_only: bool) -> std::result::Result<usize, DbError> {
        let mut stmt = self.prepare(sql, read_only)?;
        stmt.execute(params_from_iter(params.iter())).map_err(sql_err)
    }

    fn digest(&self) -> std::result::Result<String, DbError> {
        digest(&self.conn).map_err(sql_err)
    }

    fn seal(&self) {
        let _ = self.conn.pragma_update(None, "query_only", true);
    }

    fn close(&self) {}

    fn sqlite(&self) -> Option<&Connection> {
        Some(&self.conn)
    }
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
