//! Agents built on the official Python SDKs — `openai`, `anthropic`, `mcp`
//! and the OpenAI Agents SDK, pinned in .ci/requirements-sdk.txt — run as
//! command agents against evalua's MCP server and model proxy, with a mock
//! upstream model server on 127.0.0.1 (axum, in the test process).
//!
//! They need `EVALUA_SDK_PYTHON` (the venv's python; `.ci/run` makes the venv
//! and exports it). Without it each test says so loudly and passes, unless
//! `EVALUA_REQUIRE_SDK=1` (set by `.ci/run`), where its absence fails.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::common::*;

const KEY: &str = "sk-test-SDK-REAL-KEY-7c1e";

/// The SDK venv's python, or None (with a loud message) when it is not set up.
fn sdk_python() -> Option<String> {
    match std::env::var("EVALUA_SDK_PYTHON") {
        Ok(p) if !p.trim().is_empty() => {
            assert!(Path::new(&p).exists(), "EVALUA_SDK_PYTHON={p} does not exist");
            Some(p)
        }
        _ if std::env::var("EVALUA_REQUIRE_SDK").as_deref() == Ok("1") => {
            panic!("EVALUA_REQUIRE_SDK=1 but EVALUA_SDK_PYTHON is not set: `source .ci/services.sh; ci_sdk_install`")
        }
        _ => {
            eprintln!(
                "\n*** SKIPPED: the official-SDK tests need EVALUA_SDK_PYTHON (a venv of .ci/requirements-sdk.txt: \
                 `source .ci/services.sh; ci_sdk_install`) ***\n"
            );
            None
        }
    }
}

/// A request the upstream mock received.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

type Responder = Arc<dyn Fn(&Seen) -> (u16, Value) + Send + Sync>;

