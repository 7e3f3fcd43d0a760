//! `evalua run SUITE --perturb [NAME]…` (SPEC §17): the perturbations the
//! run asks for become the plan's conditions beside the baseline, and each
//! case the plan holds gets its variant for each that applies to it (the
//! suite's, or the case's own of the same name).

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::spec::Perturbation;
use crate::trial::{CasePlan, Condition, Plan};
use crate::util::paths::display_path;

/// Every perturbation the suite declares, by name (the suite's and its cases').
pub fn declared(plan: &Plan) -> BTreeSet<String> {
    let cases = plan.cases.iter().flat_map(|c| c.spec.perturb.keys());
    plan.suite.perturb.keys().chain(cases).cloned().collect()
}

/// Run the baseline and the perturbations `names` (none: every one the
/// suite declares), each with the run's agent. An unknown name is an input
/// error listing the known ones.
pub fn select(plan: &mut Plan, names: &[String]) -> Result<()> {
    let known = declared(plan);
    let path = display_path(&plan.suite.path);
    if known.is_empty() {
        return Err(Error::Input(format!(
            "{path}: --perturb: the suite declares no perturbation (perturb = {{ name = {{ … }} }} in evalua.suite or a case)"
        )));
    }
    let mut chosen: Vec<String> = Vec::new();
    for n in names {
        if !known.contains(n) {
            let list: Vec<&str> = known.iter().map(String::as_str).collect();
            return Err(Error::Input(format!(
                "{path}: --perturb {n}: the suite declares no perturbation '{n}'{} (known: {})",
                crate::util::names::did_you_mean(n, list.iter().copied()),
                list.join(", ")
            )));
        }
        if !chosen.contains(n) {
            chosen.push(n.clone());
        }
    }
    if chosen.is_empty() {
        chosen = known.into_iter().collect();
    }
    for i in 0..plan.cases.len() {
        for name in &chosen {
            let case = &plan.cases[i];
            let Some(p) = case.spec.perturb.get(name).or_else(|| plan.suite.perturb.get(name)) else { continue };
            let v = variant(plan, case, p)?;
            plan.cases[i].variants.insert(name.clone(), v);
        }
    }
    let agent = plan.conditions.first().and_then(|c| c.agent.clone());
    plan.conditions = std::iter::once(None)
        .chain(chosen.into_iter().map(Some))
        .map(|perturbation| Condition { agent: agent.clone(), perturbation })
        .collect();
    Ok(())
}

/// The case as `p` changes it: its fixture's template, the tools it still
/// offers, its fault rules; what its Lua table holds (input, user, checks)
/// is replaced when a trial runs (`trial::perturb`).
fn variant(plan: &Plan, case: &CasePlan, p: &Perturbation) -> Result<CasePlan> {
    let mut spec = case.spec.clone();
    spec.perturb = Default::default();
    if let Some(u) = &p.user {
        spec.user = Some(Box::new(u.clone()));
    }
    if let Some(checks) = &p.checks {
        spec.checks = checks.len() as u32;
    }
    let template = match &p.fixture {
        Some(f) => {
            spec.fixture = Some(f.clone());
            let files: Vec<&std::path::Path> =
                plan.suite.schema.iter().map(|s| s.as_path()).chain([f.as_path()]).collect();
            plan.db
                .template(&files, plan.suite.max_fixture_bytes)
                .map_err(|e| Error::Input(format!("{}: case '{}': {e}", p.location, case.spec.id)))?
        }
        None => case.template.clone(),
    };
    let dropped = p.drop_tools.clone().unwrap_or_default();
    let tools = Arc::new(case.tools.iter().filter(|t| !dropped.contains(&t.spec.name)).cloned().collect());
    let mut faults = (*case.faults).clone();
    for (tool, rules) in p.faults.iter().flatten() {
        match rules {
            Some(r) if !r.is_empty() => {
                faults.insert(tool.clone(), r.clone());
            }
            _ => {
                faults.remove(tool);
            }
        }
    }
    Ok(CasePlan {
        spec,
        trials: case.trials,
        template,
        tools,
        clock: case.clock,
        clock_text: case.clock_text.clone(),
        work: case.work.clone(),
        faults: Arc::new(faults),
        variants: Default::default(),
    })
}
