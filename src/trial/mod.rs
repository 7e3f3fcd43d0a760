//! One trial, start to finish: a fresh environment in the worker's Lua
//! state, a fresh sandbox, the agent acting through the executor (driven by
//! whatever the caller passes: the agent layer), then the checks on the final
//! state and trajectory.
//!
//! Nothing here is shared with another trial: the Lua environment, the
//! database copy, the work dir, the RNG and the outbox are all the trial's own.

pub mod plan;
pub mod user;
pub mod worker;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use mlua::{Lua, MultiValue, Table, Value};
use serde_json::{Value as Json, json};

pub use plan::{CasePlan, Plan};
use user::User;

use crate::executor::Executor;
use crate::lua::api::{self, ctx::CtxParts, marks, phase::Phase, t::TParts};
use crate::lua::engine::{self as lua, Log, Segment, convert, limits::Guarded};
use crate::record::{self, CallCounts, CheckResult, Ended, Journal, Trace, TrialRecord};
use crate::sandbox::tests::TestRun;
use crate::sandbox::{self, TrialRng};

/// Limits on one check.
const CHECK_INSTRUCTIONS: u64 = 50_000_000;
const CHECK_SECONDS: u64 = 10;

/// The trial as the agent's driver sees it: state, executor, and the Lua
/// tables tools run against.
pub struct Trial<'p> {
    pub plan: &'p Plan,
    pub case: &'p CasePlan,
    pub number: u32,
    pub seed: u64,
    pub lua: Lua,
    pub state: Rc<RefCell<Journal>>,
    pub executor: Rc<Executor>,
    pub case_table: Table,
    pub handlers: Table,
    /// The agent declaration (`evalua.agent.*`) in this state: the case's or the suite's.
    pub agent: Table,
    pub ctx: Table,
    pub rng: Rc<RefCell<TrialRng>>,
    pub deadline: Instant,
    pub workdir: PathBuf,
    /// The case's user: scripted turns or a simulated user (`evalua.user.*`).
    pub user: Rc<User>,
    /// The Lua database connection behind `ctx.db` (and, read-only, `t.db`).
    conn: Rc<rusqlite::Connection>,
    /// The agent's turn: `env`, `ctx` and `ctx.db` die when it ends.
    pub agent_phase: Phase,
}

/// What the suite's processes see in the sandbox besides their work dir:
/// `sandbox.expose`; never the suite's folder nor the run's scratch folder
/// through a file their command line names.
pub fn view_of(plan: &Plan) -> crate::process::View {
    crate::process::View {
        read_only: plan.suite.expose.clone(),
        writable: Vec::new(),
        no_network: !plan.suite.network,
        protect: vec![plan.suite.dir.clone(), plan.scratch.path().to_path_buf()],
    }
}

/// The agent speaks to the user: a turn, counted against `max_turns`.
/// Returns the user's reply (the next of the case's `evalua.user.script`
/// turns, or the simulated user's answer), or Err(why) when the turn budget
/// is spent or the simulated user failed (then `state.infra` is set).
pub fn agent_turn(
    state: &RefCell<Journal>,
    max_turns: Option<u32>,
    user: &User,
    deadline: Instant,
    text: String,
) -> Result<Option<String>, String> {
    let mut st = state.borrow_mut();
    if let Some(max) = max_turns
        && st.usage.turns >= max
    {
        let hit = record::BudgetHit::Turns(max);
        let why = hit.to_string();
        st.budget_hit = Some(hit);
        return Err(why);
    }
    st.usage.turns += 1;
    let said = st.messages.iter().filter(|m| m.role == "agent").count();
    st.messages.push(record::Message { role: "agent".into(), content: text, call_id: None });
    let reply = match user {
        User::Script(turns) => turns.get(said).cloned(),
        User::None => None,
        User::Llm(u) => {
            drop(st);
            let r = u.reply(state, deadline).inspect_err(|e| state.borrow_mut().infra = Some(e.clone()))?;
            st = state.borrow_mut();
            r
        }
    };
    if let Some(r) = &reply {
        st.messages.push(record::Message { role: "user".into(), content: r.clone(), call_id: None });
    }
    Ok(reply)
}