/// A mock upstream that answers every request with `f(request)`.
struct Upstream {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Upstream {
    fn start(f: impl Fn(&Seen) -> (u16, Value) + Send + Sync + 'static) -> Upstream {
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let responder: Responder = Arc::new(f);
        let (tx, rx) = std::sync::mpsc::channel();
        let log = seen.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                let app = axum::Router::new().fallback(
                    move |method: axum::http::Method,
                          uri: axum::http::Uri,
                          headers: axum::http::HeaderMap,
                          body: axum::body::Bytes| {
                        let (log, responder) = (log.clone(), responder.clone());
                        async move {
                            let seen = Seen {
                                method: method.to_string(),
                                path: uri.path().to_string(),
                                headers: headers
                                    .iter()
                                    .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
                                    .collect(),
                                body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                            };
                            let (status, reply) = responder(&seen);
                            log.lock().unwrap().push(seen);
                            (axum::http::StatusCode::from_u16(status).unwrap(), axum::Json(reply))
                        }
                    },
                );
                let app = app.layer(axum::extract::DefaultBodyLimit::disable());
                axum::serve(listener, app).await.unwrap();
            });
        });
        Upstream { url: format!("http://{}", rx.recv().unwrap()), seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// An upstream speaking OpenAI's and Anthropic's APIs. Its Responses API asks
/// for `lookup_order` once, then answers with the tool's result.
fn upstream() -> Upstream {
    Upstream::start(|r| {
        let anthropic = r.header("anthropic-version").is_some();
        match (r.method.as_str(), r.path.as_str()) {
            ("POST", "/v1/chat/completions") => (
                200,
                json!({ "id": "c", "object": "chat.completion", "created": 0, "model": r.body["model"],
                        "choices": [{ "index": 0, "finish_reason": "stop",
                                      "message": { "role": "assistant", "content": "chat ok" } }],
                        "usage": { "prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37 } }),
            ),
            ("POST", "/v1/responses") => {
                let input = r.body["input"].to_string();
                let output = if input.contains("function_call_output") {
                    // The tool's result, as the model saw it, in its answer.
                    let result = r.body["input"]
                        .as_array()
                        .and_then(|items| items.iter().find(|i| i["type"] == "function_call_output"))
                        .map(|i| i["output"].to_string())
                        .unwrap_or_default();
                    json!([{ "type": "message", "id": "msg_2", "role": "assistant", "status": "completed",
                             "content": [{ "type": "output_text", "annotations": [],
                                           "text": format!("Order P-9930 looked up: {result}") }] }])
                } else if r.body["tools"].as_array().is_some_and(|t| !t.is_empty()) {
                    json!([{ "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup_order",
                             "arguments": "{\"order_id\": \"P-9930\"}", "status": "completed" }])
                } else {
                    json!([{ "type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                             "content": [{ "type": "output_text", "text": "responses ok", "annotations": [] }] }])
                };
                (
                    200,
                    json!({ "id": "resp_1", "object": "response", "created_at": 0, "model": r.body["model"],
                            "status": "completed", "output": output, "parallel_tool_calls": true,
                            "tool_choice": "auto", "tools": [],
                            "usage": { "input_tokens": 50, "output_tokens": 9, "total_tokens": 59,
                                       "input_tokens_details": { "cached_tokens": 0 },
                                       "output_tokens_details": { "reasoning_tokens": 0 } } }),
                )
            }
            ("GET", "/v1/models") if anthropic => (
                200,
                json!({ "data": [{ "type": "model", "id": "claude-sonnet-4-5", "display_name": "Claude Sonnet 4.5",
                                   "created_at": "2025-09-29T00:00:00Z" }],
                        "has_more": false, "first_id": "claude-sonnet-4-5", "last_id": "claude-sonnet-4-5" }),
            ),
            ("GET", "/v1/models") => (
                200,
                json!({ "object": "list",
                        "data": [{ "id": "gpt-4.1-mini", "object": "model", "created": 0, "owned_by": "mock" }] }),
            ),
            ("GET", p) if p.starts_with("/v1/models/") => {
                (200, json!({ "id": &p["/v1/models/".len()..], "object": "model", "created": 0, "owned_by": "mock" }))
            }
            ("POST", "/v1/messages/count_tokens") => (200, json!({ "input_tokens": 42 })),
            ("POST", "/v1/messages") => (
                200,
                json!({ "id": "msg", "type": "message", "role": "assistant", "model": r.body["model"],
                        "content": [{ "type": "text", "text": "messages ok" }],
                        "stop_reason": "end_turn", "stop_sequence": null,
                        "usage": { "input_tokens": 20, "output_tokens": 5 } }),
            ),
            _ => (404, json!({ "error": { "message": format!("no route {} {}", r.method, r.path) } })),
        }
    })
}

/// Run a suite of one case played by `script` (plain io unless `io` says
/// otherwise) through the model proxy (both providers, upstream `up`).
fn run_agent(python: &str, script: &str, agent_extra: &str, up: &Upstream) -> (tempfile::TempDir, Value) {
    let suite = format!(
        r#"local evalua = require("evalua")
local suite = evalua.suite {{ name = "sdk", trials = 1, budget = {{ deadline_s = 300 }},
  agent = evalua.agent.command {{ cmd = {{ {python:?}, evalua.path("agent.py") }}, model_proxy = true {agent_extra} }} }}
suite:tool {{ name = "lookup_order", description = "Look up an order",
  params = {{ type = "object", properties = {{ order_id = {{ type = "string" }} }}, required = {{ "order_id" }} }},
  run = function(ctx, a) return {{ order_id = a.order_id, units = 3, delivered = 2 }} end }}
suite:case {{ id = "c1", input = "Look up order P-9930", expect = {{ {{ name = "ran", run = function(t) return true end }} }} }}
return suite
"#
    );
    let dir = project(&[("s.lua", &suite), ("agent.py", script)]);
    let out = bin()
        .current_dir(dir.path())
        .env("EVALUA_OPENAI_BASE_URL", format!("{}/v1", up.url))
        .env("EVALUA_ANTHROPIC_BASE_URL", &up.url)
        .env("OPENAI_API_KEY", KEY)
        .env("ANTHROPIC_API_KEY", KEY)
        .args(["run", "s.lua", "--out", "out", "-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rec = record(&trials(&dir.path().join("out")), "c1", 1).clone();
    (dir, rec)
}

fn trace(dir: &Path, rec: &Value) -> Value {
    json(&dir.join("out").join(rec["trace"].as_str().unwrap()))
}

/// The model calls of a trace, as (api, input tokens, output tokens, error?).
fn model_calls(t: &Value) -> Vec<(String, u64, u64, bool)> {
    t["model_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["api"].as_str().unwrap_or("?").to_string(),
                c["input_tokens"].as_u64().unwrap(),
                c["output_tokens"].as_u64().unwrap(),
                c["error"].is_string(),
            )
        })
        .collect()
}

fn answer(rec: &Value) -> Value {
    assert_eq!(rec["ended"], "final", "{rec}");
    serde_json::from_str(rec["answer"].as_str().unwrap()).unwrap_or_else(|e| panic!("{e}: {rec}"))
}

/// No file under `dir` holds the real key.
fn assert_no_key(dir: &Path) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                assert!(!String::from_utf8_lossy(&std::fs::read(&p).unwrap()).contains(KEY), "{}", p.display());
            }
        }
    }
}

const OPENAI_AGENT: &str = r#"
import json, openai
c = openai.OpenAI(max_retries=0)  # OPENAI_BASE_URL and OPENAI_API_KEY come from the proxy
out = {}
r = c.responses.create(model="gpt-4.1-mini", input="hi")
out["responses"] = [r.output_text, r.usage.input_tokens, r.usage.output_tokens]
out["models"] = [m.id for m in c.models.list()]
out["model"] = c.models.retrieve("gpt-4.1-mini").id
big = c.chat.completions.create(model="gpt-4.1-mini",
    messages=[{"role": "user", "content": "x" * (3 * 1024 * 1024)}])
out["chat_3mib"] = big.choices[0].message.content
try:
    c.chat.completions.create(model="gpt-4.1-mini",
        messages=[{"role": "user", "content": "x" * (33 * 1024 * 1024)}])
    out["chat_33mib"] = "accepted"
except openai.APIStatusError as e:
    out["chat_33mib"] = [e.status_code, e.type, e.message]
print(json.dumps(out))
"#;

#[test]
fn the_openai_sdk_gets_responses_models_and_large_bodies_through_the_proxy() {
    let Some(python) = sdk_python() else { return };
    let up = upstream();
    let (dir, rec) = run_agent(&python, OPENAI_AGENT, ", io = 'plain'", &up);
    let a = answer(&rec);
    assert_eq!(a["responses"], json!(["responses ok", 50, 9]), "{a}");
    assert_eq!(a["models"], json!(["gpt-4.1-mini"]));
    assert_eq!(a["model"], "gpt-4.1-mini");
    assert_eq!(a["chat_3mib"], "chat ok", "a 3 MiB body is forwarded: {a}");
    assert_eq!(a["chat_33mib"][0], 413, "{a}");
    assert_eq!(a["chat_33mib"][1], "invalid_request_error", "the SDK read the error in OpenAI's format: {a}");
    assert!(a["chat_33mib"][2].as_str().unwrap().contains("32 MiB"), "{a}");

    let t = trace(dir.path(), &rec);
    let calls = model_calls(&t);
    let want = [
        ("responses", 50, 9, false),
        ("models", 0, 0, false),
        ("models", 0, 0, false),
        ("chat_completions", 30, 7, false),
        ("chat_completions", 0, 0, true),
    ];
    let want: Vec<(String, u64, u64, bool)> = want.iter().map(|(a, i, o, e)| (a.to_string(), *i, *o, *e)).collect();
    assert_eq!(calls, want);
    assert_eq!(rec["usage"]["input_tokens"], 80, "{rec}");
    assert_eq!(rec["usage"]["output_tokens"], 16, "{rec}");
    let paths: Vec<String> = up.seen().iter().map(|s| format!("{} {}", s.method, s.path)).collect();
    assert_eq!(
        paths,
        ["POST /v1/responses", "GET /v1/models", "GET /v1/models/gpt-4.1-mini", "POST /v1/chat/completions"]
    );
    assert!(up.seen().iter().all(|s| s.header("authorization") == Some(&format!("Bearer {KEY}"))));
    assert_no_key(&dir.path().join("out"));
}

const ANTHROPIC_AGENT: &str = r#"
import json, anthropic
c = anthropic.Anthropic(max_retries=0)  # ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY come from the proxy
out = {}
msgs = [{"role": "user", "content": "hi"}]
out["count"] = c.messages.count_tokens(model="claude-sonnet-4-5", messages=msgs).input_tokens
m = c.messages.create(model="claude-sonnet-4-5", max_tokens=16, messages=msgs)
out["message"] = [m.content[0].text, m.usage.input_tokens, m.usage.output_tokens]
out["models"] = [x.id for x in c.models.list().data]
try:
    c.messages.create(model="claude-sonnet-4-5", max_tokens=16,
        messages=[{"role": "user", "content": "x" * (33 * 1024 * 1024)}])
    out["too_big"] = "accepted"
except anthropic.APIStatusError as e:
    out["too_big"] = [e.status_code, e.body["error"]["type"]]
print(json.dumps(out))
"#;

#[test]
fn the_anthropic_sdk_gets_count_tokens_models_and_messages_through_the_proxy() {
    let Some(python) = sdk_python() else { return };
    let up = upstream();
    let (dir, rec) = run_agent(&python, ANTHROPIC_AGENT, ", io = 'plain'", &up);
    let a = answer(&rec);
    assert_eq!(a["count"], 42, "{a}");
    assert_eq!(a["message"], json!(["messages ok", 20, 5]), "{a}");
    assert_eq!(a["models"], json!(["claude-sonnet-4-5"]), "{a}");
    assert_eq!(a["too_big"], json!([413, "request_too_large"]), "{a}");
    let t = trace(dir.path(), &rec);
    let calls = model_calls(&t);
    let want =
        [("count_tokens", 0, 0, false), ("messages", 20, 5, false), ("models", 0, 0, false), ("messages", 0, 0, true)];
    let want: Vec<(String, u64, u64, bool)> = want.iter().map(|(a, i, o, e)| (a.to_string(), *i, *o, *e)).collect();
    assert_eq!(calls, want, "counted tokens are not spent ones");
    assert_eq!(rec["usage"]["input_tokens"], 20, "{rec}");
    for s in up.seen() {
        assert_eq!(s.header("x-api-key"), Some(KEY), "{s:?}");
        assert!(s.header("anthropic-version").is_some(), "{s:?}");
    }
    assert_no_key(&dir.path().join("out"));
}

const MCP_AGENT: &str = r#"
import asyncio, json, os
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

async def main():
    async with streamable_http_client(os.environ["EVALUA_MCP_URL"]) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            tools = await s.list_tools()
            ok = await s.call_tool("lookup_order", {"order_id": "P-9930"})
            bad = await s.call_tool("lookup_order", {"order_id": 7})
            return {"tools": [t.name for t in tools.tools],
                    "ok": [ok.is_error, ok.structured_content],
                    "bad": [bad.is_error, bad.content[0].text]}

print(json.dumps(asyncio.run(main())))
"#;

#[test]
fn the_mcp_sdk_calls_tools_and_ends_its_session_cleanly() {
    let Some(python) = sdk_python() else { return };
    let up = upstream();
    let (dir, rec) = run_agent(&python, MCP_AGENT, ", io = 'plain', tools = 'mcp'", &up);
    let a = answer(&rec);
    assert_eq!(a["tools"], json!(["lookup_order"]));
    assert_eq!(a["ok"], json!([false, { "order_id": "P-9930", "units": 3, "delivered": 2 }]), "{a}");
    assert_eq!(a["bad"][0], true, "{a}");
    assert!(a["bad"][1].as_str().unwrap().starts_with("rejected: invalid arguments"), "{a}");
    assert_eq!(rec["calls"]["executed"], 1);
    assert_eq!(rec["calls"]["rejected"], 1);
    // The SDK ends its session with a DELETE and logs a warning unless it gets 200 or 204.
    let t = trace(dir.path(), &rec);
    let stderr_tail = t["stderr_tail"].as_str().unwrap_or("");
    assert!(!stderr_tail.contains("Session termination failed"), "{stderr_tail}");
}

const AGENTS_SDK_AGENT: &str = r#"
import asyncio, json, os, sys
from agents import Agent, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp

set_tracing_disabled(True)  # no trace export to the network
start = json.loads(sys.stdin.readline())

async def main():
    async with MCPServerStreamableHttp(params={"url": start["mcp_url"]}, name="evalua") as tools:
        agent = Agent(name="refunds", instructions="Use the tools.", model="gpt-4.1-mini", mcp_servers=[tools])
        result = await Runner.run(agent, start["input"])
        return result.final_output

answer = asyncio.run(main())
sys.stdout.write(json.dumps({"type": "final", "content": answer}) + "\n")
"#;

/// An agent built on the OpenAI Agents SDK, as is: its model through the
/// proxy's Responses API, its tools from evalua's MCP server.
#[test]
fn an_openai_agents_sdk_agent_runs_through_the_responses_api_and_mcp() {
    let Some(python) = sdk_python() else { return };
    let up = upstream();
    let (dir, rec) = run_agent(&python, AGENTS_SDK_AGENT, ", tools = 'mcp'", &up);
    assert_eq!(rec["ended"], "final", "{rec}");
    let answer = rec["answer"].as_str().unwrap();
    assert!(answer.starts_with("Order P-9930 looked up:") && answer.contains("delivered"), "{answer}");
    assert_eq!(rec["calls"]["executed"], 1, "{rec}");
    let t = trace(dir.path(), &rec);
    assert_eq!(t["calls"][0]["name"], "lookup_order");
    assert_eq!(t["calls"][0]["args"], json!({ "order_id": "P-9930" }));
    let calls = model_calls(&t);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls.iter().all(|c| c.0 == "responses" && c.1 == 50 && c.2 == 9 && !c.3), "{calls:?}");
    assert_eq!(rec["usage"]["input_tokens"], 100);
    let seen = up.seen();
    assert!(seen.iter().all(|s| s.path == "/v1/responses"), "{seen:?}");
    // The MCP tool reached the model as a function tool.
    assert_eq!(seen[0].body["tools"][0]["name"], "lookup_order", "{}", seen[0].body);
    let stderr_tail = t["stderr_tail"].as_str().unwrap_or("");
    assert!(!stderr_tail.contains("Session termination failed"), "{stderr_tail}");
    assert_no_key(&dir.path().join("out"));
}
