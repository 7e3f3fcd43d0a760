//! The model proxy for black-box command agents (`model_proxy = ...` in
//! `evalua.agent.command`): a per-trial HTTP server on 127.0.0.1 that speaks
//! the OpenAI-compatible `/v1/chat/completions` and the Anthropic
//! `/v1/messages` APIs, forwards each request to the real endpoint the suite
//! names (with the real key, which stays in the harness), and records every
//! call's tokens, cost and latency. The agent gets the proxy's address in
//! `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` and a per-trial dummy key; a
//! request without that key is refused. Once the trial's `max_tokens` or
//! `max_cost_usd` is spent, further requests are refused with HTTP 403 and
//! the harness ends the trial as `budget`: budgets hold for agents that never
//! report usage. Streaming (`"stream": true`) is refused with a clear 400.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value as Json, json};

use super::net::runtime;
use super::types::{Endpoint, ModelError, Provider, Usage, redact};
use super::{price, retry};
use crate::record::ModelCall;
use crate::record::journal::{BudgetHit, usage_budget};
use crate::spec::Budget;

/// What the proxy has seen so far in the trial.
#[derive(Default)]
pub struct ProxyLog {
    /// Calls not yet taken by the trial (see [`Proxy::take_calls`]).
    pub pending: Vec<ModelCall>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    pub calls: u32,
    pub budget_hit: Option<BudgetHit>,
}

struct Shared {
    openai: Option<Endpoint>,
    anthropic: Option<Endpoint>,
    dummy_key: String,
    budget: Budget,
    deadline: Instant,
    started: Instant,
    log: Mutex<ProxyLog>,
}

