//! PostgreSQL sandboxes (`sandbox = { db = "postgres", url_env = "EVALUA_PG_URL" }`).
//!
//! Per run, per distinct (schema, fixture): a template database, loaded once
//! from the SQL files and then closed to connections. Per trial: a database
//! of its own, `CREATE DATABASE … TEMPLATE` that template, dropped when the
//! trial ends (after grading; also when the trial panics, by a guard). `t.initial`
//! reads one more copy per template, made the first time a check asks.
//!
//! Every database a run creates is named `evalua_<token>_…`, where the token
//! is the run's own (16 hex digits), and every connection the run opens
//! carries `application_name = evalua:<token>`. Nothing is left behind:
//! - the run drops all of its databases when it ends ([`Server::shutdown`]);
//! - a run that could not (killed, the machine died) leaves databases whose
//!   token no live session carries: the next run against the same server
//!   drops them when it starts ([`Server::connect`]). The check is by session,
//!   not by host, so runs on many machines sharing one server (a Slurm array)
//!   never drop each other's databases.
//!
//! Statements take `?` placeholders, as on SQLite (turned into `$1`, `$2`, …
//! outside quotes and comments), or PostgreSQL's own `$1`. Parameters are sent
//! as text and typed by the server; results are read by type (integers,
//! floats, numeric, text, booleans, bytea, json, uuid, dates and times;
//! anything else asks for a cast). A read-only handle runs each statement in
//! its own `READ ONLY` transaction, rolled back after.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::BytesMut;
use postgres::error::SqlState;
use postgres::types::{FromSql, IsNull, Kind, ToSql, Type, to_sql_checked};
use postgres::{Client, Config, NoTls, Statement};

use super::sql::{Database, DbError, OpenOptions, SqlValue};
use crate::error::{Error, Result};
use crate::util::paths::display_path;

type BoxError = Box<dyn std::error::Error + Sync + Send>;

/// The oldest server evalua uses: `DROP DATABASE … WITH (FORCE)` is 13's.
const MIN_SERVER_VERSION: i32 = 130000;

/// Every live server connection of this process, for [`shutdown_all`].
static LIVE: Mutex<Vec<Weak<Server>>> = Mutex::new(Vec::new());

/// Drop every database of every run of this process now (for a process that
/// is about to exit without unwinding, e.g. on a second Ctrl-C).
pub fn shutdown_all() {
    let live: Vec<Arc<Server>> =
        LIVE.lock().map(|l| l.iter().filter_map(|w| w.upgrade()).collect()).unwrap_or_default();
    for s in live {
        s.shutdown();
    }
}

/// A PostgreSQL server, as one run uses it.
pub struct Server {
    config: Config,
    /// `host:port/dbname` from the URL (never its password), for messages.
    display: String,
    url_env: String,
    token: String,
    version: String,
    /// Held for the whole run: its `application_name` says the run is alive.
    control: Mutex<Option<Client>>,
    /// Connections to the maintenance database (the URL's) for CREATE / DROP DATABASE.
    admin: Mutex<Vec<Client>>,
    next: AtomicU64,
    /// Set when the run's databases are being dropped: no new one is made.
    closed: AtomicBool,
    /// Held while they are dropped, and true once they are: a second
    /// shutdown (the second Ctrl-C's) waits for the first to finish.
    dropped: Mutex<bool>,
}

fn db_message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut m = db.message().to_string();
            if let Some(d) = db.detail() {
                m.push_str(&format!(" ({d})"));
            }
            if let Some(h) = db.hint() {
                m.push_str(&format!("; hint: {h}"));
            }
            m
        }
        None => e.to_string(),
    }
}

/// A database name as an SQL identifier. Our names are `[a-z0-9_]` only.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn random_token() -> String {
    format!("{:016x}", fastrand::u64(..))
}

/// The token in one of evalua's database names (`evalua_<16 hex>_…`).
fn token_of(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("evalua_")?;
    let (token, tail) = rest.split_at_checked(16)?;
    (token.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) && tail.starts_with('_')).then_some(token)
}

