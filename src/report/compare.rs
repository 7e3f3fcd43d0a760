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

use crate::record::files;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::record::manifest::Manifest;
use crate::record::{CheckResult, Outcome};
use crate::stats::{CaseFigures, quantile};
use crate::stats::{RunData, rundata};
use crate::util::digest::sha256_hex;
use crate::util::inert::{console as line, markdown as md};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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

fn short(h: Option<&str>) -> String {
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
        let s = |j: &serde_json::Value, k: &str| j[k].as_str().unwrap_or_default().to_string();
        m.judges
            .as_array()
            .into_iter()
            .flatten()
            .map(|j| (s(j, "name"), s(j, "judge"), s(j, "prompt_sha256")))
            .collect()
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
    let ks: Vec<u32> = (1..=kmax).filter(|k| *k <= crate::stats::INTERVAL_K_UP_TO || *k == kmax).collect();
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

fn relation_text(m: &Measurement) -> &'static str {
    match m.relation {
        Relation::RegradedFromBase => "the candidate re-grades the base's trials",
        Relation::BaseRegradedFromCandidate => "the base re-grades the candidate's trials",
        Relation::SharedTrajectories => "both runs grade the same trials",
    }
}

/// The measurement-change paragraph: why, and which checks changed verdict on how many trials.
fn measurement_lines(m: &Measurement, markdown: bool) -> Vec<String> {
    let mut out = vec![format!(
        "{}Measurement change:{} {} (agent run {}; grader {} → {}): the differences are in the measurement, not the agent. {} of {} paired trials changed outcome.",
        if markdown { "**" } else { "" },
        if markdown { "**" } else { "" },
        relation_text(m),
        if markdown { md(&m.trajectories_run_id) } else { line(&m.trajectories_run_id) },
        short(Some(&m.base_grader_sha256)),
        short(Some(&m.cand_grader_sha256)),
        m.outcome_changes,
        m.paired_trials
    )];
    if m.checks.is_empty() {
        out.push("No check changed its verdict on any trial.".into());
    }
    out
}

fn label(d: &CaseDiff) -> &'static str {
    if d.change == Some(Change::Measurement) { " [measurement change]" } else { "" }
}

fn rate(v: Option<f64>, name: &str) -> String {
    if name.starts_with("cost") {
        return match v {
            Some(v) => format!("${v:.4}"),
            None => "∞".into(),
        };
    }
    super::text::fmt_value(v, true)
}

fn delta(v: Option<f64>, name: &str) -> String {
    match v.map(|v| if v.abs() < 1e-9 { 0.0 } else { v }) {
        Some(v) if name.starts_with("cost") => format!("{}${:.4}", if v >= 0.0 { "+" } else { "−" }, v.abs()),
        Some(v) => format!("{}{:.1} pt", if v >= 0.0 { "+" } else { "−" }, v.abs() * 100.0),
        None => "–".into(),
    }
}

/// The tables show pass^k / pass@k for k = 1, 2, 3, 5 and the largest k; JSON has every k ≤ 10.
fn shown(c: &Comparison, f: &FigureDiff) -> bool {
    let k = |p: &str| f.name.strip_prefix(p).and_then(|k| k.parse::<u32>().ok());
    let kmax = c.figures.iter().filter_map(|f| f.name.strip_prefix("pass^").and_then(|k| k.parse::<u32>().ok())).max();
    match k("pass^").or(k("pass@")) {
        Some(k) => [1, 2, 3, 5].contains(&k) || Some(k) == kmax,
        None => true,
    }
}

fn interval(f: &FigureDiff) -> String {
    match f.interval {
        Some((lo, hi)) => {
            let mark = if lo > 0.0 || hi < 0.0 { " *" } else { "" };
            format!("[{}, {}]{mark}", delta(Some(lo), &f.name), delta(Some(hi), &f.name))
        }
        None => "–".into(),
    }
}

fn ac(v: Option<(u32, u32)>) -> String {
    v.map(|(a, n)| format!("{a}/{n}")).unwrap_or_else(|| "absent".into())
}

fn ms(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.0} ms")).unwrap_or_else(|| "–".into())
}