impl Trial<'_> {
    /// One tool call through the trial's executor (validated, authorised, run, recorded).
    pub fn call_tool(&self, id: Option<String>, name: &str, args: Json) -> crate::executor::Reply {
        self.executor.call(&self.lua, id, name, args)
    }

    /// Whether the case has a (scripted or simulated) user to talk to.
    pub fn has_user(&self) -> bool {
        self.user.is_some()
    }

    pub fn agent_says(&self, text: String) -> Result<Option<String>, String> {
        agent_turn(&self.state, self.plan.suite.budget.max_turns, &self.user, self.deadline, text)
    }

    /// The budget spent so far, if any (the agent must then stop).
    pub fn budget_hit(&self) -> Option<record::BudgetHit> {
        self.state.borrow().budget_hit.clone()
    }
}

/// How the agent's part ended.
pub struct AgentEnd {
    pub ended: Ended,
    pub answer: String,
    pub error: Option<String>,
    /// The agent never got its chance (infrastructure error).
    pub infra: bool,
    pub stderr_tail: Option<String>,
}

impl AgentEnd {
    /// The agent is still running (or ended with its final answer).
    pub fn running() -> Self {
        AgentEnd { ended: Ended::Final, answer: String::new(), error: None, infra: false, stderr_tail: None }
    }
    /// The agent never got its chance: an infrastructure error.
    pub fn infra(error: String) -> Self {
        AgentEnd { ended: Ended::NotStarted, error: Some(error), infra: true, ..Self::running() }
    }
    /// A budget was spent.
    pub fn budget(why: &impl std::fmt::Display) -> Self {
        AgentEnd { ended: Ended::Budget, error: Some(format!("budget spent: {why}")), ..Self::running() }
    }
}

/// One `check.tests` test's result in a trial, for the run's per-test report.
#[derive(Debug, Clone)]
pub struct TestRow {
    /// `FAIL_TO_PASS` or `PASS_TO_PASS`.
    pub group: &'static str,
    pub id: String,
    pub passed: bool,
}

pub struct TrialOutput {
    pub record: TrialRecord,
    pub trace: Trace,
    pub tests: Vec<TestRow>,
}

