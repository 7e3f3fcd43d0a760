//! Anytime-valid confidence sequences for a bounded mean (SPEC §20): the
//! hedged capital process of Waudby-Smith & Ramdas, "Estimating means of
//! bounded random variables by betting", JRSS-B 86(1), 2024 (arXiv
//! 2010.09686), Theorem 3 with the predictable plug-in bets of their eq. (26).
//!
//! For each candidate mean `m` two gamblers bet that the observations'
//! mean is above (`K⁺`) or below (`K⁻`) `m`; `m` leaves the sequence once
//! the hedged capital `max(θK⁺, (1−θ)K⁻)` reaches `1/α`. By Ville's
//! inequality the true mean stays in every set at once with probability at
//! least `1 − α`: a run may look after every round and stop as soon as a gate
//! is decided without inflating its error.
//!
//! A figure averaged over cases, with trials given to some cases more than
//! others, is estimated without bias by importance weighting: a case drawn
//! with probability `q` (predictable: decided before the trial) contributes
//! `y · w / q`, scaled into [0, 1] by the smallest probability the
//! allocation may give ([`Weighted`]).

/// The candidate means the sequence is computed on: 0, 1/GRID, …, 1.
const GRID: usize = 1000;
/// The bets are truncated at `C / m` (and `C / (1 − m)`): the paper's c = 1/2.
const C: f64 = 0.5;

/// A confidence sequence for the mean of observations in [0, 1].
#[derive(Debug, Clone)]
pub struct Sequence {
    alpha: f64,
    /// ln K⁺ and ln K⁻ for each candidate mean.
    log_up: Vec<f64>,
    log_down: Vec<f64>,
    /// Observations so far, their sum, and the running sum of squared deviations.
    n: u64,
    sum: f64,
    sq: f64,
    /// The running intersection of the sets (still a valid sequence).
    low: f64,
    high: f64,
    /// Each side on its own (the lower bound from `K⁺` alone, the upper from
    /// `K⁻` alone), each a running bound at level α/2, never clipped by the
    /// other side: valid one-sided when the observations' means only bound
    /// the target from one side ([`Sequence::one_sided`]).
    low_side: f64,
    high_side: f64,
}

impl Sequence {
    /// A (1 − alpha) confidence sequence.
    pub fn new(alpha: f64) -> Sequence {
        Sequence {
            alpha,
            log_up: vec![0.0; GRID + 1],
            log_down: vec![0.0; GRID + 1],
            n: 0,
            sum: 0.0,
            sq: 0.0,
            low: 0.0,
            high: 1.0,
            low_side: 0.0,
            high_side: 1.0,
        }
    }

    /// Add one observation in [0, 1] (clamped).
    pub fn push(&mut self, x: f64) {
        let x = x.clamp(0.0, 1.0);
        let i = (self.n + 1) as f64;
        // The plug-in bet, predictable: computed from the observations before this one.
        let var_prev = (0.25 + self.sq) / i;
        let lambda = (2.0 * (2.0 / self.alpha).ln() / (var_prev * i * (i + 1.0).ln())).sqrt();
        let threshold = (1.0 / self.alpha).ln();
        let (mut lo, mut hi) = (None, None);
        let (mut lo_side, mut hi_side) = (None, None);
        for g in 0..=GRID {
            let m = g as f64 / GRID as f64;
            let up = lambda.min(if m > 0.0 { C / m } else { f64::INFINITY });
            let down = lambda.min(if m < 1.0 { C / (1.0 - m) } else { f64::INFINITY });
            self.log_up[g] += (1.0 + up * (x - m)).ln();
            self.log_down[g] += (1.0 - down * (x - m)).ln();
            // Hedged with θ = 1/2: max(K⁺, K⁻) / 2 < 1/α keeps m.
            let capital = self.log_up[g].max(self.log_down[g]) - 2f64.ln();
            if capital < threshold {
                lo.get_or_insert(m);
                hi = Some(m);
            }
            // One side alone: max(K⁺, K⁻)/2 ≥ 1/α is K⁺ ≥ 2/α or K⁻ ≥ 2/α.
            if self.log_up[g] - 2f64.ln() < threshold {
                lo_side.get_or_insert(m);
            }
            if self.log_down[g] - 2f64.ln() < threshold {
                hi_side = Some(m);
            }
        }
        self.low_side = self.low_side.max(lo_side.unwrap_or(1.0));
        self.high_side = self.high_side.min(hi_side.unwrap_or(0.0));
        self.n += 1;
        self.sum += x;
        let mean_now = (0.5 + self.sum) / (i + 1.0);
        self.sq += (x - mean_now).powi(2);
        // The set is an interval (Waudby-Smith & Ramdas, Prop. 4); keep the
        // running intersection, a valid sequence too and never wider.
        self.low = self.low.max(lo.unwrap_or(self.high));
        self.high = self.high.min(hi.unwrap_or(self.low));
        if self.low > self.high {
            // Nothing left: the observations contradict every mean (a mean of
            // observations outside [0, 1] would do that); keep the point.
            let mid = (self.low + self.high) / 2.0;
            (self.low, self.high) = (mid, mid);
        }
    }

