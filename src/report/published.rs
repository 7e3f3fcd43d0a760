//! The figures the background reading asks to publish beside acceptance and
//! latency (SPEC §22), as the lines every report shows: coverage, time to
//! abandonment, interventions, contamination and the declared exclusions.
//! Plain text built from numbers and the fixed names of outcomes and endings:
//! nothing an agent wrote reaches these lines.

use super::text::fmt_value;
use crate::stats::Summary;
use crate::stats::published::{Published, Share};

fn pct(v: Option<f64>) -> String {
    fmt_value(v, true)
}

/// `80.0% [49.0%, 94.3%]`.
fn rate(s: &Share) -> String {
    match (s.low, s.high) {
        (Some(l), Some(h)) => format!("{} [{}, {}]", pct(s.value), pct(Some(l)), pct(Some(h))),
        _ => pct(s.value),
    }
}

/// `80.0% [49.0%, 94.3%] of 10 trials`.
fn share(s: &Share, of: &str) -> String {
    format!("{} of {} {of}", rate(s), s.n)
}

fn ms(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.1} ms"),
        _ => "–".into(),
    }
}

/// The published figures (SPEC §22) and who is to blame (SPEC §18) as
/// (label, text) lines, in the order every report shows them.
pub fn lines(s: &Summary) -> Vec<(&'static str, String)> {
    let mut out = published(&s.published);
    out.extend(blame(s));
    if let Some(p) = &s.pending_review {
        // Drafted cases no person approved yet (SPEC §23): in no figure above.
        let ids: Vec<&str> = p.by_case.iter().map(|c| c.id.as_str()).collect();
        out.push((
            "pending review (not counted)",
            format!(
                "{} synthetic case(s), {} trial(s), {} accepted: {} (evalua review SUITE CASE --approve|--reject --reviewer NAME)",
                p.cases,
                p.trials,
                p.accepted,
                crate::util::inert::console(&ids.join(", "))
            ),
        ));
    }
    out
}

/// Who is to blame for the trials not accepted, and, with a simulated user,
/// the headline figures without its failures (shown after the raw ones).
fn blame(s: &Summary) -> Vec<(&'static str, String)> {
    let b = &s.blame;
    let mut out = Vec::new();
    if b.agent.n > 0 {
        out.push((
            "who is to blame for the trials not accepted",
            format!(
                "agent {}, user {}, grader {}, infra {} (of {} trials not accepted)",
                rate(&b.agent),
                rate(&b.user),
                rate(&b.grader),
                rate(&b.infra),
                b.agent.n
            ),
        ));
    }
    if let Some(u) = &s.user_nonadherence {
        out.push(("simulated user not adherent", share(u, "trials with a simulated user")));
    }
    if let Some(w) = &s.without_user_failures {
        let hat = w.pass_hat_k.get(&crate::stats::K(1)).copied();
        out.push((
            "without the simulated user's failures",
            format!(
                "pass^1 {}, accepted {} ({} trials blamed on the user left out)",
                pct(hat),
                pct(w.accepted_rate),
                w.left_out
            ),
        ));
    }
    out
}

fn published(p: &Published) -> Vec<(&'static str, String)> {
    let c = &p.coverage;
    let mut out = vec![(
        "coverage",
        format!(
            "attempted {}; {}; accepted when attempted {}",
            share(&c.attempted, "trials that had to be solved"),
            if c.abstained_correctly.n == 0 {
                "no case required abstaining".to_string()
            } else {
                format!("abstained correctly {}", share(&c.abstained_correctly, "trials that required abstaining"))
            },
            share(&c.accepted_when_attempted, "attempts"),
        ),
    )];
    let a = &p.time_to_abandon_ms;
    out.push((
        "time to abandonment",
        format!(
            "p50 {} p95 {} (n={}: trials not accepted that the agent ended itself or a budget ended)",
            ms(a.p50),
            ms(a.p95),
            a.n
        ),
    ));
    if let Some(i) = &p.interventions {
        let mean = i.per_trial.mean.map(|m| format!("{m:.2}")).unwrap_or_else(|| "–".into());
        out.push(("interventions", format!("{mean} a trial; trials with one {}", share(&i.trials_with, "trials"))));
    }
    if let Some(c) = &p.contaminated {
        out.push((
            "contaminated",
            format!(
                "{} trials touched a published solution, {} of them accepted (left out of the capability figures)",
                c.n, c.accepted
            ),
        ));
    }
    let excluded: Vec<String> = p
        .exclusions
        .iter()
        .map(|e| format!("{} {}{}", e.name, e.trials, if e.always { " (always)" } else { "" }))
        .collect();
    out.push(("excluded from the capability figures (declared before the run)", excluded.join(", ")));
    out
}
