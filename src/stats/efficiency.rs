//! Efficiency against a reference solution: a case may declare what a
//! reference solution takes (`reference = { calls = …, tokens = … }`), and
//! each trial's tool calls (requested, and executed) and tokens are set as
//! ratios to it. Per case and overall, the figure is the **median ratio**,
//! over the accepted trials and over all trials that ran (infrastructure
//! errors left out: the agent never acted), with a 95% interval.
//!
//! The overall figure is the weighted median over cases of each case's
//! median (each case by its `weight`), so that, like every suite figure, a
//! case counts once whatever its number of trials. Its interval comes from a
//! two-stage percentile bootstrap, the same shape as the pass^k intervals:
//! the cases are resampled, then each drawn case's trials; a case's own
//! interval resamples its trials. Seeded from the run's seed.

use serde::Serialize;

use super::estimators::{CaseInfo, quantile};
use crate::spec::Reference;

/// One trial of a case that has a reference, in brief (24 bytes).
#[derive(Debug, Clone, Copy)]
pub struct EffTrial {
    pub trial: u32,
    /// Tool calls requested (any status) and executed.
    pub requested: u32,
    pub executed: u32,
    /// Input + output tokens.
    pub tokens: u64,
    pub accepted: bool,
}

/// What is set against the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Measure {
    /// Tool calls requested (whatever became of them) / the reference's calls.
    Calls,
    /// Tool calls executed / the reference's calls.
    Executed,
    /// Tokens / the reference's tokens.
    Tokens,
}

const MEASURES: [Measure; 3] = [Measure::Calls, Measure::Executed, Measure::Tokens];

impl Measure {
    fn of(self, t: &EffTrial) -> f64 {
        match self {
            Measure::Calls => t.requested as f64,
            Measure::Executed => t.executed as f64,
            Measure::Tokens => t.tokens as f64,
        }
    }
    fn reference(self, r: &Reference) -> Option<f64> {
        match self {
            Measure::Calls | Measure::Executed => r.calls.map(f64::from),
            Measure::Tokens => r.tokens.map(|t| t as f64),
        }
        .filter(|v| *v > 0.0)
    }
}

/// Which trials a figure is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Over {
    All,
    Accepted,
}

impl Over {
    fn holds(self, t: &EffTrial) -> bool {
        self == Over::All || t.accepted
    }
}

/// A median ratio with its 95% interval and what it is over.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ratio {
    pub median: f64,
    pub lower: f64,
    pub upper: f64,
    /// The trials behind it.
    pub trials: u32,
    /// The cases behind it (overall figures only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cases: Option<usize>,
}

/// The three ratios of one set of trials; a ratio is absent when the
/// reference does not give its measure or no trial is in the set.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Ratios {
    /// Tool calls requested / the reference's calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<Ratio>,
    /// Tool calls executed / the reference's calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub executed_calls: Option<Ratio>,
    /// Tokens (input + output) / the reference's tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Ratio>,
}

impl Ratios {
    fn slot(&mut self, m: Measure) -> &mut Option<Ratio> {
        match m {
            Measure::Calls => &mut self.calls,
            Measure::Executed => &mut self.executed_calls,
            Measure::Tokens => &mut self.tokens,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.calls.is_none() && self.executed_calls.is_none() && self.tokens.is_none()
    }
}

/// A case's efficiency (summary.json `cases[].efficiency`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseEfficiency {
    pub reference: Reference,
    /// Over every trial that ran (infrastructure errors left out).
    pub all: Ratios,
    /// Over the accepted trials.
    pub accepted: Ratios,
}

/// An accepted trial that took more than its case's `max_ratio` times the
/// reference, in calls requested or in tokens.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OverReference {
    pub case: String,
    pub trial: u32,
    pub calls: u32,
    pub executed_calls: u32,
    pub tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls_ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_ratio: Option<f64>,
    pub max_ratio: f64,
}

