//! The console summary printed after a run: an incomplete run says so first;
//! then per case (failing cases first), suite totals with their
//! denominators, errors apart, the gates (failing first), the warnings a
//! reader must keep in mind, and where the run dir is.

use std::fmt::Write;

use comfy_table::{Table, presets::UTF8_BORDERS_ONLY};

use super::text::{fmt_value, gate_line, incomplete_line, worst_first};
use crate::record::Outcome;
use crate::spec::gate::{Metric, Verdict};
use crate::stats::{RunData, Summary, plural};
use crate::util::inert::console as line;

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

/// The summary of a run dir as read back: incomplete-run banner, the summary,
/// warnings and the cases skipped as invalid.
pub fn console_for(run: &RunData) -> String {
    let mut out = String::new();
    if let Some(line) = incomplete_line(run) {
        let _ = writeln!(out, "{line}");
    }
    let endings = match super::text::endings(run) {
        Ok(e) => endings_text(&e, &run.dir),
        Err(e) => format!("(how the trials not accepted ended: cannot read their records: {e})\n"),
    };
    out.push_str(&render(run.suite(), &run.summary, &run.gates, &run.dir.display().to_string(), &endings));
    if let Some(a) = &run.adaptive {
        out.push_str(&adaptive_text(a));
    }
    for inv in &run.manifest.invalid_cases {
        let _ =
            writeln!(out, "skipped as invalid: '{}' ({}): {}", line(&inv.case), line(&inv.location), line(&inv.reason));
    }
    for w in &run.warnings {
        let _ = writeln!(out, "warning: {}", line(w));
    }
    out
}

/// An adaptive run's rounds (SPEC §20): the trials it took, those saved
/// against the fixed design, and each gate's sequential verdict.
pub fn adaptive_text(a: &crate::stats::adaptive::Adaptive) -> String {
    use crate::stats::adaptive::GateVerdict;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "adaptive: {} round(s), {} of {} trials ({} saved against the fixed design, every case its max){}",
        a.rounds,
        a.trials,
        a.trials_max,
        a.trials_max.saturating_sub(a.trials),
        if a.finished { "" } else { "; cut short: resume it" }
    );
    for g in &a.gates {
        let verdict = match (g.verdict, g.decided_at_trials) {
            (GateVerdict::Pass, Some(n)) => format!("pass after {n} trials"),
            (GateVerdict::Fail, Some(n)) => format!("FAIL after {n} trials"),
            (GateVerdict::Undecided, _) if a.undecided == "pass" => {
                format!("undecided after {} trials (passes: undecided = \"pass\")", a.trials)
            }
            (GateVerdict::Undecided, _) => format!("UNDECIDED after {} trials (fails the run)", a.trials),
            (v, None) => format!("{v:?}"),
        };
        let _ = writeln!(
            out,
            "  {} (threshold {}): {verdict}; anytime-valid 95% sequence [{:.3}, {:.3}]",
            line(&g.name),
            g.threshold,
            g.sequence.low,
            g.sequence.high
        );
    }
    out
}

/// How the non-accepted trials ended, with counts, each ending's first trial
/// (its error line, a crash's last stderr line) and the command to see it whole.
pub fn endings_text(endings: &[super::text::Ending], run_dir: &std::path::Path) -> String {
    let mut out = String::new();
    if endings.is_empty() {
        return out;
    }
    let n: usize = endings.iter().map(|e| e.count).sum();
    let _ = writeln!(
        out,
        "not accepted: {}, by how they ended: {}",
        plural(n, "trial"),
        super::text::endings_counts(endings)
    );
    for e in endings {
        let _ = writeln!(
            out,
            "  {}: first {} #{}{}",
            e.ended.as_str(),
            line(&e.case),
            e.trial,
            e.why.as_deref().map(|w| format!(": {}", line(w))).unwrap_or_default()
        );
        if let Some(s) = &e.stderr {
            let _ = writeln!(out, "    stderr: {}", line(s));
        }
        let _ = writeln!(out, "    {}", line(&e.show_command(run_dir)));
    }
    out
}

