//! Figures from trial records (SPEC §7).
//!
//! Per case with n trials and c accepted: pass@k = 1 − C(n−c,k)/C(n,k) and
//! pass^k = C(c,k)/C(n,k). Suite figures are weighted means over cases, with
//! 95% intervals from a bootstrap that resamples *cases* (never pools trials).

use std::collections::BTreeMap;

use serde::{Serialize, Serializer};

use crate::record::{CallStatus, Outcome, TrialRecord, Verdict as CheckVerdict};
use crate::spec::gate::{self, Gate, Metric, Verdict};

/// A k of pass@k / pass^k. In JSON, the keys of the k-indexed maps ("1", "2", …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct K(pub u32);

impl Serialize for K {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// A figure indexed by k: pass@k or pass^k for k = 1, 2, …
pub type ByK = BTreeMap<K, f64>;

/// pass^k = C(c,k)/C(n,k): the chance that k trials drawn without replacement all pass.
pub fn pass_hat_k(n: u32, c: u32, k: u32) -> f64 {
    if k == 0 || k > n {
        return f64::NAN;
    }
    if c < k {
        return 0.0;
    }
    (0..k).map(|i| (c - i) as f64 / (n - i) as f64).product()
}

/// pass@k = 1 − C(n−c,k)/C(n,k): the chance that at least one of k trials passes.
pub fn pass_at_k(n: u32, c: u32, k: u32) -> f64 {
    if k == 0 || k > n {
        return f64::NAN;
    }
    let f = n - c;
    if f < k {
        return 1.0;
    }
    1.0 - (0..k).map(|i| (f - i) as f64 / (n - i) as f64).product::<f64>()
}

/// The q-quantile (0..1) by linear interpolation between order statistics.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64))
}

/// What the figures need to know about a case, whatever its records say.
#[derive(Debug, Clone)]
pub struct CaseInfo {
    pub id: String,
    pub weight: f64,
    pub tags: Vec<String>,
    pub difficulty: Option<String>,
}

/// Per-case tallies, accumulated as records stream in.
#[derive(Debug, Clone, Default)]
pub struct CaseTally {
    pub outcomes: BTreeMap<Outcome, u32>,
    pub cost_usd: f64,
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

/// The Wilson score interval (95%) for `k` successes in `n` trials.
pub fn wilson(k: u32, n: u32) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let (k, n, z) = (k as f64, n as f64, 1.959_963_984_540_054_f64);
    let p = k / n;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
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
}

impl Tally {
    pub fn new(cases: usize) -> Self {
        Tally { cases: vec![CaseTally::default(); cases], ..Default::default() }
    }

    /// List the suite's monitors, so one that never ran still shows (n = 0).
    pub fn declare_monitors(&mut self, names: &[String]) {
        for n in names {
            self.monitors.entry(n.clone()).or_default();
        }
    }