/// The console rendering.
pub fn console(c: &Comparison) -> String {
    let mut o = String::new();
    let _ =
        writeln!(o, "compare {}: base {} → candidate {}", line(&c.suite), line(&c.base.run_id), line(&c.cand.run_id));
    for w in &c.warnings {
        let _ = writeln!(o, "warning: {}", line(w));
    }
    if let Some(m) = &c.measurement {
        for l in measurement_lines(m, false) {
            let _ = writeln!(o, "{l}");
        }
        if !m.checks.is_empty() {
            let _ = writeln!(o, "checks that changed verdict (trials: pass→fail, fail→pass, other):");
            for ch in &m.checks {
                let _ = writeln!(
                    o,
                    "  {}  {} trial(s): {} pass→fail, {} fail→pass, {} other  ({})",
                    line(&ch.check),
                    ch.trials,
                    ch.pass_to_fail,
                    ch.fail_to_pass,
                    ch.other,
                    line(&ch.cases.join(", "))
                );
            }
        }
    }
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::UTF8_BORDERS_ONLY);
    t.set_header(vec!["figure", "base", "candidate", "Δ (paired)", "95% interval of Δ", "paired cases"]);
    for f in c.figures.iter().filter(|f| shown(c, f)) {
        t.add_row(vec![
            f.name.clone(),
            rate(f.base, &f.name),
            rate(f.cand, &f.name),
            delta(f.delta, &f.name),
            interval(f),
            f.cases.to_string(),
        ]);
    }
    let _ = writeln!(o, "{t}");
    let _ = writeln!(o, "(* the interval excludes 0; paired bootstrap over cases, seeded)");
    let _ = writeln!(o, "cases: {}", classes_line(c));
    for class in [Class::Regressed, Class::Improved] {
        let rows: Vec<&CaseDiff> = c.cases.iter().filter(|d| d.class == class).collect();
        if !rows.is_empty() {
            let _ = writeln!(o, "{}:", class.as_str());
            for d in rows {
                let _ = writeln!(
                    o,
                    "  {}  {} → {} ({}){}",
                    line(&d.id),
                    ac(d.base),
                    ac(d.cand),
                    delta(d.delta, ""),
                    label(d)
                );
            }
        }
    }
    let unresolved: Vec<&str> =
        c.cases.iter().filter(|d| d.class == Class::Unresolved).map(|d| d.id.as_str()).collect();
    if !unresolved.is_empty() {
        let _ = writeln!(o, "unresolved (no accepted trial in either run): {}", line(&unresolved.join(", ")));
    }
    let nc: Vec<&str> = c.cases.iter().filter(|d| d.class == Class::NotComparable).map(|d| d.id.as_str()).collect();
    if !nc.is_empty() {
        let _ = writeln!(o, "not comparable (absent or no counted trial in one run): {}", line(&nc.join(", ")));
    }
    let _ = writeln!(
        o,
        "critical failures {} → {}{}",
        c.base.critical_failures,
        c.cand.critical_failures,
        if c.new_critical.is_empty() {
            String::new()
        } else {
            format!("; NEW in: {}", line(&c.new_critical.join(", ")))
        }
    );
    let _ = writeln!(
        o,
        "grader errors {} → {}, infra errors {} → {}",
        c.base.grader_errors, c.cand.grader_errors, c.base.infra_errors, c.cand.infra_errors
    );
    let _ = writeln!(
        o,
        "total cost ${:.4} → ${:.4}; latency p50 {} → {}, p95 {} → {} (n {} → {})",
        c.base.total_cost_usd,
        c.cand.total_cost_usd,
        ms(c.base.p50_ms),
        ms(c.cand.p50_ms),
        ms(c.base.p95_ms),
        ms(c.cand.p95_ms),
        c.base.latency_n,
        c.cand.latency_n
    );
    o
}

/// Markdown for a pull-request comment.
/// Text of either run (ids, case ids, check names) as inert Markdown in a `<code>` element.
fn code(s: &str) -> String {
    format!("<code>{}</code>", md(s))
}

