//! Agreement between human annotators (SPEC §15): Cohen's κ for each pair
//! of annotators, Krippendorff's α (nominal) over all of them, each with a
//! 95% percentile bootstrap interval that resamples *items* (every
//! criterion of a drawn item comes along); the majority verdict of a unit;
//! and the deterministic, stratified held-out split.
//!
//! A unit is one (item, criterion). Verdicts are pass / fail; `unsure` is
//! left out of every figure and counted. κ is undefined when the pair
//! compared nothing or when chance agreement is 1 (both gave one verdict to
//! everything); α when fewer than two pairable values exist or only one
//! verdict occurs. Undefined is said, with why, never a number.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::estimators::quantile;
use crate::record::labels::Label;

/// Bootstrap resamples per interval.
pub const RESAMPLES: usize = 2000;
/// The bootstrap's seed: the same store gives the same intervals.
const SEED: u64 = 0x1abe_15ee_d000_0001;

/// A small, stable PRNG (SplitMix64): the split and the intervals must not
/// change with a dependency's version.
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    pub fn new(seed: u64) -> Self {
        SplitMix(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
}

/// One (item, criterion) and the verdicts given on it.
#[derive(Debug, Clone)]
pub struct Unit {
    pub item: usize,
    pub criterion: usize,
    /// (annotator, passed) — pass/fail verdicts only.
    pub votes: Vec<(usize, bool)>,
    /// Annotators who said unsure.
    pub unsure: Vec<usize>,
}

/// The majority of a unit's pass/fail verdicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Majority {
    Pass,
    Fail,
    /// As many passes as fails.
    Tie,
    /// Only `unsure` verdicts.
    None,
}

impl Unit {
    pub fn majority(&self) -> Majority {
        let pass = self.votes.iter().filter(|(_, p)| *p).count();
        let fail = self.votes.len() - pass;
        match (pass, fail) {
            (0, 0) => Majority::None,
            (p, f) if p > f => Majority::Pass,
            (p, f) if f > p => Majority::Fail,
            _ => Majority::Tie,
        }
    }
    fn vote(&self, annotator: usize) -> Option<bool> {
        self.votes.iter().find(|(a, _)| *a == annotator).map(|(_, p)| *p)
    }
}

/// Cohen's κ from a pair's 2×2 counts (a pass & b pass, a pass & b fail, …), or why undefined.
pub fn kappa(pp: f64, pf: f64, fp: f64, ff: f64) -> Result<f64, String> {
    let n = pp + pf + fp + ff;
    if n <= 0.0 {
        return Err("undefined: no item both labelled pass or fail".into());
    }
    let po = (pp + ff) / n;
    let a_pass = (pp + pf) / n;
    let b_pass = (pp + fp) / n;
    let pe = a_pass * b_pass + (1.0 - a_pass) * (1.0 - b_pass);
    if 1.0 - pe < 1e-12 {
        let v = if a_pass > 0.5 { "pass" } else { "fail" };
        return Err(format!(
            "undefined: both gave every item {v}, so the agreement expected by chance is 1 (observed {:.0}%)",
            po * 100.0
        ));
    }
    Ok((po - pe) / (1.0 - pe))
}

/// Krippendorff's α (nominal, two values) from the coincidence counts
/// o_pp, o_ff and o_pf (= o_fp), or why undefined.
pub fn alpha(o_pp: f64, o_ff: f64, o_pf: f64) -> Result<f64, String> {
    let n_p = o_pp + o_pf;
    let n_f = o_ff + o_pf;
    let n = n_p + n_f;
    if n < 2.0 - 1e-9 {
        return Err("undefined: no unit has two pass/fail verdicts".into());
    }
    if n_p < 1e-12 || n_f < 1e-12 {
        let v = if n_f < 1e-12 { "pass" } else { "fail" };
        return Err(format!("undefined: every pairable verdict is {v}, so no disagreement is possible by chance"));
    }
    // α = 1 − D_o / D_e = 1 − (n − 1) · (o_pf + o_fp) / (n_p n_f + n_f n_p)
    Ok(1.0 - (n - 1.0) * o_pf / (n_p * n_f))
}

