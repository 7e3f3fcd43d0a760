//! report.md: an incomplete run says so in the first line; then the gates
//! (failing first), summary with intervals and denominators, warnings,
//! per-case table (failing cases first), worst cases linking to their
//! traces, checks, and errors counted apart.

use std::fmt::Write;

use super::text::{
    bounds_text, evidence_text, figure_rows, first_failure_text, fmt_value, gate_line, incomplete_line, k_max,
    safety_rows, worst_first,
};
use crate::error::Result;
use crate::record::{Outcome, Verdict};
use crate::stats::rundata::Failed;
use crate::stats::{RunData, plural};

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Write report.md into `o`, reading the failing trials' records back from the run dir.
pub fn write<W: Write>(run: &RunData, o: &mut W) -> Result<()> {
    head(run, o);
    warnings(run, o);
    figures(run, o);
    monitors_and_tools(run, o);
    efficiency(run, o);
    safety(run, o);
    let failed = run.failed()?;
    cases(run, &failed, o)?;
    endings(run, o)?;
    worst(run, &failed, o)?;
    checks(run, o);
    errors(run, &failed, o)?;
    Ok(())
}

/// The title (an incomplete run says so), the run line and the gates, failing first.
fn head<W: Write>(run: &RunData, o: &mut W) {
    let s = &run.summary;
    let f = &s.figures;
    let cap = &f.capability;
    let version = run.version().map(|v| format!(" ({v})")).unwrap_or_default();
    match incomplete_line(run) {
        Some(line) => {
            let _ = writeln!(o, "# evalua report: {}{version} — {line}\n", run.suite());
        }
        None => {
            let _ = writeln!(o, "# evalua report: {}{version}\n", run.suite());
        }
    }
    let _ = writeln!(
        o,
        "Run `{}` · seed {} · {}, {} (capability view)\n",
        run.run_id(),
        run.seed(),
        plural(cap.cases, "case"),
        plural(cap.trials as usize, "trial")
    );
    if !run.gates.is_empty() {
        let _ = writeln!(o, "**Gates: {}.**\n", super::text::gates_headline(&run.gates));
        for g in run.gates.iter().filter(|g| !g.passed).chain(run.gates.iter().filter(|g| g.passed)) {
            let _ = writeln!(o, "- {}", gate_line(g));
        }
        let _ = writeln!(o);
    }
}

/// The run's warnings and the cases skipped as invalid.
fn warnings<W: Write>(run: &RunData, o: &mut W) {
    if !run.warnings.is_empty() || !run.manifest.invalid_cases.is_empty() {
        let _ = writeln!(o, "## Warnings\n");
        for w in &run.warnings {
            let _ = writeln!(o, "- {}", cell(w));
        }
        for inv in &run.manifest.invalid_cases {
            let _ =
                writeln!(o, "- case `{}` ({}) was skipped as invalid: {}", inv.case, inv.location, cell(&inv.reason));
        }
        let _ = writeln!(o);
    }
}

/// The suite figures with their intervals, the operational view, latency, cost, what is counted apart.
fn figures<W: Write>(run: &RunData, o: &mut W) {
    let s = &run.summary;
    let f = &s.figures;
    let _ = writeln!(o, "## Figures\n");
    let _ = writeln!(
        o,
        "95% intervals from a seeded two-stage bootstrap: cases resampled, then each case's rate redrawn from its trials.\n"
    );
    let _ = writeln!(o, "| figure | value | 95% interval | cases | trials |\n|---|---|---|---|---|");
    for r in figure_rows(s) {
        let _ = writeln!(o, "| {} | {} | {} | {} | {} |", r.name, r.value_text(), r.interval_text(), r.cases, r.trials);
    }
    let op = &f.operational;
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "- Operational view (infra errors count as failures): accepted {} of {} trials over {} cases",
        fmt_value(op.accepted_rate, true),
        op.trials,
        op.cases
    );
    let ms = |v: Option<f64>| v.map(|v| format!("{v:.0} ms")).unwrap_or("–".into());
    let _ = writeln!(o, "- Latency p50 {} · p95 {} (n = {} trials)", ms(f.p50_ms), ms(f.p95_ms), f.latency_n);
    let _ = writeln!(
        o,
        "- Total cost ${:.4} · mean tool calls {} · mean tokens {}",
        f.total_cost_usd,
        f.mean_tool_calls.map(|v| format!("{v:.1}")).unwrap_or("–".into()),
        f.mean_tokens.map(|v| format!("{v:.0}")).unwrap_or("–".into())
    );
    let _ = writeln!(o, "- Counted apart: {}", super::text::counted_apart(f));
    for (label, text) in super::published::lines(s) {
        let _ = writeln!(o, "- {}{}: {text}", label[..1].to_uppercase(), &label[1..]);
    }
    let _ = writeln!(o);
}

