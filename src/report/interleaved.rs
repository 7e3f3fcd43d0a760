//! An interleaved run (`evalua run SUITE --agent A --agent B`) rendered: the
//! console summary, and the run's own summary.json, report.md and
//! report.html, which put the agents side by side with their denominators,
//! the paired comparisons, the periods and the gates (the figures and
//! verdicts are `stats::interleaved`'s).

use std::fmt::Write;

use super::compare;
use super::text::{fmt_value, gate_line, ratio_text};
use crate::error::{Error, Result};
use crate::record::files;
use crate::spec::gate::Metric;
use crate::stats::interleaved::Interleaved;
use crate::stats::{SuiteFigures, plural};

/// The figures shown side by side: (label, per agent).
fn rows(run: &Interleaved) -> Vec<(String, Vec<String>)> {
    let figs: Vec<&SuiteFigures> = run.runs.iter().map(|r| &r.summary.figures).collect();
    let kmax = figs.iter().filter_map(|f| f.capability.k_max()).min().unwrap_or(1);
    let ks: Vec<u32> = [1, 2, 3, 5, 10].into_iter().filter(|&k| k <= kmax).chain((kmax > 10).then_some(kmax)).collect();
    let ks: Vec<u32> = if ks.contains(&kmax) { ks } else { ks.into_iter().chain([kmax]).collect() };
    let rate = |f: &SuiteFigures, m: Metric, v: Option<f64>| {
        let iv = f
            .capability
            .interval(m)
            .map(|i| format!(" [{}, {}]", fmt_value(Some(i.lower), true), fmt_value(Some(i.upper), true)))
            .unwrap_or_default();
        format!("{}{iv}", fmt_value(v, true))
    };
    let mut out = Vec::new();
    out.push((
        "n (capability view)".to_string(),
        figs.iter()
            .map(|f| {
                format!("{}, {}", plural(f.capability.trials as usize, "trial"), plural(f.capability.cases, "case"))
            })
            .collect(),
    ));
    for &k in &ks {
        out.push((
            format!("pass^{k}"),
            figs.iter().map(|f| rate(f, Metric::PassHat(k), f.capability.pass_hat(k))).collect(),
        ));
    }
    out.push(("accepted".into(), figs.iter().map(|f| rate(f, Metric::Accepted, f.capability.accepted_rate)).collect()));
    out.push((
        "operational accepted".into(),
        figs.iter()
            .map(|f| {
                format!(
                    "{} of {}",
                    fmt_value(f.operational.accepted_rate, true),
                    plural(f.operational.trials as usize, "trial")
                )
            })
            .collect(),
    ));
    out.push((
        "critical / grader err / infra err".into(),
        figs.iter().map(|f| format!("{} / {} / {}", f.critical_failures, f.grader_errors, f.infra_errors)).collect(),
    ));
    out.push((
        "cost per accepted".into(),
        figs.iter()
            .map(|f| match f.cost_per_accepted_usd {
                Some(c) => fmt_value(Some(c), false),
                None if f.total_cost_usd > 0.0 => "∞".into(),
                None => "–".into(),
            })
            .collect(),
    ));
    let ms = |v: Option<f64>| v.map(|v| format!("{v:.0} ms")).unwrap_or_else(|| "–".into());
    out.push((
        "latency p50 / p95".into(),
        figs.iter().map(|f| format!("{} / {} (n={})", ms(f.p50_ms), ms(f.p95_ms), f.latency_n)).collect(),
    ));
    out.push((
        "mean tool calls / tokens".into(),
        figs.iter()
            .map(|f| {
                format!(
                    "{} / {}",
                    f.mean_tool_calls.map(|v| format!("{v:.1}")).unwrap_or("–".into()),
                    f.mean_tokens.map(|v| format!("{v:.0}")).unwrap_or("–".into())
                )
            })
            .collect(),
    ));
    if run.runs.iter().any(|r| r.summary.efficiency.is_some()) {
        out.push((
            "calls vs reference (median)".into(),
            run.runs
                .iter()
                .map(|r| {
                    r.summary
                        .efficiency
                        .as_ref()
                        .and_then(|e| e.all.calls.as_ref())
                        .map(ratio_text)
                        .unwrap_or("–".into())
                })
                .collect(),
        ));
    }
    out
}

