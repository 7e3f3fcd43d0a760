//! Models as a suite declares them: the endpoint options shared by model
//! agents, simulated users, judges and the model proxy (`evalua.model{}`),
//! and the specs that use them. Resolving options against the environment
//! (base URLs, keys) is the model layer's job (`model::Endpoint::resolve`).

use serde::{Deserialize, Serialize};

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// USD per million input tokens.
    pub input: f64,
    /// USD per million output tokens.
    pub output: f64,
}

/// Which API family a model endpoint speaks: what a suite names with
/// `provider = "openai" | "anthropic"` (and `evalua.agent.openai` /
/// `anthropic`), with what each implies (its environment variables' prefix).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// OpenAI-compatible Chat Completions (the default).
    #[default]
    OpenAI,
    /// The Anthropic Messages API.
    Anthropic,
}

impl Provider {
    /// Every provider, in the order a message lists them.
    pub const ALL: [Provider; 2] = [Provider::OpenAI, Provider::Anthropic];

    /// Its name in a suite (`provider = "openai"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAI => "openai",
            Provider::Anthropic => "anthropic",
        }
    }

    /// The provider a suite names, if it is one.
    pub fn from_name(name: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// The prefix of its environment variables: `OPENAI` in `OPENAI_API_KEY`,
    /// `EVALUA_OPENAI_BASE_URL`, `EVALUA_OPENAI_MODEL`.
    pub fn env_prefix(self) -> &'static str {
        match self {
            Provider::OpenAI => "OPENAI",
            Provider::Anthropic => "ANTHROPIC",
        }
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A model endpoint as declared (`evalua.model{}` and the same keys on
/// `evalua.agent.openai{}`, judges and `model_proxy`). Holds the *name* of
/// the key's environment variable, never a key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    #[serde(default)]
    pub provider: Provider,
    /// None: from `EVALUA_<P>_MODEL` (or, for the proxy, the agent's choice).
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub timeout_s: Option<f64>,
    #[serde(default)]
    pub max_retries: Option<u32>,
    #[serde(default)]
    pub max_concurrency: Option<u32>,
    #[serde(default)]
    pub prices: Option<Prices>,
    /// The DSL's mark on a model table it normalised (`kind = "model"`).
    #[serde(default, skip_serializing)]
    pub kind: Mark,
}

/// The mark the DSL sets on a model table it normalised: `kind = "model"`
/// (`evalua.model`) or `"judge_model"` (`judge.model`). Read and dropped:
/// one mark is as good as another, so they compare equal.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Mark;

impl<'de> Deserialize<'de> for Mark {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "snake_case")]
        enum Kind {
            Model,
            JudgeModel,
        }
        Kind::deserialize(d).map(|_| Mark)
    }
}

impl super::keys::Keys for ModelSpec {
    const DSL_KEYS: &[&str] = &["kind"];
}

impl super::keys::Keys for LlmUserSpec {}

impl ModelSpec {
    pub fn for_provider(provider: Provider) -> Self {
        ModelSpec { provider, ..Default::default() }
    }
    /// `provider:model` (the model may be unnamed yet).
    pub fn id(&self) -> String {
        format!("{}:{}", self.provider, self.model.as_deref().unwrap_or(""))
    }
}

/// `evalua.agent.openai{}` / `evalua.agent.anthropic{}`, as the DSL
/// normalised it: the endpoint options under `model`, the prompt's text in
/// `system` or its file (absolute) in `system_path`. Loading reads the file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelAgentSpec {
    pub model: ModelSpec,
    /// The system prompt's text (not in the manifest: its sha256 is).
    #[serde(default, skip_serializing)]
    pub system: Option<String>,
    #[serde(default)]
    pub system_path: Option<String>,
    /// Set when the prompt is read.
    #[serde(skip_deserializing)]
    pub system_sha256: Option<String>,
    /// Model calls (steps of the tool loop) per trial.
    #[serde(default = "ModelAgentSpec::default_max_turns")]
    pub max_turns: u32,
    /// How a tool's result reaches the model (`tool_results`).
    #[serde(default)]
    pub tool_results: ToolResults,
    /// Only the first N tool calls of a model response run; the others are
    /// dropped from the conversation (`calls_per_step`; τ-bench keeps one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls_per_step: Option<u32>,
}

impl ModelAgentSpec {
    fn default_max_turns() -> u32 {
        DEFAULT_AGENT_TURNS
    }
}

/// How a model agent sees a tool's result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolResults {
    /// `{"status": …, "content": …, "error": …}` as JSON (the default).
    #[default]
    Json,
    /// The tool's own text: a string result as it is, another value as its
    /// JSON, a failed call as `Error: <message>` (τ-bench's observation).
    Text,
}

/// Model calls per trial when a model agent sets no `max_turns`.
pub const DEFAULT_AGENT_TURNS: u32 = 20;

/// The endpoints a command agent's `model_proxy` forwards to: `true` gives
/// both official ones; an options table gives one provider's.
#[derive(Debug, Clone, Serialize)]
pub struct ProxySpec {
    pub openai: Option<ModelSpec>,
    pub anthropic: Option<ModelSpec>,
}

impl ProxySpec {
    /// `model_proxy = true | false | evalua.model{…}` (absent: none).
    pub fn read<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<ProxySpec>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Declared {
            On(bool),
            Options(ModelSpec),
        }
        Ok(match Option::<Declared>::deserialize(d)? {
            None | Some(Declared::On(false)) => None,
            Some(Declared::On(true)) => Some(ProxySpec {
                openai: Some(ModelSpec::for_provider(Provider::OpenAI)),
                anthropic: Some(ModelSpec::for_provider(Provider::Anthropic)),
            }),
            Some(Declared::Options(spec)) => Some(match spec.provider {
                Provider::Anthropic => ProxySpec { openai: None, anthropic: Some(spec) },
                Provider::OpenAI => ProxySpec { openai: Some(spec), anthropic: None },
            }),
        })
    }
}

