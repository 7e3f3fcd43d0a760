//! What a trial changed in its database, kept small and exact (SPEC §10):
//! a SQLite session attached to the trial's connection before the agent acts
//! records every row it inserts, updates or deletes, in every table (tables
//! without a primary key by their rowid); the changeset it yields, applied to
//! the case's template image, gives the trial's final database back.
//!
//! A session cannot record schema changes: when the agent's tools ran DDL
//! (`PRAGMA schema_version` moved), the whole final image is kept instead.
//!
//! The C API is called through `rusqlite::ffi`: the bundled SQLite is built
//! with `SQLITE_ENABLE_SESSION` (see `.cargo/config.toml`), and rusqlite's own
//! `Session` cannot set `SQLITE_SESSION_OBJCONFIG_ROWID`.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::marker::PhantomData;
use std::ptr;

use rusqlite::{Connection, ffi};

/// How a trial's final database is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbChange {
    /// Nothing changed.
    Unchanged,
    /// A session changeset over the template image.
    Changeset(Vec<u8>),
    /// The whole final image (the schema changed).
    Image(Vec<u8>),
}

fn failure(code: c_int, what: &str) -> String {
    let msg = unsafe { CStr::from_ptr(ffi::sqlite3_errstr(code)) }.to_string_lossy();
    format!("{what}: {msg} (SQLite code {code})")
}

fn schema_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "schema_version", |r| r.get(0))
}

/// A copy of the main database's image (`Connection::serialize` needs `&mut`).
fn serialize(conn: &Connection) -> Result<Vec<u8>, String> {
    let mut size: ffi::sqlite3_int64 = 0;
    // SAFETY: the connection is live; with flags 0 SQLite returns a fresh
    // buffer of `size` bytes that we free.
    let p = unsafe { ffi::sqlite3_serialize(conn.handle(), c"main".as_ptr(), &mut size, 0) };
    if p.is_null() {
        return Err("cannot serialise the final database".into());
    }
    // SAFETY: `p` points at `size` initialised bytes until freed below.
    let bytes = unsafe { std::slice::from_raw_parts(p, size as usize) }.to_vec();
    unsafe { ffi::sqlite3_free(p.cast::<c_void>()) };
    Ok(bytes)
}

/// A session recording every change to the main database of `conn`.
pub struct Recorder<'c> {
    session: *mut ffi::sqlite3_session,
    conn: &'c Connection,
    schema: i64,
    _not_send: PhantomData<*mut ()>,
}

impl<'c> Recorder<'c> {
    /// Start recording: every table, present and future, tables without a
    /// primary key by rowid.
    pub fn start(conn: &'c Connection) -> Result<Self, String> {
        let schema = schema_version(conn).map_err(|e| format!("cannot read the schema version: {e}"))?;
        let mut session = ptr::null_mut();
        // SAFETY: the handle is the live connection `conn`, which outlives the
        // session (the borrow 'c); "main" is NUL-terminated.
        let rc = unsafe { ffi::sqlite3session_create(conn.handle(), c"main".as_ptr(), &mut session) };
        if rc != ffi::SQLITE_OK {
            return Err(failure(rc, "cannot start a SQLite session"));
        }
        let rec = Recorder { session, conn, schema, _not_send: PhantomData };
        let mut on: c_int = 1;
        // SAFETY: `session` is a live session; the option takes a pointer to an int.
        let rc = unsafe {
            ffi::sqlite3session_object_config(
                session,
                ffi::SQLITE_SESSION_OBJCONFIG_ROWID,
                (&mut on as *mut c_int).cast::<c_void>(),
            )
        };
        if rc != ffi::SQLITE_OK {
            return Err(failure(rc, "cannot record tables without a primary key"));
        }
        // SAFETY: a null table name attaches every table.
        let rc = unsafe { ffi::sqlite3session_attach(session, ptr::null()) };
        if rc != ffi::SQLITE_OK {
            return Err(failure(rc, "cannot attach the SQLite session"));
        }
        Ok(rec)
    }

