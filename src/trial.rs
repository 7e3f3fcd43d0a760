//! One trial, start to finish: a fresh Lua state and sandbox, the agent acting
//! through the executor, then the checks on the final state and trajectory.
//!
//! Nothing here is shared with another trial: the Lua state, the database
//! copy, the work dir, the RNG and the outbox are all the trial's own.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlua::{Lua, LuaSerdeExt, MultiValue, Table, Value};
use serde_json::{Value as Json, json};

use crate::agent;
use crate::executor::{Executor, ToolDef, TrialState};
use crate::lua::db::Db;
use crate::lua::{self, Segment, convert, limits::Guarded};
use crate::record::{self, CallCounts, CheckResult, Ended, Trace, TrialRecord};
use crate::sandbox::{self, DbImage, TrialRng};
use crate::suite::{self, CaseSpec, Suite};

/// Limits on one check.
const CHECK_INSTRUCTIONS: u64 = 50_000_000;
const CHECK_SECONDS: u64 = 10;
/// Lines of `print` output kept per trial.
const LOG_LINES: usize = 200;

/// A case ready to run: its template database and the tools it offers.
pub struct CasePlan {
    pub spec: CaseSpec,
    pub trials: u32,
    pub template: Option<DbImage>,
    pub tools: Vec<Arc<ToolDef>>,
    /// The frozen clock, as Unix seconds and as written.
    pub clock: i64,
    pub clock_text: String,
    /// The initial work tree (`sandbox.workdir`), copied into each trial's work dir.
    pub work: Option<Arc<crate::workdir::Template>>,
}

/// Everything a trial needs, shared read-only by all workers.
pub struct Plan {
    /// Unique in the process: worker states are tied to one plan.
    pub id: u64,
    pub suite: Suite,
    pub cases: Vec<CasePlan>,
    pub seed: u64,
    /// A private folder for the run's work dirs; removed with the plan.
    pub scratch: tempfile::TempDir,
    /// Cases left out because their tests do not hold on the initial tree (`--skip-invalid`).
    pub invalid: Vec<crate::coding::Invalid>,
}

impl Plan {
    /// The trial's work dir. It is created only when something uses it (most
    /// database-only trials never do) and removed when the trial ends.
    pub fn workdir(&self, case: &CasePlan, number: u32) -> PathBuf {
        let safe: String = case
            .spec
            .id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' })
            .collect();
        self.scratch.path().join(format!("{safe}.{number}"))
    }
}

/// `print` output of the trial's Lua code, kept for the trace.
#[derive(Default)]
pub struct TrialLog(pub Vec<String>);

impl TrialLog {
    pub fn push(&mut self, line: String) {
        if self.0.len() < LOG_LINES {
            self.0.push(line);
        } else if self.0.len() == LOG_LINES {
            self.0.push("… (further output dropped)".to_string());
        }
    }
}

/// The trial as the agent's driver sees it: state, executor, and the Lua
/// tables tools run against.
pub struct Trial<'p> {
    pub plan: &'p Plan,
    pub case: &'p CasePlan,
    pub number: u32,
    pub seed: u64,
    pub lua: Lua,
    pub state: Rc<RefCell<TrialState>>,
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
    pub user: Rc<agent::user::User>,
}

