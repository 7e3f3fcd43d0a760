//! A recorded trajectory re-executed (SPEC §14): its tool calls run again,
//! in order, through the executor on a fresh sandbox of its case, so the
//! checks see the final state (`t.db`, `t.initial`, prohibited queries) as
//! they do in a run. The conversation, the answer and how it ended are the
//! recorded ones. A call whose re-executed result differs from the recorded
//! one is marked `diverged`, with the recorded result beside the new one.
//!
//! `evalua grade --reexecute` (or the suite's `grade = { reexecute = true }`,
//! on by default for τ-bench's results) grades each item through [`run`],
//! which is one trial like any other (`super::run_item`): the same prepare,
//! executor, checks and record.

use std::path::PathBuf;

use serde_json::Value as Json;

use super::context::{AgentEnd, Trial};
use super::lifecycle::{Start, TrialOutput, run_in};
use super::plan::{Plan, Position};
use crate::otel::item::Recorded;
use crate::record::{CallRecord, Ended, Source};

/// What a recorded item brings to its re-execution.
pub struct Recording<'a> {
    pub recorded: &'a Recorded,
    /// The row (a dataset's task) the item ran on: its case is built from it
    /// instead of the suite's own row (τ-bench's results carry their task).
    pub row: Option<&'a Json>,
    /// Where it was read from.
    pub source: Source,
    /// The trial's work dir, unique among the items graded at once.
    pub workdir: PathBuf,
}

/// Re-execute `rec` as the trial at `pos` (its case's index and the number it says it is).
pub fn run(plan: &Plan, pos: Position, rec: Recording<'_>) -> TrialOutput {
    let mut out = super::worker::with_row(rec.row, || {
        run_in(plan, pos, rec.workdir.clone(), Start::Replay, |trial| drive(trial, rec.recorded))
    });
    // The recorded agent's time, tokens and cost, not the re-execution's.
    let r = &mut out.trace.record;
    r.usage = merged_usage(rec.recorded, &r.usage);
    r.wall_ms = rec.recorded.usage.wall_ms;
    r.source = Some(rec.source);
    out.trace.model_calls.splice(0..0, rec.recorded.model_calls.iter().cloned());
    out
}

fn merged_usage(r: &Recorded, now: &crate::record::Usage) -> crate::record::Usage {
    crate::record::Usage { tool_calls: now.tool_calls, ..r.usage.clone() }
}

fn drive(trial: &Trial<'_>, rec: &Recorded) -> AgentEnd {
    // The conversation as recorded; its final answer goes back in when the trial finishes.
    let mut messages = rec.messages.clone();
    let ended = rec.ended.unwrap_or(Ended::Final);
    if (!rec.answer.is_empty() || ended == Ended::Final)
        && messages.last().is_some_and(|m| m.role == "agent" && m.content == rec.answer)
    {
        messages.pop();
    }
    trial.state.borrow_mut().messages = messages;
    for call in &rec.calls {
        let reply = trial.call_tool(Some(call.id.clone()), &call.name, call.args.clone());
        if reply.unwind.is_some() {
            return AgentEnd {
                ended: Ended::Deadline,
                error: Some("re-executing the recorded calls did not finish before the deadline".into()),
                ..AgentEnd::running()
            };
        }
        let recorded = recorded_view(call);
        let diverged = if rec.opaque_results {
            (call.status == crate::record::CallStatus::Executed)
                != (reply.record.status == crate::record::CallStatus::Executed)
        } else {
            differs(&recorded, &reply.record)
        };
        if diverged {
            let mut st = trial.state.borrow_mut();
            if let Some(last) = st.calls.last_mut() {
                last.diverged = true;
                last.recorded = Some(recorded);
            }
        }
        if let Some(why) = trial.budget_hit() {
            return AgentEnd::budget(&why);
        }
    }
    AgentEnd { ended, answer: rec.answer.clone(), error: rec.error.clone(), ..AgentEnd::running() }
}

/// The recorded outcome of a call as its agent saw it: its result (text as
/// it is), or for a call that did not run, `Error: <error>`.
fn recorded_view(c: &CallRecord) -> Json {
    match (&c.result, &c.status) {
        (Some(r), _) => r.clone(),
        (None, crate::record::CallStatus::Executed) => Json::Null,
        (None, _) => Json::String(format!("Error: {}", c.error.as_deref().unwrap_or("the call did not run"))),
    }
}

/// A call's outcome as text, as τ-bench's agent sees it: the result (a
/// string as it is, anything else as JSON), or `Error: <error>`.
pub fn seen_text(c: &CallRecord) -> String {
    match &c.result {
        Some(Json::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None if c.status == crate::record::CallStatus::Executed => "null".into(),
        None => format!("Error: {}", c.error.as_deref().unwrap_or("the call did not run")),
    }
}

/// Whether the re-executed call's outcome differs from the recorded one: as
/// text, or (when both are JSON, as tools' results often are) as JSON values,
/// so a different key order is no divergence but 3 against 3.0 is.
pub fn differs(recorded: &Json, now: &CallRecord) -> bool {
    let now_text = seen_text(now);
    let was = match recorded {
        Json::String(s) => std::borrow::Cow::Borrowed(s.as_str()),
        other => std::borrow::Cow::Owned(other.to_string()),
    };
    if was == now_text {
        return false;
    }
    match (serde_json::from_str::<Json>(&was), serde_json::from_str::<Json>(&now_text)) {
        (Ok(a), Ok(b)) => !same_json(&a, &b),
        _ => true,
    }
}

/// JSON equality that keeps integers and floats apart (3 is not 3.0).
fn same_json(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x.is_f64() == y.is_f64() && x == y,
        (Json::Array(x), Json::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b)),
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::CallStatus;

    fn executed(result: Json) -> CallRecord {
        CallRecord {
            id: "c1".into(),
            requested_id: None,
            name: "t".into(),
            args: Json::Null,
            status: CallStatus::Executed,
            effect: None,
            result: Some(result),
            error: None,
            error_type: None,
            started_ms: 0.0,
            ended_ms: 0.0,
            diverged: false,
            recorded: None,
        }
    }

    #[test]
    fn results_differ_as_values_not_as_key_order() {
        let now = executed(Json::String(r#"{"a": 1, "b": [1, 2]}"#.into()));
        assert!(!differs(&Json::String(r#"{"b": [1, 2], "a": 1}"#.into()), &now));
        assert!(differs(&Json::String(r#"{"a": 1.0, "b": [1, 2]}"#.into()), &now), "3 and 3.0 differ");
        assert!(differs(&Json::String(r#"{"a": 1, "b": [2, 1]}"#.into()), &now), "list order matters");
        assert!(!differs(
            &Json::String("Error: user not found".into()),
            &executed(Json::String("Error: user not found".into()))
        ));
        let mut failed = executed(Json::Null);
        failed.result = None;
        failed.status = CallStatus::Failed;
        failed.error = Some("'x'".into());
        assert!(!differs(&Json::String("Error: 'x'".into()), &failed), "a raised error reads as Error: <message>");
        assert!(differs(&Json::String("ok".into()), &failed));
    }
}
