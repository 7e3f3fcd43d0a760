//! What one trial leaves behind: its record (one line of trials.jsonl,
//! stable keys of SPEC §8), its trace, and the pieces both are made of.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::spec::FaultKind;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Accepted,
    Failed,
    Critical,
    GraderError,
    #[default]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ended {
    Final,
    /// The agent declined the task with a reason (SPEC §22): right where its
    /// case requires abstaining (`should_abstain`), an unsolved task elsewhere.
    Abstained,
    Deadline,
    Budget,
    Crashed,
    ProtocolError,
    /// Something the harness provides (the agent's model endpoint, a
    /// simulated user's model) failed after the agent had acted: the trial is
    /// graded on what the agent did, its `infra_error` says what failed.
    InfraError,
    /// The agent never got its chance (an infrastructure error).
    #[default]
    NotStarted,
    /// The run was stopped (SIGINT, SIGTERM) while the trial ran: an
    /// infrastructure error, run again by `--resume`.
    Interrupted,
}

impl Ended {
    pub fn as_str(self) -> &'static str {
        match self {
            Ended::Final => "final",
            Ended::Abstained => "abstained",
            Ended::Deadline => "deadline",
            Ended::Budget => "budget",
            Ended::Crashed => "crashed",
            Ended::ProtocolError => "protocol_error",
            Ended::InfraError => "infra_error",
            Ended::NotStarted => "not_started",
            Ended::Interrupted => "interrupted",
        }
    }

    /// The agent did not end its part normally: it crashed (a non-zero
    /// exit, a signal) or broke the protocol. Such a trial is never accepted
    /// unless its case says why it may be ([`outcome_after`]).
    pub fn abnormal(self) -> bool {
        matches!(self, Ended::Crashed | Ended::ProtocolError)
    }

    /// The agent ended its part itself: an answer or an abstention.
    pub fn by_agent(self) -> bool {
        matches!(self, Ended::Final | Ended::Abstained)
    }
}

/// What became of a tool request. A faulted call carries the fault that
/// fired on it (SPEC §11); a trace from elsewhere (`evalua grade`, grader
/// tests) may say `faulted` without saying which fault.
#[derive(Debug, Clone, PartialEq)]
pub enum CallStatus {
    Executed,
    Failed,
    Rejected,
    Denied,
    Faulted(Option<Box<FaultRecord>>),
}

impl CallStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            CallStatus::Executed => "executed",
            CallStatus::Failed => "failed",
            CallStatus::Rejected => "rejected",
            CallStatus::Denied => "denied",
            CallStatus::Faulted(_) => "faulted",
        }
    }
    /// The status the agent sees in its tool result.
    pub fn reply(&self) -> &'static str {
        match self {
            CallStatus::Executed => "ok",
            CallStatus::Denied => "denied",
            _ => "error",
        }
    }
    /// A call faulted by `fault`.
    pub fn faulted(fault: FaultRecord) -> CallStatus {
        CallStatus::Faulted(Some(Box::new(fault)))
    }
    /// The fault that fired on the call, if it says.
    pub fn fault(&self) -> Option<&FaultRecord> {
        match self {
            CallStatus::Faulted(f) => f.as_deref(),
            _ => None,
        }
    }
    pub fn is_faulted(&self) -> bool {
        matches!(self, CallStatus::Faulted(_))
    }
    /// The status without its fault: what a span or a count needs.
    pub fn bare(&self) -> CallStatus {
        match self {
            CallStatus::Faulted(_) => CallStatus::Faulted(None),
            other => other.clone(),
        }
    }
}

/// A status alone, as a string (`"faulted"`: which fault is the call's `fault` key).
impl Serialize for CallStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for CallStatus {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "snake_case")]
        enum Name {
            Executed,
            Failed,
            Rejected,
            Denied,
            Faulted,
        }
        Ok(match Name::deserialize(d)? {
            Name::Executed => CallStatus::Executed,
            Name::Failed => CallStatus::Failed,
            Name::Rejected => CallStatus::Rejected,
            Name::Denied => CallStatus::Denied,
            Name::Faulted => CallStatus::Faulted(None),
        })
    }
}

