//! A recorded trial, graded again (SPEC §10): its final state rebuilt from
//! the case's templates and the changes its run kept, its journal (calls,
//! messages, outbox, usage) read back from its trace, and the plan's current
//! checks run on it through the same `prepare` → `finish` → `grade` path as a
//! live trial. Nothing plays the agent: no agent process, no model call and
//! no tool handler runs; the agent's part "ends" as the trace says it did.

use std::path::Path;
use std::rc::Rc;

use super::context::AgentEnd;
use super::lifecycle::{Ending, Recorded, Start, TrialOutput, all_errors, finish, infra, prepare};
use super::plan::{CasePlan, Plan, Position};
use super::worker;
use crate::lua::engine as lua;
use crate::record::state::{DbFormat, StateRecord};
use crate::record::{self, Journal, KeptState, Outcome, RunDir, Trace, TrialRecord};
use crate::sandbox::sqlite::SqliteDb;
use crate::sandbox::{self, changes};

/// Re-grade the recorded trial `rec` of the run dir `old` with the plan's
/// checks. A trial whose state or trace cannot be read back becomes a grader
/// error naming the file; an infrastructure error stays one (its agent never
/// ran, there is nothing to grade).
pub fn regrade(plan: &Plan, case: &CasePlan, old: &RunDir, rec: &TrialRecord) -> TrialOutput {
    if rec.outcome == Outcome::InfraError {
        let mut out = infra(case, rec.trial, rec.seed, rec.agent.clone(), rec.error.clone().unwrap_or_default());
        if let Ok(trace) = old.load_trace(rec) {
            out.trace = trace;
        }
        out.trace.record = TrialRecord { trace: record::traces::PACK.to_string(), ..rec.clone() };
        return out;
    }
    let trace = match old.load_trace(rec) {
        Ok(t) => t,
        Err(e) => return unrebuildable(plan, case, rec, None, &e),
    };
    let Some(state) = trace.state.clone() else {
        let why =
            format!("{}: no kept state for this trial (the run did not keep it)", old.path.join(&rec.trace).display());
        return unrebuildable(plan, case, rec, Some(trace), &why);
    };
    if let Some(e) = &state.error {
        let why = format!("{}: the run could not keep this trial's state: {e}", old.path.join(&rec.trace).display());
        return unrebuildable(plan, case, rec, Some(trace), &why);
    }
    let workdir = plan.workdir(case, rec.trial);
    let out = match rebuild(case, old, rec, &state, &workdir) {
        Ok(conn) => graded(plan, case, old, rec, trace, state, conn, &workdir),
        Err(e) => unrebuildable(plan, case, rec, Some(trace), &e),
    };
    if workdir.exists() {
        let _ = std::fs::remove_dir_all(&workdir);
    }
    out
}

/// The trial's final database (returned) and work dir (written to `workdir`).
fn rebuild(
    case: &CasePlan,
    old: &RunDir,
    rec: &TrialRecord,
    state: &StateRecord,
    workdir: &Path,
) -> Result<rusqlite::Connection, String> {
    let template = || match case.template.as_ref().map(|t| t.sqlite_image()) {
        Some(Some(image)) => {
            sandbox::open_copy(image, false).map_err(|e| format!("cannot copy the fixture database: {e}"))
        }
        Some(None) => Err("a PostgreSQL database cannot be rebuilt from kept changes".to_string()),
        None => sandbox::open_empty().map_err(|e| e.to_string()),
    };
    let conn = match &state.db {
        None => template()?,
        Some(d) => {
            let bytes = old.read_db_change(&rec.case, rec.trial, d).map_err(|e| e.0)?;
            let file =
                || old.path.join(format!("{}.{}", record::state_name(&rec.case, rec.trial), d.format.extension()));
            match d.format {
                DbFormat::Changeset => {
                    let conn = template()?;
                    changes::apply(&conn, &bytes)
                        .map_err(|e| format!("{}: does not apply to the case's fixture: {e}", file().display()))?;
                    conn
                }
                DbFormat::Image => sandbox::open_copy(&bytes, false)
                    .map_err(|e| format!("{}: not a SQLite image: {e}", file().display()))?,
            }
        }
    };
    if let Some(t) = &case.work {
        crate::util::tree::copy_tree(&t.dir, workdir).map_err(|e| format!("cannot copy the work-dir fixture: {e}"))?;
    }
    if !state.files.is_empty() || !state.deleted.is_empty() {
        old.restore_files(&rec.case, rec.trial, state, workdir).map_err(|e| e.0)?;
    }
    Ok(conn)
}

#[allow(clippy::too_many_arguments)]
fn graded(
    plan: &Plan,
    case: &CasePlan,
    old: &RunDir,
    rec: &TrialRecord,
    trace: Trace,
    state: StateRecord,
    conn: rusqlite::Connection,
    workdir: &Path,
) -> TrialOutput {
    let journal = Journal {
        calls: trace.calls,
        messages: trace.messages,
        outbox: trace.outbox,
        usage: trace.record.usage,
        // The judges are asked again: their earlier calls are not this grading's.
        model_calls: trace.model_calls.into_iter().filter(|m| m.by != "judge").collect(),
        ..Journal::new()
    };
    // The recorded trial's place: its case, number, and the condition (agent) it ran under.
    let pos = Position {
        case: plan.ids.get(&case.spec.id).copied().unwrap_or_default(),
        number: rec.trial,
        condition: plan.condition_of(rec.agent.as_deref()),
    };
    let trial = match prepare(
        plan,
        pos,
        rec.seed,
        workdir,
        Start::Recorded(Box::new((Rc::new(SqliteDb::wrap(conn)), journal))),
    ) {
        Ok(t) => t,
        Err(e) => {
            worker::forget(plan.id);
            let mut out = unrebuildable(plan, case, rec, None, &format!("cannot prepare the trial: {e}"));
            out.trace.state = Some(state);
            return out;
        }
    };
    let lua_state = trial.lua.clone();
    let trips = lua::limits(&lua_state).trips();
    let end = AgentEnd {
        ended: trace.record.ended,
        answer: trace.record.answer,
        error: trace.record.error,
        infra: false,
        stderr_tail: trace.stderr_tail,
    };
    let kept = KeptState::Copied { from: old.clone(), case: rec.case.clone(), trial: rec.trial, record: state.clone() };
    let recorded = Recorded { wall_ms: rec.wall_ms, log: trace.log, state, kept: Some(kept) };
    let out = finish(trial, end, Ending::Recorded(Box::new(recorded)));
    worker::retire_if_dirty(plan.id, &lua_state, trips);
    worker::keep_suite_if_unchanged(plan, &lua_state);
    out
}

/// A trial that cannot be shown to its checks: every check a grader error
/// naming why (the file that is missing, corrupt or does not apply).
fn unrebuildable(plan: &Plan, case: &CasePlan, rec: &TrialRecord, trace: Option<Trace>, why: &str) -> TrialOutput {
    let checks = all_errors(plan, case, &format!("cannot re-grade: {why}"));
    let outcome = record::outcome_of(false, &checks);
    let record = TrialRecord { outcome, checks, trace: record::traces::PACK.to_string(), ..rec.clone() };
    let mut out = infra(case, rec.trial, rec.seed, rec.agent.clone(), String::new());
    out.trace = Trace { record, ..trace.unwrap_or(out.trace) };
    out
}