    pub fn bounds(&self) -> (f64, f64) {
        (self.low, self.high)
    }

    pub fn observations(&self) -> u64 {
        self.n
    }

    /// The lower bound from `K⁺` alone and the upper bound from `K⁻` alone,
    /// each valid at level α/2 by itself: the lower one whenever every
    /// observation's conditional mean is at least the target, the upper one
    /// whenever it is at most. (Observations with the same mean: at least as
    /// wide as [`Sequence::bounds`].)
    pub fn one_sided(&self) -> (f64, f64) {
        (self.low_side, self.high_side)
    }
}

/// A confidence sequence for a weighted mean over cases, Σ w_c p_c / Σ w_c,
/// whose trials are drawn case by case with predictable probabilities `q`:
/// each trial's outcome `y` enters as `y · (w_c / W) / q_c`, divided by the
/// largest such factor the allocation allows (`1 / floor`) to stay in [0, 1].
#[derive(Debug, Clone)]
pub struct Weighted {
    seq: Sequence,
    /// The smallest share of uniform allocation every draw keeps: q_c ≥ floor · w_c / W.
    floor: f64,
}

impl Weighted {
    pub fn new(alpha: f64, floor: f64) -> Weighted {
        Weighted { seq: Sequence::new(alpha), floor: floor.clamp(1e-3, 1.0) }
    }

    /// One trial of a case of relative weight `share` (w_c / W) drawn with
    /// probability `q`, with outcome `y` (1 accepted, 0 not).
    pub fn push(&mut self, share: f64, q: f64, y: f64) {
        let z = y * share / q * self.floor;
        self.seq.push(z);
    }

    /// The sequence for the weighted mean itself.
    pub fn bounds(&self) -> (f64, f64) {
        let (l, h) = self.seq.bounds();
        ((l / self.floor).min(1.0), (h / self.floor).min(1.0))
    }

    pub fn observations(&self) -> u64 {
        self.seq.observations()
    }

    /// [`Sequence::one_sided`] for the weighted mean itself.
    pub fn one_sided(&self) -> (f64, f64) {
        let (l, h) = self.seq.one_sided();
        ((l / self.floor).min(1.0), (h / self.floor).min(1.0))
    }
}

