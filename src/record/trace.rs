//! A trial's full trace, one line of the run dir's trace pack: its record
//! and what only the trace keeps (input, messages, calls, outbox, log).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::call::{CallCounts, CallRecord, ModelCall};
use super::outcome::{CheckResult, Ended, Outcome};
use super::trial::{ToolSpan, TrialRecord, Usage};

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
