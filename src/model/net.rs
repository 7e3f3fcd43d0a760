//! The process's one tokio runtime and HTTP client, and the per-base-URL
//! caps on concurrent requests.
//!
//! Why one shared runtime and `block_on` rather than reqwest's blocking API:
//! the model proxy (an axum server) needs a tokio runtime anyway, and
//! reqwest's blocking client starts a runtime thread of its own per client.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use super::types::Endpoint;

/// The process's one tokio runtime: model clients, the model proxy, the MCP
/// servers and the viewer.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("evalua-net")
            .enable_all()
            .build()
            .expect("cannot start the tokio runtime")
    })
}

/// Run a future to completion from blocking code. From inside the runtime
/// (where `block_on` would panic) it runs on a helper thread.
pub fn block_on<F: std::future::Future + Send>(f: F) -> F::Output
where
    F::Output: Send,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        std::thread::scope(|s| s.spawn(|| runtime().block_on(f)).join().expect("model call panicked"))
    } else {
        runtime().block_on(f)
    }
}

/// One HTTP client for the process (connection pools per host).
pub(crate) fn client() -> &'static reqwest::Client {
    static C: OnceLock<reqwest::Client> = OnceLock::new();
    C.get_or_init(|| {
        crate::util::tls::install();
        reqwest::Client::builder()
            .user_agent(concat!("evalua/", env!("CARGO_PKG_VERSION")))
            // A redirect is an error, never followed: the real key (an
            // Anthropic `x-api-key` survives reqwest's cross-host stripping)
            // goes to the endpoint the suite names and nowhere else.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("cannot build the HTTP client")
    })
}

/// The process-wide cap on concurrent requests to one base URL.
pub(crate) fn semaphore(ep: &Endpoint) -> Arc<tokio::sync::Semaphore> {
    static S: OnceLock<Mutex<HashMap<String, Arc<tokio::sync::Semaphore>>>> = OnceLock::new();
    let map = S.get_or_init(Default::default);
    map.lock()
        .unwrap()
        .entry(ep.base_url.clone())
        .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(ep.max_concurrency.max(1))))
        .clone()
}
