//! A case's initial database on the server (a template database, loaded
//! once from the SQL files and closed to connections) and the copies the
//! trials and `t.initial` get of it.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::handle::PgDb;
use super::server::{Server, db_message, ident};
use crate::error::{Error, Result};
use crate::sandbox::sql::OpenOptions;
use crate::util::paths::display_path;

impl Server {
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
        let mut client = self.connect_to(&name, None, None).map_err(env)?;
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
        // A trial's role owns nothing and is granted nothing by name: what it
        // may use in its copy, PUBLIC may (every table and sequence, and
        // creating objects in every schema, as on SQLite), and only it and
        // the admin role may connect to its copy.
        client
            .batch_execute(GRANT_TO_TRIALS)
            .map_err(|e| env(format!("cannot grant the trials the fixture's tables: {}", db_message(&e))))?;
        drop(client);
        // Nobody connects to a template: a session on it would block every copy.
        self.admin(|c| {
            c.batch_execute(&format!(
                "ALTER DATABASE {0} ALLOW_CONNECTIONS false; REVOKE ALL ON DATABASE {0} FROM PUBLIC",
                ident(&name)
            ))
        })
        .map_err(env)?;
        Ok(Arc::new(Template { server: self.clone(), name, initial: Mutex::new(None) }))
    }
}

/// Run in a template once its fixture is loaded (by the admin role, which
/// owns what it made): a trial's role may read and write every table and
/// sequence, and create objects, in every schema but the system's. It may
/// not alter or drop the fixture's tables (it does not own them).
const GRANT_TO_TRIALS: &str = r#"
DO $evalua$
DECLARE s name;
BEGIN
  FOR s IN SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema'
  LOOP
    EXECUTE format('GRANT USAGE, CREATE ON SCHEMA %I TO PUBLIC', s);
    EXECUTE format('GRANT ALL ON ALL TABLES IN SCHEMA %I TO PUBLIC', s);
    EXECUTE format('GRANT ALL ON ALL SEQUENCES IN SCHEMA %I TO PUBLIC', s);
  END LOOP;
END
$evalua$;
"#;

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
        let n = s.next_number();
        let (name, role) = (format!("{}{n}", s.prefix()), format!("{}r{n}", s.prefix()));
        s.create_copy(&name, &self.name)?;
        // The trial's connection (its tools' SQL, its checks' t.db) logs in as
        // a role of its own, that may connect to this database only.
        let login = s
            .create_trial_role(&role, &name)
            .and_then(|password| s.connect_to(&name, Some(opts), Some((&role, &password))));
        match login {
            Ok(client) => Ok(PgDb::new(s.clone(), name, Some(role), client, true, false)),
            Err(e) => {
                s.drop_database(&name);
                s.drop_role(&role);
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
        let client = s.connect_to(&name, Some(OpenOptions { statement_timeout: Duration::from_secs(60) }), None)?;
        Ok(PgDb::new(s.clone(), name, None, client, false, true))
    }
}
