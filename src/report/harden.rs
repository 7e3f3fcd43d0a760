//! What `evalua harden` found, for people: the console report (per case,
//! each adversary it accepted, the checks that passed it and what is
//! missing; the skipped adversaries with their reasons; a last line of
//! counts) and the pull-request comment's section. Case ids, check names
//! and reasons are the suite's: made inert for their sink.

use crate::record::harden::Hardened;
use crate::util::inert::{console, markdown};

/// The console report.
pub fn text(h: &Hardened) -> String {
    let mut o = String::new();
    for c in h.with_holes() {
        o.push_str(&format!("{}\n", console(&c.case)));
        for hole in &c.holes {
            let passed =
                if hole.passed_checks.is_empty() { "no check".to_string() } else { hole.passed_checks.join("; ") };
            o.push_str(&format!("  hole: {} — accepted by: {}\n", console(&hole.adversary), console(&passed)));
            o.push_str(&format!("    missing: {}\n", console(&hole.advice)));
        }
    }
    for s in &h.skipped {
        o.push_str(&format!(
            "skipped on {}: {} — {}\n",
            console(&s.case),
            console(&s.adversaries.join(", ")),
            console(&s.reason)
        ));
    }
    for n in &h.not_played {
        o.push_str(&format!("not played: {}\n", console(n)));
    }
    o.push_str(&format!("{}\n", summary(h)));
    o
}

/// The last line: the counts.
pub fn summary(h: &Hardened) -> String {
    let with = h.with_holes().count();
    let holes = if h.holes == 1 { "1 hole".to_string() } else { format!("{} holes", h.holes) };
    let mut line = format!(
        "harden: {holes} in {with} of {} cases ({} trials; adversaries: {})",
        h.cases.len(),
        h.trials,
        console(&h.adversaries.join(", "))
    );
    if !h.not_played.is_empty() {
        line.push_str(&format!("; {} not played", h.not_played.len()));
    }
    line
}

/// The section of the pull-request comment (`report --format github`).
pub fn github(h: &Hardened) -> String {
    let mut o = String::from("\n**Graders hardened** (`evalua harden`): ");
    if h.holes == 0 {
        o.push_str(&format!(
            "no hole: {} cases × {} adversaries, {} trials, none accepted.\n",
            h.cases.len(),
            h.adversaries.len(),
            h.trials
        ));
        return o;
    }
    o.push_str(&format!("{} holes in {} of {} cases.\n\n", h.holes, h.with_holes().count(), h.cases.len()));
    o.push_str("| case | adversary | accepted by |\n|---|---|---|\n");
    for c in h.with_holes() {
        for hole in &c.holes {
            o.push_str(&format!(
                "| {} | {} | {} |\n",
                markdown(&c.case),
                markdown(&hole.adversary),
                markdown(&hole.passed_checks.join("; "))
            ));
        }
    }
    o
}
