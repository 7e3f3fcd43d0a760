//! Gate decisions on a run's figures (SPEC §14): which gates this run can
//! decide, each gate's figure and interval, and no pass on an incomplete run.

use super::summary::Summary;
use crate::spec::gate::{self, Gate, Metric, Verdict};

/// The note a gate gets when it cannot pass because the run is incomplete.
pub const INCOMPLETE_NOTE: &str = "the run is incomplete; --allow-incomplete decides on the trials that ran";

/// Whose run a run dir is, for the gates that name agents (SPEC §14).
#[derive(Debug, Clone, Copy, Default)]
pub struct GateContext<'a> {
    /// The agent that ran (`--agent`, else the suite's default), by name.
    pub agent: Option<&'a str>,
    /// The run dir is one agent's part of an interleaved run, which decides
    /// the gates naming the other agents and the differences.
    pub interleaved: bool,
}

/// Decide the gates on this run's figures; on an incomplete run none passes
/// unless `allow_incomplete`. A plain gate and a gate naming the run's agent
/// are decided on its figures. A gate naming another agent, or a difference
/// between two: left out of an agent's part of an interleaved run (that run
/// decides it), and failed elsewhere (this run cannot decide it).
pub fn decide_gates_for(
    gates: &[Gate],
    summary: &Summary,
    complete: bool,
    allow_incomplete: bool,
    ctx: GateContext<'_>,
) -> Vec<Verdict> {
    let mut own = Vec::new();
    let mut others = Vec::new();
    for g in gates {
        match &g.scope {
            gate::Scope::Run => own.push(g.clone()),
            gate::Scope::Agent(a) if Some(a.as_str()) == ctx.agent => own.push(g.clone()),
            _ if ctx.interleaved => {}
            gate::Scope::Agent(a) => others.push((g, format!("agent '{a}' did not run in this run"))),
            gate::Scope::Delta { .. } => others.push((
                g,
                "a difference between agents is decided by a run of both: evalua run SUITE --agent A --agent B".into(),
            )),
            gate::Scope::Drop(_) | gate::Scope::Perturbation(_) => others
                .push((g, "a robustness gate is decided by a run of perturbations: evalua run SUITE --perturb".into())),
        }
    }
    let mut out = decide_gates(&own, summary);
    for (g, why) in others {
        out.push(Verdict {
            name: g.name.clone(),
            threshold: g.threshold,
            value: None,
            on: g.on,
            passed: false,
            note: Some(why),
            undefined: false,
        });
    }
    if !complete && !allow_incomplete {
        for v in out.iter_mut().filter(|v| v.passed) {
            v.passed = false;
            v.note = Some(INCOMPLETE_NOTE.to_string());
        }
    }
    out
}

/// The point value and interval of a gate's figure.
pub fn gate_figure(summary: &Summary, metric: Metric) -> (Option<f64>, Option<(f64, f64)>) {
    let f = &summary.figures;
    let iv = f.capability.interval(metric).map(|i| (i.lower, i.upper));
    let count = |n: u32| (Some(n as f64), Some((n as f64, n as f64)));
    match metric {
        Metric::PassHat(k) => (f.capability.pass_hat(k), iv),
        Metric::PassAt(k) => (f.capability.pass_at(k), iv),
        Metric::Accepted => (f.capability.accepted_rate, iv),
        Metric::CriticalFailures => count(f.critical_failures),
        Metric::GraderErrors => count(f.grader_errors),
        Metric::InfraErrors => count(f.infra_errors),
        Metric::SkippedChecks => count(f.skipped_checks),
        Metric::CostPerAccepted => (Some(f.cost_per_accepted_usd.unwrap_or(f64::INFINITY)), iv),
        Metric::P50Ms => (f.p50_ms, None),
        Metric::P95Ms => (f.p95_ms, None),
        Metric::JudgeKappa => (summary.judge_kappa, None),
        Metric::UserNonadherence => match &summary.user_nonadherence {
            Some(s) => (s.value, s.low.zip(s.high)),
            None => (Some(0.0), Some((0.0, 0.0))),
        },
        // A figure of a run of perturbations, not of one run's records.
        Metric::Recovery => (None, None),
    }
}

/// Decide every gate on the summary's figures.
pub fn decide_gates(gates: &[Gate], summary: &Summary) -> Vec<Verdict> {
    gates
        .iter()
        .map(|g| {
            let (point, interval) = gate_figure(summary, g.metric);
            gate::decide(g, point, interval)
        })
        .collect()
}