/// summary.json's `efficiency`: the overall figures and the accepted trials
/// that took more than their case's `max_ratio` times the reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Efficiency {
    /// Cases that declare a reference and have a trial that ran.
    pub cases: usize,
    pub all: Ratios,
    pub accepted: Ratios,
    pub over_reference: OverList,
}

/// The accepted trials over the reference: how many, and the first
/// [`MAX_LISTED`] of them (case order, then trial).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OverList {
    pub count: usize,
    pub trials: Vec<OverReference>,
}

/// summary.json lists at most this many trials over the reference (all are counted).
pub const MAX_LISTED: usize = 500;

/// The median of a sorted slice (the mean of the middle two for an even length).
fn median_sorted(v: &[f64]) -> Option<f64> {
    quantile(v, 0.5)
}

/// The median of `v`, reordering it.
fn median_in_place(v: &mut [f64]) -> f64 {
    let n = v.len();
    let mid = n / 2;
    let (_, &mut upper, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
    if n % 2 == 1 {
        upper
    } else {
        let lower = v[..mid].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lower + upper) / 2.0
    }
}

/// The weighted median of (value, weight) pairs: the value where the
/// cumulative weight reaches half the total, the mean of the two values
/// around it when it falls exactly between them (so equal weights give the
/// ordinary median). Reorders `v`.
fn weighted_median(v: &mut [(f64, f64)], equal_weights: bool, scratch: &mut Vec<f64>) -> f64 {
    if equal_weights {
        scratch.clear();
        scratch.extend(v.iter().map(|p| p.0));
        return median_in_place(scratch);
    }
    v.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = v.iter().map(|p| p.1).sum();
    let half = total / 2.0;
    let mut cum = 0.0;
    for (i, &(x, w)) in v.iter().enumerate() {
        cum += w;
        if (cum - half).abs() <= 1e-12 * total.max(1.0) {
            return v.get(i + 1).map(|n| (x + n.0) / 2.0).unwrap_or(x);
        }
        if cum > half {
            return x;
        }
    }
    v.last().map(|p| p.0).unwrap_or(f64::NAN)
}

/// Draws of a resample's median, per sample size.
const POOL: usize = 4096;

/// The medians of resamples of a sample of `n` values, as positions: a
/// resample draws n of the sorted values with replacement, and its median is
/// the mean of the sorted values at two positions (a, b) (the same position
/// for an odd n). Which positions depends on n only, not on the values: the
/// pool is made once per n and every case with n trials reads it, so a
/// redrawn case median costs an index (as the pass^k bootstrap's rate pools do).
struct MedianPool {
    draws: Vec<(u32, u32)>,
    /// The distinct (a, b) pairs and how many draws gave each (a case's own
    /// interval is read from them: its resampled medians' distribution).
    distinct: Vec<((u32, u32), u32)>,
}

impl MedianPool {
    fn new(n: usize, rng: &mut fastrand::Rng) -> MedianPool {
        let mut counts = vec![0u32; n];
        let mut draws = Vec::with_capacity(POOL);
        let (lo, hi) = ((n - 1) / 2, n / 2);
        for _ in 0..POOL {
            counts.iter_mut().for_each(|c| *c = 0);
            for _ in 0..n {
                counts[rng.usize(..n)] += 1;
            }
            // The lo-th and hi-th (0-based) smallest drawn positions.
            let (mut a, mut b, mut seen) = (None, None, 0usize);
            for (pos, &c) in counts.iter().enumerate() {
                seen += c as usize;
                if a.is_none() && seen > lo {
                    a = Some(pos as u32);
                }
                if seen > hi {
                    b = Some(pos as u32);
                    break;
                }
            }
            draws.push((a.unwrap_or(0), b.unwrap_or(0)));
        }
        let mut sorted = draws.clone();
        sorted.sort_unstable();
        let mut distinct: Vec<((u32, u32), u32)> = Vec::new();
        for d in sorted {
            match distinct.last_mut() {
                Some((p, c)) if *p == d => *c += 1,
                _ => distinct.push((d, 1)),
            }
        }
        MedianPool { draws, distinct }
    }
}

