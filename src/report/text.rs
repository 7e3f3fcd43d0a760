//! What every report shares: suite figures as rows with intervals and
//! denominators, gate lines, values and evidence as short text.

use crate::record::{FirstFailure, TrialRecord};
use crate::spec::gate::{self, Metric, On, Verdict};
use crate::stats::{RunData, Summary};

/// One suite figure as the reports show it: value, 95% interval, denominators.
pub struct FigureRow {
    pub name: String,
    pub value: Option<f64>,
    pub interval: Option<(f64, f64)>,
    pub cases: usize,
    pub trials: u32,
    /// A rate in 0..1 (shown as %), else a dollar amount.
    pub rate: bool,
}

impl FigureRow {
    pub fn value_text(&self) -> String {
        fmt_value(self.value, self.rate)
    }
    pub fn interval_text(&self) -> String {
        match self.interval {
            Some((lo, hi)) => format!("[{}, {}]", fmt_value(Some(lo), self.rate), fmt_value(Some(hi), self.rate)),
            None => "–".to_string(),
        }
    }
}

pub fn fmt_value(v: Option<f64>, rate: bool) -> String {
    match v {
        Some(v) if v.is_finite() && rate => format!("{:.1}%", v * 100.0),
        Some(v) if v.is_finite() => format!("${v:.4}"),
        Some(_) => "∞".to_string(),
        None => "–".to_string(),
    }
}

/// The suite figures (capability view) that carry an interval, in display order.
pub fn figure_rows(summary: &Summary) -> Vec<FigureRow> {
    let cap = &summary.figures.capability;
    let row = |m: Metric, value: Option<f64>, rate: bool| FigureRow {
        interval: cap.interval(m).map(|i| (i.lower, i.upper)),
        name: m.to_string(),
        value,
        cases: cap.cases,
        trials: cap.trials,
        rate,
    };
    let mut rows = Vec::new();
    let ks: Vec<u32> = cap.pass_hat_k.keys().map(|k| k.0).collect();
    for &k in &ks {
        if cap.interval(Metric::PassHat(k)).is_some() {
            rows.push(row(Metric::PassHat(k), cap.pass_hat(k), true));
        }
    }
    for &k in &ks {
        if cap.interval(Metric::PassAt(k)).is_some() {
            rows.push(row(Metric::PassAt(k), cap.pass_at(k), true));
        }
    }
    rows.push(row(Metric::Accepted, cap.accepted_rate, true));
    let f = &summary.figures;
    let cost = f.cost_per_accepted_usd.or((f.total_cost_usd > 0.0).then_some(f64::INFINITY));
    rows.push(row(Metric::CostPerAccepted, cost, false));
    rows
}

/// How a gate verdict reads in a report.
pub fn gate_line(g: &Verdict) -> String {
    let on = match g.on {
        On::Point => "",
        On::Lower => " (95% lower bound)",
        On::Upper => " (95% upper bound)",
    };
    let value = match g.value {
        Some(v) if v.is_finite() => format!("{v:.4}"),
        Some(_) => "∞".to_string(),
        None => "undefined".to_string(),
    };
    let cmp = if gate::from_manifest(&g.name, 0.0, On::Point).map(|x| x.metric.is_minimum()).unwrap_or(true) {
        "≥"
    } else {
        "≤"
    };
    format!(
        "{} {}{on}: {value}, required {cmp} {}{}",
        if g.passed { "PASS" } else { "FAIL" },
        g.name,
        g.threshold,
        g.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default()
    )
}

/// The records of the non-accepted trials of each case (manifest order), in trial order.
pub fn by_case(run: &RunData) -> Vec<Vec<&TrialRecord>> {
    let mut out: Vec<Vec<&TrialRecord>> = vec![Vec::new(); run.infos.len()];
    for r in &run.records {
        if let Some(i) = run.case_index(&r.case) {
            out[i].push(r);
        }
    }
    for v in &mut out {
        v.sort_by_key(|r| r.trial);
    }
    out
}

/// The largest k the suite's figures cover.
pub fn k_max(summary: &Summary) -> u32 {
    summary.figures.capability.k_max().unwrap_or(1)
}

/// Evidence as one short line.
pub fn evidence_text(e: &serde_json::Value, max: usize) -> String {
    let s = match e {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    truncate(&s, max)
}

pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let t: String = s.chars().take(max).collect();
        format!("{t}… ({} chars)", s.chars().count())
    }
}

/// A trial's first failing span in one line: `issue_refund (call 3, failed at 120 ms): database is locked`.
pub fn first_failure_text(f: &FirstFailure) -> String {
    let what = match (f.kind.as_str(), f.call) {
        ("tool", Some(n)) => format!("{} (call {n}, {} at {:.0} ms)", f.name, f.status, f.at_ms),
        (kind, _) => format!("{kind} {} ({} at {:.0} ms)", f.name, f.status, f.at_ms),
    };
    match &f.error {
        Some(e) => format!("{what}: {}", truncate(e, 200)),
        None => what,
    }
}
