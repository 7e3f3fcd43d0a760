//! The replay agent: a recorded trace's tool calls, fed back through today's
//! executor in the same order with the same ids, and its final answer — so a
//! grader change can be re-checked against yesterday's behaviour without
//! calling the agent again. Calls are re-validated and re-authorised, so a
//! stricter schema or policy shows up as `rejected` / `denied` now.

use std::path::Path;

use crate::error::Error;
use crate::record::rundir::read_trace_file;
use crate::record::{Ended, RunDir, Trace};
use crate::trial::{AgentEnd, Trial};
use crate::util::paths::display_path;

pub fn run(trial: &Trial<'_>, path: &Path) -> AgentEnd {
    // A run dir replays the trace of the same (case, trial); a file replays itself.
    let (case, number) = (&trial.case.spec.id, trial.number);
    let found = if path.is_dir() {
        RunDir::open(path)
            .and_then(|d| d.find_trace(case, number))
            .and_then(|t| t.ok_or_else(|| Error::Input(format!("{}: no trace of {case}#{number}", display_path(path)))))
    } else {
        read_trace_file(path)
    };
    let trace: Trace = match found {
        Ok(t) => t,
        Err(e) => return AgentEnd::infra(format!("replay: {e}")),
    };
    // Agent turns other than the final answer (recorded as the last agent
    // message when the trial ended with one).
    let turns: Vec<_> = trace.messages.iter().filter(|m| m.role == "agent").collect();
    let has_final = trace.record.ended == Ended::Final || !trace.record.answer.is_empty();
    for m in turns.iter().take(if has_final { turns.len().saturating_sub(1) } else { turns.len() }) {
        if let Err(why) = trial.agent_says(m.content.clone()) {
            return AgentEnd::budget(&why);
        }
    }
    for call in &trace.calls {
        trial.call_tool(Some(call.id.clone()), &call.name, call.args.clone());
        if let Some(why) = trial.state.borrow().budget_hit.clone() {
            return AgentEnd::budget(&why);
        }
    }
    trial.state.borrow_mut().usage.turns += 1;
    let r = trace.record;
    AgentEnd { ended: r.ended, answer: r.answer, error: r.error, ..AgentEnd::running() }
}