/// A figure with its 95% bootstrap interval, or why it is undefined.
#[derive(Debug, Clone, Serialize)]
pub struct Estimate {
    pub value: Option<f64>,
    /// Why the value is undefined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// [low, high], percentile bootstrap over items; null when fewer than two
    /// items or too many resamples are undefined.
    pub interval: Option<[f64; 2]>,
}

/// Two annotators (indices) and, per item they both judged, their 2×2 counts.
type PairRows = (usize, usize, Vec<(usize, [f64; 4])>);

/// The coincidence counts (o_pp, o_ff, o_pf) over `units`, weighted.
fn coincidences(units: &[&Unit], local: &[usize], w: Option<&[f64]>) -> [f64; 3] {
    let mut o = [0.0; 3];
    for (u, &li) in units.iter().zip(local) {
        let m = u.votes.len() as f64;
        if m < 2.0 {
            continue;
        }
        let wt = w.map_or(1.0, |w| w[li]);
        let p = u.votes.iter().filter(|(_, x)| *x).count() as f64;
        let f = m - p;
        o[0] += wt * p * (p - 1.0) / (m - 1.0);
        o[1] += wt * f * (f - 1.0) / (m - 1.0);
        o[2] += wt * p * f / (m - 1.0);
    }
    o
}

#[derive(Debug, Clone, Serialize)]
pub struct PairKappa {
    pub a: String,
    pub b: String,
    /// Units both gave a pass/fail verdict.
    pub compared: usize,
    pub kappa: Estimate,
}

