//! The robustness table of a run of perturbations (SPEC §17): per
//! perturbation, the drop in pass^1 with its interval, the recovery, the
//! median extra calls and tokens where both trials were accepted, and the
//! cases that broke. Shown by the console, report.md, report.html and the
//! pull-request comment (which is report.md's text).

use std::fmt::Write;

use super::html::esc;
use crate::stats::robustness::{Median, Robustness};

const HEADER: [&str; 7] =
    ["perturbation", "cases (pairs)", "drop pass^1 [95%]", "recovery [95%]", "extra calls", "extra tokens", "broke"];

fn pt(v: f64) -> String {
    let v = if v.abs() < 1e-9 { 0.0 } else { v };
    format!("{}{:.1} pt", if v >= 0.0 { "+" } else { "−" }, v.abs() * 100.0)
}

fn pct(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

fn interval(low: Option<f64>, high: Option<f64>, show: fn(f64) -> String) -> String {
    match low.zip(high) {
        Some((l, h)) => format!(" [{}, {}]", show(l), show(h)),
        None => String::new(),
    }
}

fn extra(m: &Median) -> String {
    let signed = |v: f64| if v >= 0.0 { format!("+{v:.1}") } else { format!("−{:.1}", -v) };
    match m.median {
        Some(v) => format!("{} (n={}){}", signed(v), m.n, interval(m.low, m.high, signed)),
        None => "–".to_string(),
    }
}

/// Each perturbation's row, in [`HEADER`]'s columns.
pub fn rows(rs: &[Robustness]) -> Vec<[String; 7]> {
    rs.iter()
        .map(|r| {
            let drop = match r.drop.value {
                Some(v) => format!("{}{}", pt(v), interval(r.drop.low, r.drop.high, pt)),
                None => "–".into(),
            };
            let recovered = r.recovery.value.map(|v| (v * r.recovery.n as f64).round() as usize).unwrap_or(0);
            let recovery = match r.recovery.value {
                Some(v) => format!(
                    "{} ({recovered} of {}){}",
                    pct(v),
                    r.recovery.n,
                    interval(r.recovery.low, r.recovery.high, pct)
                ),
                None => "–".into(),
            };
            [
                r.name.clone(),
                format!("{} ({})", r.cases, r.pairs),
                drop,
                recovery,
                extra(&r.cost_to_recover.calls),
                extra(&r.cost_to_recover.tokens),
                if r.broke.is_empty() { "none".into() } else { r.broke.join(", ") },
            ]
        })
        .collect()
}

const NOTE: &str = "drop: baseline pass^1 minus perturbed, over the cases it applies to (interval resampling cases); \
                    recovery: of the pairs whose baseline trial was accepted, the share whose perturbed trial was \
                    (Wilson); extra calls and tokens: perturbed minus baseline, median over pairs both accepted; \
                    broke: accepted in every baseline trial, in no perturbed one";

/// The table for the console.
pub fn console(rs: &[Robustness]) -> String {
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::UTF8_BORDERS_ONLY);
    t.set_header(HEADER.to_vec());
    for r in rows(rs) {
        t.add_row(r.to_vec());
    }
    format!("robustness (each perturbation paired with the baseline, trial by trial):\n{t}\n({NOTE})\n")
}

/// The section of report.md.
pub fn markdown(rs: &[Robustness]) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut o = String::from("## Robustness\n\n");
    let _ = writeln!(o, "| {} |", HEADER.join(" | "));
    let _ = writeln!(o, "|{}", "---|".repeat(HEADER.len()));
    for r in rows(rs) {
        let _ = writeln!(o, "| {} |", r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | "));
    }
    let _ = writeln!(o, "\n{}.\n", NOTE[..1].to_uppercase() + &NOTE[1..]);
    o
}

/// The section of report.html.
pub fn html(rs: &[Robustness]) -> String {
    let mut o = String::from("<h2>Robustness</h2><table><tr>");
    for h in HEADER {
        let _ = write!(o, "<th>{}</th>", esc(h));
    }
    o.push_str("</tr>");
    for r in rows(rs) {
        o.push_str("<tr>");
        for c in r {
            let _ = write!(o, "<td>{}</td>", esc(&c));
        }
        o.push_str("</tr>");
    }
    let _ = write!(o, "</table><p>{}.</p>", esc(NOTE));
    o
}
