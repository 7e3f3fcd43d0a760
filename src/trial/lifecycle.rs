//! One trial, start to finish: prepared (a fresh environment in the
//! worker's Lua state, a fresh sandbox), the agent driven by whatever the
//! caller passes (the agent layer), then graded (`grading`) and recorded:
//! its record, trace, test rows and kept state ([`TrialOutput`]).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

use mlua::Table;
use serde_json::Value as Json;

use super::plan::{CasePlan, Plan, Position};
use super::user::User;

use super::context::*;
use super::grading::*;
use super::worker;
use crate::executor::Executor;
use crate::lua::api::{self, ctx::CtxParts, phase::Phase};
use crate::lua::engine::{self as lua, Log};
use crate::record::state::{DbChangeRecord, DbFormat, OwnedDir};
use crate::record::{self, CallCounts, CheckResult, Ended, Journal, KeptState, StateRecord, Trace, TrialRecord};
use crate::sandbox::changes::{DbChange, Recorder};
use crate::sandbox::db::{self, Database, LazyDb, OpenOptions};
use crate::sandbox::tests::TestRun;
use crate::sandbox::workdir::{self, Diff};
use crate::sandbox::{self, TrialRng};
use crate::spec::AgentSpec;
use crate::util::cancel;
use crate::util::digest::sha256_hex;

/// One `check.tests` test's result in a trial, for the run's per-test report.
#[derive(Debug, Clone)]
pub struct TestRow {
    /// `FAIL_TO_PASS` or `PASS_TO_PASS`.
    pub group: &'static str,
    pub id: String,
    pub passed: bool,
}

pub struct TrialOutput {
    /// The trial's trace, its record (the line of trials.jsonl) within.
    pub trace: Trace,
    pub tests: Vec<TestRow>,
    /// What the trial changed, on its way to the run dir (SPEC §10); None when nothing is kept.
    pub state: Option<KeptState>,
}