fn delta_text(v: Option<f64>, name: &str) -> String {
    match v.map(|v| if v.abs() < 1e-9 { 0.0 } else { v }) {
        Some(v) if name.starts_with("cost") => format!("{}${:.4}", if v >= 0.0 { "+" } else { "−" }, v.abs()),
        Some(v) => format!("{}{:.1} pt", if v >= 0.0 { "+" } else { "−" }, v.abs() * 100.0),
        None => "–".into(),
    }
}

/// Each comparison in lines: the paired differences of pass^1, the largest
/// pass^k, accepted and cost, then the per-case classes.
fn comparison_lines(run: &Interleaved) -> Vec<String> {
    let mut out = Vec::new();
    for (c, cand) in run.comparisons.iter().zip(run.parts.iter().skip(1)) {
        let base = &run.parts[0];
        let kmax =
            c.figures.iter().filter_map(|f| f.name.strip_prefix("pass^").and_then(|k| k.parse::<u32>().ok())).max();
        let shown: Vec<String> = c
            .figures
            .iter()
            .filter(|f| {
                f.name == "pass^1"
                    || f.name == "accepted"
                    || f.name.starts_with("cost")
                    || kmax.is_some_and(|k| k > 1 && f.name == format!("pass^{k}"))
            })
            .map(|f| {
                let iv = match f.interval {
                    Some((lo, hi)) => format!(
                        " [{}, {}]{}",
                        delta_text(Some(lo), &f.name),
                        delta_text(Some(hi), &f.name),
                        if lo > 0.0 || hi < 0.0 { " *" } else { "" }
                    ),
                    None => String::new(),
                };
                format!("{} {}{iv}", f.name, delta_text(f.delta, &f.name))
            })
            .collect();
        out.push(format!(
            "{cand} − {base} (paired by case, {} cases): {}",
            c.figures.first().map(|f| f.cases).unwrap_or(0),
            shown.join("   ")
        ));
        out.push(format!("  cases: {}", compare::classes_line(c)));
        out.push(format!("  {}", compare::counts_line(c)));
    }
    out
}

/// Each period in a line: its window, its blocks, and each agent's trials,
/// accepted, wall p50 and provider calls, errors and p50 latency.
fn period_lines(run: &Interleaved) -> Vec<String> {
    let ms = |v: Option<f64>| v.map(|v| format!("{v:.0} ms")).unwrap_or_else(|| "–".into());
    run.periods
        .iter()
        .map(|p| {
            let agents: Vec<String> = p
                .agents
                .iter()
                .map(|a| {
                    format!(
                        "{}: {}/{} accepted, {} infra err, wall p50 {}, provider {} calls {} errors p50 {}",
                        a.agent,
                        a.accepted,
                        a.trials,
                        a.infra_errors,
                        ms(a.wall_p50_ms),
                        a.provider_calls,
                        a.provider_errors,
                        ms(a.provider_p50_ms)
                    )
                })
                .collect();
            format!(
                "{:>2}. {:.1}–{:.1} s, {}: {}",
                p.period,
                p.from_ms / 1000.0,
                p.to_ms / 1000.0,
                plural(p.blocks, "block"),
                agents.join(" | ")
            )
        })
        .collect()
}

/// The console summary.
pub fn console(run: &Interleaved) -> String {
    let (what, one) = nouns(run);
    let mut o = String::new();
    let names = &run.parts;
    if !run.complete() {
        let _ = writeln!(
            o,
            "INCOMPLETE interleaved run: some agent's part has trials missing or interrupted; the figures cover only what ran"
        );
    }
    let firsts: Vec<String> = names
        .iter()
        .map(|n| format!("{n} first in {}", run.blocks.iter().filter(|b| b.order.first() == Some(n)).count()))
        .collect();
    let _ = writeln!(
        o,
        "{}: {} {what} interleaved over {} ((case, trial) pairs), each block's {what} back to back, the order rotating ({})",
        run.manifest.suite,
        names.len(),
        plural(run.blocks.len(), "block"),
        firsts.join(", ")
    );
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::UTF8_BORDERS_ONLY);
    let mut header = vec!["figure".to_string()];
    header.extend(names.iter().cloned());
    t.set_header(header);
    for (label, values) in rows(run) {
        let mut row = vec![label];
        row.extend(values);
        t.add_row(row);
    }
    let _ = writeln!(o, "{t}");
    let _ = writeln!(o, "(capability view; 95% intervals resample cases, then each case's trials)");
    if !run.robustness.is_empty() {
        o.push_str(&super::robustness::console(&run.robustness));
    }
    for l in comparison_lines(run) {
        let _ = writeln!(o, "{l}");
    }
    if !run.periods.is_empty() {
        let _ = writeln!(o, "periods (blocks by when they started):");
        for l in period_lines(run) {
            let _ = writeln!(o, "  {l}");
        }
    }
    if !run.gates.is_empty() {
        let failed = run.gates.iter().filter(|g| !g.passed).count();
        let _ = writeln!(
            o,
            "gates: {}",
            if failed == 0 {
                format!("all {} passed", run.gates.len())
            } else {
                format!("{failed} of {} FAILED", run.gates.len())
            }
        );
        for g in run.gates.iter().filter(|g| !g.passed).chain(run.gates.iter().filter(|g| g.passed)) {
            let _ = writeln!(o, "  {}", gate_line(g));
        }
    }
    if let Some(a) = &run.adaptive {
        o.push_str(&super::console::adaptive_text(a));
    }
    for w in &run.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    let dirs: Vec<String> = names.iter().map(|n| rel_dir(run, n)).collect();
    let _ = writeln!(o, "run dir: {} (each {one}'s run: {})", run.dir.display(), dirs.join(", "));
    o
}

