//! `suite:tool { … }`: a tool as the host keeps it (its handler stays in Lua).

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::{de, keys};

/// `suite:tool { … }` as the DSL normalised it (every key filled in; `run`
/// stays in Lua).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub params: Json,
    pub effect: String,
    #[serde(deserialize_with = "de::list")]
    pub requires: Vec<String>,
    /// An attack case must not call it: requests are counted as attempts (SPEC §13).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forbidden_in_attack: bool,
    /// The executor checks the arguments against `params` before the handler
    /// runs (default). `validate = false`: the schema is only shown to the
    /// agent and the handler judges the arguments, as in a harness that does
    /// not validate (τ-bench's tools raise their own errors).
    #[serde(skip_serializing_if = "Clone::clone")]
    pub validate: bool,
    /// A model agent's call to it ends the conversation: the agent gets no
    /// further step (τ-bench's `transfer_to_human_agents`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ends: bool,
    /// A call that runs is an intervention (a transfer to a human, an
    /// escalation), counted per trial (SPEC §22).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub intervention: bool,
    /// The parameter holding what a call reads (a URL, a document id): each
    /// executed call's value is one of the trial's `sources` (SPEC §22).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// `file:line` of its `suite:tool` (not part of the tool's contract).
    #[serde(rename(deserialize = "_where"), default, skip_serializing)]
    pub location: String,
}

impl keys::Keys for ToolSpec {
    const DSL_KEYS: &[&str] = &["_where"];
    /// The handler, a function.
    const LUA_KEYS: &[&str] = &["run"];
}
