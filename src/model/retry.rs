//! One request with retries: what is retried, how long to wait, and what a
//! failure means to the caller.
//!
//! Retried: 408, 429 (except a quota-exhausted one), Anthropic's 529, every
//! 5xx, connection failures and timeouts; the wait is `retry-after` (or
//! `retry-after-ms`) when the server gives one, else an exponential backoff
//! with jitter. Not retried: every other 4xx (a configuration error) and a
//! 429 whose body says `insufficient_quota` (more waiting will not help).

use std::time::{Duration, Instant};

use serde_json::Value as Json;

use super::net::{client, semaphore};
use super::types::{Endpoint, ModelError, Provider, snippet};
use crate::record::ModelApi;

/// The longest wait between two attempts, whatever the server asks.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

pub enum Failure {
    /// HTTP 400: the caller may change the request (structured-output fallback).
    BadRequest(String),
    Config(String),
    Unavailable(String),
    Timeout(String),
}

impl Failure {
    pub fn into_error(self) -> ModelError {
        match self {
            Failure::BadRequest(m) | Failure::Config(m) => ModelError::Config(m),
            Failure::Unavailable(m) => ModelError::Unavailable(m),
            Failure::Timeout(m) => ModelError::Timeout(m),
        }
    }
}

pub fn url(ep: &Endpoint) -> String {
    api_url(ep, ep.chat_api(), None)
}

/// The URL of `api` at the endpoint (by the SDKs' conventions: an OpenAI
/// base URL includes `/v1`, an Anthropic one is the host); `id` names one
/// model for [`ModelApi::Models`].
pub fn api_url(ep: &Endpoint, api: ModelApi, id: Option<&str>) -> String {
    let b = &ep.base_url;
    let one = id.map(|i| format!("/{i}")).unwrap_or_default();
    match (ep.provider, api) {
        (Provider::OpenAI, ModelApi::Responses) => format!("{b}/responses"),
        (Provider::OpenAI, ModelApi::Models) => format!("{b}/models{one}"),
        (Provider::OpenAI, _) => format!("{b}/chat/completions"),
        (Provider::Anthropic, ModelApi::CountTokens) => format!("{b}/v1/messages/count_tokens"),
        (Provider::Anthropic, ModelApi::Models) => format!("{b}/v1/models{one}"),
        (Provider::Anthropic, _) => format!("{b}/v1/messages"),
    }
}

/// Where one request goes: a POST of a JSON body, or a GET (`body` None).
pub struct Target<'a> {
    pub url: String,
    pub body: Option<&'a Json>,
}

/// What one attempt came to.
enum Attempt {
    Ok(String),
    /// Retry after this long (from the server, or `None` for the backoff).
    Retry(String, Option<Duration>, bool),
    Fail(Failure),
}

/// Send `body` to the endpoint, retrying what is retryable. Returns the 2xx
/// body text (or the failure) and the number of HTTP attempts made.
pub async fn send(ep: &Endpoint, key: Option<&str>, body: &Json) -> (Result<String, Failure>, u32) {
    send_to(ep, key, &Target { url: url(ep), body: Some(body) }).await
}

/// [`send`] to any of the endpoint's APIs.
pub async fn send_to(ep: &Endpoint, key: Option<&str>, target: &Target<'_>) -> (Result<String, Failure>, u32) {
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let outcome = attempt(ep, key, target).await;
        let (msg, wait, timed_out) = match outcome {
            Attempt::Ok(text) => return (Ok(text), attempts),
            Attempt::Fail(f) => return (Err(f), attempts),
            Attempt::Retry(msg, wait, timed_out) => (msg, wait, timed_out),
        };
        let wait = wait.unwrap_or_else(|| backoff(ep.backoff, attempts - 1)).min(MAX_BACKOFF);
        let past_deadline = ep.deadline.is_some_and(|d| Instant::now() + wait >= d);
        if attempts > ep.max_retries || past_deadline {
            let msg = format!("{msg} (after {attempts} attempts to {})", target.url);
            let f = if timed_out { Failure::Timeout(msg) } else { Failure::Unavailable(msg) };
            return (Err(f), attempts);
        }
        tokio::time::sleep(wait).await;
    }
}

/// Exponential backoff with jitter: base·2^n, then a random point in its upper half.
pub fn backoff(base: Duration, n: u32) -> Duration {
    let full = base.saturating_mul(1u32 << n.min(16)).min(MAX_BACKOFF);
    full.mul_f64(0.5 + fastrand::f64() * 0.5)
}

