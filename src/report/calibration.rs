//! `evalua calibrate`'s text: per judge, the confusion matrix, kappa, the
//! false-pass and false-fail rates with their Wilson intervals, the
//! disagreements with the judge's reasons, a recheck's changes, and where
//! the record went.

use std::fmt::Write as _;

use crate::judge::calibrate::{Calibrated, Change, Recheck};
use crate::record::calibration::{Disagreement, Rate};
use crate::util::paths::display_path;

/// Disagreements printed per judge (the record keeps every one).
const SHOWN_DISAGREEMENTS: usize = 20;

/// The lines of one judge's calibration.
pub fn text(c: &Calibrated) -> String {
    let (m, cm) = (&c.measured, &c.measured.cm);
    let mut t = String::new();
    let _ = writeln!(t, "{} '{}'  judge {}  prompt {}", c.what, c.name, c.judge, &c.prompt_sha256[..12]);
    let _ = writeln!(
        t,
        "  {} items, {} labels: {} compared, {} undeterminable, {} judge errors (the last two left out of the figures)",
        c.items,
        m.labelled,
        cm.n(),
        m.undeterminable,
        m.errors
    );
    for line in &c.notes {
        let _ = writeln!(t, "{line}");
    }
    let _ = writeln!(t, "                 judge pass  judge fail");
    let _ = writeln!(t, "    human pass   {:>10}  {:>10}", cm.pass_pass, cm.pass_fail);
    let _ = writeln!(t, "    human fail   {:>10}  {:>10}", cm.fail_pass, cm.fail_fail);
    let _ = match cm.kappa() {
        Ok(k) => writeln!(t, "  Cohen's kappa: {k:.3}"),
        Err(why) => writeln!(t, "  Cohen's kappa: {why}"),
    };
    if cm.n() > 0 && (cm.human_fail() == 0 || cm.human_pass() == 0) {
        let class = if cm.human_fail() == 0 { "pass" } else { "fail" };
        let _ = writeln!(
            t,
            "  note: every compared human label is {class}: these labels cannot show whether the judge tells the classes apart"
        );
    }
    let _ = writeln!(t, "  false-pass rate (judge pass among human fails):  {}", rate(&cm.false_pass(), "fails"));
    let _ = writeln!(t, "  false-fail rate (judge fail among human passes): {}", rate(&cm.false_fail(), "passes"));
    if let Some(e) = &m.first_error {
        let _ = writeln!(t, "  first judge error: {e}");
    }
    disagreements(&mut t, &m.disagreements);
    if let Some(r) = &c.recheck {
        for l in recheck(r, &c.name) {
            let _ = writeln!(t, "{l}");
        }
    }
    let _ = match (&c.record, &c.recheck) {
        (Some(p), Some(_)) => writeln!(t, "  record: {} (held_out)", display_path(p)),
        (Some(p), None) => writeln!(t, "  record: {}", display_path(p)),
        (None, _) => writeln!(t, "  no record written: no label could be compared"),
    };
    t
}

fn rate(r: &Rate, what: &str) -> String {
    match r.wilson95 {
        Some([lo, hi]) => format!(
            "{}/{} = {:.1}%  (95% Wilson interval {:.1}% – {:.1}%)",
            r.k,
            r.n,
            100.0 * r.k as f64 / r.n as f64,
            lo * 100.0,
            hi * 100.0
        ),
        None => format!("undefined (no human {what} among the compared labels)"),
    }
}

fn disagreements(t: &mut String, ds: &[Disagreement]) {
    if ds.is_empty() {
        return;
    }
    let n = ds.len();
    let _ = writeln!(
        t,
        "  {n} disagreement{} (the judge's verdict against the human label):",
        if n == 1 { "" } else { "s" }
    );
    for d in ds.iter().take(SHOWN_DISAGREEMENTS) {
        let _ = writeln!(t, "{}", disagreement(d));
    }
    if n > SHOWN_DISAGREEMENTS {
        let _ = writeln!(t, "    … and {} more, all in the record", n - SHOWN_DISAGREEMENTS);
    }
}

/// Two lines: which label, then the verdicts and the judge's reason.
fn disagreement(d: &Disagreement) -> String {
    let mut why = Vec::new();
    if let Some(f) = &d.failure_mode {
        why.push(format!("failure mode {f:?}"));
    }
    if !d.quotes.is_empty() {
        why.push(format!("quoted {}", d.quotes.iter().map(|q| format!("{q:?}")).collect::<Vec<_>>().join(", ")));
    }
    let why = if why.is_empty() { "none given (no quote, no failure mode)".to_string() } else { why.join("; ") };
    format!(
        "    {}  {}  criterion {} {:?}\n      judge {}, human {}; the judge's reason: {why}",
        d.item, d.at, d.criterion, d.criterion_text, d.judge, d.human
    )
}

fn kappa(k: Option<f64>) -> String {
    k.map(|k| format!("{k:.3}")).unwrap_or_else(|| "undefined".into())
}

fn percent(p: Option<f64>) -> String {
    p.map(|p| format!("{:.1}%", p * 100.0)).unwrap_or_else(|| "undefined".into())
}

fn signed(v: f64, pct: bool) -> String {
    let v = if v.abs() < 1e-12 { 0.0 } else { v };
    if pct { format!("{:+.1} pt", v * 100.0) } else { format!("{v:+.3}") }
}

/// A recheck's lines: what it was compared with and each figure's change.
fn recheck(r: &Recheck, name: &str) -> Vec<String> {
    let Some(against) = &r.against else {
        return vec![format!(
            "  recheck: kappa {}, false-pass rate {} on the held-out labels; no earlier measurement of '{name}' to compare with: this one is the baseline of the next recheck",
            kappa(r.kappa),
            percent(r.false_pass)
        )];
    };
    let mut lines = vec![format!("  recheck against {against}")];
    lines.extend(r.changes.iter().map(change));
    lines
}

fn change(c: &Change) -> String {
    let fmt = |v: Option<f64>| if c.pct { percent(v) } else { kappa(v) };
    let delta = match (c.before, c.now) {
        (Some(x), Some(y)) => signed(y - x, c.pct),
        _ => "undefined".into(),
    };
    let iv = match c.interval {
        Some([lo, hi]) => format!("95% interval {} – {}", signed(lo, c.pct), signed(hi, c.pct)),
        None => "no interval: too few items or an undefined figure".into(),
    };
    let verdict = match (c.beyond, c.bad_if_up) {
        (true, true) => "  WORSE beyond the interval",
        (true, false) => "  DROPPED beyond the interval",
        _ => "",
    };
    format!("    {:<16} {} → {}  change {delta}  ({iv}){verdict}", c.label, fmt(c.before), fmt(c.now))
}
