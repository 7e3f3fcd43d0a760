//! A PostgreSQL server as one run uses it: connecting (and checking the
//! version and the role), the run's token and database names, the pool of
//! maintenance connections, sweeping what dead runs left, and dropping every
//! database of the run at its end.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use postgres::{Client, Config, NoTls};

use crate::error::{Error, Result};
use crate::sandbox::sql::OpenOptions;

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
    pub(super) display: String,
    url_env: String,
    token: String,
    version: String,
    /// Held for the whole run: its `application_name` says the run is alive.
    control: Mutex<Option<Client>>,
    /// Connections to the maintenance database (the URL's) for CREATE / DROP DATABASE.
    admin: Mutex<Vec<Client>>,
    next: AtomicU64,
    /// Set when the run's databases are being dropped: no new one is made.
    pub(super) closed: AtomicBool,
    /// Held while they are dropped, and true once they are: a second
    /// shutdown (the second Ctrl-C's) waits for the first to finish.
    dropped: Mutex<bool>,
}

pub(super) fn db_message(e: &postgres::Error) -> String {
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
pub(super) fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn random_token() -> String {
    format!("{:016x}", fastrand::u64(..))
}

/// `CREATE ROLE` for a trial's login role: no right beyond logging in (no
/// superuser, no CREATEDB, no CREATEROLE, no replication, no RLS bypass), a
/// member of nothing, and inheriting nothing. Its password goes to the
/// server as a SCRAM verifier, never in the clear (server logs, other
/// sessions' `pg_stat_activity`).
fn create_role_sql(role: &str, password: &str) -> String {
    let verifier = postgres_protocol::password::scram_sha_256(password.as_bytes());
    format!(
        "CREATE ROLE {} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS \
         CONNECTION LIMIT 4 PASSWORD '{}';",
        ident(role),
        verifier.replace('\'', "''")
    )
}

/// The token in one of evalua's database (or role) names (`evalua_<16 hex>_…`).
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
                 (SELECT rolcreatedb OR rolsuper FROM pg_roles WHERE rolname = current_user), \
                 (SELECT rolcreaterole OR rolsuper FROM pg_roles WHERE rolname = current_user), current_user::text",
                &[],
            )
            .map_err(env_err)?;
        let (version, num, may_create_db, may_create_role, user): (String, i32, Option<bool>, Option<bool>, String) =
            (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
        if num < MIN_SERVER_VERSION {
            return Err(Error::Environment(format!(
                "PostgreSQL at {display} is version {version}: evalua needs 13 or later"
            )));
        }
        // Each trial gets a database of its own, and its SQL runs as a role
        // of its own: without both rights evalua refuses, rather than run an
        // agent's SQL as the configured role.
        let missing: Vec<(&str, &str)> = [
            (may_create_db != Some(true), ("databases", "CREATEDB")),
            (may_create_role != Some(true), ("roles", "CREATEROLE")),
        ]
        .into_iter()
        .filter_map(|(m, what)| m.then_some(what))
        .collect();
        if !missing.is_empty() {
            let what: Vec<&str> = missing.iter().map(|m| m.0).collect();
            let rights: Vec<&str> = missing.iter().map(|m| m.1).collect();
            return Err(Error::Environment(format!(
                "PostgreSQL at {display}: role {user} may not create {} (each trial gets a database and a role of \
                 its own): ALTER ROLE {} {}",
                what.join(" or "),
                ident(&user),
                rights.join(" ")
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
        server.probe_trial_login()?;
        Ok(server)
    }

    /// Make sure a role made for a trial can log in (pg_hba.conf may not let
    /// it): make one, log in as it to the maintenance database, drop it.
    fn probe_trial_login(&self) -> Result<()> {
        let role = format!("{}probe", self.prefix());
        let password = crate::util::digest::random_hex(24);
        let env = |m: String| Error::Environment(format!("PostgreSQL at {}: {m}", self.display));
        self.admin(|c| c.batch_execute(&create_role_sql(&role, &password)))
            .map_err(|e| env(format!("cannot create a role for the trials: {e}")))?;
        let mut config = self.config.clone();
        config.user(&role).password(password.as_bytes());
        let login = config.connect(NoTls);
        self.drop_role(&role);
        match login {
            Ok(_) => Ok(()),
            // Logged in, but may not connect to that database: enough.
            Err(e) if e.code() == Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) => Ok(()),
            Err(e) => Err(env(format!(
                "a role evalua made for a trial cannot log in ({}): the server's pg_hba.conf must let roles \
                 named evalua_* log in with a password (scram-sha-256 or md5) from this machine",
                db_message(&e)
            ))),
        }
    }

    pub fn server_version(&self) -> &str {
        &self.version
    }

    /// This run's prefix: every database it creates starts with it.
    pub fn prefix(&self) -> String {
        format!("evalua_{}_", self.token)
    }

    pub(super) fn next_name(&self, kind: &str) -> String {
        format!("{}{kind}{}", self.prefix(), self.next_number())
    }

    pub(super) fn next_number(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Make the login role of the trial whose database is `db` (a copy
    /// made by [`Server::create_copy`]), that may connect to `db` only.
    /// Returns its password.
    pub(super) fn create_trial_role(&self, role: &str, db: &str) -> std::result::Result<String, String> {
        let password = crate::util::digest::random_hex(24);
        let sql = format!(
            "{} GRANT CONNECT, TEMPORARY ON DATABASE {} TO {};",
            create_role_sql(role, &password),
            ident(db),
            ident(role)
        );
        self.admin(|c| c.batch_execute(&sql)).map_err(|e| format!("cannot create the trial's role: {e}"))?;
        Ok(password)
    }

    pub(super) fn drop_role(&self, role: &str) {
        let _ = self.admin(|c| c.batch_execute(&format!("DROP ROLE IF EXISTS {}", ident(role))));
    }

    /// Run `f` on a connection to the maintenance database.
    pub(super) fn admin<R>(
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

    /// Copy `template` into a new database `name`, to which no one but the
    /// admin role may connect (PUBLIC's CONNECT and TEMPORARY are revoked).
    pub(super) fn create_copy(&self, name: &str, template: &str) -> std::result::Result<(), String> {
        self.admin(|c| c.batch_execute(&format!("CREATE DATABASE {} TEMPLATE {}", ident(name), ident(template))))
            .map_err(|e| format!("cannot create the trial's database from the template: {e}"))?;
        if let Err(e) = self.admin(|c| c.batch_execute(&format!("REVOKE ALL ON DATABASE {} FROM PUBLIC", ident(name))))
        {
            self.drop_database(name);
            return Err(format!("cannot close the trial's database to other roles: {e}"));
        }
        if self.closed.load(Ordering::SeqCst) {
            // The run's databases were dropped while this one was made.
            self.drop_database(name);
            return Err("the run's PostgreSQL databases are already dropped".into());
        }
        Ok(())
    }

    pub(super) fn drop_database(&self, name: &str) {
        let _ = self.admin(|c| c.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", ident(name))));
    }

    /// Connect to one of the run's databases, as the admin role or as
    /// `login` (a trial's role and its password).
    pub(super) fn connect_to(
        &self,
        name: &str,
        opts: Option<OpenOptions>,
        login: Option<(&str, &str)>,
    ) -> std::result::Result<Client, String> {
        let mut config = self.config.clone();
        config.dbname(name);
        if let Some((role, password)) = login {
            config.user(role).password(password.as_bytes());
        }
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
        let dead = |name: &str| {
            token_of(name)
                .is_some_and(|t| t != self.token && !live.iter().any(|a| a.strip_prefix("evalua:") == Some(t)))
        };
        let mut dropped = 0;
        for name in names.iter().filter(|n| dead(n)) {
            match self.admin(|c| c.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", ident(name)))) {
                Ok(()) => dropped += 1,
                Err(e) => eprintln!("warning: PostgreSQL: cannot drop {name}, left by an earlier run: {e}"),
            }
        }
        // Their trials' roles, once their databases are gone (a role that
        // may connect to a database cannot be dropped before it).
        let roles: Vec<String> = self
            .admin(|c| c.query("SELECT rolname::text FROM pg_roles WHERE rolname LIKE 'evalua\\_%' ORDER BY 1", &[]))
            .map(|rows| rows.iter().map(|r| r.get(0)).collect())
            .unwrap_or_default();
        for role in roles.iter().filter(|r| dead(r)) {
            if let Err(e) = self.admin(|c| c.batch_execute(&format!("DROP ROLE IF EXISTS {}", ident(role)))) {
                eprintln!("warning: PostgreSQL: cannot drop role {role}, left by an earlier run: {e}");
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
        let roles: Vec<String> = self
            .admin(|c| c.query("SELECT rolname::text FROM pg_roles WHERE rolname LIKE $1", &[&pattern]))
            .map(|rows| rows.iter().map(|r| r.get(0)).collect())
            .unwrap_or_default();
        for role in roles {
            if let Err(e) = self.admin(|c| c.batch_execute(&format!("DROP ROLE IF EXISTS {}", ident(&role)))) {
                eprintln!("warning: PostgreSQL: cannot drop role {role}: {e} (the next run will)");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_evalua_names_with_a_token_are_a_runs_databases() {
        assert_eq!(token_of("evalua_0123456789abcdef_t1"), Some("0123456789abcdef"));
        assert_eq!(token_of("evalua_prod"), None);
        assert_eq!(token_of("evalua_0123456789ABCDEF_1"), None);
    }
}
