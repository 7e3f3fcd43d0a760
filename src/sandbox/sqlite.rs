//! The SQLite sandbox. The suite schema plus a case's fixture are executed once into an in-memory
//! SQLite database whose image becomes the case's template; each trial
//! deserialises its own copy of that image (a memcpy, not a re-run of the SQL).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, MAIN_DB, params_from_iter};

use super::sql::{Database, DbError, SqlValue};
use crate::error::{Error, Result};
use crate::util::paths::display_path;

/// The serialised image of a case's initial database.
pub type DbImage = Arc<Vec<u8>>;

/// How many SQLite VM steps run between two looks at the deadline.
const PROGRESS_EVERY: i32 = 1000;
/// How long the schema and fixture files of one case may take to run.
const FIXTURE_SECONDS: u64 = 60;

/// What no SQL evalua runs may do: reach a file (`ATTACH`, hence `VACUUM
/// INTO`, which attaches its target), `DETACH`, load an extension, or turn
/// `query_only` off again.
fn authorize(ctx: AuthContext<'_>) -> Authorization {
    match ctx.action {
        AuthAction::Attach { .. } | AuthAction::Detach { .. } => Authorization::Deny,
        AuthAction::Function { function_name } if function_name.eq_ignore_ascii_case("load_extension") => {
            Authorization::Deny
        }
        AuthAction::Pragma { pragma_name, pragma_value: Some(v) } if pragma_name.eq_ignore_ascii_case("query_only") => {
            let v = v.trim_matches(|c| c == '\'' || c == '"').to_ascii_lowercase();
            if matches!(v.as_str(), "0" | "false" | "off" | "no") { Authorization::Deny } else { Authorization::Allow }
        }
        _ => Authorization::Allow,
    }
}

/// Guard a connection: the authorizer above everywhere, and a progress
/// handler that interrupts a query once the running code's deadline (a
/// check's, a handler's, the trial's; see `util::watch`) has passed.
pub fn guard(conn: &mut Connection) -> rusqlite::Result<()> {
    conn.authorizer(Some(authorize))?;
    conn.progress_handler(PROGRESS_EVERY, Some(crate::util::watch::overdue))
}

/// A fresh, empty, guarded in-memory database.
pub fn open_empty() -> rusqlite::Result<Connection> {
    let mut conn = Connection::open_in_memory()?;
    guard(&mut conn)?;
    Ok(conn)
}

/// Open a private, guarded in-memory copy of `image`.
pub fn open_copy(image: &[u8], read_only: bool) -> rusqlite::Result<Connection> {
    let mut conn = Connection::open_in_memory()?;
    conn.deserialize_read_exact(MAIN_DB, image, image.len(), read_only)?;
    if read_only {
        conn.pragma_update(None, "query_only", true)?;
    }
    guard(&mut conn)?;
    Ok(conn)
}

/// Why the authorizer refused a statement, for messages.
pub const DENIED: &str = "evalua's databases refuse ATTACH, DETACH, VACUUM INTO, load_extension() and turning query_only off (a final state is read-only)";

/// Whether `e` is a statement the authorizer refused.
pub fn denied(e: &rusqlite::Error) -> bool {
    // A statement refused while it is prepared fails with SQLITE_ERROR and
    // SQLite's "not authorized"; one refused while it runs, with SQLITE_AUTH.
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::AuthorizationForStatementDenied)
        || sql_error_message(e) == "not authorized"
}

/// Whether `e` is a query stopped by the progress handler.
pub fn interrupted(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted)
}

/// Run the SQL files in order into a fresh database and return its image.
/// Each file is streamed one complete statement at a time (memory follows
/// the longest statement, not the file), and a file larger than `max_bytes`
/// is refused before it is read. A failing statement is reported as
/// `file:line: message`; all files together may run for `FIXTURE_SECONDS`.
pub fn build_template(files: &[&Path], max_bytes: u64) -> Result<DbImage> {
    let mut conn = open_empty().map_err(|e| Error::Environment(format!("sqlite: {e}")))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(FIXTURE_SECONDS);
    for file in files {
        crate::util::watch::with_deadline(deadline, || run_sql_file(&conn, file, max_bytes))?;
    }
    let data = conn.serialize(MAIN_DB).map_err(|e| Error::Environment(format!("sqlite: {e}")))?;
    Ok(Arc::new(data.to_vec()))
}

/// Whether `sql` holds one or more complete statements (SQLite's own tokenizer).
fn complete(sql: &str) -> bool {
    std::ffi::CString::new(sql)
        // SAFETY: sqlite3_complete only reads the NUL-terminated string, which `c` owns.
        .map(|c| unsafe { rusqlite::ffi::sqlite3_complete(c.as_ptr()) } != 0)
        .unwrap_or(false)
}

