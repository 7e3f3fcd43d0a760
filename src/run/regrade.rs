//! `evalua regrade RUN_DIR` (SPEC §10): plan the suite's current checks over
//! a finished run's recorded trials, refuse what cannot be re-graded honestly
//! (a run that kept no state, a fixture that changed since), and feed the
//! trials through the scheduler with [`trial::regrade::regrade`] in place of
//! the agent.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use super::planned::{Planned, TrialFn};
use super::scheduler::RunOptions;
use crate::error::{Error, Result};
use crate::lua::load;
use crate::record::manifest::{CaseEntry, Manifest, RegradedFrom, RunKind, StateKeeping};
use crate::record::{RunDir, TrialRecord};
use crate::trial::{self, Condition, Plan, Switches};
use crate::util::paths::display_path;

/// A re-grade, planned.
pub struct Regrade {
    pub plan: Arc<Plan>,
    pub old: RunDir,
    pub old_manifest: Manifest,
    /// The old run's records of the planned cases, in file (plan) order.
    pub records: Arc<Vec<TrialRecord>>,
    /// (case index in the plan, trial number) of each record.
    pub work: Vec<(usize, u32)>,
    /// Said on stderr before the re-grade (cases left out, fixtures allowed to change).
    pub warnings: Vec<String>,
    /// Cases whose fixture, schema or work tree changed since the run (allowed by the flag).
    pub fixture_changes: Vec<String>,
}

/// Refuse a run dir whose trials' final states cannot be rebuilt.
fn regradable(dir: &Path, m: &Manifest) -> Result<()> {
    // A perturbed part's trials ran on the case as its perturbation changed it (SPEC §17).
    if let Some(p) = m.interleaved.as_ref().and_then(|i| i.perturbation.as_deref()) {
        return Err(Error::Input(format!(
            "{}: the part of a run of perturbations that ran under '{p}': it cannot be re-graded yet (its baseline part can)",
            dir.display()
        )));
    }
    if let Some(db) = &m.suite.db {
        return Err(Error::Input(format!(
            "{}: this run's trials ran on {} (sandbox.db = \"{}\"): re-grading is not supported for it, because only a SQLite database's changes can be kept; run the suite again",
            dir.display(),
            if db.kind == "postgres" { "PostgreSQL" } else { db.kind.as_str() },
            db.kind
        )));
    }
    match m.trial_state {
        Some(StateKeeping::Kept) => Ok(()),
        Some(StateKeeping::Skipped) => Err(Error::Input(format!(
            "{}: this run was made with --no-state, so its trials' final states were not kept and cannot be re-graded; run the suite again without --no-state",
            dir.display()
        ))),
        Some(StateKeeping::Unsupported) => Err(Error::Input(format!(
            "{}: this run's sandbox database cannot keep its trials' changes, so it cannot be re-graded; run the suite again",
            dir.display()
        ))),
        None => Err(Error::Input(format!(
            "{}: this run dir keeps no trial states (manifest.json has no trial_state: an older evalua, or not a run of agents), so it cannot be re-graded",
            dir.display()
        ))),
    }
}

fn short(h: Option<&str>) -> String {
    h.map(|h| h.chars().take(12).collect()).unwrap_or_else(|| "none".into())
}

/// What changed in a case's starting state between the two manifests.
fn fixture_change(old: &Manifest, new: &Manifest, was: &CaseEntry, now: &CaseEntry) -> Option<String> {
    let mut what = Vec::new();
    if was.fixture_sha256 != now.fixture_sha256 {
        what.push(format!(
            "fixture sha256 {} → {}",
            short(was.fixture_sha256.as_deref()),
            short(now.fixture_sha256.as_deref())
        ));
    }
    let schema = |m: &Manifest| m.suite.schema.as_ref().and_then(|s| s.sha256.clone());
    if schema(old) != schema(new) {
        what.push(format!(
            "sandbox.schema sha256 {} → {}",
            short(schema(old).as_deref()),
            short(schema(new).as_deref())
        ));
    }
    let tree = |c: &CaseEntry| c.workdir.as_ref().map(|w| w.tree_sha256.clone());
    if tree(was) != tree(now) {
        what.push(format!("work tree sha256 {} → {}", short(tree(was).as_deref()), short(tree(now).as_deref())));
    }
    (!what.is_empty()).then(|| format!("case '{}': {}", now.id, what.join(", ")))
}

