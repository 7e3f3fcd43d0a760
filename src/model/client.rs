//! One chat call: build the provider's body, send it with retries, fall back
//! from `json_schema` where a server refuses it (and remember that per
//! server and model), parse, price.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use super::net::block_on;
use super::types::{ChatFailure, ChatRequest, ChatResponse, Endpoint, ModelError, Provider, Strategy, redact};
use super::{anthropic, openai, retry};

impl Endpoint {
    /// Send one chat request, retrying what is worth retrying. BLOCKING: call
    /// it from a plain thread (a trial worker); async code uses [`Self::chat_async`].
    pub fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, ModelError> {
        block_on(self.chat_async(req))
    }

    /// [`Self::chat`], and on failure how many HTTP requests were made and
    /// how long the call took (a failed call is recorded with both).
    pub fn chat_counted(&self, req: &ChatRequest) -> Result<ChatResponse, ChatFailure> {
        block_on(self.chat_counted_async(req))
    }

    pub async fn chat_async(&self, req: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.chat_counted_async(req).await.map_err(|f| f.error)
    }

    pub async fn chat_counted_async(&self, req: &ChatRequest) -> Result<ChatResponse, ChatFailure> {
        let started = Instant::now();
        let mut attempts = 0u32;
        let failed = |error: ModelError, attempts: u32| ChatFailure {
            error,
            attempts,
            latency_ms: started.elapsed().as_secs_f64() * 1000.0,
        };
        let key = self.api_key().map_err(|e| failed(e, 0))?;
        let mut strategy = match (&req.structured, self.provider) {
            (None, _) => None,
            (Some(_), Provider::Anthropic) => Some(Strategy::Tool),
            (Some(_), Provider::OpenAI) => Some(remembered_strategy(self).unwrap_or(Strategy::JsonSchema)),
        };
        loop {
            let body = match self.provider {
                Provider::OpenAI => openai::body(self, req, strategy),
                Provider::Anthropic => anthropic::body(self, req),
            };
            let (result, used) = retry::send(self, key.as_deref(), &body).await;
            attempts += used;
            let raw = match result {
                Ok(raw) => raw,
                Err(retry::Failure::BadRequest(msg))
                    if strategy == Some(Strategy::JsonSchema) && openai::refuses_json_schema(&msg) =>
                {
                    // llama.cpp's server and others refuse `json_schema`: fall back
                    // to `json_object` with the schema in the prompt, and remember.
                    strategy = Some(Strategy::JsonObject);
                    remember_strategy(self, Strategy::JsonObject);
                    continue;
                }
                Err(f) => return Err(failed(redact(f.into_error(), key.as_deref()), attempts)),
            };
            let parsed = match self.provider {
                Provider::OpenAI => openai::parse(&raw, req),
                Provider::Anthropic => anthropic::parse(&raw, req),
            };
            let mut resp = parsed.map_err(|e| failed(redact(e, key.as_deref()), attempts))?;
            resp.cost_usd = self.cost(&resp.usage);
            resp.latency_ms = started.elapsed().as_secs_f64() * 1000.0;
            resp.attempts = attempts;
            resp.strategy = strategy.map(|s| s.as_str().to_string());
            return Ok(resp);
        }
    }
}

fn strategies() -> &'static Mutex<HashMap<(String, String), Strategy>> {
    static S: OnceLock<Mutex<HashMap<(String, String), Strategy>>> = OnceLock::new();
    S.get_or_init(Default::default)
}

fn remembered_strategy(ep: &Endpoint) -> Option<Strategy> {
    strategies().lock().unwrap().get(&(ep.base_url.clone(), ep.model.clone())).copied()
}

fn remember_strategy(ep: &Endpoint, s: Strategy) {
    strategies().lock().unwrap().insert((ep.base_url.clone(), ep.model.clone()), s);
}
