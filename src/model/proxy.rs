//! The model proxy for black-box command agents (`model_proxy = ...` in
//! `evalua.agent.command`): a per-trial HTTP server on 127.0.0.1 that speaks
//! the APIs official SDKs and agent frameworks call, forwards each request to
//! the real endpoint the suite names (with the real key, which stays in the
//! harness), and records every call's tokens, cost and latency:
//!
//! | path | API | upstream |
//! |---|---|---|
//! | `POST /v1/chat/completions` | OpenAI Chat Completions | the `openai` endpoint |
//! | `POST /v1/responses` | OpenAI Responses (the OpenAI Agents SDK's default) | the `openai` endpoint |
//! | `POST /v1/messages` | Anthropic Messages | the `anthropic` endpoint |
//! | `POST /v1/messages/count_tokens` | Anthropic token counting (recorded, no tokens spent) | the `anthropic` endpoint |
//! | `GET /v1/models`, `GET /v1/models/{id}` | model listing (recorded, no tokens) | `anthropic` when the request has an `anthropic-version` header, else `openai` |
//!
//! The agent gets the proxy's address in `OPENAI_BASE_URL` /
//! `ANTHROPIC_BASE_URL` and a per-trial dummy key; a request without that key
//! is refused. Once the trial's `max_tokens` or `max_cost_usd` is spent,
//! further requests are refused with HTTP 403 and the harness ends the trial
//! as `budget`: budgets hold for agents that never report usage. Streaming
//! (`"stream": true`) is refused with a clear 400. A request body larger than
//! [`MAX_BODY`] is refused with a 413 in the provider's error format, and
//! recorded on the trial. Every refusal is in the provider's error format.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value as Json, json};

use super::net::runtime;
use super::types::{Endpoint, ModelError, Provider, Usage, redact};
use super::{price, retry};
use crate::record::journal::{BudgetHit, usage_budget};
use crate::record::{ModelApi, ModelCall};
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
    /// Held across a call upstream when the trial has a token or cost
    /// budget: calls sent at once go one at a time, so none starts once the
    /// budget is spent.
    one_at_a_time: tokio::sync::Mutex<()>,
    /// The trial's budget of request bodies in flight, in KiB.
    inflight: Arc<tokio::sync::Semaphore>,
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
        let dummy_key = format!("evalua-proxy-{}", crate::util::digest::random_hex(16));
        let shared = Arc::new(Shared {
            openai,
            anthropic,
            dummy_key: dummy_key.clone(),
            budget,
            deadline,
            started,
            log: Mutex::new(ProxyLog::default()),
            one_at_a_time: tokio::sync::Mutex::new(()),
            inflight: Arc::new(tokio::sync::Semaphore::new(MAX_TRIAL_INFLIGHT_KIB as usize)),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(chat_completions))
            .route("/chat/completions", post(chat_completions))
            .route("/v1/responses", post(responses))
            .route("/responses", post(responses))
            .route("/v1/messages", post(messages))
            .route("/v1/messages/count_tokens", post(count_tokens))
            .route("/v1/models", get(list_models))
            .route("/models", get(list_models))
            .route("/v1/models/{*id}", get(get_model))
            .route("/models/{*id}", get(get_model))
            // Bodies are read by `read_body`, with the proxy's own limit.
            .layer(DefaultBodyLimit::disable())
            .with_state(shared.clone());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let _guard = runtime().enter();
        let listener = tokio::net::TcpListener::from_std(std_listener)?;
        // At most so many connections at once: an agent cannot take evalua's descriptors.
        let listener =
            crate::util::capped::Capped::new(listener, crate::util::capped::MAX_CONNECTIONS_PER_TRIAL, "model proxy");
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

/// The largest request body the proxy accepts. Long agent conversations
/// pass axum's default of 2 MiB; beyond this one the request is refused
/// (413, in the provider's error format) and the refusal recorded.
pub const MAX_BODY: usize = 32 * 1024 * 1024;

/// How much of a body over [`MAX_BODY`] is read (and dropped) before the
/// 413 is sent: a server that answers before the client has sent its body,
/// then closes, makes the client see a broken pipe instead of the answer
/// (measured: a 100 MiB body without this).
const DRAIN_MAX: usize = 4 * MAX_BODY;

/// Request bodies one trial's proxy holds in memory at once (all its
/// requests in flight), and all the run's proxies together, in KiB (SPEC §6).
pub const MAX_TRIAL_INFLIGHT_KIB: u32 = 128 << 10;
pub const MAX_TOTAL_INFLIGHT_KIB: u32 = 512 << 10;

/// The run's budget of bodies in flight, shared by every trial's proxy.
fn all_inflight() -> Arc<tokio::sync::Semaphore> {
    static ALL: std::sync::OnceLock<Arc<tokio::sync::Semaphore>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| Arc::new(tokio::sync::Semaphore::new(MAX_TOTAL_INFLIGHT_KIB as usize))).clone()
}