pub fn markdown(c: &Comparison) -> String {
    let mut o = String::new();
    let reg = c.counts["regressed"];
    let _ = writeln!(
        o,
        "### evalua: {} — base {} vs candidate {}\n",
        code(&c.suite),
        code(&c.base.run_id),
        code(&c.cand.run_id)
    );
    for w in &c.warnings {
        let _ = writeln!(o, "> ⚠️ {}", md(w));
    }
    if !c.warnings.is_empty() {
        let _ = writeln!(o);
    }
    if let Some(m) = &c.measurement {
        let _ = writeln!(o, "{}\n", measurement_lines(m, true).join(" "));
        if !m.checks.is_empty() {
            let _ = writeln!(
                o,
                "| check | trials changed | pass → fail | fail → pass | other | cases |\n|---|---|---|---|---|---|"
            );
            for ch in &m.checks {
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {} | {} | {} |",
                    code(&ch.check),
                    ch.trials,
                    ch.pass_to_fail,
                    ch.fail_to_pass,
                    ch.other,
                    ch.cases.iter().map(|c| code(c)).collect::<Vec<_>>().join(", ")
                );
            }
            let _ = writeln!(o);
        }
    }
    let _ =
        writeln!(o, "| figure | base | candidate | Δ | 95% interval of Δ | paired cases |\n|---|---|---|---|---|---|");
    for f in c.figures.iter().filter(|f| shown(c, f)) {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} |",
            f.name,
            rate(f.base, &f.name),
            rate(f.cand, &f.name),
            delta(f.delta, &f.name),
            interval(f),
            f.cases
        );
    }
    let _ = writeln!(o, "\n\\* the interval excludes 0 (paired bootstrap over cases, seeded).\n");
    let _ = writeln!(
        o,
        "**Cases** (per-case accepted rate): {} improved · **{} regressed** · {} unchanged · {} unresolved · {} not comparable\n",
        c.counts["improved"], reg, c.counts["unchanged"], c.counts["unresolved"], c.counts["not_comparable"]
    );
    if !c.new_critical.is_empty() {
        let _ = writeln!(
            o,
            "**New critical failures** in: {}\n",
            c.new_critical.iter().map(|s| code(s)).collect::<Vec<_>>().join(", ")
        );
    }
    for class in [Class::Regressed, Class::Improved] {
        let rows: Vec<&CaseDiff> = c.cases.iter().filter(|d| d.class == class).collect();
        if rows.is_empty() {
            continue;
        }
        let open = if class == Class::Regressed { " open" } else { "" };
        let _ = writeln!(o, "<details{open}><summary>{} {}</summary>\n", rows.len(), class.as_str());
        let _ = writeln!(o, "| case | base | candidate | Δ accepted | change |\n|---|---|---|---|---|");
        for d in rows {
            let change = if d.change == Some(Change::Measurement) { "measurement" } else { "" };
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {change} |",
                code(&d.id),
                ac(d.base),
                ac(d.cand),
                delta(d.delta, "")
            );
        }
        let _ = writeln!(o, "\n</details>\n");
    }
    let _ = writeln!(o, "{}", counts_line(c));
    o
}

/// The counts kept apart, cost and latency of both runs, on one line (the
/// markdown report and the viewer's compare page).
/// How many cases improved, regressed, … (by the per-case accepted rate).
pub fn classes_line(c: &Comparison) -> String {
    format!(
        "{} improved, {} regressed, {} unchanged, {} unresolved, {} not comparable (per-case accepted rate)",
        c.counts["improved"],
        c.counts["regressed"],
        c.counts["unchanged"],
        c.counts["unresolved"],
        c.counts["not_comparable"]
    )
}

pub fn counts_line(c: &Comparison) -> String {
    format!(
        "Critical failures {} → {} · grader errors {} → {} · infra errors {} → {} · total cost ${:.4} → ${:.4} · p50 {} → {} · p95 {} → {}",
        c.base.critical_failures,
        c.cand.critical_failures,
        c.base.grader_errors,
        c.cand.grader_errors,
        c.base.infra_errors,
        c.cand.infra_errors,
        c.base.total_cost_usd,
        c.cand.total_cost_usd,
        ms(c.base.p50_ms),
        ms(c.cand.p50_ms),
        ms(c.base.p95_ms),
        ms(c.cand.p95_ms)
    )
}

/// `run --baseline`, before the run: the baseline must be a run dir of the same suite file.
pub fn preflight(baseline: &Path, suite: &Path, allow: bool) -> Result<RunData> {
    let b = rundata::load(baseline)?;
    let sha = std::fs::read(suite).map(|bytes| sha256_hex(&bytes)).ok();
    if !allow && sha.as_deref() != b.suite_sha256() {
        return Err(Error::Input(format!(
            "--baseline {}: it ran a different revision of {} (suite sha256 {} vs {}); pass --allow-revision-change to compare anyway",
            baseline.display(),
            suite.display(),
            short(b.suite_sha256()),
            short(sha.as_deref())
        )));
    }
    Ok(b)
}

/// `run --baseline`, after the run: compare, write compare.json and compare.md into the run dir.
pub fn after_run(base: &RunData, cand: &RunData, allow: bool) -> Result<String> {
    let cmp = compare(base, cand, allow)?;
    crate::record::rundir::write_json(&cand.dir.join(files::COMPARE_JSON), &cmp)?;
    std::fs::write(cand.dir.join(files::COMPARE_MD), markdown(&cmp))
        .map_err(|e| Error::Environment(format!("{}: {e}", cand.dir.join(files::COMPARE_MD).display())))?;
    Ok(console(&cmp))
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
