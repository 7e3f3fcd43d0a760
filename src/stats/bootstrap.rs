//! The two-stage bootstrap behind every suite interval (see [`Bootstrap`]),
//! and the Beta sampler it draws case rates from.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::case_figures::CaseFigures;
use super::estimators::quantile;
use crate::spec::gate::Metric;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Interval {
    pub lower: f64,
    pub upper: f64,
}

/// A seeded two-stage percentile bootstrap.
///
/// Stage 1 resamples the counted cases with replacement (the suite's cases
/// are a sample of the cases it stands for). Stage 2 redraws each drawn
/// case's acceptance rate from what its own trials say: a draw from the
/// Jeffreys posterior Beta(c + ½, n − c + ½) of a case with c of n trials
/// accepted, the smoothed form of resampling its trials, which (unlike
/// resampling them) does not collapse to a point when a case passed every
/// trial or none. A resample's pass^k is then the weighted mean of p^k over
/// its cases, pass@k of 1 − (1 − p)^k, the accepted rate of p.
///
/// Every figure of a view comes from the same resamples. The posterior
/// draws come from pools made once per distinct (n, c) (see `rate_pools`). The interval is the
/// 2.5% and 97.5% quantiles, widened if need be to hold the point estimate.
/// Coverage is checked by simulation in this module's tests (1, 3, 10 and 40
/// cases): at or above the nominal 95%, except below ten cases drawn from a
/// varied population, which is why runs with fewer than ten cases warn.
///
/// The sampler is written here, on `fastrand`, rather than taken from a
/// distributions crate: summary.json must be byte-identical for a seed, and
/// such crates change their streams across minor versions.
pub struct Bootstrap {
    pub seed: u64,
    pub resamples: usize,
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut fastrand::Rng) -> f64 {
    loop {
        let u = rng.f64();
        if u > 0.0 {
            return (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * rng.f64()).cos();
        }
    }
}

