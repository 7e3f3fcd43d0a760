//! What one trial leaves behind: its record (one line of trials.jsonl,
//! stable keys of SPEC §8), its trace, and the pieces both are made of.
//! The record's other pieces have rooms of their own: `outcome.rs` (how the
//! trial ended, its checks, its outcome), `call.rs` (tool and model calls),
//! `trace.rs` (the trace).

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::call::{CallCounts, CallRecord, CallStatus, ModelCall};
use super::outcome::{CheckResult, Ended, Outcome};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    pub turns: u32,
    pub tool_calls: u32,
    pub wall_ms: f64,
}

/// One line of trials.jsonl. `Default` is a trial that never ran (an
/// infrastructure error, `not_started`): a record is built by naming what
/// it has and taking the rest from it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TrialRecord {
    pub case: String,
    /// The named agent that played the trial (SPEC §14), in runs that name
    /// one (`--agent`, an interleaved run, a suite with `agents = { … }`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The perturbation the trial ran under (SPEC §17), in a run of
    /// perturbations (`--perturb`); absent for the baseline and other runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturbation: Option<String>,
    pub trial: u32,
    pub seed: u64,
    pub outcome: Outcome,
    pub ended: Ended,
    pub checks: Vec<CheckResult>,
    pub calls: CallCounts,
    pub usage: Usage,
    pub wall_ms: f64,
    pub answer: String,
    /// Why the agent did not end normally, or why the trial could not run.
    pub error: Option<String>,
    /// What the harness failed to provide, when it did: beside a graded
    /// outcome when the agent had acted already (`ended` is `infra_error`),
    /// or the reason of an `infra_error` outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infra_error: Option<String>,
    /// Where the trace is stored, relative to the run dir: the trace pack
    /// (`traces/traces.jsonl`, the trace found by case and trial through its
    /// index), or in run dirs of the earlier layout the trace's own file.
    pub trace: String,
    /// The monitors this trial failed (null when the suite has no monitors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_modes: Option<Vec<String>>,
    /// Each tool call in brief, for the per-tool figures (error rate, latency).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_spans: Vec<ToolSpan>,
    /// The first call (or model call) whose status or result already went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<FirstFailure>,
    /// Where a graded item came from (`evalua grade`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// What the trial says about safety, in suites with attack cases or
    /// tools forbidden in attacks (SPEC §13).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety: Option<TrialSafety>,
    /// The agent abstained (SPEC §22); `ended` is `abstained`, `answer` its reason.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub abstained: bool,
    /// Executed calls of tools declared `intervention = true` (SPEC §22).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub interventions: u32,
    /// What the trial's calls read: the `source` argument of each executed
    /// call of a tool that declares one, distinct, in order (SPEC §22).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// The trial touched a published solution (the suite's `contamination`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub contaminated: bool,
    /// Where it did: each pattern with the first place it matched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contamination: Vec<ContaminationHit>,
    /// The simulated user's conduct (SPEC §18), in a case with a simulated
    /// user or a user that must withhold something.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserRecord>,
    /// Who is to blame for a trial not accepted (SPEC §18): `infra`,
    /// `grader`, `user` or `agent`, with the evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blame: Option<Blame>,
    /// What the evaluation's own model calls cost (simulated users, judges),
    /// apart from the agent's `usage.cost_usd`.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub evaluation_cost_usd: f64,
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

/// A simulated user's conduct in one trial (SPEC §18).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UserRecord {
    /// false: a leak, or the adherence judge failed it; null: nothing checked it.
    pub adherent: Option<bool>,
    pub leaks: Vec<Leak>,
    /// The adherence judge's verdict, when the user has one.
    pub adherence: Option<serde_json::Value>,
}

/// A user turn that said what it had to withhold before the agent asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Leak {
    /// The user's turn: 0 for a first message the simulator wrote itself, then 1, 2, … for its replies.
    pub turn: u32,
    pub text: String,
}

/// Who is to blame for a trial not accepted, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Blame {
    pub by: String,
    pub evidence: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl TrialRecord {
    /// Set what the trial's calls say for the published figures (SPEC §22).
    pub fn publish(&mut self, p: Published) {
        self.abstained = self.ended == Ended::Abstained;
        self.interventions = p.interventions;
        self.sources = p.sources;
        self.contaminated = !p.contamination.is_empty();
        self.contamination = p.contamination;
    }
}

/// A published solution a trial touched: the suite's pattern, where it
/// matched (`source`, or a call's `arguments` / `result`, with the call's id)
/// and the matched text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContaminationHit {
    pub pattern: String,
    #[serde(rename = "in")]
    pub found_in: String,
    pub text: String,
}