/// The agent speaks to the user: a turn, counted against `max_turns`.
/// Returns the user's reply (the next of the case's `evalua.user.script`
/// turns, or the simulated user's answer), or Err(why) when the turn budget
/// is spent or the simulated user failed (then `state.infra` is set).
pub fn agent_turn(
    state: &RefCell<TrialState>,
    max_turns: Option<u32>,
    user: &agent::user::User,
    text: String,
) -> Result<Option<String>, String> {
    let mut st = state.borrow_mut();
    if let Some(max) = max_turns
        && st.usage.turns >= max
    {
        let why = format!("max_turns ({max}) reached");
        st.budget_hit = Some(why.clone());
        return Err(why);
    }
    st.usage.turns += 1;
    let said = st.messages.iter().filter(|m| m.role == "agent").count();
    st.messages.push(record::Message { role: "agent".into(), content: text, call_id: None });
    let reply = match user {
        agent::user::User::Script(turns) => turns.get(said).cloned(),
        agent::user::User::None => None,
        agent::user::User::Llm(u) => {
            drop(st);
            let r = u.reply(state).inspect_err(|e| state.borrow_mut().infra = Some(e.clone()))?;
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
        self.executor.call(&self.lua, &self.state, &self.handlers, &self.ctx, id, name, args)
    }

    /// Whether the case has a (scripted or simulated) user to talk to.
    pub fn has_user(&self) -> bool {
        self.user.is_some()
    }

    pub fn agent_says(&self, text: String) -> Result<Option<String>, String> {
        agent_turn(&self.state, self.plan.suite.budget.max_turns, &self.user, text)
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
    pub fn budget(why: &str) -> Self {
        AgentEnd { ended: Ended::Budget, error: Some(format!("budget spent: {why}")), ..Self::running() }
    }
}

pub struct TrialOutput {
    pub record: TrialRecord,
    pub trace: Trace,
}

/// Run one trial. Never panics on user input: every failure becomes a recorded outcome.
pub fn run(plan: &Plan, case: &CasePlan, number: u32) -> TrialOutput {
    let seed = sandbox::trial_seed(plan.seed, &case.spec.id, number);
    let started = Instant::now();
    let workdir = plan.workdir(case, number);
    let out = match prepare(plan, case, number, seed, &workdir) {
        Ok(trial) => {
            let lua = trial.lua.clone();
            let trips = lua::limits(&lua).trips();
            let mut end = agent::drive(&trial);
            if let Some(e) = trial.state.borrow_mut().infra.take() {
                // A model the harness needed (a simulated user) failed: not the agent's fault.
                end = AgentEnd { stderr_tail: end.stderr_tail, ..AgentEnd::infra(e) };
            }
            let out = finish(trial, end, started);
            retire_if_dirty(&lua, trips);
            keep_suite_if_unchanged(&lua);
            out
        }
        Err(e) => {
            WORKER.with(|w| *w.borrow_mut() = None);
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
    TrialOutput { record, trace }
}

/// A worker thread's Lua state, reused across its trials (see `lua::new_state`).
struct Worker {
    plan: u64,
    lua: Lua,
    /// The suite as last evaluated in this state, while it may be reused.
    evaluated: Option<Evaluated>,
}

/// A suite evaluated for one case, and the snapshot that proves it unchanged
/// (see `lua::reuse`).
struct Evaluated {
    case: String,
    suite: Table,
    snapshot: Table,
    /// What the suite file printed while it was evaluated: every trial's log starts with it.
    log: Vec<String>,
}

thread_local! {
    static WORKER: RefCell<Option<Worker>> = const { RefCell::new(None) };
}

/// Memory above which a worker's state is replaced rather than reused.
const RETIRE_ABOVE_BYTES: usize = 64 * 1024 * 1024;

fn worker_state(plan: &Plan) -> Result<Lua, String> {
    WORKER.with(|w| {
        let mut w = w.borrow_mut();
        if let Some(worker) = &*w
            && worker.plan == plan.id
        {
            return Ok(worker.lua.clone());
        }
        let cfg = suite::state_config(&plan.suite.path, plan.suite.sources.clone(), 0, false);
        let lua = lua::new_state(cfg).map_err(|e| format!("cannot create a Lua state: {e}"))?;
        *w = Some(Worker { plan: plan.id, lua: lua.clone(), evaluated: None });
        Ok(lua)
    })
}

/// The suite table for this trial: the one evaluated for an earlier trial of
/// the same case on this worker when nothing has changed it since, else a
/// fresh evaluation in a fresh environment. Returns it with the log lines the
/// evaluation printed.
fn evaluated_suite(lua: &Lua, plan: &Plan, case: &CasePlan) -> Result<(Table, Vec<String>), String> {
    let reused = WORKER.with(|w| {
        let w = w.borrow();
        let e = w.as_ref()?.evaluated.as_ref()?;
        (e.case == case.spec.id).then(|| (e.suite.clone(), e.log.clone()))
    });
    if let Some(found) = reused {
        return Ok(found);
    }
    lua::fresh_env(lua).map_err(|e| e.to_string())?;
    lua.set_app_data(TrialLog::default());
    lua.set_named_registry_value("evalua.target", case.spec.id.as_str()).map_err(|e| e.to_string())?;
    // Code at the top of the suite file sees the same random numbers in every
    // trial of a case, whether or not its evaluation is reused.
    seed_math_random(lua, sandbox::trial_seed(plan.seed ^ 0x5417e, &case.spec.id, 0))?;
    let suite_t = suite::eval_suite(lua, &plan.suite.path)?;
    let log = lua.remove_app_data::<TrialLog>().map(|l| l.0).unwrap_or_default();
    let snapshot = lua::reuse::snapshot(lua, &suite_t).ok().flatten();
    WORKER.with(|w| {
        if let Some(worker) = w.borrow_mut().as_mut() {
            worker.evaluated = snapshot.map(|snapshot| Evaluated {
                case: case.spec.id.clone(),
                suite: suite_t.clone(),
                snapshot,
                log: log.clone(),
            });
        }
    });
    Ok((suite_t, log))
}

/// After a trial: keep the evaluated suite for the next trial only if the
/// trial changed nothing reachable from it (a counter in a file-level local,
/// a global, a module's table, …). Otherwise the next trial evaluates afresh.
fn keep_suite_if_unchanged(lua: &Lua) {
    WORKER.with(|w| {
        let mut w = w.borrow_mut();
        let Some(worker) = w.as_mut() else { return };
        let unchanged = match &worker.evaluated {
            Some(e) => lua::reuse::unchanged(lua, &e.suite, &e.snapshot).unwrap_or(false),
            None => return,
        };
        if !unchanged {
            worker.evaluated = None;
        }
    });
}

fn seed_math_random(lua: &Lua, seed: u64) -> Result<(), String> {
    let math: Table = lua.globals().get("math").map_err(|e| e.to_string())?;
    math.get::<mlua::Function>("randomseed").and_then(|f| f.call::<()>(seed as i64)).map_err(|e| e.to_string())
}

/// Keep the worker's state for the next trial only if this one left it clean:
/// no limit tripped (a stopped script may have left half-done work behind) and
/// memory back to normal. Otherwise the next trial starts from a new state.
fn retire_if_dirty(lua: &Lua, trips_before: u64) {
    if lua::limits(lua).trips() != trips_before || lua.used_memory() > RETIRE_ABOVE_BYTES {
        WORKER.with(|w| *w.borrow_mut() = None);
    }
}

fn prepare<'p>(
    plan: &'p Plan,
    case: &'p CasePlan,
    number: u32,
    seed: u64,
    workdir: &Path,
) -> Result<Trial<'p>, String> {
    let lua = worker_state(plan)?;
    if let Some(mut data) = lua.app_data_mut::<lua::StateData>() {
        data.config.clock = case.clock;
    }
    let (suite_t, log) = evaluated_suite(&lua, plan, case)?;
    lua.set_app_data(TrialLog(log));
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
    seed_math_random(&lua, seed)?;

    let conn = match &case.template {
        Some(image) => {
            Rc::new(sandbox::open_copy(image, false).map_err(|e| format!("cannot copy the fixture database: {e}"))?)
        }
        None => Rc::new(rusqlite::Connection::open_in_memory().map_err(|e| e.to_string())?),
    };
    let state = Rc::new(RefCell::new(TrialState::new()));
    let rng = Rc::new(RefCell::new(TrialRng::new(seed ^ 0x5eed)));
    let ctx =
        make_ctx(&lua, case, number, seed, conn, &state, &rng, &case_table, workdir).map_err(|e| e.to_string())?;
    if let Some(t) = &case.work {
        crate::workdir::copy_tree(&t.dir, workdir).map_err(|e| format!("cannot copy the work-dir fixture: {e}"))?;
    }
    // The agent's time starts once its tree is ready.
    let deadline_s = plan.suite.budget.deadline_s.unwrap_or(crate::run::DEFAULT_DEADLINE_S);
    let deadline = Instant::now() + Duration::from_secs_f64(deadline_s);
    lua::work::install_ctx(&lua, &ctx, workdir, &state, deadline).map_err(|e| e.to_string())?;

    let user = agent::user::User::read(&lua, &case_table, seed, deadline)?;
    let executor = Rc::new(Executor { tools: case.tools.clone(), budget: plan.suite.budget.clone() });
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
    })
}

