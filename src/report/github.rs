//! `evalua report RUN_DIR --format github`: a pull-request comment body in
//! GitHub-flavoured Markdown (SPEC §16). First the verdict (gates, failing
//! first), the headline figures with their 95% intervals and the counts kept
//! apart; why trials failed, folded (per case, its first failures with how
//! they ended and what failed); then a measurement-change warning when the figures measure graders
//! rather than the agent; then, against a baseline, the paired comparison
//! with the cases that regressed (`compare::markdown`); last, links.
//!
//! The body is plain Markdown with no marker of its own: the GitHub Action
//! (`action.yml`) adds the hidden marker it finds its sticky comment by.

use std::fmt::Write;

use super::compare;
use super::text::{figure_rows, fmt_value, gate_line, incomplete_line, why_not_accepted, worst_first};
use crate::stats::compare::Comparison;
use crate::stats::{RunData, plural};
use crate::util::inert::markdown as md;

/// What the comment links to, when known.
#[derive(Debug, Default, Clone)]
pub struct Links {
    /// The run dir uploaded as a CI artifact.
    pub artifact: Option<String>,
}

/// Text read from a run dir (or naming what a suite declared) as inert inline Markdown, in a
/// `<code>` element where it was a code span (a code span cannot escape a backtick).
fn code(s: &str) -> String {
    format!("<code>{}</code>", md(s))
}

/// The comment body for one run, compared with its baseline when `cmp` is given.
pub fn render(run: &RunData, cmp: Option<&Comparison>, links: &Links) -> String {
    let mut o = String::new();
    let version = run.version().map(|v| format!(" ({})", md(v))).unwrap_or_default();
    let failed = run.gates.iter().filter(|g| !g.passed).count();
    let (mark, verdict) = if run.gates.is_empty() {
        ("ℹ️", "no gates declared".to_string())
    } else if run.gates_passed() {
        ("✅", format!("all {} gates held", run.gates.len()))
    } else if failed == 0 {
        ("❌", "gates not decided: the run is incomplete".to_string())
    } else {
        ("❌", format!("{failed} of {} gates failed", run.gates.len()))
    };
    // A run that hardened its suite first (`run --harden`): a hole fails it whatever the gates say.
    let holes = run.manifest.harden.as_ref().map_or(0, |h| h.holes);
    let (mark, verdict) =
        if holes > 0 { ("❌", format!("{verdict}; graders have {holes} holes")) } else { (mark, verdict) };
    let _ = writeln!(o, "### {mark} evalua · {}{version}: {verdict}\n", code(run.suite()));
    if let Some(line) = incomplete_line(run) {
        let _ = writeln!(o, "> ⚠️ {}\n", md(&line));
    }
    for g in run.gates.iter().filter(|g| !g.passed).chain(run.gates.iter().filter(|g| g.passed)) {
        let _ = writeln!(o, "- {} {}", if g.passed { "✅" } else { "❌" }, md(&gate_line(g)));
    }
    if !run.gates.is_empty() {
        let _ = writeln!(o);
    }
    if let Some(h) = &run.manifest.harden {
        let _ = writeln!(o, "{}", super::harden::github(h));
    }

    let s = &run.summary;
    let f = &s.figures;
    // The headline: what the gates decide on, pass^1, and pass^k / pass@k at the largest k;
    // every figure in a folded table below it.
    let rows = figure_rows(s);
    let kmax = f.capability.k_max();
    let headline = |name: &str| {
        run.gates.iter().any(|g| g.name == name)
            || name == "pass^1"
            || name == "accepted"
            || kmax.is_some_and(|k| name == format!("pass^{k}") || name == format!("pass@{k}"))
            || (name == "cost_per_accepted_usd" && f.total_cost_usd > 0.0)
    };
    let table = |o: &mut String, rows: &mut dyn Iterator<Item = &super::text::FigureRow>| {
        let _ = writeln!(o, "| figure | value | 95% interval | cases | trials |\n|---|---|---|---|---|");
        for r in rows {
            let _ =
                writeln!(o, "| {} | {} | {} | {} | {} |", r.name, r.value_text(), r.interval_text(), r.cases, r.trials);
        }
    };
    table(&mut o, &mut rows.iter().filter(|r| headline(&r.name)));
    if rows.iter().any(|r| !headline(&r.name)) {
        let _ = writeln!(o, "\n<details><summary>All figures</summary>\n");
        table(&mut o, &mut rows.iter());
        let _ = writeln!(o, "\n</details>");
    }
    let _ = writeln!(
        o,
        "\nCritical failures **{}** · grader errors {} · infra errors {} · total cost ${:.4} · {}, {}\n",
        f.critical_failures,
        f.grader_errors,
        f.infra_errors,
        f.total_cost_usd,
        plural(f.capability.cases, "case"),
        plural(f.capability.trials as usize, "trial"),
    );

    let _ =
        writeln!(o, "<details><summary>Coverage, abandonment, interventions, contamination, exclusions</summary>\n");
    for (label, text) in super::published::lines(&run.summary) {
        let _ = writeln!(o, "- {label}: {}", md(&text));
    }
    let _ = writeln!(o, "\n</details>\n");

    failures(&mut o, run);

    // The figures measure graders, not the agent: say so before any comparison.
    if cmp.and_then(|c| c.measurement.as_ref()).is_none()
        && let Some(from) = &run.manifest.regraded_from
    {
        let _ = writeln!(
            o,
            "> ⚠️ **Measurement change:** this run re-grades the recorded trials of run {} with today's checks; no agent ran. Its figures differ from that run's only through the graders.\n",
            code(&from.run_id)
        );
    }
    for w in &run.warnings {
        let _ = writeln!(o, "> ⚠️ {}", md(w));
    }
    if !run.warnings.is_empty() {
        let _ = writeln!(o);
    }

    match cmp {
        Some(c) => {
            let reg = c.counts.get("regressed").copied().unwrap_or(0);
            let _ = writeln!(
                o,
                "<details{}><summary>Against the baseline {}: {} regressed, {} improved</summary>\n",
                if reg > 0 || c.measurement.is_some() || !c.new_critical.is_empty() { " open" } else { "" },
                code(&c.base.run_id),
                reg,
                c.counts.get("improved").copied().unwrap_or(0)
            );
            // compare::markdown puts the measurement change first and the regressed cases open.
            let _ = writeln!(o, "{}\n</details>\n", compare::markdown(c).trim_end());
        }
        None => {
            let _ = writeln!(o, "_No baseline: run with `--baseline RUN_DIR` to list the cases that regressed._\n");
        }
    }

    let mut foot = vec![format!("run {}", code(run.run_id())), format!("seed {}", run.seed())];
    if let Some(p50) = f.p50_ms {
        foot.push(format!("p50 {p50:.0} ms"));
    }
    if let Some(c) = f.cost_per_accepted_usd {
        foot.push(format!("{} per accepted trial", fmt_value(Some(c), false)));
    }
    foot.push(format!("evalua {}", run.manifest.evalua_version));
    if let Some(url) = &links.artifact {
        foot.push(format!("[run dir (artifact)]({url})"));
    }
    let _ = writeln!(o, "<sub>{}</sub>", foot.join(" · "));
    o
}