/// What the run's parts are: agents, or (a run of perturbations) conditions; plural and singular.
fn nouns(run: &Interleaved) -> (&'static str, &'static str) {
    if run.manifest.perturbations.is_empty() { ("agents", "agent") } else { ("conditions", "condition") }
}

/// A part's run dir, relative to the run's (`agents/<name>`, `conditions/<name>`).
fn rel_dir(run: &Interleaved, name: &str) -> String {
    run.manifest.part_dir(std::path::Path::new(""), name).display().to_string()
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// report.md.
pub fn markdown(run: &Interleaved) -> String {
    let (_, one) = nouns(run);
    let mut o = String::new();
    let names = &run.parts;
    let _ = writeln!(
        o,
        "# evalua report: {} — {} interleaved{}\n",
        run.manifest.suite,
        names.join(" vs "),
        if run.complete() { "" } else { " — INCOMPLETE" }
    );
    let _ = writeln!(
        o,
        "Run `{}` · seed {} · {} ((case, trial) pairs); in each block every {one} ran the trial once, back to back, from the same seed, the order rotating from block to block.\n",
        run.manifest.run_id,
        run.manifest.seed,
        plural(run.blocks.len(), "block")
    );
    if !run.gates.is_empty() {
        let failed = run.gates.iter().filter(|g| !g.passed).count();
        let _ = writeln!(
            o,
            "**Gates: {}.**\n",
            if failed == 0 {
                format!("all {} passed", run.gates.len())
            } else {
                format!("{failed} of {} FAILED", run.gates.len())
            }
        );
        for g in run.gates.iter().filter(|g| !g.passed).chain(run.gates.iter().filter(|g| g.passed)) {
            let _ = writeln!(o, "- {}", gate_line(g));
        }
        let _ = writeln!(o);
    }
    let _ = writeln!(o, "## Side by side\n");
    let _ = writeln!(o, "| figure | {} |", names.iter().map(|n| cell(n)).collect::<Vec<_>>().join(" | "));
    let _ = writeln!(o, "|---|{}", "---|".repeat(names.len()));
    for (label, values) in rows(run) {
        let _ = writeln!(o, "| {label} | {} |", values.iter().map(|v| cell(v)).collect::<Vec<_>>().join(" | "));
    }
    let _ = writeln!(
        o,
        "\nCapability view; 95% intervals resample cases, then each case's trials. Each {one}'s own report: {}.\n",
        names.iter().map(|n| format!("[{n}]({}/report.md)", rel_dir(run, n))).collect::<Vec<_>>().join(", ")
    );
    if !run.robustness.is_empty() {
        o.push_str(&super::robustness::markdown(&run.robustness));
    }
    if !run.comparisons.is_empty() {
        let _ = writeln!(o, "## Paired comparison\n");
        for (c, cand) in run.comparisons.iter().zip(names.iter().skip(1)) {
            let _ = writeln!(o, "### {cand} − {}\n", names[0]);
            let _ = writeln!(o, "{}", compare::markdown(c));
        }
    }
    if !run.periods.is_empty() {
        let _ = writeln!(o, "## Periods\n");
        let _ = writeln!(o, "Blocks grouped by when they started; every agent of a block is in its period.\n");
        let _ = writeln!(
            o,
            "| period | window | blocks | agent | trials | accepted | infra err | wall p50 | provider calls | provider errors | provider p50 | provider p95 |"
        );
        let _ = writeln!(o, "|---|---|---|---|---|---|---|---|---|---|---|---|");
        let ms = |v: Option<f64>| v.map(|v| format!("{v:.0} ms")).unwrap_or_else(|| "–".into());
        for p in &run.periods {
            for a in &p.agents {
                let _ = writeln!(
                    o,
                    "| {} | {:.1}–{:.1} s | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    p.period,
                    p.from_ms / 1000.0,
                    p.to_ms / 1000.0,
                    p.blocks,
                    cell(&a.agent),
                    a.trials,
                    a.accepted,
                    a.infra_errors,
                    ms(a.wall_p50_ms),
                    a.provider_calls,
                    a.provider_errors,
                    ms(a.provider_p50_ms),
                    ms(a.provider_p95_ms)
                );
            }
        }
        let _ = writeln!(o);
    }
    if !run.warnings.is_empty() {
        let _ = writeln!(o, "## Warnings\n");
        for w in &run.warnings {
            let _ = writeln!(o, "- {}", cell(w));
        }
    }
    o
}

/// report.html: the same as report.md, as one self-contained page.
pub fn html(run: &Interleaved) -> String {
    let (what, _) = nouns(run);
    use super::html::esc;
    let names = &run.parts;
    let mut o = String::new();
    let _ = write!(
        o,
        "<!doctype html><meta charset=utf-8><title>evalua: {} — {}</title><style>body{{font:14px system-ui,sans-serif;margin:2em;max-width:1100px}}table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:left}}.fail{{color:#b00}}</style>",
        esc(&run.manifest.suite),
        esc(&names.join(" vs "))
    );
    let _ = write!(
        o,
        "<h1>{} — {} interleaved{}</h1><p>Run <code>{}</code> · seed {} · {}; each block's {what} ran back to back from the same seed, the order rotating.</p>",
        esc(&run.manifest.suite),
        esc(&names.join(" vs ")),
        if run.complete() { "" } else { " — INCOMPLETE" },
        esc(&run.manifest.run_id),
        run.manifest.seed,
        esc(&plural(run.blocks.len(), "block"))
    );
    if !run.gates.is_empty() {
        o.push_str("<h2>Gates</h2><ul>");
        for g in run.gates.iter().filter(|g| !g.passed).chain(run.gates.iter().filter(|g| g.passed)) {
            let _ = write!(o, "<li{}>{}</li>", if g.passed { "" } else { " class=fail" }, esc(&gate_line(g)));
        }
        o.push_str("</ul>");
    }
    o.push_str("<h2>Side by side</h2><table><tr><th>figure</th>");
    for n in names {
        let _ = write!(o, "<th><a href=\"{}/report.html\">{}</a></th>", esc(&rel_dir(run, n)), esc(n));
    }
    o.push_str("</tr>");
    for (label, values) in rows(run) {
        let _ = write!(o, "<tr><td>{}</td>", esc(&label));
        for v in values {
            let _ = write!(o, "<td>{}</td>", esc(&v));
        }
        o.push_str("</tr>");
    }
    o.push_str("</table><p>Capability view; 95% intervals resample cases, then each case's trials.</p>");
    if !run.robustness.is_empty() {
        o.push_str(&super::robustness::html(&run.robustness));
    }
    if !run.comparisons.is_empty() {
        o.push_str("<h2>Paired comparison</h2><pre>");
        for c in &run.comparisons {
            o.push_str(&esc(&compare::console(c)));
        }
        o.push_str("</pre>");
    }
    if !run.periods.is_empty() {
        o.push_str("<h2>Periods</h2><ul>");
        for l in period_lines(run) {
            let _ = write!(o, "<li>{}</li>", esc(&l));
        }
        o.push_str("</ul>");
    }
    for w in &run.warnings {
        let _ = write!(o, "<p class=fail>warning: {}</p>", esc(w));
    }
    o
}

/// Write the run's summary.json, report.md and report.html.
pub fn write_all(run: &Interleaved) -> Result<()> {
    crate::record::rundir::write_json(&run.dir.join(files::SUMMARY), &run.summary())?;
    let write = |name: &str, text: String| {
        let p = run.dir.join(name);
        std::fs::write(&p, text).map_err(|e| Error::Environment(format!("{}: cannot write: {e}", p.display())))
    };
    write(files::REPORT_MD, markdown(run))?;
    write(files::REPORT_HTML, html(run))
}