#[derive(Debug, Clone, Serialize)]
pub struct Disagreement {
    pub item: String,
    pub criterion: Option<String>,
    /// annotator → verdict ("pass", "fail", "unsure").
    pub verdicts: Vec<(String, &'static str)>,
}

/// Agreement over a set of units: one criterion, or every criterion.
#[derive(Debug, Clone, Serialize)]
pub struct Agreement {
    /// The units' items.
    pub items: usize,
    pub units: usize,
    /// Units with pass/fail verdicts from at least two annotators (what α uses).
    pub pairable: usize,
    pub pairs: Vec<PairKappa>,
    pub alpha: Estimate,
    /// `unsure` verdicts, left out of κ and α.
    pub unsure: usize,
    pub disagreements: Vec<Disagreement>,
}

/// Everything `units` (of `items`, `annotators`, `criteria`) says about agreement.
pub fn agreement(units: &[&Unit], items: &[String], annotators: &[String], criteria: &[Option<String>]) -> Agreement {
    // Items of these units, numbered locally for the bootstrap.
    let mut local_of: HashMap<usize, usize> = HashMap::new();
    let local: Vec<usize> = units
        .iter()
        .map(|u| {
            let n = local_of.len();
            *local_of.entry(u.item).or_insert(n)
        })
        .collect();
    let n_items = local_of.len();
    // Each pair that labelled a common unit (even if only `unsure`): its 2×2
    // counts per item (only items both gave a verdict on), so a resample is a
    // weighted sum over items, not a pass over every unit. Built from the
    // units' own annotators: linear in the labels, whatever the number of
    // annotators (a pass per pair of annotators over every unit was not).
    let mut met: BTreeMap<(usize, usize), BTreeMap<usize, [f64; 4]>> = BTreeMap::new();
    for (u, &li) in units.iter().zip(&local) {
        let mut who: Vec<usize> = u.votes.iter().map(|(a, _)| *a).chain(u.unsure.iter().copied()).collect();
        who.sort_unstable();
        who.dedup();
        for (i, &a) in who.iter().enumerate() {
            for &b in &who[i + 1..] {
                let rows = met.entry((a, b)).or_default();
                let (Some(x), Some(y)) = (u.vote(a), u.vote(b)) else { continue };
                rows.entry(li).or_insert([0.0; 4])[match (x, y) {
                    (true, true) => 0,
                    (true, false) => 1,
                    (false, true) => 2,
                    (false, false) => 3,
                }] += 1.0;
            }
        }
    }
    let pair_data: Vec<PairRows> = met.into_iter().map(|((a, b), rows)| (a, b, rows.into_iter().collect())).collect();
    // Each item's coincidence counts (o_pp, o_ff, o_pf) for α.
    let mut coinc: Vec<[f64; 3]> = vec![[0.0; 3]; n_items];
    for (u, &li) in units.iter().zip(&local) {
        let o = coincidences(&[*u], &[0], None);
        for k in 0..3 {
            coinc[li][k] += o[k];
        }
    }
    let pair_kappa = |rows: &[(usize, [f64; 4])], w: Option<&[f64]>| {
        let mut c = [0.0; 4];
        for (i, x) in rows {
            let wi = w.map_or(1.0, |w| w[*i]);
            if wi != 0.0 {
                c[0] += wi * x[0];
                c[1] += wi * x[1];
                c[2] += wi * x[2];
                c[3] += wi * x[3];
            }
        }
        kappa(c[0], c[1], c[2], c[3])
    };
    let item_alpha = |w: Option<&[f64]>| {
        let mut o = [0.0; 3];
        for (i, x) in coinc.iter().enumerate() {
            let wi = w.map_or(1.0, |w| w[i]);
            if wi != 0.0 {
                o[0] += wi * x[0];
                o[1] += wi * x[1];
                o[2] += wi * x[2];
            }
        }
        alpha(o[0], o[1], o[2])
    };
    let points: Vec<Result<f64, String>> = pair_data.iter().map(|(_, _, rows)| pair_kappa(rows, None)).collect();
    let alpha_point = item_alpha(None);
    // One bootstrap for every figure of these units: the same draws of items.
    let mut kappa_vals: Vec<Vec<f64>> = vec![Vec::new(); pair_data.len()];
    let mut alpha_vals = Vec::new();
    if n_items >= 2 {
        let mut rng = SplitMix::new(SEED ^ n_items as u64);
        let mut w = vec![0.0; n_items];
        for _ in 0..RESAMPLES {
            w.fill(0.0);
            for _ in 0..n_items {
                w[rng.below(n_items)] += 1.0;
            }
            for (p, (_, _, rows)) in pair_data.iter().enumerate() {
                if points[p].is_ok()
                    && let Ok(k) = pair_kappa(rows, Some(&w))
                {
                    kappa_vals[p].push(k);
                }
            }
            if alpha_point.is_ok()
                && let Ok(a) = item_alpha(Some(&w))
            {
                alpha_vals.push(a);
            }
        }
    }
    let interval = |mut vals: Vec<f64>| -> Option<[f64; 2]> {
        if vals.len() * 2 < RESAMPLES {
            return None;
        }
        vals.sort_by(f64::total_cmp);
        Some([quantile(&vals, 0.025)?, quantile(&vals, 0.975)?])
    };
    let finish = |point: Result<f64, String>, vals: Vec<f64>| match point {
        Err(note) => Estimate { value: None, note: Some(note), interval: None },
        Ok(v) => Estimate { value: Some(v), note: None, interval: interval(vals) },
    };
    let mut pairs = Vec::new();
    for (((a, b, rows), point), vals) in pair_data.iter().zip(points).zip(kappa_vals) {
        let compared = rows.iter().map(|(_, c)| c.iter().sum::<f64>()).sum::<f64>() as usize;
        pairs.push(PairKappa {
            a: annotators[*a].clone(),
            b: annotators[*b].clone(),
            compared,
            kappa: finish(point, vals),
        });
    }
    let alpha = finish(alpha_point, alpha_vals);
    let mut disagreements = Vec::new();
    for u in units {
        if u.votes.iter().any(|(_, p)| *p) && u.votes.iter().any(|(_, p)| !*p) {
            let mut verdicts: Vec<(String, &'static str)> = u
                .votes
                .iter()
                .map(|(a, p)| (annotators[*a].clone(), if *p { "pass" } else { "fail" }))
                .chain(u.unsure.iter().map(|a| (annotators[*a].clone(), "unsure")))
                .collect();
            verdicts.sort();
            disagreements.push(Disagreement {
                item: items[u.item].clone(),
                criterion: criteria[u.criterion].clone(),
                verdicts,
            });
        }
    }
    Agreement {
        items: n_items,
        units: units.len(),
        pairable: units.iter().filter(|u| u.votes.len() >= 2).count(),
        pairs,
        alpha,
        unsure: units.iter().map(|u| u.unsure.len()).sum(),
        disagreements,
    }
}

/// A human label and a judge's verdict on one criterion of one item.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    /// The item's number (what the bootstrap resamples).
    pub item: usize,
    pub human: bool,
    pub judge: bool,
}

/// Cohen's κ between humans and a judge over `pairs`, each weighted by its item's weight.
pub fn judge_kappa(pairs: &[Judged], w: Option<&[f64]>) -> Result<f64, String> {
    let mut c = [0.0; 4];
    for p in pairs {
        let wt = w.map_or(1.0, |w| w[p.item]);
        c[match (p.human, p.judge) {
            (true, true) => 0,
            (true, false) => 1,
            (false, true) => 2,
            (false, false) => 3,
        }] += wt;
    }
    kappa(c[0], c[1], c[2], c[3])
}

/// The false-pass rate: judge passes among human fails (None without a human fail).
pub fn false_pass(pairs: &[Judged], w: Option<&[f64]>) -> Option<f64> {
    let (mut fails, mut passed) = (0.0, 0.0);
    for p in pairs.iter().filter(|p| !p.human) {
        let wt = w.map_or(1.0, |w| w[p.item]);
        fails += wt;
        if p.judge {
            passed += wt;
        }
    }
    (fails > 0.0).then(|| passed / fails)
}

/// A 95% percentile interval of `stat(now) − stat(before)`, resampling items:
/// together when both were measured on the same items (`paired`, one item
/// numbering), else each side on its own.
pub fn change_interval(
    now: (&[Judged], usize),
    before: (&[Judged], usize),
    paired: bool,
    stat: impl Fn(&[Judged], Option<&[f64]>) -> Option<f64>,
) -> Option<[f64; 2]> {
    let (n_now, n_before) = (now.1, before.1);
    if n_now < 2 || n_before < 2 || (paired && n_now != n_before) {
        return None;
    }
    let mut rng = SplitMix::new(SEED ^ 0xc4a6);
    let draw = |rng: &mut SplitMix, n: usize| {
        let mut w = vec![0.0; n];
        for _ in 0..n {
            w[rng.below(n)] += 1.0;
        }
        w
    };
    let mut vals = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        let wn = draw(&mut rng, n_now);
        let wb = if paired { wn.clone() } else { draw(&mut rng, n_before) };
        if let (Some(a), Some(b)) = (stat(now.0, Some(&wn)), stat(before.0, Some(&wb))) {
            vals.push(a - b);
        }
    }
    if vals.len() * 2 < RESAMPLES {
        return None;
    }
    vals.sort_by(f64::total_cmp);
    Some([quantile(&vals, 0.025)?, quantile(&vals, 0.975)?])
}

