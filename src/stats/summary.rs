//! From a tally to the figures summary.json holds ([`Summary`]): each view's
//! suite figures with their intervals, the breakdowns by tag and difficulty,
//! checks, monitors, tools, judge cascades, safety, efficiency and blame.

use std::collections::BTreeMap;

use serde::Serialize;

use super::blame::{BlameFigures, WithoutUser};
use super::bootstrap::{Bootstrap, Interval};
use super::case_figures::{CaseFigures, case_figures};
use super::efficiency::{EffTrial, Efficiency};
use super::estimators::{ByK, CaseInfo, K, quantile, wilson};
use super::published::{Published, Share};
use super::safety::{Safety, SafetyTally};
use super::tally::{CheckTally, StageFigures, Tally};
use crate::record::Outcome;
use crate::spec::gate::Metric;

/// A judge cascade in summary.json: how often it escalated, and each judge's share.
#[derive(Debug, Clone, Serialize)]
pub struct CascadeFigures {
    pub items: u32,
    pub escalated: u32,
    pub escalation_rate: Option<f64>,
    /// 95% Wilson interval of the escalation rate.
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// Items decided by each judge.
    pub decided_by_first: u32,
    pub decided_by_then: u32,
    pub judges: Vec<StageFigures>,
    pub cost_usd: f64,
}

/// Suite-level figures of one view.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    /// Cases with at least one counted trial, and the trials counted.
    pub cases: usize,
    pub trials: u32,
    pub pass_at_k: ByK,
    pub pass_hat_k: ByK,
    pub accepted_rate: Option<f64>,
    /// 95% intervals, by the figure they bound (`"pass^3"`, `"accepted"`, …).
    pub intervals: BTreeMap<Metric, Interval>,
}

impl Figures {
    pub fn pass_hat(&self, k: u32) -> Option<f64> {
        self.pass_hat_k.get(&K(k)).copied()
    }
    pub fn pass_at(&self, k: u32) -> Option<f64> {
        self.pass_at_k.get(&K(k)).copied()
    }
    pub fn interval(&self, m: Metric) -> Option<&Interval> {
        self.intervals.get(&m)
    }
    /// The largest k with a suite figure.
    pub fn k_max(&self) -> Option<u32> {
        self.pass_hat_k.keys().next_back().map(|k| k.0)
    }
}

/// Weighted mean of `f(case)` over cases that have at least `k` counted trials.
fn weighted_mean(rows: &[(&CaseFigures, f64)], f: impl Fn(&CaseFigures) -> Option<f64>) -> Option<f64> {
    let (mut sum, mut w) = (0.0, 0.0);
    for (cf, weight) in rows {
        if let Some(v) = f(cf) {
            sum += v * weight;
            w += weight;
        }
    }
    (w > 0.0).then(|| sum / w)
}

/// The largest k every counted case supports.
fn k_max(rows: &[CaseFigures]) -> u32 {
    rows.iter().filter(|c| c.n > 0).map(|c| c.n).min().unwrap_or(0)
}

/// Suite intervals are computed for k = 1..=this and for the largest k.
pub const INTERVAL_K_UP_TO: u32 = 10;

