//! The calls a trial made, as its record and trace keep them: each tool
//! request with what became of it (and the fault injected on it, SPEC §11),
//! and each model call with its usage and cost.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::spec::FaultKind;

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
