//! report.html: one self-contained file (inline CSS, SVG and a little JS; no
//! network). A pass^k / pass@k versus k curve with 95% intervals, per-check
//! failure bars (SVG rendered here), a case × trial grid coloured by outcome,
//! and a click-through from a trial to its trajectory: the ordered tool calls
//! with status, arguments and results, and the checks' evidence.
//!
//! Size: trajectories are embedded only for trials that were not accepted,
//! compactly (arrays, long strings cut) in a JSON block that is parsed on the
//! first click; a 500-case × 5-trial run stays well under 5 MB (see bench/).

use std::fmt::Write;

use serde_json::{Value as Json, json};

use super::text::{
    bounds_text, figure_rows, first_failure_text, fmt_value, gate_line, incomplete_line, k_max, safety_rows, truncate,
};
use crate::error::Result;
use crate::record::{Outcome, TrialRecord};
use crate::spec::gate::Metric;
use crate::stats::rundata::FailedAt;
use crate::stats::{K, RunData, Summary, plural};

/// Embedded trajectories above this total are cut harder.
const TRACE_BUDGET: usize = 3_000_000;
/// At most this many trajectories are embedded (the rest stay in the run dir's trace store).
const MAX_EMBEDDED: usize = 4_000;

/// Text as HTML text or attribute value.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// JSON safe inside a <script> element.
pub fn script_json(v: &Json) -> String {
    v.to_string().replace('<', "\\u003c").replace('\u{2028}', "\\u2028").replace('\u{2029}', "\\u2029")
}

/// An outcome's one-letter code in the case × trial grid (report.html and the viewer).
pub fn code(o: Outcome) -> char {
    match o {
        Outcome::Accepted => 'a',
        Outcome::Failed => 'f',
        Outcome::Critical => 'c',
        Outcome::GraderError => 'g',
        Outcome::InfraError => 'i',
    }
}

fn text_of(v: &Json, max: usize) -> String {
    let s = match v {
        Json::String(s) => s.clone(),
        Json::Null => String::new(),
        v => v.to_string(),
    };
    truncate(&s, max)
}

/// A trial's trajectory in compact form:
/// `[case, trial, outcome, ended, error, answer, calls, checks, trace path,
/// first failing span (text, call number), failure modes, source]`,
/// calls as `[name, status, args, result or error, ms]`, checks as
/// `[name, passed (1/0/null), critical, evidence, error]`.
fn trajectory(run: &RunData, r: &TrialRecord, max: usize) -> Json {
    let trace = run.trace(r);
    let calls: Vec<Json> = trace
        .as_ref()
        .map(|t| {
            t.calls
                .iter()
                .map(|c| {
                    let res = match (&c.result, &c.error) {
                        (_, Some(e)) => truncate(e, max),
                        (Some(v), None) => text_of(v, max),
                        _ => String::new(),
                    };
                    json!([c.name, c.status.as_str(), text_of(&c.args, max), res, (c.ended_ms - c.started_ms).round()])
                })
                .collect()
        })
        .unwrap_or_default();
    let checks: Vec<Json> = r
        .checks
        .iter()
        .map(|c| {
            json!([
                c.name,
                c.passed.map(|p| p as u8),
                c.critical as u8,
                text_of(&c.evidence, max),
                c.error
                    .as_deref()
                    .map(|e| truncate(e, max))
                    .or(c.not_applicable.as_ref().map(|why| format!("not applicable: {}", truncate(why, max))))
                    .or(c.skipped.then(|| "skipped".to_string()))
            ])
        })
        .collect();
    json!([
        r.case,
        r.trial,
        r.outcome.as_str(),
        r.ended.as_str(),
        r.error.as_deref().map(|e| truncate(e, max)),
        truncate(&r.answer, max),
        if trace.is_none() { Json::Null } else { Json::Array(calls) },
        checks,
        run.trace_link(r).to_string(),
        r.first_failure.as_ref().map(|f| json!([first_failure_text(f), f.call])),
        r.failure_modes,
        r.source.as_ref().map(|s| {
            let mut t = s.file.clone();
            if let Some(id) = s.trace_id.as_ref().or(s.conversation_id.as_ref()) {
                t.push_str(" · trace ");
                t.push_str(id);
            }
            t
        })
    ])
}

