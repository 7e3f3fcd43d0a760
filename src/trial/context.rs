//! A running trial as the agent's driver sees it ([`Trial`]: its Lua state,
//! journal, executor, user and budget), the agent's turns, and how the
//! agent's part ended ([`AgentEnd`]).

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Instant;

use mlua::{Lua, Table};
use serde_json::Value as Json;

use super::plan::{CasePlan, Plan};
use super::user::User;
use crate::executor::Executor;
use crate::lua::api::phase::Phase;
use crate::record::{self, Ended, Journal};
use crate::sandbox::TrialRng;
use crate::sandbox::db::{Database, LazyDb};

/// The trial as the agent's driver sees it: state, executor, and the Lua
/// tables tools run against.
pub struct Trial<'p> {
    pub plan: &'p Plan,
    pub case: &'p CasePlan,
    pub number: u32,
    /// Where it is in the plan (its case, number and condition).
    pub position: super::plan::Position,
    pub seed: u64,
    pub lua: Lua,
    pub state: Rc<RefCell<Journal>>,
    pub executor: Rc<Executor>,
    pub case_table: Table,
    /// The case's input (from its table: the plan does not keep inputs).
    pub input: String,
    pub handlers: Table,
    /// The agent declaration (`evalua.agent.*`) in this state: the case's or the suite's.
    pub agent: Table,
    /// Which agent plays this trial (see [`Plan::agent_for`]).
    pub agent_choice: super::plan::AgentChoice<'p>,
    pub ctx: Table,
    pub rng: Rc<RefCell<TrialRng>>,
    pub deadline: Instant,
    pub workdir: PathBuf,
    /// The case's user: scripted turns or a simulated user (`evalua.user.*`).
    pub user: Rc<User>,
    /// The suite table as evaluated for this trial (its monitors run on the trial).
    pub suite: Table,
    /// The trial's database behind `ctx.db` (and, read-only, `t.db`).
    pub conn: Rc<dyn Database>,
    /// The initial state behind `t.initial`, opened if a check asks.
    pub(crate) initial: Rc<LazyDb>,
    /// The agent's turn: `env`, `ctx` and `ctx.db` die when it ends.
    pub agent_phase: Phase,
}

/// What the suite's processes see in the sandbox besides their work dir:
/// `sandbox.expose`, never a protected path (`Plan::protected`), and nothing
/// their command line names (a command agent turns that on for its own
/// command: [`agent_view`]).
pub fn view_of(plan: &Plan) -> crate::process::View {
    crate::process::View {
        isolation: plan.switches.isolation,
        read_only: plan.suite.expose.clone(),
        writable: Vec::new(),
        no_network: !plan.suite.network,
        expose_named: false,
        protect: plan.protected.clone(),
        shield: vec![crate::process::real_path(&plan.suite.dir)],
        tmp_bytes: Some(plan.suite.keep.trial_bytes),
    }
}

/// What a command agent (and its `setup`) sees: [`view_of`], plus what its
/// command line, declared by the suite, names.
pub fn agent_view(plan: &Plan) -> crate::process::View {
    crate::process::View { expose_named: true, ..view_of(plan) }
}

/// Closes a trial's databases when the trial ends, however it ends (a
/// PostgreSQL copy is dropped then): Lua may hold the handles longer, until
/// its garbage collector runs, but the databases behind them are gone.
pub(crate) struct CloseDbs(pub(crate) Vec<Rc<dyn Database>>, pub(crate) Option<Rc<LazyDb>>);

impl CloseDbs {
    pub(crate) fn disarm(mut self) {
        self.0.clear();
        self.1 = None;
    }
}

impl Drop for CloseDbs {
    fn drop(&mut self) {
        for db in &self.0 {
            db.close();
        }
        if let Some(lazy) = &self.1 {
            lazy.close();
        }
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
    /// The agent never got its chance (infrastructure error): no check runs.
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
    /// Something the harness provides failed after the agent had acted: the
    /// trial is graded on what the agent did, the failure recorded beside.
    pub fn infra_after_start(error: String) -> Self {
        AgentEnd { ended: Ended::InfraError, error: Some(error), ..Self::running() }
    }
    /// An infrastructure failure, classified by whether the agent has acted
    /// in the trial yet (see [`Journal::agent_acted`]).
    pub fn infra_in(state: &RefCell<Journal>, error: String) -> Self {
        if state.borrow().agent_acted() { Self::infra_after_start(error) } else { Self::infra(error) }
    }
    /// The infrastructure error to record beside the outcome, if any.
    pub fn infra_error(&self) -> Option<String> {
        matches!(self.ended, Ended::InfraError | Ended::NotStarted | Ended::Interrupted)
            .then(|| self.error.clone())
            .flatten()
    }
    /// The run was stopped while the trial ran: an infrastructure error (the
    /// agent did not get its full chance), run again by `--resume`.
    pub fn interrupted() -> Self {
        let by = crate::util::cancel::signal_name().unwrap_or("a stop request");
        AgentEnd {
            ended: Ended::Interrupted,
            error: Some(format!("interrupted: the run was stopped ({by}) before this trial finished")),
            infra: true,
            ..Self::running()
        }
    }
    /// A budget was spent.
    pub fn budget(why: &impl std::fmt::Display) -> Self {
        AgentEnd { ended: Ended::Budget, error: Some(format!("budget spent: {why}")), ..Self::running() }
    }
}
