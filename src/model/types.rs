//! What model calls are made of: endpoints (resolved from the suite's
//! `ModelSpec` and the environment), requests, responses, usage and errors.

use std::fmt;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::price;
use crate::record::ModelApi;
use crate::spec::ModelSpec;
pub use crate::spec::Prices;

pub use crate::spec::Provider;

/// Where and how to reach a model. Holds the *name* of the key's environment
/// variable, never the key.
#[derive(Debug, Clone, Serialize)]
pub struct Endpoint {
    pub provider: Provider,
    /// OpenAI-compatible: up to and including `/v1` (requests go to
    /// `{base_url}/chat/completions`). Anthropic: the host (requests go to
    /// `{base_url}/v1/messages`). Both SDKs' conventions.
    pub base_url: String,
    pub model: String,
    /// The environment variable holding the API key; `None`: send no key
    /// (local servers).
    pub api_key_env: Option<String>,
    /// Per request (one attempt), connection to last byte.
    #[serde(rename = "timeout_s", serialize_with = "as_secs")]
    pub timeout: Duration,
    /// Retries after the first attempt, on retryable failures only.
    pub max_retries: u32,
    /// USD per million input / output tokens; `None`: the built-in table
    /// ([`price::lookup`]), and no cost when the model is not in it.
    pub prices: Option<Prices>,
    /// Requests in flight at once to this `base_url`, process-wide (the first
    /// endpoint to use a base URL sets its cap).
    pub max_concurrency: usize,
    /// The first backoff; doubled per retry (with jitter), capped at [`retry::MAX_BACKOFF`].
    #[serde(rename = "backoff_s", serialize_with = "as_secs")]
    pub backoff: Duration,
    /// No attempt starts or runs past this instant (a trial's deadline):
    /// each attempt's timeout is cut to it, and no retry waits beyond it.
    #[serde(skip)]
    pub deadline: Option<Instant>,
}

