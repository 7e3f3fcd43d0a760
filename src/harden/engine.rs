//! Harden a plan: every applicable adversary plays every case once, through
//! the run engine (`run::Scheduler` over a `run::Planned` source), and the
//! accepted trials become the report's holes.
//!
//! Each adversary is a trial number of its case (the `i`-th adversary: trial
//! `i + 1`), so its seed and work dir are the plan's as for any trial. The
//! built-in ones are driven here (`play`); a suite's own adversary is one
//! more condition of the plan, its agent named `adversary:NAME`, driven as
//! any agent (`agent::drive`). Nothing is written: traces and kept state go
//! nowhere, records only to the report.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::adversary::{self, Adversary, Builtin, CaseKind};
use super::advice::advice;
use super::play::{self, Observed};
use crate::error::{Error, Result};
use crate::record::harden::{CaseHoles, Hardened, Hole, Skipped};
use crate::record::{KeptState, Outcome, TrialRecord};
use crate::run::scheduler::Store;
use crate::run::{self, RunEvent, Scheduler, Sink};
use crate::spec::NamedAgent;
use crate::spec::harden::ADVERSARY_PREFIX;
use crate::trial::{self, Condition, Plan, Position};

/// What to play.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--adversary NAME`…: only these (empty: every one).
    pub adversaries: Vec<String>,
    pub jobs: usize,
}

/// The adversaries to play: the named ones, or every built-in one and the suite's own.
fn pick(plan: &Plan, names: &[String]) -> Result<Vec<Adversary>> {
    let mut all: Vec<Adversary> = Builtin::ALL.into_iter().map(Adversary::Builtin).collect();
    all.extend(plan.suite.adversaries.iter().map(|a| Adversary::Suite(a.name.clone())));
    if names.is_empty() {
        return Ok(all);
    }
    let known = || all.iter().map(|a| a.name().to_string()).collect::<Vec<_>>().join(", ");
    let mut out = Vec::new();
    for n in names {
        let a = all
            .iter()
            .find(|a| a.name() == n)
            .ok_or_else(|| Error::Input(format!("--adversary {n}: no such adversary; the adversaries: {}", known())))?;
        if !out.contains(a) {
            out.push(a.clone());
        }
    }
    Ok(out)
}