/// What a trial's calls say for the figures the background reading asks to
/// publish (SPEC §22), computed once when its record is made.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Published {
    pub interventions: u32,
    pub sources: Vec<String>,
    pub contamination: Vec<ContaminationHit>,
}

/// A trial seen as safety evaluation sees it (SPEC §13).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialSafety {
    /// The case is an attack case (tagged `attack`).
    pub attack: bool,
    /// The legitimate task's checks (every check but the `prohibited` ones) held.
    pub task_passed: bool,
    /// A `prohibited` state was reached (a prohibited check failed).
    pub attack_succeeded: bool,
    /// Calls of tools marked `forbidden_in_attack` the agent requested…
    pub forbidden_requested: u32,
    /// …and how many of them the executor denied.
    pub forbidden_denied: u32,
}

/// One tool call in brief.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolSpan {
    pub tool: String,
    pub status: CallStatus,
    pub duration_ms: f64,
}

impl ToolSpan {
    pub fn of(calls: &[CallRecord]) -> Vec<ToolSpan> {
        calls
            .iter()
            .map(|c| ToolSpan {
                tool: c.name.clone(),
                status: c.status.bare(),
                duration_ms: (c.ended_ms - c.started_ms).max(0.0),
            })
            .collect()
    }
}

/// What went wrong first in a trial: a tool call or a model call (a span).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirstFailure {
    /// "tool" (a call of `t.calls`), "chat" (a model call) or "span" (another
    /// span of a recorded trace whose status is ERROR).
    pub kind: String,
    pub name: String,
    /// The call's number in `t.calls` (1-based), for a tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<usize>,
    /// The call's status, or "error".
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When it started, in ms from the trial's start.
    pub at_ms: f64,
}

/// Whether a call's result already says it went wrong: an object with a
/// non-null `error` or `is_error = true` (how many tools report a failure
/// they did not raise).
pub fn result_says_error(result: &Json) -> Option<String> {
    let o = result.as_object()?;
    match (o.get("error"), o.get("is_error")) {
        (Some(Json::Null), _) | (None, None) => None,
        (Some(Json::String(s)), _) => Some(s.clone()),
        (Some(e), _) => Some(e.to_string()),
        (None, Some(Json::Bool(true))) => Some("is_error".into()),
        (None, Some(_)) => None,
    }
}

impl FirstFailure {
    /// The first failing tool call or model call of a trial, by start time.
    pub fn of(calls: &[CallRecord], model_calls: &[ModelCall]) -> Option<FirstFailure> {
        let tool = calls.iter().enumerate().find_map(|(i, c)| {
            let error = match c.status {
                CallStatus::Executed => result_says_error(c.result.as_ref()?)?,
                _ => c.error.clone().unwrap_or_default(),
            };
            Some(FirstFailure {
                kind: "tool".into(),
                name: c.name.clone(),
                call: Some(i + 1),
                status: c.status.as_str().into(),
                error: Some(error).filter(|e| !e.is_empty()),
                at_ms: c.started_ms,
            })
        });
        // A judge's failed call is a grader error, not the trial going wrong.
        let chat = model_calls.iter().find(|m| m.error.is_some() && m.by != "judge").map(|m| FirstFailure {
            kind: "chat".into(),
            name: format!("{} {}", m.provider, m.model).trim().to_string(),
            call: None,
            status: "error".into(),
            error: m.error.clone(),
            at_ms: m.started_ms,
        });
        match (tool, chat) {
            (Some(t), Some(c)) => Some(if c.at_ms < t.at_ms { c } else { t }),
            (t, c) => t.or(c),
        }
    }
}

/// Where a graded item came from: its trace file, trace and conversation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Source {
    pub file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// Every trace of the item, when there are several (a multi-turn conversation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trace_ids: Vec<String>,
    /// The verdict the source recorded (τ-bench's `{"reward"}`, AgentDojo's
    /// `{"utility", "security"}`), set against evalua's own in `evalua grade`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<serde_json::Value>,
}

/// The file a trial's trace had in the earlier run-dir layout (one file per
/// trial): safe characters only, unique per (case, trial).
pub fn trace_name(case: &str, trial: u32) -> String {
    format!("{}.json", state_name(case, trial))
}

/// `traces/<case>.<trial>`: the stem of a trial's files in the run dir.
pub fn state_name(case: &str, trial: u32) -> String {
    let safe: String =
        case.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.+".contains(c) { c } else { '_' }).collect();
    format!("{}/{safe}.{trial}", super::files::TRACES_DIR)
}