/// What a body in flight holds of the trial's and the run's budgets (given back when dropped).
#[derive(Default)]
struct Held(Vec<tokio::sync::OwnedSemaphorePermit>);

impl Held {
    /// Take `kib` more of both budgets, or say which is spent (never waits).
    fn take(&mut self, trial: &Arc<tokio::sync::Semaphore>, kib: u32) -> Result<(), BodyError> {
        if kib == 0 {
            return Ok(());
        }
        let mine = trial.clone().try_acquire_many_owned(kib).map_err(|_| {
            BodyError::Busy(format!(
                "this trial's requests in flight already hold {} MiB of bodies, the most one trial may",
                MAX_TRIAL_INFLIGHT_KIB >> 10
            ))
        })?;
        let all = all_inflight().try_acquire_many_owned(kib).map_err(|_| {
            BodyError::Busy(format!(
                "the run's model proxies already hold {} MiB of request bodies, the most they may together",
                MAX_TOTAL_INFLIGHT_KIB >> 10
            ))
        })?;
        self.0.extend([mine, all]);
        Ok(())
    }
}

/// Why a request body was not taken.
enum BodyError {
    /// Larger than MAX_BODY: this many bytes were seen (more may have followed).
    TooLarge(usize),
    Read(String),
    /// The bodies in flight would pass the trial's or the run's budget: why.
    Busy(String),
}

/// Read a request body, at most MAX_BODY bytes kept; past that, drain up to
/// DRAIN_MAX and say it was too large. What is kept is counted against the
/// trial's and the run's budgets of bodies in flight (`held`), a KiB at a time.
async fn read_body(
    mut body: axum::body::Body,
    trial: &Arc<tokio::sync::Semaphore>,
    held: &mut Held,
) -> Result<Bytes, BodyError> {
    use http_body_util::BodyExt;
    let mut buf = Vec::new();
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyError::Read(e.to_string()))?;
        let Ok(data) = frame.into_data() else { continue };
        let counted = seen.div_ceil(1024);
        seen += data.len();
        if seen <= MAX_BODY {
            held.take(trial, (seen.div_ceil(1024) - counted) as u32)?;
            buf.extend_from_slice(&data);
        } else {
            buf = Vec::new();
            if seen > DRAIN_MAX {
                break;
            }
        }
    }
    if seen > MAX_BODY { Err(BodyError::TooLarge(seen)) } else { Ok(Bytes::from(buf)) }
}

type Body = axum::body::Body;

async fn chat_completions(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    forward(s, Provider::OpenAI, ModelApi::ChatCompletions, None, headers, body).await
}

async fn responses(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    forward(s, Provider::OpenAI, ModelApi::Responses, None, headers, body).await
}

async fn messages(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    forward(s, Provider::Anthropic, ModelApi::Messages, None, headers, body).await
}

async fn count_tokens(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    forward(s, Provider::Anthropic, ModelApi::CountTokens, None, headers, body).await
}

/// Both SDKs list models at `/v1/models`; Anthropic's always sends `anthropic-version`.
fn models_provider(headers: &HeaderMap) -> Provider {
    if headers.contains_key("anthropic-version") { Provider::Anthropic } else { Provider::OpenAI }
}

async fn list_models(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    forward(s, models_provider(&headers), ModelApi::Models, None, headers, Body::empty()).await
}

