//! A run's plan, shared read-only by every worker: the suite, and for each
//! selected case its template database, tools (with compiled schemas),
//! frozen clock and initial work tree.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::executor::ToolDef;
use crate::record::Invalid;
use crate::sandbox::db::{Backend, DbTemplate};
use crate::sandbox::workdir::Template;
use crate::spec::{CaseSpec, FaultRule, Suite};
use crate::stats::CaseInfo;

/// A case ready to run: its template database and the tools it offers.
pub struct CasePlan {
    pub spec: CaseSpec,
    pub trials: u32,
    /// The case's initial database (none: SQLite with no schema and no fixture).
    pub template: Option<DbTemplate>,
    /// Shared by every case that offers the same tools.
    pub tools: Arc<Vec<Arc<ToolDef>>>,
    /// The frozen clock, as Unix seconds and as written.
    pub clock: i64,
    pub clock_text: String,
    /// The initial work tree (`sandbox.workdir`), copied into each trial's work dir.
    pub work: Option<Arc<Template>>,
    /// The fault rules in force in this case, by tool (the suite's, with the case's own).
    pub faults: Arc<BTreeMap<String, Vec<FaultRule>>>,
    /// The case as each perturbation the run asked for changes it (SPEC §17),
    /// by name: only those that apply to it (`run::perturb`).
    pub variants: BTreeMap<String, CasePlan>,
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
    /// What no process of the run may see, whoever names it (canonical
    /// paths): the scratch folder, the suite file, the work-dir templates'
    /// sources and the hidden tests (`check.tests`' `inject`).
    pub protected: Vec<PathBuf>,
    /// Cases left out because their tests do not hold on the initial tree (`--skip-invalid`).
    pub invalid: Vec<Invalid>,
    /// The database backend; with PostgreSQL, the run's databases on the
    /// server are dropped when the plan is.
    pub db: Backend,
    /// Case id → index in `cases`.
    pub ids: Arc<std::collections::HashMap<String, usize>>,
    /// Records carry the safety view (the suite has attack cases or forbidden tools).
    pub safety: bool,
    /// Keep what each trial changed (SPEC §10); false under `--no-state`.
    pub keep_state: bool,
    /// The conditions every planned trial runs under, in the order given
    /// (never empty): one for a run (the agent it picked with `--agent
    /// NAME`, or the suite's default); one per agent for an interleaved run
    /// (`--agent A --agent B`), each block running every one.
    pub conditions: Vec<Condition>,
    /// What the command line decides for the whole run.
    pub switches: Switches,
}

/// The run's switches that no suite sets: passed with the plan, never
/// process-wide (two runs in one process, or two tests, may differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switches {
    /// How the trials' processes are isolated (`--isolation`); every process
    /// of the run gets it through [`crate::trial::view_of`].
    pub isolation: crate::process::Isolation,
    /// Judge checks read and write the judge cache; false under `--no-cache`.
    pub judge_cache: bool,
}

impl Default for Switches {
    fn default() -> Self {
        Switches { isolation: crate::process::Isolation::Sandbox, judge_cache: true }
    }
}

/// A condition a planned trial runs under: which of the suite's agents
/// plays it (None: the suite's default). A property of the trial's
/// position in the plan, never of the run as a whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Condition {
    pub agent: Option<String>,
    /// The perturbation of the environment it runs under (SPEC §17; None: the baseline).
    pub perturbation: Option<String>,
}

/// A trial's place in the plan: its case (an index into `cases`), its
/// number, and its condition (an index into `conditions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub case: usize,
    pub number: u32,
    pub condition: usize,
}

impl Position {
    /// Trial `number` of case `case` under the plan's first condition.
    pub fn first(case: usize, number: u32) -> Position {
        Position { case, number, condition: 0 }
    }
}

/// Which agent plays a trial: the case's own, or one of the suite's by name.
#[derive(Clone, Copy)]
pub struct AgentChoice<'p> {
    /// The suite agent's name (None: the case declares its own agent).
    pub name: Option<&'p str>,
    pub spec: Option<&'p crate::spec::AgentSpec>,
}

impl Plan {
    /// The trial's work dir. It is created only when something uses it (most
    /// database-only trials never do) and removed when the trial ends.
    pub fn workdir(&self, case: &CasePlan, number: u32) -> PathBuf {
        let safe: String = case
            .spec
            .id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || "-_.+".contains(c) { c } else { '_' })
            .collect();
        self.scratch.path().join(format!("{safe}.{number}"))
    }
}

impl Plan {
    /// The condition the trial at `pos` runs under.
    pub fn condition_for(&self, pos: Position) -> &Condition {
        static NONE: Condition = Condition { agent: None, perturbation: None };
        self.conditions.get(pos.condition).unwrap_or(&NONE)
    }

