//! PostgreSQL sandboxes (SPEC §12), on a real server: the refunds example
//! gives the same verdicts on both backends; `t.db` is read-only, `t.initial`,
//! `check.sql`, `check.no_writes` and `prohibited` work; a fixture that is not
//! valid PostgreSQL is exit 2 naming the file, the line and the server's
//! message; and no database is left behind, even when evalua is killed.
//!
//! Needs EVALUA_PG_URL (a role that may create databases and roles; .ci/run starts a
//! server and sets it). Skips with a loud message without it, unless
//! EVALUA_REQUIRE_PG=1 (set by .ci/run), where its absence fails.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::common::*;

pub(crate) fn pg_url() -> Option<String> {
    match std::env::var("EVALUA_PG_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            if std::env::var("EVALUA_REQUIRE_PG").as_deref() == Ok("1") {
                panic!(
                    "EVALUA_REQUIRE_PG=1 but EVALUA_PG_URL is not set: start a server (.ci/services.sh, ci_pg_start)"
                );
            }
            eprintln!("\n*** SKIPPED: the PostgreSQL tests need EVALUA_PG_URL (a server; .ci/run starts one) ***\n");
            None
        }
    }
}

/// The tests that leave (or look for) databases no live run owns take turns.
pub(crate) static ORPHAN_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// evalua's databases on the server that no live run owns: no session carries
/// their run's `application_name`. Read as sessions, databases, sessions,
/// databases, so that a run starting or ending meanwhile is not taken for an
/// orphan (a run drops its databases before it closes its sessions).
fn orphans(url: &str) -> Vec<String> {
    let mut c = client(url);
    let sessions = |c: &mut postgres::Client| -> Vec<String> {
        c.query("SELECT application_name FROM pg_stat_activity WHERE application_name LIKE 'evalua:%'", &[])
            .unwrap()
            .iter()
            .map(|r| r.get::<_, String>(0)["evalua:".len()..].to_string())
            .collect()
    };
    let names = |c: &mut postgres::Client| -> Vec<String> {
        c.query("SELECT datname::text FROM pg_database WHERE datname ~ '^evalua_[0-9a-f]{16}_'", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    let mut live = sessions(&mut c);
    let before = names(&mut c);
    live.extend(sessions(&mut c));
    let after = names(&mut c);
    before.into_iter().filter(|n| after.contains(n) && !live.iter().any(|t| *t == n[7..23])).collect()
}

pub(crate) fn client(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).expect("connect to EVALUA_PG_URL")
}

/// The databases on the server whose names start with `prefix`.
pub(crate) fn databases(url: &str, prefix: &str) -> Vec<String> {
    let pattern = format!("{}%", prefix.replace('_', "\\_"));
    client(url)
        .query("SELECT datname::text FROM pg_database WHERE datname LIKE $1 ORDER BY 1", &[&pattern])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// The prefix of the run's databases, from its manifest.
pub(crate) fn prefix_of(run: &Path) -> String {
    let m = json(&run.join("manifest.json"));
    assert_eq!(m["suite"]["db"]["kind"], "postgres", "{}", m["suite"]);
    let p = m["suite"]["db"]["prefix"].as_str().expect("db.prefix in the manifest").to_string();
    assert!(p.starts_with("evalua_") && p.len() == 24, "{p}");
    p
}

/// A record without what differs between two runs of the same trials.
fn verdicts(run: &Path) -> Vec<Value> {
    without_timings(run)
        .into_iter()
        .map(|mut r| {
            r.as_object_mut().unwrap().remove("usage");
            r
        })
        .collect()
}

fn figures(run: &Path) -> Value {
    let mut s = summary_without_timings(run);
    s.as_object_mut().unwrap().remove("suite");
    s
}

#[test]
fn refunds_gives_the_same_verdicts_on_sqlite_and_postgres_and_leaves_no_database() {
    let Some(url) = pg_url() else { return };
    // A run's start sweeps what dead runs left: not while another test counts them.
    let _turn = ORPHAN_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = project(&[]);
    let d = dir.path();
    let run = |suite: &str, out: &str| {
        let o = d.join(out);
        let args = ["run", suite, "--out", o.to_str().unwrap(), "-q", "--seed", "5", "--trials", "7"];
        bin().current_dir(repo()).args(args).output().unwrap()
    };
    let sqlite = run("suites/refunds.lua", "sqlite");
    let pg = run("suites/refunds_pg.lua", "pg");
    assert_eq!(pg.status.code(), sqlite.status.code(), "{}\n{}", stderr(&pg), stdout(&pg));
    assert!(matches!(pg.status.code(), Some(0 | 1)), "{}", stderr(&pg));
    let (a, b) = (verdicts(&d.join("sqlite")), verdicts(&d.join("pg")));
    assert_eq!(a.len(), 21);
    // Every record (outcome, each check's verdict and evidence, the answer, the
    // calls) is the same on both backends; only timings differ.
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y, "SQLite and PostgreSQL disagree");
    }
    assert_eq!(figures(&d.join("sqlite")), figures(&d.join("pg")));
    // Both outcomes occur, so the checks did discriminate.
    let outcomes: Vec<&str> = b.iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert!(outcomes.contains(&"accepted") && outcomes.iter().any(|o| *o != "accepted"), "{outcomes:?}");
    let manifest = json(&d.join("pg/manifest.json"));
    assert!(manifest["suite"]["db"]["server_version"].as_str().is_some_and(|v| !v.is_empty()));
    let prefix = prefix_of(&d.join("pg"));
    assert_eq!(databases(&url, &prefix), Vec::<String>::new(), "the run left databases behind");

    // A PostgreSQL trial's changes cannot be kept as a SQLite changeset: the
    // run keeps no state, says so, and cannot be re-graded.
    assert_eq!(manifest["trial_state"], "unsupported", "{manifest}");
    assert_eq!(json(&d.join("sqlite/manifest.json"))["trial_state"], "kept");
    let kept: Vec<_> = std::fs::read_dir(d.join("pg/traces"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".json") && !n.ends_with(".jsonl")) // traces, packed or not
        .collect();
    assert_eq!(kept, Vec::<String>::new(), "no kept state in a PostgreSQL run");
    let o = bin().current_dir(repo()).args(["regrade", d.join("pg").to_str().unwrap()]).output().unwrap();
    assert_user_error(&o, "ran on PostgreSQL (sandbox.db = \"postgres\"): re-grading is not supported for it");
    // The SQLite suite cannot re-grade it either, nor the PostgreSQL suite a SQLite run.
    let o = bin()
        .current_dir(repo())
        .args(["regrade", d.join("pg").to_str().unwrap(), "--suite", "suites/refunds.lua"])
        .output()
        .unwrap();
    assert_user_error(&o, "re-grading is not supported");
}