/// A Gamma(a, 1) draw (Marsaglia and Tsang; boosted for a < 1).
fn gamma(rng: &mut fastrand::Rng, a: f64) -> f64 {
    if a < 1.0 {
        let u = rng.f64();
        return gamma(rng, a + 1.0) * u.powf(1.0 / a);
    }
    let d = a - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = rng.f64();
        if u < 1.0 - 0.0331 * x.powi(4) || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

/// A Beta(a, b) draw.
pub fn beta(rng: &mut fastrand::Rng, a: f64, b: f64) -> f64 {
    let x = gamma(rng, a);
    let y = gamma(rng, b);
    if x + y > 0.0 { x / (x + y) } else { 0.5 }
}

/// Draws of a case's rate per distinct (n, c), made once per bootstrap.
const POOL: usize = 4096;

/// Posterior draws of the rates of cases with these (n, c): Beta(c + ½, n − c + ½),
/// [`POOL`] draws per distinct pair, and for each row the index of its pool.
/// Cases share few distinct (n, c) pairs (with 5 trials, six), so drawing a
/// rate in the resampling loop is an index into a pool, as cheap as drawing a
/// case: the two stages cost little more than the case bootstrap alone.
/// The pools laid end to end (pool `i` at `i * POOL`), and for each row the
/// offset of its pool. Flat, so that a resample's random reads stay in cache
/// (100,000 cases: the bootstrap was 80% of `evalua report`'s time).
fn rate_pools(rng: &mut fastrand::Rng, rows: &[&CaseFigures]) -> (Vec<f64>, Vec<usize>) {
    let mut keys: Vec<(u32, u32)> = rows.iter().map(|c| (c.n, c.accepted)).collect();
    keys.sort_unstable();
    keys.dedup();
    let pools = keys
        .iter()
        .flat_map(|&(n, c)| (0..POOL).map(|_| beta(rng, c as f64 + 0.5, (n - c) as f64 + 0.5)).collect::<Vec<_>>())
        .collect();
    let of = rows.iter().map(|c| keys.binary_search(&(c.n, c.accepted)).unwrap_or(0) * POOL).collect();
    (pools, of)
}

/// What a resample reads of one case, side by side.
struct Unit {
    /// Its weight.
    wt: f64,
    /// Its observed accepted rate times its weight.
    obs: f64,
    /// The offset of its rate pool.
    pool: usize,
}

impl Bootstrap {
    /// 95% intervals of the accepted rate and of pass^k and pass@k for each
    /// k in `ks`, widened to hold `points` (the point estimates).
    pub fn intervals(
        &self,
        rows: &[(&CaseFigures, f64)],
        ks: &[u32],
        points: &BTreeMap<Metric, Option<f64>>,
    ) -> BTreeMap<Metric, Interval> {
        let mut out = BTreeMap::new();
        if rows.is_empty() || self.resamples == 0 {
            return out;
        }
        let mut rng = fastrand::Rng::with_seed(self.seed);
        let m = rows.len();
        let figs: Vec<&CaseFigures> = rows.iter().map(|(c, _)| *c).collect();
        let (pools, pool_of) = rate_pools(&mut rng, &figs);
        let units: Vec<Unit> = rows
            .iter()
            .zip(&pool_of)
            .map(|((c, wt), &pool)| Unit { wt: *wt, obs: c.accepted as f64 / c.n.max(1) as f64 * wt, pool })
            .collect();
        // Per resample: accepted, then (pass^k, pass@k) for each k.
        let width = 1 + 2 * ks.len();
        let mut draws: Vec<Vec<f64>> = vec![Vec::with_capacity(self.resamples); width];
        let mut sums = vec![0.0; width];
        // The same resampled cases at their observed rates (the case-only
        // bootstrap of the mean of the rates).
        let mut observed: Vec<f64> = Vec::with_capacity(self.resamples);
        for _ in 0..self.resamples {
            sums.iter_mut().for_each(|s| *s = 0.0);
            let (mut w, mut obs) = (0.0, 0.0);
            for _ in 0..m {
                let u = &units[rng.usize(..m)];
                let wt = u.wt;
                let p = pools[u.pool + rng.usize(..POOL)];
                sums[0] += p * wt;
                obs += u.obs;
                // ks ascend: powers by running products, with a jump for a large k.
                let (mut k_at, mut pk, mut qk) = (0u32, 1.0f64, 1.0f64);
                for (i, &k) in ks.iter().enumerate() {
                    if k - k_at <= 4 {
                        for _ in k_at..k {
                            pk *= p;
                            qk *= 1.0 - p;
                        }
                    } else {
                        pk = p.powi(k as i32);
                        qk = (1.0 - p).powi(k as i32);
                    }
                    k_at = k;
                    sums[1 + 2 * i] += pk * wt;
                    sums[2 + 2 * i] += (1.0 - qk) * wt;
                }
                w += wt;
            }
            for (d, s) in draws.iter_mut().zip(&sums) {
                d.push(s / w);
            }
            observed.push(obs / w);
        }
        observed.sort_by(|a, b| a.total_cmp(b));
        let observed = (quantile(&observed, 0.025), quantile(&observed, 0.975));
        let mut metrics = vec![Metric::Accepted];
        for &k in ks {
            metrics.push(Metric::PassHat(k));
            metrics.push(Metric::PassAt(k));
        }
        for (metric, mut d) in metrics.into_iter().zip(draws) {
            let Some(point) = points.get(&metric).copied().flatten() else { continue };
            d.sort_by(|a, b| a.total_cmp(b));
            // The posterior draws pull each case's rate toward ½ and narrow
            // its spread, most with one trial a case (1,000 cases of one
            // trial showed 81.9% [63.3%, 81.9%]). The figures that are a
            // mean of the rates (the accepted rate, pass^1, pass@1) take the
            // hull of these draws shifted to centre on the point estimate
            // and of the case-only bootstrap of the observed rates, which is
            // right for many cases and collapses for one. pass^k and pass@k
            // for k ≥ 2 keep the posterior's draws, which their coverage
            // tests below need (and k ≥ 2 needs two trials a case).
            let linear = matches!(metric, Metric::Accepted | Metric::PassHat(1) | Metric::PassAt(1));
            let shift = if linear { point - d.iter().sum::<f64>() / d.len().max(1) as f64 } else { 0.0 };
            if let (Some(lo), Some(hi)) = (quantile(&d, 0.025), quantile(&d, 0.975)) {
                let (mut lo, mut hi) = ((lo + shift).clamp(0.0, 1.0), (hi + shift).clamp(0.0, 1.0));
                if let (true, (Some(olo), Some(ohi))) = (linear, observed) {
                    (lo, hi) = (lo.min(olo), hi.max(ohi));
                }
                out.insert(metric, Interval { lower: lo.min(point), upper: hi.max(point) });
            }
        }
        out
    }

    /// The 95% interval of cost per accepted trial: total cost over expected
    /// accepted trials, with cases and their rates redrawn as above. None
    /// when the upper bound is not finite.
    pub fn cost_interval(&self, rows: &[&CaseFigures], point: f64) -> Option<Interval> {
        if rows.is_empty() {
            return None;
        }
        let mut rng = fastrand::Rng::with_seed(self.seed ^ 0xc057);
        let (pools, pool_of) = rate_pools(&mut rng, rows);
        let units: Vec<(f64, f64, usize)> =
            rows.iter().zip(&pool_of).map(|(c, &pool)| (c.cost_usd, c.n as f64, pool)).collect();
        let mut vals = Vec::with_capacity(self.resamples);
        for _ in 0..self.resamples {
            let (mut cost, mut acc) = (0.0, 0.0);
            for _ in 0..rows.len() {
                let (c, n, pool) = units[rng.usize(..units.len())];
                cost += c;
                acc += n * pools[pool + rng.usize(..POOL)];
            }
            vals.push(if acc > 0.0 { cost / acc } else { f64::INFINITY });
        }
        vals.sort_by(|a, b| a.total_cmp(b));
        let (lo, hi) = (quantile(&vals, 0.025)?, quantile(&vals, 0.975)?);
        (lo.is_finite() && hi.is_finite()).then(|| Interval { lower: lo.min(point), upper: hi.max(point) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;
    use crate::stats::case_figures::case_figures;
    use crate::stats::estimators::CaseInfo;
    use crate::stats::summary::view;
    use crate::stats::tally::CaseTally;

    fn case_of(i: usize, n: u32, p: f64, rng: &mut fastrand::Rng) -> CaseFigures {
        let mut t = CaseTally::default();
        for _ in 0..n {
            let o = if rng.f64() < p { Outcome::Accepted } else { Outcome::Failed };
            *t.outcomes.entry(o).or_default() += 1;
        }
        let info = CaseInfo {
            id: format!("c{i}"),
            weight: 1.0,
            tags: vec![],
            difficulty: None,
            reference: None,
            should_abstain: false,
            pending_review: false,
        };
        case_figures(&info, &t, false)
    }

    /// The intervals of accepted and pass^2 for these cases, as `view` computes them.
    fn intervals_of(rows: &[CaseFigures], seed: u64, resamples: usize) -> (Interval, Interval) {
        let v = view(rows, &Bootstrap { seed, resamples });
        (v.intervals[&Metric::Accepted].clone(), v.intervals[&Metric::PassHat(2)].clone())
    }

    /// Coverage of the accepted rate's and pass^2's 95% intervals over `sims`
    /// simulated runs of `m` cases with `n` trials each. `fixed` keeps the
    /// same cases in every run (the truth is their mean rate); otherwise each
    /// run draws its cases from p ~ U(0.2, 0.95) (the truth is the
    /// population's mean). Returns (coverage of accepted, of pass^2, mean width).
    fn coverage(m: usize, n: u32, fixed: bool, sims: u64, seed: u64) -> (f64, f64, f64) {
        let (lo_p, hi_p) = (0.2f64, 0.95f64);
        let mut rng = fastrand::Rng::with_seed(seed);
        let fixed_ps: Vec<f64> = (0..m).map(|_| lo_p + (hi_p - lo_p) * rng.f64()).collect();
        let (mut hit_rate, mut hit_hat2, mut width) = (0, 0, 0.0);
        for sim in 0..sims {
            let ps: Vec<f64> =
                if fixed { fixed_ps.clone() } else { (0..m).map(|_| lo_p + (hi_p - lo_p) * rng.f64()).collect() };
            let (truth_rate, truth_hat2) = if fixed {
                (ps.iter().sum::<f64>() / m as f64, ps.iter().map(|p| p * p).sum::<f64>() / m as f64)
            } else {
                ((lo_p + hi_p) / 2.0, (hi_p.powi(3) - lo_p.powi(3)) / (3.0 * (hi_p - lo_p)))
            };
            let rows: Vec<CaseFigures> = ps.iter().enumerate().map(|(i, &p)| case_of(i, n, p, &mut rng)).collect();
            let (r, h) = intervals_of(&rows, sim, 400);
            hit_rate += (r.lower <= truth_rate && truth_rate <= r.upper) as u32;
            hit_hat2 += (h.lower <= truth_hat2 && truth_hat2 <= h.upper) as u32;
            width += r.upper - r.lower;
        }
        (hit_rate as f64 / sims as f64, hit_hat2 as f64 / sims as f64, width / sims as f64)
    }

    /// The two-stage intervals hold the truth at least at about the nominal
    /// rate, for suites of 1, 3 and 10 fixed cases (trial noise only) and of
    /// 10 and 40 cases drawn from a varied population. Fixed seeds: not flaky.
    /// 0.92 is about two binomial standard errors under 0.95 for 250 runs.
    #[test]
    fn two_stage_intervals_cover_the_truth_with_1_3_10_and_40_cases() {
        for (m, fixed) in [(1, true), (3, true), (10, true), (10, false), (40, false)] {
            let (cr, ch, w) = coverage(m, 5, fixed, 250, 20261129 + m as u64);
            eprintln!(
                "{m} cases ({}): coverage accepted {cr:.3}, pass^2 {ch:.3}, mean width {w:.3}",
                if fixed { "fixed" } else { "drawn" }
            );
            assert!(cr >= 0.92, "{m} cases: accepted-rate coverage {cr}");
            assert!(ch >= 0.92, "{m} cases: pass^2 coverage {ch}");
            if !fixed {
                // Not bought with uselessly wide intervals.
                assert!(cr <= 0.99 && ch <= 0.99, "{m} cases: over-covers ({cr}, {ch})");
            }
        }
        // Three cases drawn from a varied population: no method can see the
        // spread between cases well from three; coverage falls short of 95%,
        // which is why a run with fewer than ten cases warns.
        let (cr, _, _) = coverage(3, 5, false, 250, 3);
        eprintln!("3 cases (drawn): coverage accepted {cr:.3}");
        assert!(cr >= 0.85, "{cr}");
    }

    /// One trial a case: the posterior's pull toward ½ must not move the
    /// accepted rate's interval off the truth (it once gave 81.9% [63.3%,
    /// 81.9%] for 1,000 cases).
    #[test]
    fn one_trial_a_case_still_covers_the_accepted_rate() {
        let mut rng = fastrand::Rng::with_seed(20261201);
        let ps: Vec<f64> = (0..200).map(|_| 0.2 + 0.75 * rng.f64()).collect();
        let truth = ps.iter().sum::<f64>() / ps.len() as f64;
        let sims = 120;
        let mut hits = 0;
        for sim in 0..sims {
            let rows: Vec<CaseFigures> = ps.iter().enumerate().map(|(i, &p)| case_of(i, 1, p, &mut rng)).collect();
            let v = view(&rows, &Bootstrap { seed: sim, resamples: 400 });
            let r = &v.intervals[&Metric::Accepted];
            hits += (r.lower <= truth && truth <= r.upper) as u32;
        }
        let cr = hits as f64 / sims as f64;
        eprintln!("200 cases of one trial: coverage accepted {cr:.3}");
        assert!(cr >= 0.92, "accepted-rate coverage {cr}");
    }

    /// The case-only bootstrap this replaced gives a one-case suite a
    /// zero-width interval (`25.0% [25.0%, 25.0%]`); the two-stage one shows
    /// the trial noise, and a case that passed every trial is not certain.
    #[test]
    fn one_case_is_not_a_point() {
        let info = CaseInfo {
            id: "x".into(),
            weight: 1.0,
            tags: vec![],
            difficulty: None,
            reference: None,
            should_abstain: false,
            pending_review: false,
        };
        let mut t = CaseTally::default();
        t.outcomes.insert(Outcome::Accepted, 1);
        t.outcomes.insert(Outcome::Failed, 3);
        let rows = vec![case_figures(&info, &t, false)];
        let (r, _) = intervals_of(&rows, 1, 2000);
        assert!(r.lower < 0.1 && r.upper > 0.5, "{r:?}");
        let mut t = CaseTally::default();
        t.outcomes.insert(Outcome::Accepted, 5);
        let rows = vec![case_figures(&info, &t, false)];
        let (r, h) = intervals_of(&rows, 1, 2000);
        assert!(r.lower < 0.8 && r.upper == 1.0, "{r:?}");
        assert!(h.lower < 0.7 && h.upper == 1.0, "{h:?}");
    }

    #[test]
    fn beta_draws_have_the_right_moments() {
        let mut rng = fastrand::Rng::with_seed(5);
        for (a, b) in [(0.5, 0.5), (1.5, 3.5), (5.5, 0.5), (20.5, 10.5)] {
            let n = 40_000;
            let xs: Vec<f64> = (0..n).map(|_| beta(&mut rng, a, b)).collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
            let (m, v) = (a / (a + b), a * b / ((a + b).powi(2) * (a + b + 1.0)));
            assert!((mean - m).abs() < 0.01, "Beta({a},{b}) mean {mean} vs {m}");
            assert!((var - v).abs() < 0.1 * v + 0.001, "Beta({a},{b}) variance {var} vs {v}");
            assert!(xs.iter().all(|x| (0.0..=1.0).contains(x)));
        }
    }

    /// The same check must fail for an interval that ignores the case clustering:
    /// resampling trials as if independent is too narrow when cases differ.
    #[test]
    fn pooling_trials_would_undercover() {
        let mut rng = fastrand::Rng::with_seed(7);
        let truth = 0.5;
        let sims = 200;
        let mut hits = 0;
        for _ in 0..sims {
            // Very heterogeneous cases: p is 0.05 or 0.95.
            let mut trials = Vec::new();
            for _ in 0..20 {
                let p = if rng.bool() { 0.05 } else { 0.95 };
                for _ in 0..10 {
                    trials.push((rng.f64() < p) as u32 as f64);
                }
            }
            let mut means: Vec<f64> = (0..500)
                .map(|_| {
                    (0..trials.len()).map(|_| trials[rng.usize(..trials.len())]).sum::<f64>() / trials.len() as f64
                })
                .collect();
            means.sort_by(|a, b| a.total_cmp(b));
            let (lo, hi) = (quantile(&means, 0.025).unwrap(), quantile(&means, 0.975).unwrap());
            hits += (lo <= truth && truth <= hi) as u32;
        }
        assert!((hits as f64 / sims as f64) < 0.7, "pooled trials should undercover: {hits}/{sims}");
    }
}
