//! Issue 24, item 7: a PostgreSQL sandbox attacked as a hostile agent would,
//! through a tool that passes the agent's SQL to the trial's database (a
//! command agent, tests/agents/sql_attack_agent.py, calling the suite's `sql`
//! tool). Before the fix every statement ran as the role of EVALUA_PG_URL (in
//! CI the superuser `postgres`): the agent ran a shell command on the server
//! (`COPY … TO PROGRAM`), read its files (`pg_read_file`), created databases,
//! dropped the run's template and another database on the server, and
//! reached any database (`dblink`). Now a trial's connection logs in as a
//! role made for the trial (no superuser, no CREATEDB, no CREATEROLE, no
//! membership) that may connect to its own database only.
//!
//! The server is shared: the tests drop only what they created (a victim
//! database, and what an attack would have created under names they chose).

use std::path::Path;

use serde_json::Value;

use crate::common::*;
use crate::postgres::{ORPHAN_TESTS, client, databases, pg_url, prefix_of};

const SCHEMA: &str = "CREATE EXTENSION IF NOT EXISTS dblink;\n\
    CREATE TABLE kv (k TEXT PRIMARY KEY, n INTEGER);\n\
    CREATE TABLE audit (id SERIAL PRIMARY KEY, k TEXT);\n";
const SEED: &str = "INSERT INTO kv VALUES ('seed', 1);\n";

/// A name no one else on the shared server uses.
fn unique(kind: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("evalua_attack_{kind}_{}_{nanos}", std::process::id())
}

fn suite(attack_plan: &Value, normal_plan: &Value) -> String {
    let agent = repo().join("tests/agents/sql_attack_agent.py");
    let helpers = repo().join("suites/agents").display().to_string();
    format!(
        r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {{
  name = "pg_attack", trials = 1,
  sandbox = {{ db = "postgres", schema = "schema.sql", expose = {{ {helpers:?} }} }},
  agent = evalua.agent.command {{ cmd = {{ "python3", {agent:?} }} }},
}}
suite:tool {{ name = "sql", description = "Run SQL on the shop's database", effect = "write",
  params = {{ type = "object", properties = {{ sql = {{ type = "string" }} }}, required = {{ "sql" }} }},
  run = function(ctx, args) return {{ rows = ctx.db:rows(args.sql) }} end }}
suite:case {{ id = "attack", input = {attack:?}, fixture = "seed.sql",
  expect = {{ check.sql("SELECT n FROM kv WHERE k = 'seed'", {{ equals = 1 }}) }} }}
suite:case {{ id = "normal", input = {normal:?}, fixture = "seed.sql", trials = 2, expect = {{
  check.sql("SELECT n FROM kv WHERE k = 'new'", {{ equals = 2 }}),
  check.sql("SELECT count(*) FROM audit", {{ equals = 1 }}),
  function(t) return t.db:one("SELECT sum(x) FROM mine") == 7 end,
}} }}
return suite
"#,
        attack = attack_plan.to_string(),
        normal = normal_plan.to_string(),
    )
}

/// What the agent got back for each statement it sent: (sql, ok, content).
fn seen(run: &Path, case: &str, trial: u64) -> Vec<(String, bool, Value)> {
    let recs = trials(run);
    let r = record(&recs, case, trial);
    let answer = r["answer"].as_str().unwrap_or_else(|| panic!("{case}#{trial}: no answer: {r}"));
    let list: Vec<Value> = serde_json::from_str(answer).unwrap();
    list.into_iter().map(|e| (e[0].as_str().unwrap().to_string(), e[1].as_bool().unwrap(), e[2].clone())).collect()
}

