//! `evalua compare BASE CAND` and `run --baseline`, rendered: the console
//! lines, compare.md, and the run's compare.json (the figures are
//! `stats::compare`'s).

use std::fmt::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::record::files;
use crate::stats::compare::{CaseDiff, Change, Class, Comparison, FigureDiff, Measurement, Relation, compare, short};
use crate::stats::{RunData, rundata};
use crate::util::digest::sha256_hex;
use crate::util::inert::{console as line, markdown as md};

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