/// Run the trial at `pos` of the plan (its case, number and condition), its
/// agent driven by `drive`. Never panics on user input: every failure
/// becomes a recorded outcome.
pub fn run(plan: &Plan, pos: Position, drive: impl FnOnce(&Trial<'_>) -> AgentEnd) -> TrialOutput {
    let case = plan.case_at(pos);
    run_in(plan, pos, plan.workdir(case, pos.number), Start::Fresh, drive)
}

/// [`run`] with the trial's work dir and how it starts given (a re-executed
/// recorded item: a fresh sandbox, no user, the recorded conversation).
pub(crate) fn run_in(
    plan: &Plan,
    pos: Position,
    workdir: PathBuf,
    start: Start,
    drive: impl FnOnce(&Trial<'_>) -> AgentEnd,
) -> TrialOutput {
    let (case, number) = (plan.case_at(pos), pos.number);
    let seed = sandbox::trial_seed(plan.seed, &case.spec.id, number);
    let started = Instant::now();
    let out = match prepare(plan, pos, seed, &workdir, start) {
        Ok(trial) => {
            let _close = CloseDbs(vec![trial.conn.clone()], Some(trial.initial.clone()));
            let lua = trial.lua.clone();
            let trips = lua::limits(&lua).trips();
            // Every change the agent's tools make to the database, from here on
            // (a SQLite session; a PostgreSQL run keeps no state: plan.keep_state is false).
            let conn = trial.conn.clone();
            let recorder = plan.keep_state.then(|| match conn.sqlite() {
                Some(c) => Recorder::start(c),
                None => Err("only a SQLite database's changes can be kept".to_string()),
            });
            let mut end = drive(&trial);
            // Whatever the agent or a handler stashed of `env`, `ctx` or `ctx.db` stops working here.
            trial.agent_phase.end();
            let failed = trial.state.borrow_mut().infra.take();
            if let Some(e) = failed {
                // A model the harness needed (a simulated user) failed: not the
                // agent's fault, but what the agent did so far is graded.
                end = AgentEnd { stderr_tail: end.stderr_tail, ..AgentEnd::infra_in(&trial.state, e) };
            }
            let db = recorder.map(|r| r.and_then(Recorder::finish));
            // Stopped while it ran (the agent's part or its grading): interrupted, never graded.
            if cancel::requested() {
                end = AgentEnd { stderr_tail: end.stderr_tail, answer: end.answer, ..AgentEnd::interrupted() };
            }
            let out = finish(trial, end, Ending::Live { started, db });
            worker::retire_if_dirty(plan.id, &lua, trips);
            worker::keep_suite_if_unchanged(plan, &lua);
            out
        }
        Err(e) => {
            worker::forget(plan.id);
            let mut out = infra(case, number, seed, plan.recorded_agent(pos, None), e);
            out.trace.record.perturbation = plan.condition_for(pos).perturbation.clone();
            out
        }
    };
    // After the checks have read it.
    if workdir.exists() {
        let _ = std::fs::remove_dir_all(&workdir);
    }
    if cancel::requested() && out.trace.record.ended != Ended::Interrupted {
        // Stopped while the checks ran, or while the trial was being prepared
        // (a stopped suite evaluation): what it says is not to be trusted.
        return interrupted_after_grading(out);
    }
    out
}

/// A trial the stop request cut short after its agent's part (in grading) or
/// before it (in preparation): recorded as interrupted, its checks dropped
/// (they were stopped, not decided).
pub(crate) fn interrupted_after_grading(mut out: TrialOutput) -> TrialOutput {
    let end = AgentEnd::interrupted();
    let r = &mut out.trace.record;
    r.ended = Ended::Interrupted;
    r.outcome = record::Outcome::InfraError;
    r.checks.clear();
    r.error = end.error;
    out.tests.clear();
    out
}

pub(crate) fn infra(case: &CasePlan, number: u32, seed: u64, agent: Option<String>, error: String) -> TrialOutput {
    let record = TrialRecord {
        agent,
        perturbation: None,
        case: case.spec.id.clone(),
        trial: number,
        seed,
        // The rest as a trial that never ran: outcome infra_error, ended not_started.
        error: Some(error.clone()),
        infra_error: Some(error),
        trace: record::traces::PACK.to_string(),
        ..Default::default()
    };
    // The case could not be materialised: its input is in the suite file.
    let trace = Trace { started_at: Some(jiff::Timestamp::now().to_string()), ..Trace::of(record) };
    TrialOutput { trace, tests: Vec::new(), state: None }
}

/// Where a trial's final state and journal come from.
pub(crate) enum Start {
    /// A fresh copy of the case's templates; the agent is about to act.
    Fresh,
    /// A fresh copy of the case's templates; a recorded item's calls are about
    /// to run again (`reexec`): no user speaks, the conversation is the recorded one.
    Replay,
    /// A recorded trial's rebuilt final state (its database; its work dir is
    /// already in place) and its journal, read back from its trace.
    Recorded(Box<(Rc<dyn Database>, Journal)>),
}

pub(crate) fn prepare<'p>(
    plan: &'p Plan,
    pos: Position,
    seed: u64,
    workdir: &Path,
    start: Start,
) -> Result<Trial<'p>, String> {
    let (case, number) = (plan.case_at(pos), pos.number);
    let lua = worker::worker_state(plan)?;
    if let Some(mut data) = lua.app_data_mut::<lua::StateData>() {
        data.config.clock = case.clock;
    }
    let (suite_t, case_table) = worker::case_table(&lua, plan, case)?;
    // A perturbed trial sees its case as the perturbation changes it (SPEC §17).
    let case_table = match plan.condition_for(pos).perturbation.as_deref() {
        Some(name) => super::perturb::case_table(&lua, &suite_t, &case_table, name)?,
        None => case_table,
    };
    let input: String = case_table.raw_get("input").map_err(|e| format!("case '{}': input: {e}", case.spec.id))?;
    let handlers: Table = suite_t.get("_tool_index").map_err(|e| e.to_string())?;
    let agent_choice = plan.agent_for(pos);
    let agent: Table = match case_table.get::<Option<Table>>("agent").map_err(|e| e.to_string())? {
        Some(a) => a,
        None => worker::suite_agent(&suite_t, agent_choice.name)?,
    };

    // Lua's own math.random follows the trial's seed too.
    worker::seed_math_random(&lua, seed)?;

    let recorded = matches!(start, Start::Recorded(_) | Start::Replay);
    let mut close = CloseDbs(Vec::new(), None);
    let (conn, journal) = match start {
        Start::Fresh | Start::Replay => {
            let conn = match &case.template {
                Some(t) => t.open_trial(OpenOptions { statement_timeout: plan.suite.budget.deadline() })?,
                None => db::empty(false)?,
            };
            // From here on, an early return closes the copy (a PostgreSQL one is dropped).
            close.0.push(conn.clone());
            if let Some(t) = &case.work {
                crate::util::tree::copy_tree(&t.dir, workdir)
                    .map_err(|e| format!("cannot copy the work-dir fixture: {e}"))?;
            }
            (conn, Journal::new())
        }
        Start::Recorded(rec) => *rec,
    };
    let state = Rc::new(RefCell::new(journal));
    let rng = Rc::new(RefCell::new(TrialRng::new(seed ^ 0x5eed)));
    // The agent's time starts once its tree is ready.
    let deadline = plan.suite.budget.deadline_from(Instant::now());
    let agent_phase = Phase::new();
    let ctx = api::ctx::build(
        &lua,
        CtxParts {
            case_table: &case_table,
            trial: number,
            seed,
            conn: conn.clone(),
            journal: &state,
            rng: &rng,
            workdir,
            clock: case.clock,
            clock_text: &case.clock_text,
            deadline,
            phase: agent_phase.clone(),
            view: view_of(plan),
        },
    )
    .map_err(|e| e.to_string())?;
    // A recorded trial's user already spoke (its turns are in the journal).
    let user = if recorded { User::None } else { User::new(case.spec.user.as_deref(), seed)? };
    let executor = Rc::new(Executor {
        tools: case.tools.clone(),
        budget: plan.suite.budget.clone(),
        journal: state.clone(),
        handlers: handlers.clone(),
        ctx: ctx.clone(),
        faults: crate::executor::fault::Injector::new(case.faults.clone(), seed),
        deadline,
    });
    let mut input = input;
    if !recorded {
        match &user {
            // A simulated user that opens the conversation speaks before an
            // agent that converses starts: its answer is the agent's input.
            // Its failure is the harness's: the agent never got its chance.
            User::Llm(u)
                if u.opening.is_some()
                    && matches!(agent_choice.spec, Some(AgentSpec::Model(_) | AgentSpec::Command(_))) =>
            {
                input = u.open(&state, deadline)?;
            }
            _ => state.borrow_mut().messages.push(record::Message {
                role: "user".into(),
                content: input.clone(),
                call_id: None,
            }),
        }
    }
    close.disarm(); // the trial owns the copy now: `run` closes it
    Ok(Trial {
        plan,
        case,
        number,
        position: pos,
        seed,
        lua,
        state,
        executor,
        case_table,
        input,
        handlers,
        agent,
        agent_choice,
        ctx,
        rng,
        deadline,
        workdir: workdir.to_path_buf(),
        user: Rc::new(user),
        suite: suite_t,
        conn,
        initial: Rc::new(LazyDb::new(case.template.clone())),
        agent_phase,
    })
}

