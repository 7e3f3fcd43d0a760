//! `evalua compare BASE CAND` and `run --baseline`: pair two runs case by case.
//!
//! Per case, the figure compared is the accepted rate (c/n, = pass^1):
//! **improved** when the candidate's is higher, **regressed** when lower,
//! **unchanged** when equal and above zero, **unresolved** when no trial was
//! accepted in either run; **not comparable** when a case has no counted trial
//! in one of the runs or is in one run only. These per-case classes describe
//! what moved; whether the suite moved is read from the difference of each
//! figure with its 95% paired bootstrap interval (cases resampled together in
//! both runs, seeded), which excludes 0 when the change is unlikely to be noise.
//!
//! When the two runs share the agent's trajectories (one re-grades the
//! other, or both re-grade the same run: SPEC §10), every difference is a
//! **measurement change**: the cases that moved are labelled so, and the
//! trials are paired one by one to list which checks changed their verdict.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::estimators::quantile;
use super::figures::CaseFigures;
use super::rundata::RunData;
use crate::error::{Error, Result};
use crate::record::manifest::Manifest;
use crate::record::{CheckResult, Outcome};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    Improved,
    Regressed,
    Unchanged,
    Unresolved,
    NotComparable,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Improved => "improved",
            Class::Regressed => "regressed",
            Class::Unchanged => "unchanged",
            Class::Unresolved => "unresolved",
            Class::NotComparable => "not_comparable",
        }
    }
}

/// What a per-case change is known to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Same trajectories, other checks (or fixtures): the grader moved, not the agent.
    Measurement,
}

