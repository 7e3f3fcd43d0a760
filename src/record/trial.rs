//! What one trial leaves behind: its record (one line of trials.jsonl,
//! stable keys of SPEC §8), its trace, and the pieces both are made of.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::spec::FaultKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Accepted,
    Failed,
    Critical,
    GraderError,
    InfraError,
}

impl Outcome {
    pub const ALL: [Outcome; 5] =
        [Outcome::Accepted, Outcome::Failed, Outcome::Critical, Outcome::GraderError, Outcome::InfraError];
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Failed => "failed",
            Outcome::Critical => "critical",
            Outcome::GraderError => "grader_error",
            Outcome::InfraError => "infra_error",
        }
    }
}

/// How the agent's run ended (`t.ended`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ended {
    Final,
    Deadline,
    Budget,
    Crashed,
    ProtocolError,
    /// Something the harness provides (the agent's model endpoint, a
    /// simulated user's model) failed after the agent had acted: the trial is
    /// graded on what the agent did, its `infra_error` says what failed.
    InfraError,
    /// The agent never got its chance (an infrastructure error).
    NotStarted,
    /// The run was stopped (SIGINT, SIGTERM) while the trial ran: an
    /// infrastructure error, run again by `--resume`.
    Interrupted,
}

impl Ended {
    pub fn as_str(self) -> &'static str {
        match self {
            Ended::Final => "final",
            Ended::Deadline => "deadline",
            Ended::Budget => "budget",
            Ended::Crashed => "crashed",
            Ended::ProtocolError => "protocol_error",
            Ended::InfraError => "infra_error",
            Ended::NotStarted => "not_started",
            Ended::Interrupted => "interrupted",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    Executed,
    Failed,
    Rejected,
    Denied,
    Faulted,
}

impl CallStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Executed => "executed",
            CallStatus::Failed => "failed",
            CallStatus::Rejected => "rejected",
            CallStatus::Denied => "denied",
            CallStatus::Faulted => "faulted",
        }
    }
    /// The status the agent sees in its tool result.
    pub fn reply(self) -> &'static str {
        match self {
            CallStatus::Executed => "ok",
            CallStatus::Denied => "denied",
            _ => "error",
        }
    }
}

/// One tool request, recorded whether or not it ran.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallRecord {
    /// Unique within the trial: the agent's own id when it gave a free one.
    pub id: String,
    /// The id the agent gave when another call of the trial had it already
    /// (the agent's replies still carry it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_id: Option<String>,
    pub name: String,
    pub args: Json,
    pub status: CallStatus,
    pub effect: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Json>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub started_ms: f64,
    pub ended_ms: f64,
    /// The fault injected on this call (status `faulted`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<FaultRecord>,
}

impl CallRecord {
    /// The status the agent sees in its tool result: a fault that only
    /// reshapes a result the handler returned (`empty`, `partial`, `stale`)
    /// reaches the agent as a success.
    pub fn reply_status(&self) -> &'static str {
        match &self.fault {
            Some(f) if self.status == CallStatus::Faulted && f.handler_ran && self.error.is_none() => "ok",
            _ => self.status.reply(),
        }
    }

    /// Whether the tool's handler ran to the end (executed, or faulted after it ran):
    /// what a `requires` policy counts.
    pub fn handler_succeeded(&self) -> bool {
        match self.status {
            CallStatus::Executed => true,
            CallStatus::Faulted => self.fault.as_ref().is_some_and(|f| f.handler_ran),
            _ => false,
        }
    }
}

/// An injected fault (SPEC §11), as recorded on its call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultRecord {
    pub kind: FaultKind,
    /// Which rule fired: `"on_call 2"`, `"probability 0.3"`, `"every call"`.
    pub rule: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<f64>,
    /// The error the agent was told, for kinds that fail the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Whether the handler ran (its effects happened).
    pub handler_ran: bool,
    /// What the handler returned, before the fault reshaped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handler_result: Option<Json>,
    /// How many values the reshaping changed (items dropped, dates moved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<u64>,
    /// `inject`: the attacker's text planted in the result the agent got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected: Option<String>,
    /// `inject`: where it went: a path into the result (`entries.2.message`),
    /// `result` (a string result), `injected` (a key added to an object) or
    /// `[N]` (an item appended to a list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CallCounts {
    pub requested: u32,
    pub executed: u32,
    pub failed: u32,
    pub rejected: u32,
    pub denied: u32,
    pub faulted: u32,
}