async fn get_model(State(s): State<Arc<Shared>>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    forward(s, models_provider(&headers), ModelApi::Models, Some(id), headers, Body::empty()).await
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

/// A model id as the last part of a URL: characters model names use, no `..`.
fn safe_model_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 256
        && id.chars().all(|c| c.is_ascii_alphanumeric() || "._:@-/".contains(c))
        && !id.split('/').any(|part| part.is_empty() || part == "." || part == "..")
}

/// Tokens a call of `api` spent, from the answer's `usage`.
fn usage_of(api: ModelApi, v: &Json) -> Usage {
    let u = v.get("usage");
    let n = |k: &str| u.and_then(|u| u.get(k)).and_then(|x| x.as_u64()).unwrap_or(0);
    match api {
        ModelApi::ChatCompletions => Usage { input_tokens: n("prompt_tokens"), output_tokens: n("completion_tokens") },
        // Responses: cached tokens are part of input_tokens already.
        ModelApi::Responses => Usage { input_tokens: n("input_tokens"), output_tokens: n("output_tokens") },
        ModelApi::Messages => Usage {
            input_tokens: n("input_tokens") + n("cache_read_input_tokens") + n("cache_creation_input_tokens"),
            output_tokens: n("output_tokens"),
        },
        // A count or a listing spends nothing.
        ModelApi::CountTokens | ModelApi::Models => Usage::default(),
    }
}

fn finish_reason(api: ModelApi, v: &Json) -> Option<String> {
    match api {
        ModelApi::ChatCompletions => v.pointer("/choices/0/finish_reason"),
        ModelApi::Messages => v.get("stop_reason"),
        ModelApi::Responses => v.get("status"),
        ModelApi::CountTokens | ModelApi::Models => None,
    }
    .and_then(|f| f.as_str())
    .map(String::from)
}