    /// Stop recording and return what changed.
    pub fn finish(self) -> Result<DbChange, String> {
        let now = schema_version(self.conn).map_err(|e| format!("cannot read the schema version: {e}"))?;
        if now != self.schema {
            return serialize(self.conn).map(DbChange::Image);
        }
        // SAFETY: `session` is live until `self` drops.
        if unsafe { ffi::sqlite3session_isempty(self.session) } != 0 {
            return Ok(DbChange::Unchanged);
        }
        let mut n: c_int = 0;
        let mut p: *mut c_void = ptr::null_mut();
        // SAFETY: on success SQLite hands over a buffer of `n` bytes that we free.
        let rc = unsafe { ffi::sqlite3session_changeset(self.session, &mut n, &mut p) };
        if rc != ffi::SQLITE_OK {
            return Err(failure(rc, "cannot take the changeset"));
        }
        let bytes = if p.is_null() || n <= 0 {
            Vec::new()
        } else {
            // SAFETY: `p` points at `n` initialised bytes owned by SQLite until freed below.
            unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n as usize) }.to_vec()
        };
        // SAFETY: allocated by SQLite for us.
        unsafe { ffi::sqlite3_free(p) };
        // An UPDATE that wrote the same values leaves an empty changeset.
        Ok(if bytes.is_empty() { DbChange::Unchanged } else { DbChange::Changeset(bytes) })
    }
}

impl Drop for Recorder<'_> {
    fn drop(&mut self) {
        // SAFETY: created by sqlite3session_create, deleted once, before the connection closes.
        unsafe { ffi::sqlite3session_delete(self.session) };
    }
}

/// The first conflict met while applying, for the error message.
struct Applying {
    conflict: Option<String>,
}

unsafe extern "C" fn on_conflict(ctx: *mut c_void, kind: c_int, it: *mut ffi::sqlite3_changeset_iter) -> c_int {
    // SAFETY: `ctx` is the `Applying` passed to sqlite3changeset_apply below,
    // alive for the call; `it` is SQLite's iterator positioned on the change.
    let state = unsafe { &mut *ctx.cast::<Applying>() };
    if state.conflict.is_none() {
        let mut table: *const c_char = ptr::null();
        let (mut ncol, mut op, mut indirect): (c_int, c_int, c_int) = (0, 0, 0);
        let rc = unsafe { ffi::sqlite3changeset_op(it, &mut table, &mut ncol, &mut op, &mut indirect) };
        let table = if rc == ffi::SQLITE_OK && !table.is_null() {
            unsafe { CStr::from_ptr(table) }.to_string_lossy().into_owned()
        } else {
            "?".into()
        };
        let op = match op {
            ffi::SQLITE_INSERT => "an insert",
            ffi::SQLITE_UPDATE => "an update",
            ffi::SQLITE_DELETE => "a delete",
            _ => "a change",
        };
        let why = match kind {
            ffi::SQLITE_CHANGESET_DATA => "the row's values before the change differ",
            ffi::SQLITE_CHANGESET_NOTFOUND => "the row is not there",
            ffi::SQLITE_CHANGESET_CONFLICT => "a row with that key is already there",
            ffi::SQLITE_CHANGESET_CONSTRAINT => "a constraint fails",
            ffi::SQLITE_CHANGESET_FOREIGN_KEY => "a foreign key fails",
            _ => "a conflict",
        };
        state.conflict = Some(format!("{op} in table {table} does not apply: {why}"));
    }
    ffi::SQLITE_CHANGESET_ABORT
}