/// How the trial's agent part ended, for [`finish`].
pub(crate) enum Ending {
    /// The agent just ran: time it from `started`, and keep what it changed
    /// (`db`: the session's changes; None under `--no-state`).
    Live { started: Instant, db: Option<Result<DbChange, String>> },
    /// A recorded trial re-graded: its time, log and kept state as recorded.
    Recorded(Box<Recorded>),
}

/// A re-graded trial's recorded time, log and kept state.
pub(crate) struct Recorded {
    pub(crate) wall_ms: f64,
    pub(crate) log: Vec<String>,
    pub(crate) state: StateRecord,
    pub(crate) kept: Option<KeptState>,
}

/// The trial's change to its work tree (`t.diff`), against the case's template.
pub(crate) fn work_diff(trial: &Trial<'_>) -> Result<Diff, String> {
    let before = trial.case.work.as_ref().map(|w| w.dir.as_path());
    if before.is_none() && !trial.workdir.exists() {
        return Ok(Diff::default());
    }
    workdir::diff(before, &trial.workdir, trial.plan.suite.keep).map_err(|e| format!("t.diff: {e}"))
}

/// The simulated user's adherence judge on this trial's conversation (SPEC
/// §18), its model calls recorded as the evaluation's; None without one.
fn judge_user(trial: &Trial<'_>, end: &AgentEnd) -> Option<crate::judge::verdict::Conclusion> {
    let Some(crate::spec::UserSpec::Llm(u)) = trial.case.spec.user.as_deref() else { return None };
    let judge = u.adherence.as_deref().filter(|_| !end.infra)?;
    let cache = crate::judge::cache::Cache::of(&trial.plan.suite.dir, trial.plan.switches.judge_cache);
    let messages = trial.state.borrow().messages.clone();
    let started = std::time::Instant::now();
    let offset = trial.state.borrow().elapsed_ms();
    let c = super::adherence::judge_conduct(u, judge, &messages, &cache);
    let mut st = trial.state.borrow_mut();
    for j in &c.calls {
        let mut call = j.call.clone();
        call.started_ms = offset + j.started.saturating_duration_since(started).as_secs_f64() * 1000.0;
        st.model_calls.push(call);
    }
    Some(c)
}