#[derive(Debug, Clone, Serialize)]
pub struct CaseDiff {
    pub id: String,
    pub class: Class,
    /// `measurement` when the runs share the agent's trajectories and the
    /// case's rate or any of its trials' check verdicts differ; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Change>,
    /// (accepted, n) in each run; null when the case is not in that run.
    pub base: Option<(u32, u32)>,
    pub cand: Option<(u32, u32)>,
    /// Candidate accepted rate − base accepted rate.
    pub delta: Option<f64>,
    pub base_critical: u32,
    pub cand_critical: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct FigureDiff {
    pub name: String,
    pub base: Option<f64>,
    pub cand: Option<f64>,
    /// Paired difference (cand − base) over the cases both runs counted.
    pub delta: Option<f64>,
    pub interval: Option<(f64, f64)>,
    /// Paired cases the difference is computed on.
    pub cases: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Side {
    pub dir: String,
    pub run_id: String,
    pub cases: usize,
    pub trials: u32,
    pub critical_failures: u32,
    pub grader_errors: u32,
    pub infra_errors: u32,
    pub total_cost_usd: f64,
    pub cost_per_accepted_usd: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub latency_n: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub suite: String,
    pub base: Side,
    pub cand: Side,
    pub warnings: Vec<String>,
    pub figures: Vec<FigureDiff>,
    pub counts: BTreeMap<&'static str, usize>,
    pub cases: Vec<CaseDiff>,
    /// Cases with a critical failure in the candidate and none in the base.
    pub new_critical: Vec<String>,
    /// Set when the two runs share the agent's trajectories: the differences are a measurement change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measurement: Option<Measurement>,
}

/// compare.json.
impl crate::record::files::RunDirFile for Comparison {}

/// A run's compare.json read back in brief (what `run --baseline` found,
/// for `--json` and `report --format github`).
#[derive(Debug, Clone, Deserialize)]
pub struct Recorded {
    pub base: RecordedBase,
    #[serde(default)]
    pub counts: BTreeMap<String, usize>,
    #[serde(default)]
    pub cases: Vec<RecordedCase>,
    #[serde(default)]
    pub new_critical: Vec<String>,
    /// Present (not null) for a measurement change.
    #[serde(default)]
    pub measurement: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RecordedBase {
    pub run_id: String,
    pub dir: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RecordedCase {
    pub id: String,
    pub class: Class,
}

impl Recorded {
    /// The run dir's compare.json; None when it has none (or one this evalua cannot read).
    pub fn read(dir: &std::path::Path) -> Option<Recorded> {
        let text = std::fs::read_to_string(dir.join(crate::record::files::COMPARE_JSON)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The ids of the cases of class `class`.
    pub fn ids(&self, class: Class) -> Vec<&str> {
        self.cases.iter().filter(|c| c.class == class).map(|c| c.id.as_str()).collect()
    }
}

/// How two runs share the agent's trajectories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// The candidate is `evalua regrade BASE`.
    RegradedFromBase,
    /// The base is `evalua regrade CANDIDATE`.
    BaseRegradedFromCandidate,
    /// Both grade the trajectories of the same run.
    SharedTrajectories,
}

/// The measurement change between two runs of the same trajectories.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    pub relation: Relation,
    /// The run whose agent produced the trajectories.
    pub trajectories_run_id: String,
    pub base_grader_sha256: String,
    pub cand_grader_sha256: String,
    /// Trials present in both runs (paired by case and trial number).
    pub paired_trials: usize,
    /// Trials whose outcome differs.
    pub outcome_changes: usize,
    /// Per check name, the trials whose verdict differs (most first).
    pub checks: Vec<CheckChange>,
}

/// One check's verdict changes over the paired trials.
#[derive(Debug, Clone, Serialize)]
pub struct CheckChange {
    pub check: String,
    /// Trials whose verdict on this check differs.
    pub trials: usize,
    pub pass_to_fail: usize,
    pub fail_to_pass: usize,
    /// Other changes: to or from a grader error or a skip, or a check present in one run only.
    pub other: usize,
    /// The cases these trials belong to.
    pub cases: Vec<String>,
}

/// A check's verdict on one trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Pass,
    Fail,
    Error,
    Skipped,
    Absent,
}

fn verdict(c: &CheckResult) -> Verdict {
    match c.passed {
        Some(true) => Verdict::Pass,
        Some(false) => Verdict::Fail,
        None if c.skipped => Verdict::Skipped,
        None => Verdict::Error,
    }
}

/// Whether (and how) the two runs share the agent's trajectories.
fn relation(base: &Manifest, cand: &Manifest) -> Option<Relation> {
    if cand.regraded_from.as_ref().is_some_and(|r| r.run_id == base.run_id) {
        Some(Relation::RegradedFromBase)
    } else if base.regraded_from.as_ref().is_some_and(|r| r.run_id == cand.run_id) {
        Some(Relation::BaseRegradedFromCandidate)
    } else if (base.regraded_from.is_some() || cand.regraded_from.is_some())
        && base.trajectories_run_id() == cand.trajectories_run_id()
    {
        Some(Relation::SharedTrajectories)
    } else {
        None
    }
}

/// One trial's checks in both runs, paired: by name, then (a check whose
/// options are in its default name, `no_loops (max 2)`, is renamed when they
/// change) the remaining ones by position when both runs have as many checks.
/// Each pair is (label, verdict before, verdict now); a check in one run only
/// is `Absent` in the other.
fn pair_checks(old: &[CheckResult], new: &[CheckResult]) -> Vec<(String, Verdict, Verdict)> {
    let mut out = Vec::new();
    let mut new_used = vec![false; new.len()];
    let mut old_left = Vec::new();
    for (i, o) in old.iter().enumerate() {
        match new.iter().position(|n| n.name == o.name) {
            Some(j) if !new_used[j] => {
                new_used[j] = true;
                out.push((o.name.clone(), verdict(o), verdict(&new[j])));
            }
            _ => old_left.push(i),
        }
    }
    for i in old_left {
        let o = &old[i];
        if old.len() == new.len() && !new_used[i] {
            new_used[i] = true;
            out.push((format!("{} (was: {})", new[i].name, o.name), verdict(o), verdict(&new[i])));
        } else {
            out.push((o.name.clone(), verdict(o), Verdict::Absent));
        }
    }
    for (j, n) in new.iter().enumerate() {
        if !new_used[j] {
            out.push((n.name.clone(), Verdict::Absent, verdict(n)));
        }
    }
    out
}

/// Pair the two runs' trials and count, per check, the verdicts that differ.
/// Returns the measurement and the cases with any difference.
fn measure(
    base: &RunData,
    cand: &RunData,
    relation: Relation,
) -> Result<(Measurement, std::collections::BTreeSet<String>)> {
    type Key = (String, u32);
    let mut before: std::collections::HashMap<Key, (crate::record::Outcome, Vec<CheckResult>)> = Default::default();
    for item in base.run_dir.records()? {
        let (_, _, r) = item?;
        before.insert((r.case, r.trial), (r.outcome, r.checks));
    }
    let mut per_check: BTreeMap<String, CheckChange> = BTreeMap::new();
    let mut moved = std::collections::BTreeSet::new();
    let (mut paired, mut outcomes) = (0usize, 0usize);
    for item in cand.run_dir.records()? {
        let (_, _, r) = item?;
        let Some((outcome, old)) = before.remove(&(r.case.clone(), r.trial)) else { continue };
        paired += 1;
        if outcome != r.outcome {
            outcomes += 1;
            moved.insert(r.case.clone());
        }
        for (label, was, now) in pair_checks(&old, &r.checks) {
            if was == now {
                continue;
            }
            moved.insert(r.case.clone());
            let e = per_check.entry(label.clone()).or_insert_with(|| CheckChange {
                check: label,
                trials: 0,
                pass_to_fail: 0,
                fail_to_pass: 0,
                other: 0,
                cases: Vec::new(),
            });
            e.trials += 1;
            match (was, now) {
                (Verdict::Pass, Verdict::Fail) => e.pass_to_fail += 1,
                (Verdict::Fail, Verdict::Pass) => e.fail_to_pass += 1,
                _ => e.other += 1,
            }
            if !e.cases.contains(&r.case) {
                e.cases.push(r.case.clone());
            }
        }
    }
    let mut checks: Vec<CheckChange> = per_check.into_values().collect();
    checks.sort_by(|a, b| b.trials.cmp(&a.trials).then_with(|| a.check.cmp(&b.check)));
    let m = Measurement {
        relation,
        trajectories_run_id: cand.manifest.trajectories_run_id().to_string(),
        base_grader_sha256: base.manifest.grader_sha256.clone(),
        cand_grader_sha256: cand.manifest.grader_sha256.clone(),
        paired_trials: paired,
        outcome_changes: outcomes,
        checks,
    };
    Ok((m, moved))
}

fn side(r: &RunData) -> Side {
    let f = &r.summary.figures;
    Side {
        dir: r.dir.display().to_string(),
        run_id: r.run_id().to_string(),
        cases: f.capability.cases,
        trials: f.capability.trials,
        critical_failures: f.critical_failures,
        grader_errors: f.grader_errors,
        infra_errors: f.infra_errors,
        total_cost_usd: f.total_cost_usd,
        cost_per_accepted_usd: f.cost_per_accepted_usd,
        p50_ms: f.p50_ms,
        p95_ms: f.p95_ms,
        latency_n: f.latency_n,
    }
}

pub fn short(h: Option<&str>) -> String {
    h.map(|h| h.chars().take(12).collect()).unwrap_or_else(|| "unknown".into())
}

/// Differences in what was run that make the comparison unfair: an error
/// unless `allow`, then a warning.
fn revision_problems(base: &RunData, cand: &RunData) -> Vec<String> {
    let mut out = Vec::new();
    if base.suite_sha256() != cand.suite_sha256() {
        out.push(format!(
            "the suite file differs (sha256 {} vs {})",
            short(base.suite_sha256()),
            short(cand.suite_sha256())
        ));
    }
    let changed: Vec<&str> = base
        .infos
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let j = cand.case_index(&c.id)?;
            (base.revisions[i] != cand.revisions[j]).then_some(c.id.as_str())
        })
        .collect();
    if !changed.is_empty() {
        let more = if changed.len() > 5 { format!(" and {} more", changed.len() - 5) } else { String::new() };
        out.push(format!(
            "{} case(s) changed revision: {}{more}",
            changed.len(),
            changed[..changed.len().min(5)].join(", ")
        ));
    }
    out
}

fn warnings(base: &RunData, cand: &RunData) -> Vec<String> {
    let mut w = Vec::new();
    let (bm, cm) = (&base.manifest, &cand.manifest);
    let budget = |m: &crate::record::Manifest| serde_json::to_value(&m.budget).unwrap_or_default();
    if budget(bm) != budget(cm) {
        w.push(format!("budgets differ: {} vs {}", budget(bm), budget(cm)));
    }
    let trials = |r: &RunData| -> BTreeMap<String, u32> {
        r.infos.iter().zip(&r.planned).map(|(c, n)| (c.id.clone(), *n)).collect()
    };
    let (bt, ct) = (trials(base), trials(cand));
    let differing = bt.iter().filter(|(id, n)| ct.get(*id).is_some_and(|m| m != *n)).count();
    if differing > 0 {
        w.push(format!("trials per case differ for {differing} case(s) (pass^k compares only k both runs support)"));
    }
    // A judge check is the same instrument only with the same model(s) and prompt.
    let judges = |m: &crate::record::Manifest| -> Vec<(String, String, String)> {
        m.judges.iter().map(|j| (j.name.clone(), j.judge.clone(), j.prompt_sha256.clone())).collect()
    };
    let (bj, cj) = (judges(bm), judges(cm));
    for (name, judge, prompt) in &bj {
        if let Some((_, cjudge, cprompt)) = cj.iter().find(|(n, _, _)| n == name)
            && (cjudge != judge || cprompt != prompt)
        {
            w.push(format!(
                "judge '{name}' differs: {judge} (prompt {}) vs {cjudge} (prompt {})",
                short(Some(prompt)),
                short(Some(cprompt))
            ));
        }
    }
    // A simulated user is part of the instrument: another one is a measurement change (SPEC §18).
    let sims = |m: &crate::record::Manifest| -> Vec<crate::record::manifest::UserPin> {
        // The distinct simulators, in a fixed order (two runs list their cases' pins in their own order).
        let mut v: Vec<_> = m.users.iter().map(|p| p.simulator()).collect();
        v.sort_by_cached_key(|p| serde_json::to_string(p).unwrap_or_default());
        v.dedup();
        v
    };
    if sims(bm) != sims(cm) {
        let show = |m: &crate::record::Manifest| -> String {
            let v: Vec<String> = m
                .users
                .iter()
                .map(|p| {
                    format!(
                        "{}/{} at {} (temperature {}, prompt {})",
                        p.provider,
                        p.model.as_deref().unwrap_or("?"),
                        p.endpoint_host.as_deref().unwrap_or("?"),
                        p.temperature.map(|t| t.to_string()).unwrap_or_else(|| "default".into()),
                        short(Some(&p.system_sha256))
                    )
                })
                .collect();
            if v.is_empty() { "none".into() } else { v.join(", ") }
        };
        w.push(format!(
            "the simulated users differ (a measurement change, like a changed grader): {} vs {}",
            show(bm),
            show(cm)
        ));
    }
    for (name, m) in [("base", bm), ("candidate", cm)] {
        if let Some(p) = m.partition.as_deref() {
            w.push(format!("the {name} is one partition ({p}) of a run; merge the parts first for the whole picture"));
        }
    }
    let (nb, nc) = (base.infos.len(), cand.infos.len());
    let common = base.infos.iter().filter(|c| cand.case_index(&c.id).is_some()).count();
    if common < nb || common < nc {
        w.push(format!(
            "case sets differ: {common} in both, {} only in the base, {} only in the candidate",
            nb - common,
            nc - common
        ));
    }
    w
}

/// The paired cases: (base row, cand row, weight) where both runs counted trials.
fn pairs<'a>(base: &'a RunData, cand: &'a RunData) -> Vec<(&'a CaseFigures, &'a CaseFigures, f64)> {
    base.summary
        .cases
        .iter()
        .filter_map(|b| {
            let c = &cand.summary.cases[cand.case_index(&b.id)?];
            (b.n > 0 && c.n > 0).then_some((b, c, c.weight))
        })
        .collect()
}