/// Execute one SQL text file into `conn`, statement by statement.
fn run_sql_file(conn: &Connection, file: &Path, max_bytes: u64) -> Result<()> {
    let shown = display_path(file);
    let cannot = |e: std::io::Error| Error::Input(format!("{shown}: cannot read fixture: {e}"));
    let f = File::open(file).map_err(cannot)?;
    let size = f.metadata().map_err(cannot)?.len();
    if size > max_bytes {
        return Err(Error::Input(format!(
            "{shown}: the fixture is {:.1} MiB, over the limit of {:.1} MiB (raise sandbox.max_fixture_mb in the suite or EVALUA_MAX_FIXTURE_MB)",
            size as f64 / 1048576.0,
            max_bytes as f64 / 1048576.0
        )));
    }
    // Never read past the limit, even if the file grows while it is read; read
    // at most a MiB at a time, so even a file without newlines streams.
    let mut reader = BufReader::new(f.take(max_bytes.saturating_add(1)));
    let mut stmt: Vec<u8> = Vec::new();
    let mut start_line = 1usize;
    let mut line = 1usize;
    let mut chunk = Vec::new();
    let mut read = 0u64;
    let text_of = |bytes: &[u8], at: usize| {
        std::str::from_utf8(bytes)
            .map(str::to_string)
            .map_err(|_| Error::Input(format!("{shown}:{at}: not UTF-8 text: a fixture is a SQL text file")))
    };
    loop {
        chunk.clear();
        let got = reader.by_ref().take(1 << 20).read_until(b'\n', &mut chunk).map_err(cannot)?;
        if got == 0 {
            break;
        }
        read += got as u64;
        if read > max_bytes {
            return Err(Error::Input(format!(
                "{shown}: the fixture grew past the limit of {max_bytes} bytes while it was read"
            )));
        }
        if chunk.contains(&0) {
            return Err(Error::Input(format!("{shown}:{line}: a NUL byte: a fixture is a SQL text file")));
        }
        if stmt.iter().all(u8::is_ascii_whitespace) {
            stmt.clear();
            start_line = line;
        }
        stmt.extend_from_slice(&chunk);
        let ends_line = chunk.last() == Some(&b'\n');
        // A statement can only end at a semicolon.
        if chunk.contains(&b';') {
            let text = text_of(&stmt, start_line)?;
            if complete(&text) {
                conn.execute_batch(&text).map_err(|e| statement_error(&shown, start_line, &e))?;
                stmt.clear();
            }
        }
        if ends_line {
            line += 1;
        }
    }
    if !stmt.iter().all(u8::is_ascii_whitespace) {
        // The last statement may lack its semicolon; SQLite accepts that.
        let text = text_of(&stmt, start_line)?;
        conn.execute_batch(&text).map_err(|e| statement_error(&shown, start_line, &e))?;
    }
    Ok(())
}

/// A failing fixture statement as `file:line: message`; one stopped by the
/// progress handler says the time limit.
fn statement_error(shown: &str, line: usize, e: &rusqlite::Error) -> Error {
    if interrupted(e) {
        return Error::Input(format!(
            "{shown}:{line}: the schema and fixture files took more than {FIXTURE_SECONDS} s to run"
        ));
    }
    Error::Input(format!("{shown}:{line}: {}", sql_error_message(e)))
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
    /// The image it is a copy of: its digest reuses the image's tables (`super::digest`).
    origin: Option<DbImage>,
}

impl SqliteDb {
    /// A private copy of `image`.
    pub fn copy(image: &DbImage, read_only: bool) -> rusqlite::Result<SqliteDb> {
        Ok(SqliteDb { conn: open_copy(image, read_only)?, origin: Some(image.clone()) })
    }

    /// An existing connection (a re-graded trial's rebuilt final state).
    pub fn wrap(conn: Connection) -> SqliteDb {
        SqliteDb { conn, origin: None }
    }

    /// An empty database.
    pub fn empty(read_only: bool) -> rusqlite::Result<SqliteDb> {
        let conn = open_empty()?;
        if read_only {
            conn.pragma_update(None, "query_only", true)?;
        }
        Ok(SqliteDb { conn, origin: None })
    }

    fn statement(&self, sql: &str, read_only: bool) -> std::result::Result<rusqlite::CachedStatement<'_>, DbError> {
        let stmt = self.conn.prepare_cached(sql).map_err(sql_err)?;
        if read_only && !stmt.readonly() {
            return Err(DbError::ReadOnly);
        }
        Ok(stmt)
    }
}

fn sql_err(e: rusqlite::Error) -> DbError {
    if interrupted(&e) {
        return DbError::Sql("time limit exceeded: the query was interrupted".into());
    }
    if denied(&e) {
        return DbError::Sql(format!("not allowed: {DENIED}"));
    }
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
        let mut stmt = self.statement(sql, read_only)?;
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

    fn prepare(&self, sql: &str) -> std::result::Result<(), DbError> {
        self.conn.prepare(sql).map(drop).map_err(|e| DbError::Sql(sql_error_message(&e)))
    }

    fn execute(&self, sql: &str, params: &[SqlValue], read_only: bool) -> std::result::Result<usize, DbError> {
        let mut stmt = self.statement(sql, read_only)?;
        stmt.execute(params_from_iter(params.iter())).map_err(sql_err)
    }

    fn digest(&self) -> std::result::Result<String, DbError> {
        super::digest::digest(&self.conn, self.origin.as_ref()).map_err(sql_err)
    }

    fn seal(&self) {
        let _ = self.conn.pragma_update(None, "query_only", true);
    }

    fn close(&self) {}

    fn sqlite(&self) -> Option<&Connection> {
        Some(&self.conn)
    }
}