/// One tool request, recorded whether or not it ran. In a trace, its fault
/// (in the status) is the `fault` key after `ended_ms` ([`CallFile`]).
#[derive(Debug, Clone)]
pub struct CallRecord {
    /// Unique within the trial: the agent's own id when it gave a free one.
    pub id: String,
    /// The id the agent gave when another call of the trial had it already
    /// (the agent's replies still carry it).
    pub requested_id: Option<String>,
    pub name: String,
    pub args: Json,
    pub status: CallStatus,
    pub effect: Option<String>,
    pub result: Option<Json>,
    pub error: Option<String>,
    /// The class of the error, when the source names one (a recorded span's
    /// `error.type` or exception type).
    pub error_type: Option<String>,
    pub started_ms: f64,
    pub ended_ms: f64,
    /// A recorded call re-executed (`evalua grade --reexecute`, SPEC §14)
    /// whose result differs from the recorded one.
    pub diverged: bool,
    /// The recorded result of a call that diverged, as its agent saw it.
    pub recorded: Option<Json>,
}

/// A call as a trace file holds it: the keys and their order, declared
/// once, borrowed to write and owned to read.
#[derive(Serialize, Deserialize)]
struct CallFile<'a> {
    id: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    requested_id: Option<Cow<'a, str>>,
    name: Cow<'a, str>,
    args: Cow<'a, Json>,
    status: Cow<'a, str>,
    effect: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<Cow<'a, Json>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error_type: Option<Cow<'a, str>>,
    started_ms: f64,
    ended_ms: f64,
    /// The fault injected on this call (status `faulted`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fault: Option<Cow<'a, FaultRecord>>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    diverged: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    recorded: Option<Cow<'a, Json>>,
}

impl Serialize for CallRecord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = self;
        CallFile {
            id: Cow::Borrowed(&c.id),
            requested_id: c.requested_id.as_deref().map(Cow::Borrowed),
            name: Cow::Borrowed(&c.name),
            args: Cow::Borrowed(&c.args),
            status: Cow::Borrowed(c.status.as_str()),
            effect: c.effect.as_deref().map(Cow::Borrowed),
            result: c.result.as_ref().map(Cow::Borrowed),
            error: c.error.as_deref().map(Cow::Borrowed),
            error_type: c.error_type.as_deref().map(Cow::Borrowed),
            started_ms: c.started_ms,
            ended_ms: c.ended_ms,
            fault: c.status.fault().map(Cow::Borrowed),
            diverged: c.diverged,
            recorded: c.recorded.as_ref().map(Cow::Borrowed),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for CallRecord {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let f = CallFile::deserialize(d)?;
        let status =
            match (CallStatus::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(&f.status))?, f.fault) {
                (CallStatus::Faulted(_), fault) => CallStatus::Faulted(fault.map(|f| Box::new(f.into_owned()))),
                (status, None) => status,
                (status, Some(_)) => {
                    return Err(serde::de::Error::custom(format_args!(
                        "call '{}': a fault on a call whose status is {}, not faulted",
                        f.id,
                        status.as_str()
                    )));
                }
            };
        Ok(CallRecord {
            id: f.id.into_owned(),
            requested_id: f.requested_id.map(Cow::into_owned),
            name: f.name.into_owned(),
            args: f.args.into_owned(),
            status,
            effect: f.effect.map(Cow::into_owned),
            result: f.result.map(Cow::into_owned),
            error: f.error.map(Cow::into_owned),
            error_type: f.error_type.map(Cow::into_owned),
            started_ms: f.started_ms,
            ended_ms: f.ended_ms,
            diverged: f.diverged,
            recorded: f.recorded.map(Cow::into_owned),
        })
    }
}

impl CallRecord {
    /// The status the agent sees in its tool result: a fault that only
    /// reshapes a result the handler returned (`empty`, `partial`, `stale`)
    /// reaches the agent as a success.
    pub fn reply_status(&self) -> &'static str {
        match self.status.fault() {
            Some(f) if f.handler_ran && self.error.is_none() => "ok",
            _ => self.status.reply(),
        }
    }

    /// Whether the tool's handler ran to the end (executed, or faulted after it ran):
    /// what a `requires` policy counts.
    pub fn handler_succeeded(&self) -> bool {
        match &self.status {
            CallStatus::Executed => true,
            CallStatus::Faulted(f) => f.as_ref().is_some_and(|f| f.handler_ran),
            _ => false,
        }
    }

    /// The fault injected on this call, if the trace says.
    pub fn fault(&self) -> Option<&FaultRecord> {
        self.status.fault()
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
                CallStatus::Faulted(_) => c.faulted += 1,
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

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CheckResult {
    pub name: String,
    /// true / false; null when the check raised (a grader error), was skipped
    /// or was not applicable.
    pub passed: Option<bool>,
    pub critical: bool,
    pub evidence: Json,
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
    /// Why the check could not apply: it needs what the trial does not have
    /// (a recorded trace has no `t.db`, `t.files`, …). Counted apart, never a pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_applicable: Option<String>,
    /// The monitor this result comes from (`monitors = { name = check }`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<String>,
}

/// What a check's result says, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    /// The check raised, hit a limit or could not decide: a grader error.
    Error,
    /// No judge was reachable (or the check returned `evalua.SKIP`).
    Skipped,
    /// The check needs state the trial does not have (a recorded trace).
    NotApplicable,
}