/// Grade the finished trial and build its record and trace.
pub(crate) fn finish(trial: Trial<'_>, end: AgentEnd, ending: Ending) -> TrialOutput {
    let lua = &trial.lua;
    let wall_ms = match &ending {
        Ending::Live { started, .. } => {
            let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
            let mut st = trial.state.borrow_mut();
            st.usage.wall_ms = wall_ms;
            if !end.answer.is_empty() || end.ended == Ended::Final {
                st.messages.push(record::Message { role: "agent".into(), content: end.answer.clone(), call_id: None });
            }
            wall_ms
        }
        Ending::Recorded(r) => r.wall_ms,
    };
    let tests_ran = Rc::new(RefCell::new(Vec::new()));
    let diff = if end.infra { Ok(Diff::default()) } else { work_diff(&trial) };
    let grading = Phase::new();
    let (checks, failure_modes) =
        if end.infra { (Vec::new(), None) } else { grade(&trial, &end, &diff, &tests_ran, &grading) };
    // `t` and its handles stop working: a later trial cannot read this one's state through a stash.
    grading.end();
    let rules = record::EndRules {
        abnormal_accepted: trial.case.spec.accept_abnormal_end.is_some(),
        should_abstain: trial.case.spec.should_abstain,
    };
    let outcome = record::outcome_after(end.infra, end.ended, rules, &checks);
    let mut log = lua.app_data_ref::<Log>().map(|l| l.0.clone()).unwrap_or_default();
    let (state, kept) = match ending {
        Ending::Live { db: Some(db), .. } if !end.infra => {
            let (record, kept) = keep(&trial, db, &diff);
            (Some(record), Some(kept))
        }
        Ending::Live { .. } => (None, None),
        Ending::Recorded(r) => {
            let Recorded { log: old, state, kept, .. } = *r;
            log = old.into_iter().chain(log.into_iter().map(|l| format!("[regrade] {l}"))).collect();
            (Some(state), kept)
        }
    };
    let judged = judge_user(&trial, &end);
    let st = trial.state.borrow();
    let trial_safety = trial.plan.safety.then(|| safety(&trial, &checks, &st.calls));
    let published = super::published::of(
        &st.calls,
        |name| trial.case.tools.iter().find(|t| t.spec.name == name).map(|t| &t.spec),
        &trial.plan.suite.publish.contamination,
    );
    let mut record = TrialRecord {
        // Which of the suite's named agents played (none when the suite names none).
        agent: trial.plan.recorded_agent(trial.position, trial.agent_choice.name),
        perturbation: trial.plan.condition_for(trial.position).perturbation.clone(),
        case: trial.case.spec.id.clone(),
        trial: trial.number,
        seed: trial.seed,
        outcome,
        ended: end.ended,
        checks,
        calls: CallCounts::of(&st.calls),
        usage: st.usage.clone(),
        wall_ms,
        infra_error: end.infra_error(),
        answer: end.answer,
        error: end.error,
        trace: record::traces::PACK.to_string(),
        failure_modes,
        tool_spans: record::ToolSpan::of(&st.calls),
        first_failure: record::FirstFailure::of(&st.calls, &st.model_calls),
        source: None,
        safety: trial_safety,
        ..Default::default()
    };
    record.publish(published);
    // The simulated user on trial, and who is to blame (SPEC §18).
    record.user = super::adherence::user_record(trial.case.spec.user.as_deref(), &st.messages, judged.as_ref());
    record.blame = super::adherence::blame(&record);
    // What the evaluation's own model calls cost, apart from the agent's.
    record.evaluation_cost_usd =
        st.model_calls.iter().filter(|c| c.by == "user" || c.by == "judge").filter_map(|c| c.cost_usd).sum();
    let started_at = std::time::SystemTime::now()
        .checked_sub(st.started.elapsed())
        .and_then(|t| jiff::Timestamp::try_from(t).ok())
        .map(|t| t.to_string());
    let trace = Trace {
        record,
        input: trial.input.clone(),
        messages: st.messages.clone(),
        calls: st.calls.clone(),
        outbox: st.outbox.clone(),
        log,
        stderr_tail: end.stderr_tail,
        model_calls: st.model_calls.clone(),
        started_at,
        state,
    };
    let tests = test_rows(&trial.case.spec, &tests_ran.borrow());
    drop(st);
    // The trial's database goes now, not when Lua's collector gets to the
    // handle: a collector that runs once per heap doubling would otherwise
    // hold a connection per trial in between (100 KB each, gigabytes at
    // 100,000 cases). A handle kept past its trial refuses to run.
    release_db(&trial.ctx, "db");
    TrialOutput { trace, tests, state: kept }
}

