//! The checks on a finished trial: the case's checks and the suite's
//! monitors, on the `t` built from the trial's journal, final state and
//! diff. Every verdict goes through [`run_checks`] (runs, re-grades, `evalua
//! test`); the limits and failure modes are `checks`.

use std::cell::RefCell;
use std::rc::Rc;

use mlua::{Lua, Table};

use super::checks;
use super::context::*;
use crate::lua::api::{self, phase::Phase, t::TParts};
use crate::lua::engine::{self as lua, Log};
use crate::record::CheckResult;
use crate::sandbox::tests::TestRun;
use crate::sandbox::workdir::Diff;

/// A check as the case table holds it: the name and criticality it is
/// recorded under, and whether it is a prohibited-state query.
pub(crate) struct CheckMeta {
    pub name: String,
    pub critical: bool,
    pub prohibited: bool,
}

/// The case's checks (their Lua tables) and what each is recorded as. The
/// plan keeps no check: the case table the trial materialised is the truth.
pub(crate) fn case_checks(case_table: &Table) -> (Vec<Table>, Vec<CheckMeta>) {
    let checks: Vec<Table> = case_table
        .raw_get::<Table>("checks")
        .map(|c| c.sequence_values::<Table>().filter_map(|c| c.ok()).collect())
        .unwrap_or_default();
    let infos = checks
        .iter()
        .enumerate()
        .map(|(i, c)| CheckMeta {
            name: c.raw_get::<Option<String>>("name").ok().flatten().unwrap_or_else(|| format!("check #{}", i + 1)),
            critical: c.raw_get::<Option<bool>>("critical").ok().flatten().unwrap_or(false),
            prohibited: c.raw_get::<Option<String>>("kind").ok().flatten().as_deref() == Some("prohibited"),
        })
        .collect();
    (checks, infos)
}

/// Run the suite's monitors, then every check of the case, on the finished
/// trial: the results (the case's checks first, then the monitors) and the
/// failure modes (`None` when the suite has no monitors).
pub(crate) fn grade(
    trial: &Trial<'_>,
    end: &AgentEnd,
    diff: &Result<Diff, String>,
    tests_ran: &Rc<RefCell<Vec<TestRun>>>,
    grading: &Phase,
) -> (Vec<CheckResult>, Option<Vec<String>>) {
    let lua = &trial.lua;
    let (tables, infos) = case_checks(&trial.case_table);
    let has_monitors = !trial.plan.suite.monitors.is_empty();
    let t = match diff
        .as_ref()
        .map_err(|e| mlua::Error::runtime(e.clone()))
        .and_then(|d| build_t(trial, end, d, tests_ran, grading))
    {
        Ok(t) => t,
        Err(e) => {
            let msg = format!("cannot build the trial for the checks: {}", lua::describe(&e));
            let results = infos
                .into_iter()
                .map(|c| (c.name, c.critical, None))
                .chain(trial.plan.suite.monitors.iter().map(|m| (m.name.clone(), m.critical, Some(m.name.clone()))))
                .map(|(name, critical, monitor)| CheckResult {
                    name,
                    critical,
                    monitor,
                    error: Some(msg.clone()),
                    ..Default::default()
                })
                .collect();
            return (results, has_monitors.then(Vec::new));
        }
    };
    let monitors = checks::monitors_of(&trial.suite).unwrap_or_default();
    let started = trial.state.borrow().started;
    // Calls left by anything before (they belong to no trial).
    checks::take_judge_calls(lua, started, 0.0);
    let monitor_results = checks::run_checks(lua, &monitors, &t);
    let modes = checks::failure_modes(&monitor_results);
    if let Err(e) = api::t::set_failure_modes(lua, &t, &modes) {
        tracing_note(lua, &format!("cannot set t.failure_modes: {e}"));
    }
    let case_checks: Vec<checks::CheckRun> = tables
        .into_iter()
        .zip(infos)
        .map(|(table, info)| checks::CheckRun { table, name: info.name, critical: info.critical, monitor: false })
        .collect();
    let mut results = checks::run_checks(lua, &case_checks, &t);
    results.extend(monitor_results);
    let judged = checks::take_judge_calls(lua, started, 0.0);
    trial.state.borrow_mut().model_calls.extend(judged);
    release_db(&t, "db");
    release_db(&t, "initial");
    (results, has_monitors.then_some(modes))
}

/// A line in the trial's log (shown with its trace).
pub(crate) fn tracing_note(lua: &Lua, msg: &str) {
    if let Some(mut log) = lua.app_data_mut::<Log>() {
        log.0.push(msg.to_string());
    }
}

/// Run checks (their Lua tables, with the name and criticality each is
/// recorded under) on `t`, each under the check limits: runs, re-grades and
/// `evalua test` all grade through it (see [`checks::run_checks`]).
pub fn run_checks(lua: &Lua, tables: &[Table], infos: &[(&str, bool)], t: &Table) -> Vec<CheckResult> {
    let runs: Vec<checks::CheckRun> = tables
        .iter()
        .zip(infos)
        .map(|(table, (name, critical))| checks::CheckRun {
            table: table.clone(),
            name: name.to_string(),
            critical: *critical,
            monitor: false,
        })
        .collect();
    checks::run_checks(lua, &runs, t)
}

/// The `t` a check sees.
pub(crate) fn build_t(
    trial: &Trial<'_>,
    end: &AgentEnd,
    diff: &Diff,
    tests_ran: &Rc<RefCell<Vec<TestRun>>>,
    grading: &Phase,
) -> mlua::Result<Table> {
    let st = trial.state.borrow();
    api::t::build(
        &trial.lua,
        TParts {
            case_table: &trial.case_table,
            trial: trial.number,
            seed: trial.seed,
            answer: &end.answer,
            ended: end.ended,
            error: end.error.as_deref(),
            journal: &st,
            conn: trial.conn.clone(),
            initial: trial.initial.clone(),
            workdir: &trial.workdir,
            diff,
            tests_ran: tests_ran.clone(),
            phase: grading.clone(),
            view: view_of(trial.plan),
        },
    )
}

/// Take the database handle `key` of a trial's table (`ctx.db`, `t.db`,
/// `t.initial`) out of its userdata: its connection closes once the trial's
/// own references go, and the handle raises if anything kept it.
pub(crate) fn release_db(table: &Table, key: &str) {
    if let Ok(mlua::Value::UserData(ud)) = table.raw_get::<mlua::Value>(key) {
        let _ = ud.take::<api::db::Db>();
    }
}
