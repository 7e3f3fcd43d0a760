//! The agents a suite declares (`evalua.agent.*`, `agents = { … }`), and
//! how a command agent talks to the harness.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::model::{ModelAgentSpec, ProxySpec};
use super::{de, keys};

/// An agent as the DSL normalised it (`evalua.agent.*`): its `kind`, then
/// its own keys. A scripted agent's function stays in Lua.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AgentSpec {
    /// A scripted agent: a Lua file, or a function defined in the suite.
    Scripted { path: Option<PathBuf> },
    /// A program speaking JSON Lines (SPEC §4), one process per trial.
    Command(CommandAgentSpec),
    /// A recorded trace's tool calls, fed back through the executor.
    Replay { path: PathBuf },
    /// A model-driven tool loop in the host (`evalua.agent.openai` / `anthropic`:
    /// the DSL's kind is the provider).
    #[serde(alias = "openai", alias = "anthropic")]
    Model(ModelAgentSpec),
}

/// One of a suite's agents, by name (`agents = { gold = …, model = … }`).
#[derive(Debug, Clone, Serialize)]
pub struct NamedAgent {
    pub name: String,
    pub spec: AgentSpec,
}

/// The name a suite's only agent goes by when it declares `agent = …` without `agents`.
pub const DEFAULT_AGENT_NAME: &str = "default";

/// `evalua.agent.command { ... }`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandAgentSpec {
    #[serde(deserialize_with = "de::list")]
    pub cmd: Vec<String>,
    #[serde(default, deserialize_with = "de::list")]
    pub env: Vec<String>,
    #[serde(default, deserialize_with = "de::opt_list")]
    pub setup: Option<Vec<String>>,
    #[serde(default)]
    pub tools: ToolsVia,
    #[serde(default)]
    pub io: AgentIo,
    /// `model_proxy`: the endpoints the harness's model proxy forwards to.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "ProxySpec::read")]
    pub model_proxy: Option<ProxySpec>,
}

impl keys::Keys for CommandAgentSpec {
    /// `cwd` may only be "workdir" (the DSL checks it; nothing else to hold).
    const LUA_KEYS: &[&str] = &["cwd"];
}

/// How a command agent reaches the case's tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolsVia {
    /// `tool_call` / `tool_result` lines of the JSON Lines protocol.
    #[default]
    Protocol,
    /// An MCP server in the harness (streamable HTTP on 127.0.0.1), at `EVALUA_MCP_URL`.
    Mcp,
}

/// How a command agent's task input and final answer travel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentIo {
    /// `start` … `final` JSON Lines on stdin/stdout.
    #[default]
    Jsonl,
    /// The input as the last argument; the whole stdout, on exit 0, is the answer.
    Plain,
}