#[allow(clippy::too_many_arguments)]
fn make_ctx(
    lua: &Lua,
    case: &CasePlan,
    number: u32,
    seed: u64,
    conn: Rc<rusqlite::Connection>,
    state: &Rc<RefCell<TrialState>>,
    rng: &Rc<RefCell<TrialRng>>,
    case_table: &Table,
    workdir: &Path,
) -> mlua::Result<Table> {
    let ctx = lua.create_table()?;
    ctx.raw_set("db", Db::read_write(conn))?;
    ctx.raw_set("case", case_table.clone())?;
    ctx.raw_set("trial", number)?;
    ctx.raw_set("seed", seed as i64)?;
    ctx.raw_set("workdir", workdir.display().to_string())?;
    let clock_text = case.clock_text.clone();
    ctx.raw_set("now", lua.create_function(move |_, ()| Ok(clock_text.clone()))?)?;
    let clock = case.clock;
    ctx.raw_set("time", lua.create_function(move |_, ()| Ok(clock))?)?;
    let st = state.clone();
    ctx.raw_set(
        "send",
        lua.create_function(move |lua, (kind, to, body): (String, Value, Value)| {
            let to = match to {
                Value::String(s) => s.to_string_lossy(),
                Value::Integer(i) => i.to_string(),
                Value::Number(n) => n.to_string(),
                other => {
                    return Err(mlua::Error::runtime(format!(
                        "ctx.send: 'to' must be a string or number, got {}",
                        other.type_name()
                    )));
                }
            };
            let body =
                convert::to_json(lua, &body).map_err(|e| mlua::Error::runtime(format!("ctx.send: body: {e}")))?;
            st.borrow_mut().outbox.push(record::OutboxItem { kind, to, body });
            Ok(())
        })?,
    )?;
    ctx.raw_set("random", random_fn(lua, rng.clone())?)?;
    let root = workdir.to_path_buf();
    ctx.raw_set(
        "write_file",
        lua.create_function(move |_, (rel, content): (String, mlua::LuaString)| {
            let p = sandbox::inside(&root, &rel).map_err(|e| mlua::Error::runtime(format!("ctx.write_file: {e}")))?;
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).map_err(|e| mlua::Error::runtime(format!("ctx.write_file: {e}")))?;
            }
            std::fs::write(&p, content.as_bytes())
                .map_err(|e| mlua::Error::runtime(format!("ctx.write_file: {rel}: {e}")))
        })?,
    )?;
    let root = workdir.to_path_buf();
    ctx.raw_set(
        "read_file",
        lua.create_function(move |lua, rel: String| {
            let p = sandbox::inside(&root, &rel).map_err(|e| mlua::Error::runtime(format!("ctx.read_file: {e}")))?;
            match std::fs::read(&p) {
                Ok(b) => Ok(Value::String(lua.create_string(b)?)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Value::Nil),
                Err(e) => Err(mlua::Error::runtime(format!("ctx.read_file: {rel}: {e}"))),
            }
        })?,
    )?;
    Ok(ctx)
}