type Pair<'a> = (&'a CaseFigures, &'a CaseFigures, f64);

/// Paired percentile bootstrap of the weighted mean difference of `f` (resampling cases).
fn paired(pairs: &[Pair], seed: u64, f: &dyn Fn(&CaseFigures) -> Option<f64>) -> Option<(f64, (f64, f64), usize)> {
    let vals: Vec<(f64, f64)> = pairs.iter().filter_map(|(b, c, w)| Some((f(c)? - f(b)?, *w))).collect();
    if vals.is_empty() {
        return None;
    }
    let mean = |it: &mut dyn Iterator<Item = (f64, f64)>| {
        let (mut s, mut w) = (0.0, 0.0);
        for (d, wt) in it {
            s += d * wt;
            w += wt;
        }
        s / w
    };
    let point = mean(&mut vals.iter().copied());
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut means: Vec<f64> =
        (0..2000).map(|_| mean(&mut (0..vals.len()).map(|_| vals[rng.usize(..vals.len())]))).collect();
    means.sort_by(|a, b| a.total_cmp(b));
    Some((point, (quantile(&means, 0.025)?, quantile(&means, 0.975)?), vals.len()))
}

/// Compare two loaded runs (revision problems are errors unless `allow`).
pub fn compare(base: &RunData, cand: &RunData, allow: bool) -> Result<Comparison> {
    let problems = revision_problems(base, cand);
    let mut warns = Vec::new();
    let shared = relation(&base.manifest, &cand.manifest);
    if shared.is_some() {
        // The same trajectories under other checks: a changed suite is what is being measured.
        warns.extend(problems.into_iter().map(|p| format!("measurement change: {p}")));
    } else if !problems.is_empty() {
        if !allow {
            return Err(Error::Input(format!(
                "{} and {} ran different suite revisions: {}; pass --allow-revision-change to compare anyway",
                base.dir.display(),
                cand.dir.display(),
                problems.join("; ")
            )));
        }
        warns.extend(problems.into_iter().map(|p| format!("revision change allowed: {p}")));
    }
    warns.extend(warnings(base, cand));
    let pairs = pairs(base, cand);
    let seed = base.seed().wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ cand.seed() ^ 0xc0a1;

    let kmax = pairs.iter().map(|(b, c, _)| b.n.min(c.n)).min().unwrap_or(0);
    let mut figures = Vec::new();
    let bc = &base.summary.figures.capability;
    let cc = &cand.summary.figures.capability;
    let ks: Vec<u32> = (1..=kmax).filter(|k| *k <= super::figures::INTERVAL_K_UP_TO || *k == kmax).collect();
    let mut push = |name: String, b: Option<f64>, c: Option<f64>, f: &dyn Fn(&CaseFigures) -> Option<f64>| {
        let p = paired(&pairs, seed, f);
        figures.push(FigureDiff {
            name,
            base: b,
            cand: c,
            delta: p.map(|p| p.0),
            interval: p.map(|p| p.1),
            cases: p.map(|p| p.2).unwrap_or(0),
        });
    };
    for &k in &ks {
        push(format!("pass^{k}"), bc.pass_hat(k), cc.pass_hat(k), &|c: &CaseFigures| c.pass_hat(k));
    }
    for &k in &ks {
        push(format!("pass@{k}"), bc.pass_at(k), cc.pass_at(k), &|c: &CaseFigures| c.pass_at(k));
    }
    push("accepted".into(), bc.accepted_rate, cc.accepted_rate, &|c: &CaseFigures| {
        Some(c.accepted as f64 / c.n as f64)
    });

    // Cost per accepted trial: ratio of sums on each side, paired resampling.
    {
        let (bcost, ccost) = (base.summary.figures.cost_per_accepted_usd, cand.summary.figures.cost_per_accepted_usd);
        let ratio = |rows: &mut dyn Iterator<Item = (f64, u32)>| {
            let (mut cost, mut acc) = (0.0, 0u32);
            for (c, a) in rows {
                cost += c;
                acc += a;
            }
            (acc > 0).then(|| cost / acc as f64)
        };
        let diff = |idx: &mut dyn Iterator<Item = usize>| -> Option<f64> {
            let idx: Vec<usize> = idx.collect();
            let b = ratio(&mut idx.iter().map(|&i| (pairs[i].0.cost_usd, pairs[i].0.accepted)))?;
            let c = ratio(&mut idx.iter().map(|&i| (pairs[i].1.cost_usd, pairs[i].1.accepted)))?;
            Some(c - b)
        };
        let any_cost = base.summary.figures.total_cost_usd > 0.0 || cand.summary.figures.total_cost_usd > 0.0;
        if any_cost && !pairs.is_empty() {
            let point = diff(&mut (0..pairs.len()));
            let mut rng = fastrand::Rng::with_seed(seed ^ 0xc057);
            let mut ds: Vec<f64> =
                (0..2000).filter_map(|_| diff(&mut (0..pairs.len()).map(|_| rng.usize(..pairs.len())))).collect();
            ds.sort_by(|a, b| a.total_cmp(b));
            let interval = if ds.len() >= 1900 { quantile(&ds, 0.025).zip(quantile(&ds, 0.975)) } else { None };
            figures.push(FigureDiff {
                name: "cost_per_accepted_usd".into(),
                base: bcost,
                cand: ccost,
                delta: point,
                interval,
                cases: pairs.len(),
            });
        }
    }

    // Per case.
    let mut cases = Vec::new();
    let mut new_critical = Vec::new();
    let mut ids: Vec<&str> = base.infos.iter().map(|c| c.id.as_str()).collect();
    ids.extend(cand.infos.iter().map(|c| c.id.as_str()).filter(|id| base.case_index(id).is_none()));
    for id in ids {
        let b = base.case_index(id).map(|i| &base.summary.cases[i]);
        let c = cand.case_index(id).map(|i| &cand.summary.cases[i]);
        let crit = |r: Option<&CaseFigures>| r.map(|r| r.count(Outcome::Critical)).unwrap_or(0);
        let (class, delta) = match (b, c) {
            (Some(b), Some(c)) if b.n > 0 && c.n > 0 => {
                let (rb, rc) = (b.accepted as f64 / b.n as f64, c.accepted as f64 / c.n as f64);
                let class = if rc > rb {
                    Class::Improved
                } else if rc < rb {
                    Class::Regressed
                } else if rc > 0.0 {
                    Class::Unchanged
                } else {
                    Class::Unresolved
                };
                (class, Some(rc - rb))
            }
            _ => (Class::NotComparable, None),
        };
        if crit(c) > 0 && crit(b) == 0 {
            new_critical.push(id.to_string());
        }
        cases.push(CaseDiff {
            id: id.to_string(),
            class,
            change: None,
            base: b.map(|r| (r.accepted, r.n)),
            cand: c.map(|r| (r.accepted, r.n)),
            delta,
            base_critical: crit(b),
            cand_critical: crit(c),
        });
    }
    let measurement = match shared {
        Some(rel) => {
            let (m, moved) = measure(base, cand, rel)?;
            for d in &mut cases {
                if matches!(d.class, Class::Improved | Class::Regressed) || moved.contains(&d.id) {
                    d.change = Some(Change::Measurement);
                }
            }
            Some(m)
        }
        None => None,
    };
    let mut counts = BTreeMap::new();
    for k in [Class::Improved, Class::Regressed, Class::Unchanged, Class::Unresolved, Class::NotComparable] {
        counts.insert(k.as_str(), cases.iter().filter(|c| c.class == k).count());
    }
    Ok(Comparison {
        suite: cand.suite().to_string(),
        base: side(base),
        cand: side(cand),
        warnings: warns,
        figures,
        counts,
        cases,
        new_critical,
        measurement,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, passed: Option<bool>) -> CheckResult {
        CheckResult {
            name: name.into(),
            passed,
            critical: false,
            evidence: serde_json::Value::Null,
            error: None,
            skipped: false,
            ..Default::default()
        }
    }

    #[test]
    fn checks_pair_by_name_then_by_position() {
        // Renamed in place (its options are in its name): paired by position.
        let old = [c("sql", Some(true)), c("no_loops (max 2)", Some(false))];
        let new = [c("sql", Some(true)), c("no_loops (max 4)", Some(true))];
        let p = pair_checks(&old, &new);
        assert_eq!(p.len(), 2);
        assert_eq!(p[1], ("no_loops (max 4) (was: no_loops (max 2))".into(), Verdict::Fail, Verdict::Pass));
        // A check added: absent before; the others by name whatever their order.
        let new = [c("no_loops (max 2)", Some(false)), c("sql", Some(false)), c("judge", None)];
        let p = pair_checks(&old, &new);
        assert_eq!(p[0], ("sql".into(), Verdict::Pass, Verdict::Fail));
        assert_eq!(p[1], ("no_loops (max 2)".into(), Verdict::Fail, Verdict::Fail));
        assert_eq!(p[2], ("judge".into(), Verdict::Absent, Verdict::Error));
        // A check removed.
        let p = pair_checks(&old, &old[..1]);
        assert_eq!(p[1], ("no_loops (max 2)".into(), Verdict::Fail, Verdict::Absent));
    }
}
