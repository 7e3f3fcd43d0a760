//! What loading checks across the suite once every part is read: the tool
//! names that checks, faults and perturbations mention, and the agents and
//! perturbations that gates name.

use crate::spec::Suite;
use crate::spec::gate;

/// Every tool name the suite mentions outside `suite:tool` (a tool's
/// `requires`, a check, a fault rule) must name a declared tool: each unknown
/// name is its own error, at the line that mentions it, with the nearest
/// declared name. Names of tools whose declaration failed (`dropped`) were
/// reported there and are not reported again.
pub(super) fn check_tool_names(suite: &Suite, dropped: &[String]) -> Vec<String> {
    let known: Vec<&str> = suite.tools.iter().map(|t| t.name.as_str()).collect();
    let mut errors = Vec::new();
    let mut unknown = |at: &str, what: &str, name: &str| {
        if known.contains(&name) || dropped.iter().any(|d| d == name) {
            return;
        }
        // A tool whose declaration failed is still what the user meant.
        let near =
            crate::util::names::did_you_mean(name, known.iter().copied().chain(dropped.iter().map(String::as_str)));
        let list = if known.is_empty() { "none declared".to_string() } else { known.join(", ") };
        errors.push(format!("{at}: {what} names an unknown tool '{name}'{near}; the suite's tools: {list}"));
    };
    for t in &suite.tools {
        let at = if t.location.is_empty() { suite.location.as_str() } else { t.location.as_str() };
        for r in &t.requires {
            unknown(at, &format!("tool '{}': 'requires'", t.name), r);
        }
    }
    for name in suite.faults.keys() {
        unknown(&suite.location, "'faults'", name);
    }
    for case in &suite.cases {
        for name in case.faults.iter().flat_map(|f| f.keys()) {
            unknown(&case.location, &format!("case '{}': 'faults'", case.id), name);
        }
    }
    // Perturbations (SPEC §17): the tools they drop or fault, the suite's and each case's own.
    let perturbs = suite
        .perturb
        .iter()
        .map(|p| (None, p))
        .chain(suite.cases.iter().flat_map(|c| c.perturb.iter().map(move |p| (Some(c.id.as_str()), p))));
    for (case, (name, p)) in perturbs {
        let of = match case {
            Some(id) => format!("case '{id}': perturbation '{name}'"),
            None => format!("perturbation '{name}'"),
        };
        for t in p.drop_tools.iter().flatten() {
            unknown(&p.location, &format!("{of}: 'drop_tools'"), t);
        }
        for t in p.faults.iter().flat_map(|f| f.keys()) {
            unknown(&p.location, &format!("{of}: 'faults'"), t);
        }
    }
    for m in &suite.check_tools {
        unknown(&m.at, &m.what, &m.name);
    }
    errors
}

/// Gates that name agents (`pass^3@B`, `delta pass^1 B-A`) name agents of
/// the suite: a misspelt name would make a gate no run can decide.
pub(super) fn check_gate_agents(suite: &Suite) -> Vec<String> {
    let names: Vec<&str> = suite.agents.iter().map(|a| a.name.as_str()).collect();
    let list = || if names.is_empty() { "none declared".to_string() } else { names.join(", ") };
    let mut errors = Vec::new();
    for g in &suite.gates {
        match &g.scope {
            gate::Scope::Run => {}
            gate::Scope::Agent(a) if names.contains(&a.as_str()) => {}
            gate::Scope::Agent(a) => errors.push(format!(
                "{}: evalua.suite.gate: '{}' names agent '{a}', which the suite does not declare; its agents: {}",
                suite.location,
                g.name,
                list()
            )),
            gate::Scope::Drop(p) | gate::Scope::Perturbation(p) => {
                let cases = suite.cases.iter().flat_map(|c| c.perturb.keys());
                let known: std::collections::BTreeSet<&str> =
                    suite.perturb.keys().chain(cases).map(String::as_str).collect();
                if !known.contains(p.as_str()) {
                    let list: Vec<&str> = known.into_iter().collect();
                    errors.push(format!(
                        "{}: evalua.suite.gate: '{}' names perturbation '{p}', which the suite does not declare; its perturbations: {}",
                        suite.location,
                        g.name,
                        if list.is_empty() { "none declared".to_string() } else { list.join(", ") }
                    ));
                }
            }
            gate::Scope::Delta { pair } => {
                if gate::Scope::delta_pair(pair, &names).is_none() {
                    errors.push(format!(
                        "{}: evalua.suite.gate: '{}' must name two different agents of the suite as CANDIDATE-BASE; its agents: {}",
                        suite.location,
                        g.name,
                        list()
                    ));
                }
            }
        }
    }
    errors
}