async fn attempt(ep: &Endpoint, key: Option<&str>, target: &Target<'_>) -> Attempt {
    let sem = semaphore(ep);
    let _permit = sem.acquire_owned().await.expect("the semaphore is never closed");
    let timeout = match ep.deadline {
        Some(d) => ep.timeout.min(d.saturating_duration_since(Instant::now())),
        None => ep.timeout,
    };
    if timeout.is_zero() {
        return Attempt::Fail(Failure::Timeout("the deadline passed before the request".into()));
    }
    let mut rb = match target.body {
        Some(body) => client().post(&target.url).json(body),
        None => client().get(&target.url),
    }
    .timeout(timeout);
    rb = match (ep.provider, key) {
        (Provider::OpenAI, Some(k)) => rb.bearer_auth(k),
        (Provider::Anthropic, Some(k)) => rb.header("x-api-key", k),
        (_, None) => rb,
    };
    if ep.provider == Provider::Anthropic {
        rb = rb.header("anthropic-version", "2023-06-01");
    }
    let resp = match rb.send().await {
        Ok(r) => r,
        Err(e) => return transport(e),
    };
    let status = resp.status().as_u16();
    let wait = retry_after(resp.headers());
    let text = match resp.text().await {
        Ok(t) => t,
        Err(e) => return transport(e),
    };
    // A server that refuses `json_schema` output says so with a 400, a 422 or
    // (llama-cpp-python) a 500 naming `response_format`: not worth retrying,
    // the caller falls back to another strategy.
    let asks_json_schema =
        target.body.and_then(|b| b.pointer("/response_format/type")).and_then(|t| t.as_str()) == Some("json_schema");
    if asks_json_schema && !(200..300).contains(&status) && super::openai::refuses_json_schema(&text) {
        return Attempt::Fail(Failure::BadRequest(format!("HTTP {status}: {}", snippet(&text))));
    }
    classify(status, wait, text)
}

fn transport(e: reqwest::Error) -> Attempt {
    if e.is_timeout() {
        Attempt::Retry("no answer within the request's timeout".to_string(), None, true)
    } else {
        // Strip the URL's query (none is used) and keep the cause chain.
        let mut msg = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            msg.push_str(": ");
            msg.push_str(&s.to_string());
            src = s.source();
        }
        Attempt::Retry(format!("cannot reach the server: {msg}"), None, false)
    }
}

fn classify(status: u16, wait: Option<Duration>, text: String) -> Attempt {
    match status {
        200..=299 => Attempt::Ok(text),
        429 if text.contains("insufficient_quota") => {
            Attempt::Fail(Failure::Config(format!("HTTP 429, quota exhausted: {}", snippet(&text))))
        }
        408 | 429 | 529 | 500..=599 => Attempt::Retry(format!("HTTP {status}: {}", snippet(&text)), wait, false),
        400 => Attempt::Fail(Failure::BadRequest(format!("HTTP 400: {}", snippet(&text)))),
        _ => Attempt::Fail(Failure::Config(format!("HTTP {status}: {}", snippet(&text)))),
    }
}

/// `retry-after-ms` (OpenAI) or `retry-after` in seconds. An HTTP-date
/// `retry-after` is ignored (the backoff applies).
fn retry_after(h: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| h.get(name).and_then(|v| v.to_str().ok()).and_then(|s| s.trim().parse::<f64>().ok());
    if let Some(ms) = get("retry-after-ms").filter(|v| v.is_finite() && *v >= 0.0) {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    get("retry-after").filter(|v| v.is_finite() && *v >= 0.0).map(|s| Duration::from_secs_f64(s.min(3600.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        assert!(matches!(classify(200, None, "{}".into()), Attempt::Ok(_)));
        assert!(matches!(classify(429, None, "rate".into()), Attempt::Retry(..)));
        assert!(matches!(
            classify(429, None, r#"{"error":{"code":"insufficient_quota"}}"#.into()),
            Attempt::Fail(Failure::Config(_))
        ));
        assert!(matches!(classify(529, None, "overloaded".into()), Attempt::Retry(..)));
        assert!(matches!(classify(503, None, "".into()), Attempt::Retry(..)));
        assert!(matches!(classify(400, None, "".into()), Attempt::Fail(Failure::BadRequest(_))));
        assert!(matches!(classify(401, None, "".into()), Attempt::Fail(Failure::Config(_))));
        assert!(matches!(classify(403, None, "".into()), Attempt::Fail(Failure::Config(_))));
    }

    #[test]
    fn backoff_grows_with_jitter() {
        let base = Duration::from_millis(100);
        for n in 0..5 {
            let full = base * (1 << n);
            let d = backoff(base, n);
            assert!(d >= full / 2 && d <= full, "{d:?} for n={n}");
        }
        assert!(backoff(base, 30) <= MAX_BACKOFF);
    }
}