/// The labels in force of a store, as units.
#[derive(Debug, Default)]
pub struct Ratings {
    /// Item ids, in the order they first appear.
    pub items: Vec<String>,
    /// Annotators, sorted.
    pub annotators: Vec<String>,
    /// Criteria in the order they first appear (None: the item as a whole).
    pub criteria: Vec<Option<String>>,
    pub units: Vec<Unit>,
}

impl Ratings {
    /// From the labels in force (one per item, annotator and criterion).
    pub fn of<D>(labels: &[&Label<D>]) -> Ratings {
        let mut annotators: Vec<String> = labels.iter().map(|l| l.annotator.clone()).collect();
        annotators.sort();
        annotators.dedup();
        let mut r = Ratings { annotators, ..Default::default() };
        let mut item_no: HashMap<&str, usize> = HashMap::new();
        let mut crit_no: HashMap<Option<&str>, usize> = HashMap::new();
        let mut unit_no: HashMap<(usize, usize), usize> = HashMap::new();
        for l in labels {
            let i = *item_no.entry(&l.item).or_insert_with(|| {
                r.items.push(l.item.clone());
                r.items.len() - 1
            });
            let c = *crit_no.entry(l.criterion.as_deref()).or_insert_with(|| {
                r.criteria.push(l.criterion.clone());
                r.criteria.len() - 1
            });
            let a = r.annotators.binary_search(&l.annotator).unwrap_or(0);
            let u = *unit_no.entry((i, c)).or_insert_with(|| {
                r.units.push(Unit { item: i, criterion: c, votes: Vec::new(), unsure: Vec::new() });
                r.units.len() - 1
            });
            match l.verdict.passed() {
                Some(p) => r.units[u].votes.push((a, p)),
                None => r.units[u].unsure.push(a),
            }
        }
        r
    }