/// Render the summary for a terminal.
pub fn console(suite: &str, summary: &Summary, gates: &[Verdict], dir: &str) -> String {
    render(suite, summary, gates, dir, "")
}

/// The summary, with `after_table` (the endings) right after the per-case table.
fn render(suite: &str, summary: &Summary, gates: &[Verdict], dir: &str, after_table: &str) -> String {
    let mut out = case_table(summary);
    out.push_str(after_table);
    headline(&mut out, suite, summary);
    extras(&mut out, summary);
    closing(&mut out, summary, gates, dir);
    out
}

/// The per-case table, failing cases first (a long run shows its worst cases only).
fn case_table(summary: &Summary) -> String {
    let cap = &summary.figures.capability;
    let kmax = cap.k_max().unwrap_or(1);
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY);
    let hk = format!("pass^{kmax}");
    let mut header = vec!["case", "n", "accepted", "pass^1"];
    if kmax > 1 {
        header.push(hk.as_str());
    }
    header.extend(["critical", "grader err", "infra err"]);
    t.set_header(header);
    // A long run (thousands of graded items) shows its worst cases only.
    let order = worst_first(summary);
    let shown: Vec<usize> = if order.len() <= MAX_ROWS {
        order
    } else {
        order.into_iter().filter(|&i| summary.cases[i].accepted < summary.cases[i].n).take(MAX_ROWS).collect()
    };
    for &i in &shown {
        let c = &summary.cases[i];
        let hat = |k: u32| c.pass_hat(k);
        let mut row = vec![line(&c.id), c.n.to_string(), c.accepted.to_string(), pct(hat(1))];
        if kmax > 1 {
            row.push(pct(hat(kmax)));
        }
        row.extend([
            c.count(Outcome::Critical).to_string(),
            c.count(Outcome::GraderError).to_string(),
            c.count(Outcome::InfraError).to_string(),
        ]);
        t.add_row(row);
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
    out
}