    pub fn add(&mut self, case: usize, r: &TrialRecord) {
        let ct = &mut self.cases[case];
        *ct.outcomes.entry(r.outcome).or_default() += 1;
        ct.cost_usd += r.usage.cost_usd;
        self.total_cost_usd += r.usage.cost_usd;
        if r.outcome != Outcome::InfraError {
            self.latencies_ms.push(r.wall_ms);
            self.trials_run += 1;
            self.total_tokens += r.usage.input_tokens + r.usage.output_tokens;
            self.total_tool_calls += r.calls.requested as u64;
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
                CallStatus::Failed | CallStatus::Faulted => tt.errors += 1,
                CallStatus::Denied | CallStatus::Rejected => tt.refused += 1,
                CallStatus::Executed => {}
            }
            if matches!(s.status, CallStatus::Executed | CallStatus::Failed | CallStatus::Faulted) {
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
    pub outcomes: BTreeMap<&'static str, u32>,
    pub pass_at_k: ByK,
    pub pass_hat_k: ByK,
    pub cost_usd: f64,
}

fn case_figures(info: &CaseInfo, t: &CaseTally, operational: bool) -> CaseFigures {
    let infra = t.count(Outcome::InfraError);
    let n = if operational { t.total() } else { t.total() - infra };
    let c = t.count(Outcome::Accepted);
    // The same estimators as pass_at_k / pass_hat_k, by recurrence over k (O(n), not O(n²)).
    let mut pass_at = BTreeMap::new();
    let mut pass_hat = BTreeMap::new();
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
        outcomes: Outcome::ALL.iter().map(|o| (o.as_str(), t.count(*o))).collect(),
        pass_at_k: pass_at,
        pass_hat_k: pass_hat,
        cost_usd: t.cost_usd,
    }
}

#[derive(Debug, Clone, Serialize)]
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
    let mut pass_at = BTreeMap::new();
    let mut pass_hat = BTreeMap::new();
    let mut intervals = BTreeMap::new();
    for k in 1..=kmax {
        let at = |c: &CaseFigures| c.pass_at(k);
        let hat = |c: &CaseFigures| c.pass_hat(k);
        if let Some(v) = weighted_mean(&counted, at) {
            pass_at.insert(K(k), v);
        }
        if let Some(v) = weighted_mean(&counted, hat) {
            pass_hat.insert(K(k), v);
        }
        // Intervals for the k people gate on: small k and the largest.
        if k <= INTERVAL_K_UP_TO || k == kmax {
            if let Some(i) = bootstrap.interval(&counted, at) {
                intervals.insert(Metric::PassAt(k), i);
            }
            if let Some(i) = bootstrap.interval(&counted, hat) {
                intervals.insert(Metric::PassHat(k), i);
            }
        }
    }
    let rate = |c: &CaseFigures| Some(c.accepted as f64 / c.n as f64);
    if let Some(i) = bootstrap.interval(&counted, rate) {
        intervals.insert(Metric::Accepted, i);
    }
    Figures {
        cases: counted.len(),
        trials: counted.iter().map(|(c, _)| c.n).sum(),
        pass_at_k: pass_at,
        pass_hat_k: pass_hat,
        accepted_rate: weighted_mean(&counted, rate),
        intervals,
    }
}

/// A seeded percentile bootstrap over cases.
pub struct Bootstrap {
    pub seed: u64,
    pub resamples: usize,
}