    /// The units of criterion number `c`.
    pub fn of_criterion(&self, c: usize) -> Vec<&Unit> {
        self.units.iter().filter(|u| u.criterion == c).collect()
    }

    /// The units of each criterion, in criterion order (one pass over the units).
    pub fn by_criterion(&self) -> Vec<Vec<&Unit>> {
        let mut out: Vec<Vec<&Unit>> = vec![Vec::new(); self.criteria.len()];
        for u in &self.units {
            out[u.criterion].push(u);
        }
        out
    }

    pub fn agreement(&self, units: &[&Unit]) -> Agreement {
        agreement(units, &self.items, &self.annotators, &self.criteria)
    }

    /// Each item with its stratum (see [`stratum`]).
    pub fn strata(&self) -> Vec<(String, Majority)> {
        let mut per: Vec<Vec<Majority>> = vec![Vec::new(); self.items.len()];
        for u in &self.units {
            per[u.item].push(u.majority());
        }
        self.items.iter().cloned().zip(per.into_iter().map(stratum)).collect()
    }
}

/// The item-level stratum of a split: fail if a criterion's majority is fail,
/// pass if every criterion with a majority passes, else undecided.
pub fn stratum(majorities: impl IntoIterator<Item = Majority>) -> Majority {
    let mut any_pass = false;
    for m in majorities {
        match m {
            Majority::Fail => return Majority::Fail,
            Majority::Pass => any_pass = true,
            _ => {}
        }
    }
    if any_pass { Majority::Pass } else { Majority::Tie }
}

