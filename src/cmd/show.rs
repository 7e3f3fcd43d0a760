//! `evalua show RUN_DIR CASE TRIAL`: print one trial's trace from the run
//! dir's trace store, as text (conversation, tool calls, checks, usage, log)
//! or, with `--json`, as the stored JSON (pretty-printed).

use std::fmt::Write as _;
use std::path::Path;

use crate::error::{Error, Result};
use crate::record::{RunDir, Trace};
use crate::report::text::{evidence_text, truncate};
use crate::util::inert::console as line;

pub fn show(dir: &Path, case: &str, trial: u32, json: bool) -> Result<u8> {
    let run = RunDir::open(dir)?;
    let Some(trace) = run.find_trace(case, trial)? else {
        return Err(Error::Input(format!(
            "{}: no trace of case '{case}' trial {trial} (the run's cases and trials are in trials.jsonl)",
            dir.display()
        )));
    };
    if json {
        let text = serde_json::to_string_pretty(&trace).map_err(|e| Error::Environment(e.to_string()))?;
        println!("{text}");
    } else {
        print!("{}", render(&trace));
    }
    Ok(0)
}

/// A block of an agent's or a trace's text: each of its lines indented and inert.
fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {}\n", line(l))).collect()
}

/// The trace as text, for reading in a terminal. Everything in it came from
/// the run dir (an agent, a trace): each field goes through `line`.
pub fn render(t: &Trace) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} · trial {} · seed {} · {} (ended: {})",
        line(&t.record.case),
        t.record.trial,
        t.record.seed,
        t.record.outcome.as_str(),
        t.record.ended.as_str()
    );
    if let Some(e) = &t.record.error {
        let _ = writeln!(o, "error: {}", line(e));
    }
    let _ = writeln!(o, "\ninput:\n{}", indent(&t.input));
    if !t.messages.is_empty() {
        let _ = writeln!(o, "messages:");
        for m in &t.messages {
            let who = match &m.call_id {
                Some(id) => format!("{} {id}", m.role),
                None => m.role.clone(),
            };
            let _ = write!(o, "  [{}]\n{}", line(&who), indent(&truncate(&m.content, 4000)));
        }
        o.push('\n');
    }
    if !t.calls.is_empty() {
        let _ = writeln!(o, "tool calls:");
        for (i, c) in t.calls.iter().enumerate() {
            let _ = writeln!(
                o,
                "  {}. {} {} → {} ({:.0} ms)",
                i + 1,
                line(&c.name),
                line(&evidence_text(&c.args, 400)),
                c.status.as_str(),
                c.ended_ms - c.started_ms
            );
            if let Some(r) = &c.result {
                let _ = writeln!(o, "     result: {}", line(&evidence_text(r, 400)));
            }
            if let Some(e) = &c.error {
                let _ = writeln!(o, "     error: {}", line(&truncate(e, 400)));
            }
        }
        o.push('\n');
    }
    if !t.outbox.is_empty() {
        let _ = writeln!(o, "outbox:");
        for m in &t.outbox {
            let _ = writeln!(o, "  {} to {}: {}", line(&m.kind), line(&m.to), line(&evidence_text(&m.body, 400)));
        }
        o.push('\n');
    }
    let _ = writeln!(o, "answer:\n{}", indent(&t.record.answer));
    if !t.record.checks.is_empty() {
        let _ = writeln!(o, "checks:");
        for c in &t.record.checks {
            let mark = match (c.passed, c.skipped) {
                (Some(true), _) => "pass",
                (Some(false), _) => "FAIL",
                (None, true) => "skip",
                (None, false) => "ERROR",
            };
            let _ = write!(o, "  {mark:5} {}{}", line(&c.name), if c.critical { " (critical)" } else { "" });
            match &c.error {
                Some(e) => {
                    let _ = writeln!(o, ": {}", line(&truncate(e, 400)));
                }
                None if !c.evidence.is_null() => {
                    let _ = writeln!(o, ": {}", line(&evidence_text(&c.evidence, 400)));
                }
                None => o.push('\n'),
            }
        }
        o.push('\n');
    }
    let u = &t.record.usage;
    let _ = writeln!(
        o,
        "usage: {} turns, {} tool calls, {} input + {} output tokens, ${:.4}, {:.0} ms",
        u.turns, u.tool_calls, u.input_tokens, u.output_tokens, u.cost_usd, u.wall_ms
    );
    for m in &t.model_calls {
        let _ = writeln!(
            o,
            "  model call by {}: {} {} ({} + {} tokens, {:.0} ms){}",
            line(&m.by),
            line(&m.provider),
            line(&m.model),
            m.input_tokens,
            m.output_tokens,
            m.latency_ms,
            m.error.as_deref().map(|e| format!(": {}", line(e))).unwrap_or_default()
        );
    }
    if !t.log.is_empty() {
        let _ = writeln!(o, "\nlog:");
        for l in &t.log {
            let _ = writeln!(o, "  {}", line(l));
        }
    }
    if let Some(s) = &t.stderr_tail {
        let _ = writeln!(o, "\nstderr (tail):\n{}", indent(s));
    }
    o
}