/// Run one trial, its agent driven by `drive`. Never panics on user input:
/// every failure becomes a recorded outcome.
pub fn run(plan: &Plan, case: &CasePlan, number: u32, drive: impl FnOnce(&Trial<'_>) -> AgentEnd) -> TrialOutput {
    let seed = sandbox::trial_seed(plan.seed, &case.spec.id, number);
    let started = Instant::now();
    let workdir = plan.workdir(case, number);
    let out = match prepare(plan, case, number, seed, &workdir) {
        Ok(trial) => {
            let lua = trial.lua.clone();
            let trips = lua::limits(&lua).trips();
            let mut end = drive(&trial);
            // Whatever the agent or a handler stashed of `env`, `ctx` or `ctx.db` stops working here.
            trial.agent_phase.end();
            if let Some(e) = trial.state.borrow_mut().infra.take() {
                // A model the harness needed (a simulated user) failed: not the agent's fault.
                end = AgentEnd { stderr_tail: end.stderr_tail, ..AgentEnd::infra(e) };
            }
            let out = finish(trial, end, started);
            worker::retire_if_dirty(&lua, trips);
            worker::keep_suite_if_unchanged(&lua);
            out
        }
        Err(e) => {
            worker::forget();
            infra(case, number, seed, e)
        }
    };
    // After the checks have read it.
    if workdir.exists() {
        let _ = std::fs::remove_dir_all(&workdir);
    }
    out
}

fn infra(case: &CasePlan, number: u32, seed: u64, error: String) -> TrialOutput {
    let record = TrialRecord {
        case: case.spec.id.clone(),
        trial: number,
        seed,
        outcome: record::Outcome::InfraError,
        ended: Ended::NotStarted,
        checks: Vec::new(),
        calls: CallCounts::default(),
        usage: Default::default(),
        wall_ms: 0.0,
        answer: String::new(),
        error: Some(error.clone()),
        trace: record::trace_name(&case.spec.id, number),
    };
    let trace = Trace {
        case: case.spec.id.clone(),
        trial: number,
        seed,
        input: case.spec.input.clone(),
        outcome: record.outcome,
        ended: record.ended,
        answer: String::new(),
        error: Some(error),
        messages: Vec::new(),
        calls: Vec::new(),
        outbox: Vec::new(),
        usage: Default::default(),
        checks: Vec::new(),
        log: Vec::new(),
        stderr_tail: None,
        model_calls: Vec::new(),
    };
    TrialOutput { record, trace, tests: Vec::new() }
}

fn prepare<'p>(
    plan: &'p Plan,
    case: &'p CasePlan,
    number: u32,
    seed: u64,
    workdir: &Path,
) -> Result<Trial<'p>, String> {
    let lua = worker::worker_state(plan)?;
    if let Some(mut data) = lua.app_data_mut::<lua::StateData>() {
        data.config.clock = case.clock;
    }
    let (suite_t, log) = worker::evaluated_suite(&lua, plan, case)?;
    lua.set_app_data(Log(log));
    let case_table: Table = suite_t
        .get::<Table>("_case_index")
        .and_then(|t| t.get(case.spec.id.as_str()))
        .map_err(|e| format!("case '{}' vanished when the suite was re-run: {e}", case.spec.id))?;
    let handlers: Table = suite_t.get("_tool_index").map_err(|e| e.to_string())?;
    let agent: Table = match case_table.get::<Option<Table>>("agent").map_err(|e| e.to_string())? {
        Some(a) => a,
        None => suite_t.get("agent").map_err(|e| format!("the suite has no agent: {e}"))?,
    };

    // Lua's own math.random follows the trial's seed too.
    worker::seed_math_random(&lua, seed)?;

    let conn = match &case.template {
        Some(image) => {
            Rc::new(sandbox::open_copy(image, false).map_err(|e| format!("cannot copy the fixture database: {e}"))?)
        }
        None => Rc::new(sandbox::open_empty().map_err(|e| e.to_string())?),
    };
    let state = Rc::new(RefCell::new(Journal::new()));
    let rng = Rc::new(RefCell::new(TrialRng::new(seed ^ 0x5eed)));
    if let Some(t) = &case.work {
        crate::util::tree::copy_tree(&t.dir, workdir).map_err(|e| format!("cannot copy the work-dir fixture: {e}"))?;
    }
    // The agent's time starts once its tree is ready.
    let deadline = Instant::now() + plan.suite.budget.deadline();
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
    let user = User::new(case.spec.user.as_ref(), seed)?;
    let executor = Rc::new(Executor {
        tools: case.tools.clone(),
        budget: plan.suite.budget.clone(),
        journal: state.clone(),
        handlers: handlers.clone(),
        ctx: ctx.clone(),
    });
    state.borrow_mut().messages.push(record::Message {
        role: "user".into(),
        content: case.spec.input.clone(),
        call_id: None,
    });
    Ok(Trial {
        plan,
        case,
        number,
        seed,
        lua,
        state,
        executor,
        case_table,
        handlers,
        agent,
        ctx,
        rng,
        deadline,
        workdir: workdir.to_path_buf(),
        user: Rc::new(user),
        conn,
        agent_phase,
    })
}

/// Grade the finished trial and build its record and trace.
fn finish(trial: Trial<'_>, end: AgentEnd, started: Instant) -> TrialOutput {
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    let lua = &trial.lua;
    {
        let mut st = trial.state.borrow_mut();
        st.usage.wall_ms = wall_ms;
        if !end.answer.is_empty() || end.ended == Ended::Final {
            st.messages.push(record::Message { role: "agent".into(), content: end.answer.clone(), call_id: None });
        }
    }
    let tests_ran = Rc::new(RefCell::new(Vec::new()));
    let grading = Phase::new();
    let checks = if end.infra { Vec::new() } else { grade(&trial, &end, &tests_ran, &grading) };
    // `t` and its handles stop working: a later trial cannot read this one's state through a stash.
    grading.end();
    let outcome = record::outcome_of(end.infra, &checks);
    let st = trial.state.borrow();
    let log = lua.app_data_ref::<Log>().map(|l| l.0.clone()).unwrap_or_default();
    let record = TrialRecord {
        case: trial.case.spec.id.clone(),
        trial: trial.number,
        seed: trial.seed,
        outcome,
        ended: end.ended,
        checks: checks.clone(),
        calls: CallCounts::of(&st.calls),
        usage: st.usage.clone(),
        wall_ms,
        answer: end.answer.clone(),
        error: end.error.clone(),
        trace: record::trace_name(&trial.case.spec.id, trial.number),
    };
    let trace = Trace {
        case: record.case.clone(),
        trial: trial.number,
        seed: trial.seed,
        input: trial.case.spec.input.clone(),
        outcome,
        ended: end.ended,
        answer: end.answer,
        error: end.error,
        messages: st.messages.clone(),
        calls: st.calls.clone(),
        outbox: st.outbox.clone(),
        usage: st.usage.clone(),
        checks,
        log,
        stderr_tail: end.stderr_tail,
        model_calls: st.model_calls.clone(),
    };
    let tests = test_rows(&trial.case.spec, &tests_ran.borrow());
    TrialOutput { record, trace, tests }
}

