//! Model clients: OpenAI-compatible Chat Completions (any base URL: OpenAI,
//! vLLM, llama.cpp's server, Ollama) and Anthropic Messages, behind one
//! blocking call, [`Endpoint::chat`], made from the trial worker threads.
//!
//! Why one shared tokio runtime and `block_on` rather than reqwest's blocking
//! API: the model proxy (an axum server) needs a tokio runtime anyway, and
//! reqwest's blocking client starts a runtime thread of its own per client.
//! One multi-thread runtime with two workers serves the proxy, every client
//! request, the per-endpoint semaphores and the MCP servers (`agent::mcp`)
//! — the process's only one; the worker threads (plain std
//! threads) `block_on` their request. Async code (the proxy) calls
//! [`Endpoint::chat_async`] instead.
//!
//! Errors are strict: a 400, 401, 403 or a quota-exhausted 429 is a
//! configuration error reported at once; 429 (honouring `retry-after`),
//! Anthropic's 529, 5xx, connection failures and timeouts are retried with
//! exponential backoff and jitter, then reported as unavailable. The API key
//! is read from the environment variable the suite names, sent only in the
//! request header and scrubbed from every error message.

mod anthropic;
mod client;
pub mod net;
mod openai;
pub mod price;
pub mod proxy;
mod retry;
pub mod types;

pub use net::{block_on, runtime};
pub use types::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_the_key() {
        let e = redact(ModelError::Config("bad key sk-secret-123 given".into()), Some("sk-secret-123"));
        assert_eq!(e.message(), "bad key *** given");
    }

    #[test]
    fn missing_key_is_a_config_error() {
        let mut ep = Endpoint::new(Provider::OpenAI, "http://127.0.0.1:1/v1", "m");
        ep.api_key_env = Some("EVALUA_TEST_SURELY_UNSET_KEY".into());
        assert!(matches!(ep.api_key(), Err(ModelError::Config(_))));
    }
}