#[test]
fn an_agents_sql_reaches_nothing_beyond_its_trials_database() {
    let Some(url) = pg_url() else { return };
    let _turn = ORPHAN_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let port = url.rsplit_once(':').and_then(|(_, p)| p.split('/').next()).unwrap_or("5432").to_string();
    // A database of someone else on the server, made by the test as the admin role.
    let victim = unique("victim");
    let (made_db, made_role) = (unique("db"), unique("role"));
    client(&url).batch_execute(&format!("CREATE DATABASE {victim}")).unwrap();
    let cleanup = |url: &str| {
        let mut c = client(url);
        for db in [&victim, &made_db] {
            c.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).unwrap();
        }
        c.batch_execute(&format!("DROP ROLE IF EXISTS {made_role}")).unwrap();
    };
    let attack = serde_json::json!({
        // For each of the run's other databases (the template, t.initial's copy, other trials').
        "each": [
            "SELECT has_database_privilege('{db}', 'CONNECT')",
            format!("SELECT dblink_connect('host=127.0.0.1 port={port} user=postgres dbname={{db}}')"),
            "DROP DATABASE \"{db}\" WITH (FORCE)",
        ],
        "attacks": [
            "SELECT current_user::text",
            "COPY (SELECT 1) TO PROGRAM 'id'",
            "SELECT pg_read_file('/etc/passwd')",
            "SELECT pg_ls_dir('.')",
            "SELECT rolpassword::text FROM pg_authid",
            format!("CREATE DATABASE {made_db}"),
            format!("CREATE ROLE {made_role} LOGIN"),
            format!("SELECT dblink_connect('host=127.0.0.1 port={port} user=postgres dbname={victim}')"),
            format!("SELECT dblink_connect('host=127.0.0.1 port={port} user=postgres password=x dbname={victim}')"),
            format!("DROP DATABASE {victim} WITH (FORCE)"),
            "SET ROLE postgres",
            // Listing is allowed, and harmless: other sessions' statements stay hidden.
            "SELECT count(*) FROM pg_database",
            "SELECT count(*) FROM pg_stat_activity WHERE usename <> current_user AND query <> '<insufficient privilege>'",
        ],
    });
    let normal = serde_json::json!({ "attacks": [
        "INSERT INTO kv VALUES ('new', 2)",
        "UPDATE kv SET n = n WHERE k = 'seed'",
        "INSERT INTO audit(k) VALUES ('new')",
        "CREATE TABLE mine (x INTEGER)",
        "INSERT INTO mine VALUES (3), (4)",
        "CREATE TEMP TABLE scratch AS SELECT 1 AS y",
        "SELECT k, n FROM kv ORDER BY k",
    ]});
    let dir = project(&[("s.lua", &suite(&attack, &normal)), ("schema.sql", SCHEMA), ("seed.sql", SEED)]);
    let o = run_suite(dir.path(), "s.lua", &["--jobs", "2"]);
    let out = dir.path().join("out");
    let after = |c: &mut postgres::Client, name: &str, what: &str| -> i64 {
        let q = format!(
            "SELECT count(*) FROM {what} WHERE {} = $1",
            if what == "pg_roles" { "rolname" } else { "datname" }
        );
        c.query_one(&q, &[&name]).unwrap().get(0)
    };
    let (victim_left, db_made, role_made) = {
        let mut c = client(&url);
        (
            after(&mut c, &victim, "pg_database"),
            after(&mut c, &made_db, "pg_database"),
            after(&mut c, &made_role, "pg_roles"),
        )
    };
    cleanup(&url);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert_eq!((victim_left, db_made, role_made), (1, 0, 0), "the victim must survive; nothing may be created");

    let results = seen(&out, "attack", 1);
    let text = serde_json::to_string_pretty(&results).unwrap();
    let get = |prefix: &str| -> Vec<&(String, bool, Value)> {
        let v: Vec<_> = results.iter().filter(|(q, ..)| q.starts_with(prefix)).collect();
        assert!(!v.is_empty(), "no statement {prefix:?} in {text}");
        v
    };
    // The run's other databases: the template and t.initial's copy, at least.
    let siblings = get("SELECT has_database_privilege");
    assert!(siblings.len() >= 2, "{text}");
    for (q, ok, content) in siblings {
        assert!(*ok, "{q}: {content}");
        assert_eq!(content["rows"], serde_json::json!([[false]]), "{q}: a trial may connect to its own database only");
    }
    let (_, ok, me) = get("SELECT current_user")[0];
    assert!(*ok, "{me}");
    let me = me["rows"][0][0].as_str().unwrap_or("");
    assert!(me.starts_with("evalua_") && me != "postgres", "the agent's SQL runs as {me}");
    for refused in [
        "SELECT dblink_connect",
        "DROP DATABASE",
        "COPY (SELECT 1) TO PROGRAM",
        "SELECT pg_read_file",
        "SELECT pg_ls_dir",
        "SELECT rolpassword",
        "CREATE DATABASE",
        "CREATE ROLE",
        "SET ROLE",
    ] {
        for (q, ok, content) in get(refused) {
            assert!(!ok, "{q} must be refused, got {content}");
        }
    }
    let (_, ok, n) = get("SELECT count(*) FROM pg_database")[0];
    assert!(*ok && n["rows"][0][0].as_i64().unwrap_or(0) > 0, "{n}");
    let (_, ok, n) = get("SELECT count(*) FROM pg_stat_activity")[0];
    assert!(*ok, "{n}");
    assert_eq!(n["rows"], serde_json::json!([[0]]), "other sessions' statements are hidden from a trial");

    // The run itself was not hurt: its template survived, so every trial got
    // its database, and a tool's ordinary SQL works as before.
    let recs = trials(&out);
    assert_eq!(record(&recs, "attack", 1)["outcome"], "accepted", "{}", record(&recs, "attack", 1));
    for t in 1..=2 {
        let r = record(&recs, "normal", t);
        assert_eq!(r["outcome"], "accepted", "{r}");
        for (q, ok, content) in seen(&out, "normal", t) {
            assert!(ok, "{q}: {content}");
        }
    }
    // Nothing of the run is left on the server: its databases, its roles.
    let prefix = prefix_of(&out);
    assert_eq!(databases(&url, &prefix), Vec::<String>::new());
    assert_eq!(roles(&url, &prefix), Vec::<String>::new(), "the run's roles are dropped with it");
}