/// The user an agent talks to in a multi-turn case.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum UserSpec {
    /// Fixed turns: each agent message gets the next one.
    Script {
        #[serde(default, deserialize_with = "super::de::list")]
        turns: Vec<String>,
        /// What the user must not say before the agent asks for it (SPEC §18).
        #[serde(default, deserialize_with = "super::de::list", skip_serializing_if = "Vec::is_empty")]
        withhold: Vec<Withhold>,
    },
    /// A simulated user played by a model (`evalua.user.llm`).
    Llm(LlmUserSpec),
}

/// `evalua.user.llm { … }`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmUserSpec {
    #[serde(default)]
    pub profile: String,
    #[serde(default)]
    pub goal: String,
    #[serde(default)]
    pub model: Box<ModelSpec>,
    #[serde(default = "LlmUserSpec::default_max_turns")]
    pub max_turns: u32,
    /// The simulated user's whole system prompt, instead of evalua's
    /// (which is built from `profile` and `goal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The user opens the conversation: it answers this line (which the
    /// agent never sees), and its answer, not the case input, is the
    /// agent's first message (τ-bench: "Hi! How can I help you today?").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opening: Option<String>,
    /// What the user must not say before the agent asks for it (SPEC §18).
    #[serde(default, deserialize_with = "super::de::list", skip_serializing_if = "Vec::is_empty")]
    pub withhold: Vec<Withhold>,
    /// `adherence = judge.rubric { … }`: a judge of the user's conduct,
    /// reading the conversation, the profile and the goal (SPEC §18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adherence: Option<Box<JudgeSpec>>,
}

/// `withhold = { { text = …, until_asked = … } }` on a user (SPEC §18): a
/// user turn that says `text` (a case-insensitive substring) before the agent
/// has sent a message matching the regex `until_asked` is a leak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Withhold {
    pub text: String,
    pub until_asked: String,
}

impl UserSpec {
    /// What the user must withhold until asked.
    pub fn withhold(&self) -> &[Withhold] {
        match self {
            UserSpec::Script { withhold, .. } => withhold,
            UserSpec::Llm(u) => &u.withhold,
        }
    }
    /// A model plays the user (its conduct can go wrong, SPEC §18).
    pub fn simulated(&self) -> bool {
        matches!(self, UserSpec::Llm(_))
    }
}

impl LlmUserSpec {
    fn default_max_turns() -> u32 {
        DEFAULT_USER_TURNS
    }
}

/// Replies a simulated user gives when its spec sets no `max_turns`.
pub const DEFAULT_USER_TURNS: u32 = 10;

/// The `judge` table of a judge check, as the suite declared it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum JudgeSpec {
    Rubric {
        name: String,
        criteria: Vec<String>,
        #[serde(default)]
        models: Vec<ModelSpec>,
        /// Declared with `panel = {...}` (majority vote) rather than `model =`.
        #[serde(default)]
        panel: bool,
    },
    Pairwise {
        name: String,
        question: String,
        #[serde(default)]
        models: Vec<ModelSpec>,
        /// "a" (a must win) or "a_or_tie" (a must not lose).
        #[serde(default = "default_pass")]
        pass: String,
    },
    /// `judge.cascade`: `first` grades every item, `then` only those
    /// `escalate` selects. Both are rubrics of the same criteria.
    Cascade {
        name: String,
        first: Box<JudgeSpec>,
        then: Box<JudgeSpec>,
        /// "uncertain", "disagree" or "always_on_fail".
        escalate: String,
    },
}

fn default_pass() -> String {
    "a_or_tie".into()
}

impl JudgeSpec {
    pub fn name(&self) -> &str {
        match self {
            JudgeSpec::Rubric { name, .. } | JudgeSpec::Pairwise { name, .. } | JudgeSpec::Cascade { name, .. } => name,
        }
    }
    /// Every model the judge may call (a cascade's: both stages').
    pub fn models(&self) -> Vec<&ModelSpec> {
        match self {
            JudgeSpec::Rubric { models, .. } | JudgeSpec::Pairwise { models, .. } => models.iter().collect(),
            JudgeSpec::Cascade { first, then, .. } => first.models().into_iter().chain(then.models()).collect(),
        }
    }
    /// A rubric's (or a cascade's) criteria.
    pub fn criteria(&self) -> Option<&[String]> {
        match self {
            JudgeSpec::Rubric { criteria, .. } => Some(criteria),
            JudgeSpec::Cascade { first, .. } => first.criteria(),
            JudgeSpec::Pairwise { .. } => None,
        }
    }
    /// "rubric", "pairwise" or "cascade".
    pub fn kind(&self) -> &'static str {
        match self {
            JudgeSpec::Rubric { .. } => "rubric",
            JudgeSpec::Pairwise { .. } => "pairwise",
            JudgeSpec::Cascade { .. } => "cascade",
        }
    }
    /// The judge's identity for calibration: its model(s), not where they are served.
    pub fn model_id(&self) -> String {
        let ids: Vec<String> = self.models().iter().map(|m| m.id()).collect();
        match self {
            JudgeSpec::Rubric { panel: true, .. } => format!("panel[{}]", ids.join(",")),
            JudgeSpec::Cascade { first, then, escalate, .. } => {
                format!("cascade[{} then {} on {escalate}]", first.model_id(), then.model_id())
            }
            _ => ids.join(","),
        }
    }
}
