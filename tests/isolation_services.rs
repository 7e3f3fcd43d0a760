//! Issue 24, item 7: the services evalua runs for a trial (the model proxy,
//! the MCP server), attacked as a hostile agent would. Each test says whether
//! the attack got through before its fix, or held on the first try (then the
//! test guards the promise).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::json;

use evalua::model::proxy::Proxy;
use evalua::model::{Endpoint, Provider};

use crate::common::*;
use crate::models::{Mock, Reply, oa};

/// Send `raw` (a whole HTTP/1.1 request, `Connection: close`) and read the answer.
fn http(addr: SocketAddr, raw: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(PATIENCE))?;
    s.write_all(raw.as_bytes())?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn status(answer: &str) -> u16 {
    answer.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

fn post(addr: SocketAddr, target: &str, host: &str, headers: &str, body: &str) -> String {
    let raw = format!(
        "POST {target} HTTP/1.1\r\nHost: {host}\r\n{headers}Content-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    http(addr, &raw).unwrap_or_else(|e| format!("(no answer: {e})"))
}

fn get(addr: SocketAddr, target: &str, host: &str, headers: &str) -> String {
    let raw = format!("GET {target} HTTP/1.1\r\nHost: {host}\r\n{headers}Connection: close\r\n\r\n");
    http(addr, &raw).unwrap_or_else(|e| format!("(no answer: {e})"))
}

const REAL_KEY: &str = "sk-real-key-of-issue-24";

fn proxy(openai: Option<&Mock>, anthropic: Option<&Mock>, budget: evalua::spec::Budget) -> Proxy {
    // SAFETY: this variable is read by this file's tests only, all with the same value.
    unsafe { std::env::set_var("EVALUA_TEST_ISO_KEY", REAL_KEY) };
    let ep = |p: Provider, url: String| {
        let mut e = Endpoint::new(p, &url, "suite-model");
        e.api_key_env = Some("EVALUA_TEST_ISO_KEY".into());
        e.max_retries = 0;
        e
    };
    Proxy::start(
        openai.map(|m| ep(Provider::OpenAI, m.openai_url())),
        anthropic.map(|m| ep(Provider::Anthropic, m.url())),
        budget,
        Instant::now() + PATIENCE,
        Instant::now(),
    )
    .unwrap()
}

/// Held on the first try (the proxy builds every upstream request itself,
/// from the suite's endpoint: nothing of the agent's request line or
/// headers reaches the URL), except redirects. Before: the proxy's client
/// followed an upstream's redirect and took the Anthropic key (`x-api-key`,
/// which reqwest does not strip across hosts) to wherever it pointed.
#[test]
fn the_model_proxy_sends_the_real_key_nowhere_but_the_suites_endpoint() {
    let upstream = Mock::start(vec![oa(Some("hello"), &[], 1, 1)]);
    let elsewhere = Mock::start(vec![oa(Some("stolen"), &[], 1, 1)]);
    let p = proxy(Some(&upstream), None, Default::default());
    let auth = format!("Authorization: Bearer {}\r\n", p.dummy_key);
    let chat = json!({ "model": "m", "messages": [{ "role": "user", "content": "hi" }] }).to_string();
    let other = elsewhere.addr.to_string();
    let attacks = [
        // An absolute-form request target naming another host.
        post(p.addr, &format!("http://{other}/v1/chat/completions"), &other, &auth, &chat),
        // A Host header naming another host.
        post(p.addr, "/v1/chat/completions", &other, &auth, &chat),
        // A model that is a URL.
        post(
            p.addr,
            "/v1/chat/completions",
            "x",
            &auth,
            &json!({ "model": format!("http://{other}/v1"), "messages": [] }).to_string(),
        ),
        // Model ids that climb out of /models or name a host.
        get(p.addr, "/v1/models/..%2F..%2Fsteal", "x", &auth),
        get(p.addr, &format!("/v1/models/x@{other}"), "x", &auth),
        get(p.addr, &format!("/v1/models/%2F%2F{other}%2Fsteal"), "x", &auth),
        // A path that starts with the other host.
        post(p.addr, &format!("//{other}/v1/chat/completions"), "x", &auth, &chat),
    ];
    assert!(elsewhere.seen().is_empty(), "a request reached another host: {attacks:#?}");
    for s in upstream.seen() {
        assert!(s.path == "/v1/chat/completions" || s.path.starts_with("/v1/models/"), "{s:?}");
        assert!(!s.path.contains(".."), "{s:?}");
        if !s.body.is_null() {
            assert_eq!(s.body["model"], "suite-model", "{s:?}");
        }
    }

    // An upstream that redirects: neither key follows it.
    let redirect = |to: &Mock| Reply::Status(307, String::new(), vec![("location", format!("{}/steal", to.url()))]);
    let openai = Mock::start(vec![redirect(&elsewhere)]);
    let anthropic = Mock::start(vec![redirect(&elsewhere)]);
    let p = proxy(Some(&openai), Some(&anthropic), Default::default());
    let auth = format!("Authorization: Bearer {}\r\n", p.dummy_key);
    let a = post(p.addr, "/v1/chat/completions", "x", &auth, &chat);
    let msg = json!({ "model": "m", "max_tokens": 5, "messages": [{ "role": "user", "content": "hi" }] }).to_string();
    let b = post(
        p.addr,
        "/v1/messages",
        "x",
        &format!("x-api-key: {}\r\nanthropic-version: 2023-06-01\r\n", p.dummy_key),
        &msg,
    );
    let stolen: Vec<_> = elsewhere
        .seen()
        .into_iter()
        .filter(|s| s.auth.as_deref().is_some_and(|v| v.contains(REAL_KEY)) || s.api_key.as_deref() == Some(REAL_KEY))
        .collect();
    assert!(stolen.is_empty(), "the real key followed a redirect: {stolen:?}\n{a}\n{b}");
    assert!(elsewhere.seen().is_empty(), "the proxy followed a redirect: {:?}", elsewhere.seen());
    assert!(status(&a) >= 400 && status(&b) >= 400, "{a}\n{b}");
}

/// Held on the first try: a trial's proxy answers only its own trial's key,
/// so another trial's agent can neither spend through it nor read what it
/// recorded.
#[test]
fn a_proxy_refuses_another_trials_key() {
    let upstream = Mock::start(vec![oa(Some("hello"), &[], 1, 1)]);
    let (mine, theirs) =
        (proxy(Some(&upstream), None, Default::default()), proxy(Some(&upstream), None, Default::default()));
    assert_ne!(mine.dummy_key, theirs.dummy_key);
    let chat = json!({ "model": "m", "messages": [] }).to_string();
    let a =
        post(theirs.addr, "/v1/chat/completions", "x", &format!("Authorization: Bearer {}\r\n", mine.dummy_key), &chat);
    assert_eq!(status(&a), 401, "{a}");
    let a = get(theirs.addr, "/v1/models", "x", &format!("Authorization: Bearer {}\r\n", mine.dummy_key));
    assert_eq!(status(&a), 401, "{a}");
    assert!(upstream.seen().is_empty());
    assert!(theirs.take_calls().is_empty());
}

/// Before: the proxy checked the budget before a call and counted the call's
/// tokens after it; requests sent at once were all let through: eight
/// concurrent calls of 200 tokens each spent 1600 under `max_tokens = 10`.
/// Now, with a token or cost budget, calls go upstream one at a time, so no
/// call starts once the budget is spent (the call that spends it is the
/// only one past it, as when they come one by one).
#[test]
fn the_model_proxys_budget_holds_against_concurrent_calls() {
    let upstream = Mock::start(vec![Reply::Sleep(Duration::from_millis(300), Box::new(oa(Some("hi"), &[], 100, 100)))]);
    let budget = evalua::spec::Budget { max_tokens: Some(10), ..Default::default() };
    let p = proxy(Some(&upstream), None, budget);
    let chat = json!({ "model": "m", "messages": [{ "role": "user", "content": "hi" }] }).to_string();
    let auth = format!("Authorization: Bearer {}\r\n", p.dummy_key);
    let start = std::sync::Arc::new(std::sync::Barrier::new(8));
    let answers: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let (start, chat, auth) = (start.clone(), &chat, &auth);
                s.spawn(move || {
                    start.wait();
                    post(p.addr, "/v1/chat/completions", "x", auth, chat)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let codes: Vec<u16> = answers.iter().map(|a| status(a)).collect();
    assert_eq!(upstream.seen().len(), 1, "calls that went upstream after the budget was spent: {codes:?}");
    assert_eq!(codes.iter().filter(|&&c| c == 200).count(), 1, "{codes:?}");
    assert_eq!(codes.iter().filter(|&&c| c == 403).count(), 7, "{codes:?}");
    assert!(p.budget_hit().is_some());
}

/// The MCP server of a trial, reached as a client would: `initialize`
/// (POST, JSON-RPC), then `tools/list` in the session it opened.
fn mcp_initialize(addr: SocketAddr, path: &str) -> (String, Option<String>) {
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "attacker", "version": "1" } } });
    let a = post(addr, path, &addr.to_string(), "Accept: application/json, text/event-stream\r\n", &init.to_string());
    let session = a
        .lines()
        .find_map(|l| l.to_ascii_lowercase().starts_with("mcp-session-id:").then(|| l[15..].trim().to_string()));
    (a, session)
}