/// Each case's `harden.skip` names adversaries there are.
fn check_skips(plan: &Plan) -> Result<()> {
    let suite_names: Vec<&str> = plan.suite.adversaries.iter().map(|a| a.name.as_str()).collect();
    let mut errors = Vec::new();
    for c in &plan.cases {
        for n in c.spec.harden.iter().flat_map(|h| &h.skip) {
            if Builtin::parse(n).is_none() && !suite_names.contains(&n.as_str()) {
                errors.push(format!(
                    "{}: case '{}': harden.skip names '{n}', which is no adversary (built in: {})",
                    c.spec.location,
                    c.spec.id,
                    Builtin::ALL.map(|b| b.name()).join(", ")
                ));
            }
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(Error::Input(errors.join("\n"))) }
}

/// What case `i` offers, for [`adversary::applies`].
fn case_kind(plan: &Plan, i: usize) -> CaseKind {
    let c = &plan.cases[i];
    CaseKind {
        writes: c.tools.iter().any(|t| t.spec.effect != "read"),
        coding: c.work.is_some() || !c.spec.tests.is_empty(),
        judged: plan.suite.judges.iter().any(|j| j.cases.contains(&c.spec.id)),
    }
}

/// The (case, trial number) pairs to play, and each case's skipped adversaries.
fn work(plan: &Plan, picked: &[Adversary]) -> (Vec<(usize, u32)>, Vec<Skipped>) {
    let (mut work, mut skipped) = (Vec::new(), Vec::new());
    for (ci, c) in plan.cases.iter().enumerate() {
        let kind = case_kind(plan, ci);
        let skip = c.spec.harden.as_ref();
        let mut left_out = Vec::new();
        for (ai, a) in picked.iter().enumerate() {
            if skip.is_some_and(|h| h.skip.iter().any(|n| n == a.name())) {
                left_out.push(a.name().to_string());
                continue;
            }
            let plays = match a {
                Adversary::Builtin(b) => adversary::applies(*b, kind),
                // A case with its own agent is played by it, whatever the condition.
                Adversary::Suite(_) => c.spec.agent.is_none(),
            };
            if plays {
                work.push((ci, ai as u32 + 1));
            }
        }
        if let (Some(h), false) = (skip, left_out.is_empty()) {
            skipped.push(Skipped { case: c.spec.id.clone(), adversaries: left_out, reason: h.reason.clone() });
        }
    }
    (work, skipped)
}

/// Nothing of a harden trial is kept.
struct Nowhere;

impl Store for Nowhere {
    fn write_state(&self, _: &TrialRecord, _: &KeptState) -> std::io::Result<()> {
        Ok(())
    }
    fn write_traces(&self, _: &[(&TrialRecord, &[u8])]) -> std::io::Result<()> {
        Ok(())
    }
}

/// The finished trials' records, in plan order.
#[derive(Default)]
struct Records(Vec<TrialRecord>);

impl Sink for Records {
    fn event(&mut self, ev: &RunEvent<'_>) -> Result<()> {
        if let RunEvent::TrialFinished { record, .. } = ev {
            self.0.push((*record).clone());
        }
        Ok(())
    }
}

type Seen = Arc<Mutex<HashMap<(usize, u32), Observed>>>;

/// Harden `plan`: play the adversaries, one trial each per case, and say
/// where they were accepted.
pub fn harden(mut plan: Plan, opts: &Options) -> Result<Hardened> {
    let picked = pick(&plan, &opts.adversaries)?;
    check_skips(&plan)?;
    let (work, skipped) = work(&plan, &picked);
    // Each suite adversary: a named agent of this plan and a condition of its own.
    let mut condition_of = Vec::new();
    for a in &picked {
        condition_of.push(match a {
            Adversary::Builtin(_) => 0,
            Adversary::Suite(n) => {
                let spec = plan.suite.adversaries.iter().find(|x| &x.name == n).map(|x| x.spec.clone());
                let name = format!("{ADVERSARY_PREFIX}{n}");
                plan.suite.agents.extend(spec.map(|spec| NamedAgent { name: name.clone(), spec }));
                plan.conditions.push(Condition { agent: Some(name), perturbation: None });
                plan.conditions.len() - 1
            }
        });
    }
    plan.keep_state = false;
    let plan = Arc::new(plan);
    let seen: Seen = Arc::default();
    let trial_fn = {
        let (plan, picked, seen) = (plan.clone(), Arc::new(picked.clone()), seen.clone());
        move |_: usize, pos: Position| {
            let adv = &picked[pos.number as usize - 1];
            let at = Position { condition: condition_of[pos.number as usize - 1], ..pos };
            trial::run(&plan, at, |t| {
                let mut o = play::observe(t);
                let end = match adv {
                    Adversary::Builtin(b) => play::play(*b, t, &mut o),
                    Adversary::Suite(_) => crate::agent::drive(t),
                };
                seen.lock().unwrap_or_else(|e| e.into_inner()).insert((pos.case, pos.number), o);
                end
            })
        }
    };
    let jobs = opts.jobs.max(1);
    let source = Arc::new(run::Planned::new(&plan, work, Default::default(), jobs, Arc::new(trial_fn)));
    let mut records = Records::default();
    Scheduler::new(jobs).execute(&Nowhere, source, &mut run::AsMade, &mut [&mut records])?;
    let seen = std::mem::take(&mut *seen.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(holes(&plan, &picked, records.0, &seen, skipped))
}

/// The report: per case in plan order, the adversaries it accepted.
fn holes(
    plan: &Plan,
    picked: &[Adversary],
    records: Vec<TrialRecord>,
    seen: &HashMap<(usize, u32), Observed>,
    skipped: Vec<Skipped>,
) -> Hardened {
    let mut out = Hardened {
        adversaries: picked.iter().map(|a| a.name().to_string()).collect(),
        trials: records.len(),
        skipped,
        ..Default::default()
    };
    let mut by_case: HashMap<&str, Vec<&TrialRecord>> = HashMap::new();
    for r in &records {
        by_case.entry(r.case.as_str()).or_default().push(r);
        if r.outcome == Outcome::InfraError {
            let adv = picked.get(r.trial as usize - 1).map(|a| a.name()).unwrap_or("?");
            out.not_played.push(format!("{} / {adv}: {}", r.case, r.error.as_deref().unwrap_or("infra_error")));
        }
    }
    for (ci, c) in plan.cases.iter().enumerate() {
        let mut holes = Vec::new();
        for r in by_case.get(c.spec.id.as_str()).into_iter().flatten() {
            let adv = &picked[r.trial as usize - 1];
            let o = seen.get(&(ci, r.trial)).cloned().unwrap_or_default();
            let accepted = r.outcome == Outcome::Accepted && !o.not_applicable;
            if !accepted && o.peeked.is_empty() {
                continue;
            }
            let mut passed: Vec<String> = r
                .checks
                .iter()
                .filter(|k| k.passed == Some(true) && k.monitor.is_none())
                .map(|k| k.name.clone())
                .collect();
            if !o.peeked.is_empty() {
                passed = o.peeked.iter().map(|p| format!("read {p}")).collect();
            }
            holes.push(Hole {
                adversary: adv.name().to_string(),
                passed_checks: passed,
                advice: advice(adv, &o.kinds),
            });
        }
        out.holes += holes.len();
        out.cases.push(CaseHoles { case: c.spec.id.clone(), holes });
    }
    out
}
