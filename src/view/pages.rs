//! The pages, as HTML: the run list and the run page are shells the page
//! script fills from the JSON API (every value set as text, never as
//! markup); the run page's figures and the compare page are rendered here,
//! every value escaped. No page loads anything from outside the viewer.

use std::fmt::Write;

use serde::Serialize;
use serde_json::json;

use super::index::Facets;
use super::list::{RunRow, Status};
use super::state::Kind;
use crate::report::compare;
use crate::report::html::{esc, script_json};
use crate::report::text::fmt_value;
use crate::stats::compare::{CaseDiff, Class, Comparison, FigureDiff, Measurement};

fn head(title: &str, page: &str) -> String {
    format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>{}</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/assets/view.css"><script src="/assets/view.js" defer></script></head><body data-page="{page}"><header class="top"><a href="/" class="brand">evalua view</a>"#,
        esc(title)
    )
}

const FOOT: &str = "</main></body></html>";

pub fn list_page() -> String {
    let mut o = head("evalua view: runs", "list");
    o.push_str(r#"<span id="roots" class="meta"></span></header><main>
<h1>Runs</h1>
<div class="bar"><label>suite <select id="suite"><option value="">all suites</option></select></label>
<button id="cmp" type="button" disabled>Compare the two selected runs</button>
<span id="live" class="meta"></span></div>
<table id="runs" class="runs"><thead><tr><th title="select two runs of one suite to compare them"></th><th>suite</th><th>version</th><th>started</th><th>kind</th><th>status</th><th>trials</th><th>accepted</th><th>pass^k</th><th>pass@k</th><th>critical</th><th>grader / infra errors</th><th>gates</th><th>run dir</th></tr></thead><tbody></tbody></table>
<p id="empty" class="hint" hidden></p>
<div id="skipped"></div>"#);
    o.push_str(FOOT);
    o
}

/// What the run page's script starts from.
#[derive(Serialize)]
pub struct RunBoot<'a> {
    pub id: &'a str,
    pub suite: &'a str,
    pub run_id: &'a str,
    pub status: Status,
    pub version: u64,
    pub facets: &'a Facets,
    /// Other runs of the suite, for "compare with" (id, label).
    pub others: Vec<(String, String)>,
    /// Who labels (None: labelling is off).
    pub annotator: Option<&'a str>,
    /// The session token a label post carries.
    pub token: &'a str,
}

pub struct RunHead<'a> {
    pub row: &'a RunRow,
    pub overview: String,
    pub files: Vec<&'static str>,
    /// `--review users`: the sample, and this run's trials in it.
    pub review: Option<String>,
}

pub fn kind_label(kind: Kind, from: Option<&str>) -> String {
    match kind {
        Kind::Run => "run".into(),
        Kind::Graded => "graded (recorded traces)".into(),
        Kind::Regraded => match from {
            Some(f) => format!("regraded from {f}"),
            None => "regraded".into(),
        },
    }
}

pub fn status_label(s: Status) -> &'static str {
    match s {
        Status::Complete => "complete",
        Status::Incomplete => "incomplete",
        Status::Running => "running",
    }
}