/// Plan the re-grade of the run dir `dir` with `suite` (default: the suite
/// file the run recorded).
pub fn prepare(
    dir: &Path,
    suite: Option<&Path>,
    allow_fixture_change: bool,
    switches: Switches,
    argv: &[String],
) -> Result<Regrade> {
    let old = RunDir::open(dir)?;
    let old_manifest = old.read_manifest()?;
    regradable(dir, &old_manifest)?;
    let suite_path = match suite {
        Some(p) => p.to_path_buf(),
        None => {
            let p = Path::new(&old_manifest.suite.path).to_path_buf();
            if !p.is_file() {
                return Err(Error::Input(format!(
                    "{}: the run's suite file {} is not there (run from the folder the run was made in, or give --suite FILE)",
                    dir.display(),
                    old_manifest.suite.path
                )));
            }
            p
        }
    };
    let s = load::load(&suite_path)?;
    if s.name != old_manifest.suite.name {
        return Err(Error::Input(format!(
            "{}: suite '{}' cannot re-grade a run of suite '{}'",
            display_path(&s.path),
            s.name,
            old_manifest.suite.name
        )));
    }
    let mut plan = super::plan(s, None, &Default::default(), old_manifest.seed)?;
    plan.switches = switches;
    if !plan.keep_state {
        return Err(Error::Input(format!(
            "{}: the suite now declares a PostgreSQL sandbox (sandbox.db = \"postgres\"): re-grading is not supported on it; re-grade with the SQLite suite the run was made with (--suite FILE)",
            display_path(&plan.suite.path)
        )));
    }
    let mut warnings = Vec::new();
    let old_cases: HashMap<&str, &CaseEntry> = old_manifest.cases.iter().map(|c| (c.id.as_str(), c)).collect();
    for c in &old_manifest.cases {
        if !plan.cases.iter().any(|p| p.spec.id == c.id) {
            warnings.push(format!("case '{}' is no longer in the suite: its trials are left out", c.id));
        }
    }
    plan.cases.retain(|c| old_cases.contains_key(c.spec.id.as_str()));
    if plan.cases.is_empty() {
        return Err(Error::Input(format!(
            "{}: none of the run's cases is in {}",
            dir.display(),
            display_path(&plan.suite.path)
        )));
    }
    for c in &mut plan.cases {
        c.trials = old_cases[c.spec.id.as_str()].trials;
    }

    // The recorded changes apply only to the starting state they were taken from.
    let now = draft_manifest(&plan, &old_manifest, "", argv);
    let fixture_changes: Vec<String> =
        now.cases.iter().filter_map(|c| fixture_change(&old_manifest, &now, old_cases[c.id.as_str()], c)).collect();
    if !fixture_changes.is_empty() {
        if !allow_fixture_change {
            let more = if fixture_changes.len() > 3 {
                format!(" (and {} more)", fixture_changes.len() - 3)
            } else {
                String::new()
            };
            return Err(Error::Input(format!(
                "{}: the starting state changed since the run: {}{more}; the kept changes may not apply to it: pass --allow-fixture-change to re-grade anyway",
                dir.display(),
                fixture_changes[..fixture_changes.len().min(3)].join("; ")
            )));
        }
        warnings.extend(fixture_changes.iter().map(|c| format!("re-grading over a changed starting state: {c}")));
    }

    let index: HashMap<&str, usize> = plan.cases.iter().enumerate().map(|(i, c)| (c.spec.id.as_str(), i)).collect();
    let mut records = Vec::new();
    let mut work = Vec::new();
    for item in old.records()? {
        let (_, _, rec) = item?;
        if let Some(&i) = index.get(rec.case.as_str()) {
            work.push((i, rec.trial));
            records.push(rec);
        }
    }
    // The conditions the trials ran under: each is graded again as its recorded agent's.
    if let Some(conditions) = recorded_agents(&records) {
        plan.conditions = conditions;
    }
    Ok(Regrade { plan: Arc::new(plan), old, old_manifest, records: Arc::new(records), work, warnings, fixture_changes })
}

/// One condition per agent the records name, in order; None when they name none.
fn recorded_agents(records: &[TrialRecord]) -> Option<Vec<Condition>> {
    let mut conditions: Vec<Condition> = Vec::new();
    for a in records.iter().filter_map(|r| r.agent.as_deref()) {
        if !conditions.iter().any(|c| c.agent.as_deref() == Some(a)) {
            conditions.push(Condition { agent: Some(a.to_string()), perturbation: None });
        }
    }
    (!conditions.is_empty()).then_some(conditions)
}

/// The new run's manifest: the current suite, checks, judges and grader
/// hash; the old run's agent, budget, seed and selection (the trajectories
/// are the old run's).
fn draft_manifest(plan: &Plan, old: &Manifest, run_id: &str, argv: &[String]) -> Manifest {
    let opts = RunOptions {
        trials: old.trials,
        jobs: old.jobs,
        filters: old.filters.clone(),
        seed: old.seed,
        partition: None,
        partition_from: None,
    };
    let mut m = super::manifest::build(plan, &opts, run_id, argv);
    m.kind = RunKind::Regraded;
    m.agent = old.agent.clone();
    m.budget = old.budget.clone();
    m.default_deadline_s = old.default_deadline_s;
    m.partition = old.partition.clone();
    m.partition_from = old.partition_from.clone();
    m.invalid_cases = old.invalid_cases.clone();
    m
}

impl Regrade {
    /// The manifest of the re-graded run.
    pub fn manifest(&self, run_id: &str, jobs: usize, argv: &[String]) -> Manifest {
        let mut m = draft_manifest(&self.plan, &self.old_manifest, run_id, argv);
        m.jobs = jobs;
        if self.old_manifest.adaptive.is_some() {
            // An adaptive run's rounds were drawn from its old outcomes: graded
            // again, its trials are a fixed design of what ran (SPEC §20).
            m.planned_trials = Some(self.work.len());
        }
        m.regraded_from = Some(RegradedFrom {
            dir: self.old.path.display().to_string(),
            run_id: self.old_manifest.run_id.clone(),
            grader_sha256: self.old_manifest.grader_sha256.clone(),
            trajectories_run_id: self.old_manifest.trajectories_run_id().to_string(),
            fixture_changes: self.fixture_changes.clone(),
        });
        m
    }

    /// The recorded trials, each graded again by [`trial::regrade::regrade`], in the old run's order.
    pub fn source(&self, jobs: usize) -> Planned {
        let (plan, old, records) = (self.plan.clone(), self.old.clone(), self.records.clone());
        let trial: Arc<TrialFn> =
            Arc::new(move |i, at| trial::regrade::regrade(&plan, &plan.cases[at.case], &old, &records[i]));
        Planned::new(&self.plan, self.work.clone(), Default::default(), jobs, trial)
    }
}