impl Verdict {
    /// The label of `gen_ai.evaluation.score.label`.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Error => "error",
            Verdict::Skipped => "skipped",
            Verdict::NotApplicable => "not_applicable",
        }
    }
}

/// A judge cascade's verdict, as its check's evidence records it
/// (`judge.cascade`, SPEC §15): which judge decided, and what each stage did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CascadeEvidence {
    /// "first" or "then".
    pub decided_by: String,
    pub escalated: bool,
    #[serde(default)]
    pub stages: Vec<CascadeStage>,
}

/// One stage of a cascade on one item.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CascadeStage {
    /// "first" or "then".
    pub stage: String,
    /// The stage's model id.
    pub judge: String,
    #[serde(default)]
    pub calls: u32,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cost_usd: f64,
}

impl CheckResult {
    /// The cascade this check's verdict came from, if it was a `judge.cascade`.
    pub fn cascade(&self) -> Option<CascadeEvidence> {
        self.evidence.get("decided_by")?;
        CascadeEvidence::deserialize(&self.evidence).ok()
    }

    pub fn verdict(&self) -> Verdict {
        match self.passed {
            Some(true) => Verdict::Pass,
            Some(false) => Verdict::Fail,
            None if self.not_applicable.is_some() => Verdict::NotApplicable,
            None if self.skipped => Verdict::Skipped,
            None => Verdict::Error,
        }
    }
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

/// The full trace of a trial, one line of the run dir's trace pack: the
/// trial's record and what only the trace keeps. The fields the trace file
/// shares with the record (case, trial, seed, outcome, ended, answer, error,
/// infra_error, usage, checks) live once, in `record`.
///
/// A trace read from its file alone (`RunDir::find_trace`, a trace file)
/// carries only what the file holds: the record's other fields are empty
/// (no agent, no failure modes, safety or source), its call counts and
/// per-tool spans are those of the trace's calls, its `wall_ms` the usage's.
/// Read for a record (`RunDir::read_trace`, `load_trace`) it carries that
/// record, as trials.jsonl has it.
#[derive(Debug, Clone)]
pub struct Trace {
    pub record: TrialRecord,
    pub input: String,
    pub messages: Vec<Message>,
    pub calls: Vec<CallRecord>,
    pub outbox: Vec<OutboxItem>,
    pub log: Vec<String>,
    pub stderr_tail: Option<String>,
    /// Every model call made for the trial (model agents, simulated users, the model proxy).
    pub model_calls: Vec<ModelCall>,
    /// When the trial started (RFC 3339, UTC): calls' `started_ms` count from here.
    pub started_at: Option<String>,
    /// What the trial changed (SPEC §10); absent when it was not kept (`--no-state`, an infrastructure error).
    pub state: Option<super::state::StateRecord>,
}

impl Trace {
    /// The trace of `record` with nothing more: no input, messages or calls
    /// (an infrastructure error, a kept record whose trace file is gone).
    pub fn of(record: TrialRecord) -> Trace {
        Trace {
            record,
            input: String::new(),
            messages: Vec::new(),
            calls: Vec::new(),
            outbox: Vec::new(),
            log: Vec::new(),
            stderr_tail: None,
            model_calls: Vec::new(),
            started_at: None,
            state: None,
        }
    }
}

/// A trace as its file holds it: the keys, in their order, of the trace
/// pack's lines (unchanged since the record and the trace were twins).
/// Borrowed from a [`Trace`] to write one, owned to read one.
#[derive(Serialize, Deserialize)]
struct TraceFile<'a> {
    case: Cow<'a, str>,
    trial: u32,
    seed: u64,
    input: Cow<'a, str>,
    outcome: Outcome,
    ended: Ended,
    answer: Cow<'a, str>,
    #[serde(default)]
    error: Cow<'a, Option<String>>,
    /// As in the record.
    #[serde(default, skip_serializing_if = "none")]
    infra_error: Cow<'a, Option<String>>,
    messages: Cow<'a, [Message]>,
    calls: Cow<'a, [CallRecord]>,
    outbox: Cow<'a, [OutboxItem]>,
    usage: Cow<'a, Usage>,
    checks: Cow<'a, [CheckResult]>,
    log: Cow<'a, [String]>,
    #[serde(default)]
    stderr_tail: Cow<'a, Option<String>>,
    #[serde(default, skip_serializing_if = "empty")]
    model_calls: Cow<'a, [ModelCall]>,
    #[serde(default, skip_serializing_if = "none")]
    started_at: Cow<'a, Option<String>>,
    #[serde(default, skip_serializing_if = "none")]
    state: Cow<'a, Option<super::state::StateRecord>>,
}