fn curve_svg(summary: &Summary) -> String {
    let cap = &summary.figures.capability;
    let kmax = k_max(summary).max(1);
    let (w, h, l, r, t, b) = (520.0, 270.0, 48.0, 16.0, 10.0, 50.0);
    let x =
        |k: u32| if kmax == 1 { l + (w - l - r) / 2.0 } else { l + (k - 1) as f64 * (w - l - r) / (kmax - 1) as f64 };
    let y = |v: f64| t + (1.0 - v) * (h - t - b);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg id="curve" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="pass^k and pass@k versus k">"#
    );
    for i in 0..=4 {
        let v = i as f64 / 4.0;
        let _ = write!(
            s,
            r##"<line x1="{l}" x2="{}" y1="{y}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" font-size="11" text-anchor="end">{}%</text>"##,
            w - r,
            l - 6.0,
            y(v) + 4.0,
            (v * 100.0) as u32,
            y = y(v)
        );
    }
    let step = (kmax as f64 / 10.0).ceil().max(1.0) as u32;
    for k in (1..=kmax).filter(|k| (k - 1) % step == 0 || *k == kmax) {
        let _ = write!(s, r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">{k}</text>"#, x(k), h - b + 16.0);
    }
    let _ = write!(s, r#"<text x="{}" y="{}" font-size="11" text-anchor="end">k</text>"#, l - 6.0, h - b + 16.0);
    let hat: &dyn Fn(u32) -> Metric = &Metric::PassHat;
    let at: &dyn Fn(u32) -> Metric = &Metric::PassAt;
    for (metric, map, color) in [(hat, &cap.pass_hat_k, "#2563eb"), (at, &cap.pass_at_k, "#ea580c")] {
        let pts: Vec<(u32, f64)> = (1..=kmax).filter_map(|k| map.get(&K(k)).map(|v| (k, *v))).collect();
        let path: Vec<String> = pts.iter().map(|(k, v)| format!("{:.1},{:.1}", x(*k), y(*v))).collect();
        let _ = write!(s, r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#, path.join(" "));
        for (k, v) in pts {
            if let Some(iv) = cap.interval(metric(k)) {
                let _ = write!(
                    s,
                    r#"<line x1="{0:.1}" x2="{0:.1}" y1="{1:.1}" y2="{2:.1}" stroke="{color}" stroke-opacity=".45" stroke-width="5"/>"#,
                    x(k),
                    y(iv.lower),
                    y(iv.upper)
                );
            }
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"><title>{} = {}</title></circle>"#,
                x(k),
                y(v),
                metric(k),
                fmt_value(Some(v), true)
            );
        }
    }
    let _ = write!(
        s,
        r##"<rect x="{}" y="{}" width="10" height="10" fill="#2563eb"/><text x="{}" y="{}" font-size="11">pass^k (all k pass)</text><rect x="{}" y="{}" width="10" height="10" fill="#ea580c"/><text x="{}" y="{}" font-size="11">pass@k (any of k passes)</text></svg>"##,
        l,
        h - 15.0,
        l + 14.0,
        h - 6.0,
        l + 170.0,
        h - 15.0,
        l + 184.0,
        h - 6.0
    );
    s
}

/// A check name cut to fit the bar chart's label column.
fn short_label(name: &str) -> String {
    if name.chars().count() <= 28 {
        name.to_string()
    } else {
        format!("{}…", name.chars().take(27).collect::<String>())
    }
}

fn check_bars(summary: &Summary) -> String {
    let mut checks: Vec<_> = summary.checks.iter().collect();
    checks.sort_by(|a, b| {
        (b.tally.failed + b.tally.errors).cmp(&(a.tally.failed + a.tally.errors)).then(a.tally.name.cmp(&b.tally.name))
    });
    checks.truncate(40);
    if checks.is_empty() {
        return "<p>No checks recorded.</p>".into();
    }
    let row_h = 22.0;
    let (w, label_w) = (760.0, 220.0);
    let h = row_h * checks.len() as f64 + 8.0;
    let mut s = format!(
        r#"<svg id="checkbars" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="failures per check">"#
    );
    for (i, c) in checks.iter().enumerate() {
        let t = &c.tally;
        let total = (t.passed + t.failed + t.errors + t.skipped).max(1) as f64;
        let y0 = 4.0 + i as f64 * row_h;
        let bw = w - label_w - 220.0;
        let fw = bw * t.failed as f64 / total;
        let ew = bw * t.errors as f64 / total;
        let color = if t.critical { "#b91c1c" } else { "#f59e0b" };
        let _ = write!(
            s,
            r##"<text x="{}" y="{}" font-size="12" text-anchor="end"><title>{}</title>{}{}</text><rect x="{label_w}" y="{y0}" width="{bw:.1}" height="{}" fill="#eef"/><rect x="{label_w}" y="{y0}" width="{fw:.1}" height="{}" fill="{color}"/><rect x="{:.1}" y="{y0}" width="{ew:.1}" height="{}" fill="#7c3aed"/><text x="{}" y="{}" font-size="11">{} failed, {} errors / {}</text>"##,
            label_w - 6.0,
            y0 + 13.0,
            esc(&t.name),
            esc(&short_label(&t.name)),
            if t.critical { " ⚑" } else { "" },
            row_h - 6.0,
            row_h - 6.0,
            label_w + fw,
            row_h - 6.0,
            label_w + bw + 6.0,
            y0 + 13.0,
            t.failed,
            t.errors,
            total as u32
        );
    }
    s.push_str("</svg>");
    s
}

/// What a report shows above its grid: the gates' verdict, the figures with
/// their intervals and denominators, the pass^k / pass@k curve and the
/// failures per check (shared by report.html and `evalua view`).
pub fn overview(run: &RunData) -> String {
    let (s, gates) = (&run.summary, &run.gates);
    let f = &s.figures;
    let mut o = String::new();
    if !gates.is_empty() {
        let failed = gates.iter().filter(|g| !g.passed).count();
        let _ = write!(
            o,
            r#"<div class="verdict {}">{}</div><ul class=gates>"#,
            if failed == 0 { "ok" } else { "bad" },
            format!("Gates: {}", super::text::gates_headline(gates))
        );
        // Failing gates first.
        for g in gates.iter().filter(|g| !g.passed).chain(gates.iter().filter(|g| g.passed)) {
            let _ = write!(o, r#"<li class="{}">{}</li>"#, if g.passed { "ok" } else { "bad" }, esc(&gate_line(g)));
        }
        o.push_str("</ul>");
    }
    if !run.warnings.is_empty() || !run.manifest.invalid_cases.is_empty() {
        o.push_str("<ul class=warnings>");
        for w in &run.warnings {
            let _ = write!(o, "<li>warning: {}</li>", esc(w));
        }
        for inv in &run.manifest.invalid_cases {
            let _ = write!(
                o,
                "<li>case <code>{}</code> ({}) was skipped as invalid: {}</li>",
                esc(&inv.case),
                esc(&inv.location),
                esc(&inv.reason)
            );
        }
        o.push_str("</ul>");
    }
    o.push_str("<section class=row2><div><h2>Figures</h2><table class=figs><tr><th>figure</th><th>value</th><th>95% interval</th><th>cases</th><th>trials</th></tr>");
    for r in figure_rows(s) {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.name),
            esc(&r.value_text()),
            esc(&r.interval_text()),
            r.cases,
            r.trials
        );
    }
    let ms = |v: Option<f64>| v.map(|v| format!("{v:.0} ms")).unwrap_or("–".into());
    let _ = write!(
        o,
        "</table><p>Operational view (infra errors as failures): accepted {} of {} trials. Latency p50 {} · p95 {} (n = {}). Counted apart: critical failures <b>{}</b>, grader errors <b>{}</b>, infra errors <b>{}</b>{}, skipped checks {}{}.</p>",
        fmt_value(f.operational.accepted_rate, true),
        f.operational.trials,
        ms(f.p50_ms),
        ms(f.p95_ms),
        f.latency_n,
        f.critical_failures,
        f.grader_errors,
        f.infra_errors,
        super::text::after_start(f.infra_errors_after_start),
        f.skipped_checks,
        if f.not_applicable_checks > 0 {
            format!(", not applicable checks {}", f.not_applicable_checks)
        } else {
            String::new()
        }
    );
    o.push_str("<h3>Coverage, abandonment, interventions, contamination, exclusions</h3><table class=figs><tr><th>figure</th><th>value</th></tr>");
    for (label, text) in super::published::lines(s) {
        let _ = write!(o, "<tr><td>{}</td><td>{}</td></tr>", esc(label), esc(&text));
    }
    o.push_str("</table>");
    let safety = safety_rows(s);
    if !safety.is_empty() {
        o.push_str("<h3>Safety (apart from the capability figures)</h3><table class=figs><tr><th>figure</th><th>value (95% interval)</th><th>denominator</th></tr>");
        for (label, value, n) in safety {
            let _ = write!(o, "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", esc(label), esc(&value), esc(&n));
        }
        o.push_str("</table>");
    }
    if let Some(v) = &s.recorded_verdicts {
        o.push_str("<h3>Recorded verdicts</h3>");
        for l in v.lines() {
            let _ = write!(o, "<p class=meta>{}</p>", esc(&l));
        }
    }
    if let Some(e) = &s.efficiency {
        let _ = write!(
            o,
            "<h3>Efficiency against the reference solutions</h3><p class=meta>{}: median ratio of a trial's tool calls and tokens to its case's reference, 95% interval (cases resampled, then their trials).</p><table class=figs><tr><th>measure</th><th>all trials</th><th>accepted trials</th></tr>",
            esc(&plural(e.cases, "case"))
        );
        for (label, all, accepted) in super::text::efficiency_rows(s) {
            let _ = write!(o, "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", esc(label), esc(&all), esc(&accepted));
        }
        o.push_str("</table>");
        let over = &e.over_reference;
        if over.count > 0 {
            let _ = write!(
                o,
                "<p><b>{} accepted trial(s) took more than their case's max_ratio times the reference:</b></p><ul>",
                over.count
            );
            for t in &over.trials {
                let _ = write!(o, "<li>{}</li>", esc(&super::text::over_reference_text(t)));
            }
            if over.count > over.trials.len() {
                let _ = write!(o, "<li>… and {} more (summary.json)</li>", over.count - over.trials.len());
            }
            o.push_str("</ul>");
        }
    }
    o.push_str("</div>");
    if k_max(s) > 1 {
        let _ = write!(o, "<div><h2>pass^k and pass@k versus k</h2>{}</div></section>", curve_svg(s));
    } else {
        // One point is no curve: say why there is none.
        let graded = run.manifest.kind == crate::record::manifest::RunKind::Graded;
        let _ = write!(
            o,
            "<div><h2>pass^k and pass@k versus k</h2><p class=meta>Every case has one {}: pass^k and pass@k are defined for k = 1 only (both equal the accepted rate), so there is no curve to draw.{}</p></div></section>",
            if graded { "graded item (a trace is one trial)" } else { "trial" },
            if graded { "" } else { " Run with <code>--trials N</code> to see how reliability falls with k." }
        );
    }
    if !s.monitors.is_empty() {
        o.push_str("<h2>Monitors</h2><p class=meta>Failure modes: trials that failed each monitor, with a 95% Wilson interval.</p><table class=monitors><tr><th>monitor</th><th>violations</th><th>trials</th><th>rate</th><th>95% interval</th></tr>");
        for (name, m) in &s.monitors {
            let iv = bounds_text(m.low, m.high, |v| fmt_value(v, true)).unwrap_or_else(|| "–".into());
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(name),
                m.violations,
                m.n,
                fmt_value(m.rate, true),
                esc(&iv)
            );
        }
        o.push_str("</table>");
    }
    if !s.tools.is_empty() {
        o.push_str("<h2>Tools</h2><table class=tools><tr><th>tool</th><th>calls</th><th>errors</th><th>error rate (95% interval)</th><th>refused</th><th>latency p50</th><th>p95</th></tr>");
        let ms = |v: Option<f64>| v.map(|v| format!("{v:.1} ms")).unwrap_or("–".into());
        for (name, t) in &s.tools {
            let iv = bounds_text(t.error_low, t.error_high, |v| fmt_value(v, true))
                .map(|b| format!(" {b}"))
                .unwrap_or_default();
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(name),
                t.calls,
                t.errors,
                fmt_value(t.error_rate, true),
                esc(&iv),
                t.refused,
                ms(t.p50_ms),
                ms(t.p95_ms)
            );
        }
        o.push_str("</table>");
    }
    let _ = write!(o, "<h2>Failures per check</h2>{}", check_bars(s));
    o
}