/// One pool per sample size, made on first use.
struct Pools {
    rng: fastrand::Rng,
    by_n: std::collections::BTreeMap<usize, MedianPool>,
}

impl Pools {
    fn get(&mut self, n: usize) -> &MedianPool {
        let rng = &mut self.rng;
        self.by_n.entry(n).or_insert_with(|| MedianPool::new(n, rng))
    }
}

/// One case's ratios for one measure and one set of trials, sorted.
struct CaseRatios {
    weight: f64,
    /// Sorted ratios.
    values: Vec<f64>,
}

/// How many resamples the overall interval gets: 2,000, fewer (down to 200)
/// when a run has so many cases that each resample is costly, so that the
/// figures of a 100,000-case run stay within seconds.
fn resamples_for(cases: usize) -> usize {
    const WORK: usize = 20_000_000;
    (WORK / cases.max(1)).clamp(200, 2000)
}

/// The 2.5% and 97.5% quantiles of `draws`, widened to hold `point`.
fn interval(mut draws: Vec<f64>, point: f64) -> (f64, f64) {
    draws.sort_by(f64::total_cmp);
    match (quantile(&draws, 0.025), quantile(&draws, 0.975)) {
        (Some(lo), Some(hi)) => (lo.min(point), hi.max(point)),
        _ => (point, point),
    }
}

/// A case's median ratio and its interval: the 2.5% and 97.5% points of
/// its resampled medians' distribution (its trials resampled), read from
/// the pool of its sample size.
fn case_ratio(values: &[f64], pool: &MedianPool) -> Option<Ratio> {
    let point = median_sorted(values)?;
    let mut support: Vec<(f64, u32)> =
        pool.distinct.iter().map(|&((a, b), count)| ((values[a as usize] + values[b as usize]) / 2.0, count)).collect();
    support.sort_by(|x, y| x.0.total_cmp(&y.0));
    let at = |q: f64| {
        let mut cum = 0u32;
        for &(v, c) in &support {
            cum += c;
            if cum as f64 >= q * POOL as f64 {
                return v;
            }
        }
        point
    };
    let (lower, upper) = (at(0.025).min(point), at(0.975).max(point));
    Some(Ratio { median: point, lower, upper, trials: values.len() as u32, cases: None })
}

/// The overall median ratio (the weighted median of the cases' medians) and
/// its two-stage interval: cases resampled, each drawn case's median redrawn
/// from its pool.
fn overall_ratio(rows: &[CaseRatios], pools: &mut Pools, rng: &mut fastrand::Rng) -> Option<Ratio> {
    if rows.is_empty() {
        return None;
    }
    let equal = rows.iter().all(|r| r.weight == rows[0].weight);
    let mut scratch = Vec::with_capacity(rows.len());
    let mut medians: Vec<(f64, f64)> =
        rows.iter().filter_map(|r| Some((median_sorted(&r.values)?, r.weight))).collect();
    let point = weighted_median(&mut medians, equal, &mut scratch);
    let m = rows.len();
    let trials: usize = rows.iter().map(|r| r.values.len()).sum();
    // Each row's pool, by sample size (made before the loop).
    let sizes: std::collections::BTreeSet<usize> = rows.iter().map(|r| r.values.len()).collect();
    for &n in &sizes {
        pools.get(n);
    }
    let pool_of: Vec<&MedianPool> = rows.iter().map(|r| &pools.by_n[&r.values.len()]).collect();
    let resamples = resamples_for(m);
    let mut drawn: Vec<(f64, f64)> = Vec::with_capacity(m);
    let mut draws = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        drawn.clear();
        for _ in 0..m {
            let i = rng.usize(..m);
            let (a, b) = pool_of[i].draws[rng.usize(..POOL)];
            let v = &rows[i].values;
            drawn.push(((v[a as usize] + v[b as usize]) / 2.0, rows[i].weight));
        }
        draws.push(weighted_median(&mut drawn, equal, &mut scratch));
    }
    let (lower, upper) = interval(draws, point);
    Some(Ratio { median: point, lower, upper, trials: trials as u32, cases: Some(m) })
}

