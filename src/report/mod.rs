//! What people read: the console summary printed after a run (per case,
//! suite totals with their denominators, errors apart, and the gates), the
//! report files (report.md, report.html, junit.xml), `compare`, and the
//! sinks that follow a run as it goes (trials.jsonl, progress, tallies).

pub mod compare;
pub mod html;
pub mod junit;
pub mod md;
pub mod sinks;

use std::fmt::Write;
use std::path::Path;

use comfy_table::{Table, presets::UTF8_BORDERS_ONLY};

use crate::error::{Error, Result};
use crate::record::TrialRecord;
use crate::spec::gate::{self, Metric, On, Verdict};
use crate::stats::{RunData, Summary};

fn pct(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{:.1}%", v * 100.0),
        _ => "–".to_string(),
    }
}

fn num(v: Option<f64>, unit: &str) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.1}{unit}"),
        _ => "–".to_string(),
    }
}

/// Render the summary for a terminal.
pub fn console(suite: &str, summary: &Summary, gates: &[Verdict], dir: &str) -> String {
    let f = &summary.figures;
    let cap = &f.capability;
    let kmax = cap.k_max().unwrap_or(1);
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY);
    let hk = format!("pass^{kmax}");
    t.set_header(vec!["case", "n", "accepted", "pass^1", hk.as_str(), "critical", "grader err", "infra err"]);
    for c in &summary.cases {
        let hat = |k: u32| c.pass_hat(k);
        t.add_row(vec![
            c.id.clone(),
            c.n.to_string(),
            c.accepted.to_string(),
            pct(hat(1)),
            pct(hat(kmax)),
            c.outcomes.get("critical").copied().unwrap_or(0).to_string(),
            c.outcomes.get("grader_error").copied().unwrap_or(0).to_string(),
            c.outcomes.get("infra_error").copied().unwrap_or(0).to_string(),
        ]);
    }
    let mut out = String::new();
    let _ = writeln!(out, "{t}");
    let iv = |m: Metric| {
        cap.interval(m).map(|i| format!(" [{}, {}]", pct(Some(i.lower)), pct(Some(i.upper)))).unwrap_or_default()
    };
    let _ = writeln!(
        out,
        "{suite}: {} cases, {} trials (capability view; 95% intervals resample cases)",
        cap.cases, cap.trials
    );
    for k in 1..=kmax {
        let _ = writeln!(
            out,
            "  pass^{k} {}{}   pass@{k} {}{}",
            pct(cap.pass_hat(k)),
            iv(Metric::PassHat(k)),
            pct(cap.pass_at(k)),
            iv(Metric::PassAt(k)),
        );
    }
    let _ = writeln!(out, "  accepted {}{}", pct(cap.accepted_rate), iv(Metric::Accepted));
    let op = &f.operational;
    let _ = writeln!(
        out,
        "  operational view (infra errors count as failures): accepted {} of {} trials",
        pct(op.accepted_rate),
        op.trials
    );
    let cost = match f.cost_per_accepted_usd {
        Some(c) => format!(
            "${c:.4}{}",
            cap.interval(Metric::CostPerAccepted)
                .map(|i| format!(" [${:.4}, ${:.4}]", i.lower, i.upper))
                .unwrap_or_default()
        ),
        None if f.total_cost_usd > 0.0 => "∞ (nothing accepted)".to_string(),
        None => "–".to_string(),
    };
    let _ = writeln!(
        out,
        "  latency p50 {} p95 {} (n={})   cost/accepted {}   mean tool calls {}",
        num(f.p50_ms, " ms"),
        num(f.p95_ms, " ms"),
        f.latency_n,
        cost,
        num(f.mean_tool_calls, "")
    );
    let _ = writeln!(
        out,
        "  counted apart: critical failures {}, grader errors {}, infra errors {}, skipped checks {}",
        f.critical_failures, f.grader_errors, f.infra_errors, f.skipped_checks
    );
    if !gates.is_empty() {
        let _ = writeln!(out, "gates:");
        for g in gates {
            let on = match g.on {
                On::Point => "",
                On::Lower => " (lower bound)",
                On::Upper => " (upper bound)",
            };
            let value = match g.value {
                Some(v) if v.is_finite() => format!("{v:.4}"),
                Some(_) => "∞".to_string(),
                None => "undefined".to_string(),
            };
            let _ = writeln!(
                out,
                "  {} {}{on}: {value} vs {}{}",
                if g.passed { "PASS" } else { "FAIL" },
                g.name,
                g.threshold,
                g.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default()
            );
        }
    }
    if f.skipped_checks > 0 {
        let names: Vec<&str> =
            summary.checks.iter().filter(|c| c.tally.skipped > 0).map(|c| c.tally.name.as_str()).collect();
        let _ = writeln!(out, "skipped (not passed): {} check result(s): {}", f.skipped_checks, names.join(", "));
    }
    let _ = writeln!(out, "run dir: {dir}");
    out
}

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

/// Write report.md, junit.xml and report.html into the run dir.
pub fn write_all(run: &RunData) -> Result<()> {
    let w = |name: &str, text: String| {
        let p: &Path = &run.dir.join(name);
        std::fs::write(p, text).map_err(|e| Error::Environment(format!("{}: cannot write: {e}", p.display())))
    };
    w("report.md", md::render(run))?;
    w("junit.xml", junit::render(run)?)?;
    w("report.html", html::render(run))?;
    Ok(())
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
