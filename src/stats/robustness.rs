//! What a changed detail or a cut tool costs (SPEC §17): each perturbation
//! of a run of perturbations paired with the baseline, trial by trial (the
//! trials of one block: the same case, number and seed), summary.json's
//! `robustness`.
//!
//! Pairs where either trial is an infrastructure error are left out, as the
//! capability figures leave such trials out.

use std::collections::HashMap;

use serde::Serialize;

use super::estimators::{quantile, wilson};
use crate::record::{Outcome, TrialRecord};

/// Resamples of each bootstrap interval.
const RESAMPLES: usize = 2000;

/// One perturbation against the baseline.
#[derive(Debug, Clone, Serialize)]
pub struct Robustness {
    pub name: String,
    /// Cases it applies to (with at least one pair).
    pub cases: usize,
    pub pairs: usize,
    /// The paired baseline trials.
    pub baseline: Count,
    pub perturbed: Count,
    /// Baseline pass^1 minus perturbed pass^1 over its cases; 95% interval resampling cases.
    pub drop: Estimate,
    /// Of the pairs whose baseline trial was accepted, the share whose perturbed trial was (95% Wilson).
    pub recovery: Share,
    /// Perturbed minus baseline, over the pairs where both were accepted.
    pub cost_to_recover: Cost,
    /// Cases accepted in every baseline trial and in no perturbed trial.
    pub broke: Vec<String>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Count {
    pub accepted: usize,
    pub n: usize,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Estimate {
    pub value: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Share {
    pub value: Option<f64>,
    pub n: usize,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

/// A median of paired differences, with its 95% interval resampling the pairs.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Median {
    pub median: Option<f64>,
    pub n: usize,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Cost {
    /// Tool calls the agent requested (rejected and faulted ones included).
    pub calls: Median,
    pub tokens: Median,
    pub wall_ms: Median,
    pub cost_usd: Median,
}

/// A trial as the pairing needs it.
#[derive(Debug, Clone, Copy)]
struct Brief {
    accepted: bool,
    costs: [f64; 4],
}

impl Brief {
    fn of(r: &TrialRecord) -> Brief {
        let tokens = (r.usage.input_tokens + r.usage.output_tokens) as f64;
        Brief {
            accepted: r.outcome == Outcome::Accepted,
            costs: [r.calls.requested as f64, tokens, r.wall_ms, r.usage.cost_usd],
        }
    }
}

/// The baseline's trials by (case, trial), infrastructure errors left out.
pub struct Baseline(HashMap<(String, u32), Brief>);

impl Baseline {
    pub fn new<'a>(records: impl IntoIterator<Item = &'a TrialRecord>) -> Baseline {
        Baseline(
            records
                .into_iter()
                .filter(|r| r.outcome != Outcome::InfraError)
                .map(|r| ((r.case.clone(), r.trial), Brief::of(r)))
                .collect(),
        )
    }
}

/// Perturbation `name`'s records (in plan order) paired with the baseline's.
pub fn robustness<'a>(
    name: &str,
    base: &Baseline,
    perturbed: impl IntoIterator<Item = &'a TrialRecord>,
    seed: u64,
) -> Robustness {
    // Per case (in plan order): its pairs (baseline, perturbed).
    let mut order: Vec<String> = Vec::new();
    let mut by_case: HashMap<String, Vec<(Brief, Brief)>> = HashMap::new();
    for r in perturbed.into_iter().filter(|r| r.outcome != Outcome::InfraError) {
        let Some(b) = base.0.get(&(r.case.clone(), r.trial)) else { continue };
        if !by_case.contains_key(&r.case) {
            order.push(r.case.clone());
        }
        by_case.entry(r.case.clone()).or_default().push((*b, Brief::of(r)));
    }
    let pairs: Vec<(Brief, Brief)> = order.iter().flat_map(|c| by_case[c].iter().copied()).collect();
    let count =
        |f: fn(&(Brief, Brief)) -> bool| Count { accepted: pairs.iter().filter(|p| f(p)).count(), n: pairs.len() };
    let rate = |ps: &[(Brief, Brief)], side: fn(&(Brief, Brief)) -> bool| {
        ps.iter().filter(|p| side(p)).count() as f64 / ps.len() as f64
    };
    let drops: Vec<f64> =
        order.iter().map(|c| rate(&by_case[c], |p| p.0.accepted) - rate(&by_case[c], |p| p.1.accepted)).collect();
    let recovered: Vec<&(Brief, Brief)> = pairs.iter().filter(|p| p.0.accepted).collect();
    let k = recovered.iter().filter(|p| p.1.accepted).count();
    let iv = wilson(k as u32, recovered.len() as u32);
    let both: Vec<&(Brief, Brief)> = pairs.iter().filter(|p| p.0.accepted && p.1.accepted).collect();
    let cost = |i: usize, salt: u64| {
        let diffs: Vec<f64> = both.iter().map(|p| p.1.costs[i] - p.0.costs[i]).collect();
        median(&diffs, seed ^ salt)
    };
    let broke = order
        .iter()
        .filter(|c| by_case[*c].iter().all(|p| p.0.accepted) && !by_case[*c].iter().any(|p| p.1.accepted))
        .cloned()
        .collect();
    Robustness {
        name: name.to_string(),
        cases: order.len(),
        pairs: pairs.len(),
        baseline: count(|p| p.0.accepted),
        perturbed: count(|p| p.1.accepted),
        drop: mean(&drops, seed),
        recovery: Share {
            value: (!recovered.is_empty()).then(|| k as f64 / recovered.len() as f64),
            n: recovered.len(),
            low: iv.map(|i| i.0),
            high: iv.map(|i| i.1),
        },
        cost_to_recover: Cost { calls: cost(0, 1), tokens: cost(1, 2), wall_ms: cost(2, 3), cost_usd: cost(3, 4) },
        broke,
    }
}

/// 2.5% and 97.5% quantiles of `stat` over resamples (with replacement) of `xs`.
fn bootstrap(xs: &[f64], seed: u64, stat: fn(&[f64]) -> f64) -> (Option<f64>, Option<f64>) {
    if xs.is_empty() {
        return (None, None);
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut stats: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let sample: Vec<f64> = (0..xs.len()).map(|_| xs[rng.usize(..xs.len())]).collect();
            stat(&sample)
        })
        .collect();
    stats.sort_by(f64::total_cmp);
    (quantile(&stats, 0.025), quantile(&stats, 0.975))
}

fn mean_of(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

fn median_of(xs: &[f64]) -> f64 {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    quantile(&s, 0.5).unwrap_or(f64::NAN)
}

/// The mean of the per-case differences, its interval resampling cases.
fn mean(xs: &[f64], seed: u64) -> Estimate {
    let (low, high) = bootstrap(xs, seed, mean_of);
    Estimate { value: (!xs.is_empty()).then(|| mean_of(xs)), low, high }
}

/// The median of the paired differences, its interval resampling pairs.
fn median(xs: &[f64], seed: u64) -> Median {
    let (low, high) = bootstrap(xs, seed, median_of);
    Median { median: (!xs.is_empty()).then(|| median_of(xs)), n: xs.len(), low, high }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(case: &str, trial: u32, accepted: bool, calls: u32) -> TrialRecord {
        let mut r: TrialRecord = serde_json::from_value(serde_json::json!({
            "case": case, "trial": trial, "seed": 1, "outcome": if accepted { "accepted" } else { "failed" },
            "ended": "final", "checks": [], "calls": crate::record::CallCounts::default(),
            "usage": crate::record::Usage::default(), "wall_ms": 10.0, "answer": "", "error": null, "trace": ""
        }))
        .unwrap();
        r.calls.requested = calls;
        r
    }

    #[test]
    fn pairs_by_case_and_trial_and_counts_what_recovering_cost() {
        let base = [rec("a", 1, true, 2), rec("a", 2, true, 2), rec("b", 1, true, 2), rec("b", 2, true, 2)];
        // Case b breaks; case a recovers with one call more; a trial the baseline lacks is not paired.
        let pert = [
            rec("a", 1, true, 3),
            rec("a", 2, true, 3),
            rec("b", 1, false, 1),
            rec("b", 2, false, 1),
            rec("c", 1, true, 9),
        ];
        let r = robustness("p", &Baseline::new(&base), &pert, 7);
        assert_eq!((r.cases, r.pairs), (2, 4));
        assert_eq!((r.baseline.accepted, r.baseline.n, r.perturbed.accepted, r.perturbed.n), (4, 4, 2, 4));
        assert_eq!(r.drop.value, Some(0.5));
        assert_eq!((r.drop.low, r.drop.high), (Some(0.0), Some(1.0)));
        assert_eq!((r.recovery.value, r.recovery.n), (Some(0.5), 4));
        assert_eq!(r.cost_to_recover.calls.median, Some(1.0));
        assert_eq!(r.cost_to_recover.calls.n, 2);
        assert_eq!(r.broke, ["b"]);
    }
}
