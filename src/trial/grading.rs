//! The checks on a finished trial: the case's checks and the suite's
//! monitors, on the `t` built from the trial's journal, final state and
//! diff. Every verdict goes through [`run_checks`] (runs, re-grades, `evalua
//! test`); the limits and failure modes are `checks`.

use std::cell::RefCell;
use std::rc::Rc;

use mlua::{IntoLua, Lua, Table};

use super::checks;
use super::context::*;
use crate::lua::api::{self, ctx::CtxParts, phase::Phase, t::TParts};
use crate::lua::engine::{self as lua, Log};
use crate::record::{CheckResult, Journal};
use crate::sandbox::TrialRng;
use crate::sandbox::db::{self, OpenOptions};
use crate::sandbox::tests::TestRun;
use crate::sandbox::workdir::Diff;

/// A check as the case table holds it: the name and criticality it is
/// recorded under, and whether it guards a prohibited state (a query or a
/// check the case lists in `prohibited`).
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
            prohibited: c.raw_get::<Option<String>>("kind").ok().flatten().as_deref() == Some("prohibited")
                || c.raw_get::<Option<bool>>("prohibited").ok().flatten() == Some(true),
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
            max_file: trial.plan.suite.keep.file_bytes,
        },
    )
    .and_then(|t| {
        install_replay(trial, &t, grading)?;
        Ok(t)
    })
}

/// `t:replay(calls)`: the state `calls` (a list of `{ name, args }`) leave on
/// a fresh copy of the case's database, read-only (SPEC §14's
/// `check.same_state`). Each call runs the suite's handler with a `ctx` of its
/// own on that copy, as in a trial; a call that raises changes nothing more
/// and the next one runs (τ-bench replays its gold actions so). The copy is
/// the grading's: it goes when the trial's grading ends.
///
/// `t:replay_digest(calls)`: that state's `digest()`, computed once per
/// fixture, clock and calls in the process (the gold state of a case is the
/// same for each of its trials: the tools are deterministic, which comparing
/// with a replayed state assumes anyway). Grading 200 trajectories of 50
/// tasks replays each task's gold calls once, not 200 times.
fn install_replay(trial: &Trial<'_>, t: &Table, grading: &Phase) -> mlua::Result<()> {
    let replayer = Rc::new(Replayer {
        template: trial.case.template.clone(),
        handlers: trial.handlers.clone(),
        case_table: trial.case_table.clone(),
        number: trial.number,
        seed: trial.seed,
        deadline: trial.deadline,
        workdir: trial.workdir.clone(),
        clock: trial.case.clock,
        clock_text: trial.case.clock_text.clone(),
        view: view_of(trial.plan),
        opts: OpenOptions { statement_timeout: trial.plan.suite.budget.deadline() },
        phase: grading.clone(),
    });
    let r = replayer.clone();
    let replay = trial.lua.create_function(move |lua, (_t, calls): (mlua::Value, Table)| {
        r.phase.check("t:replay")?;
        let conn = r.run(lua, &calls, "t:replay")?;
        Ok(api::db::Db::read_only(conn, "t:replay", r.phase.clone()))
    })?;
    t.raw_set("replay", replay)?;
    let r = replayer;
    let replay_digest = trial.lua.create_function(move |lua, (_t, calls): (mlua::Value, Table)| {
        r.phase.check("t:replay_digest")?;
        let rt = |m: String| mlua::Error::runtime(format!("t:replay_digest: {m}"));
        let key = match &r.template {
            Some(db::DbTemplate::Sqlite(image)) => {
                let calls = crate::lua::engine::convert::to_json(lua, &mlua::Value::Table(calls.clone()))
                    .map_err(|e| rt(format!("calls: {e}")))?;
                Some((std::sync::Arc::as_ptr(image) as usize, r.clock, calls.to_string()))
            }
            // A PostgreSQL fixture's digest is computed every time.
            _ => None,
        };
        if let Some(k) = &key
            && let Some((_, d)) = gold_digests().lock().unwrap_or_else(|e| e.into_inner()).get(k)
        {
            return Ok(d.clone());
        }
        let conn = r.run(lua, &calls, "t:replay_digest")?;
        let digest = conn.digest().map_err(|e| rt(e.to_string()))?;
        conn.close();
        if let (Some(k), Some(db::DbTemplate::Sqlite(image))) = (key, &r.template) {
            let mut cache = gold_digests().lock().unwrap_or_else(|e| e.into_inner());
            if cache.len() >= GOLD_DIGESTS {
                cache.clear();
            }
            // The entry keeps the image alive: its address names no other fixture meanwhile.
            cache.insert(k, (image.clone(), digest.clone()));
        }
        Ok(digest)
    })?;
    t.raw_set("replay_digest", replay_digest)
}

