//! What every report shares: suite figures as rows with intervals and
//! denominators, gate lines, values and evidence as short text.

use crate::record::{Ended, FirstFailure, Outcome, TrialRecord, Verdict as CheckVerdict};
use crate::spec::gate::{self, Metric, On, Verdict};
use crate::stats::safety::SafetyFigure;
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

/// `[low, high]` of a rate's interval, each bound written by `fmt`; None
/// without both bounds.
pub fn bounds_text(low: Option<f64>, high: Option<f64>, fmt: impl Fn(Option<f64>) -> String) -> Option<String> {
    match (low, high) {
        (Some(l), Some(h)) => Some(format!("[{}, {}]", fmt(Some(l)), fmt(Some(h)))),
        _ => None,
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

/// The safety figures as rows: (label, value with interval, n) — SPEC §13.
pub fn safety_rows(summary: &Summary) -> Vec<(&'static str, String, String)> {
    summary.safety.as_ref().map(safety_figure_rows).unwrap_or_default()
}

/// The safety figures' rows, in AgentDojo's terms: utility, utility under
/// attack, targeted attack success rate (the attacker's own goal reached).
pub fn safety_figure_rows(s: &crate::stats::safety::Safety) -> Vec<(&'static str, String, String)> {
    let pct = |v: Option<f64>| fmt_value(v, true);
    let row = |label: &'static str, f: &SafetyFigure, unit: &str| {
        let iv = bounds_text(f.low, f.high, pct).map(|b| format!(" {b}")).unwrap_or_default();
        (label, format!("{}{iv}", pct(f.value)), format!("n = {} {unit}, {} cases", f.n, f.cases))
    };
    vec![
        row("utility", &s.utility, "trials"),
        row("utility under attack", &s.utility_under_attack, "trials"),
        row("targeted attack success rate", &s.attack_success_rate, "trials"),
        row("attempted forbidden call", &s.attempted, "trials"),
        row("forbidden calls blocked", &s.blocked, "calls"),
    ]
}

/// How a gate verdict reads in a report: rates as percentages, counts as
/// whole numbers, cost in dollars, latency in ms.
pub fn gate_line(g: &Verdict) -> String {
    let on = match g.on {
        On::Point => "",
        On::Lower => " (95% lower bound)",
        On::Upper => " (95% upper bound)",
    };
    let parsed = gate::from_manifest(&g.name, 0.0, On::Point).ok();
    let metric = parsed.as_ref().map(|x| x.metric);
    // A difference between agents is in points, signed, as the pair lines show it.
    let delta = parsed.as_ref().and_then(|x| match &x.scope {
        gate::Scope::Delta { pair } => Some(pair.clone()),
        gate::Scope::Drop(p) => Some(format!("{}-{p}", crate::spec::BASELINE)),
        _ => None,
    });
    let show = |v: f64| -> String {
        if !v.is_finite() {
            return "∞".to_string();
        }
        match metric {
            Some(Metric::PassHat(_) | Metric::PassAt(_) | Metric::Accepted) if delta.is_some() => {
                let v = if v.abs() < 1e-9 { 0.0 } else { v };
                format!("{}{:.1} pt", if v >= 0.0 { "+" } else { "−" }, v.abs() * 100.0)
            }
            Some(
                Metric::PassHat(_) | Metric::PassAt(_) | Metric::Accepted | Metric::UserNonadherence | Metric::Recovery,
            ) => {
                format!("{:.1}%", v * 100.0)
            }
            Some(Metric::CriticalFailures | Metric::GraderErrors | Metric::InfraErrors | Metric::SkippedChecks) => {
                format!("{}", v.round() as i64)
            }
            Some(Metric::CostPerAccepted) => format!("${v:.4}"),
            Some(Metric::P50Ms | Metric::P95Ms) => format!("{v:.0} ms"),
            Some(Metric::JudgeKappa) => format!("{v:.3}"),
            None => format!("{v:.4}"),
        }
    };
    let value = match g.value {
        Some(v) if v.is_nan() => "undefined".to_string(),
        Some(v) => show(v),
        None => "undefined".to_string(),
    };
    // Which way the difference goes: `CANDIDATE-BASE` is the candidate minus the base.
    let value = match &delta {
        // Names may hold `-` themselves: spelled out only when the split is plain.
        Some(pair) if value != "undefined" && pair.matches('-').count() == 1 => {
            format!("{value} ({})", pair.replacen('-', " − ", 1))
        }
        Some(_) if value != "undefined" => format!("{value} (candidate − base)"),
        _ => value,
    };
    let cmp = if parsed.as_ref().is_none_or(|x| x.is_minimum()) { "≥" } else { "≤" };
    if g.undefined {
        return format!(
            "UNDEFINED {}{on}: required {cmp} {}{}",
            g.name,
            show(g.threshold),
            g.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default()
        );
    }
    format!(
        "{} {}{on}: {value}, required {cmp} {}{}",
        if g.passed { "PASS" } else { "FAIL" },
        g.name,
        show(g.threshold),
        g.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default()
    )
}

/// The gates' verdict in a few words: `all 3 passed`, `1 of 3 FAILED`, with
/// the ones not decided (undefined figures) said apart.
pub fn gates_headline(gates: &[Verdict]) -> String {
    let failed = gates.iter().filter(|g| !g.passed).count();
    let undefined = gates.iter().filter(|g| g.undefined).count();
    let decided = gates.len() - undefined;
    let head = match (failed, decided) {
        (0, 0) => String::new(),
        (0, d) if d == gates.len() => format!("all {d} passed"),
        (0, d) => format!("{d} passed"),
        (f, d) => format!("{f} of {d} FAILED"),
    };
    match (head.is_empty(), undefined) {
        (_, 0) => head,
        (true, u) => format!("{u} not decided (undefined for this input)"),
        (false, u) => format!("{head}, {u} not decided (undefined for this input)"),
    }
}

/// The first line of every report of an incomplete run (None when complete).
pub fn incomplete_line(run: &RunData) -> Option<String> {
    if run.complete() {
        return None;
    }
    let c = &run.coverage;
    Some(format!(
        "INCOMPLETE run: {} of {} planned trials recorded{}{}; the figures cover only what ran{}",
        c.recorded.saturating_sub(c.interrupted),
        c.planned,
        if c.interrupted > 0 { format!(", {} interrupted", c.interrupted) } else { String::new() },
        if run.summary_present { "" } else { " (no summary.json: the run did not reach its end)" },
        if run.allow_incomplete { " (gates decided on them: --allow-incomplete)" } else { " and no gate passes" }
    ))
}

/// Case indices, failing cases first: lowest accepted rate first, more
/// critical failures first among equals, then declaration order; cases that
/// accepted every trial keep their order at the end.
pub fn worst_first(summary: &Summary) -> Vec<usize> {
    let cases = &summary.cases;
    let rate = |i: usize| if cases[i].n == 0 { 1.0 } else { cases[i].accepted as f64 / cases[i].n as f64 };
    let crit = |i: usize| cases[i].count(Outcome::Critical);
    let failing = |i: usize| cases[i].accepted < cases[i].n || cases[i].count(Outcome::InfraError) > 0;
    let mut idx: Vec<usize> = (0..cases.len()).collect();
    idx.sort_by(|&a, &b| {
        failing(b)
            .cmp(&failing(a))
            .then_with(|| if failing(a) { rate(a).total_cmp(&rate(b)) } else { std::cmp::Ordering::Equal })
            .then_with(|| crit(b).cmp(&crit(a)))
            .then(a.cmp(&b))
    });
    idx
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

/// Beside the infra-error count: graded trials whose agent an infrastructure
/// failure cut short after it had acted (nothing when there are none).
pub fn after_start(n: u32) -> String {
    if n == 0 { String::new() } else { format!(" (and {n} after the agent started, graded)") }
}

/// The counts kept apart from the figures, as the console and report.md say them.
pub fn counted_apart(f: &crate::stats::SuiteFigures) -> String {
    let na = if f.not_applicable_checks > 0 {
        format!(", not applicable {} (need state a trace has not)", f.not_applicable_checks)
    } else {
        String::new()
    };
    format!(
        "critical failures {}, grader errors {}, infra errors {}{}, skipped checks {}{na}",
        f.critical_failures,
        f.grader_errors,
        f.infra_errors,
        after_start(f.infra_errors_after_start),
        f.skipped_checks,
    )
}

/// A ratio to the reference with its interval: `1.50× [1.00×, 2.00×]`.
pub fn ratio_text(r: &crate::stats::efficiency::Ratio) -> String {
    format!("{:.2}× [{:.2}×, {:.2}×]", r.median, r.lower, r.upper)
}

/// The efficiency figures as rows: (what, over all trials that ran, over the
/// accepted ones), each a median ratio with its interval and denominators.
/// Empty when no case declares a reference.
pub fn efficiency_rows(summary: &Summary) -> Vec<(&'static str, String, String)> {
    let Some(e) = &summary.efficiency else { return Vec::new() };
    let text = |r: &Option<crate::stats::efficiency::Ratio>| match r {
        Some(r) => format!(
            "{} ({} trials, {} cases)",
            ratio_text(r),
            r.trials,
            r.cases.map(|c| c.to_string()).unwrap_or_else(|| "–".into())
        ),
        None => "–".to_string(),
    };
    let mut rows = Vec::new();
    for (label, all, acc) in [
        ("tool calls requested", &e.all.calls, &e.accepted.calls),
        ("tool calls executed", &e.all.executed_calls, &e.accepted.executed_calls),
        ("tokens", &e.all.tokens, &e.accepted.tokens),
    ] {
        if all.is_some() || acc.is_some() {
            rows.push((label, text(all), text(acc)));
        }
    }
    rows
}

/// An accepted trial over its reference in one line:
/// `case#3: 9 calls (3.00× the reference's 3), 1200 tokens (1.20×); above 2×`.
pub fn over_reference_text(o: &crate::stats::efficiency::OverReference) -> String {
    let mut parts = vec![format!("{} calls", o.calls)];
    if let Some(r) = o.calls_ratio {
        parts[0].push_str(&format!(" ({r:.2}× the reference)"));
    }
    if let Some(r) = o.tokens_ratio {
        parts.push(format!("{} tokens ({r:.2}×)", o.tokens));
    }
    format!("{}#{}: {}; above {}×", o.case, o.trial, parts.join(", "), o.max_ratio)
}

/// How the trials that were not accepted ended (`crashed`, `deadline`,
/// `protocol_error`, `final` …), with the first such trial in brief: what a
/// reader needs to see why trials failed without opening each one.
#[derive(Debug, Clone)]
pub struct Ending {
    pub ended: Ended,
    pub count: usize,
    /// The first trial that ended this way (trials.jsonl order).
    pub case: String,
    pub trial: u32,
    /// Its error line: why the agent did not end normally, what the harness
    /// failed to provide, or (for a trial that ended normally) its first
    /// failing check.
    pub why: Option<String>,
    /// A crash's last line on stderr.
    pub stderr: Option<String>,
}

impl Ending {
    /// The command that prints the trial whole.
    pub fn show_command(&self, run_dir: &std::path::Path) -> String {
        format!(
            "evalua show {} {} {}",
            crate::util::paths::shell_word(&run_dir.display().to_string()),
            crate::util::paths::shell_word(&self.case),
            self.trial
        )
    }
}

/// The run dir as the report files name it: its absolute path, the same
/// whichever folder `evalua run` or `evalua report` ran in.
pub fn stable_dir(run: &RunData) -> std::path::PathBuf {
    std::fs::canonicalize(&run.dir).unwrap_or_else(|_| run.dir.clone())
}

/// The first line of a text, trimmed and cut to `max` characters.
fn first_line(s: &str, max: usize) -> Option<String> {
    let l = s.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(truncate(l, max))
}

/// The endings of the run's non-accepted trials, most frequent first (then by
/// name); each with its first trial's error line and, for a crash, the last
/// line of its stderr. Reads one record (and one trace) per ending.
pub fn endings(run: &RunData) -> crate::error::Result<Vec<Ending>> {
    let mut counts: Vec<(Ended, usize, usize)> = Vec::new(); // (ended, count, first index in run.failed)
    for (j, f) in run.failed.iter().enumerate() {
        match counts.iter_mut().find(|(e, _, _)| *e == f.ended) {
            Some(c) => c.1 += 1,
            None => counts.push((f.ended, 1, j)),
        }
    }
    if counts.is_empty() {
        return Ok(Vec::new());
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.as_str().cmp(b.0.as_str())));
    let failed = run.failed()?;
    let mut out = Vec::new();
    for (ended, count, j) in counts {
        let rec = failed.read(&run.failed[j])?;
        let why = match ended {
            Ended::Final => rec
                .checks
                .iter()
                .find(|c| c.verdict() == CheckVerdict::Fail)
                .map(|c| {
                    let ev = evidence_text(&c.evidence, 160);
                    if ev.is_empty() {
                        format!("check '{}' failed", c.name)
                    } else {
                        format!("check '{}' failed: {ev}", c.name)
                    }
                })
                .or_else(|| {
                    rec.checks.iter().find(|c| c.verdict() == CheckVerdict::Error).map(|c| {
                        format!(
                            "check '{}' raised: {}",
                            c.name,
                            first_line(c.error.as_deref().unwrap_or(""), 200).unwrap_or_default()
                        )
                    })
                }),
            _ => rec.error.as_deref().or(rec.infra_error.as_deref()).and_then(|e| first_line(e, 240)),
        };
        let stderr = if ended == Ended::Crashed {
            run.trace(&rec)
                .and_then(|t| t.stderr_tail)
                .and_then(|s| s.lines().rev().map(str::trim).find(|l| !l.is_empty()).map(|l| truncate(l, 240)))
        } else {
            None
        };
        out.push(Ending { ended, count, case: rec.case, trial: rec.trial, why, stderr });
    }
    Ok(out)
}

/// Why a trial was not accepted, in a line: its failing checks (critical
/// first, each with its evidence or error), else why its agent did not end
/// normally, else what the harness failed to provide. Each part cut to `max`.
pub fn why_not_accepted(r: &TrialRecord, max: usize) -> String {
    let mut checks: Vec<_> =
        r.checks.iter().filter(|c| matches!(c.verdict(), CheckVerdict::Fail | CheckVerdict::Error)).collect();
    checks.sort_by_key(|c| !(c.critical && c.verdict() == CheckVerdict::Fail));
    let mut parts: Vec<String> = checks
        .iter()
        .map(|c| {
            let what = match (&c.error, c.verdict()) {
                (Some(e), CheckVerdict::Error) => format!("raised: {}", first_line(e, max).unwrap_or_default()),
                _ => evidence_text(&c.evidence, max),
            };
            let critical = if c.critical { " (critical)" } else { "" };
            if what.is_empty() {
                format!("'{}'{critical} failed", c.name)
            } else {
                format!("'{}'{critical}: {what}", c.name)
            }
        })
        .collect();
    // An abnormal end fails the trial whatever its checks say: say why it ended so.
    if parts.is_empty() || r.ended.abnormal() {
        let why = r.error.as_deref().or(r.infra_error.as_deref()).and_then(|e| first_line(e, max));
        if let Some(why) = why {
            parts.insert(0, why);
        }
    }
    if parts.is_empty() { "no failing check".to_string() } else { parts.join("; ") }
}

/// The failure modes of case `i`'s non-accepted trials, each with the number
/// of trials it labelled, most frequent first: `missing_identity_verification ×3`.
pub fn case_modes(failed: &crate::stats::rundata::Failed<'_>, i: usize) -> crate::error::Result<String> {
    let mut counts: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for at in failed.places(i) {
        for m in failed.read(at)?.failure_modes.unwrap_or_default() {
            *counts.entry(m).or_default() += 1;
        }
    }
    let mut v: Vec<(String, usize)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok(v.into_iter().map(|(m, n)| if n > 1 { format!("{m} ×{n}") } else { m }).collect::<Vec<_>>().join(", "))
}

/// `crashed 3, deadline 1, protocol_error 1`.
pub fn endings_counts(endings: &[Ending]) -> String {
    endings.iter().map(|e| format!("{} {}", e.ended.as_str(), e.count)).collect::<Vec<_>>().join(", ")
}
