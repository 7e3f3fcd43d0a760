//! The one place a judge talks to a model: through the model client layer
//! (`crate::model`), with a JSON-schema-constrained answer.

use serde_json::{Value as Json, json};

use super::Judge;

/// One request to a judge.
pub struct Request {
    /// The schema's name (OpenAI `response_format.json_schema.name`, the forced tool's name on Anthropic).
    pub name: &'static str,
    pub system: String,
    pub user: String,
    pub schema: Json,
}

/// A judge's answer, parsed as JSON (not yet validated).
pub struct Reply {
    pub answer: Json,
    pub usage: Json,
    pub cost_usd: Option<f64>,
    pub latency_ms: f64,
    pub strategy: Option<String>,
    pub attempts: u32,
}

impl Reply {
    /// What goes into the evidence about the call (never the key).
    pub fn meta(&self) -> Json {
        json!({
            "usage": self.usage,
            "cost_usd": self.cost_usd,
            "latency_ms": self.latency_ms,
            "strategy": self.strategy,
            "attempts": self.attempts,
        })
    }
}

/// Ask the judge. Err on an API failure (after the client's retries), a
/// refusal, or an answer that is not JSON: all grader errors.
pub fn ask(_judge: &Judge, _req: &Request) -> Result<Reply, String> {
    Err("the model client is not available in this build".into())
}