impl Bootstrap {
    pub fn interval(&self, rows: &[(&CaseFigures, f64)], f: impl Fn(&CaseFigures) -> Option<f64>) -> Option<Interval> {
        let vals: Vec<(f64, f64)> = rows.iter().filter_map(|(c, w)| f(c).map(|v| (v, *w))).collect();
        if vals.is_empty() {
            return None;
        }
        let mut rng = fastrand::Rng::with_seed(self.seed);
        let mut means = Vec::with_capacity(self.resamples);
        for _ in 0..self.resamples {
            let (mut s, mut w) = (0.0, 0.0);
            for _ in 0..vals.len() {
                let (v, wt) = vals[rng.usize(..vals.len())];
                s += v * wt;
                w += wt;
            }
            means.push(s / w);
        }
        means.sort_by(|a, b| a.total_cmp(b));
        Some(Interval { lower: quantile(&means, 0.025)?, upper: quantile(&means, 0.975)? })
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
}

#[derive(Debug, Clone, Serialize)]
pub struct SuiteFigures {
    #[serde(flatten)]
    pub capability: Figures,
    pub critical_failures: u32,
    pub grader_errors: u32,
    pub infra_errors: u32,
    pub skipped_checks: u32,
    /// Check results that did not apply (a recorded trace has no final state).
    pub not_applicable_checks: u32,
    pub total_cost_usd: f64,
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
        for (info, cf) in infos.iter().zip(&cap) {
            for g in select(info) {
                groups.entry(g).or_default().push(cf.clone());
            }
        }
        groups
            .into_iter()
            .map(|(g, rows)| {
                let counted: Vec<(&CaseFigures, f64)> =
                    rows.iter().filter(|c| c.n > 0).map(|c| (c, c.weight)).collect();
                let mut hat = BTreeMap::new();
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

    let mut capability = view(&cap, &bootstrap);
    // Cost per accepted trial, with an interval that resamples cases too.
    if accepted > 0 {
        let counted: Vec<&CaseFigures> = cap.iter().filter(|c| c.n > 0).collect();
        if !counted.is_empty() {
            let mut rng = fastrand::Rng::with_seed(bootstrap.seed ^ 0xc057);
            let mut vals = Vec::new();
            for _ in 0..bootstrap.resamples {
                let (mut cost, mut acc) = (0.0, 0u32);
                for _ in 0..counted.len() {
                    let c = counted[rng.usize(..counted.len())];
                    cost += c.cost_usd;
                    acc += c.accepted;
                }
                vals.push(if acc > 0 { cost / acc as f64 } else { f64::INFINITY });
            }
            vals.sort_by(|a, b| a.total_cmp(b));
            if let (Some(lo), Some(hi)) = (quantile(&vals, 0.025), quantile(&vals, 0.975))
                && lo.is_finite()
            {
                capability.intervals.insert(Metric::CostPerAccepted, Interval { lower: lo, upper: hi });
            }
        }
    }

    Summary {
        figures: SuiteFigures {
            capability,
            critical_failures: sum(Outcome::Critical),
            grader_errors: sum(Outcome::GraderError),
            infra_errors: sum(Outcome::InfraError),
            skipped_checks: tally.skipped_checks,
            not_applicable_checks: tally.not_applicable_checks,
            total_cost_usd: tally.total_cost_usd,
            cost_per_accepted_usd: (accepted > 0).then(|| tally.total_cost_usd / accepted as f64),
            p50_ms: quantile(&lat, 0.5),
            p95_ms: quantile(&lat, 0.95),
            latency_n: lat.len(),
            mean_tool_calls: (runs > 0.0).then(|| tally.total_tool_calls as f64 / runs),
            mean_tokens: (runs > 0.0).then(|| tally.total_tokens as f64 / runs),
            operational: view(&ops, &bootstrap),
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
        cases: cap,
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

/// summary.json: the figures plus the run's identity and the gates' verdicts.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryFile<'a> {
    pub suite: &'a str,
    pub version: Option<&'a str>,
    pub run_id: &'a str,
    pub seed: u64,
    #[serde(flatten)]
    pub summary: &'a Summary,
    pub gates: &'a [Verdict],
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
        let info = CaseInfo { id: "x".into(), weight: 1.0, tags: vec![], difficulty: None };
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

    /// Over many simulated suites (cases drawn from a known population, trials
    /// from each case's own rate), the 95% case-bootstrap interval holds the
    /// population's figure at about the nominal rate. Fixed seed: not flaky.
    #[test]
    fn bootstrap_intervals_cover_the_truth_at_about_the_nominal_rate() {
        let (lo_p, hi_p) = (0.2f64, 0.95f64);
        // p ~ U(lo, hi): E[p] and E[p²] (pass^2's estimator is unbiased for p²).
        let truth_rate = (lo_p + hi_p) / 2.0;
        let truth_hat2 = (hi_p.powi(3) - lo_p.powi(3)) / (3.0 * (hi_p - lo_p));
        let mut rng = fastrand::Rng::with_seed(20261129);
        let sims = 300;
        let (mut hit_rate, mut hit_hat2) = (0, 0);
        for sim in 0..sims {
            let rows: Vec<CaseFigures> = (0..40)
                .map(|i| {
                    let p = lo_p + (hi_p - lo_p) * rng.f64();
                    let mut t = CaseTally::default();
                    for _ in 0..5 {
                        let o = if rng.f64() < p { Outcome::Accepted } else { Outcome::Failed };
                        *t.outcomes.entry(o).or_default() += 1;
                    }
                    let info = CaseInfo { id: format!("c{i}"), weight: 1.0, tags: vec![], difficulty: None };
                    case_figures(&info, &t, false)
                })
                .collect();
            let counted: Vec<(&CaseFigures, f64)> = rows.iter().map(|c| (c, 1.0)).collect();
            let b = Bootstrap { seed: sim, resamples: 1000 };
            let r = b.interval(&counted, |c| Some(c.accepted as f64 / c.n as f64)).unwrap();
            let h = b.interval(&counted, |c| c.pass_hat(2)).unwrap();
            hit_rate += (r.lower <= truth_rate && truth_rate <= r.upper) as u32;
            hit_hat2 += (h.lower <= truth_hat2 && truth_hat2 <= h.upper) as u32;
        }
        let (cr, ch) = (hit_rate as f64 / sims as f64, hit_hat2 as f64 / sims as f64);
        eprintln!("coverage over {sims} simulations: accepted {cr}, pass^2 {ch}");
        // A percentile bootstrap on 40 cases runs slightly under nominal; 0.90..0.98 is
        // about ±2.5 binomial standard errors around 0.94 for 300 simulations.
        assert!((0.90..=0.98).contains(&cr), "accepted-rate coverage {cr}");
        assert!((0.90..=0.98).contains(&ch), "pass^2 coverage {ch}");
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