/// `random()` → float in [0,1); `random(n)` → 1..n; `random(a, b)` → a..b.
pub fn random_fn(lua: &Lua, rng: Rc<RefCell<TrialRng>>) -> mlua::Result<mlua::Function> {
    lua.create_function(move |_, (a, b): (Option<i64>, Option<i64>)| {
        let mut r = rng.borrow_mut();
        Ok(match (a, b) {
            (None, _) => Value::Number(r.float()),
            (Some(n), None) if n >= 1 => Value::Integer(r.int(1, n)),
            (Some(lo), Some(hi)) if lo <= hi => Value::Integer(r.int(lo, hi)),
            _ => return Err(mlua::Error::runtime("random: empty interval")),
        })
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
    let checks = if end.infra { Vec::new() } else { grade(&trial, &end) };
    let outcome = record::outcome_of(end.infra, &checks);
    let st = trial.state.borrow();
    let log = lua.app_data_ref::<TrialLog>().map(|l| l.0.clone()).unwrap_or_default();
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
    TrialOutput { record, trace }
}

/// Run every check of the case on the finished trial.
fn grade(trial: &Trial<'_>, end: &AgentEnd) -> Vec<CheckResult> {
    let lua = &trial.lua;
    let infos = &trial.case.spec.checks;
    let t = match build_t(trial, end) {
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
                    Value::LightUserData(p) if Value::LightUserData(p) == lua::host::SKIP => r.skipped = true,
                    Value::LightUserData(p) if Value::LightUserData(p) == lua::host::UNDECIDED => {
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
fn build_t(trial: &Trial<'_>, end: &AgentEnd) -> mlua::Result<Table> {
    let lua = &trial.lua;
    let st = trial.state.borrow();
    let t = lua.create_table()?;
    t.raw_set("case", trial.case_table.clone())?;
    t.raw_set("trial", trial.number)?;
    t.raw_set("seed", trial.seed as i64)?;
    t.raw_set("answer", end.answer.as_str())?;
    t.raw_set("ended", end.ended.as_str())?;
    t.raw_set("error", end.error.as_deref())?;

    let calls = lua.create_table()?;
    for c in &st.calls {
        let ct = lua.create_table()?;
        ct.raw_set("id", c.id.as_str())?;
        ct.raw_set("name", c.name.as_str())?;
        ct.raw_set("args", convert::to_lua(lua, &c.args)?)?;
        ct.raw_set("status", c.status.as_str())?;
        ct.raw_set("effect", c.effect.as_deref())?;
        if let Some(r) = &c.result {
            ct.raw_set("result", convert::to_lua(lua, r)?)?;
        }
        ct.raw_set("error", c.error.as_deref())?;
        ct.raw_set("started_ms", c.started_ms)?;
        ct.raw_set("ended_ms", c.ended_ms)?;
        calls.raw_push(ct)?;
    }
    calls.set_metatable(Some(lua.array_metatable()))?;
    t.raw_set("calls", calls)?;

    t.raw_set("messages", convert::to_lua(lua, &serde_json::to_value(&st.messages).unwrap_or_default())?)?;
    t.raw_set("outbox", convert::to_lua(lua, &serde_json::to_value(&st.outbox).unwrap_or_default())?)?;
    let usage = convert::to_lua(lua, &serde_json::to_value(&st.usage).unwrap_or_default())?;
    t.raw_set("usage", usage)?;

    // The final state, read-only, and the initial one (copied only if asked for).
    let db: mlua::AnyUserData = trial.ctx.get("db")?;
    let conn = db.borrow::<Db>()?.shared_conn()?;
    let _ = conn.pragma_update(None, "query_only", true);
    t.raw_set("db", Db::read_only(conn, "t.db"))?;
    let initial = match &trial.case.template {
        Some(image) => Db::lazy_read_only(image.clone(), "t.initial"),
        None => {
            Db::read_only(Rc::new(rusqlite::Connection::open_in_memory().map_err(mlua::Error::external)?), "t.initial")
        }
    };
    t.raw_set("initial", initial)?;
    t.raw_set("files", files_table(lua, &trial.workdir)?)?;
    lua::work::extend_t(lua, &t, trial)?;
    Ok(t)
}

/// `t.files`: the work dir's files by relative path, read on demand.
fn files_table(lua: &Lua, dir: &Path) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let mt = lua.create_table()?;
    let root = dir.to_path_buf();
    mt.raw_set(
        "__index",
        lua.create_function(move |lua, (_t, key): (Value, String)| match read_inside(&root, &key) {
            Some(bytes) => Ok(Value::String(lua.create_string(bytes)?)),
            None => Ok(Value::Nil),
        })?,
    )?;
    let root = dir.to_path_buf();
    mt.raw_set(
        "__pairs",
        lua.create_function(move |lua, _t: Value| {
            let snapshot = lua.create_table()?;
            for rel in list_files(&root) {
                if let Some(bytes) = read_inside(&root, &rel) {
                    snapshot.raw_set(rel, lua.create_string(bytes)?)?;
                }
            }
            let next: mlua::Function = lua.globals().get("next")?;
            Ok((next, snapshot, Value::Nil))
        })?,
    )?;
    t.set_metatable(Some(mt))?;
    Ok(t)
}

/// Read a regular file below `root` (no `..`, no absolute paths, no symlinks out).
fn read_inside(root: &Path, rel: &str) -> Option<Vec<u8>> {
    let p = Path::new(rel);
    if p.is_absolute() || p.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return None;
    }
    let full = root.join(p).canonicalize().ok()?;
    let root = root.canonicalize().ok()?;
    if !full.starts_with(&root) || !full.is_file() {
        return None;
    }
    std::fs::read(full).ok()
}

pub fn list_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            let p = e.path();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file()
                && let Ok(rel) = p.strip_prefix(root)
            {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

/// A trial the harness itself failed to run (a bug in evalua): recorded as an
/// infrastructure error so the run goes on and nothing is lost.
pub fn internal_error(plan: &Plan, case: &CasePlan, number: u32, msg: String) -> TrialOutput {
    let seed = sandbox::trial_seed(plan.seed, &case.spec.id, number);
    infra(case, number, seed, format!("internal error in evalua: {msg}"))
}
