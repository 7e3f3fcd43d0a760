//! Whole trajectories in other harnesses' formats, for `evalua grade`: a
//! file is one of them when a [`TrajectoryFormat`] of `formats::FORMATS` claims its
//! first bytes; it is then read whole (up to 256 MiB), each trajectory handed
//! on as an item, as a recorded trace is read (the span formats, OTLP JSON and
//! flat span lines, are read across files in `read.rs`). The formats:
//!
//! - **τ-bench's results** (`taubench.rs`): `run.py`'s output and its
//!   published `historical_trajectories/`; re-executed (SPEC §14).
//! - **ATIF** (`atif.rs`): Harbor's Agent Trajectory Interchange Format.
//! - **AgentDojo's run logs** (`agentdojo.rs`): one file per task; re-executed (SPEC §21).
//!
//! A new format is one file implementing [`TrajectoryFormat`] and one line in
//! `formats::FORMATS`. A bad entry is a warning naming it; the others are still read.

use serde_json::{Map, Value as Json};

use super::item::Recorded;
use crate::error::Result;
use crate::record::{CallRecord, CallStatus, Message};

/// A format of whole-trajectory files.
pub trait TrajectoryFormat: Sync {
    /// Its name in the manifest (`trace_inputs[].format`).
    fn name(&self) -> &'static str;
    /// What it is, for the warning about a file no format could read.
    fn describe(&self) -> &'static str;
    /// Whether a file whose first bytes (up to 4 KiB) are `head` is of this format.
    fn claims(&self, head: &[u8]) -> bool;
    /// Whether its trajectories are re-executed (their calls run again on a fresh sandbox).
    fn reexecutes(&self) -> bool;
    /// Read a claimed file's bytes (`file` names it in warnings), each
    /// trajectory to `emit`; Ok(false) when it turns out not to be of this format.
    fn read(
        &self,
        data: &[u8],
        file: &str,
        warn: &mut dyn FnMut(String),
        emit: &mut dyn FnMut(Trajectory) -> Result<()>,
    ) -> Result<bool>;
}

/// A trajectory read whole: one item to grade.
#[derive(Debug, Clone)]
pub struct Trajectory {
    /// How it is named in warnings and `source` (`task_7 trial 2`, a session id).
    pub key: String,
    /// Where it is in its file, for warnings (`entry 3`, `session s1`).
    pub at: String,
    pub file: String,
    /// The case it is a trial of (`task_<task_id>`), when the format says.
    pub case: Option<String>,
    /// Its trial number (τ-bench's `trial + 1`), when the format says.
    pub trial: Option<u32>,
    pub recorded: Recorded,
    /// The task it ran on (τ-bench's `info.task`): the row its case is built from.
    pub task: Option<Json>,
    /// The format's name.
    pub format: &'static str,
    /// Its calls are run again on a fresh sandbox and the checks decide (SPEC §14).
    pub reexecute: bool,
    /// What the source recorded as its verdict, when it has one (τ-bench's
    /// `{"reward": r}`, AgentDojo's `{"utility": u, "security": s}`): kept as
    /// the item's `source.verdict`, and set against evalua's by `evalua grade`.
    pub verdict: Option<Json>,
    /// The suite it was recorded on, when the format says (AgentDojo's logs:
    /// `agentdojo-<suite_name>`, the name of evalua's port): an item of
    /// another suite is not graded (its case ids would match the wrong tasks).
    pub suite: Option<String>,
}

pub(super) fn text(v: Option<&Json>) -> String {
    match v {
        Some(Json::String(s)) => s.clone(),
        None | Some(Json::Null) => String::new(),
        Some(other) => other.to_string(),
    }
}

/// A tool call's arguments: a JSON object, or the text of one (OpenAI's form).
pub(super) fn arguments(v: Option<&Json>, what: &str) -> std::result::Result<Json, String> {
    match v {
        None | Some(Json::Null) => Ok(Json::Object(Map::new())),
        Some(Json::String(s)) => match serde_json::from_str::<Json>(s) {
            Ok(j @ Json::Object(_)) => Ok(j),
            Ok(_) => Err(format!("{what}: arguments are JSON but not an object: {}", snippet(s))),
            Err(e) => Err(format!("{what}: arguments are not JSON ({e}): {}", snippet(s))),
        },
        Some(j @ Json::Object(_)) => Ok(j.clone()),
        Some(other) => Err(format!("{what}: arguments are not an object: {}", snippet(&other.to_string()))),
    }
}

pub(super) fn snippet(s: &str) -> String {
    if s.chars().count() > 80 { format!("{}…", s.chars().take(80).collect::<String>()) } else { s.to_string() }
}

pub(super) fn call(id: String, name: String, args: Json) -> CallRecord {
    CallRecord {
        id,
        requested_id: None,
        name,
        args,
        status: CallStatus::Executed,
        effect: None,
        result: None,
        error: None,
        error_type: None,
        started_ms: 0.0,
        ended_ms: 0.0,
        diverged: false,
        recorded: None,
    }
}

pub(super) fn message(role: &str, content: String) -> Message {
    Message { role: role.into(), content, call_id: None }
}

/// The recorded conversation's input, answer and turns, from its messages.
pub(super) fn finish(r: &mut Recorded) {
    r.input = r.messages.iter().find(|m| m.role == "user").map(|m| m.content.clone()).unwrap_or_default();
    r.answer = r.messages.iter().rev().find(|m| m.role == "agent").map(|m| m.content.clone()).unwrap_or_default();
    r.usage.turns = r.messages.iter().filter(|m| m.role == "agent").count() as u32;
    r.usage.tool_calls = r.calls.len() as u32;
    r.readable = true;
}
