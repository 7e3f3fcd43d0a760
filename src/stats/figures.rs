//! Figures from trial records (SPEC §7).
//!
//! Per case with n trials and c accepted: pass@k = 1 − C(n−c,k)/C(n,k) and
//! pass^k = C(c,k)/C(n,k). Suite figures are weighted means over cases, with
//! 95% intervals from a two-stage bootstrap: cases are resampled (never pooled
//! trials), then each drawn case's rate is redrawn from what its own trials
//! say (see [`Bootstrap`]), so trial-to-trial noise shows even with one case.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::blame::{BlameFigures, BlameTally, WithoutUser};
use super::efficiency::{CaseEfficiency, EffTrial, Efficiency};
pub use super::estimators::{ByK, CaseInfo, K, pass_at_k, pass_hat_k, quantile, wilson};
use super::published::{Published, PublishedTally, Share, TaskCoverage};
use super::safety::{Safety, SafetyTally};
use crate::record::{CallStatus, Outcome, TrialRecord, Verdict as CheckVerdict};
use crate::spec::gate::{self, Gate, Metric, Verdict};

/// Per-case tallies, accumulated as records stream in.
#[derive(Debug, Clone, Default)]
pub struct CaseTally {
    pub outcomes: BTreeMap<Outcome, u32>,
    /// Trials the capability view leaves out (the suite's `exclude`, a
    /// contaminated success; infrastructure errors are apart), and the
    /// accepted ones among them (SPEC §22).
    pub excluded: u32,
    pub excluded_accepted: u32,
    /// Counted trials blamed on the simulated user (SPEC §18).
    pub user_blamed: u32,
    pub cost_usd: f64,
    pub safety: SafetyTally,
    /// The trials that ran, in brief, when the case declares a reference
    /// solution (the efficiency figures); `None` otherwise.
    pub efficiency: Option<Vec<EffTrial>>,
}