/// Apply a changeset to `conn` (a fresh copy of the template image). Any
/// conflict aborts: a changeset that does not apply cleanly was not taken
/// from this template, and a half-applied state would be graded wrongly.
pub fn apply(conn: &Connection, changeset: &[u8]) -> Result<(), String> {
    if changeset.len() > c_int::MAX as usize {
        return Err("the changeset is too large".into());
    }
    let mut state = Applying { conflict: None };
    // SAFETY: the connection is live; the buffer is read only during the call
    // (SQLite takes a non-const pointer but does not write through it); the
    // conflict context outlives the call.
    let rc = unsafe {
        ffi::sqlite3changeset_apply(
            conn.handle(),
            changeset.len() as c_int,
            changeset.as_ptr().cast_mut().cast::<c_void>(),
            None,
            Some(on_conflict),
            (&mut state as *mut Applying).cast::<c_void>(),
        )
    };
    if let Some(c) = state.conflict {
        return Err(c);
    }
    if rc != ffi::SQLITE_OK {
        return Err(failure(rc, "not a valid changeset"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::open_copy;
    use rusqlite::MAIN_DB;

    fn template() -> Vec<u8> {
        let mut c = Connection::open_in_memory().unwrap();
        c.execute_batch(
            "CREATE TABLE items (id INTEGER PRIMARY KEY, sku TEXT UNIQUE, qty INTEGER);
             CREATE TABLE log (what TEXT, n INTEGER);
             CREATE TABLE seq (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT);
             INSERT INTO items VALUES (1, 'a', 5), (2, 'b', 7);
             INSERT INTO log VALUES ('start', 0), ('again', 1);",
        )
        .unwrap();
        c.serialize(MAIN_DB).unwrap().to_vec()
    }

    fn dump(c: &Connection) -> Vec<String> {
        let mut out = Vec::new();
        for t in ["items", "log", "seq", "sqlite_sequence"] {
            let mut s = c.prepare(&format!("SELECT * FROM {t} ORDER BY rowid")).unwrap();
            let n = s.column_count();
            let rows = s
                .query_map([], |r| {
                    Ok((0..n).map(|i| format!("{:?}", r.get_ref(i).unwrap())).collect::<Vec<_>>().join(","))
                })
                .unwrap();
            for r in rows {
                out.push(format!("{t}: {}", r.unwrap()));
            }
        }
        out
    }

    #[test]
    fn a_changeset_rebuilds_the_final_state_including_tables_without_a_key() {
        let image = template();
        let live = open_copy(&image, false).unwrap();
        let rec = Recorder::start(&live).unwrap();
        live.execute_batch(
            "UPDATE items SET qty = qty - 1 WHERE sku = 'a';
             DELETE FROM items WHERE sku = 'b';
             INSERT INTO items VALUES (3, 'c', 1);
             UPDATE log SET n = 42 WHERE what = 'again';
             DELETE FROM log WHERE what = 'start';
             INSERT INTO log VALUES ('added', 9);
             INSERT INTO seq(v) VALUES ('x'), ('y');",
        )
        .unwrap();
        let DbChange::Changeset(cs) = rec.finish().unwrap() else { panic!("expected a changeset") };
        let rebuilt = open_copy(&image, false).unwrap();
        assert_ne!(dump(&rebuilt), dump(&live));
        apply(&rebuilt, &cs).unwrap();
        assert_eq!(dump(&rebuilt), dump(&live));
    }

    #[test]
    fn no_change_and_schema_change() {
        let image = template();
        let live = open_copy(&image, false).unwrap();
        let rec = Recorder::start(&live).unwrap();
        live.execute("UPDATE items SET qty = qty WHERE sku = 'a'", []).unwrap();
        assert_eq!(rec.finish().unwrap(), DbChange::Unchanged);

        let rec = Recorder::start(&live).unwrap();
        live.execute_batch("CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('n');").unwrap();
        let DbChange::Image(img) = rec.finish().unwrap() else { panic!("expected an image") };
        let back = open_copy(&img, true).unwrap();
        let n: String = back.query_row("SELECT t FROM notes", [], |r| r.get(0)).unwrap();
        assert_eq!(n, "n");
    }

    #[test]
    fn a_changeset_that_does_not_fit_or_is_garbage_is_refused() {
        let image = template();
        let live = open_copy(&image, false).unwrap();
        let rec = Recorder::start(&live).unwrap();
        live.execute("UPDATE items SET qty = 0 WHERE sku = 'a'", []).unwrap();
        let DbChange::Changeset(cs) = rec.finish().unwrap() else { panic!() };
        // Another template: the row's old values differ.
        let other = open_copy(&image, false).unwrap();
        other.execute("UPDATE items SET qty = 99 WHERE sku = 'a'", []).unwrap();
        let err = apply(&other, &cs).unwrap_err();
        assert!(err.contains("an update in table items does not apply"), "{err}");
        let q: i64 = other.query_row("SELECT qty FROM items WHERE sku = 'a'", [], |r| r.get(0)).unwrap();
        assert_eq!(q, 99, "an aborted apply changes nothing");

        let fresh = open_copy(&image, false).unwrap();
        let mut bad = cs.clone();
        bad.truncate(bad.len() / 2);
        assert!(apply(&fresh, &bad).is_err());
        assert!(apply(&fresh, b"\x00garbage\xff\xff\xff").is_err());
    }
}