fn none<T: Clone>(v: &Cow<'_, Option<T>>) -> bool {
    v.is_none()
}

fn empty<T: Clone>(v: &Cow<'_, [T]>) -> bool {
    v.is_empty()
}

impl Serialize for Trace {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = &self.record;
        TraceFile {
            case: Cow::Borrowed(&r.case),
            trial: r.trial,
            seed: r.seed,
            input: Cow::Borrowed(&self.input),
            outcome: r.outcome,
            ended: r.ended,
            answer: Cow::Borrowed(&r.answer),
            error: Cow::Borrowed(&r.error),
            infra_error: Cow::Borrowed(&r.infra_error),
            messages: Cow::Borrowed(&self.messages),
            calls: Cow::Borrowed(&self.calls),
            outbox: Cow::Borrowed(&self.outbox),
            usage: Cow::Borrowed(&r.usage),
            checks: Cow::Borrowed(&r.checks),
            log: Cow::Borrowed(&self.log),
            stderr_tail: Cow::Borrowed(&self.stderr_tail),
            model_calls: Cow::Borrowed(&self.model_calls),
            started_at: Cow::Borrowed(&self.started_at),
            state: Cow::Borrowed(&self.state),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Trace {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Trace, D::Error> {
        let f = TraceFile::deserialize(d)?;
        let calls = f.calls.into_owned();
        let usage = f.usage.into_owned();
        let record = TrialRecord {
            case: f.case.into_owned(),
            agent: None,
            perturbation: None,
            trial: f.trial,
            seed: f.seed,
            outcome: f.outcome,
            ended: f.ended,
            checks: f.checks.into_owned(),
            calls: CallCounts::of(&calls),
            wall_ms: usage.wall_ms,
            usage,
            answer: f.answer.into_owned(),
            error: f.error.into_owned(),
            infra_error: f.infra_error.into_owned(),
            trace: String::new(),
            failure_modes: None,
            tool_spans: ToolSpan::of(&calls),
            first_failure: None,
            source: None,
            safety: None,
            abstained: f.ended == Ended::Abstained,
            ..Default::default()
        };
        Ok(Trace {
            record,
            input: f.input.into_owned(),
            messages: f.messages.into_owned(),
            calls,
            outbox: f.outbox.into_owned(),
            log: f.log.into_owned(),
            stderr_tail: f.stderr_tail.into_owned(),
            model_calls: f.model_calls.into_owned(),
            started_at: f.started_at.into_owned(),
            state: f.state.into_owned(),
        })
    }
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
    /// "agent" (a model agent), "user" (a simulated user), "proxy" (a command
    /// agent's call through the model proxy) or "judge" (a judge check's call).
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
    } else if checks.iter().any(|c| c.verdict() == Verdict::Error) {
        Outcome::GraderError
    } else {
        Outcome::Accepted
    }
}

/// A trial's outcome (SPEC §8): its checks' ([`outcome_of`]), except that a
/// trial whose agent ended abnormally ([`Ended::abnormal`]) is `failed` where
/// its checks would have accepted it (or could not decide), unless its case
/// accepts such an ending (`accept_abnormal_end`, with its reason). The
/// seed's contract: success is observable *and* the run respected its
/// contract; an agent that crashed or broke the protocol did not.
///
/// Likewise an abstention (SPEC §22) is an unsolved task, `failed`, except
/// on a case whose contract requires abstaining (`should_abstain`), where its
/// checks decide (by default `check.abstained()`).
pub fn outcome_after(infra_error: bool, ended: Ended, case: EndRules, checks: &[CheckResult]) -> Outcome {
    let refused = (ended.abnormal() && !case.abnormal_accepted) || (ended == Ended::Abstained && !case.should_abstain);
    match outcome_of(infra_error, checks) {
        Outcome::Accepted | Outcome::GraderError if refused => Outcome::Failed,
        o => o,
    }
}

/// What a case says about how its agent may end (for [`outcome_after`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndRules {
    /// `accept_abnormal_end` is given: a crash or protocol error may pass.
    pub abnormal_accepted: bool,
    /// `should_abstain = true`: abstaining is the case's right answer.
    pub should_abstain: bool,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn call(status: CallStatus) -> CallRecord {
        CallRecord {
            id: "c1".into(),
            requested_id: None,
            name: "lookup".into(),
            args: serde_json::json!({ "q": 1 }),
            status,
            effect: Some("read".into()),
            result: None,
            error: Some("rate limited".into()),
            error_type: None,
            started_ms: 1.0,
            ended_ms: 2.0,
            diverged: false,
            recorded: None,
        }
    }