impl Server {
    /// Connect to the server in `$url_env`, and drop the databases that runs
    /// no longer alive left behind.
    pub fn connect(url_env: &str) -> Result<Arc<Server>> {
        let url = std::env::var(url_env).ok().filter(|u| !u.trim().is_empty()).ok_or_else(|| {
            Error::Input(format!(
                "sandbox.db = \"postgres\": the environment variable {url_env} is not set; \
                 it must hold the server's URL, e.g. postgres://user@127.0.0.1:5432/postgres"
            ))
        })?;
        let mut config: Config = url
            .trim()
            .parse()
            .map_err(|e| Error::Input(format!("{url_env}: not a PostgreSQL URL or connection string: {e}")))?;
        if config.get_ssl_mode() == postgres::config::SslMode::Require {
            return Err(Error::Input(format!(
                "{url_env}: sslmode=require, but evalua connects without TLS: use a server on this machine or a \
                 private network, with sslmode=disable or prefer"
            )));
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        let display = {
            let host = match config.get_hosts().first() {
                Some(postgres::config::Host::Tcp(h)) => h.clone(),
                Some(postgres::config::Host::Unix(p)) => p.display().to_string(),
                None => "localhost".into(),
            };
            let port = config.get_ports().first().copied().unwrap_or(5432);
            format!("{host}:{port}/{}", config.get_dbname().or(config.get_user()).unwrap_or(""))
        };
        let token = random_token();
        config.application_name(&format!("evalua:{token}"));
        let mut control = config.connect(NoTls).map_err(|e| {
            Error::Environment(format!("cannot connect to PostgreSQL at {display} ({url_env}): {}", db_message(&e)))
        })?;
        let env_err = |e: postgres::Error| Error::Environment(format!("PostgreSQL at {display}: {}", db_message(&e)));
        let row = control
            .query_one(
                "SELECT current_setting('server_version'), current_setting('server_version_num')::int, \
                 (SELECT rolcreatedb OR rolsuper FROM pg_roles WHERE rolname = current_user), current_user::text",
                &[],
            )
            .map_err(env_err)?;
        let (version, num, may_create, user): (String, i32, Option<bool>, String) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        if num < MIN_SERVER_VERSION {
            return Err(Error::Environment(format!(
                "PostgreSQL at {display} is version {version}: evalua needs 13 or later"
            )));
        }
        if may_create != Some(true) {
            return Err(Error::Environment(format!(
                "PostgreSQL at {display}: role {user} may not create databases (each trial gets its own): \
                 ALTER ROLE {} CREATEDB",
                ident(&user)
            )));
        }
        let server = Arc::new(Server {
            config,
            display,
            url_env: url_env.to_string(),
            token,
            version,
            control: Mutex::new(Some(control)),
            admin: Mutex::new(Vec::new()),
            next: AtomicU64::new(1),
            closed: AtomicBool::new(false),
            dropped: Mutex::new(false),
        });
        if let Ok(mut live) = LIVE.lock() {
            live.retain(|w| w.strong_count() > 0);
            live.push(Arc::downgrade(&server));
        }
        // A second Ctrl-C exits without unwinding: drop the databases first.
        crate::util::cancel::at_exit(shutdown_all);
        server.sweep_dead_runs();
        Ok(server)
    }

    pub fn server_version(&self) -> &str {
        &self.version
    }

    /// This run's prefix: every database it creates starts with it.
    pub fn prefix(&self) -> String {
        format!("evalua_{}_", self.token)
    }

    fn next_name(&self, kind: &str) -> String {
        format!("{}{kind}{}", self.prefix(), self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// Run `f` on a connection to the maintenance database.
    fn admin<R>(
        &self,
        f: impl FnOnce(&mut Client) -> std::result::Result<R, postgres::Error>,
    ) -> std::result::Result<R, String> {
        let pooled = self.admin.lock().ok().and_then(|mut p| p.pop());
        let mut client = match pooled {
            Some(c) if !c.is_closed() => c,
            _ => self.config.connect(NoTls).map_err(|e| {
                format!("cannot connect to PostgreSQL at {} ({}): {}", self.display, self.url_env, db_message(&e))
            })?,
        };
        let r = f(&mut client).map_err(|e| db_message(&e));
        if !client.is_closed()
            && let Ok(mut p) = self.admin.lock()
        {
            p.push(client);
        }
        r
    }

    fn create_copy(&self, name: &str, template: &str) -> std::result::Result<(), String> {
        self.admin(|c| c.batch_execute(&format!("CREATE DATABASE {} TEMPLATE {}", ident(name), ident(template))))
            .map_err(|e| format!("cannot create the trial's database from the template: {e}"))?;
        if self.closed.load(Ordering::SeqCst) {
            // The run's databases were dropped while this one was made.
            self.drop_database(name);
            return Err("the run's PostgreSQL databases are already dropped".into());
        }
        Ok(())
    }

    fn drop_database(&self, name: &str) {
        let _ = self.admin(|c| c.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", ident(name))));
    }

    /// Connect to one of the run's databases.
    fn connect_to(&self, name: &str, opts: Option<OpenOptions>) -> std::result::Result<Client, String> {
        let mut config = self.config.clone();
        config.dbname(name);
        // Times read the same on every machine; no statement outlives the trial.
        let mut options = config.get_options().map(|o| format!("{o} ")).unwrap_or_default();
        options.push_str("-c TimeZone=UTC -c client_min_messages=warning");
        if let Some(o) = opts {
            options.push_str(&format!(" -c statement_timeout={}", o.statement_timeout.as_millis().max(1)));
        }
        config.options(&options);
        config
            .connect(NoTls)
            .map_err(|e| format!("cannot connect to database {name} at {}: {}", self.display, db_message(&e)))
    }

    /// Build a template database from the SQL files (the suite's schema, then
    /// the case's fixture). A statement PostgreSQL refuses is the user's
    /// input: `file:line: the server's message`.
    pub fn template(self: &Arc<Self>, files: &[&Path], max_bytes: u64) -> Result<Arc<Template>> {
        for file in files {
            let size = std::fs::metadata(file)
                .map_err(|e| Error::Input(format!("{}: cannot read fixture: {e}", display_path(file))))?
                .len();
            if size > max_bytes {
                return Err(Error::Input(format!(
                    "{}: the fixture is {:.1} MiB, over the limit of {:.1} MiB (raise sandbox.max_fixture_mb in the suite or EVALUA_MAX_FIXTURE_MB)",
                    display_path(file),
                    size as f64 / 1048576.0,
                    max_bytes as f64 / 1048576.0
                )));
            }
        }
        let name = self.next_name("t");
        let env = |m: String| Error::Environment(format!("PostgreSQL at {}: {m}", self.display));
        self.admin(|c| c.batch_execute(&format!("CREATE DATABASE {} TEMPLATE template0", ident(&name))))
            .map_err(|e| env(format!("cannot create a template database: {e}")))?;
        let mut client = self.connect_to(&name, None).map_err(env)?;
        for file in files {
            let sql = std::fs::read_to_string(file)
                .map_err(|e| Error::Input(format!("{}: cannot read fixture: {e}", display_path(file))))?;
            if let Err(e) = client.batch_execute(&sql) {
                let Some(db) = e.as_db_error() else {
                    return Err(env(format!("{}: {}", display_path(file), db_message(&e))));
                };
                let line = match db.position() {
                    Some(postgres::error::ErrorPosition::Original(pos)) => {
                        let upto: String = sql.chars().take((*pos as usize).saturating_sub(1)).collect();
                        format!(":{}", upto.matches('\n').count() + 1)
                    }
                    _ => String::new(),
                };
                return Err(Error::Input(format!("{}{line}: PostgreSQL: {}", display_path(file), db_message(&e))));
            }
        }
        drop(client);
        // Nobody connects to a template: a session on it would block every copy.
        self.admin(|c| c.batch_execute(&format!("ALTER DATABASE {} ALLOW_CONNECTIONS false", ident(&name))))
            .map_err(env)?;
        Ok(Arc::new(Template { server: self.clone(), name, initial: Mutex::new(None) }))
    }

    /// Drop the databases of runs that ended without dropping their own: those
    /// whose token no session on the server carries any more.
    fn sweep_dead_runs(&self) {
        let found = self.admin(|c| {
            let names: Vec<String> = c
                .query("SELECT datname::text FROM pg_database WHERE datname LIKE 'evalua\\_%' ORDER BY 1", &[])?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let live: Vec<String> = c
                .query(
                    "SELECT DISTINCT application_name FROM pg_stat_activity WHERE application_name LIKE 'evalua:%'",
                    &[],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect();
            Ok((names, live))
        });
        let Ok((names, live)) = found else { return };
        let mut dropped = 0;
        for name in &names {
            let Some(token) = token_of(name) else { continue };
            if token == self.token || live.iter().any(|a| a.strip_prefix("evalua:") == Some(token)) {
                continue;
            }
            match self.admin(|c| c.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", ident(name)))) {
                Ok(()) => dropped += 1,
                Err(e) => eprintln!("warning: PostgreSQL: cannot drop {name}, left by an earlier run: {e}"),
            }
        }
        if dropped > 0 {
            eprintln!(
                "evalua: dropped {dropped} database(s) that earlier runs left on PostgreSQL at {} (they were killed before cleaning up)",
                self.display
            );
        }
    }

    /// Drop every database of this run and close its connections. Idempotent.
    pub fn shutdown(&self) {
        let mut dropped = self.dropped.lock().unwrap_or_else(|p| p.into_inner());
        if *dropped {
            return;
        }
        self.closed.store(true, Ordering::SeqCst);
        let pattern = format!("{}%", self.prefix().replace('_', "\\_"));
        let names: Vec<String> = self
            .admin(|c| c.query("SELECT datname::text FROM pg_database WHERE datname LIKE $1", &[&pattern]))
            .map(|rows| rows.iter().map(|r| r.get(0)).collect())
            .unwrap_or_default();
        for name in names {
            if let Err(e) =
                self.admin(|c| c.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", ident(&name))))
            {
                eprintln!("warning: PostgreSQL: cannot drop {name}: {e} (the next run will)");
            }
        }
        if let Ok(mut p) = self.admin.lock() {
            p.clear();
        }
        if let Ok(mut c) = self.control.lock() {
            c.take();
        }
        *dropped = true;
    }
}

/// A case's initial database on the server.
pub struct Template {
    server: Arc<Server>,
    name: String,
    /// A copy `t.initial` reads (never a template: a session on the template
    /// would block the trials' copies), made on first use.
    initial: Mutex<Option<String>>,
}

impl Template {
    /// The trial's own read-write copy.
    pub fn open_copy(&self, opts: OpenOptions) -> std::result::Result<PgDb, String> {
        let s = &self.server;
        if s.closed.load(Ordering::SeqCst) {
            return Err("the run's PostgreSQL databases are already dropped".into());
        }
        let name = s.next_name("");
        s.create_copy(&name, &self.name)?;
        match s.connect_to(&name, Some(opts)) {
            Ok(client) => Ok(PgDb::new(s.clone(), name, client, true, false)),
            Err(e) => {
                s.drop_database(&name);
                Err(e)
            }
        }
    }

    /// A read-only handle on the initial state.
    pub fn open_initial(&self) -> std::result::Result<PgDb, String> {
        let s = &self.server;
        let name = {
            let mut slot = self.initial.lock().map_err(|_| "poisoned lock".to_string())?;
            match &*slot {
                Some(n) => n.clone(),
                None => {
                    let n = s.next_name("i");
                    s.create_copy(&n, &self.name)?;
                    *slot = Some(n.clone());
                    n
                }
            }
        };
        let client = s.connect_to(&name, Some(OpenOptions { statement_timeout: Duration::from_secs(60) }))?;
        Ok(PgDb::new(s.clone(), name, client, false, true))
    }
}

/// A connection to one of the run's databases, as a [`Database`].
pub struct PgDb {
    server: Arc<Server>,
    name: String,
    client: RefCell<Option<Client>>,
    statements: RefCell<HashMap<String, Statement>>,
    /// Dropped on close (a trial's copy), or only disconnected (t.initial's).
    owned: bool,
    sealed: Cell<bool>,
}

impl PgDb {
    fn new(server: Arc<Server>, name: String, client: Client, owned: bool, sealed: bool) -> Self {
        PgDb {
            server,
            name,
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
        }
    }
}

impl Drop for PgDb {
    fn drop(&mut self) {
        self.close();
    }
}

/// `?` and `?NNN` placeholders as `$n`, outside string literals, quoted
/// identifiers, comments and dollar quotes. A statement that already uses
/// `$n` is left alone (so PostgreSQL's `?` jsonb operators stay usable).
pub fn placeholders(sql: &str) -> Cow<'_, str> {
    if !sql.contains('?') {
        return Cow::Borrowed(sql);
    }
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 8);
    let mut next = 1u32;
    let mut i = 0;
    let mut last = 0;
    let mut changed = false;
    let ident_char = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    while i < b.len() {
        match b[i] {
            b'\'' => {
                // E'…' strings take backslash escapes.
                let escapes = i > 0 && (b[i - 1] == b'E' || b[i - 1] == b'e') && (i < 2 || !ident_char(b[i - 2]));
                i += 1;
                while i < b.len() {
                    if escapes && b[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if b[i] == b'\'' {
                        if b.get(i + 1) == Some(&b'\'') {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += 1;
                }
                i += 1;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'$' if i == 0 || !ident_char(b[i - 1]) => {
                if b.get(i + 1).is_some_and(|c| c.is_ascii_digit()) {
                    return Cow::Borrowed(sql); // already PostgreSQL's own placeholders
                }
                // A dollar quote: $tag$ … $tag$.
                let start = i;
                let mut j = i + 1;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                if j < b.len() && b[j] == b'$' {
                    let tag = &sql[start..=j];
                    match sql[j + 1..].find(tag) {
                        Some(end) => i = j + 1 + end + tag.len(),
                        None => i = b.len(),
                    }
                } else {
                    i += 1;
                }
            }
            b'?' => {
                out.push_str(&sql[last..i]);
                let mut j = i + 1;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
                if j > i + 1 {
                    let n: u32 = sql[i + 1..j].parse().unwrap_or(next);
                    out.push_str(&format!("${n}"));
                    next = next.max(n + 1);
                } else {
                    out.push_str(&format!("${next}"));
                    next += 1;
                }
                changed = true;
                i = j;
                last = i;
            }
            _ => i += 1,
        }
    }
    if !changed {
        return Cow::Borrowed(sql);
    }
    out.push_str(&sql[last..]);
    Cow::Owned(out)
}

/// A parameter, sent as text and typed by the server (a blob to a bytea
/// column goes as raw bytes).
#[derive(Debug)]
struct Param<'a>(&'a SqlValue);

fn is_int(ty: &Type) -> bool {
    [Type::INT2, Type::INT4, Type::INT8, Type::OID].contains(ty)
}

impl ToSql for Param<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> std::result::Result<IsNull, BoxError> {
        let text = match self.0 {
            SqlValue::Null => return Ok(IsNull::Yes),
            SqlValue::Blob(b) if *ty == Type::BYTEA => {
                out.extend_from_slice(b);
                return Ok(IsNull::No);
            }
            SqlValue::Integer(i) if *ty == Type::BOOL => (if *i != 0 { "true" } else { "false" }).to_string(),
            SqlValue::Integer(i) => i.to_string(),
            SqlValue::Real(f) if *ty == Type::BOOL => (if *f != 0.0 { "true" } else { "false" }).to_string(),
            SqlValue::Real(f) if f.is_nan() => "NaN".into(),
            SqlValue::Real(f) if f.is_infinite() => (if *f > 0.0 { "Infinity" } else { "-Infinity" }).into(),
            SqlValue::Real(f) if is_int(ty) && f.fract() == 0.0 => format!("{}", *f as i64),
            SqlValue::Real(f) => format!("{f}"),
            SqlValue::Bool(b) if is_int(ty) => (if *b { "1" } else { "0" }).to_string(),
            SqlValue::Bool(b) => (if *b { "true" } else { "false" }).to_string(),
            SqlValue::Text(s) => s.clone(),
            SqlValue::Blob(b) => String::from_utf8_lossy(b).into_owned(),
        };
        out.extend_from_slice(text.as_bytes());
        Ok(IsNull::No)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    fn encode_format(&self, ty: &Type) -> postgres::types::Format {
        match self.0 {
            SqlValue::Blob(_) if *ty == Type::BYTEA => postgres::types::Format::Binary,
            _ => postgres::types::Format::Text,
        }
    }

    to_sql_checked!();
}

/// A column's value, read by its type (binary format).
struct Out(SqlValue);

impl<'a> FromSql<'a> for Out {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> std::result::Result<Self, BoxError> {
        decode(ty, raw).map(Out)
    }
    fn from_sql_null(_: &Type) -> std::result::Result<Self, BoxError> {
        Ok(Out(SqlValue::Null))
    }
    fn accepts(_: &Type) -> bool {
        true
    }
}

fn be<const N: usize>(raw: &[u8]) -> std::result::Result<[u8; N], BoxError> {
    raw.get(..N).and_then(|s| s.try_into().ok()).ok_or_else(|| "a value shorter than its type".into())
}

/// Microseconds since 2000-01-01 (PostgreSQL's epoch) as a timestamp's text.
fn timestamp_text(us: i64, zone: &str) -> std::result::Result<String, BoxError> {
    match us {
        i64::MAX => return Ok("infinity".into()),
        i64::MIN => return Ok("-infinity".into()),
        _ => {}
    }
    let ts = jiff::Timestamp::from_microsecond(us + 946_684_800_000_000)?;
    let dt = ts.to_zoned_datetime(jiff::tz::TimeZone::UTC).datetime();
    Ok(format!("{} {}{zone}", dt.date(), time_text(dt.time())))
}

fn time_text(t: jiff::civil::Time) -> String {
    let mut s = format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second());
    let micro = t.subsec_nanosecond() / 1000;
    if micro != 0 {
        let frac = format!("{micro:06}");
        s.push('.');
        s.push_str(frac.trim_end_matches('0'));
    }
    s
}

fn decode(ty: &Type, raw: &[u8]) -> std::result::Result<SqlValue, BoxError> {
    use SqlValue::*;
    Ok(match *ty {
        Type::BOOL => Bool(raw.first().is_some_and(|b| *b != 0)),
        Type::INT2 => Integer(i16::from_be_bytes(be(raw)?) as i64),
        Type::INT4 => Integer(i32::from_be_bytes(be(raw)?) as i64),
        Type::INT8 => Integer(i64::from_be_bytes(be(raw)?)),
        Type::OID => Integer(u32::from_be_bytes(be(raw)?) as i64),
        // A float4 reads as the decimal it shows (19.9, not 19.899999618530273).
        Type::FLOAT4 => Real(f32::from_be_bytes(be(raw)?).to_string().parse::<f64>()?),
        Type::FLOAT8 => Real(f64::from_be_bytes(be(raw)?)),
        Type::NUMERIC => Real(numeric(raw)?),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN | Type::JSON | Type::XML => {
            Text(String::from_utf8_lossy(raw).into_owned())
        }
        Type::JSONB => Text(String::from_utf8_lossy(raw.get(1..).unwrap_or_default()).into_owned()),
        Type::BYTEA => Blob(raw.to_vec()),
        Type::UUID => {
            let h: String = raw.iter().map(|b| format!("{b:02x}")).collect();
            if h.len() != 32 {
                return Err("a uuid that is not 16 bytes".into());
            }
            Text(format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..]))
        }
        Type::DATE => {
            let days = i32::from_be_bytes(be(raw)?);
            Text(match days {
                i32::MAX => "infinity".into(),
                i32::MIN => "-infinity".into(),
                d => jiff::civil::date(2000, 1, 1).checked_add(jiff::Span::new().days(d as i64))?.to_string(),
            })
        }
        Type::TIMESTAMP => Text(timestamp_text(i64::from_be_bytes(be(raw)?), "")?),
        Type::TIMESTAMPTZ => Text(timestamp_text(i64::from_be_bytes(be(raw)?), "+00")?),
        Type::TIME => {
            let us = i64::from_be_bytes(be(raw)?);
            let t = jiff::civil::Time::midnight().checked_add(jiff::Span::new().microseconds(us))?;
            Text(time_text(t))
        }
        _ => match ty.kind() {
            Kind::Enum(_) => Text(String::from_utf8_lossy(raw).into_owned()),
            Kind::Domain(base) => decode(base, raw)?,
            _ if ty.name() == "citext" => Text(String::from_utf8_lossy(raw).into_owned()),
            _ => {
                return Err(format!(
                    "evalua does not read PostgreSQL's type {}: cast it in the query (e.g. col::text)",
                    ty.name()
                )
                .into());
            }
        },
    })
}

/// PostgreSQL's binary numeric: base-10000 digits with a weight, as an f64.
fn numeric(raw: &[u8]) -> std::result::Result<f64, BoxError> {
    let word = |i: usize| -> std::result::Result<u16, BoxError> {
        Ok(u16::from_be_bytes(be(&raw[(2 * i).min(raw.len())..])?))
    };
    let (ndigits, weight, sign) = (word(0)? as usize, word(1)? as i16 as i32, word(2)?);
    match sign {
        0xC000 => return Ok(f64::NAN),
        0xD000 => return Ok(f64::INFINITY),
        0xF000 => return Ok(f64::NEG_INFINITY),
        _ => {}
    }
    let mut digits = String::with_capacity(ndigits * 4);
    for i in 0..ndigits {
        digits.push_str(&format!("{:04}", word(4 + i)?));
    }
    if digits.is_empty() {
        return Ok(0.0);
    }
    let point = (weight + 1) * 4;
    let text = if point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        format!("{}.{}", &digits[..point as usize], &digits[point as usize..])
    };
    let v: f64 = text.parse()?;
    Ok(if sign == 0x4000 { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_marks_become_dollar_placeholders_outside_quotes_and_comments() {
        assert_eq!(placeholders("SELECT 1"), "SELECT 1");
        assert_eq!(placeholders("INSERT INTO t VALUES (?, ?, ?)"), "INSERT INTO t VALUES ($1, $2, $3)");
        assert_eq!(placeholders("SELECT ?2, ?1"), "SELECT $2, $1");
        assert_eq!(
            placeholders("SELECT '?', \"a?\", ? -- what?\n, E'\\'?', ? /* ? /* ? */ */, $$?$$, $x$?$x$, ?"),
            "SELECT '?', \"a?\", $1 -- what?\n, E'\\'?', $2 /* ? /* ? */ */, $$?$$, $x$?$x$, $3"
        );
        assert_eq!(placeholders("SELECT 'it''s ?', ?"), "SELECT 'it''s ?', $1");
        // PostgreSQL's own placeholders: the jsonb `?` operator stays.
        assert_eq!(placeholders("SELECT doc ? 'k' FROM t WHERE id = $1"), "SELECT doc ? 'k' FROM t WHERE id = $1");
        assert!(matches!(placeholders("SELECT 1 WHERE 'a' = 'a'"), Cow::Borrowed(_)));
    }

    #[test]
    fn numerics_and_times_decode() {
        // 12345.678: ndigits 3, weight 1, sign 0, dscale 3; digits 1, 2345, 6780.
        let raw = [0u16, 3, 1, 0, 3, 1, 2345, 6780];
        let mut b = Vec::new();
        for w in &raw[1..] {
            b.extend_from_slice(&w.to_be_bytes());
        }
        assert_eq!(numeric(&b).unwrap(), 12345.678);
        // -0.0005: ndigits 1, weight -1, sign negative, dscale 4; digit 5.
        let mut b = Vec::new();
        for w in [1u16, (-1i16) as u16, 0x4000, 4, 5] {
            b.extend_from_slice(&w.to_be_bytes());
        }
        assert_eq!(numeric(&b).unwrap(), -0.0005);
        assert_eq!(timestamp_text(0, "").unwrap(), "2000-01-01 00:00:00");
        assert_eq!(timestamp_text(86_400_000_000 + 1_500_000, "+00").unwrap(), "2000-01-02 00:00:01.5+00");
        assert_eq!(token_of("evalua_0123456789abcdef_t1"), Some("0123456789abcdef"));
        assert_eq!(token_of("evalua_prod"), None);
        assert_eq!(token_of("evalua_0123456789ABCDEF_1"), None);
    }
}