impl CallCounts {
    pub fn of(calls: &[CallRecord]) -> Self {
        let mut c = CallCounts { requested: calls.len() as u32, ..Default::default() };
        for call in calls {
            match call.status {
                CallStatus::Executed => c.executed += 1,
                CallStatus::Failed => c.failed += 1,
                CallStatus::Rejected => c.rejected += 1,
                CallStatus::Denied => c.denied += 1,
                CallStatus::Faulted => c.faulted += 1,
            }
        }
        c
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    pub turns: u32,
    pub tool_calls: u32,
    pub wall_ms: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckResult {
    pub name: String,
    /// true / false; null when the check raised (a grader error) or was skipped.
    pub passed: Option<bool>,
    pub critical: bool,
    pub evidence: Json,
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
}

/// One line of trials.jsonl.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialRecord {
    pub case: String,
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
    /// What the trial says about safety, in suites with attack cases or
    /// tools forbidden in attacks (SPEC §13).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety: Option<TrialSafety>,
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

/// A message of the conversation (`t.messages`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OutboxItem {
    pub kind: String,
    pub to: String,
    pub body: Json,
}

/// The full trace of a trial, one line of the run dir's trace pack.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trace {
    pub case: String,
    pub trial: u32,
    pub seed: u64,
    pub input: String,
    pub outcome: Outcome,
    pub ended: Ended,
    pub answer: String,
    pub error: Option<String>,
    /// As in the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infra_error: Option<String>,
    pub messages: Vec<Message>,
    pub calls: Vec<CallRecord>,
    pub outbox: Vec<OutboxItem>,
    pub usage: Usage,
    pub checks: Vec<CheckResult>,
    pub log: Vec<String>,
    pub stderr_tail: Option<String>,
    /// Every model call made for the trial (model agents, simulated users, the model proxy).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_calls: Vec<ModelCall>,
    /// What the trial changed (SPEC §10); absent when it was not kept (`--no-state`, an infrastructure error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<super::state::StateRecord>,
}

/// Which model API a call went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelApi {
    /// OpenAI-compatible `/chat/completions`.
    ChatCompletions,
    /// Anthropic `/v1/messages`.
    Messages,
    /// OpenAI `/responses`.
    Responses,
    /// `/models` (OpenAI or Anthropic): a listing, no tokens.
    Models,
    /// Anthropic `/v1/messages/count_tokens`: counted, not spent.
    CountTokens,
}

impl ModelApi {
    /// Whether a call of this API generates text (and spends tokens).
    pub fn generates(self) -> bool {
        matches!(self, ModelApi::ChatCompletions | ModelApi::Messages | ModelApi::Responses)
    }
}

/// One model call: who made it, its usage, cost and latency. Never a key.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ModelCall {
    /// "agent" (a model agent), "user" (a simulated user) or "proxy" (a command agent's call through the model proxy).
    pub by: String,
    pub provider: String,
    /// The API called; absent in traces written before it was recorded (then a chat call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<ModelApi>,
    pub model: String,
    pub started_ms: f64,
    pub latency_ms: f64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// From the price table; null when the model's price is unknown.
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    #[serde(default)]
    pub attempts: u32,
    /// Why the call failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Decide a trial's outcome by the three-valued logic of SPEC §8.
pub fn outcome_of(infra_error: bool, checks: &[CheckResult]) -> Outcome {
    if infra_error {
        Outcome::InfraError
    } else if checks.iter().any(|c| c.critical && c.passed == Some(false)) {
        Outcome::Critical
    } else if checks.iter().any(|c| c.passed == Some(false)) {
        Outcome::Failed
    } else if checks.iter().any(|c| c.passed.is_none() && !c.skipped) {
        Outcome::GraderError
    } else {
        Outcome::Accepted
    }
}

/// The file a trial's trace had in the earlier run-dir layout (one file per
/// trial): safe characters only, unique per (case, trial).
pub fn trace_name(case: &str, trial: u32) -> String {
    format!("{}.json", state_name(case, trial))
}

/// `traces/<case>.<trial>`: the stem of a trial's files in the run dir.
pub fn state_name(case: &str, trial: u32) -> String {
    let safe: String =
        case.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    format!("traces/{safe}.{trial}")
}
