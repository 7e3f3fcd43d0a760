//! `calibrate --recheck`: a judge's held-out measurement against its
//! baseline (the judge before its change, or its own earlier measurement),
//! the change in kappa and in the false-pass rate with their intervals
//! (`stats::agree`), and whether either got worse beyond its interval.

use std::path::Path;

use super::measure::Measured;
use crate::judge::records::calibration_dir;
use crate::record::calibration::{CalibrationRecord, Pair};
use crate::spec::JudgeSpec;
use crate::stats::agree::{Judged, change_interval, false_pass, judge_kappa};

/// An earlier measurement of a judge of this rubric to compare a recheck with.
struct Baseline {
    what: String,
    pairs: Vec<Pair>,
    /// Measured on held-out items too: compared item by item.
    paired: bool,
}

/// A recheck's outcome.
#[derive(Debug, Clone)]
pub struct Recheck {
    pub kappa: Option<f64>,
    pub false_pass: Option<f64>,
    /// What it was compared with (None: nothing to compare with; this one is the next baseline).
    pub against: Option<String>,
    /// Kappa, then the false-pass rate.
    pub changes: Vec<Change>,
    /// Kappa dropped or the false-pass rate rose beyond its interval.
    pub worse: bool,
}

/// One figure before and after, with the 95% interval of its change.
#[derive(Debug, Clone)]
pub struct Change {
    pub label: &'static str,
    pub before: Option<f64>,
    pub now: Option<f64>,
    pub interval: Option<[f64; 2]>,
    /// A rate (shown in points), not kappa.
    pub pct: bool,
    /// Worse when it goes up (the false-pass rate), else when it goes down.
    pub bad_if_up: bool,
    pub beyond: bool,
}

/// The measurement a recheck is compared with, most telling first: the
/// held-out measurement of another (model, prompt) of this rubric (the judge
/// before its change), else that judge's calibration; else this judge's own
/// earlier held-out measurement, else its calibration.
fn baseline(suite_dir: &Path, name: &str, current: &Path) -> Option<Baseline> {
    let mut found: Vec<(u8, String, Baseline)> = Vec::new();
    let rd = std::fs::read_dir(calibration_dir(suite_dir)).ok()?;
    for e in rd.flatten() {
        let Some(v) = CalibrationRecord::read(&e.path()) else { continue };
        if v.rubric != name {
            continue;
        }
        let same = e.path() == current;
        let who = format!("{} prompt {}", v.judge, v.prompt_sha256.get(..12).unwrap_or(""));
        if let Some(h) = v.held_out.filter(|h| !h.agreement.pairs.is_empty()) {
            let what = format!("the held-out measurement of {who} ({}), item by item", h.at);
            found.push((if same { 2 } else { 0 }, h.at, Baseline { what, pairs: h.agreement.pairs, paired: true }));
        }
        if let Some(c) = v.calibration.filter(|c| !c.agreement.pairs.is_empty()) {
            let what = format!("the calibration of {who} ({}) on the calibration part (other items)", c.created_at);
            found.push((
                if same { 3 } else { 1 },
                c.created_at,
                Baseline { what, pairs: c.agreement.pairs, paired: false },
            ));
        }
    }
    // Most telling first; among equals the latest.
    found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    found.into_iter().next().map(|(_, _, b)| b)
}

/// Number items (shared between the sides when paired) and turn pairs into `Judged`.
fn numbered(now: &[Pair], before: &[Pair], paired: bool) -> ((Vec<Judged>, usize), (Vec<Judged>, usize)) {
    let mut ids: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let side = |pairs: &[Pair], ids: &mut std::collections::HashMap<String, usize>| {
        let v: Vec<Judged> = pairs
            .iter()
            .map(|p| {
                let n = ids.len();
                let item = *ids.entry(p.item.clone()).or_insert(n);
                Judged { item, human: p.human, judge: p.judge }
            })
            .collect();
        v
    };
    let a = side(now, &mut ids);
    let n_a = ids.len();
    if !paired {
        ids.clear();
    }
    let b = side(before, &mut ids);
    let n_b = ids.len();
    if paired { ((a, n_b), (b, n_b)) } else { ((a, n_a), (b, n_b)) }
}

/// Compare a judge's held-out measurement `m` (its record at `current`) with its baseline.
pub fn recheck(spec: &JudgeSpec, current: &Path, m: &Measured, suite_dir: &Path) -> Recheck {
    let now_j = numbered(&m.pairs, &[], false).0.0;
    let k_now = judge_kappa(&now_j, None).ok();
    let fp_now = false_pass(&now_j, None);
    let Some(b) = baseline(suite_dir, spec.name(), current) else {
        return Recheck { kappa: k_now, false_pass: fp_now, against: None, changes: Vec::new(), worse: false };
    };
    let ((now, n_now), (before, n_before)) = numbered(&m.pairs, &b.pairs, b.paired);
    let k_before = judge_kappa(&before, None).ok();
    let fp_before = false_pass(&before, None);
    let kappa_iv = change_interval((&now, n_now), (&before, n_before), b.paired, |p, w| judge_kappa(p, w).ok());
    let fp_iv = change_interval((&now, n_now), (&before, n_before), b.paired, false_pass);
    let changes: Vec<Change> =
        [("kappa", k_before, k_now, kappa_iv, false, false), ("false-pass rate", fp_before, fp_now, fp_iv, true, true)]
            .into_iter()
            .map(|(label, before, now, interval, pct, bad_if_up)| {
                let beyond = interval.is_some_and(|[lo, hi]| if bad_if_up { lo > 0.0 } else { hi < 0.0 });
                Change { label, before, now, interval, pct, bad_if_up, beyond }
            })
            .collect();
    let worse = changes.iter().any(|c| c.beyond);
    Recheck { kappa: k_now, false_pass: fp_now, against: Some(b.what), changes, worse }
}
