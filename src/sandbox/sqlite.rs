//! The SQLite sandbox. The suite schema plus a case's fixture are executed once into an in-memory
//! SQLite database whose image becomes the case's template; each trial
//! deserialises its own copy of that image (a memcpy, not a re-run of the SQL).

use std::path::Path;
use std::sync::Arc;

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::{Connection, MAIN_DB};

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

/// Whether `e` is a query stopped by the progress handler.
pub fn interrupted(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted)
}

/// Run the SQL files in order into a fresh database and return its image.
/// A failing statement is reported as `file:line: message`.
pub fn build_template(files: &[&Path]) -> Result<DbImage> {
    let mut conn = open_empty().map_err(|e| Error::Environment(format!("sqlite: {e}")))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(FIXTURE_SECONDS);
    for (i, file) in files.iter().enumerate() {
        let sql = std::fs::read_to_string(file)
            .map_err(|e| Error::Input(format!("{}: cannot read fixture: {e}", display_path(file))))?;
        if let Err(e) = crate::util::watch::with_deadline(deadline, || conn.execute_batch(&sql)) {
            if interrupted(&e) {
                return Err(Error::Input(format!(
                    "{}: the schema and fixture files took more than {FIXTURE_SECONDS} s to run",
                    display_path(file)
                )));
            }
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
    let Ok(scratch) = open_empty() else {
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