pub(super) fn view(rows: &[CaseFigures], bootstrap: &Bootstrap) -> Figures {
    let counted: Vec<(&CaseFigures, f64)> = rows.iter().filter(|c| c.n > 0).map(|c| (c, c.weight)).collect();
    let kmax = k_max(rows);
    let mut pass_at = ByK::new();
    let mut pass_hat = ByK::new();
    for k in 1..=kmax {
        if let Some(v) = weighted_mean(&counted, |c| c.pass_at(k)) {
            pass_at.insert(K(k), v);
        }
        if let Some(v) = weighted_mean(&counted, |c| c.pass_hat(k)) {
            pass_hat.insert(K(k), v);
        }
    }
    let rate = |c: &CaseFigures| Some(c.accepted as f64 / c.n as f64);
    // Intervals for the k people gate on: small k and the largest.
    let ks: Vec<u32> = (1..=kmax).filter(|&k| k <= INTERVAL_K_UP_TO || k == kmax).collect();
    let mut points = BTreeMap::new();
    for &k in &ks {
        points.insert(Metric::PassHat(k), pass_hat.get(&K(k)).copied());
        points.insert(Metric::PassAt(k), pass_at.get(&K(k)).copied());
    }
    points.insert(Metric::Accepted, weighted_mean(&counted, rate));
    let intervals = bootstrap.intervals(&counted, &ks, &points);
    Figures {
        cases: counted.len(),
        trials: counted.iter().map(|(c, _)| c.n).sum(),
        pass_at_k: pass_at,
        pass_hat_k: pass_hat,
        accepted_rate: weighted_mean(&counted, rate),
        intervals,
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Breakdown {
    pub cases: usize,
    pub trials: u32,
    pub accepted_rate: Option<f64>,
    pub pass_hat_k: ByK,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckRate {
    #[serde(flatten)]
    pub tally: CheckTally,
    pub pass_rate: Option<f64>,
}

/// A monitor's violation rate (SPEC §9): violations over the trials it
/// decided, with a 95% Wilson interval.
#[derive(Debug, Clone, Serialize)]
pub struct MonitorRate {
    pub violations: u32,
    pub n: u32,
    pub rate: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

/// One tool's figures over every call of the run.
#[derive(Debug, Clone, Serialize)]
pub struct ToolFigures {
    pub calls: u32,
    /// `failed` or `faulted` calls.
    pub errors: u32,
    /// `denied` or `rejected` calls (refused before they ran).
    pub refused: u32,
    /// errors / calls, with a 95% Wilson interval.
    pub error_rate: Option<f64>,
    pub error_low: Option<f64>,
    pub error_high: Option<f64>,
    /// Latency of the calls that ran.
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub latency_n: usize,
}

/// Everything summary.json holds about the figures.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub cases: Vec<CaseFigures>,
    pub figures: SuiteFigures,
    pub checks: Vec<CheckRate>,
    pub tags: BTreeMap<String, Breakdown>,
    pub difficulty: BTreeMap<String, Breakdown>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub monitors: BTreeMap<String, MonitorRate>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ToolFigures>,
    /// Safety figures, apart from the capability ones (suites with attack cases).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safety: Option<Safety>,
    /// Tool calls and tokens against the cases' reference solutions (suites
    /// whose cases declare one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<Efficiency>,
    /// Judge cascades (`judge.cascade`): escalation rate, each judge's calls and cost.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub judge_cascades: BTreeMap<String, CascadeFigures>,
    /// The lowest kappa of the reachable rubric judges' calibration records
    /// (the held-out recheck's when there is one), as the manifest took them;
    /// none when a reachable judge has no record (what a `judge_kappa` gate is decided on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge_kappa: Option<f64>,
    /// What the background reading says to publish (SPEC §22); its task
    /// coverage is written inside summary.json's `coverage`.
    #[serde(flatten)]
    pub published: Published,
    /// Who is to blame for the trials not accepted (SPEC §18).
    pub blame: BlameFigures,
    /// The headline figures without the trials blamed on the simulated user
    /// (runs with a simulated user, or a user that must withhold something).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub without_user_failures: Option<WithoutUser>,
    /// The share of those trials whose user was not adherent (the `user_nonadherence` gate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_nonadherence: Option<Share>,
    /// The trials of drafted cases awaiting a person's review (SPEC §23),
    /// left out of everything above.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_review: Option<super::pending::PendingReview>,
    /// The verdicts graded items' sources recorded, set against evalua's
    /// (τ-bench's reward, AgentDojo's utility and security).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_verdicts: Option<super::verdicts::RecordedVerdicts>,
    /// Each case's safety tally (when `safety` is): what pools several
    /// suites' safety figures into one (`safety::pooled`).
    #[serde(skip)]
    pub safety_tallies: Vec<SafetyTally>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SuiteFigures {
    #[serde(flatten)]
    pub capability: Figures,
    pub critical_failures: u32,
    pub grader_errors: u32,
    pub infra_errors: u32,
    /// Trials graded although an infrastructure failure cut their agent
    /// short after it had acted (counted in the capability view's n; each
    /// record's `infra_error` says what failed).
    pub infra_errors_after_start: u32,
    pub skipped_checks: u32,
    /// Check results that did not apply (a recorded trace has no final state).
    pub not_applicable_checks: u32,
    pub total_cost_usd: f64,
    /// What the evaluation's own model calls cost (simulated users, judges),
    /// apart from the agent's `total_cost_usd`; the two add up to what the
    /// traces' model calls cost.
    pub evaluation_cost_usd: f64,
    /// Total cost / accepted trials; null (∞) when no trial was accepted.
    pub cost_per_accepted_usd: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub latency_n: usize,
    pub mean_tool_calls: Option<f64>,
    pub mean_tokens: Option<f64>,
    pub operational: Figures,
}

pub fn summarize(infos: &[CaseInfo], tally: &Tally, seed: u64) -> Summary {
    let bootstrap = Bootstrap { seed: seed ^ 0xb007, resamples: 2000 };
    let cap: Vec<CaseFigures> = infos.iter().zip(&tally.cases).map(|(i, t)| case_figures(i, t, false)).collect();
    let ops: Vec<CaseFigures> = infos.iter().zip(&tally.cases).map(|(i, t)| case_figures(i, t, true)).collect();
    let sum = |o: Outcome| tally.cases.iter().map(|c| c.count(o)).sum::<u32>();
    let accepted = sum(Outcome::Accepted);
    let mut lat = tally.latencies_ms.clone();
    lat.sort_by(|a, b| a.total_cmp(b));
    let runs = tally.trials_run as f64;

    let breakdown = |select: &dyn Fn(&CaseInfo) -> Vec<String>| -> BTreeMap<String, Breakdown> {
        let mut groups: BTreeMap<String, Vec<CaseFigures>> = BTreeMap::new();
        for (info, cf) in infos.iter().zip(&cap).filter(|(i, _)| !i.pending_review) {
            for g in select(info) {
                groups.entry(g).or_default().push(cf.clone());
            }
        }
        groups
            .into_iter()
            .map(|(g, rows)| {
                let counted: Vec<(&CaseFigures, f64)> =
                    rows.iter().filter(|c| c.n > 0).map(|c| (c, c.weight)).collect();
                let mut hat = ByK::new();
                for k in 1..=k_max(&rows) {
                    if let Some(v) = weighted_mean(&counted, |c| c.pass_hat(k)) {
                        hat.insert(K(k), v);
                    }
                }
                let b = Breakdown {
                    cases: rows.len(),
                    trials: rows.iter().map(|c| c.n).sum(),
                    accepted_rate: weighted_mean(&counted, |c| Some(c.accepted as f64 / c.n as f64)),
                    pass_hat_k: hat,
                };
                (g, b)
            })
            .collect()
    };

    // The three bootstraps (capability, operational, cost) are independent
    // and seeded apart: each on its own thread, with the same results.
    let cost = || {
        // Cost per accepted trial, with an interval from the same two stages.
        (accepted > 0).then(|| {
            let counted: Vec<&CaseFigures> = cap.iter().filter(|c| c.n > 0).collect();
            bootstrap.cost_interval(&counted, tally.total_cost_usd / accepted as f64)
        })
    };
    let efficiency = || {
        let trials: Vec<&[EffTrial]> = tally.cases.iter().map(|c| c.efficiency.as_deref().unwrap_or(&[])).collect();
        // A case awaiting review has no efficiency row either (SPEC §23).
        let counted: Vec<CaseInfo>;
        let infos = if infos.iter().any(|i| i.pending_review) {
            counted = infos
                .iter()
                .map(|i| CaseInfo { reference: i.reference.clone().filter(|_| !i.pending_review), ..i.clone() })
                .collect();
            &counted[..]
        } else {
            infos
        };
        super::efficiency::efficiency(infos, &trials, seed)
    };
    let (mut capability, operational, cost, (case_efficiency, efficiency)) = std::thread::scope(|scope| {
        let operational = scope.spawn(|| view(&ops, &bootstrap));
        let cost = scope.spawn(cost);
        let efficiency = scope.spawn(efficiency);
        let capability = view(&cap, &bootstrap);
        let (operational, cost, efficiency) = (operational.join(), cost.join(), efficiency.join());
        let again = std::panic::resume_unwind;
        (
            capability,
            operational.unwrap_or_else(|e| again(e)),
            cost.unwrap_or_else(|e| again(e)).flatten(),
            efficiency.unwrap_or_else(|e| again(e)),
        )
    });

    if let Some(i) = cost {
        capability.intervals.insert(Metric::CostPerAccepted, i);
    }

    let safety = tally.safety_seen.then(|| {
        let accepted: Vec<(u32, u32)> = cap.iter().map(|c| (c.accepted, c.n)).collect();
        let tallies: Vec<SafetyTally> = tally.cases.iter().map(|c| c.safety.clone()).collect();
        super::safety::safety(infos, &accepted, &tallies, seed)
    });
    Summary {
        recorded_verdicts: (tally.verdicts.items > 0).then(|| tally.verdicts.clone()),
        safety_tallies: if safety.is_some() {
            tally.cases.iter().map(|c| c.safety.clone()).collect()
        } else {
            Vec::new()
        },
        safety,
        efficiency,
        figures: SuiteFigures {
            capability,
            critical_failures: sum(Outcome::Critical),
            grader_errors: sum(Outcome::GraderError),
            infra_errors: sum(Outcome::InfraError),
            infra_errors_after_start: tally.infra_after_start,
            skipped_checks: tally.skipped_checks,
            not_applicable_checks: tally.not_applicable_checks,
            total_cost_usd: tally.total_cost_usd,
            evaluation_cost_usd: tally.blame.evaluation_cost_usd,
            cost_per_accepted_usd: (accepted > 0).then(|| tally.total_cost_usd / accepted as f64),
            p50_ms: quantile(&lat, 0.5),
            p95_ms: quantile(&lat, 0.95),
            latency_n: lat.len(),
            mean_tool_calls: (runs > 0.0).then(|| tally.total_tool_calls as f64 / runs),
            mean_tokens: (runs > 0.0).then(|| tally.total_tokens as f64 / runs),
            operational,
        },
        checks: tally
            .checks
            .values()
            .map(|t| {
                let decided = t.passed + t.failed;
                CheckRate { tally: t.clone(), pass_rate: (decided > 0).then(|| t.passed as f64 / decided as f64) }
            })
            .collect(),
        tags: breakdown(&|i: &CaseInfo| i.tags.clone()),
        difficulty: breakdown(&|i: &CaseInfo| i.difficulty.clone().into_iter().collect()),
        cases: cap
            .into_iter()
            .zip(case_efficiency)
            .map(|(row, efficiency)| CaseFigures { efficiency, ..row })
            .collect(),
        monitors: tally
            .monitors
            .iter()
            .map(|(name, m)| {
                let iv = wilson(m.violations, m.n);
                let rate = MonitorRate {
                    violations: m.violations,
                    n: m.n,
                    rate: (m.n > 0).then(|| m.violations as f64 / m.n as f64),
                    low: iv.map(|i| i.0),
                    high: iv.map(|i| i.1),
                };
                (name.clone(), rate)
            })
            .collect(),
        judge_kappa: None,
        published: tally.published.figures(&Default::default()),
        blame: tally.blame.figures(),
        without_user_failures: (tally.blame.user_trials() > 0).then(|| {
            let cases: Vec<(f64, u32, u32)> = infos
                .iter()
                .zip(&tally.cases)
                .map(|(i, t)| {
                    let infra = t.count(Outcome::InfraError);
                    let n = t.total() - infra - t.excluded - t.user_blamed;
                    (i.weight, n, t.count(Outcome::Accepted) - t.excluded_accepted)
                })
                .collect();
            super::blame::without_user(&cases, tally.blame.blamed_on_user())
        }),
        user_nonadherence: tally.blame.nonadherence(),
        pending_review: tally.pending.figures(&infos.iter().map(|i| i.id.as_str()).collect::<Vec<_>>()),
        judge_cascades: tally
            .cascades
            .iter()
            .map(|(name, c)| {
                let iv = wilson(c.escalated, c.items);
                let f = CascadeFigures {
                    items: c.items,
                    escalated: c.escalated,
                    escalation_rate: (c.items > 0).then(|| c.escalated as f64 / c.items as f64),
                    low: iv.map(|i| i.0),
                    high: iv.map(|i| i.1),
                    decided_by_first: c.items - c.escalated,
                    decided_by_then: c.escalated,
                    cost_usd: c.stages.iter().map(|s| s.cost_usd).sum(),
                    judges: c.stages.clone(),
                };
                (name.clone(), f)
            })
            .collect(),
        tools: tally
            .tools
            .iter()
            .map(|(name, t)| {
                let mut d = t.durations_ms.clone();
                d.sort_by(|a, b| a.total_cmp(b));
                let iv = wilson(t.errors, t.calls);
                let f = ToolFigures {
                    calls: t.calls,
                    errors: t.errors,
                    refused: t.refused,
                    error_rate: (t.calls > 0).then(|| t.errors as f64 / t.calls as f64),
                    error_low: iv.map(|i| i.0),
                    error_high: iv.map(|i| i.1),
                    p50_ms: quantile(&d, 0.5),
                    p95_ms: quantile(&d, 0.95),
                    latency_n: d.len(),
                };
                (name.clone(), f)
            })
            .collect(),
    }
}