    #[test]
    fn an_agent_that_ended_abnormally_is_never_accepted_unless_its_case_says_why() {
        let passed = [CheckResult { name: "state".into(), passed: Some(true), ..Default::default() }];
        let raised = [CheckResult { name: "judge".into(), error: Some("boom".into()), ..Default::default() }];
        let critical = [CheckResult { name: "p".into(), passed: Some(false), critical: true, ..Default::default() }];
        for ended in [Ended::Crashed, Ended::ProtocolError] {
            assert_eq!(outcome_after(false, ended, NONE, &passed), Outcome::Failed);
            assert_eq!(outcome_after(false, ended, NONE, &raised), Outcome::Failed);
            assert_eq!(outcome_after(false, ended, NONE, &critical), Outcome::Critical);
            assert_eq!(outcome_after(false, ended, ABNORMAL, &passed), Outcome::Accepted);
            assert_eq!(outcome_after(true, ended, NONE, &passed), Outcome::InfraError);
        }
        for ended in [Ended::Final, Ended::Deadline, Ended::Budget, Ended::InfraError] {
            assert_eq!(outcome_after(false, ended, NONE, &passed), Outcome::Accepted, "{ended:?}");
        }
    }

    const NONE: EndRules = EndRules { abnormal_accepted: false, should_abstain: false };
    const ABNORMAL: EndRules = EndRules { abnormal_accepted: true, should_abstain: false };

    #[test]
    fn an_abstention_is_an_unsolved_task_unless_the_case_requires_abstaining() {
        let passed = [CheckResult { name: "state".into(), passed: Some(true), ..Default::default() }];
        let failed = [CheckResult { name: "abstained".into(), passed: Some(false), ..Default::default() }];
        let abstain = EndRules { abnormal_accepted: false, should_abstain: true };
        assert_eq!(outcome_after(false, Ended::Abstained, NONE, &passed), Outcome::Failed);
        assert_eq!(outcome_after(false, Ended::Abstained, ABNORMAL, &passed), Outcome::Failed);
        assert_eq!(outcome_after(false, Ended::Abstained, abstain, &passed), Outcome::Accepted);
        assert_eq!(outcome_after(false, Ended::Final, abstain, &failed), Outcome::Failed);
    }

    #[test]
    fn a_faulted_call_keeps_its_fault_in_the_status_and_its_trace_keys_in_place() {
        let fault = FaultRecord {
            kind: FaultKind::RateLimit,
            rule: "on_call 1".into(),
            retry_after_s: Some(2.0),
            message: Some("rate limited".into()),
            handler_ran: false,
            handler_result: None,
            changed: None,
            injected: None,
            target: None,
        };
        let c = call(CallStatus::faulted(fault.clone()));
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(
            text,
            r#"{"id":"c1","name":"lookup","args":{"q":1},"status":"faulted","effect":"read","error":"rate limited","started_ms":1.0,"ended_ms":2.0,"fault":{"kind":"rate_limit","rule":"on_call 1","retry_after_s":2.0,"message":"rate limited","handler_ran":false}}"#
        );
        let back: CallRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back.fault(), Some(&fault));
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        assert_eq!(c.reply_status(), "error");

        // A trace from elsewhere may say faulted without which fault; a fault on
        // a call that is not faulted is refused.
        let bare: CallRecord = serde_json::from_str(&text.replace(r#","fault":{"kind":"rate_limit","rule":"on_call 1","retry_after_s":2.0,"message":"rate limited","handler_ran":false}"#, "")).unwrap();
        assert_eq!(bare.status, CallStatus::Faulted(None));
        let e = serde_json::from_str::<CallRecord>(&text.replace(r#""status":"faulted""#, r#""status":"failed""#))
            .unwrap_err()
            .to_string();
        assert!(e.contains("a fault on a call whose status is failed"), "{e}");
        let executed = serde_json::to_string(&call(CallStatus::Executed)).unwrap();
        assert!(executed.contains(r#""status":"executed""#) && !executed.contains("fault"), "{executed}");
    }
}