/// The efficiency figures of a run: per case (in `infos` order; `None` for a
/// case without a reference) and overall (`None` when no case has one).
pub fn efficiency(
    infos: &[CaseInfo],
    trials: &[&[EffTrial]],
    seed: u64,
) -> (Vec<Option<CaseEfficiency>>, Option<Efficiency>) {
    let mut per_case: Vec<Option<CaseEfficiency>> = vec![None; infos.len()];
    if infos.iter().all(|i| i.reference.is_none()) {
        return (per_case, None);
    }
    let mut rng = fastrand::Rng::with_seed(seed ^ 0xeff1);
    let mut pools = Pools { rng: fastrand::Rng::with_seed(seed ^ 0xeff2), by_n: Default::default() };
    let mut overall_all = Ratios::default();
    let mut overall_accepted = Ratios::default();
    let mut cases_seen = 0;
    for (over, overall) in [(Over::All, &mut overall_all), (Over::Accepted, &mut overall_accepted)] {
        for m in MEASURES {
            let mut rows = Vec::new();
            for (i, info) in infos.iter().enumerate() {
                let Some(reference) = &info.reference else { continue };
                let Some(base) = m.reference(reference) else { continue };
                let ts = trials.get(i).copied().unwrap_or(&[]);
                let mut values: Vec<f64> = ts.iter().filter(|t| over.holds(t)).map(|t| m.of(t) / base).collect();
                if values.is_empty() {
                    continue;
                }
                values.sort_by(f64::total_cmp);
                let slot = per_case[i].get_or_insert_with(|| CaseEfficiency {
                    reference: reference.clone(),
                    all: Ratios::default(),
                    accepted: Ratios::default(),
                });
                let ratios = if over == Over::All { &mut slot.all } else { &mut slot.accepted };
                *ratios.slot(m) = case_ratio(&values, pools.get(values.len()));
                rows.push(CaseRatios { weight: info.weight, values });
            }
            *overall.slot(m) = overall_ratio(&rows, &mut pools, &mut rng);
        }
    }
    // A case with a reference whose trials all failed to run still shows its reference.
    for (i, info) in infos.iter().enumerate() {
        if let Some(r) = &info.reference {
            let ran = trials.get(i).is_some_and(|t| !t.is_empty());
            if ran {
                cases_seen += 1;
            }
            per_case[i].get_or_insert_with(|| CaseEfficiency {
                reference: r.clone(),
                all: Ratios::default(),
                accepted: Ratios::default(),
            });
        }
    }
    let mut over = OverList::default();
    for (i, info) in infos.iter().enumerate() {
        let Some(r) = &info.reference else { continue };
        for t in trials.get(i).copied().unwrap_or(&[]).iter().filter(|t| t.accepted) {
            if let Some(o) = over_reference(&info.id, r, t) {
                over.count += 1;
                if over.trials.len() < MAX_LISTED {
                    over.trials.push(o);
                }
            }
        }
    }
    let eff = Efficiency { cases: cases_seen, all: overall_all, accepted: overall_accepted, over_reference: over };
    (per_case, Some(eff))
}