/// The held-out items: `fraction` of the items, drawn within each stratum
/// (its share rounded by largest remainder so the total is round(F·N)), the
/// same for the same items, strata, fraction and seed. Sorted.
pub fn held_out(items: &[(String, Majority)], fraction: f64, seed: u64) -> Vec<String> {
    let mut strata: Vec<(Majority, Vec<&str>)> = Vec::new();
    for (id, m) in items {
        match strata.iter_mut().find(|(s, _)| s == m) {
            Some((_, v)) => v.push(id),
            None => strata.push((*m, vec![id])),
        }
    }
    strata.sort_by_key(|(m, _)| *m as u8);
    for (_, v) in &mut strata {
        v.sort_unstable();
        v.dedup();
    }
    let total: usize = strata.iter().map(|(_, v)| v.len()).sum();
    let want = (fraction * total as f64).round() as usize;
    // Largest remainder: floors first, then the largest fractional parts (ties: stratum order).
    let exact: Vec<f64> = strata.iter().map(|(_, v)| fraction * v.len() as f64).collect();
    let mut take: Vec<usize> = exact.iter().map(|x| x.floor() as usize).collect();
    let mut order: Vec<usize> = (0..strata.len()).collect();
    order.sort_by(|&i, &j| (exact[j] - exact[j].floor()).total_cmp(&(exact[i] - exact[i].floor())).then(i.cmp(&j)));
    let mut left = want.saturating_sub(take.iter().sum());
    for i in order {
        if left == 0 {
            break;
        }
        if take[i] < strata[i].1.len() {
            take[i] += 1;
            left -= 1;
        }
    }
    let mut out = Vec::new();
    for ((m, v), n) in strata.iter().zip(take) {
        let mut rng = SplitMix::new(seed ^ (*m as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407));
        let mut v = v.clone();
        // Fisher–Yates, then the first n.
        for i in (1..v.len()).rev() {
            v.swap(i, rng.below(i + 1));
        }
        out.extend(v.into_iter().take(n).map(String::from));
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// Two annotators over 10 items: 4 both pass, 1 pass/fail, 2 fail/pass, 3 both fail.
    fn ten() -> Vec<Unit> {
        let pattern =
            [(true, true); 4].into_iter().chain([(true, false)]).chain([(false, true); 2]).chain([(false, false); 3]);
        pattern
            .enumerate()
            .map(|(i, (a, b))| Unit { item: i, criterion: 0, votes: vec![(0, a), (1, b)], unsure: vec![] })
            .collect()
    }

    #[test]
    fn kappa_and_alpha_match_hand_computed_values() {
        // κ: po = 0.7, pe = 0.5·0.6 + 0.5·0.4 = 0.5 → 0.4.
        assert!(close(kappa(4.0, 1.0, 2.0, 3.0).unwrap(), 0.4));
        // α: o_pp = 8, o_ff = 6, o_pf = 3 → n_p = 11, n_f = 9, n = 20;
        // α = 1 − 19·3/(11·9) = 1 − 57/99 = 0.424242…
        assert!(close(alpha(8.0, 6.0, 3.0).unwrap(), 1.0 - 57.0 / 99.0));
        let units = ten();
        let refs: Vec<&Unit> = units.iter().collect();
        let items: Vec<String> = (0..10).map(|i| format!("i{i}")).collect();
        let a = agreement(&refs, &items, &["ana".into(), "bo".into()], &[Some("c".into())]);
        assert!(close(a.pairs[0].kappa.value.unwrap(), 0.4));
        assert!(close(a.alpha.value.unwrap(), 1.0 - 57.0 / 99.0));
        assert_eq!(a.disagreements.len(), 3);
        let [lo, hi] = a.pairs[0].kappa.interval.unwrap();
        assert!(lo < 0.4 && 0.4 < hi && lo >= -1.0 && hi <= 1.0, "{lo} {hi}");
        // Three annotators, one missing value: a unit of 3 (p, p, f) and one of 2 (f, f).
        // o_pp = 2·1/2 = 1, o_pf = 2·1/2 = 1, o_ff = 2·1/1 = 2 → n_p = 2, n_f = 3, n = 5;
        // α = 1 − 4·1/(2·3) = 1/3.
        let three = [
            Unit { item: 0, criterion: 0, votes: vec![(0, true), (1, true), (2, false)], unsure: vec![] },
            Unit { item: 1, criterion: 0, votes: vec![(0, false), (2, false)], unsure: vec![1] },
        ];
        let refs: Vec<&Unit> = three.iter().collect();
        let a = agreement(&refs, &items, &["a".into(), "b".into(), "c".into()], &[None]);
        assert!(close(a.alpha.value.unwrap(), 1.0 / 3.0));
        assert_eq!(a.unsure, 1);
        assert_eq!(a.pairs.len(), 3);
    }

    #[test]
    fn undefined_kappa_and_alpha_say_why() {
        // Both pass everything: chance agreement 1.
        let e = kappa(5.0, 0.0, 0.0, 0.0).unwrap_err();
        assert!(e.contains("undefined") && e.contains("pass"), "{e}");
        assert!(kappa(0.0, 0.0, 0.0, 0.0).unwrap_err().contains("undefined"));
        assert!(alpha(6.0, 0.0, 0.0).unwrap_err().contains("every pairable verdict is pass"));
        // One annotator all pass, the other mixed: defined, and 0.
        assert!(close(kappa(4.0, 0.0, 1.0, 0.0).unwrap(), 0.0));
    }

    #[test]
    fn a_change_of_kappa_has_an_interval_and_a_big_drop_lies_beyond_it() {
        let j = |item: usize, human: bool, judge: bool| Judged { item, human, judge };
        // Before: the judge agrees on all 20 items (10 pass, 10 fail). Now: it passes 8 of the 10 fails.
        let before: Vec<Judged> = (0..20).map(|i| j(i, i < 10, i < 10)).collect();
        let now: Vec<Judged> = (0..20).map(|i| j(i, i < 10, i < 18)).collect();
        assert!(close(judge_kappa(&before, None).unwrap(), 1.0));
        // po = 12/20, pe = 0.5·0.9 + 0.5·0.1 = 0.5 → κ = 0.2; false pass 8/10.
        assert!(close(judge_kappa(&now, None).unwrap(), 0.2));
        assert!(close(false_pass(&now, None).unwrap(), 0.8));
        let [lo, hi] = change_interval((&now, 20), (&before, 20), true, |p, w| judge_kappa(p, w).ok()).unwrap();
        assert!(lo < -0.8 + 1e-9 && hi < 0.0, "a drop beyond the interval: [{lo}, {hi}]");
        let [lo, hi] = change_interval((&now, 20), (&before, 20), true, false_pass).unwrap();
        assert!(lo > 0.0 && hi <= 1.0, "[{lo}, {hi}]");
        // The same judge again: no change, an interval around 0.
        let [lo, hi] = change_interval((&before, 20), (&before, 20), true, |p, w| judge_kappa(p, w).ok()).unwrap();
        assert!(lo <= 0.0 && hi >= 0.0);
        // Unpaired (other items before): still an interval, wider.
        assert!(change_interval((&now, 20), (&before[..10], 10), false, false_pass).is_none(), "no human fail before");
        assert!(change_interval((&now, 20), (&before, 20), false, |p, w| judge_kappa(p, w).ok()).is_some());
    }

    #[test]
    fn majority_strata_and_a_deterministic_stratified_split() {
        let u = |votes: Vec<(usize, bool)>| Unit { item: 0, criterion: 0, votes, unsure: vec![] };
        assert_eq!(u(vec![(0, true), (1, true), (2, false)]).majority(), Majority::Pass);
        assert_eq!(u(vec![(0, true), (1, false)]).majority(), Majority::Tie);
        assert_eq!(u(vec![]).majority(), Majority::None);
        assert_eq!(stratum([Majority::Pass, Majority::Fail]), Majority::Fail);
        assert_eq!(stratum([Majority::Pass, Majority::Tie]), Majority::Pass);
        assert_eq!(stratum([Majority::None]), Majority::Tie);
        let items: Vec<(String, Majority)> =
            (0..100).map(|i| (format!("item{i:03}"), if i < 70 { Majority::Pass } else { Majority::Fail })).collect();
        let h = held_out(&items, 0.3, 7);
        assert_eq!(h.len(), 30);
        // Stratified: 21 of the 70 passes, 9 of the 30 fails.
        assert_eq!(h.iter().filter(|id| id.as_str() < "item070").count(), 21);
        let mut shuffled = items.clone();
        shuffled.reverse();
        assert_eq!(held_out(&shuffled, 0.3, 7), h, "the order of the store does not matter");
        assert_ne!(held_out(&items, 0.3, 8), h);
        assert!(held_out(&items, 0.0, 7).is_empty());
        assert_eq!(held_out(&items, 1.0, 7).len(), 100);
    }
}