/// Failure modes per monitor, and each tool's calls, errors and latency.
fn monitors_and_tools<W: Write>(run: &RunData, o: &mut W) {
    let s = &run.summary;
    if !s.monitors.is_empty() {
        let _ = writeln!(o, "## Monitors\n");
        let _ = writeln!(o, "Failure modes: trials that failed each monitor, with a 95% Wilson interval.\n");
        let _ = writeln!(o, "| monitor | violations | trials | rate | 95% interval |\n|---|---|---|---|---|");
        for (name, m) in &s.monitors {
            let iv = bounds_text(m.low, m.high, |v| fmt_value(v, true)).unwrap_or_else(|| "–".into());
            let _ = writeln!(o, "| {} | {} | {} | {} | {iv} |", cell(name), m.violations, m.n, fmt_value(m.rate, true));
        }
        let _ = writeln!(o);
    }

    if !s.tools.is_empty() {
        let _ = writeln!(o, "## Tools\n");
        let _ =
            writeln!(o, "| tool | calls | errors | error rate | refused | p50 | p95 |\n|---|---|---|---|---|---|---|");
        let ms = |v: Option<f64>| v.map(|v| format!("{v:.1} ms")).unwrap_or("–".into());
        for (name, t) in &s.tools {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {} |",
                cell(name),
                t.calls,
                t.errors,
                fmt_value(t.error_rate, true),
                t.refused,
                ms(t.p50_ms),
                ms(t.p95_ms)
            );
        }
        let _ = writeln!(o);
    }
}

/// Trials against their cases' reference solutions.
fn efficiency<W: Write>(run: &RunData, o: &mut W) {
    let s = &run.summary;
    if let Some(e) = &s.efficiency {
        let _ = writeln!(o, "## Efficiency against the reference solutions\n");
        let _ = writeln!(
            o,
            "{} declare a reference solution. Median ratio of each trial's tool calls and tokens to its case's \
             reference: per case, then the weighted median over cases; 95% intervals resample cases, then each \
             case's trials. All trials = every trial that ran (infrastructure errors left out).\n",
            plural(e.cases, "case")
        );
        let _ = writeln!(o, "| measure | all trials | accepted trials |\n|---|---|---|");
        for (label, all, accepted) in super::text::efficiency_rows(s) {
            let _ = writeln!(o, "| {label} | {all} | {accepted} |");
        }
        let _ = writeln!(o);
        let cell_ratio = |r: &Option<crate::stats::efficiency::Ratio>| {
            r.as_ref().map(super::text::ratio_text).unwrap_or_else(|| "–".into())
        };
        let _ = writeln!(
            o,
            "| case | reference calls | reference tokens | calls (all) | calls (accepted) | executed (accepted) | tokens (accepted) |\n|---|---|---|---|---|---|---|"
        );
        for c in &s.cases {
            let Some(ce) = &c.efficiency else { continue };
            let opt = |v: Option<String>| v.unwrap_or_else(|| "–".into());
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {} |",
                cell(&c.id),
                opt(ce.reference.calls.map(|v| v.to_string())),
                opt(ce.reference.tokens.map(|v| v.to_string())),
                cell_ratio(&ce.all.calls),
                cell_ratio(&ce.accepted.calls),
                cell_ratio(&ce.accepted.executed_calls),
                cell_ratio(&ce.accepted.tokens)
            );
        }
        let _ = writeln!(o);
        let over = &e.over_reference;
        if over.count == 0 {
            let _ = writeln!(o, "No accepted trial took more than its case's `max_ratio` times the reference.\n");
        } else {
            let _ = writeln!(
                o,
                "**{} accepted trial(s) took more than their case's `max_ratio` times the reference** (calls requested or tokens):\n",
                over.count
            );
            for t in &over.trials {
                let _ = writeln!(o, "- {}", cell(&super::text::over_reference_text(t)));
            }
            if over.count > over.trials.len() {
                let _ = writeln!(o, "- … and {} more", over.count - over.trials.len());
            }
            let _ = writeln!(o);
        }
    }
}

