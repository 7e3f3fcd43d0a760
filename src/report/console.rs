//! The console summary printed after a run: per case, suite totals with
//! their denominators, errors apart, and the gates.

use std::fmt::Write;

use comfy_table::{Table, presets::UTF8_BORDERS_ONLY};

use crate::spec::gate::{Metric, On, Verdict};
use crate::stats::Summary;

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

/// At most this many per-case rows.
const MAX_ROWS: usize = 30;

/// Render the summary for a terminal.
pub fn console(suite: &str, summary: &Summary, gates: &[Verdict], dir: &str) -> String {
    let f = &summary.figures;
    let cap = &f.capability;
    let kmax = cap.k_max().unwrap_or(1);
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY);
    let hk = format!("pass^{kmax}");
    t.set_header(vec!["case", "n", "accepted", "pass^1", hk.as_str(), "critical", "grader err", "infra err"]);
    // A long run (thousands of graded items) shows its worst cases only.
    let shown: Vec<&crate::stats::CaseFigures> = if summary.cases.len() <= MAX_ROWS {
        summary.cases.iter().collect()
    } else {
        summary.cases.iter().filter(|c| c.accepted < c.n).take(MAX_ROWS).collect()
    };
    for c in &shown {
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
    if shown.len() < summary.cases.len() {
        let _ = writeln!(
            out,
            "… {} more case(s) not shown ({} shown: cases with a trial not accepted; all are in report.md)",
            summary.cases.len() - shown.len(),
            shown.len()
        );
    }
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
        "  counted apart: critical failures {}, grader errors {}, infra errors {}, skipped checks {}{}",
        f.critical_failures,
        f.grader_errors,
        f.infra_errors,
        f.skipped_checks,
        if f.not_applicable_checks > 0 {
            format!(", not applicable {} (need state a trace has not)", f.not_applicable_checks)
        } else {
            String::new()
        }
    );
    if !summary.monitors.is_empty() {
        let _ = writeln!(out, "monitors (failure modes; violations / trials, 95% Wilson interval):");
        let width = summary.monitors.keys().map(|k| k.len()).max().unwrap_or(0);
        for (name, m) in &summary.monitors {
            let iv = match (m.low, m.high) {
                (Some(l), Some(h)) => format!(" [{}, {}]", pct(Some(l)), pct(Some(h))),
                _ => String::new(),
            };
            let _ = writeln!(out, "  {name:<width$}  {} / {}  {}{iv}", m.violations, m.n, pct(m.rate));
        }
    }
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