/// The trial, when it took more than `max_ratio` times the reference in calls
/// requested or in tokens.
pub fn over_reference(case: &str, r: &Reference, t: &EffTrial) -> Option<OverReference> {
    let calls_ratio = Measure::Calls.reference(r).map(|b| t.requested as f64 / b);
    let tokens_ratio = Measure::Tokens.reference(r).map(|b| t.tokens as f64 / b);
    let over = [calls_ratio, tokens_ratio].iter().flatten().any(|&x| x > r.max_ratio);
    over.then(|| OverReference {
        case: case.to_string(),
        trial: t.trial,
        calls: t.requested,
        executed_calls: t.executed,
        tokens: t.tokens,
        calls_ratio,
        tokens_ratio,
        max_ratio: r.max_ratio,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: &str, calls: Option<u32>, tokens: Option<u64>, weight: f64) -> CaseInfo {
        CaseInfo {
            id: id.into(),
            weight,
            tags: vec![],
            difficulty: None,
            reference: Some(Reference { calls, tokens, max_ratio: 2.0, call_list: Default::default() }),
            should_abstain: false,
            pending_review: false,
        }
    }

    fn t(trial: u32, requested: u32, executed: u32, tokens: u64, accepted: bool) -> EffTrial {
        EffTrial { trial, requested, executed, tokens, accepted }
    }

    #[test]
    fn medians_are_the_textbook_ones() {
        assert_eq!(median_in_place(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median_in_place(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        let s = &mut Vec::new();
        assert_eq!(weighted_median(&mut [(1.0, 1.0), (2.0, 1.0), (10.0, 1.0), (3.0, 1.0)], false, s), 2.5);
        assert_eq!(weighted_median(&mut [(1.0, 1.0), (2.0, 1.0), (10.0, 1.0), (3.0, 1.0)], true, s), 2.5);
        // A case of weight 4 outweighs the three others together: its median wins.
        assert_eq!(weighted_median(&mut [(1.0, 1.0), (2.0, 1.0), (10.0, 4.0), (3.0, 1.0)], false, s), 10.0);
    }

    /// The pooled positions give a resample's median exactly as resampling
    /// the values does: same distribution (checked on its mean and spread).
    #[test]
    fn pooled_medians_are_resampled_medians() {
        let values = [1.0, 1.0, 2.0, 5.0, 9.0, 9.5];
        let mut rng = fastrand::Rng::with_seed(3);
        let pool = MedianPool::new(values.len(), &mut rng);
        let pooled: Vec<f64> =
            pool.draws.iter().map(|&(a, b)| (values[a as usize] + values[b as usize]) / 2.0).collect();
        let direct: Vec<f64> = (0..POOL)
            .map(|_| {
                let mut r: Vec<f64> = (0..values.len()).map(|_| values[rng.usize(..values.len())]).collect();
                median_in_place(&mut r)
            })
            .collect();
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let sd = |v: &[f64]| (v.iter().map(|x| (x - mean(v)).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
        assert!((mean(&pooled) - mean(&direct)).abs() < 0.15, "{} vs {}", mean(&pooled), mean(&direct));
        assert!((sd(&pooled) - sd(&direct)).abs() < 0.15, "{} vs {}", sd(&pooled), sd(&direct));
    }

    #[test]
    fn ratios_by_hand() {
        // Case a: reference 2 calls, 100 tokens. Trials request 2, 4, 6 calls
        // (executed 2, 3, 6), take 100, 300, 150 tokens; trial 2 failed.
        // Case b: reference 4 calls, no tokens; trials request 4 and 4 (both accepted).
        let infos = [info("a", Some(2), Some(100), 1.0), info("b", Some(4), None, 1.0)];
        let a = [t(1, 2, 2, 100, true), t(2, 4, 3, 300, false), t(3, 6, 6, 150, true)];
        let b = [t(1, 4, 4, 0, true), t(2, 4, 4, 0, true)];
        let (cases, overall) = efficiency(&infos, &[&a, &b], 7);
        let ca = cases[0].as_ref().unwrap();
        // All trials: calls 1, 2, 3 → median 2; executed 1, 1.5, 3 → 1.5; tokens 1, 3, 1.5 → 1.5.
        assert_eq!(ca.all.calls.as_ref().unwrap().median, 2.0);
        assert_eq!(ca.all.executed_calls.as_ref().unwrap().median, 1.5);
        assert_eq!(ca.all.tokens.as_ref().unwrap().median, 1.5);
        // Accepted (1 and 3): calls 1, 3 → 2; tokens 1, 1.5 → 1.25.
        assert_eq!(ca.accepted.calls.as_ref().unwrap().median, 2.0);
        assert_eq!(ca.accepted.tokens.as_ref().unwrap().median, 1.25);
        let cb = cases[1].as_ref().unwrap();
        assert_eq!(cb.all.calls.as_ref().unwrap().median, 1.0);
        assert!(cb.all.tokens.is_none(), "no token reference, no token ratio");
        let o = overall.unwrap();
        // Overall: the median of the cases' medians (2 and 1) = 1.5; tokens only from a.
        assert_eq!(o.all.calls.as_ref().unwrap().median, 1.5);
        assert_eq!(o.all.calls.as_ref().unwrap().cases, Some(2));
        assert_eq!(o.all.tokens.as_ref().unwrap().median, 1.5);
        assert_eq!(o.accepted.calls.as_ref().unwrap().median, 1.5);
        // Intervals hold their point and stay within the observed ratios.
        for r in [&o.all.calls, &o.accepted.calls, &ca.all.calls, &ca.all.tokens] {
            let r = r.as_ref().unwrap();
            assert!(r.lower <= r.median && r.median <= r.upper, "{r:?}");
            assert!(r.lower >= 1.0 && r.upper <= 3.0, "{r:?}");
        }
        // Accepted trial 3 of a took 3× the calls (> 2): listed; trial 2 (failed) is not.
        assert_eq!(o.over_reference.count, 1);
        let listed = &o.over_reference.trials[0];
        assert_eq!((listed.case.as_str(), listed.trial, listed.calls_ratio), ("a", 3, Some(3.0)));
        assert_eq!(listed.tokens_ratio, Some(1.5));
    }

    /// The overall interval holds the population's median of case medians
    /// at about the nominal rate: 40 cases drawn with true median ratios
    /// spread over U(1, 3), each with 5 trials of symmetric noise. Fixed
    /// seeds: not flaky.
    #[test]
    fn the_overall_interval_covers_the_population_median() {
        let mut rng = fastrand::Rng::with_seed(20261230);
        let (sims, m, n) = (120, 40, 5);
        let mut hits = 0;
        for sim in 0..sims {
            let rows: Vec<CaseRatios> = (0..m)
                .map(|_| {
                    let mu = 1.0 + 2.0 * rng.f64();
                    let mut values: Vec<f64> = (0..n).map(|_| mu + (rng.f64() - 0.5) * 1.5).collect();
                    values.sort_by(f64::total_cmp);
                    CaseRatios { weight: 1.0, values }
                })
                .collect();
            let mut pools = Pools { rng: fastrand::Rng::with_seed(sim), by_n: Default::default() };
            let r = overall_ratio(&rows, &mut pools, &mut fastrand::Rng::with_seed(sim ^ 9)).unwrap();
            hits += (r.lower <= 2.0 && 2.0 <= r.upper) as u32;
        }
        let coverage = hits as f64 / sims as f64;
        eprintln!("coverage of the overall median ratio: {coverage:.3}");
        assert!(coverage >= 0.90, "{coverage}");
        assert!(coverage <= 0.995, "uselessly wide: {coverage}");
    }

    #[test]
    fn the_same_seed_gives_the_same_intervals() {
        let infos = [info("a", Some(3), None, 1.0)];
        let a: Vec<EffTrial> = (1..=9).map(|i| t(i, i, i, 0, i % 2 == 0)).collect();
        let one = efficiency(&infos, &[&a], 5);
        let two = efficiency(&infos, &[&a], 5);
        assert_eq!(one, two);
        let c = one.0[0].as_ref().unwrap().all.calls.clone().unwrap();
        assert!(c.lower < c.median && c.median < c.upper, "nine spread trials give a real interval: {c:?}");
    }

    #[test]
    fn no_reference_no_figures() {
        let mut i = info("a", Some(3), None, 1.0);
        i.reference = None;
        let (cases, overall) = efficiency(&[i], &[&[t(1, 3, 3, 0, true)]], 1);
        assert!(cases[0].is_none() && overall.is_none());
    }
}