    /// The case the trial at `pos` runs: its case, as its condition's
    /// perturbation (if any) changes it.
    pub fn case_at(&self, pos: Position) -> &CasePlan {
        let case = &self.cases[pos.case];
        match &self.condition_for(pos).perturbation {
            Some(p) => case.variants.get(p).unwrap_or(case),
            None => case,
        }
    }

    /// Whether condition `c` runs for case `case` (a perturbation that does
    /// not apply to a case is not run for it).
    pub fn applies(&self, case: usize, c: usize) -> bool {
        match self.conditions.get(c).and_then(|c| c.perturbation.as_ref()) {
            Some(p) => self.cases.get(case).is_some_and(|k| k.variants.contains_key(p)),
            None => true,
        }
    }

    /// Whether the run's conditions are perturbations (`--perturb`), the first the baseline.
    pub fn perturbs(&self) -> bool {
        self.conditions.iter().any(|c| c.perturbation.is_some())
    }

    /// The name of a condition's part of the run (its run dir, its column):
    /// its perturbation (`baseline` for none) in a run of perturbations,
    /// else its agent.
    pub fn part_name(&self, c: &Condition) -> String {
        if self.perturbs() {
            return c.perturbation.clone().unwrap_or_else(|| crate::spec::BASELINE.to_string());
        }
        c.agent.clone().unwrap_or_default()
    }

    /// The part of the run a record belongs to (see [`Plan::part_name`]).
    pub fn part_of(&self, r: &crate::record::TrialRecord) -> String {
        if self.perturbs() {
            return r.perturbation.clone().unwrap_or_else(|| crate::spec::BASELINE.to_string());
        }
        r.agent.clone().unwrap_or_default()
    }

    /// The agent that plays the trial at `pos`: its case's own agent, else
    /// the suite's agent its condition names, else the suite's default.
    /// Every part of a trial (the Lua agent table, the driver, the sandbox
    /// screening, the manifest) asks here.
    pub fn agent_for(&self, pos: Position) -> AgentChoice<'_> {
        if let Some(a) = self.cases.get(pos.case).and_then(|c| c.spec.agent.as_deref()) {
            return AgentChoice { name: None, spec: Some(a) };
        }
        match self.condition_for(pos).agent.as_deref() {
            Some(name) => AgentChoice { name: Some(name), spec: self.suite.agent_named(name) },
            None => AgentChoice { name: self.suite.default_agent.as_deref(), spec: self.suite.agent.as_ref() },
        }
    }

    /// The agent the record of the trial at `pos` names, `played` having
    /// played it: in a run of several agents, its condition's (the part
    /// of the run it belongs to, even for a case with its own agent); else
    /// the suite agent that played, when the suite names its agents.
    pub fn recorded_agent(&self, pos: Position, played: Option<&str>) -> Option<String> {
        if self.conditions.iter().any(|c| c.agent != self.conditions[0].agent) {
            return self.condition_for(pos).agent.clone();
        }
        played.filter(|_| self.names_agents()).map(str::to_string)
    }

    /// The condition a recorded trial ran under: the one naming its agent
    /// (the first when the plan has one condition, or none names it).
    pub fn condition_of(&self, agent: Option<&str>) -> usize {
        self.conditions.iter().position(|c| c.agent.as_deref() == agent && agent.is_some()).unwrap_or(0)
    }

    /// Whether the suite names its agents (`agents = { … }`): then every
    /// record says which one played (`agent`).
    pub fn names_agents(&self) -> bool {
        self.suite.agents.iter().any(|a| a.name != crate::spec::DEFAULT_AGENT_NAME)
    }

    /// The name of the suite agent condition `c` uses (its pick, else the default).
    pub fn agent_name(&self, c: usize) -> Option<&str> {
        self.conditions.get(c).and_then(|c| c.agent.as_deref()).or(self.suite.default_agent.as_deref())
    }

    /// Rebuild `ids` after cases were dropped from the plan.
    pub fn reindex(&mut self) {
        self.ids = Arc::new(self.cases.iter().enumerate().map(|(i, c)| (c.spec.id.clone(), i)).collect());
    }

    /// What the figures need to know about each planned case.
    pub fn case_infos(&self) -> Vec<CaseInfo> {
        self.cases
            .iter()
            .map(|c| CaseInfo {
                id: c.spec.id.clone(),
                weight: c.spec.weight,
                tags: c.spec.tags.clone(),
                difficulty: c.spec.difficulty.clone(),
                reference: c.spec.reference.clone(),
                should_abstain: c.spec.should_abstain,
                pending_review: c.spec.pending_review,
            })
            .collect()
    }
}