fn mcp_list(addr: SocketAddr, path: &str, session: &str) -> String {
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let h = format!(
        "Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\n"
    );
    post(addr, path, &addr.to_string(), &h, &list.to_string())
}

/// Held on the first try: a trial's MCP URL has a path nobody can guess (a
/// wrong one is a 404, even on the right port), and once the trial ends its
/// server is gone: neither a new session nor the trial's own old session
/// gets an answer.
#[test]
fn an_mcp_server_answers_nothing_but_its_own_url_and_nothing_once_its_trial_ended() {
    let (tx, rx) = std::sync::mpsc::sync_channel(4);
    let server = evalua::agent::mcp::serve(std::iter::empty(), tx).unwrap();
    let url = server.url.strip_prefix("http://").unwrap().to_string();
    let (host, path) = url.split_at(url.find('/').unwrap());
    let addr: SocketAddr = host.parse().unwrap();
    let (a, session) = mcp_initialize(addr, path);
    assert_eq!(status(&a), 200, "{a}");
    let session = session.unwrap_or_else(|| panic!("no session id: {a}"));
    let listed = mcp_list(addr, path, &session);
    assert_eq!(status(&listed), 200, "{listed}");
    assert!(listed.contains("\"tools\""), "{listed}");
    let guessed = format!("/mcp/{}", "0".repeat(path.len() - 5));
    let (g, _) = mcp_initialize(addr, &guessed);
    assert_eq!(status(&g), 404, "a guessed path: {g}");

    drop(server);
    drop(rx);
    let dead = |a: &str| status(a) != 200 || !a.contains("\"tools\"");
    assert!(
        eventually(|| dead(&mcp_list(addr, path, &session)) && status(&mcp_initialize(addr, path).0) != 200),
        "the ended trial's MCP server still answers: {}",
        mcp_list(addr, path, &session)
    );
}