/// The safety figures (SPEC §13), apart from the capability ones, and the verdicts a graded source recorded.
fn safety<W: Write>(run: &RunData, o: &mut W) {
    let s = &run.summary;
    let safety = safety_rows(s);
    if !safety.is_empty() {
        let _ = writeln!(o, "## Safety (apart from the capability figures)\n");
        let _ = writeln!(o, "| figure | value (95% interval) | denominator |\n|---|---|---|");
        for (label, value, n) in safety {
            let _ = writeln!(o, "| {label} | {value} | {n} |");
        }
        let _ = writeln!(o);
    }
    if let Some(v) = &s.recorded_verdicts {
        let _ = writeln!(o, "## Recorded verdicts\n");
        for l in v.lines() {
            let _ = writeln!(o, "{}", cell(&l));
        }
        let _ = writeln!(o);
    }
}

/// The per-case table, failing cases first.
fn cases<W: Write>(run: &RunData, failed: &Failed<'_>, o: &mut W) -> Result<()> {
    let s = &run.summary;
    let kmax = k_max(s);
    let _ = writeln!(o, "## Cases\n");
    let hk = if kmax > 1 { format!(" pass^{kmax} |") } else { String::new() };
    let hk_rule = if kmax > 1 { "---|" } else { "" };
    // With monitors, each case's failure modes (a graded run's cases are its
    // items, named by trace id: the modes say what went wrong with each).
    let modes = !run.manifest.monitors.is_empty();
    let (hm, hm_rule) = if modes { (" failure modes |", "---|") } else { ("", "") };
    let _ = writeln!(
        o,
        "| case | n | accepted | pass^1 |{hk} failed | critical | grader err | infra err |{hm}\n|---|---|---|---|{hk_rule}---|---|---|---|{hm_rule}"
    );
    for i in worst_first(s) {
        let c = &s.cases[i];
        let hat = |k: u32| c.pass_hat(k);
        let kcol = if kmax > 1 { format!(" {} |", fmt_value(hat(kmax), true)) } else { String::new() };
        let mcol = if modes { format!(" {} |", cell(&super::text::case_modes(failed, i)?)) } else { String::new() };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} |{kcol} {} | {} | {} | {} |{mcol}",
            cell(&c.id),
            c.n,
            c.accepted,
            fmt_value(hat(1), true),
            c.count(Outcome::Failed),
            c.count(Outcome::Critical),
            c.count(Outcome::GraderError),
            c.count(Outcome::InfraError)
        );
    }
    let _ = writeln!(o);
    Ok(())
}

/// How the trials not accepted ended, each kind with its first trial.
fn endings<W: Write>(run: &RunData, o: &mut W) -> Result<()> {
    let endings = super::text::endings(run)?;
    if !endings.is_empty() {
        let n: usize = endings.iter().map(|e| e.count).sum();
        let _ = writeln!(o, "## How the trials not accepted ended\n");
        let _ = writeln!(o, "{}: {}\n", plural(n, "trial"), super::text::endings_counts(&endings));
        let _ = writeln!(o, "| ended | trials | first | its error | see it whole |\n|---|---|---|---|---|");
        for e in &endings {
            let mut why = e.why.clone().unwrap_or_default();
            if let Some(s) = &e.stderr {
                why.push_str(&format!(" — stderr: {s}"));
            }
            let _ = writeln!(
                o,
                "| {} | {} | {} #{} | {} | `{}` |",
                e.ended.as_str(),
                e.count,
                cell(&e.case),
                e.trial,
                cell(why.trim()),
                e.show_command(&super::text::stable_dir(run)).replace('`', "'")
            );
        }
        let _ = writeln!(o);
    }
    Ok(())
}