pub fn run_page(h: &RunHead, boot: &RunBoot) -> String {
    let r = h.row;
    let mut o = head(&format!("{} · {}", r.suite, r.run_id), "run");
    let _ = write!(o, r#"<span class="meta">› {} › {}</span></header><main>"#, esc(&r.suite), esc(&r.run_id));
    let version = r.version.as_deref().map(|v| format!(" <span class=meta>({})</span>", esc(v))).unwrap_or_default();
    let _ = write!(
        o,
        r#"<h1>{}{version}</h1><p class="meta">run <code>{}</code> · <span class="badge k-{}">{}</span> <span id="status" class="badge s-{}">{}</span> · started {} · <code>{}</code>{}</p>"#,
        esc(&r.suite),
        esc(&r.run_id),
        esc(&format!("{:?}", r.kind).to_lowercase()),
        esc(&kind_label(r.kind, r.regraded_from.as_deref())),
        status_label(r.status),
        status_label(r.status),
        esc(&r.started_at),
        esc(&r.path),
        r.partition.as_deref().map(|p| format!(" · one partition ({})", esc(p))).unwrap_or_default()
    );
    o.push_str(r#"<p class="links">"#);
    for f in &h.files {
        let _ = write!(o, r#"<a href="/file?r={}&amp;path={f}">{f}</a> "#, esc(&super::trial::encode(&r.id)));
    }
    o.push_str(r##"<a href="#trials-h">trials ↓</a> "##);
    o.push_str(r#"<label>compare with <select id="cmpwith"><option value="">another run of this suite…</option></select></label></p>"#);
    if let Some(e) = &r.error {
        let _ = write!(o, r#"<p class="err">{}</p>"#, esc(e));
    }
    if let Some(line) = &h.review {
        let _ = write!(o, r#"<p id="review" class="hint">{}</p>"#, esc(line));
    }
    let _ = write!(o, r#"<div id="overview">{}</div>"#, h.overview);
    o.push_str(r#"<h2 id="trials-h">Trials</h2>
<form id="filters" class="filters" autocomplete="off">
<label>case <input id="f-case" name="case" placeholder="id, part of it, or a glob"></label>
<label>tag <select id="f-tag" name="tag"><option value="">any</option></select></label>
<label>outcome <select id="f-outcome" name="outcome"><option value="">any</option><option value="not_accepted">not accepted</option><option value="accepted">accepted</option><option value="failed">failed</option><option value="critical">critical</option><option value="grader_error">grader error</option><option value="infra_error">infra error</option></select></label>
<label>failed check <select id="f-check" name="check"><option value="">any</option></select></label>
<label>failure mode <select id="f-mode" name="mode"><option value="">any</option></select></label>
<label>ended <select id="f-ended" name="ended"><option value="">any</option></select></label>
<label title="by the annotator of this viewer session (--annotator), on every criterion">labels <select id="f-labels" name="labels"><option value="">any</option><option value="unlabelled">not labelled by me</option><option value="labelled">labelled by me</option></select></label>
<button id="f-clear" type="button">clear</button>
</form>
<p><span id="count" class="count"></span> <span class="tabs"><button type="button" id="tab-list" class="on">list</button><button type="button" id="tab-grid">cases × trials</button></span></p>
<div class="split"><div id="left">
<div id="listview"><table id="trials" class="trials"><thead><tr><th>case</th><th>trial</th><th>outcome</th><th>ended</th><th>failed checks</th><th>failure modes</th><th>calls</th><th>ms</th></tr></thead><tbody></tbody></table><nav id="pager" class="pager"></nav></div>
<div id="gridview" hidden><p class="legend"><span class="cell o-a"></span> accepted <span class="cell o-f"></span> failed <span class="cell o-c"></span> critical <span class="cell o-g"></span> grader error <span class="cell o-i"></span> infra error · faded: not matching the filter · click a trial</p><div id="grid"></div><nav id="gpager" class="pager"></nav></div>
</div><div id="traj"><p class="hint">Click a trial for its trajectory, checks and state.</p></div></div>
"#);
    let _ = write!(o, r#"<script type="application/json" id="boot">{}</script>"#, script_json(&json!(boot)));
    o.push_str(FOOT);
    o
}

pub fn error_page(title: &str, message: &str) -> String {
    let mut o = head(title, "error");
    let _ = write!(
        o,
        r#"</header><main><h1>{}</h1><p class="err">{}</p><p><a href="/">all runs</a></p>"#,
        esc(title),
        esc(message)
    );
    o.push_str(FOOT);
    o
}

fn pct(v: Option<f64>, name: &str) -> String {
    if name.starts_with("cost") {
        return match v {
            Some(v) => format!("${v:.4}"),
            None => "∞".into(),
        };
    }
    fmt_value(v, true)
}

fn delta(v: Option<f64>, name: &str) -> String {
    match v.map(|v| if v.abs() < 1e-9 { 0.0 } else { v }) {
        Some(v) if name.starts_with("cost") => format!("{}${:.4}", if v >= 0.0 { "+" } else { "−" }, v.abs()),
        Some(v) => format!("{}{:.1} pt", if v >= 0.0 { "+" } else { "−" }, v.abs() * 100.0),
        None => "–".into(),
    }
}

fn interval(f: &FigureDiff) -> (String, bool) {
    match f.interval {
        Some((lo, hi)) => {
            let sig = lo > 1e-12 || hi < -1e-12;
            (format!("[{}, {}]", delta(Some(lo), &f.name), delta(Some(hi), &f.name)), sig)
        }
        None => ("–".into(), false),
    }
}

pub struct CompareHead<'a> {
    pub base: &'a RunRow,
    pub cand: &'a RunRow,
    /// The candidate re-graded the base's recorded trials: a difference is a
    /// change of the measurement, not of the agent (SPEC §10).
    pub measurement_change: bool,
    /// The base and the candidate are the baseline and a perturbation of one
    /// run of perturbations: the candidate's robustness (SPEC §17).
    pub robustness: Option<crate::stats::robustness::Robustness>,
}

fn run_link(r: &RunRow) -> String {
    format!(
        r#"<a href="/run?r={}">{}</a> <span class="meta">{} · {}</span>"#,
        esc(&super::trial::encode(&r.id)),
        esc(&r.run_id),
        esc(&r.started_at),
        esc(&r.path)
    )
}

/// A link to a case's trials in one run.
fn case_link(r: &RunRow, case: &str, label: &str) -> String {
    format!(
        r#"<a href="/run?r={}&amp;case={}">{label}</a>"#,
        esc(&super::trial::encode(&r.id)),
        esc(&super::trial::encode(case)),
    )
}

/// Cases listed per class on the compare page (a 20,000-case suite would
/// otherwise send megabytes; the counts stay exact).
const COMPARE_ROWS: usize = 200;

pub fn compare_page(h: &CompareHead, c: &Comparison) -> String {
    let mut o = head(&format!("compare {}", c.suite), "compare");
    let _ = write!(o, r#"<span class="meta">› compare {}</span></header><main>"#, esc(&c.suite));
    let _ = write!(o, "<h1>{}: base vs candidate</h1>", esc(&c.suite));
    let _ = write!(
        o,
        r#"<table class="sides"><tr><th>base</th><td>{}</td></tr><tr><th>candidate</th><td>{}</td></tr></table><p><a href="/compare?a={}&amp;b={}">swap base and candidate</a></p>"#,
        run_link(h.base),
        run_link(h.cand),
        esc(&super::trial::encode(&h.cand.id)),
        esc(&super::trial::encode(&h.base.id)),
    );
    if h.measurement_change {
        o.push_str(r#"<p class="verdict mc" id="mchange">Measurement change: the candidate re-graded the base's recorded trials with other checks; no agent ran again. Every difference below is a change of the measurement, not of the agent.</p>"#);
    }
    for w in &c.warnings {
        let _ = write!(o, r#"<p class="warn">⚠ {}</p>"#, esc(w));
    }
    if let Some(m) = &c.measurement {
        check_changes(&mut o, h, m);
    }
    if let Some(r) = &h.robustness {
        o.push_str(&crate::report::robustness::html(std::slice::from_ref(r)));
    }
    let what = if h.measurement_change { "measurement change" } else { "change" };
    o.push_str(r#"<h2>Figures</h2><table class="figs cmp"><tr><th>figure</th><th>base</th><th>candidate</th><th>Δ (paired)</th><th>95% interval of Δ</th><th>paired cases</th></tr>"#);
    for f in &c.figures {
        let (iv, sig) = interval(f);
        let _ = write!(
            o,
            r#"<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}{}</td><td>{}</td></tr>"#,
            if sig { r#" class="sig""# } else { "" },
            esc(&f.name),
            esc(&pct(f.base, &f.name)),
            esc(&pct(f.cand, &f.name)),
            esc(&delta(f.delta, &f.name)),
            esc(&iv),
            if sig { format!(" * {what}") } else { String::new() },
            f.cases
        );
    }
    o.push_str("</table><p class=meta>* the interval excludes 0: unlikely to be noise (paired bootstrap over cases, seeded).</p>");
    let n = |k: &str| c.counts.get(k).copied().unwrap_or(0);
    let _ = write!(
        o,
        r#"<h2>Cases</h2><p id="counts">per-case accepted rate: <b>{}</b> improved · <b class="bad">{}</b> regressed · {} unchanged · {} unresolved · {} not comparable</p>"#,
        n("improved"),
        n("regressed"),
        n("unchanged"),
        n("unresolved"),
        n("not_comparable")
    );
    if !c.new_critical.is_empty() {
        let _ = write!(
            o,
            r#"<p class="bad" id="newcrit">New critical failures in: {}</p>"#,
            c.new_critical.iter().map(|s| format!("<code>{}</code>", esc(s))).collect::<Vec<_>>().join(", ")
        );
    }
    let ac = |v: Option<(u32, u32)>| v.map(|(a, n)| format!("{a}/{n}")).unwrap_or("–".into());
    for (class, title) in [
        (Class::Regressed, "Regressed"),
        (Class::Improved, "Improved"),
        (Class::Unresolved, "Unresolved (no accepted trial in either run)"),
        (Class::NotComparable, "Not comparable (absent, or no counted trial, in one run)"),
        (Class::Unchanged, "Unchanged"),
    ] {
        let rows: Vec<&CaseDiff> = c.cases.iter().filter(|d| d.class == class).collect();
        if rows.is_empty() {
            continue;
        }
        let open = if matches!(class, Class::Regressed | Class::Improved) { " open" } else { "" };
        let _ = write!(
            o,
            r#"<details{open} id="c-{}"><summary>{} ({})</summary><table class="cases"><tr><th>case</th><th>base</th><th>candidate</th><th>Δ accepted</th><th>critical</th><th>trials</th></tr>"#,
            class.as_str(),
            title,
            rows.len()
        );
        for d in rows.iter().take(COMPARE_ROWS) {
            let _ = write!(
                o,
                r#"<tr class="{}"><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{} → {}</td><td>{} · {}</td></tr>"#,
                class.as_str(),
                esc(&d.id),
                ac(d.base),
                ac(d.cand),
                esc(&delta(d.delta, "")),
                d.base_critical,
                d.cand_critical,
                case_link(h.base, &d.id, "base"),
                case_link(h.cand, &d.id, "candidate")
            );
        }
        o.push_str("</table>");
        if rows.len() > COMPARE_ROWS {
            let _ = write!(
                o,
                "<p class=meta>… and {} more: <code>evalua compare --json</code> lists every case.</p>",
                rows.len() - COMPARE_ROWS
            );
        }
        o.push_str("</details>");
    }
    let _ = write!(o, "<p>{}</p>", esc(&compare::counts_line(c)));
    o.push_str(FOOT);
    o
}

/// Cases named per changed check (the count stays exact).
const CHANGED_CASES: usize = 20;

/// The headline of a comparison of two gradings of the same trials (as
/// `evalua compare` prints it): which checks changed verdict, on how many
/// trials, which way, in which cases.
fn check_changes(o: &mut String, h: &CompareHead, m: &Measurement) {
    let short = |s: &str| s.get(..12).unwrap_or(s).to_string();
    let _ = write!(
        o,
        r#"<h2>Checks that changed verdict</h2><p id="mstat">{} of {} paired trials changed outcome (grader {} → {}).</p>"#,
        m.outcome_changes,
        m.paired_trials,
        esc(&short(&m.base_grader_sha256)),
        esc(&short(&m.cand_grader_sha256))
    );
    if m.checks.is_empty() {
        o.push_str(r#"<p id="checkchanges">No check changed its verdict on any trial.</p>"#);
        return;
    }
    o.push_str(r#"<table class="cases" id="checkchanges"><tr><th>check</th><th>trials changed</th><th>pass → fail</th><th>fail → pass</th><th>other (error, skip, absent)</th><th>cases (candidate's trials)</th></tr>"#);
    for ch in &m.checks {
        let mut cases: Vec<String> = ch
            .cases
            .iter()
            .take(CHANGED_CASES)
            .map(|c| case_link(h.cand, c, &format!("<code>{}</code>", esc(c))))
            .collect();
        if ch.cases.len() > CHANGED_CASES {
            cases.push(format!("… and {} more", ch.cases.len() - CHANGED_CASES));
        }
        let _ = write!(
            o,
            r#"<tr><td><code>{}</code></td><td>{}</td><td{}>{}</td><td{}>{}</td><td>{}</td><td>{}</td></tr>"#,
            esc(&ch.check),
            ch.trials,
            if ch.pass_to_fail > 0 { r#" class="bad""# } else { "" },
            ch.pass_to_fail,
            if ch.fail_to_pass > 0 { r#" class="ok""# } else { "" },
            ch.fail_to_pass,
            ch.other,
            cases.join(", ")
        );
    }
    o.push_str("</table>");
}

/// A compare refused because the runs ran different revisions.
pub fn compare_refused(base: &RunRow, cand: &RunRow, message: &str) -> String {
    let mut o = head("compare", "compare");
    let _ = write!(
        o,
        r#"</header><main><h1>These runs ran different revisions</h1><p class="err">{}</p><p><a id="allow" href="/compare?a={}&amp;b={}&amp;allow=1">compare anyway</a> (as <code>--allow-revision-change</code>) · <a href="/">all runs</a></p>"#,
        esc(message),
        esc(&super::trial::encode(&base.id)),
        esc(&super::trial::encode(&cand.id))
    );
    o.push_str(FOOT);
    o
}