/// Cases shown under "why trials failed", and failures shown per case.
const FAILED_CASES: usize = 10;
const FAILED_PER_CASE: usize = 3;

/// Why trials failed, folded: per case (worst first), its first failures
/// with how each ended and what failed, as report.md's worst cases say it.
fn failures(o: &mut String, run: &RunData) {
    if run.failed.is_empty() {
        return;
    }
    let mut endings: Vec<(&str, usize)> = Vec::new();
    for f in &run.failed {
        match endings.iter_mut().find(|(e, _)| *e == f.ended.as_str()) {
            Some(e) => e.1 += 1,
            None => endings.push((f.ended.as_str(), 1)),
        }
    }
    endings.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let counts: Vec<String> = endings.iter().map(|(e, n)| format!("{e} {n}")).collect();
    let _ = writeln!(
        o,
        "<details><summary>Why trials failed: {} not accepted, by how they ended: {}</summary>\n",
        plural(run.failed.len(), "trial"),
        counts.join(", ")
    );
    let failed = match run.failed() {
        Ok(f) => f,
        Err(e) => {
            let _ = writeln!(o, "The failed trials could not be read: {}\n\n</details>\n", md(&e.to_string()));
            return;
        }
    };
    let s = &run.summary;
    let cases: Vec<usize> = worst_first(s).into_iter().filter(|&i| failed.places(i).next().is_some()).collect();
    for &i in cases.iter().take(FAILED_CASES) {
        let c = &s.cases[i];
        let _ = writeln!(o, "**{}** — {} of {} accepted\n", md(&c.id), c.accepted, c.n);
        let places: Vec<_> = failed.places(i).collect();
        for at in places.iter().take(FAILED_PER_CASE) {
            let line = match failed.read(at) {
                Ok(r) => format!(
                    "#{} {} · ended {}: {}",
                    r.trial,
                    r.outcome.as_str(),
                    r.ended.as_str(),
                    md(&why_not_accepted(&r, 160))
                ),
                Err(e) => format!("#{}: its record could not be read: {}", at.trial, md(&e.to_string())),
            };
            let _ = writeln!(o, "- {line}");
        }
        if places.len() > FAILED_PER_CASE {
            let _ = writeln!(o, "- … and {} more", places.len() - FAILED_PER_CASE);
        }
        let _ = writeln!(o);
    }
    if cases.len() > FAILED_CASES {
        let _ = writeln!(o, "… and {} more cases with failures (report.md lists them).\n", cases.len() - FAILED_CASES);
    }
    let _ = writeln!(o, "</details>\n");
}