/// Gold-state digests kept at most (each entry holds a digest and a handle
/// on a fixture image that is alive anyway).
const GOLD_DIGESTS: usize = 100_000;

type GoldKey = (usize, i64, String);

/// `t:replay_digest`'s cache: (fixture image, clock, calls) → digest.
fn gold_digests()
-> &'static std::sync::Mutex<std::collections::HashMap<GoldKey, (crate::sandbox::sqlite::DbImage, String)>> {
    static CACHE: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<GoldKey, (crate::sandbox::sqlite::DbImage, String)>>,
    > = std::sync::OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// What replaying calls on a fresh copy of a trial's fixture needs.
struct Replayer {
    template: Option<db::DbTemplate>,
    handlers: Table,
    case_table: Table,
    number: u32,
    seed: u64,
    deadline: std::time::Instant,
    workdir: std::path::PathBuf,
    clock: i64,
    clock_text: String,
    view: crate::process::View,
    opts: OpenOptions,
    phase: Phase,
}

impl Replayer {
    /// `calls` run on a fresh copy of the fixture; the sealed copy.
    fn run(&self, lua: &Lua, calls: &Table, what: &str) -> mlua::Result<Rc<dyn db::Database>> {
        let rt = |m: String| mlua::Error::runtime(format!("{what}: {m}"));
        let conn = match &self.template {
            Some(t) => t.open_trial(self.opts),
            None => db::empty(false),
        }
        .map_err(rt)?;
        let journal = Rc::new(RefCell::new(Journal::new()));
        let rng = Rc::new(RefCell::new(TrialRng::new(self.seed ^ 0x5eed)));
        let ctx = api::ctx::build(
            lua,
            CtxParts {
                case_table: &self.case_table,
                trial: self.number,
                seed: self.seed,
                conn: conn.clone(),
                journal: &journal,
                rng: &rng,
                workdir: &self.workdir,
                clock: self.clock,
                clock_text: &self.clock_text,
                deadline: self.deadline,
                phase: self.phase.clone(),
                view: self.view.clone(),
            },
        )?;
        for (i, call) in calls.clone().sequence_values::<Table>().enumerate() {
            let call = call.map_err(|e| rt(format!("call {}: expected {{ name, args }}: {e}", i + 1)))?;
            let name: String = call.get("name").map_err(|e| rt(format!("call {}: name: {e}", i + 1)))?;
            let run: mlua::Function = self
                .handlers
                .get::<Option<Table>>(name.as_str())
                .ok()
                .flatten()
                .and_then(|h| h.get::<mlua::Function>("run").ok())
                .ok_or_else(|| rt(format!("call {}: the suite has no tool named '{name}'", i + 1)))?;
            // The arguments as the executor hands them over: through JSON.
            let args: mlua::Value = call.get("args")?;
            let args = match &args {
                mlua::Value::Nil => lua.create_table()?.into_lua(lua)?,
                a => {
                    let j = crate::lua::engine::convert::to_json(lua, a)
                        .map_err(|e| rt(format!("call {} ({name}): arguments: {e}", i + 1)))?;
                    crate::lua::engine::convert::to_lua(lua, &j)?
                }
            };
            if let Err(e) = run.call::<mlua::Value>((ctx.clone(), args)) {
                // Out of time or instructions: that is the check's to report.
                if lua::limits(lua).is_tripped() {
                    return Err(e);
                }
            }
        }
        release_db(&ctx, "db");
        conn.seal();
        Ok(conn)
    }
}

/// Take the database handle `key` of a trial's table (`ctx.db`, `t.db`,
/// `t.initial`) out of its userdata: its connection closes once the trial's
/// own references go, and the handle raises if anything kept it.
pub(crate) fn release_db(table: &Table, key: &str) {
    if let Ok(mlua::Value::UserData(ud)) = table.raw_get::<mlua::Value>(key) {
        let _ = ud.take::<api::db::Db>();
    }
}
