//! `evalua test`: each example of a grader test file becomes a synthetic
//! finished trial — its calls, answer, messages and outbox in a journal, a
//! database built from SQL, a work dir written from the example — shown to
//! the grader through the same `t` and the same `run_checks` as a real trial.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use mlua::{Lua, Table};
use serde_json::Value as Json;

use super::grading::run_checks;
use crate::lua::api::t::{self as t_api, TParts};
use crate::lua::grader_tests::{Example, Expect, FileChange, Group, TestFile};
use crate::record::{self, CallRecord, CallStatus, CheckResult, Ended, Journal, Message, Outcome, Usage};
use crate::sandbox::db::{DbTemplate, LazyDb};
use crate::sandbox::sqlite::{SqliteDb, build_template, sql_error_message};
use crate::sandbox::{open_copy, workdir};
use crate::util::paths::confine;
use crate::util::tree::copy_tree;

/// The verdict a grader gave an example.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Got {
    Pass,
    Fail,
    Skip,
    /// A grader error, with its message.
    Error(String),
}

impl Got {
    pub fn as_str(&self) -> &'static str {
        match self {
            Got::Pass => "pass",
            Got::Fail => "fail",
            Got::Skip => "skip",
            Got::Error(_) => "error",
        }
    }
    fn matches(&self, e: Expect) -> bool {
        matches!(
            (self, e),
            (Got::Pass, Expect::Pass)
                | (Got::Fail, Expect::Fail)
                | (Got::Skip, Expect::Skip)
                | (Got::Error(_), Expect::Error)
        )
    }
}

/// One example's result.
pub struct ExampleResult {
    pub grader: String,
    pub example: String,
    /// `file:line` of the example (its `name` in the test file), else of its `evalua.grader_tests` call.
    pub location: String,
    pub expected: Expect,
    pub got: Got,
    /// Each check's result (a grader may be a group of checks).
    pub checks: Vec<CheckResult>,
}

impl ExampleResult {
    pub fn ok(&self) -> bool {
        self.got.matches(self.expected)
    }
}

/// The verdict of a grader's checks on one trial, by the outcome logic of SPEC §8.
fn verdict(checks: &[CheckResult]) -> Got {
    match record::outcome_of(false, checks) {
        Outcome::Failed | Outcome::Critical => Got::Fail,
        Outcome::GraderError => Got::Error(
            checks.iter().find_map(|c| c.error.clone()).unwrap_or_else(|| "the check could not decide".into()),
        ),
        _ if !checks.is_empty() && checks.iter().all(|c| c.skipped) => Got::Skip,
        _ => Got::Pass,
    }
}

/// Run every example of a loaded test file. An example that cannot be built
/// (its SQL fails, a file cannot be written) is an error of the test file:
/// `Err("file:line: …")`. Test runners are isolated as `isolation` says.
pub fn run_file(file: &TestFile, isolation: crate::process::Isolation) -> Result<Vec<ExampleResult>, String> {
    let mut out = Vec::new();
    for g in &file.groups {
        for (ex, case) in &g.examples {
            let checks = run_example(&file.lua, g, ex, case.as_ref(), isolation)
                .map_err(|e| format!("{}: example '{}': {e}", ex.location.as_ref().unwrap_or(&g.location), ex.name))?;
            out.push(ExampleResult {
                grader: g.name.clone(),
                example: ex.name.clone(),
                location: ex.location.clone().unwrap_or_else(|| g.location.clone()),
                expected: ex.expect,
                got: verdict(&checks),
                checks,
            });
        }
    }
    Ok(out)
}

fn write_files(root: &Path, files: impl Iterator<Item = (String, Option<String>)>) -> Result<(), String> {
    std::fs::create_dir_all(root).map_err(|e| e.to_string())?;
    for (rel, content) in files {
        let p = confine(root, &rel).map_err(|e| format!("files: {e}"))?;
        match content {
            Some(text) => {
                if let Some(parent) = p.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| format!("files: {rel}: {e}"))?;
                }
                std::fs::write(&p, text).map_err(|e| format!("files: {rel}: {e}"))?;
            }
            None => {
                if p.is_dir() {
                    std::fs::remove_dir_all(&p).map_err(|e| format!("files: {rel}: {e}"))?;
                } else if p.exists() {
                    std::fs::remove_file(&p).map_err(|e| format!("files: {rel}: {e}"))?;
                }
            }
        }
    }
    Ok(())
}