#[test]
fn a_sqlite_run_is_not_re_graded_on_postgres() {
    let Some(_url) = pg_url() else { return };
    // A run's start sweeps what dead runs left: not while another test counts them.
    let _turn = ORPHAN_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let pg = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {
  name = "both", trials = 2,
  sandbox = { db = "postgres", url_env = "EVALUA_PG_URL", schema = "schema.sql" },
  agent = evalua.agent.scripted(function() return "done" end),
}
suite:case { id = "one", input = "x", fixture = "seed.sql", expect = { check.sql("SELECT count(*) FROM kv", { equals = 1 }) } }
return suite
"#;
    let sqlite = pg.replace(r#"db = "postgres", url_env = "EVALUA_PG_URL""#, r#"db = "sqlite""#);
    assert_ne!(sqlite, pg);
    let dir = project(&[("pg.lua", pg), ("sqlite.lua", &sqlite), ("schema.sql", SCHEMA), ("seed.sql", SEED)]);
    let o = evalua(dir.path(), &["run", "sqlite.lua", "--out", "run", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = evalua(dir.path(), &["regrade", "run", "--suite", "pg.lua", "--out", "again"]);
    assert_user_error(&o, "pg.lua: the suite now declares a PostgreSQL sandbox");
    // With the suite it was made with, the same run re-grades.
    let o = evalua(dir.path(), &["regrade", "run", "--out", "again"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

const SUITE: &str = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {
  name = "pgsand",
  sandbox = { db = "postgres", url_env = "EVALUA_PG_URL", schema = "schema.sql", clock = "2026-11-03T10:00:00Z" },
  agent = evalua.agent.scripted(function() return "done" end),
}
suite:tool {
  name = "put", effect = "write",
  params = { type = "object", properties = { k = { type = "string" }, n = { type = "number" }, flag = { type = "boolean" } } },
  run = function(ctx, args)
    ctx.db:exec("INSERT INTO kv(k, n, flag, at) VALUES (?, ?, ?, ?)", args.k, args.n, args.flag, ctx.now())
    return { ok = true }
  end,
}
suite:tool {
  name = "sneaky", effect = "read",
  run = function(ctx) ctx.db:exec("UPDATE kv SET n = n + 1") return {} end,
}
suite:tool {
  name = "get", effect = "read",
  params = { type = "object", properties = { k = { type = "string" } } },
  run = function(ctx, args) return ctx.db:row("SELECT k, n, flag FROM kv WHERE k = ?", args.k) end,
}
local function case(id, calls, expect, prohibited)
  suite:case { id = id, input = id, fixture = "seed.sql", expect = expect, prohibited = prohibited,
    agent = evalua.agent.scripted(function(task, env)
      for _, c in ipairs(calls) do
        local _, status, err = env.call(c[1], c[2])
        if status ~= "ok" then error(tostring(err)) end
      end
      return "done"
    end) }
end
case("values_round_trip", { { "put", { k = "a", n = 2.5, flag = true } }, { "put", { k = "b", n = 3 } } }, {
  check.sql("SELECT count(*) FROM kv", { equals = 3 }),
  check.sql("SELECT n FROM kv WHERE k = 'a'", { equals = 2.5 }),
  check.sql("SELECT k, n FROM kv WHERE k <> 'seed' ORDER BY k", { rows = { { "a", 2.5 }, { "b", 3 } }, ordered = true }),
  function(t)
    local r = t.db:row("SELECT flag, n, price, doc, at, big FROM kv WHERE k = 'a'")
    local ok = r.flag == true and r.n == 2.5 and r.at == "2026-11-03 10:00:00+00"
    return ok, r
  end,
  function(t)
    local r = t.db:row("SELECT price, doc, big, day, id FROM kv WHERE k = 'seed'")
    return r.price == 19.9 and r.doc == '{"a": 1}' and r.big == 9007199254740993 and r.day == "2026-11-03"
      and r.id == "00000000-0000-0000-0000-000000000001", r
  end,
  function(t) return t.db:one("SELECT count(*) FROM kv WHERE k = ? AND n > ?", "b", 2) == 1 end,
  function(t) return t.initial:one("SELECT count(*) FROM kv") == 1 and t.db:one("SELECT count(*) FROM kv") == 3 end,
}, { "SELECT count(*) FROM kv WHERE k = 'forbidden'" })
case("prohibited_write", { { "put", { k = "forbidden" } } }, { check.sql("SELECT count(*) FROM kv", { equals = 2 }) },
  { "SELECT count(*) FROM kv WHERE k = 'forbidden'" })
case("no_writes_holds", { { "get", { k = "seed" } } }, { check.no_writes() })
case("no_writes_fails", { { "put", { k = "x" } } }, { check.no_writes() })
case("no_writes_sees_the_data", { { "sneaky", {} } }, { check.no_writes() })
case("t_db_read_only", { { "put", { k = "a" } } }, { function(t) t.db:exec("DELETE FROM kv") return true end })
case("t_db_no_way_around", { { "put", { k = "a" } } }, {
  function(t)
    pcall(function() t.db:one("SET TRANSACTION READ WRITE") end)
    pcall(function() t.db:one("COMMIT") end)
    pcall(function() t.db:one("SET default_transaction_read_only = off") end)
    t.db:exec("DELETE FROM kv")
    return true
  end })
-- Each trial's copy is dropped when it ends: however many trials, the run
-- holds the template, t.initial's copy and one copy per running trial.
suite:case { id = "copies_do_not_pile_up", input = "x", fixture = "seed.sql", trials = 8, expect = {
  function(t)
    local n = t.db:one("SELECT count(*) FROM pg_database WHERE left(datname, 24) = left(current_database(), 24)")
    return n <= 4, { databases = n }
  end } }
case("after_the_bad_checks", { { "put", { k = "z" } } }, { check.sql("SELECT count(*) FROM kv", { equals = 2 }) })
case("bad_sql_is_a_grader_error", {}, { function(t) return t.db:one("SELECT nope FROM kv") == 1 end })
case("unread_type_asks_for_a_cast", {}, {
  function(t) return t.db:one("SELECT '10.0.0.1'::inet") ~= nil end,
  function(t) return t.db:one("SELECT '10.0.0.1'::inet::text") == "10.0.0.1/32" end,
})
return suite
"#;

const SCHEMA: &str = "CREATE TABLE kv (k TEXT NOT NULL, n NUMERIC(10, 2), flag BOOLEAN, at TIMESTAMPTZ,\n  price REAL, doc JSONB, big BIGINT, day DATE, id UUID);\n";
const SEED: &str = "INSERT INTO kv VALUES ('seed', 1, false, '2026-11-03T09:00:00Z', 19.9, '{\"a\": 1}',\n  9007199254740993, '2026-11-03', '00000000-0000-0000-0000-000000000001');\n";

#[test]
fn ctx_db_t_db_t_initial_check_sql_and_prohibited_work_on_postgres() {
    let Some(url) = pg_url() else { return };
    // A run's start sweeps what dead runs left: not while another test counts them.
    let _turn = ORPHAN_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = project(&[("s.lua", SUITE), ("schema.sql", SCHEMA), ("seed.sql", SEED)]);
    let o = run_suite(dir.path(), "s.lua", &["--jobs", "2"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let recs = trials(&dir.path().join("out"));
    let r = record(&recs, "values_round_trip", 1);
    assert_eq!(r["outcome"], "accepted", "{}", serde_json::to_string_pretty(&r["checks"]).unwrap());
    assert_eq!(record(&recs, "prohibited_write", 1)["outcome"], "critical");
    assert_eq!(record(&recs, "no_writes_holds", 1)["outcome"], "accepted");
    assert_eq!(record(&recs, "no_writes_fails", 1)["outcome"], "failed");
    // A "read" tool that wrote: the digests of t.db and t.initial differ.
    let sneaky = record(&recs, "no_writes_sees_the_data", 1);
    assert_eq!(sneaky["checks"][0]["evidence"]["reason"], "the database differs from its initial state", "{sneaky}");
    for case in ["t_db_read_only", "t_db_no_way_around"] {
        let r = record(&recs, case, 1);
        assert_eq!(r["outcome"], "grader_error", "{case}: {r}");
        let err = r["checks"][0]["error"].as_str().unwrap();
        assert!(err.contains("t.db is read-only: DELETE FROM kv"), "{case}: {err}");
    }
    // The writes the checks tried did not happen: the next trial's checks see its own state.
    assert_eq!(record(&recs, "after_the_bad_checks", 1)["outcome"], "accepted");
    for t in 1..=8 {
        let r = record(&recs, "copies_do_not_pile_up", t);
        assert_eq!(r["outcome"], "accepted", "{}", r["checks"]);
    }
    let bad = record(&recs, "bad_sql_is_a_grader_error", 1);
    assert_eq!(bad["outcome"], "grader_error");
    let err = bad["checks"][0]["error"].as_str().unwrap();
    assert!(err.contains("column \"nope\" does not exist"), "{err}");
    let cast = record(&recs, "unread_type_asks_for_a_cast", 1);
    assert!(cast["checks"][0]["error"].as_str().unwrap().contains("cast it in the query"), "{cast}");
    assert_eq!(cast["checks"][1]["passed"], true, "{cast}");
    let prefix = prefix_of(&dir.path().join("out"));
    assert_eq!(databases(&url, &prefix), Vec::<String>::new());
}

#[test]
fn a_fixture_that_is_not_valid_postgresql_is_exit_2_with_file_line_and_message() {
    let Some(url) = pg_url() else { return };
    let bad = "-- SQLite's dialect\nCREATE TABLE t (\n  id INTEGER PRIMARY KEY AUTOINCREMENT,\n  v TEXT\n);\n";
    let dir = project(&[("s.lua", SUITE), ("schema.sql", SCHEMA), ("seed.sql", bad)]);
    let _turn = ORPHAN_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let o = run_suite(dir.path(), "s.lua", &[]);
    assert_user_error(&o, "seed.sql:3: PostgreSQL: syntax error at or near \"AUTOINCREMENT\"");
    assert!(stderr(&o).contains("case 'values_round_trip'"), "{}", stderr(&o));
    // The template it was loading went with it.
    assert_eq!(orphans(&url), Vec::<String>::new(), "{}", stderr(&o));
    let o = evalua(dir.path(), &["check", "s.lua"]);
    assert_user_error(&o, "seed.sql:3: PostgreSQL");
}

#[test]
fn a_check_query_that_does_not_prepare_on_postgres_is_exit_2_before_any_trial() {
    let Some(url) = pg_url() else { return };
    // PostgreSQL's dialect decides: `strftime` is SQLite's, not PostgreSQL's.
    let suite = SUITE.replace(
        r#"case("bad_sql_is_a_grader_error", {}, { function(t) return t.db:one("SELECT nope FROM kv") == 1 end })"#,
        r#"case("bad_sql_is_a_grader_error", {}, { check.sql("SELECT strftime('%Y', at) FROM kv", { equals = "2026" }) })"#,
    );
    assert_ne!(suite, SUITE);
    let dir = project(&[("s.lua", &suite), ("schema.sql", SCHEMA), ("seed.sql", SEED)]);
    let _turn = ORPHAN_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    for args in [&["check", "s.lua"][..], &["run", "s.lua", "--out", "out"]] {
        let o = evalua(dir.path(), args);
        assert_user_error(
            &o,
            "check 'sql: SELECT strftime('%Y', at) FROM kv' (case 'bad_sql_is_a_grader_error'): the query does not prepare against the case's fixture: function strftime(",
        );
        assert!(stderr(&o).contains("s.lua:"), "{}", stderr(&o));
    }
    assert!(!dir.path().join("out/trials.jsonl").exists(), "no trial ran");
    assert_eq!(orphans(&url), Vec::<String>::new());
}

#[test]
fn without_the_url_variable_or_a_server_the_errors_say_so() {
    let dir = project(&[("s.lua", SUITE), ("schema.sql", SCHEMA), ("seed.sql", SEED)]);
    let o = bin().current_dir(dir.path()).args(["check", "s.lua"]).env_remove("EVALUA_PG_URL").output().unwrap();
    assert_user_error(&o, "the environment variable EVALUA_PG_URL is not set");
    let o = bin().current_dir(dir.path()).args(["check", "s.lua"]).env("EVALUA_PG_URL", "not a url").output().unwrap();
    assert_user_error(&o, "EVALUA_PG_URL: not a PostgreSQL URL");
    let o = bin()
        .current_dir(dir.path())
        .args(["check", "s.lua"])
        .env("EVALUA_PG_URL", "postgres://u@127.0.0.1:1/postgres?sslmode=require")
        .output()
        .unwrap();
    assert_user_error(&o, "sslmode=require, but evalua connects without TLS");
    // Nothing listens on port 1: evalua's environment, exit 3.
    let o = bin()
        .current_dir(dir.path())
        .args(["check", "s.lua"])
        .env("EVALUA_PG_URL", "postgres://nobody@127.0.0.1:1/postgres")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot connect to PostgreSQL at 127.0.0.1:1/postgres (EVALUA_PG_URL)"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    // The skip of the example suite without a server.
    let o = bin()
        .current_dir(repo())
        .args(["run", "suites/refunds_pg.lua", "-q"])
        .env_remove("EVALUA_PG_URL")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("skipped: suites/refunds_pg.lua: no PostgreSQL server"), "{}", stdout(&o));
}

/// A suite whose agent waits, so a trial's database exists for a while: until
/// the test opens its gate (creates `gate/open` in the project), else for
/// `$EVALUA_TEST_SLEEP` seconds.
const SLOW: &str = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {
  name = "slow",
  trials = 1,
  sandbox = { db = "postgres", schema = "schema.sql", expose = { "gate" } },
  agent = evalua.agent.command { cmd = { "sh", "-c", "read line; n=0; while [ ! -e \"$EVALUA_TEST_GATE/open\" ] && [ $n -lt $((EVALUA_TEST_SLEEP * 10)) ]; do sleep 0.1; n=$((n + 1)); done; echo '{\"type\":\"final\",\"content\":\"ok\"}'" },
                                 env = { "EVALUA_TEST_SLEEP", "EVALUA_TEST_GATE" } },
}
suite:case { id = "one", input = "x", fixture = "seed.sql", expect = { check.answer { equals = "ok" } } }
suite:case { id = "two", input = "x", fixture = "seed.sql", expect = { check.sql("SELECT count(*) FROM kv", { equals = 1 }) } }
return suite
"#;

/// A project for [`SLOW`], its gate closed.
fn slow_project() -> tempfile::TempDir {
    let dir = project(&[("slow.lua", SLOW), ("schema.sql", SCHEMA), ("seed.sql", SEED)]);
    std::fs::create_dir(dir.path().join("gate")).unwrap();
    dir
}

#[test]
fn an_interrupted_run_drops_its_databases_on_one_signal_or_two() {
    let Some(url) = pg_url() else { return };
    let dir = slow_project();
    let d = dir.path();
    let _turn = ORPHAN_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    for signals in [1, 2] {
        let out = format!("stopped{signals}");
        let mut child = bin()
            .current_dir(d)
            .args(["run", "slow.lua", "--out", &out, "-q", "--jobs", "2"])
            .env("EVALUA_TEST_SLEEP", "600")
            .env("EVALUA_TEST_GATE", d.join("gate"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let run = d.join(&out);
        wait_until("the manifest", || run.join("manifest.json").is_file());
        let prefix = prefix_of(&run);
        wait_until("two trial databases", || databases(&url, &prefix).len() >= 4);
        for _ in 0..signals {
            // SAFETY: kill only sends a signal to the child we started.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            // Apart enough not to merge into one pending signal, close enough
            // to arrive (usually) while the first one's stop is under way.
            std::thread::sleep(Duration::from_millis(10));
        }
        // The agents sleep 600 s: a run that stops before that stopped on the signal.
        let mut status = None;
        wait_until("the run to stop on SIGINT", || {
            status = child.try_wait().unwrap();
            status.is_some()
        });
        let status = status.unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert!(err.contains("SIGINT received"), "{err}");
        // The second signal exits at once (130), dropping the databases
        // first, unless the first one's stop was already over when it came.
        if err.contains("second signal") {
            assert_eq!(status.code(), Some(130), "{err}");
        } else {
            assert!(matches!(status.code(), Some(0 | 1)), "{status:?}: {err}");
        }
        assert_eq!(databases(&url, &prefix), Vec::<String>::new(), "{signals} signal(s): databases left: {err}");
    }
    assert_eq!(orphans(&url), Vec::<String>::new());
}

#[test]
fn no_database_is_left_behind_when_evalua_is_killed_and_live_runs_are_spared() {
    let Some(url) = pg_url() else { return };
    let dir = slow_project();
    let d = dir.path();
    let _turn = ORPHAN_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let spawn = |out: &str, sleep: &str| {
        bin()
            .current_dir(d)
            .args(["run", "slow.lua", "--out", out, "-q", "--jobs", "2"])
            .env("EVALUA_TEST_SLEEP", sleep)
            .env("EVALUA_TEST_GATE", d.join("gate"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };

    // A live, slow run: its databases must survive the others' sweeps. Its
    // agents wait for the gate (600 s at most), opened once the sweep is done.
    let live = spawn("live", "600");
    wait_until("the live run's manifest", || d.join("live/manifest.json").is_file());
    let live_prefix = prefix_of(&d.join("live"));
    wait_until("the live run's trial databases", || databases(&url, &live_prefix).len() >= 3);
    // Both trials are waiting at the gate: each trial's role may connect to
    // its own database and to no other (issue 24, item 7).
    // (A trial's role is made just after its database.)
    wait_until("the live run's two trials and their roles", || {
        databases(&url, &live_prefix).iter().filter(|d| d[live_prefix.len()..].parse::<u64>().is_ok()).count() == 2
            && crate::isolation_postgres::roles(&url, &live_prefix).len() == 2
    });
    let trial_dbs: Vec<String> =
        databases(&url, &live_prefix).into_iter().filter(|d| d[live_prefix.len()..].parse::<u64>().is_ok()).collect();
    let as_role = |db: &str, of: &str| {
        let mut config: postgres::Config = url.parse().unwrap();
        config.dbname(db).user(&format!("{live_prefix}r{}", &of[live_prefix.len()..]));
        config.connect(postgres::NoTls)
    };
    match as_role(&trial_dbs[0], &trial_dbs[0]) {
        Ok(_) => {
            let refused = as_role(&trial_dbs[1], &trial_dbs[0]).map(drop).unwrap_err();
            assert_eq!(refused.code(), Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE), "{refused}");
        }
        // The server asks for a password (the trial's, which only evalua knows).
        Err(e) if e.code() == Some(&postgres::error::SqlState::INVALID_PASSWORD) => {
            eprintln!("(not tried: a trial role's login to a sibling's database: {e})")
        }
        Err(e) => panic!("a trial's role cannot connect to its own database: {e}"),
    }

    // A run killed while its trials run leaves its databases: a template and
    // the two trials' copies.
    let mut victim = spawn("killed", "60");
    wait_until("the killed run's manifest", || d.join("killed/manifest.json").is_file());
    let killed = prefix_of(&d.join("killed"));
    // A template, the copy its check.sql was prepared on (t.initial's), two trials' copies.
    wait_until("two trial databases and their roles", || {
        databases(&url, &killed).len() >= 4 && crate::isolation_postgres::roles(&url, &killed).len() >= 2
    });
    victim.kill().unwrap(); // SIGKILL: no destructor, no handler runs
    victim.wait().unwrap();
    // The server notices the closed connections within moments.
    let app = format!("evalua:{}", &killed["evalua_".len()..killed.len() - 1]);
    wait_until("the killed run's sessions to end", || {
        client(&url)
            .query_one("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", &[&app])
            .unwrap()
            .get::<_, i64>(0)
            == 0
    });
    assert_eq!(databases(&url, &killed).len(), 4, "the killed run left its databases");
    // ... and its two trials' roles.
    assert_eq!(crate::isolation_postgres::roles(&url, &killed).len(), 2, "the killed run left its trials' roles");

    // The next run against the server (here `evalua check`) drops them, and
    // only them.
    let o = evalua(d, &["check", "slow.lua"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("dropped") && stderr(&o).contains("earlier runs left"), "{}", stderr(&o));
    assert_eq!(databases(&url, &killed), Vec::<String>::new(), "the dead run's databases are swept");
    assert_eq!(crate::isolation_postgres::roles(&url, &killed), Vec::<String>::new(), "and its roles");
    assert!(databases(&url, &live_prefix).len() >= 3, "the live run's databases are spared");
    assert_eq!(crate::isolation_postgres::roles(&url, &live_prefix).len(), 2, "and its roles");
    assert_eq!(orphans(&url), Vec::<String>::new());

    // The live run was not disturbed: its trials finish and pass, and it drops its own.
    std::fs::write(d.join("gate/open"), "").unwrap();
    let out = live.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let recs = trials(&d.join("live"));
    assert!(recs.iter().all(|r| r["outcome"] == "accepted"), "{recs:?}");
    assert_eq!(databases(&url, &live_prefix), Vec::<String>::new());
    assert_eq!(crate::isolation_postgres::roles(&url, &live_prefix), Vec::<String>::new());
}

#[test]
fn postgres_parts_merge_into_the_unpartitioned_run() {
    let Some(url) = pg_url() else { return };
    // A run's start sweeps what dead runs left: not while another test counts them.
    let _turn = ORPHAN_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = project(&[]);
    let d = dir.path();
    let run = |out: &str, extra: &[&str]| {
        let o = d.join(out);
        let mut args = vec!["run", "suites/refunds_pg.lua", "--out", o.to_str().unwrap(), "-q", "--seed", "3"];
        args.extend_from_slice(&["--trials", "4"]);
        args.extend_from_slice(extra);
        let o = bin().current_dir(repo()).args(&args).output().unwrap();
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    };
    run("whole", &[]);
    run("parts/1", &["--partition", "hash:1/2"]);
    run("parts/2", &["--partition", "hash:2/2"]);
    let o = evalua(d, &["merge", "parts", "--out", "merged"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert_eq!(verdicts(&d.join("merged")), verdicts(&d.join("whole")));
    assert_eq!(figures(&d.join("merged")), figures(&d.join("whole")));
    let m = json(&d.join("merged/manifest.json"));
    assert_eq!(m["trial_state"], "unsupported");
    assert_eq!(m["suite"]["db"]["kind"], "postgres");
    assert!(m["suite"]["db"].get("prefix").is_none(), "{}", m["suite"]["db"]);
    for part in ["parts/1", "parts/2", "whole"] {
        assert_eq!(databases(&url, &prefix_of(&d.join(part))), Vec::<String>::new());
    }
}