/// A running proxy; stopped when dropped.
pub struct Proxy {
    pub addr: SocketAddr,
    pub dummy_key: String,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Proxy {
    /// Start a proxy forwarding to `openai` and/or `anthropic` (an endpoint
    /// whose `model` is empty keeps the model the agent asks for).
    pub fn start(
        openai: Option<Endpoint>,
        anthropic: Option<Endpoint>,
        budget: Budget,
        deadline: Instant,
        started: Instant,
    ) -> std::io::Result<Proxy> {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let dummy_key = format!("evalua-proxy-{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
        let shared = Arc::new(Shared {
            openai,
            anthropic,
            dummy_key: dummy_key.clone(),
            budget,
            deadline,
            started,
            log: Mutex::new(ProxyLog::default()),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(openai_route))
            .route("/chat/completions", post(openai_route))
            .route("/v1/messages", post(anthropic_route))
            .with_state(shared.clone());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let _guard = runtime().enter();
        let listener = tokio::net::TcpListener::from_std(std_listener)?;
        runtime().spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(Proxy { addr, dummy_key, shared, stop: Some(tx) })
    }

    /// `OPENAI_BASE_URL` for the agent (SDK convention: with `/v1`).
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `ANTHROPIC_BASE_URL` for the agent (SDK convention: the host only).
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The calls recorded since the last take, with their usage.
    pub fn take_calls(&self) -> Vec<ModelCall> {
        std::mem::take(&mut self.shared.log.lock().unwrap().pending)
    }

    pub fn budget_hit(&self) -> Option<BudgetHit> {
        self.shared.log.lock().unwrap().budget_hit.clone()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

async fn openai_route(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    forward(s, Provider::OpenAI, headers, body).await
}

async fn anthropic_route(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    forward(s, Provider::Anthropic, headers, body).await
}

fn error(provider: Provider, status: StatusCode, kind: &str, msg: &str) -> Response {
    let body = match provider {
        Provider::OpenAI => json!({ "error": { "message": msg, "type": kind, "code": kind } }),
        Provider::Anthropic => json!({ "type": "error", "error": { "type": kind, "message": msg } }),
    };
    (status, axum::Json(body)).into_response()
}

fn authorised(s: &Shared, headers: &HeaderMap) -> bool {
    let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).map(|v| v.trim().to_string());
    let bearer = h("authorization").and_then(|v| v.strip_prefix("Bearer ").map(|k| k.trim().to_string()));
    bearer.as_deref() == Some(s.dummy_key.as_str()) || h("x-api-key").as_deref() == Some(s.dummy_key.as_str())
}

async fn forward(s: Arc<Shared>, provider: Provider, headers: HeaderMap, body: Bytes) -> Response {
    if !authorised(&s, &headers) {
        return error(provider, StatusCode::UNAUTHORIZED, "authentication_error", "evalua model proxy: wrong API key");
    }
    let upstream = match provider {
        Provider::OpenAI => s.openai.clone(),
        Provider::Anthropic => s.anthropic.clone(),
    };
    let Some(mut ep) = upstream else {
        let msg = format!("evalua model proxy: no {} endpoint is configured for this suite", provider.as_str());
        return error(provider, StatusCode::NOT_FOUND, "not_found_error", &msg);
    };
    if let Some(why) = s.log.lock().unwrap().budget_hit.clone() {
        return error(provider, StatusCode::FORBIDDEN, "budget_exceeded", &format!("evalua: budget spent: {why}"));
    }
    let mut req: Json = match serde_json::from_slice(&body) {
        Ok(v @ Json::Object(_)) => v,
        _ => return error(provider, StatusCode::BAD_REQUEST, "invalid_request_error", "the body is not a JSON object"),
    };
    if req.get("stream").and_then(|v| v.as_bool()) == Some(true) {
        let msg = "evalua model proxy: streaming is not supported; send \"stream\": false";
        return error(provider, StatusCode::BAD_REQUEST, "invalid_request_error", msg);
    }
    if ep.model.is_empty() {
        ep.model = req.get("model").and_then(|m| m.as_str()).unwrap_or("").to_string();
    } else {
        req["model"] = json!(ep.model);
    }
    let left = s.deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return error(provider, StatusCode::GATEWAY_TIMEOUT, "timeout", "evalua: the trial's deadline has passed");
    }
    ep.timeout = ep.timeout.min(left);
    ep.deadline = Some(s.deadline);
    let started_ms = s.started.elapsed().as_secs_f64() * 1000.0;
    let t0 = Instant::now();
    let key = match ep.api_key() {
        Ok(k) => k,
        Err(e) => return failure(&s, &ep, started_ms, t0, provider, e),
    };
    let (result, attempts) = retry::send(&ep, key.as_deref(), &req).await;
    let text = match result {
        Ok(t) => t,
        Err(f) => return failure(&s, &ep, started_ms, t0, provider, redact(f.into_error(), key.as_deref())),
    };
    let v: Json = serde_json::from_str(&text).unwrap_or(Json::Null);
    let u = v.get("usage");
    let n = |k: &str| u.and_then(|u| u.get(k)).and_then(|x| x.as_u64()).unwrap_or(0);
    let usage = match provider {
        Provider::OpenAI => Usage { input_tokens: n("prompt_tokens"), output_tokens: n("completion_tokens") },
        Provider::Anthropic => Usage {
            input_tokens: n("input_tokens") + n("cache_read_input_tokens") + n("cache_creation_input_tokens"),
            output_tokens: n("output_tokens"),
        },
    };
    let model = v.get("model").and_then(|m| m.as_str()).unwrap_or(&ep.model).to_string();
    let cost = ep
        .prices
        .or_else(|| price::lookup(&model))
        .or_else(|| price::lookup(&ep.model))
        .map(|p| price::cost(&p, usage.input_tokens, usage.output_tokens));
    let finish = match provider {
        Provider::OpenAI => v.pointer("/choices/0/finish_reason"),
        Provider::Anthropic => v.get("stop_reason"),
    }
    .and_then(|f| f.as_str())
    .map(String::from);
    {
        let mut log = s.log.lock().unwrap();
        log.calls += 1;
        log.input_tokens += usage.input_tokens;
        log.output_tokens += usage.output_tokens;
        log.cost_usd += cost.unwrap_or(0.0);
        log.pending.push(ModelCall {
            by: "proxy".into(),
            provider: provider.as_str().into(),
            model,
            started_ms,
            latency_ms: t0.elapsed().as_secs_f64() * 1000.0,
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cost_usd: cost,
            finish_reason: finish,
            attempts,
            error: None,
        });
        let spent = crate::record::Usage {
            input_tokens: log.input_tokens,
            output_tokens: log.output_tokens,
            cost_usd: log.cost_usd,
            ..Default::default()
        };
        if log.budget_hit.is_none() {
            log.budget_hit = usage_budget(&s.budget, &spent);
        }
    }
    (StatusCode::OK, [(axum::http::header::CONTENT_TYPE, "application/json")], text).into_response()
}

fn failure(s: &Shared, ep: &Endpoint, started_ms: f64, t0: Instant, provider: Provider, e: ModelError) -> Response {
    let status = match &e {
        ModelError::Config(_) => StatusCode::BAD_REQUEST,
        ModelError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        ModelError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
        ModelError::Malformed(_) => StatusCode::BAD_GATEWAY,
    };
    s.log.lock().unwrap().pending.push(ModelCall {
        by: "proxy".into(),
        provider: provider.as_str().into(),
        model: ep.model.clone(),
        started_ms,
        latency_ms: t0.elapsed().as_secs_f64() * 1000.0,
        error: Some(e.to_string()),
        ..Default::default()
    });
    error(provider, status, "upstream_error", &format!("evalua model proxy: {e}"))
}