/// The roles on the server whose names start with `prefix`.
pub(crate) fn roles(url: &str, prefix: &str) -> Vec<String> {
    let pattern = format!("{}%", prefix.replace('_', "\\_"));
    client(url)
        .query("SELECT rolname::text FROM pg_roles WHERE rolname LIKE $1 ORDER BY 1", &[&pattern])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// An admin role that may create databases but not roles cannot give each
/// trial a role of its own: evalua refuses it, naming what is missing,
/// rather than run the agents' SQL as that role. Before: it ran them.
#[test]
fn a_role_that_may_not_create_roles_is_refused_with_what_it_lacks() {
    let Some(url) = pg_url() else { return };
    let role = unique("admin");
    client(&url).batch_execute(&format!("CREATE ROLE {role} LOGIN CREATEDB")).unwrap();
    let limited = url.replacen("://postgres@", &format!("://{role}@"), 1);
    assert_ne!(limited, url, "EVALUA_PG_URL is expected to name the user postgres: {url}");
    let _turn = ORPHAN_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let schema =
        "CREATE TABLE kv (k TEXT PRIMARY KEY, n INTEGER);\nCREATE TABLE audit (id SERIAL PRIMARY KEY, k TEXT);\n";
    let dir = project(&[
        ("s.lua", &suite(&serde_json::json!({}), &serde_json::json!({}))),
        ("schema.sql", schema),
        ("seed.sql", SEED),
    ]);
    let o = bin().current_dir(dir.path()).args(["check", "s.lua"]).env("EVALUA_PG_URL", &limited).output().unwrap();
    client(&url).batch_execute(&format!("DROP ROLE IF EXISTS {role}")).unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains(&format!("role {role} may not create roles")), "{err}");
    assert!(err.contains(&format!("ALTER ROLE \"{role}\" CREATEROLE")), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