fn as_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl Endpoint {
    pub fn new(provider: Provider, base_url: &str, model: &str) -> Self {
        Endpoint {
            provider,
            base_url: base_url.trim_end_matches('/').to_string(),
            model: model.to_string(),
            api_key_env: None,
            timeout: Duration::from_secs(120),
            max_retries: 4,
            prices: None,
            max_concurrency: 8,
            backoff: Duration::from_millis(500),
            deadline: None,
        }
    }

    /// The official default base URL of a provider.
    pub fn default_base_url(provider: Provider) -> &'static str {
        match provider {
            Provider::OpenAI => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The chat API this endpoint's provider speaks.
    pub fn chat_api(&self) -> ModelApi {
        match self.provider {
            Provider::OpenAI => ModelApi::ChatCompletions,
            Provider::Anthropic => ModelApi::Messages,
        }
    }

    /// Prices in force: the endpoint's own, else the built-in table's.
    pub fn prices(&self) -> Option<Prices> {
        self.prices.or_else(|| price::lookup(&self.model))
    }

    pub fn cost(&self, usage: &Usage) -> Option<f64> {
        self.prices().map(|p| price::cost(&p, usage.input_tokens, usage.output_tokens))
    }

    /// The API key, read now from the named variable. `Ok(None)`: no key configured.
    pub fn api_key(&self) -> Result<Option<String>, ModelError> {
        match &self.api_key_env {
            None => Ok(None),
            Some(name) => match std::env::var(name) {
                Ok(v) if !v.trim().is_empty() => Ok(Some(v.trim().to_string())),
                _ => Err(ModelError::Config(format!(
                    "the API key variable {name} is not set (model {} at {})",
                    self.model, self.base_url
                ))),
            },
        }
    }
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}

/// Whether a model of `provider` is reachable by configuration:
/// `EVALUA_<P>_BASE_URL`, `<P>_BASE_URL` or `<P>_API_KEY` is set.
pub fn configured(provider: Provider) -> bool {
    let pre = provider.env_prefix();
    [format!("EVALUA_{pre}_BASE_URL"), format!("{pre}_BASE_URL"), format!("{pre}_API_KEY")]
        .iter()
        .any(|n| env_nonempty(n).is_some())
}

impl Endpoint {
    /// This endpoint for one call within a trial: its timeout cut to the
    /// trial's deadline. None when the deadline has passed.
    pub fn bounded(&self, deadline: Instant) -> Option<Endpoint> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        let mut ep = self.clone();
        ep.timeout = ep.timeout.min(left);
        ep.deadline = Some(deadline);
        Some(ep)
    }

    /// Resolve a declared model (`spec::ModelSpec`) against the environment.
    /// Defaults: `base_url` from `EVALUA_<P>_BASE_URL`, then `<P>_BASE_URL`,
    /// then the official URL; `model` from `EVALUA_<P>_MODEL`; the key from
    /// the variable `api_key_env` names, else `<P>_API_KEY` (required for the
    /// official URL, optional for another one: local servers need none).
    /// Without `require_model`, no model named leaves `model` empty (the
    /// model proxy then keeps the agent's choice).
    pub fn resolve(spec: &ModelSpec, require_model: bool) -> Result<Endpoint, String> {
        let provider = spec.provider;
        let pre = provider.env_prefix();
        let nonempty = |v: &Option<String>| v.clone().filter(|x| !x.is_empty());
        let base_url = nonempty(&spec.base_url)
            .or_else(|| env_nonempty(&format!("EVALUA_{pre}_BASE_URL")))
            .or_else(|| env_nonempty(&format!("{pre}_BASE_URL")))
            .unwrap_or_else(|| Endpoint::default_base_url(provider).to_string());
        let model = match nonempty(&spec.model).or_else(|| env_nonempty(&format!("EVALUA_{pre}_MODEL"))) {
            Some(m) => m,
            None if !require_model => String::new(),
            None => {
                return Err(format!("no model named: set 'model' or the environment variable EVALUA_{pre}_MODEL"));
            }
        };
        let mut ep = Endpoint::new(provider, &base_url, &model);
        let default_key = format!("{pre}_API_KEY");
        ep.api_key_env = match nonempty(&spec.api_key_env) {
            Some(k) => Some(k),
            None if ep.base_url == Endpoint::default_base_url(provider) => Some(default_key),
            None => env_nonempty(&default_key).map(|_| default_key),
        };
        if let Some(t) = spec.timeout_s.filter(|t| *t > 0.0) {
            ep.timeout = Duration::from_secs_f64(t);
        }
        if let Some(n) = spec.max_retries {
            ep.max_retries = n;
        }
        if let Some(n) = spec.max_concurrency.filter(|n| *n >= 1) {
            ep.max_concurrency = n as usize;
        }
        ep.prices = spec.prices;
        Ok(ep)
    }
}

/// How a structured (JSON-schema) answer was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    JsonSchema,
    JsonObject,
    Tool,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::JsonSchema => "json_schema",
            Strategy::JsonObject => "json_object",
            Strategy::Tool => "tool",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn system(text: impl Into<String>) -> Self {
        Message { role: Role::System, content: text.into(), tool_calls: Vec::new(), tool_call_id: None }
    }
    pub fn user(text: impl Into<String>) -> Self {
        Message { role: Role::User, content: text.into(), tool_calls: Vec::new(), tool_call_id: None }
    }
    pub fn assistant(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message { role: Role::Assistant, content: text.into(), tool_calls, tool_call_id: None }
    }
    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            role: Role::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// Parsed arguments; a string when the model's arguments were not JSON
    /// (the executor then rejects the call against the tool's schema).
    pub arguments: Json,
}