async fn forward(
    s: Arc<Shared>,
    provider: Provider,
    api: ModelApi,
    model_id: Option<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
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
    let started_ms = s.started.elapsed().as_secs_f64() * 1000.0;
    let t0 = Instant::now();
    let mut held = Held::default();
    let body = match read_body(body, &s.inflight, &mut held).await {
        Ok(b) => b,
        Err(BodyError::Busy(why)) => {
            let kind = match provider {
                Provider::OpenAI => "server_error",
                Provider::Anthropic => "overloaded_error",
            };
            let msg = format!("evalua model proxy: {why}: retry when a request has finished");
            return error(provider, StatusCode::SERVICE_UNAVAILABLE, kind, &msg);
        }
        Err(BodyError::TooLarge(seen)) => {
            let size = headers
                .get(axum::http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(seen);
            let msg = format!(
                "evalua model proxy: the request body ({size} bytes) is larger than the proxy's limit of {} MiB",
                MAX_BODY / (1024 * 1024)
            );
            record_failure(&s, &ep, api, started_ms, t0, provider, msg.clone(), 0);
            let kind = match provider {
                Provider::OpenAI => "invalid_request_error",
                Provider::Anthropic => "request_too_large",
            };
            return error(provider, StatusCode::PAYLOAD_TOO_LARGE, kind, &msg);
        }
        Err(BodyError::Read(e)) => {
            let msg = format!("evalua model proxy: cannot read the request body: {e}");
            return error(provider, StatusCode::BAD_REQUEST, "invalid_request_error", &msg);
        }
    };
    let budgeted = s.budget.max_tokens.is_some() || s.budget.max_cost_usd.is_some();
    let _turn = if budgeted { Some(s.one_at_a_time.lock().await) } else { None };
    if let Some(why) = s.log.lock().unwrap().budget_hit.clone() {
        return error(provider, StatusCode::FORBIDDEN, "budget_exceeded", &format!("evalua: budget spent: {why}"));
    }
    if let Some(id) = &model_id
        && !safe_model_id(id)
    {
        return error(provider, StatusCode::BAD_REQUEST, "invalid_request_error", "evalua model proxy: bad model id");
    }
    let mut req: Option<Json> = None;
    if api != ModelApi::Models {
        let mut r = match serde_json::from_slice(&body) {
            Ok(v @ Json::Object(_)) => v,
            _ => {
                let msg = "the body is not a JSON object";
                return error(provider, StatusCode::BAD_REQUEST, "invalid_request_error", msg);
            }
        };
        if r.get("stream").and_then(|v| v.as_bool()) == Some(true) {
            let msg = "evalua model proxy: streaming is not supported; send \"stream\": false";
            return error(provider, StatusCode::BAD_REQUEST, "invalid_request_error", msg);
        }
        if ep.model.is_empty() {
            ep.model = r.get("model").and_then(|m| m.as_str()).unwrap_or("").to_string();
        } else {
            r["model"] = json!(ep.model);
        }
        req = Some(r);
    } else if let Some(id) = &model_id
        && ep.model.is_empty()
    {
        ep.model = id.clone();
    }
    let left = s.deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return error(provider, StatusCode::GATEWAY_TIMEOUT, "timeout", "evalua: the trial's deadline has passed");
    }
    ep.timeout = ep.timeout.min(left);
    ep.deadline = Some(s.deadline);
    let key = match ep.api_key() {
        Ok(k) => k,
        Err(e) => return failure(&s, &ep, api, started_ms, t0, provider, e, 0),
    };
    let target = retry::Target { url: retry::api_url(&ep, api, model_id.as_deref()), body: req.as_ref() };
    let (result, attempts) = retry::send_to(&ep, key.as_deref(), &target).await;
    let text = match result {
        Ok(t) => t,
        Err(f) => {
            let e = redact(f.into_error(), key.as_deref());
            return failure(&s, &ep, api, started_ms, t0, provider, e, attempts);
        }
    };
    let v: Json = serde_json::from_str(&text).unwrap_or(Json::Null);
    let usage = usage_of(api, &v);
    let model = match api {
        ModelApi::Models => ep.model.clone(),
        _ => v.get("model").and_then(|m| m.as_str()).unwrap_or(&ep.model).to_string(),
    };
    let cost = ep
        .prices
        .or_else(|| price::lookup(&model))
        .or_else(|| price::lookup(&ep.model))
        .map(|p| price::cost(&p, usage.input_tokens, usage.output_tokens));
    {
        let mut log = s.log.lock().unwrap();
        log.calls += 1;
        log.input_tokens += usage.input_tokens;
        log.output_tokens += usage.output_tokens;
        log.cost_usd += cost.unwrap_or(0.0);
        log.pending.push(ModelCall {
            by: "proxy".into(),
            provider: provider.as_str().into(),
            api: Some(api),
            model,
            started_ms,
            latency_ms: t0.elapsed().as_secs_f64() * 1000.0,
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cost_usd: cost,
            finish_reason: finish_reason(api, &v),
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

/// Record a call that failed (no usage) on the trial.
#[allow(clippy::too_many_arguments)]
fn record_failure(
    s: &Shared,
    ep: &Endpoint,
    api: ModelApi,
    started_ms: f64,
    t0: Instant,
    provider: Provider,
    error: String,
    attempts: u32,
) {
    s.log.lock().unwrap().pending.push(ModelCall {
        by: "proxy".into(),
        provider: provider.as_str().into(),
        api: Some(api),
        model: ep.model.clone(),
        started_ms,
        latency_ms: t0.elapsed().as_secs_f64() * 1000.0,
        attempts,
        error: Some(error),
        ..Default::default()
    });
}

#[allow(clippy::too_many_arguments)]
fn failure(
    s: &Shared,
    ep: &Endpoint,
    api: ModelApi,
    started_ms: f64,
    t0: Instant,
    provider: Provider,
    e: ModelError,
    attempts: u32,
) -> Response {
    let status = match &e {
        ModelError::Config(_) => StatusCode::BAD_REQUEST,
        ModelError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        ModelError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
        ModelError::Malformed(_) => StatusCode::BAD_GATEWAY,
    };
    record_failure(s, ep, api, started_ms, t0, provider, e.to_string(), attempts);
    error(provider, status, "upstream_error", &format!("evalua model proxy: {e}"))
}