/// The tests `t.run_tests` ran, each with its `check.tests` group.
fn test_rows(spec: &crate::spec::CaseSpec, ran: &[TestRun]) -> Vec<TestRow> {
    let mut rows = Vec::new();
    for tests in spec.checks.iter().filter_map(|c| c.tests.as_ref()) {
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

/// Run every check of the case on the finished trial.
fn grade(
    trial: &Trial<'_>,
    end: &AgentEnd,
    tests_ran: &Rc<RefCell<Vec<TestRun>>>,
    grading: &Phase,
) -> Vec<CheckResult> {
    let lua = &trial.lua;
    let infos = &trial.case.spec.checks;
    let t = match build_t(trial, end, tests_ran, grading) {
        Ok(t) => t,
        Err(e) => {
            let msg = format!("cannot build the trial for the checks: {}", lua::describe(&e));
            return infos
                .iter()
                .map(|c| CheckResult {
                    name: c.name.clone(),
                    passed: None,
                    critical: c.critical,
                    evidence: Json::Null,
                    error: Some(msg.clone()),
                    skipped: false,
                })
                .collect();
        }
    };
    let checks: Vec<Table> = trial
        .case_table
        .get::<Table>("checks")
        .map(|c| c.sequence_values::<Table>().filter_map(|c| c.ok()).collect())
        .unwrap_or_default();
    let limits = lua::limits(lua);
    let mut out = Vec::with_capacity(checks.len());
    for (check, info) in checks.iter().zip(infos) {
        let run: mlua::Result<mlua::Function> = check.get("run");
        let seg = Segment {
            instructions: Some(CHECK_INSTRUCTIONS),
            deadline: Some(Instant::now() + Duration::from_secs(CHECK_SECONDS)),
        };
        let result = match run {
            Ok(f) => limits.guard(lua, seg, || f.call::<MultiValue>(t.clone())),
            Err(e) => Guarded::Done(Err(e)),
        };
        let mut r = CheckResult {
            name: info.name.clone(),
            passed: None,
            critical: info.critical,
            evidence: Json::Null,
            error: None,
            skipped: false,
        };
        match result {
            Guarded::Stopped(stop) => r.error = Some(format!("check stopped: {}", stop.describe())),
            Guarded::Done(Err(e)) => r.error = Some(lua::describe(&e)),
            Guarded::Done(Ok(values)) => {
                let mut it = values.into_iter();
                let first = it.next().unwrap_or(Value::Nil);
                let evidence = it.next().unwrap_or(Value::Nil);
                r.evidence =
                    convert::to_json(lua, &evidence).unwrap_or_else(|e| json!(format!("(evidence is not JSON: {e})")));
                match first {
                    Value::Boolean(b) => r.passed = Some(b),
                    Value::LightUserData(p) if Value::LightUserData(p) == marks::SKIP => r.skipped = true,
                    Value::LightUserData(p) if Value::LightUserData(p) == marks::UNDECIDED => {
                        let msg = it.next().and_then(|m| m.as_string().map(|s| s.to_string_lossy()));
                        r.error = Some(msg.unwrap_or_else(|| "the check could not decide".into()));
                    }
                    other => {
                        r.error =
                            Some(format!("a check must return true or false (and evidence), got {}", other.type_name()))
                    }
                }
            }
        }
        out.push(r);
    }
    out
}

/// The `t` a check sees.
fn build_t(
    trial: &Trial<'_>,
    end: &AgentEnd,
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
            initial: trial.case.template.clone(),
            workdir: &trial.workdir,
            work_template: trial.case.work.as_ref().map(|w| w.dir.as_path()),
            tests_ran: tests_ran.clone(),
            phase: grading.clone(),
            view: view_of(trial.plan),
        },
    )
}

/// A trial the harness itself failed to run (a bug in evalua): recorded as an
/// infrastructure error so the run goes on and nothing is lost.
pub fn internal_error(plan: &Plan, case: &CasePlan, number: u32, msg: String) -> TrialOutput {
    let seed = sandbox::trial_seed(plan.seed, &case.spec.id, number);
    infra(case, number, seed, format!("internal error in evalua: {msg}"))
}