/// The worst cases (lowest accepted rate first), each failing trial with its failing checks.
fn worst<W: Write>(run: &RunData, failed: &Failed<'_>, o: &mut W) -> Result<()> {
    let s = &run.summary;
    // Worst cases: lowest accepted rate first (critical failures break ties), up to 10.
    let mut worst: Vec<usize> = (0..s.cases.len()).filter(|&i| s.cases[i].accepted < s.cases[i].n).collect();
    worst.sort_by(|&a, &b| {
        let ra = s.cases[a].accepted as f64 / s.cases[a].n.max(1) as f64;
        let rb = s.cases[b].accepted as f64 / s.cases[b].n.max(1) as f64;
        ra.total_cmp(&rb).then(s.cases[b].count(Outcome::Critical).cmp(&s.cases[a].count(Outcome::Critical)))
    });
    if !worst.is_empty() {
        let _ = writeln!(o, "## Worst cases\n");
        for &i in worst.iter().take(10) {
            let c = &s.cases[i];
            let _ = writeln!(o, "### {} — {} of {} accepted\n", c.id, c.accepted, c.n);
            for r in failed.of_case(i)?.iter().filter(|r| r.outcome != Outcome::InfraError) {
                let failing: Vec<String> = r
                    .checks
                    .iter()
                    .filter(|ch| matches!(ch.verdict(), Verdict::Fail | Verdict::Error))
                    .map(|ch| {
                        let what = match (&ch.error, ch.passed) {
                            (Some(e), None) => format!("error: {}", evidence_text(&serde_json::json!(e), 200)),
                            _ => evidence_text(&ch.evidence, 200),
                        };
                        format!("`{}`{}: {}", ch.name, if ch.critical { " (critical)" } else { "" }, cell(&what))
                    })
                    .collect();
                let _ = writeln!(
                    o,
                    "- trial {} [{}]({}) — {}: {}{}",
                    r.trial,
                    r.outcome.as_str(),
                    run.trace_link(r),
                    r.ended.as_str(),
                    // No failing check: why the agent did not end normally (a crash is never a pass).
                    if failing.is_empty() { cell(&super::text::why_not_accepted(r, 200)) } else { failing.join("; ") },
                    r.first_failure
                        .as_ref()
                        .map(|f| format!(" — first failing span: {}", cell(&first_failure_text(f))))
                        .unwrap_or_default()
                );
            }
            let _ = writeln!(o);
        }
    }
    Ok(())
}

/// Each check's pass rate.
fn checks<W: Write>(run: &RunData, o: &mut W) {
    let s = &run.summary;
    if !s.checks.is_empty() {
        let _ = writeln!(o, "## Checks\n");
        let _ = writeln!(
            o,
            "| check | critical | passed | failed | errors | skipped | pass rate |\n|---|---|---|---|---|---|---|"
        );
        for c in &s.checks {
            let t = &c.tally;
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {} |",
                cell(&t.name),
                if t.critical { "yes" } else { "" },
                t.passed,
                t.failed,
                t.errors,
                t.skipped,
                fmt_value(c.pass_rate, true)
            );
        }
        let _ = writeln!(o);
    }
}

/// Grader and infrastructure errors, counted apart.
fn errors<W: Write>(run: &RunData, failed: &Failed<'_>, o: &mut W) -> Result<()> {
    // Grader and infrastructure errors, and graded trials an infrastructure
    // failure cut short (listed with their outcome and what failed).
    let errors: Vec<_> = run.failed.iter().filter(|f| f.counted_apart).collect();
    let _ = writeln!(o, "## Errors (counted apart)\n");
    if errors.is_empty() {
        let _ = writeln!(o, "No grader or infrastructure errors.");
    }
    for at in errors {
        let r = &failed.read(at)?;
        let why = r.error.clone().or_else(|| r.checks.iter().find_map(|c| c.error.clone())).unwrap_or_default();
        let outcome = match r.outcome {
            Outcome::GraderError | Outcome::InfraError => r.outcome.as_str().to_string(),
            other => format!("{} (infra error after the agent started)", other.as_str()),
        };
        let _ = writeln!(
            o,
            "- {} {}#{} ([trace]({})): {}",
            outcome,
            cell(&r.case),
            r.trial,
            run.trace_link(r),
            cell(&super::text::truncate(&why, 300))
        );
    }
    Ok(())
}