impl ToolCall {
    /// The arguments as a JSON object, to send back to the model as part of
    /// the conversation. Arguments that are not an object (text that did not
    /// parse: a truncated call) go back wrapped as `{"unparsed_arguments":
    /// text}`, valid JSON the model still sees its mistake in: servers that
    /// parse the history (llama.cpp's) answer the raw text with HTTP 500. The
    /// call itself is recorded, and rejected, with the original.
    pub fn arguments_object(&self) -> Json {
        match &self.arguments {
            Json::Object(_) => self.arguments.clone(),
            other => serde_json::json!({ "unparsed_arguments": other }),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    pub parameters: Json,
}

/// Ask for an answer that is JSON matching `schema`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Structured {
    pub name: String,
    pub schema: Json,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    pub system: Option<String>,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSchema>,
    pub temperature: Option<f64>,
    /// Passed through on OpenAI-compatible servers; Anthropic has no seed.
    pub seed: Option<u64>,
    pub max_tokens: Option<u32>,
    pub structured: Option<Structured>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The text answer; with `structured`, the JSON text (for Anthropic, the
    /// forced tool's input serialised).
    pub text: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    /// From the price table; `None` when the model has no known price.
    pub cost_usd: Option<f64>,
    /// The whole call, retries and backoff included.
    pub latency_ms: f64,
    pub finish_reason: String,
    pub refusal: Option<String>,
    /// Structured output strategy used: "json_schema" | "json_object" | "tool".
    pub strategy: Option<String>,
    /// HTTP requests made (1 when the first succeeded).
    pub attempts: u32,
}

impl ChatResponse {
    /// A response as a provider's parser reads it from one HTTP body; cost,
    /// latency, strategy and attempts are filled in by `Endpoint::chat`.
    pub(super) fn parsed(
        text: Option<String>,
        tool_calls: Vec<ToolCall>,
        usage: Usage,
        finish_reason: String,
        refusal: Option<String>,
    ) -> Self {
        ChatResponse {
            text,
            tool_calls,
            usage,
            cost_usd: None,
            latency_ms: 0.0,
            finish_reason,
            refusal,
            strategy: None,
            attempts: 0,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ModelError {
    /// 400/401/403/404, a quota-exhausted 429, a missing key: reported at once.
    Config(String),
    /// Retries exhausted on 429/529/5xx/connection failures.
    Unavailable(String),
    /// The last attempt timed out (after retries).
    Timeout(String),
    /// The server answered 2xx with something that is not a valid response.
    Malformed(String),
}

impl ModelError {
    pub fn kind(&self) -> &'static str {
        match self {
            ModelError::Config(_) => "config",
            ModelError::Unavailable(_) => "unavailable",
            ModelError::Timeout(_) => "timeout",
            ModelError::Malformed(_) => "malformed",
        }
    }
    pub fn message(&self) -> &str {
        match self {
            ModelError::Config(m) | ModelError::Unavailable(m) | ModelError::Timeout(m) | ModelError::Malformed(m) => m,
        }
    }
    fn map_message(self, f: impl FnOnce(String) -> String) -> Self {
        match self {
            ModelError::Config(m) => ModelError::Config(f(m)),
            ModelError::Unavailable(m) => ModelError::Unavailable(f(m)),
            ModelError::Timeout(m) => ModelError::Timeout(f(m)),
            ModelError::Malformed(m) => ModelError::Malformed(f(m)),
        }
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            ModelError::Config(_) => "model configuration error",
            ModelError::Unavailable(_) => "model unavailable",
            ModelError::Timeout(_) => "model timed out",
            ModelError::Malformed(_) => "malformed model response",
        };
        write!(f, "{what}: {}", self.message())
    }
}

impl std::error::Error for ModelError {}

/// A failed model call: why, and what it cost in requests and time.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatFailure {
    pub error: ModelError,
    /// HTTP requests made (0 when none could be: a missing key).
    pub attempts: u32,
    /// The whole call, retries and backoff included.
    pub latency_ms: f64,
}

impl fmt::Display for ChatFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

/// Never let a key reach a message (a server may echo it back).
pub fn redact(e: ModelError, key: Option<&str>) -> ModelError {
    match key {
        Some(k) if k.len() >= 4 => e.map_message(|m| m.replace(k, "***")),
        _ => e,
    }
}

/// Cut a server's body for an error message.
pub(crate) fn snippet(s: &str) -> String {
    const MAX: usize = 300;
    let s = s.trim();
    if s.chars().count() > MAX { format!("{}…", s.chars().take(MAX).collect::<String>()) } else { s.to_string() }
}