/// Draw probabilities over cases for the next trial: a `floor` share spread
/// by weight (what keeps the estimate unbiased and bounded), the rest to the
/// cases whose outcome is most uncertain, by the variance of their rate
/// (p(1 − p) with a beta(1, 1) prior) over their trials so far. `accepted`
/// is the sum of the outcomes in [0, 1]. A case that may take no more trials
/// (`open` false: it had its `max`) keeps only its floor share.
pub fn allocation(shares: &[f64], accepted: &[f64], trials: &[u32], open: &[bool], floor: f64) -> Vec<f64> {
    let uncertainty: Vec<f64> = accepted
        .iter()
        .zip(trials)
        .zip(shares)
        .zip(open)
        .map(|(((&a, &n), &w), &open)| {
            let p = (a + 1.0) / (n as f64 + 2.0);
            if open { w * (p * (1.0 - p) / (n as f64 + 1.0)).sqrt() } else { 0.0 }
        })
        .collect();
    let total: f64 = uncertainty.iter().sum();
    shares
        .iter()
        .zip(&uncertainty)
        .map(|(&w, &u)| floor * w + (1.0 - floor) * if total > 0.0 { u / total } else { w })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded simulation of many adaptive runs: the sequence must cover the
    /// true figure at every look in at least 95% of them (the guarantee is
    /// simultaneous over time), whatever the allocation did.
    #[test]
    fn the_sequence_stays_valid_under_optional_stopping_and_adaptive_allocation() {
        let p = [0.95, 0.9, 0.2, 0.6, 0.5, 0.75, 0.05, 0.4];
        let shares = vec![1.0 / p.len() as f64; p.len()];
        let truth: f64 = p.iter().sum::<f64>() / p.len() as f64;
        let mut rng = fastrand::Rng::with_seed(20);
        let (runs, mut missed) = (300, 0);
        for _ in 0..runs {
            let mut s = Weighted::new(0.05, 0.5);
            let (mut acc, mut n) = (vec![0f64; p.len()], vec![0u32; p.len()]);
            let open = vec![true; p.len()];
            let mut ever_missed = false;
            for _ in 0..400 {
                let q = allocation(&shares, &acc, &n, &open, 0.5);
                let mut u = rng.f64();
                let c = q.iter().position(|&x| {
                    u -= x;
                    u < 0.0
                });
                let c = c.unwrap_or(p.len() - 1);
                let y = (rng.f64() < p[c]) as u32;
                acc[c] += y as f64;
                n[c] += 1;
                s.push(shares[c], q[c], y as f64);
                let (l, h) = s.bounds();
                ever_missed |= truth < l - 1e-9 || truth > h + 1e-9;
            }
            missed += ever_missed as u32;
        }
        assert!(missed as f64 / runs as f64 <= 0.05, "missed the truth at some look in {missed} of {runs} runs");
    }

    /// What `simulate` measures for one gate: the share of runs decided
    /// wrongly, left undecided, and the mean trials used.
    struct Outcome {
        wrong: f64,
        undecided: f64,
        mean_trials: f64,
    }

    /// Runs of an adaptive design on cases with rates `p`: rounds of
    /// `p.len()` trials drawn by [`allocation`], every case at most `max`
    /// trials on average, stopping once `pass^1 ≥ threshold` is decided.
    fn simulate(p: &[f64], threshold: f64, max: u32, runs: u32, seed: u64) -> Outcome {
        let k = p.len();
        let shares = vec![1.0 / k as f64; k];
        let truth = p.iter().sum::<f64>() / k as f64;
        let mut rng = fastrand::Rng::with_seed(seed);
        let (mut wrong, mut undecided, mut used) = (0u32, 0u32, 0u64);
        for _ in 0..runs {
            let mut s = Weighted::new(0.05, 0.5);
            let (mut acc, mut n) = (vec![0f64; k], vec![0u32; k]);
            let open = vec![true; k];
            let mut verdict = None;
            let mut trials = 0u64;
            while verdict.is_none() && trials < (k as u64) * max as u64 {
                for _ in 0..k {
                    let q = allocation(&shares, &acc, &n, &open, 0.5);
                    let mut u = rng.f64();
                    let c = q
                        .iter()
                        .position(|&x| {
                            u -= x;
                            u < 0.0
                        })
                        .unwrap_or(k - 1);
                    let y = (rng.f64() < p[c]) as u32;
                    acc[c] += y as f64;
                    n[c] += 1;
                    trials += 1;
                    s.push(shares[c], q[c], y as f64);
                }
                let (l, h) = s.bounds();
                verdict = if l >= threshold {
                    Some(true)
                } else if h < threshold {
                    Some(false)
                } else {
                    None
                };
            }
            used += trials;
            match verdict {
                Some(v) if v != (truth >= threshold) => wrong += 1,
                None => undecided += 1,
                _ => {}
            }
        }
        Outcome {
            wrong: wrong as f64 / runs as f64,
            undecided: undecided as f64 / runs as f64,
            mean_trials: used as f64 / runs as f64,
        }
    }

    #[test]
    fn a_clear_gate_stops_early_and_a_wrong_verdict_is_rare() {
        let cases = [0.98, 0.95, 0.9, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.3];
        let o = simulate(&cases, 0.5, 40, 60, 3);
        assert!(o.wrong <= 0.05 && o.undecided == 0.0, "wrong {}, undecided {}", o.wrong, o.undecided);
        assert!(o.mean_trials < 0.5 * 400.0, "a clear gate took {} trials of 400", o.mean_trials);
    }

    #[test]
    fn allocation_favours_the_uncertain_cases_and_keeps_every_case_reachable() {
        let shares = [0.25; 4];
        // 20 of 20 accepted, 10 of 20, 1 of 2, 0 of 0.
        let q = allocation(&shares, &[20.0, 10.0, 1.0, 0.0], &[20, 20, 2, 0], &[true; 4], 0.5);
        assert!((q.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(q[0] < q[1] && q[1] < q[2] && q[2] < q[3], "{q:?}");
        assert!(q.iter().all(|&x| x >= 0.5 * 0.25), "{q:?}");
        // A case that had its max keeps its floor share only.
        let q = allocation(&shares, &[20.0, 10.0, 1.0, 0.0], &[20, 20, 2, 0], &[true, true, true, false], 0.5);
        assert!((q[3] - 0.5 * 0.25).abs() < 1e-12 && (q.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{q:?}");
    }

    #[test]
    fn a_clear_mean_is_bracketed_and_narrows() {
        let mut s = Sequence::new(0.05);
        for i in 0..2000 {
            s.push(if i % 10 < 8 { 1.0 } else { 0.0 });
        }
        let (l, h) = s.bounds();
        assert!(l < 0.8 && h > 0.8 && h - l < 0.1, "[{l}, {h}]");
    }
}