fn run_example(
    lua: &Lua,
    g: &Group,
    ex: &Example,
    case: Option<&Table>,
    isolation: crate::process::Isolation,
) -> Result<Vec<CheckResult>, String> {
    // The database: schema + fixture make the initial state, `sql` the final one.
    let (initial, conn) = match &ex.db {
        Some(db) => {
            let files: Vec<&Path> = db.schema.iter().chain(db.fixture.iter()).map(|p| p.as_path()).collect();
            let image = build_template(&files, crate::spec::mib(crate::spec::DEFAULT_MAX_FIXTURE_MB))
                .map_err(|e| format!("db: {e}"))?;
            let conn = open_copy(&image, false).map_err(|e| format!("db: {e}"))?;
            if let Some(sql) = &db.sql {
                conn.execute_batch(sql).map_err(|e| format!("db.sql: {}", sql_error_message(&e)))?;
            }
            (Some(DbTemplate::Sqlite(image)), conn)
        }
        None => (None, crate::sandbox::open_empty().map_err(|e| e.to_string())?),
    };

    // The work dir: `workdir` and `initial_files` make the initial tree, `files` change it.
    let tmp = tempfile::tempdir().map_err(|e| format!("cannot create a temp dir: {e}"))?;
    let (before, after) = (tmp.path().join("initial"), tmp.path().join("final"));
    let has_tree = ex.workdir.is_some() || !ex.initial_files.is_empty() || !ex.files.is_empty();
    if has_tree {
        if let Some(w) = &ex.workdir {
            copy_tree(w, &before).map_err(|e| format!("workdir {}: {e}", w.display()))?;
        }
        write_files(&before, ex.initial_files.iter().map(|(k, v)| (k.clone(), Some(v.clone()))))?;
        copy_tree(&before, &after).map_err(|e| e.to_string())?;
        write_files(
            &after,
            ex.files.iter().map(|(k, v)| {
                (
                    k.clone(),
                    match v {
                        FileChange::Write(s) => Some(s.clone()),
                        FileChange::Delete(_) => None,
                    },
                )
            }),
        )?;
    }
    let diff = if has_tree {
        workdir::diff(Some(&before), &after, crate::spec::KeepCaps::default()).map_err(|e| format!("t.diff: {e}"))?
    } else {
        workdir::Diff::default()
    };

    // The journal: calls, messages, outbox, usage.
    let calls: Vec<CallRecord> = ex
        .calls
        .iter()
        .enumerate()
        .map(|(i, c)| CallRecord {
            id: c.id.clone().unwrap_or_else(|| format!("c{}", i + 1)),
            requested_id: None,
            diverged: false,
            recorded: None,
            name: c.name.clone(),
            args: c.args.clone().filter(|a| !a.is_null()).unwrap_or_else(|| Json::Object(Default::default())),
            status: c.status.clone().unwrap_or(CallStatus::Executed),
            effect: c.effect.clone(),
            result: c.result.clone(),
            error: c.error.clone(),
            error_type: None,
            started_ms: c.started_ms.unwrap_or(0.0),
            ended_ms: c.ended_ms.unwrap_or(0.0),
        })
        .collect();
    let messages = ex.messages.clone().unwrap_or_else(|| {
        if ex.answer.is_empty() {
            Vec::new()
        } else {
            vec![Message { role: "agent".into(), content: ex.answer.clone(), call_id: None }]
        }
    });
    let u = ex.usage.clone().unwrap_or_default();
    let usage = Usage {
        input_tokens: u.input_tokens.unwrap_or(0),
        output_tokens: u.output_tokens.unwrap_or(0),
        cost_usd: u.cost_usd.unwrap_or(0.0),
        turns: u.turns.unwrap_or(1),
        tool_calls: u.tool_calls.unwrap_or(calls.len() as u32),
        wall_ms: u.wall_ms.unwrap_or(0.0),
    };
    let journal = Journal { calls, messages, outbox: ex.outbox.clone(), usage, ..Journal::new() };

    let case_table = match case {
        Some(c) => c.clone(),
        None => {
            let c = lua.create_table().map_err(|e| e.to_string())?;
            c.raw_set("id", ex.name.as_str()).map_err(|e| e.to_string())?;
            c
        }
    };
    let tests_ran = Rc::new(RefCell::new(Vec::new()));
    // `t` dies with the example (a check that stashes it cannot use it later).
    let grading = crate::lua::api::phase::Phase::new();
    let t = t_api::build(
        lua,
        TParts {
            case_table: &case_table,
            trial: ex.trial.unwrap_or(1),
            seed: 0,
            answer: &ex.answer,
            ended: ex.ended.unwrap_or(Ended::Final),
            error: ex.error.as_deref(),
            journal: &journal,
            conn: Rc::new(SqliteDb::wrap(conn)),
            initial: Rc::new(LazyDb::new(initial)),
            workdir: &after,
            diff: &diff,
            tests_ran,
            phase: grading.clone(),
            // Test runners see the system folders and the example's tree, nothing else.
            view: crate::process::View { isolation, ..Default::default() },
            max_file: crate::spec::KeepCaps::default().file_bytes,
        },
    )
    .map_err(|e| format!("cannot build the trial: {e}"))?;
    let tables: Vec<Table> = g.checks.iter().map(|(t, _, _)| t.clone()).collect();
    let infos: Vec<(&str, bool)> = g.checks.iter().map(|(_, n, c)| (n.as_str(), *c)).collect();
    let results = run_checks(lua, &tables, &infos, &t);
    grading.end();
    Ok(results)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use mlua::Value;

    use super::run_example;
    use crate::lua::engine::reuse;
    use crate::lua::grader_tests::load;

    #[test]
    fn running_a_built_in_check_changes_nothing_a_worker_walks() {
        // A worker reuses its evaluated suite for the next trial only while
        // everything reachable from the case the trial ran is as it was
        // (`lua::engine::reuse`); otherwise it evaluates the whole suite file
        // again, every case of it, for one trial. check.tools once marked its
        // own list as a JSON array when it ran: every trial of a suite using it
        // evaluated the suite again (bench/agent.lua, 500 cases: 15× the CPU a
        // trial). Each built-in check of stdlib/tests runs all its examples;
        // what it reaches (its table, its upvalues, the examples' cases) must
        // walk the same afterwards.
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("stdlib/tests/check_test.lua");
        let file = load(&path).unwrap();
        let lua = &file.lua;
        reuse::trust_host(lua).unwrap();
        let mut changed = Vec::new();
        let mut walked = 0;
        for g in &file.groups {
            let mut roots: Vec<Value> = g.checks.iter().map(|(t, _, _)| Value::Table(t.clone())).collect();
            roots.extend(g.examples.iter().filter_map(|(_, c)| c.clone().map(Value::Table)));
            let Some(snapshot) = reuse::snapshot(lua, roots.clone()).unwrap() else {
                changed.push(format!("{} ({}): keeps a coroutine", g.location, g.name));
                continue;
            };
            for (ex, case) in &g.examples {
                run_example(lua, g, ex, case.as_ref(), crate::process::Isolation::None)
                    .unwrap_or_else(|e| panic!("{}: {}: {e}", g.location, ex.name));
            }
            if !reuse::unchanged(lua, roots, &snapshot).unwrap() {
                changed.push(format!("{} ({})", g.location, g.name));
            }
            walked += 1;
        }
        assert!(changed.is_empty(), "running these checks changed what they reach: {changed:#?}");
        assert!(walked > 30, "only {walked} groups in {}", path.display());
    }
}