impl CaseTally {
    pub fn count(&self, o: Outcome) -> u32 {
        self.outcomes.get(&o).copied().unwrap_or(0)
    }
    pub fn total(&self) -> u32 {
        self.outcomes.values().sum()
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckTally {
    pub name: String,
    pub critical: bool,
    pub passed: u32,
    pub failed: u32,
    pub errors: u32,
    pub skipped: u32,
    /// Needed state the trial did not have (a recorded trace): never a pass.
    #[serde(skip_serializing_if = "is_zero")]
    pub not_applicable: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A judge cascade's items, escalations and stages over the run.
#[derive(Debug, Clone, Default)]
pub struct CascadeTally {
    pub items: u32,
    pub escalated: u32,
    /// Per stage ("first", "then"): its judge, the items it graded, calls, tokens, cost.
    pub stages: Vec<StageFigures>,
}

/// What one stage of a cascade did over a run (summary.json `judge_cascades`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct StageFigures {
    pub stage: String,
    pub judge: String,
    /// Items it graded.
    pub items: u32,
    /// Model calls it made (none for a cached answer).
    pub calls: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

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

/// A monitor's violations over the trials it decided.
#[derive(Debug, Clone, Copy, Default)]
pub struct MonitorTally {
    pub violations: u32,
    pub n: u32,
}

/// One tool's calls: how many went wrong and how long the ones that ran took.
#[derive(Debug, Clone, Default)]
pub struct ToolTally {
    pub calls: u32,
    /// `failed` and `faulted` calls: the tool went wrong.
    pub errors: u32,
    /// `denied` and `rejected` calls: refused before they ran.
    pub refused: u32,
    /// Durations of the calls that ran (executed, failed, faulted).
    pub durations_ms: Vec<f64>,
}

/// Streams trial records into the totals the summary needs; memory grows with
/// cases and check names, not with trials (apart from one latency per trial).
#[derive(Debug, Default)]
pub struct Tally {
    pub cases: Vec<CaseTally>,
    pub checks: BTreeMap<String, CheckTally>,
    pub latencies_ms: Vec<f64>,
    pub total_cost_usd: f64,
    pub total_tokens: u64,
    pub total_tool_calls: u64,
    pub trials_run: u64,
    pub skipped_checks: u32,
    pub not_applicable_checks: u32,
    /// Per monitor (declared ones first, with n = 0 until a trial is graded).
    pub monitors: BTreeMap<String, MonitorTally>,
    pub tools: BTreeMap<String, ToolTally>,
    /// Graded trials whose agent was cut short by an infrastructure failure.
    pub infra_after_start: u32,
    /// Some record carried the safety view (SPEC §13).
    pub safety_seen: bool,
    /// Per judge cascade (by check name).
    pub cascades: BTreeMap<String, CascadeTally>,
    /// The suite's declared exclusions (`exclude`, SPEC §22).
    pub exclude: Vec<String>,
    /// Coverage, abandonment, interventions, contamination, exclusions.
    pub published: PublishedTally,
    /// Which cases require abstaining (by index).
    should_abstain: Vec<bool>,
    /// Who is to blame for the trials not accepted (SPEC §18).
    pub blame: BlameTally,
    /// The trials of cases awaiting review (SPEC §23), counted nowhere else.
    pub pending: super::pending::PendingTally,
    /// What graded items' sources scored, against evalua's verdicts.
    pub verdicts: super::verdicts::RecordedVerdicts,
}

impl Tally {
    /// An empty tally for these cases (in the order records name them by index).
    pub fn new(infos: &[CaseInfo]) -> Self {
        let cases = infos
            .iter()
            .map(|i| CaseTally { efficiency: i.reference.as_ref().map(|_| Vec::new()), ..Default::default() })
            .collect();
        let should_abstain = infos.iter().map(|i| i.should_abstain).collect();
        let pending = super::pending::PendingTally::new(infos.iter().map(|i| i.pending_review).collect());
        Tally { cases, should_abstain, pending, ..Default::default() }
    }

    /// An empty tally that leaves out of the capability view what the suite's
    /// `exclude` names (SPEC §22).
    pub fn excluding(infos: &[CaseInfo], exclude: &[String]) -> Self {
        Tally { exclude: exclude.to_vec(), ..Tally::new(infos) }
    }

    /// List the suite's monitors, so one that never ran still shows (n = 0).
    pub fn declare_monitors(&mut self, names: &[String]) {
        for n in names {
            self.monitors.entry(n.clone()).or_default();
        }
    }

    pub fn add(&mut self, case: usize, r: &TrialRecord) {
        // A case awaiting review is played and reported apart, never counted (SPEC §23).
        if self.pending.add(case, r) {
            return;
        }
        self.verdicts.add(r);
        let should_abstain = self.should_abstain.get(case).copied().unwrap_or(false);
        let excluded = self.published.add(r, should_abstain, &self.exclude);
        let on_user = self.blame.add(r);
        let ct = &mut self.cases[case];
        *ct.outcomes.entry(r.outcome).or_default() += 1;
        if excluded {
            ct.excluded += 1;
            ct.excluded_accepted += (r.outcome == Outcome::Accepted) as u32;
        } else if on_user {
            ct.user_blamed += 1;
        }
        ct.cost_usd += r.usage.cost_usd;
        self.total_cost_usd += r.usage.cost_usd;
        if r.outcome != Outcome::InfraError && r.infra_error.is_some() {
            self.infra_after_start += 1;
        }
        if let Some(s) = &r.safety {
            self.safety_seen = true;
            if r.outcome != Outcome::InfraError {
                ct.safety.add(s);
            }
        }
        if r.outcome != Outcome::InfraError {
            self.latencies_ms.push(r.wall_ms);
            self.trials_run += 1;
            self.total_tokens += r.usage.input_tokens + r.usage.output_tokens;
            self.total_tool_calls += r.calls.requested as u64;
            if let Some(eff) = &mut ct.efficiency {
                eff.push(EffTrial {
                    trial: r.trial,
                    requested: r.calls.requested,
                    executed: r.calls.executed,
                    tokens: r.usage.input_tokens + r.usage.output_tokens,
                    accepted: r.outcome == Outcome::Accepted,
                });
            }
        }
        for c in &r.checks {
            let t = self.checks.entry(c.name.clone()).or_insert_with(|| CheckTally {
                name: c.name.clone(),
                critical: c.critical,
                ..Default::default()
            });
            let verdict = c.verdict();
            match verdict {
                CheckVerdict::Pass => t.passed += 1,
                CheckVerdict::Fail => t.failed += 1,
                CheckVerdict::Skipped => {
                    t.skipped += 1;
                    self.skipped_checks += 1;
                }
                CheckVerdict::NotApplicable => {
                    t.not_applicable += 1;
                    self.not_applicable_checks += 1;
                }
                CheckVerdict::Error => t.errors += 1,
            }
            if let Some(cas) = c.cascade() {
                let ct = self.cascades.entry(c.name.clone()).or_default();
                ct.items += 1;
                ct.escalated += cas.escalated as u32;
                for s in &cas.stages {
                    let i = match ct.stages.iter().position(|x| x.stage == s.stage && x.judge == s.judge) {
                        Some(i) => i,
                        None => {
                            ct.stages.push(StageFigures {
                                stage: s.stage.clone(),
                                judge: s.judge.clone(),
                                ..Default::default()
                            });
                            ct.stages.len() - 1
                        }
                    };
                    let st = &mut ct.stages[i];
                    st.items += 1;
                    st.calls += s.calls;
                    st.input_tokens += s.input_tokens;
                    st.output_tokens += s.output_tokens;
                    st.cost_usd += s.cost_usd;
                }
            }
            if let Some(m) = &c.monitor {
                let mt = self.monitors.entry(m.clone()).or_default();
                match verdict {
                    CheckVerdict::Pass => mt.n += 1,
                    CheckVerdict::Fail => {
                        mt.n += 1;
                        mt.violations += 1;
                    }
                    _ => {}
                }
            }
        }
        for s in &r.tool_spans {
            let tt = self.tools.entry(s.tool.clone()).or_default();
            tt.calls += 1;
            match s.status {
                CallStatus::Failed | CallStatus::Faulted(_) => tt.errors += 1,
                CallStatus::Denied | CallStatus::Rejected => tt.refused += 1,
                CallStatus::Executed => {}
            }
            if matches!(s.status, CallStatus::Executed | CallStatus::Failed | CallStatus::Faulted(_)) {
                tt.durations_ms.push(s.duration_ms);
            }
        }
    }
}

/// A per-case row of summary.json (SPEC §8 keys).
#[derive(Debug, Clone, Serialize)]
pub struct CaseFigures {
    pub id: String,
    pub n: u32,
    pub accepted: u32,
    pub weight: f64,
    pub outcomes: BTreeMap<Outcome, u32>,
    pub pass_at_k: ByK,
    pub pass_hat_k: ByK,
    pub cost_usd: f64,
    /// Tool calls and tokens against the case's reference solution, when it declares one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<CaseEfficiency>,
}

fn case_figures(info: &CaseInfo, t: &CaseTally, operational: bool) -> CaseFigures {
    let infra = t.count(Outcome::InfraError);
    // The capability view leaves out infrastructure errors and what the suite excluded (SPEC §22).
    let (n, c) = if operational {
        (t.total(), t.count(Outcome::Accepted))
    } else {
        (t.total() - infra - t.excluded, t.count(Outcome::Accepted) - t.excluded_accepted)
    };
    // The same estimators as pass_at_k / pass_hat_k, by recurrence over k (O(n), not O(n²)).
    let mut pass_at = ByK::new();
    let mut pass_hat = ByK::new();
    let (mut all_pass, mut all_fail) = (1.0f64, 1.0f64);
    for k in 1..=n {
        let i = k - 1;
        all_pass *= if c > i { (c - i) as f64 / (n - i) as f64 } else { 0.0 };
        all_fail *= if n - c > i { (n - c - i) as f64 / (n - i) as f64 } else { 0.0 };
        pass_at.insert(K(k), 1.0 - all_fail);
        pass_hat.insert(K(k), all_pass);
    }
    CaseFigures {
        id: info.id.clone(),
        n,
        accepted: c,
        weight: info.weight,
        outcomes: Outcome::ALL.iter().map(|o| (*o, t.count(*o))).collect(),
        pass_at_k: pass_at,
        pass_hat_k: pass_hat,
        cost_usd: t.cost_usd,
        efficiency: None,
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Interval {
    pub lower: f64,
    pub upper: f64,
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

impl CaseFigures {
    /// Trials of this case with outcome `o`.
    pub fn count(&self, o: Outcome) -> u32 {
        self.outcomes.get(&o).copied().unwrap_or(0)
    }
    pub fn pass_hat(&self, k: u32) -> Option<f64> {
        self.pass_hat_k.get(&K(k)).copied()
    }
    pub fn pass_at(&self, k: u32) -> Option<f64> {
        self.pass_at_k.get(&K(k)).copied()
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

fn view(rows: &[CaseFigures], bootstrap: &Bootstrap) -> Figures {
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

/// summary.json: the figures plus the run's identity, how complete it is,
/// what to keep in mind reading it, and the gates' verdicts.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryFile<'a> {
    pub suite: &'a str,
    pub version: Option<&'a str>,
    pub run_id: &'a str,
    pub seed: u64,
    /// Every planned trial has its record and none was interrupted.
    pub complete: bool,
    pub coverage: CoverageFile<'a>,
    pub caveats: &'a Caveats,
    /// The caveats as sentences (also printed as warnings).
    pub warnings: &'a [String],
    #[serde(flatten)]
    pub summary: &'a Summary,
    pub gates: &'a [Verdict],
    /// The dataset files the cases came from, with the bad rows they skipped.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub datasets: Vec<DatasetCount>,
    /// An adaptive run's rounds and sequential verdicts (SPEC §20).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<&'a super::adaptive::Adaptive>,
}

impl crate::record::files::RunDirFile for SummaryFile<'_> {}

/// A dataset file's rows in summary.json: read, declared as cases, skipped as bad.
#[derive(Debug, Clone, Serialize)]
pub struct DatasetCount {
    pub path: String,
    pub rows: u64,
    pub cases: u64,
    pub skipped: u64,
}

impl DatasetCount {
    pub fn of(entries: &[crate::record::manifest::DatasetEntry]) -> Vec<DatasetCount> {
        entries
            .iter()
            .map(|d| DatasetCount { path: d.path.clone(), rows: d.rows, cases: d.cases, skipped: d.skipped })
            .collect()
    }
}

/// How much of the planned run its records cover.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Coverage {
    /// (case, trial) pairs planned (for this partition).
    pub planned: usize,
    /// Distinct (case, trial) pairs with a record.
    pub recorded: usize,
    /// Records of trials that ended as `interrupted`.
    pub interrupted: usize,
}

/// summary.json's `coverage`: the run's completeness, and what share of the
/// tasks the agent attempted (SPEC §22).
#[derive(Debug, Clone, Serialize)]
pub struct CoverageFile<'a> {
    #[serde(flatten)]
    pub run: Coverage,
    #[serde(flatten)]
    pub tasks: &'a TaskCoverage,
}

impl Coverage {
    pub fn complete(&self) -> bool {
        self.interrupted == 0 && self.recorded >= self.planned
    }
}

/// Below this many counted cases a run warns that its intervals are optimistic.
pub const FEW_CASES: usize = 10;

/// What a reader of the figures must keep in mind (summary.json `caveats`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Caveats {
    /// Some planned trials have no record, or were interrupted.
    pub incomplete: bool,
    /// Fewer than [`FEW_CASES`] cases were counted.
    pub few_cases: bool,
    /// The suite declares no gate: nothing decides pass or fail.
    pub no_gates: bool,
    /// The suite has judge checks and every one of them was skipped.
    pub judges_all_skipped: bool,
}

/// The caveats of a run, and each as a sentence.
///
/// `resume` is the command that finishes the run (`evalua run SUITE --resume RUN_DIR`).
pub fn caveats(
    summary: &Summary,
    gates: &[Gate],
    judge_checks: &[String],
    cov: &Coverage,
    resume: &str,
) -> (Caveats, Vec<String>) {
    let mut c = Caveats::default();
    let mut warnings = Vec::new();
    if !cov.complete() {
        c.incomplete = true;
        warnings.push(format!(
            "the run is incomplete: {} of {} planned trials recorded{}; the figures cover only what ran and no gate \
             passes (resume it with `{resume}`, or decide on what ran with --allow-incomplete)",
            cov.recorded.saturating_sub(cov.interrupted),
            cov.planned,
            if cov.interrupted > 0 { format!(", {} interrupted", cov.interrupted) } else { String::new() }
        ));
    }
    let cases = summary.figures.capability.cases;
    if cases < FEW_CASES {
        c.few_cases = true;
        warnings.push(format!(
            "only {} counted: intervals over fewer than {FEW_CASES} cases say little about cases the suite does not hold",
            plural(cases, "case")
        ));
    }
    if gates.is_empty() {
        c.no_gates = true;
        warnings.push(
            "the suite declares no gates: nothing decides pass or fail, and the exit code is 0 whatever the figures"
                .into(),
        );
    }
    let judged: Vec<&CheckRate> = summary.checks.iter().filter(|r| judge_checks.contains(&r.tally.name)).collect();
    if !judged.is_empty() && judged.iter().all(|r| r.tally.passed + r.tally.failed + r.tally.errors == 0) {
        c.judges_all_skipped = true;
        warnings.push(format!(
            "every judge check was skipped ({}): no judge model was reachable, so nothing they grade was verified \
             (--require-judge makes this a failure)",
            judged.iter().map(|r| r.tally.name.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    (c, warnings)
}

/// `1 case`, `3 cases`.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 { format!("1 {word}") } else { format!("{n} {word}s") }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn estimators_match_hand_computed_values() {
        // 2 of 4: pass@2 = 1 - C(2,2)/C(4,2) = 5/6; pass^2 = C(2,2)/C(4,2) = 1/6.
        assert!(close(pass_at_k(4, 2, 2), 5.0 / 6.0));
        assert!(close(pass_hat_k(4, 2, 2), 1.0 / 6.0));
        // 7 of 8: pass^4 = C(7,4)/C(8,4) = 35/70.
        assert!(close(pass_hat_k(8, 7, 4), 0.5));
        assert!(close(pass_hat_k(5, 0, 1), 0.0));
        assert!(close(pass_at_k(5, 5, 3), 1.0));
        assert!(close(pass_at_k(3, 1, 1), 1.0 / 3.0));
        assert!(pass_hat_k(3, 3, 4).is_nan());
    }

    #[test]
    fn case_recurrence_matches_the_closed_forms() {
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
        t.outcomes.insert(Outcome::Accepted, 6);
        t.outcomes.insert(Outcome::Failed, 3);
        let cf = case_figures(&info, &t, false);
        for k in 1..=9u32 {
            assert!(close(cf.pass_hat_k[&K(k)], pass_hat_k(9, 6, k)), "pass^{k}");
            assert!(close(cf.pass_at_k[&K(k)], pass_at_k(9, 6, k)), "pass@{k}");
        }
    }

    #[test]
    fn wilson_matches_published_values() {
        // Newcombe (1998), table I: 81/263 → 0.2553 to 0.3662; 0/10 → 0 to 0.2775.
        let (lo, hi) = wilson(81, 263).unwrap();
        assert!((lo - 0.2553).abs() < 5e-4 && (hi - 0.3662).abs() < 5e-4, "{lo} {hi}");
        let (lo, hi) = wilson(0, 10).unwrap();
        assert!(lo == 0.0 && (hi - 0.2775).abs() < 5e-4, "{lo} {hi}");
        assert_eq!(wilson(3, 0), None);
    }

    #[test]
    fn quantiles_interpolate() {
        let v = [10.0, 20.0, 30.0, 40.0];
        assert_eq!(quantile(&v, 0.5), Some(25.0));
        assert_eq!(quantile(&v, 0.0), Some(10.0));
        assert_eq!(quantile(&v, 1.0), Some(40.0));
        assert_eq!(quantile(&[], 0.5), None);
    }

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

    #[test]
    fn quantiles_of_infinities_are_not_nan() {
        let v = [1.0, f64::INFINITY, f64::INFINITY];
        assert_eq!(quantile(&v, 0.975), Some(f64::INFINITY));
        assert_eq!(quantile(&v, 0.0), Some(1.0));
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