/// What a finished trial changed, to keep (SPEC §10): the database's
/// changeset (or whole image) and the work dir's added, modified and deleted
/// paths. The final work dir is moved aside (owned by the returned state)
/// until the run dir has its files.
pub(crate) fn keep(
    trial: &Trial<'_>,
    db: Result<DbChange, String>,
    diff: &Result<Diff, String>,
) -> (StateRecord, KeptState) {
    let mut record = StateRecord::default();
    let mut errors = Vec::new();
    let bytes = match db {
        Ok(DbChange::Unchanged) => None,
        Ok(DbChange::Changeset(b)) => Some((DbFormat::Changeset, b)),
        Ok(DbChange::Image(b)) => Some((DbFormat::Image, b)),
        Err(e) => {
            errors.push(format!("database: {e}"));
            None
        }
    };
    if let Some((format, b)) = &bytes {
        record.db = Some(DbChangeRecord { format: *format, sha256: sha256_hex(b), bytes: b.len() as u64 });
    }
    let mut owned = None;
    match diff.as_ref().map_err(|e| e.clone()).and_then(|d| {
        workdir::kept_changes(d, &trial.workdir, trial.plan.suite.keep)
            .map_err(|e| format!("cannot read the final work dir: {e}"))
    }) {
        Ok((files, deleted)) => {
            if files.iter().any(|f| f.symlink.is_none()) {
                let mut aside = trial.workdir.clone().into_os_string();
                aside.push(".kept");
                let aside = PathBuf::from(aside);
                match std::fs::rename(&trial.workdir, &aside) {
                    Ok(()) => owned = Some(OwnedDir(aside)),
                    Err(e) => errors.push(format!("work dir: cannot set the final tree aside: {e}")),
                }
            }
            record.files = files;
            record.deleted = deleted;
        }
        Err(e) => errors.push(format!("work dir: {e}")),
    }
    if !errors.is_empty() {
        record.error = Some(errors.join("; "));
    }
    let kept = KeptState::Fresh { record: record.clone(), db: bytes.map(|(_, b)| b), workdir: owned };
    (record, kept)
}