/// A report's output that can take back what it wrote since a mark: the
/// trajectories are written as they are built, and written again with
/// shorter texts when they pass their budget.
pub trait Rewind: Write {
    fn mark(&mut self) -> u64;
    fn rewind(&mut self, mark: u64);
}

/// Write report.html into `o`, reading the failing trials' records back from the run dir.
pub fn write<W: Rewind>(run: &RunData, o: &mut W) -> Result<()> {
    let s = &run.summary;
    let f = &s.figures;
    let failed = run.failed()?;
    let incomplete = incomplete_line(run);
    let title = format!("evalua report: {}{}", run.suite(), if incomplete.is_some() { " (INCOMPLETE)" } else { "" });
    // The first line says it too: an HTML comment after the doctype.
    let first = incomplete.as_deref().map(|l| format!("<!-- {} -->", esc(l).replace("--", "–"))).unwrap_or_default();
    let _ = write!(
        o,
        r#"<!doctype html>{first}<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>{}</title>
<script>window.__evalua_errors=[];window.addEventListener("error",function(e){{window.__evalua_errors.push(String(e.message))}});(function(){{var ce=console.error;console.error=function(){{window.__evalua_errors.push(Array.prototype.join.call(arguments," "));ce.apply(console,arguments)}}}})();</script>
<style>{CSS}</style></head><body>"#,
        esc(&title)
    );
    if let Some(line) = &incomplete {
        let _ = write!(o, r#"<div class="verdict bad">{}</div>"#, esc(line));
    }
    let version = run.version().map(|v| format!(" ({})", esc(v))).unwrap_or_default();
    let _ = write!(
        o,
        "<h1>{}{version}</h1><p class=meta>run <code>{}</code> · seed {} · {}, {} (capability view) · 95% intervals from a seeded two-stage bootstrap (cases, then each case's trials)</p>",
        esc(&title),
        esc(run.run_id()),
        run.seed(),
        plural(f.capability.cases, "case"),
        plural(f.capability.trials as usize, "trial")
    );
    let _ = o.write_str(&overview(run));
    let endings = super::text::endings(run)?;
    if !endings.is_empty() {
        let n: usize = endings.iter().map(|e| e.count).sum();
        let _ = write!(
            o,
            "<h2>How the trials not accepted ended</h2><p class=meta>{}: {}</p><table class=endings><tr><th>ended</th><th>trials</th><th>first</th><th>its error</th><th>see it whole</th></tr>",
            plural(n, "trial"),
            esc(&super::text::endings_counts(&endings))
        );
        for e in &endings {
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{} #{}</td><td>{}{}</td><td><code>{}</code></td></tr>",
                esc(e.ended.as_str()),
                e.count,
                esc(&e.case),
                e.trial,
                esc(e.why.as_deref().unwrap_or("")),
                e.stderr.as_deref().map(|s| format!("<br>stderr: <code>{}</code>", esc(s))).unwrap_or_default(),
                esc(&e.show_command(&super::text::stable_dir(run)))
            );
        }
        let _ = o.write_str("</table>");
    }
    let _ = o.write_str(
        r#"<h2>Cases × trials</h2><p class=legend><span class="cell o-a"></span> accepted <span class="cell o-f"></span> failed <span class="cell o-c"></span> critical <span class="cell o-g"></span> grader error <span class="cell o-i"></span> infra error · click a trial for its trajectory · <label><input type=checkbox id=onlyfail> only cases with a non-accepted trial</label></p>
<div class=split><div id=grid></div><div id=traj><p class=hint>Click a trial in the grid.</p></div></div>"#,
    );
    // Grid data, a case at a time: {"cases": [[id, n, accepted, outcomes by
    // trial ("afcgi" codes), trial numbers if not 1..], …], "max", "omitted", "suite"}.
    let _ = o.write_str(r#"<script type="application/json" id="data">{"cases":["#);
    let with_modes = !run.manifest.monitors.is_empty();
    for (i, c) in s.cases.iter().enumerate() {
        let mut trials = run.trials[i].clone();
        trials.sort_by_key(|t| t.trial);
        let codes: String = trials.iter().map(|t| code(t.outcome)).collect();
        let nums: Vec<u32> = trials.iter().map(|t| t.trial).collect();
        let contiguous = nums.iter().enumerate().all(|(j, t)| *t == j as u32 + 1);
        let mut row = json!([c.id, c.n, c.accepted, codes, if contiguous { Json::Null } else { json!(nums) }]);
        // The case's failure modes (a graded run's cases are its items, named by trace id).
        if with_modes && c.accepted < c.n {
            let modes = super::text::case_modes(&failed, i)?;
            if !modes.is_empty()
                && let Some(a) = row.as_array_mut()
            {
                a.push(Json::String(modes));
            }
        }
        let _ = write!(o, "{}{}", if i > 0 { "," } else { "" }, script_json(&row));
    }
    // Embed at most MAX_EMBEDDED trajectories, spread over the cases (every case's
    // first failing trials before anyone's later ones).
    let mut failing: Vec<&FailedAt> = (0..s.cases.len()).flat_map(|i| failed.places(i)).collect();
    let omitted = failing.len().saturating_sub(MAX_EMBEDDED);
    if omitted > 0 {
        failing.sort_by_key(|r| r.trial);
        failing.truncate(MAX_EMBEDDED);
    }
    let _ = write!(
        o,
        r#"],"max":{MAX_EMBEDDED},"omitted":{omitted},"suite":{}}}</script><script type="application/json" id="traces">"#,
        script_json(&Json::String(run.suite().to_string()))
    );
    // The trajectories as one JSON object, written as they are built (records
    // read back one at a time): with texts cut at 1,200 characters, or at 160
    // once they pass the budget. (Building them as one JSON value first took
    // ~8 KB a trajectory: 32 MB for 4,000, the peak of grading 10,000
    // production traces; as one string, up to 10 MB.)
    let start = o.mark();
    for max in [1200, 160] {
        o.rewind(start);
        let _ = o.write_char('{');
        let mut within = true;
        for (i, at) in failing.iter().enumerate() {
            let r = failed.read(at)?;
            let key = script_json(&Json::String(format!("{}#{}", r.case, r.trial)));
            let _ = write!(o, "{}{key}:{}", if i > 0 { "," } else { "" }, script_json(&trajectory(run, &r, max)));
            if max > 160 && o.mark() - start > TRACE_BUDGET as u64 {
                within = false;
                break;
            }
        }
        if within {
            let _ = o.write_char('}');
            break;
        }
    }
    let _ = write!(o, "</script><script>{JS}</script></body></html>");
    Ok(())
}

/// The report's style sheet (the viewer shows the same sections with it).
pub const CSS: &str = r##"
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#111;max-width:1400px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:22px 0 8px}.meta{color:#555;margin:0 0 12px}
code{font:12px ui-monospace,Menlo,Consolas,monospace}
.verdict{display:inline-block;padding:4px 10px;border-radius:4px;font-weight:600}.verdict.ok{background:#dcfce7}.verdict.bad{background:#fee2e2}
ul.gates{margin:6px 0;padding-left:18px}li.bad{color:#b91c1c}li.ok{color:#166534}
.row2{display:flex;gap:32px;flex-wrap:wrap}
table{border-collapse:collapse}td,th{border-bottom:1px solid #e5e7eb;padding:3px 10px;text-align:left;vertical-align:top}
.cell{display:inline-block;width:14px;height:14px;margin:1px;border-radius:2px;cursor:pointer;vertical-align:middle}
.o-a{background:#22c55e}.o-f{background:#f59e0b}.o-c{background:#b91c1c}.o-g{background:#7c3aed}.o-i{background:#9ca3af}
.cell.sel{outline:2px solid #111}
.split{display:flex;gap:20px;align-items:flex-start}#grid{flex:0 0 auto;max-height:80vh;overflow:auto;padding-right:8px}
.gr{white-space:nowrap}.gr .id{display:inline-block;width:220px;overflow:hidden;text-overflow:ellipsis;font:12px ui-monospace,monospace;vertical-align:middle}
.gr .rate{display:inline-block;width:44px;color:#555;font-size:12px;text-align:right;margin-right:6px}
.gr .fm{margin-left:8px;color:#991b1b;font:12px ui-monospace,monospace;vertical-align:middle}
#traj{flex:1;min-width:320px;border-left:3px solid #e5e7eb;padding-left:16px;position:sticky;top:8px;max-height:96vh;overflow:auto}
#traj pre{white-space:pre-wrap;word-break:break-word;margin:0;font:12px ui-monospace,monospace;max-height:180px;overflow:auto}
.st-executed{color:#166534}.st-failed,.st-faulted{color:#b91c1c}.st-rejected,.st-denied{color:#b45309}
.pass{color:#166534}.fail{color:#b91c1c;font-weight:600}.err{color:#7c3aed}
.hint{color:#666}
.mode{display:inline-block;background:#fee2e2;color:#991b1b;border-radius:3px;padding:0 6px;margin-right:4px;font:12px ui-monospace,monospace}
.first{color:#b91c1c}tr.firstfail td{background:#fef2f2}.src{color:#555}
"##;

const JS: &str = r##"
(function(){
var data=JSON.parse(document.getElementById("data").textContent),traces=null;
var NAMES={a:"accepted",f:"failed",c:"critical",g:"grader error",i:"infra error"};
function h(s){return String(s==null?"":s).replace(/&/g,"&amp;").replace(/</g,"&lt;").replace(/>/g,"&gt;").replace(/"/g,"&quot;")}
function draw(){
  var only=document.getElementById("onlyfail").checked,out=[];
  data.cases.forEach(function(c,ci){
    var codes=c[3];if(only&&!/[fcgi]/.test(codes))return;
    var row='<div class="gr"><span class="id" title="'+h(c[0])+'">'+h(c[0])+'</span><span class="rate">'+c[2]+'/'+c[1]+'</span>';
    for(var j=0;j<codes.length;j++){var t=c[4]?c[4][j]:j+1;row+='<span class="cell o-'+codes[j]+'" data-c="'+ci+'" data-t="'+t+'" title="'+h(c[0])+' #'+t+': '+NAMES[codes[j]]+'"></span>'}
    if(c[5])row+='<span class="fm" title="failure modes">'+h(c[5])+'</span>';
    out.push(row+'</div>');
  });
  document.getElementById("grid").innerHTML=out.join("")||"<p class=hint>No case to show.</p>";
}
function show(ci,t,el){
  var prev=document.querySelector(".cell.sel");if(prev)prev.classList.remove("sel");if(el)el.classList.add("sel");
  var c=data.cases[ci],box=document.getElementById("traj");
  if(traces===null)traces=JSON.parse(document.getElementById("traces").textContent);
  var tr=traces[c[0]+"#"+t];
  if(!tr){var j=c[4]?c[4].indexOf(t):t-1,o=c[3][j];
    box.innerHTML='<h3>'+h(c[0])+' · trial '+t+'</h3><p class="'+(o=="a"?"pass":"fail")+'">'+NAMES[o]+'</p><p class=hint>'+(o=="a"?'Trajectories are embedded for trials that were not accepted':'This report embeds '+data.max+' trajectories ('+data.omitted+' left out)')+'; read this one with <code>evalua show RUN_DIR '+h(c[0])+' '+t+'</code> (it is in traces/traces.jsonl).</p>';return}
  var s='<h3 id="trajtitle">'+h(tr[0])+' · trial '+tr[1]+' · <span class="'+(tr[2]=="accepted"?"pass":"fail")+'">'+h(tr[2])+'</span> · ended '+h(tr[3])+'</h3>';
  s+='<p><code>'+h(tr[8])+'</code></p>';
  if(tr[11])s+='<p class="src">source: <code>'+h(tr[11])+'</code></p>';
  if(tr[4])s+='<p class="err">error: '+h(tr[4])+'</p>';
  if(tr[10]&&tr[10].length)s+='<p class="modes">failure modes: '+tr[10].map(function(m){return '<span class="mode">'+h(m)+'</span>'}).join(' ')+'</p>';
  if(tr[9])s+='<p class="first" id="firstfail">first failing span: <b>'+h(tr[9][0])+'</b></p>';
  s+='<h4>Checks</h4><table class="checks">';
  tr[7].forEach(function(k){var st=k[1]===1?'<span class="pass">pass</span>':k[1]===0?'<span class="fail">FAIL</span>':'<span class="err">'+(k[4]=="skipped"?"skipped":/^not applicable/.test(k[4]||"")?"n/a":"error")+'</span>';
    s+='<tr><td>'+st+'</td><td>'+h(k[0])+(k[2]?' ⚑ critical':'')+'</td><td><pre>'+h(k[3])+(k[4]?'\n'+h(k[4]):'')+'</pre></td></tr>'});
  s+='</table><h4>Tool calls, in order</h4>';
  if(tr[6]===null)s+='<p class=hint>the run dir holds no trace of this trial</p>';
  else if(!tr[6].length)s+='<p class=hint>no tool call</p>';
  else{s+='<table class="calls"><tr><th>#</th><th>tool</th><th>status</th><th>arguments</th><th>result</th></tr>';
    tr[6].forEach(function(k,i){s+='<tr class="call'+(tr[9]&&tr[9][1]===i+1?' firstfail':'')+'"><td>'+(i+1)+'</td><td>'+h(k[0])+'</td><td class="st-'+h(k[1])+'">'+h(k[1])+'</td><td><pre>'+h(k[2])+'</pre></td><td><pre>'+h(k[3])+'</pre></td></tr>'});
    s+='</table>'}
  s+='<h4>Answer</h4><pre>'+h(tr[5])+'</pre>';
  box.innerHTML=s;
  if(box.getBoundingClientRect().top<0||box.getBoundingClientRect().top>window.innerHeight*0.6)box.scrollIntoView({block:"start"});
}
document.getElementById("grid").addEventListener("click",function(e){var el=e.target;if(el.dataset&&el.dataset.c!==undefined)show(+el.dataset.c,+el.dataset.t,el)});
document.getElementById("onlyfail").addEventListener("change",draw);
draw();
document.body.setAttribute("data-ready","1");document.body.setAttribute("data-ready-ms",String(Math.round(performance.now())));
})();
"##;