/// The capability and operational figures with their intervals, latency, cost, what is counted apart.
fn headline(out: &mut String, suite: &str, summary: &Summary) {
    let f = &summary.figures;
    let cap = &f.capability;
    let kmax = cap.k_max().unwrap_or(1);
    let iv = |m: Metric| {
        cap.interval(m).map(|i| format!(" [{}, {}]", pct(Some(i.lower)), pct(Some(i.upper)))).unwrap_or_default()
    };
    let _ = writeln!(
        out,
        "{}: {}, {} (capability view; 95% intervals resample cases, then each case's trials)",
        line(suite),
        plural(cap.cases, "case"),
        plural(cap.trials as usize, "trial")
    );
    // k = 1, 2, 3, 5, 10 and the largest (summary.json has every k): not one
    // line per k of a 20-trial run.
    for k in [1, 2, 3, 5, 10].into_iter().filter(|&k| k < kmax).chain([kmax]) {
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
        "  operational view (infra errors count as failures): accepted {} of {}",
        pct(op.accepted_rate),
        plural(op.trials as usize, "trial")
    );
    let cost = match f.cost_per_accepted_usd {
        Some(c) => format!(
            "{}{}",
            fmt_value(Some(c), false),
            cap.interval(Metric::CostPerAccepted)
                .map(|i| format!(" [{}, {}]", fmt_value(Some(i.lower), false), fmt_value(Some(i.upper), false)))
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
    let _ = writeln!(out, "  counted apart: {}", super::text::counted_apart(f));
    for (label, text) in super::published::lines(summary) {
        let _ = writeln!(out, "  {label}: {text}");
    }
}

/// Monitors, efficiency, judge cascades, the safety figures and recorded verdicts, when the run has them.
fn extras(out: &mut String, summary: &Summary) {
    if !summary.monitors.is_empty() {
        let _ = writeln!(out, "monitors (failure modes; violations / trials, 95% Wilson interval):");
        let width = summary.monitors.keys().map(|k| k.len()).max().unwrap_or(0);
        for (name, m) in &summary.monitors {
            let iv = super::text::bounds_text(m.low, m.high, pct).map(|b| format!(" {b}")).unwrap_or_default();
            let _ = writeln!(out, "  {:<width$}  {} / {}  {}{iv}", line(name), m.violations, m.n, pct(m.rate));
        }
    }
    let efficiency = super::text::efficiency_rows(summary);
    if let Some(e) = &summary.efficiency {
        let _ = writeln!(
            out,
            "efficiency against the reference solutions ({}; median ratio, 95% interval):",
            plural(e.cases, "case")
        );
        let width = efficiency.iter().map(|r| r.0.len()).max().unwrap_or(0);
        for (label, all, accepted) in &efficiency {
            let _ = writeln!(out, "  {label:<width$}  all trials {all}   accepted {accepted}");
        }
        let over = &e.over_reference;
        if over.count > 0 {
            let shown: Vec<String> =
                over.trials.iter().take(5).map(|o| format!("{}#{}", line(&o.case), o.trial)).collect();
            let _ = writeln!(
                out,
                "  {} accepted trial(s) took more than their case's max_ratio × the reference: {}{} (report.md lists them)",
                over.count,
                shown.join(", "),
                if over.count > shown.len() { ", …" } else { "" }
            );
        }
    }
    if !summary.judge_cascades.is_empty() {
        let _ = writeln!(out, "judge cascades (escalated / items, 95% Wilson interval; each judge's calls and cost):");
        for (name, c) in &summary.judge_cascades {
            let iv = super::text::bounds_text(c.low, c.high, pct).map(|b| format!(" {b}")).unwrap_or_default();
            let judges: Vec<String> = c
                .judges
                .iter()
                .map(|j| format!("{} {}: {} items, {} calls, ${:.4}", j.stage, j.judge, j.items, j.calls, j.cost_usd))
                .collect();
            let _ = writeln!(
                out,
                "  {name}  {} / {}  {}{iv} escalated; {}",
                c.escalated,
                c.items,
                pct(c.escalation_rate),
                judges.join("; ")
            );
        }
    }
    let safety = super::text::safety_rows(summary);
    if !safety.is_empty() {
        let _ = writeln!(out, "safety (apart from the capability figures; 95% intervals resample cases):");
        for (label, value, n) in safety {
            let _ = writeln!(out, "  {label} {value} ({n})");
        }
    }
    if let Some(v) = &summary.recorded_verdicts {
        for l in v.lines() {
            let _ = writeln!(out, "{l}");
        }
    }
}

/// The gates (failing first), the skipped checks, the run dir.
fn closing(out: &mut String, summary: &Summary, gates: &[Verdict], dir: &str) {
    let f = &summary.figures;
    if !gates.is_empty() {
        let _ = writeln!(out, "gates: {}", super::text::gates_headline(gates));
        for g in gates.iter().filter(|g| !g.passed).chain(gates.iter().filter(|g| g.passed)) {
            let _ = writeln!(out, "  {}", gate_line(g));
        }
    }
    if f.skipped_checks > 0 {
        let names: Vec<&str> =
            summary.checks.iter().filter(|c| c.tally.skipped > 0).map(|c| c.tally.name.as_str()).collect();
        let _ =
            writeln!(out, "skipped (not passed): {} check result(s): {}", f.skipped_checks, line(&names.join(", ")));
    }
    let _ = writeln!(out, "run dir: {}", line(dir));
}

/// The safety figures of several suites pooled (`evalua run A.lua B.lua …`):
/// AgentDojo's overall utility, utility under attack and targeted attack
/// success rate, every case of every suite counted once.
pub fn overall_safety(suites: &[&str], s: &crate::stats::safety::Safety) -> String {
    let mut out = String::new();
    let names: Vec<String> = suites.iter().map(|n| line(n)).collect();
    let _ = writeln!(
        out,
        "safety overall, {} suites pooled ({}; 95% intervals resample cases across them):",
        suites.len(),
        names.join(", ")
    );
    for (label, value, n) in super::text::safety_figure_rows(s) {
        let _ = writeln!(out, "  {label} {value} ({n})");
    }
    out
}