/// The per-test rows of a recorded trial (a trial a resumed run kept), from
/// its `check.tests` checks' evidence.
pub fn test_rows_of(spec: &crate::spec::CaseSpec, checks: &[CheckResult]) -> Vec<TestRow> {
    #[derive(serde::Deserialize)]
    struct Evidence {
        #[serde(default)]
        tests: Vec<Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        id: String,
        group: String,
        passed: bool,
    }
    let mut rows = Vec::new();
    for info in &spec.tests {
        let Some(r) = checks.iter().find(|r| r.name == info.name) else { continue };
        let Ok(ev) = serde_json::from_value::<Evidence>(r.evidence.clone()) else { continue };
        for e in ev.tests {
            let group = if e.group == "FAIL_TO_PASS" { "FAIL_TO_PASS" } else { "PASS_TO_PASS" };
            rows.push(TestRow { group, id: e.id, passed: e.passed });
        }
    }
    rows
}

/// The trial as safety evaluation sees it: the legitimate task's checks,
/// the prohibited ones, and the calls of tools forbidden in attacks.
pub(crate) fn safety(trial: &Trial<'_>, checks: &[CheckResult], calls: &[record::CallRecord]) -> record::TrialSafety {
    let (_, infos) = case_checks(&trial.case_table);
    let prohibited = |i: usize| infos.get(i).is_some_and(|c| c.prohibited);
    let forbidden: Vec<&str> =
        trial.plan.suite.tools.iter().filter(|t| t.forbidden_in_attack).map(|t| t.name.as_str()).collect();
    let requested: Vec<&record::CallRecord> = calls.iter().filter(|c| forbidden.contains(&c.name.as_str())).collect();
    record::TrialSafety {
        attack: trial.case.spec.is_attack(),
        task_passed: checks
            .iter()
            .enumerate()
            .filter(|(i, _)| !prohibited(*i))
            .all(|(_, c)| c.passed == Some(true) || c.skipped),
        attack_succeeded: checks.iter().enumerate().any(|(i, c)| prohibited(i) && c.passed == Some(false)),
        forbidden_requested: requested.len() as u32,
        forbidden_denied: requested.iter().filter(|c| c.status == record::CallStatus::Denied).count() as u32,
    }
}

/// The tests `t.run_tests` ran, each with its `check.tests` group.
pub(crate) fn test_rows(spec: &crate::spec::CaseSpec, ran: &[TestRun]) -> Vec<TestRow> {
    let mut rows = Vec::new();
    for tests in spec.tests.iter().map(|c| &c.spec) {
        let groups = [("FAIL_TO_PASS", &tests.fail_to_pass), ("PASS_TO_PASS", &tests.pass_to_pass)];
        for (group, ids) in groups {
            for id in ids {
                if let Some(r) = ran.iter().find(|r| &r.id == id) {
                    rows.push(TestRow { group, id: id.clone(), passed: r.passed });
                }
            }
        }
    }
    rows
}

/// Every check of the case a grader error with this message (the trial
/// could not be rebuilt or shown to its checks). A case without checks gets
/// one result, `regrade`, so the trial still counts as a grader error. The
/// checks' names come from the case as the worker materialises it; a case
/// that cannot be materialised gets the one `regrade` result too.
pub(crate) fn all_errors(plan: &Plan, case: &CasePlan, msg: &str) -> Vec<CheckResult> {
    let infos = worker::worker_state(plan)
        .and_then(|lua| {
            let table = worker::case_table(&lua, plan, case).map(|(_, t)| t);
            worker::keep_suite_if_unchanged(plan, &lua);
            table
        })
        .map(|t| case_checks(&t).1)
        .unwrap_or_default();
    let error = |name: &str, critical: bool| CheckResult {
        name: name.to_string(),
        passed: None,
        critical,
        evidence: Json::Null,
        error: Some(msg.to_string()),
        ..Default::default()
    };
    if infos.is_empty() {
        return vec![error("regrade", false)];
    }
    infos.iter().map(|c| error(&c.name, c.critical)).collect()
}

/// A trial the harness itself failed to run (a bug in evalua): recorded as an
/// infrastructure error so the run goes on and nothing is lost.
pub fn internal_error(plan: &Plan, pos: Position, msg: String) -> TrialOutput {
    let case = &plan.cases[pos.case];
    let seed = sandbox::trial_seed(plan.seed, &case.spec.id, pos.number);
    let mut out =
        infra(case, pos.number, seed, plan.recorded_agent(pos, None), format!("internal error in evalua: {msg}"));
    out.trace.record.perturbation = plan.condition_for(pos).perturbation.clone();
    out
}
