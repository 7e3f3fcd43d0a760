//! Model clients, model-driven agents, simulated users and the model proxy,
//! against mock model servers listening on 127.0.0.1 inside the test (axum).
//! No test uses the network; the real-model test runs only when
//! EVALUA_REAL_MODEL_URL names a local OpenAI-compatible server.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use evalua::model::{ChatRequest, Endpoint, Message, ModelError, Provider, Structured, ToolSchema};

use crate::common::*;

/// One scripted answer of the mock server.
#[derive(Clone)]
pub enum Reply {
    Json(Value),
    Status(u16, String, Vec<(&'static str, String)>),
    Raw(String),
    Sleep(Duration, Box<Reply>),
}

/// A request the mock received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    pub auth: Option<String>,
    pub api_key: Option<String>,
    pub body: Value,
}

#[derive(Default)]
struct MockState {
    script: Mutex<VecDeque<Reply>>,
    seen: Mutex<Vec<Seen>>,
}

/// A mock model server: answers with the scripted replies in order; the last
/// one repeats.
pub struct Mock {
    pub addr: SocketAddr,
    state: Arc<MockState>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Mock {
    pub fn start(script: Vec<Reply>) -> Mock {
        let state = Arc::new(MockState { script: Mutex::new(script.into()), seen: Mutex::default() });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let st = state.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                // No body limit: upstreams take the proxy's large bodies.
                let app =
                    Router::new().fallback(answer).layer(axum::extract::DefaultBodyLimit::disable()).with_state(st);
                let l = tokio::net::TcpListener::from_std(listener).unwrap();
                let _ = axum::serve(l, app)
                    .with_graceful_shutdown(async {
                        let _ = rx.await;
                    })
                    .await;
            });
        });
        Mock { addr, state, _stop: tx }
    }

    pub fn openai_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }
}

async fn answer(State(st): State<Arc<MockState>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).map(String::from);
    st.seen.lock().unwrap().push(Seen {
        path: uri.path().to_string(),
        auth: h("authorization"),
        api_key: h("x-api-key"),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let reply = {
        let mut s = st.script.lock().unwrap();
        if s.len() > 1 { s.pop_front().unwrap() } else { s.front().cloned().unwrap_or(Reply::Raw("{}".into())) }
    };
    render(reply).await
}

fn render(r: Reply) -> std::pin::Pin<Box<dyn std::future::Future<Output = Response> + Send>> {
    Box::pin(async move {
        match r {
            Reply::Json(v) => axum::Json(v).into_response(),
            Reply::Raw(s) => (StatusCode::OK, [("content-type", "application/json")], s).into_response(),
            Reply::Status(code, body, headers) => {
                let mut resp = (StatusCode::from_u16(code).unwrap(), body).into_response();
                for (k, v) in headers {
                    resp.headers_mut().insert(k, v.parse().unwrap());
                }
                resp
            }
            Reply::Sleep(d, then) => {
                tokio::time::sleep(d).await;
                render(*then).await
            }
        }
    })
}

/// An OpenAI chat completion with text and/or tool calls.
pub fn oa(text: Option<&str>, calls: &[(&str, &str, Value)], input: u64, output: u64) -> Reply {
    let tool_calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| json!({ "id": id, "type": "function", "function": { "name": name, "arguments": args.to_string() } }))
        .collect();
    let mut msg = json!({ "role": "assistant", "content": text });
    if !tool_calls.is_empty() {
        msg["tool_calls"] = json!(tool_calls);
    }
    let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
    Reply::Json(json!({
        "id": "x", "object": "chat.completion", "model": "mock",
        "choices": [{ "index": 0, "message": msg, "finish_reason": finish }],
        "usage": { "prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output }
    }))
}

/// An Anthropic message with text and/or tool uses.
pub fn an(text: Option<&str>, calls: &[(&str, &str, Value)], input: u64, output: u64) -> Reply {
    let mut content = Vec::new();
    if let Some(t) = text {
        content.push(json!({ "type": "text", "text": t }));
    }
    for (id, name, args) in calls {
        content.push(json!({ "type": "tool_use", "id": id, "name": name, "input": args }));
    }
    Reply::Json(json!({
        "id": "msg", "type": "message", "role": "assistant", "model": "claude-mock", "content": content,
        "stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" },
        "usage": { "input_tokens": input, "output_tokens": output }
    }))
}

const KEY: &str = "sk-test-EVALUA-SECRET-4f9a2c";

/// A suite with one `lookup_order` tool and one case, played by `agent`.
fn model_suite(agent: &str, budget: &str, case_extra: &str) -> String {
    format!(
        r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {{ name = "llm", trials = 1, budget = {{ {budget} }}, agent = {agent} }}
suite:tool {{ name = "lookup_order", description = "Look up an order",
  params = {{ type = "object", properties = {{ order_id = {{ type = "string" }} }}, required = {{ "order_id" }} }},
  run = function(ctx, a) return {{ order_id = a.order_id, total = 19.9 }} end }}
suite:case {{ id = "c1", input = "Refund P-9930", {case_extra}
  expect = {{ check.answer {{ contains = "19.9" }} }} }}
return suite
"#
    )
}

fn openai_agent(mock: &Mock, extra: &str) -> String {
    format!(
        "evalua.agent.openai {{ model = 'gpt-4.1-mini', base_url = {:?}, api_key_env = 'EVALUA_TEST_KEY', temperature = 0, {extra} }}",
        mock.openai_url()
    )
}

/// Run a suite file's text in a temp dir with the test key set; return (dir,
/// output, records). A run still going after PATIENCE fails the test.
fn run(text: &str) -> (tempfile::TempDir, std::process::Output, Vec<Value>) {
    let dir = project(&[("s.lua", text)]);
    let out = output_within(
        bin().current_dir(dir.path()).env("EVALUA_TEST_KEY", KEY).args(["run", "s.lua", "--out", "out", "-q"]),
        PATIENCE,
    );
    let recs = if dir.path().join("out/trials.jsonl").exists() { trials(&dir.path().join("out")) } else { Vec::new() };
    (dir, out, recs)
}

fn trace(dir: &Path, rec: &Value) -> Value {
    trace_of(&dir.join("out"), rec)
}

/// No file under `dir` contains `needle`.
fn assert_nowhere(dir: &Path, needle: &str) {
    let mut stack = vec![dir.to_path_buf()];
    let mut files = 0;
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files += 1;
                let bytes = std::fs::read(&p).unwrap();
                assert!(!String::from_utf8_lossy(&bytes).contains(needle), "{} contains the secret", p.display());
            }
        }
    }
    assert!(files >= 3, "the run dir has its files ({files})");
}

#[test]
fn openai_agent_runs_the_tool_loop_and_records_usage_and_cost() {
    let mock = Mock::start(vec![
        oa(None, &[("call_a", "lookup_order", json!({ "order_id": "P-9930" }))], 100, 20),
        oa(Some("Refunded 19.9 EUR."), &[], 150, 10),
    ]);
    let (dir, out, recs) = run(&model_suite(&openai_agent(&mock, "seed = 42"), "max_tokens = 1000", ""));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = record(&recs, "c1", 1);
    assert_eq!(r["outcome"], "accepted", "{r}");
    assert_eq!(r["answer"], "Refunded 19.9 EUR.");
    assert_eq!(r["calls"]["executed"], 1);
    assert_eq!(r["usage"]["input_tokens"], 250);
    assert_eq!(r["usage"]["output_tokens"], 30);
    // gpt-4.1-mini from the built-in table: 0.40 / 1.60 USD per million.
    let cost = r["usage"]["cost_usd"].as_f64().unwrap();
    assert!(close(cost, (250.0 * 0.40 + 30.0 * 1.60) / 1e6), "cost {cost}");
    let t = trace(dir.path(), r);
    assert_eq!(t["model_calls"].as_array().unwrap().len(), 2);
    assert_eq!(t["model_calls"][0]["by"], "agent");

    let seen = mock.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].auth.as_deref(), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(seen[0].body["seed"], 42);
    assert_eq!(seen[0].body["temperature"], 0.0);
    assert_eq!(seen[0].body["tools"][0]["function"]["name"], "lookup_order");
    // The second request carries the tool call (content "" beside it, never null) and its result.
    let msgs = seen[1].body["messages"].as_array().unwrap();
    let asst = msgs.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(asst["content"], "");
    assert_eq!(asst["tool_calls"][0]["id"], "call_a");
    let tool = msgs.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call_id"], "call_a");
    assert!(tool["content"].as_str().unwrap().contains("19.9"));
    assert_nowhere(&dir.path().join("out"), KEY);
}

#[test]
fn anthropic_agent_runs_the_tool_loop() {
    let mock = Mock::start(vec![
        an(Some("Let me look."), &[("tu_1", "lookup_order", json!({ "order_id": "P-9930" }))], 80, 12),
        an(Some("Refunded 19.9."), &[], 90, 5),
    ]);
    let agent = format!(
        "evalua.agent.anthropic {{ model = 'claude-sonnet-4-5', base_url = {:?}, api_key_env = 'EVALUA_TEST_KEY', system = 'Be brief.' }}",
        mock.url()
    );
    let (dir, out, recs) = run(&model_suite(&agent, "", ""));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = record(&recs, "c1", 1);
    assert_eq!(r["outcome"], "accepted", "{r}");
    assert_eq!(r["usage"]["input_tokens"], 170);
    let seen = mock.seen();
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!(seen[0].api_key.as_deref(), Some(KEY));
    assert_eq!(seen[0].body["system"], "Be brief.");
    let last = &seen[1].body["messages"].as_array().unwrap()[2];
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert_eq!(last["content"][0]["tool_use_id"], "tu_1");
    // The system prompt's hash is in the manifest, not its key.
    let manifest = json(&dir.path().join("out/manifest.json"));
    assert!(manifest["agent"]["system_sha256"].as_str().unwrap().len() == 64, "{}", manifest["agent"]);
    assert_nowhere(&dir.path().join("out"), KEY);
}

#[test]
fn rate_limits_and_server_errors_are_retried() {
    // 429 with retry-after: 1 second, then success.
    let mock = Mock::start(vec![
        Reply::Status(
            429,
            r#"{"error":{"message":"slow down","code":"rate_limit_exceeded"}}"#.into(),
            vec![("retry-after", "1".into())],
        ),
        oa(Some("19.9"), &[], 10, 2),
    ]);
    let started = Instant::now();
    let (dir, out, recs) = run(&model_suite(&openai_agent(&mock, ""), "", ""));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = record(&recs, "c1", 1);
    assert_eq!(r["outcome"], "accepted", "{r}");
    assert!(started.elapsed() >= Duration::from_secs(1), "retry-after was honoured");
    assert_eq!(mock.seen().len(), 2);
    assert_eq!(trace(dir.path(), r)["model_calls"][0]["attempts"], 2);

    // 500, then success.
    let mock = Mock::start(vec![Reply::Status(500, "boom".into(), vec![]), oa(Some("19.9"), &[], 10, 2)]);
    let (_dir, _out, recs) = run(&model_suite(&openai_agent(&mock, ""), "", ""));
    assert_eq!(record(&recs, "c1", 1)["outcome"], "accepted");
    assert_eq!(mock.seen().len(), 2);
}

#[test]
fn api_failures_are_infra_errors_and_configuration_errors_are_not_retried() {
    // Persistent 500: retried max_retries times, then an infrastructure error.
    let mock = Mock::start(vec![Reply::Status(500, "boom".into(), vec![])]);
    let (_d, out, recs) = run(&model_suite(&openai_agent(&mock, "max_retries = 2"), "", ""));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = record(&recs, "c1", 1);
    assert_eq!(r["outcome"], "infra_error", "{r}");
    assert!(r["error"].as_str().unwrap().contains("model unavailable"), "{r}");
    assert_eq!(mock.seen().len(), 3);

    // 401: reported at once, one request. The server echoes the key: it is redacted.
    let mock = Mock::start(vec![Reply::Status(
        401,
        format!(r#"{{"error":{{"message":"Incorrect API key {KEY}"}}}}"#),
        vec![],
    )]);
    let (dir, _out, recs) = run(&model_suite(&openai_agent(&mock, "max_retries = 3"), "", ""));
    let r = record(&recs, "c1", 1);
    assert_eq!(r["outcome"], "infra_error", "{r}");
    assert!(r["error"].as_str().unwrap().contains("configuration"), "{r}");
    assert!(r["error"].as_str().unwrap().contains("***"), "{r}");
    assert_eq!(mock.seen().len(), 1);
    assert_nowhere(&dir.path().join("out"), KEY);

    // A quota-exhausted 429 is a configuration error too: not retried.
    let mock = Mock::start(vec![Reply::Status(
        429,
        r#"{"error":{"message":"You exceeded your current quota","code":"insufficient_quota"}}"#.into(),
        vec![],
    )]);
    let (_d, _out, recs) = run(&model_suite(&openai_agent(&mock, "max_retries = 3"), "", ""));
    assert!(record(&recs, "c1", 1)["error"].as_str().unwrap().contains("quota"));
    assert_eq!(mock.seen().len(), 1);

    // A timeout per request. The answer would take an hour: a run that ends
    // (within PATIENCE) timed its requests out.
    let mock = Mock::start(vec![Reply::Sleep(Duration::from_secs(3600), Box::new(oa(Some("late"), &[], 1, 1)))]);
    let (_d, _out, recs) = run(&model_suite(&openai_agent(&mock, "timeout_s = 0.3, max_retries = 1"), "", ""));
    let r = record(&recs, "c1", 1);
    assert_eq!(r["outcome"], "infra_error", "{r}");
    assert!(r["error"].as_str().unwrap().contains("timed out"), "{r}");
    assert_eq!(mock.seen().len(), 2, "one request and one retry, each timed out");

    // Malformed JSON with a 200.
    let mock = Mock::start(vec![Reply::Raw("{\"choices\": [ this is not json".into())]);
    let (_d, _out, recs) = run(&model_suite(&openai_agent(&mock, ""), "", ""));
    let r = record(&recs, "c1", 1);
    assert_eq!(r["outcome"], "infra_error", "{r}");
    assert!(r["error"].as_str().unwrap().contains("malformed"), "{r}");
}

#[test]
fn model_usage_counts_against_the_token_budget() {
    // Each answer uses 600 tokens and asks for another lookup: the second answer spends max_tokens.
    let mock = Mock::start(vec![oa(None, &[("c", "lookup_order", json!({ "order_id": "P-1" }))], 500, 100)]);
    let (_d, out, recs) = run(&model_suite(&openai_agent(&mock, ""), "max_tokens = 1000", ""));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = record(&recs, "c1", 1);
    assert_eq!(r["ended"], "budget", "{r}");
    assert!(r["error"].as_str().unwrap().contains("max_tokens"), "{r}");
    assert_eq!(mock.seen().len(), 2);

    // The agent's own max_turns bounds the model calls.
    let mock = Mock::start(vec![oa(None, &[("c", "lookup_order", json!({ "order_id": "P-1" }))], 1, 1)]);
    let (_d, _out, recs) = run(&model_suite(&openai_agent(&mock, "max_turns = 3"), "", ""));
    let r = record(&recs, "c1", 1);
    assert_eq!(r["ended"], "budget", "{r}");
    assert_eq!(mock.seen().len(), 3);
}

#[test]
fn structured_output_falls_back_to_json_object_when_json_schema_is_refused() {
    let mock = Mock::start(vec![
        Reply::Status(
            400,
            r#"{"error":{"message":"response_format type json_schema is not supported"}}"#.into(),
            vec![],
        ),
        oa(Some(r#"{"ok": true}"#), &[], 5, 3),
    ]);
    let ep = Endpoint::new(Provider::OpenAI, &mock.openai_url(), "local-model");
    let req = ChatRequest {
        messages: vec![Message::user("judge this")],
        structured: Some(Structured { name: "verdict".into(), schema: json!({ "type": "object" }) }),
        ..Default::default()
    };
    let r = ep.chat(&req).unwrap();
    assert_eq!(r.strategy.as_deref(), Some("json_object"));
    assert_eq!(r.text.as_deref(), Some(r#"{"ok": true}"#));
    assert_eq!(r.cost_usd, None, "a local model has no known price");
    let seen = mock.seen();
    assert_eq!(seen[0].body["response_format"]["type"], "json_schema");
    assert_eq!(seen[1].body["response_format"]["type"], "json_object");
    assert!(seen[1].body["messages"][0]["content"].as_str().unwrap().contains("JSON schema"));
    assert!(seen[0].auth.is_none(), "no key configured: none sent");

    // llama-cpp-python refuses it with a 500 naming response_format: a fallback too, not retried.
    let mock = Mock::start(vec![
        Reply::Status(
            500,
            r#"{"error":{"message":"'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\""}}"#
                .into(),
            vec![],
        ),
        oa(Some(r#"{"ok": true}"#), &[], 5, 3),
    ]);
    let ep = Endpoint::new(Provider::OpenAI, &mock.openai_url(), "llama-model");
    let r = ep.chat(&req).unwrap();
    assert_eq!(r.strategy.as_deref(), Some("json_object"));
    assert_eq!(r.attempts, 2);
    assert_eq!(mock.seen().len(), 2);

    // A 400 about something else is a configuration error, not a fallback.
    let mock = Mock::start(vec![Reply::Status(400, r#"{"error":{"message":"bad model"}}"#.into(), vec![])]);
    let ep = Endpoint::new(Provider::OpenAI, &mock.openai_url(), "other-model");
    let e = ep.chat(&req).unwrap_err();
    assert!(matches!(e, ModelError::Config(_)), "{e}");
    assert_eq!(mock.seen().len(), 1);

    // Anthropic: a forced tool.
    let mock = Mock::start(vec![an(None, &[("t", "verdict", json!({ "ok": false }))], 5, 3)]);
    let ep = Endpoint::new(Provider::Anthropic, &mock.url(), "claude-haiku-4-5");
    let r = ep.chat(&ChatRequest { tools: Vec::<ToolSchema>::new(), ..req.clone() }).unwrap();
    assert_eq!(r.strategy.as_deref(), Some("tool"));
    assert_eq!(r.text.as_deref(), Some(r#"{"ok":false}"#));
    assert_eq!(mock.seen()[0].body["tool_choice"]["name"], "verdict");
}

#[test]
fn simulated_user_answers_from_its_hidden_profile() {
    let profile = "PROFILE-MARKER: customer 4821, postcode 28013";
    let agent = Mock::start(vec![
        oa(Some("What is your postcode?"), &[], 10, 5),
        oa(Some("Thanks. Refunded 19.9."), &[], 10, 5),
        oa(Some("Anything else?"), &[], 10, 5),
    ]);
    let user = Mock::start(vec![oa(Some("28013"), &[], 7, 3), oa(Some("###STOP###"), &[], 7, 1)]);
    let case_extra = format!(
        "user = evalua.user.llm {{ profile = {profile:?}, goal = 'get the refund', model = evalua.model {{ model = 'sim', base_url = {:?} }} }},",
        user.openai_url()
    );
    let (dir, out, recs) = run(&model_suite(&openai_agent(&agent, ""), "max_turns = 6", &case_extra));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = record(&recs, "c1", 1);
    assert_eq!(r["outcome"], "accepted", "{r}");
    assert_eq!(r["answer"], "Thanks. Refunded 19.9.");
    let t = trace(dir.path(), r);
    let msgs: Vec<(String, String)> = t["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap().to_string(), m["content"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        msgs,
        vec![
            ("user".into(), "Refund P-9930".into()),
            ("agent".into(), "What is your postcode?".into()),
            ("user".into(), "28013".into()),
            ("agent".into(), "Thanks. Refunded 19.9.".into()),
        ]
    );
    // The agent never saw the profile; the simulated user did.
    for s in agent.seen() {
        assert!(!s.body.to_string().contains("PROFILE-MARKER"), "the profile reached the agent");
    }
    assert!(user.seen()[0].body.to_string().contains("PROFILE-MARKER"));
    // The simulated user's own view: the case input is its own (assistant) turn.
    assert_eq!(user.seen()[0].body["messages"][1]["role"], "assistant");
    let by: Vec<&str> = t["model_calls"].as_array().unwrap().iter().map(|c| c["by"].as_str().unwrap()).collect();
    assert_eq!(by, vec!["agent", "user", "agent", "user"]);
    // The user's tokens are recorded in model_calls but are not the agent's usage.
    assert_eq!(r["usage"]["input_tokens"], 20);
}

#[test]
fn a_simulated_user_that_fails_after_the_agent_spoke_is_an_infra_error_beside_a_graded_outcome() {
    let agent = Mock::start(vec![oa(Some("What is your postcode?"), &[], 10, 5)]);
    let user = Mock::start(vec![Reply::Status(401, "no".into(), vec![])]);
    let case_extra = format!(
        "user = evalua.user.llm {{ profile = 'p', goal = 'g', model = {{ model = 'sim', base_url = {:?} }} }},",
        user.openai_url()
    );
    let (_d, _out, recs) = run(&model_suite(&openai_agent(&agent, ""), "", &case_extra));
    let r = record(&recs, "c1", 1);
    // The agent had spoken (a turn to the user): it started, so it is graded on what it did.
    assert_eq!(r["ended"], "infra_error", "{r}");
    assert_eq!(r["outcome"], "failed", "{r}");
    assert!(r["infra_error"].as_str().unwrap().contains("simulated user"), "{r}");
    assert_eq!(r["checks"].as_array().unwrap().len(), 1, "{r}");
}

#[test]
fn missing_key_variable_is_a_configuration_error() {
    let mock = Mock::start(vec![oa(Some("19.9"), &[], 1, 1)]);
    let agent = format!(
        "evalua.agent.openai {{ model = 'm', base_url = {:?}, api_key_env = 'EVALUA_TEST_SURELY_UNSET' }}",
        mock.openai_url()
    );
    let (_d, _out, recs) = run(&model_suite(&agent, "", ""));
    let r = record(&recs, "c1", 1);
    assert_eq!(r["outcome"], "infra_error");
    assert!(r["error"].as_str().unwrap().contains("EVALUA_TEST_SURELY_UNSET"), "{r}");
    assert!(mock.seen().is_empty());
}

#[test]
fn bad_model_options_are_user_errors() {
    let dir = project(&[("s.lua", &model_suite("evalua.agent.openai { model = 'm', temprature = 0 }", "", ""))]);
    let out = evalua(dir.path(), &["check", "s.lua"]);
    assert_user_error(&out, "s.lua:3:");
    assert!(stderr(&out).contains("unknown key 'temprature'"), "{}", stderr(&out));

    let dir = project(&[(
        "s.lua",
        &model_suite("evalua.agent.openai { model = 'm', system = 'prompts/missing.md' }", "", ""),
    )]);
    assert_user_error(&evalua(dir.path(), &["check", "s.lua"]), "no such file");

    // τ-bench's loop options: each bad value named at the suite's line.
    for (agent, case_extra, says) in [
        ("evalua.agent.openai { model = 'm', tool_results = 'raw' }", "", "tool_results = \"raw\" is not one of"),
        ("evalua.agent.openai { model = 'm', calls_per_step = 0 }", "", "'calls_per_step' must be a positive integer"),
        (
            "evalua.agent.openai { model = 'm' }",
            "user = evalua.user.llm { system = '', model = 'u' },",
            "'system' must be a non-empty string",
        ),
        (
            "evalua.agent.openai { model = 'm' }",
            "user = evalua.user.llm { opening = 'hi', model = 'u' },",
            "'profile' is required",
        ),
    ] {
        let dir = project(&[("s.lua", &model_suite(agent, "", case_extra))]);
        let out = evalua(dir.path(), &["check", "s.lua"]);
        assert_user_error(&out, says);
        assert!(stderr(&out).contains("s.lua:"), "{}", stderr(&out));
    }
    // A user given its whole prompt needs no profile or goal.
    let ok = "user = evalua.user.llm { system = 'You are a user.', opening = 'Hi!', model = 'u' },";
    let dir = project(&[("s.lua", &model_suite("evalua.agent.openai { model = 'm' }", "", ok))]);
    let out = evalua(dir.path(), &["check", "s.lua"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

const PROXY_AGENT: &str = r#"import json, os, sys, urllib.request, urllib.error
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
start = json.loads(sys.stdin.readline())
for i in range(int(start["input"])):
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps({"model": "agent-model", "messages": [{"role": "user", "content": "hi"}]}).encode(),
        headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req).read()
    except urllib.error.HTTPError as e:
        send({"type": "final", "content": "refused %d" % e.code}); sys.exit(0)
# It never reports usage; its environment is its answer.
send({"type": "final", "content": json.dumps(dict(os.environ))})
"#;

#[test]
fn model_proxy_records_usage_and_enforces_max_tokens_for_agents_that_never_report_it() {
    let mock = Mock::start(vec![oa(Some("hello"), &[], 300, 100)]);
    let suite = format!(
        r#"local evalua = require("evalua")
local suite = evalua.suite {{ name = "proxy", budget = {{ max_tokens = 1000, deadline_s = 20 }},
  agent = evalua.agent.command {{ cmd = {{ "python3", evalua.path("agent.py") }},
    model_proxy = evalua.model {{ model = "gpt-4.1-mini", base_url = {:?}, api_key_env = "EVALUA_TEST_KEY" }} }} }}
local ok = {{ name = "ran", run = function(t) return true end }}
suite:case {{ id = "two_calls", input = "2", expect = {{ ok }} }}
suite:case {{ id = "five_calls", input = "5", expect = {{ ok }} }}
return suite
"#,
        mock.openai_url()
    );
    let dir = project(&[("s.lua", &suite), ("agent.py", PROXY_AGENT)]);
    let out = bin()
        .current_dir(dir.path())
        .env("EVALUA_TEST_KEY", KEY)
        .args(["run", "s.lua", "--out", "out", "-q", "--jobs", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let recs = trials(&dir.path().join("out"));

    let r = record(&recs, "two_calls", 1);
    assert_eq!(r["outcome"], "accepted", "{r}");
    assert_eq!(r["usage"]["input_tokens"], 600);
    assert_eq!(r["usage"]["output_tokens"], 200);
    assert!(close(r["usage"]["cost_usd"].as_f64().unwrap(), (600.0 * 0.40 + 200.0 * 1.60) / 1e6));
    let env: Value = serde_json::from_str(r["answer"].as_str().unwrap()).unwrap();
    assert!(env["OPENAI_API_KEY"].as_str().unwrap().starts_with("evalua-proxy-"), "{env}");
    assert!(env["OPENAI_BASE_URL"].as_str().unwrap().starts_with("http://127.0.0.1:"), "{env}");
    assert!(!r["answer"].as_str().unwrap().contains(KEY), "the real key reached the agent");
    let t = trace(dir.path(), r);
    let calls = t["model_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["by"], "proxy");
    assert!(calls[0]["latency_ms"].as_f64().unwrap() > 0.0);

    // 400 tokens a call: the third spends max_tokens = 1000; the trial ends as `budget`.
    let r = record(&recs, "five_calls", 1);
    assert_eq!(r["ended"], "budget", "{r}");
    assert!(r["error"].as_str().unwrap().contains("max_tokens"), "{r}");
    assert_eq!(r["usage"]["input_tokens"].as_u64().unwrap() + r["usage"]["output_tokens"].as_u64().unwrap(), 1200);

    // Upstream saw the real key and the suite's model, 2 + 3 requests.
    let seen = mock.seen();
    assert_eq!(seen.len(), 5, "no request after the budget was spent");
    assert!(seen.iter().all(|s| s.auth.as_deref() == Some(format!("Bearer {KEY}").as_str())));
    assert!(seen.iter().all(|s| s.body["model"] == "gpt-4.1-mini"));
    assert_nowhere(&dir.path().join("out"), KEY);
}

#[test]
fn model_proxy_refuses_a_wrong_key() {
    let mock = Mock::start(vec![oa(Some("hello"), &[], 1, 1)]);
    let proxy = evalua::model::proxy::Proxy::start(
        Some(Endpoint::new(Provider::OpenAI, &mock.openai_url(), "m")),
        None,
        Default::default(),
        Instant::now() + PATIENCE,
        Instant::now(),
    )
    .unwrap();
    let ep = |key_env: &str| {
        let mut e = Endpoint::new(Provider::OpenAI, &proxy.openai_base_url(), "m");
        e.api_key_env = Some(key_env.into());
        e.max_retries = 0;
        e
    };
    let req = ChatRequest { messages: vec![Message::user("hi")], ..Default::default() };
    // SAFETY: these variables are read by this test only.
    unsafe {
        std::env::set_var("EVALUA_TEST_PROXY_WRONG", "wrong-key");
        std::env::set_var("EVALUA_TEST_PROXY_RIGHT", &proxy.dummy_key);
    }
    assert!(matches!(ep("EVALUA_TEST_PROXY_WRONG").chat(&req), Err(ModelError::Config(_))));
    assert!(mock.seen().is_empty());
    let r = ep("EVALUA_TEST_PROXY_RIGHT").chat(&req).unwrap();
    assert_eq!(r.text.as_deref(), Some("hello"));
    assert_eq!(proxy.take_calls().len(), 1);
    // No Anthropic endpoint configured: a clear 404.
    let mut a = Endpoint::new(Provider::Anthropic, &proxy.anthropic_base_url(), "m");
    a.api_key_env = Some("EVALUA_TEST_PROXY_RIGHT".into());
    let e = a.chat(&req).unwrap_err();
    assert!(e.to_string().contains("no anthropic endpoint"), "{e}");
}

#[test]
fn refunds_llm_is_skipped_without_a_model() {
    let out = bin()
        .current_dir(repo())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("EVALUA_OPENAI_BASE_URL")
        .args(["run", "suites/refunds_llm.lua", "-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("skipped: suites/refunds_llm.lua: no model configured"), "{}", stdout(&out));
    // It is a valid suite all the same.
    let out = evalua(&repo(), &["check", "suites/refunds_llm.lua"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Runs only when EVALUA_REAL_MODEL_URL names an OpenAI-compatible server
/// (e.g. http://127.0.0.1:8080/v1; see the README): the refunds cases with a
/// real model. A small model chooses badly: this checks the mechanics (the
/// run completes, tool calls are parsed and executed through the executor,
/// usage is recorded), not the quality.
#[test]
fn real_model_runs_refunds_llm() {
    let Ok(url) = std::env::var("EVALUA_REAL_MODEL_URL") else {
        eprintln!("skipped: set EVALUA_REAL_MODEL_URL to run against a real OpenAI-compatible server");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = bin()
        .current_dir(repo())
        .env("EVALUA_OPENAI_BASE_URL", &url)
        .args(["run", "suites/refunds_llm.lua", "--trials", "1", "--jobs", "1", "--case", "reembolso_parcial_01"])
        .args(["-q", "--out", out_dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0) | Some(1)), "{}", stderr(&out));
    let recs = trials(&out_dir);
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_ne!(r["outcome"], "infra_error", "the server answered: {r}");
    assert!(r["usage"]["input_tokens"].as_u64().unwrap() > 0, "usage recorded: {r}");
    assert_eq!(r["usage"]["cost_usd"], 0.0, "a local model has no price: {r}");
    // The model asked for tools and the executor handled them (whatever it chose).
    assert!(r["calls"]["requested"].as_u64().unwrap() > 0, "tool calls parsed: {r}");
    let t = trace_of(&out_dir, r);
    assert!(t["model_calls"].as_array().unwrap().iter().any(|c| c["error"].is_null()));
}

#[test]
fn concurrent_requests_to_one_base_url_are_capped() {
    let mock = Mock::start(vec![Reply::Sleep(Duration::from_millis(300), Box::new(oa(Some("ok"), &[], 1, 1)))]);
    let mut ep = Endpoint::new(Provider::OpenAI, &mock.openai_url(), "m");
    ep.max_concurrency = 1;
    let req = ChatRequest { messages: vec![Message::user("hi")], ..Default::default() };
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| ep.chat(&req).unwrap());
        }
    });
    // One at a time: three 300 ms answers take at least 900 ms.
    assert!(started.elapsed() >= Duration::from_millis(900), "{:?}", started.elapsed());
    assert_eq!(mock.seen().len(), 3);
}

#[test]
fn an_anthropic_simulated_user_gets_a_conversation_that_starts_with_a_user_turn() {
    let agent = Mock::start(vec![oa(Some("Postcode?"), &[], 1, 1), oa(Some("Refunded 19.9."), &[], 1, 1)]);
    let user = Mock::start(vec![an(Some("28013"), &[], 1, 1), an(Some("###STOP###"), &[], 1, 1)]);
    let case_extra = format!(
        "user = evalua.user.llm {{ profile = 'p', goal = 'g', model = {{ provider = 'anthropic', model = 'claude-haiku-4-5', base_url = {:?}, api_key_env = 'EVALUA_TEST_KEY' }} }},",
        user.url()
    );
    let (_d, out, recs) = run(&model_suite(&openai_agent(&agent, ""), "", &case_extra));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(record(&recs, "c1", 1)["answer"], "Refunded 19.9.");
    let first = &user.seen()[0].body;
    let roles: Vec<&str> = first["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, vec!["user", "assistant", "user"]);
    assert!(first["system"].as_str().unwrap().contains("goal"));
}

#[test]
fn retries_stop_at_the_trials_deadline() {
    // The answer would take an hour and the request may wait 50 minutes: a run
    // that ends (within PATIENCE) was cut at the trial's 1 s deadline.
    let mock = Mock::start(vec![Reply::Sleep(Duration::from_secs(3600), Box::new(oa(Some("late"), &[], 1, 1)))]);
    let (_d, out, recs) =
        run(&model_suite(&openai_agent(&mock, "timeout_s = 3000, max_retries = 4"), "deadline_s = 1", ""));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = record(&recs, "c1", 1);
    assert_eq!(r["ended"], "deadline", "{r}");
    assert_ne!(r["outcome"], "infra_error", "{r}");
    assert_eq!(mock.seen().len(), 1, "no retry past the deadline");
}

/// With EVALUA_REAL_MODEL_URL: a structured (JSON-schema) answer from a real
/// server, by whichever strategy it accepts; the answer is JSON.
#[test]
fn real_model_structured_output() {
    let Ok(url) = std::env::var("EVALUA_REAL_MODEL_URL") else {
        eprintln!("skipped: set EVALUA_REAL_MODEL_URL to run against a real OpenAI-compatible server");
        return;
    };
    let mut ep = Endpoint::new(Provider::OpenAI, &url, "local");
    ep.timeout = Duration::from_secs(120);
    let req = ChatRequest {
        messages: vec![Message::user("Is the sky blue? Answer as JSON.")],
        structured: Some(Structured {
            name: "answer".into(),
            schema: json!({ "type": "object", "properties": { "yes": { "type": "boolean" } }, "required": ["yes"] }),
        }),
        max_tokens: Some(64),
        temperature: Some(0.0),
        ..Default::default()
    };
    let r = ep.chat(&req).unwrap();
    assert!(r.strategy.is_some());
    let v: Value = serde_json::from_str(r.text.as_deref().unwrap_or("")).expect("a JSON answer");
    assert!(v.is_object(), "{v}");
    assert!(r.usage.input_tokens > 0);
    eprintln!("strategy {:?}, answer {v}", r.strategy);
}

#[test]
fn anthropic_overload_is_retried_and_the_proxy_serves_the_messages_api() {
    // 529 (overloaded), then success: retried.
    let upstream = Mock::start(vec![
        Reply::Status(529, r#"{"type":"error","error":{"type":"overloaded_error"}}"#.into(), vec![]),
        an(Some("hi"), &[], 40, 2),
    ]);
    let mut real = Endpoint::new(Provider::Anthropic, &upstream.url(), "claude-sonnet-4-5");
    real.api_key_env = Some("EVALUA_TEST_PROXY_REAL_KEY".into());
    real.backoff = Duration::from_millis(10);
    let proxy = evalua::model::proxy::Proxy::start(
        None,
        Some(real),
        Default::default(),
        Instant::now() + PATIENCE,
        Instant::now(),
    )
    .unwrap();
    // SAFETY: these variables are read by this test only.
    unsafe {
        std::env::set_var("EVALUA_TEST_PROXY_REAL_KEY", KEY);
        std::env::set_var("EVALUA_TEST_PROXY_DUMMY", &proxy.dummy_key);
    }
    // An agent's Anthropic client, pointed at the proxy with the dummy key.
    let mut agent = Endpoint::new(Provider::Anthropic, &proxy.anthropic_base_url(), "whatever");
    agent.api_key_env = Some("EVALUA_TEST_PROXY_DUMMY".into());
    let r = agent.chat(&ChatRequest { messages: vec![Message::user("hi")], ..Default::default() }).unwrap();
    assert_eq!(r.text.as_deref(), Some("hi"));
    let seen = upstream.seen();
    assert_eq!(seen.len(), 2, "the 529 was retried");
    assert!(seen.iter().all(|s| s.api_key.as_deref() == Some(KEY) && s.body["model"] == "claude-sonnet-4-5"));
    let calls = proxy.take_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!((calls[0].input_tokens, calls[0].output_tokens, calls[0].attempts), (40, 2, 2));
    assert!(close(calls[0].cost_usd.unwrap(), (40.0 * 3.0 + 2.0 * 15.0) / 1e6));
}

/// A shop with a refunds table, a refund tool that writes, a prohibited
/// query (a refund on another order), and checks that say in which order they
/// ran (through `print`, kept in the trace's log).
fn refund_suite(agent: &str, gate: &str) -> String {
    format!(
        r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {{ name = "llm", trials = 1, agent = {agent},
  sandbox = {{ db = "sqlite", schema = "shop.sql" }}, gate = {{ {gate} }} }}
suite:tool {{ name = "issue_refund", description = "Refund an amount", effect = "write",
  params = {{ type = "object", properties = {{ order_id = {{ type = "string" }}, amount = {{ type = "number" }} }},
             required = {{ "order_id", "amount" }} }},
  run = function(ctx, a)
    ctx.db:exec("INSERT INTO refunds(order_id, amount) VALUES (?, ?)", a.order_id, a.amount)
    return {{ refunded = a.amount }}
  end }}
suite:case {{ id = "c1", input = "Refund one unit of P-9930",
  expect = {{
    {{ name = "answer mentions the amount", run = function(t) print("ran: answer") return t.answer:find("19.9") ~= nil end }},
    {{ name = "audit", critical = true, run = function(t) print("ran: audit") return true end }},
  }},
  prohibited = {{ "SELECT count(*) FROM refunds WHERE order_id <> 'P-9930'" }} }}
return suite
"#
    )
}

const SHOP_SQL: &str = "CREATE TABLE refunds (order_id TEXT NOT NULL, amount REAL NOT NULL);\n";

fn run_files(files: &[(&str, &str)]) -> (tempfile::TempDir, std::process::Output, Vec<Value>) {
    let dir = project(files);
    let out = bin()
        .current_dir(dir.path())
        .env("EVALUA_TEST_KEY", KEY)
        .args(["run", "s.lua", "--out", "out", "-q"])
        .output()
        .unwrap();
    let recs = if dir.path().join("out/trials.jsonl").exists() { trials(&dir.path().join("out")) } else { Vec::new() };
    (dir, out, recs)
}

/// The endpoint answers 500 after the agent's refund on the wrong order was
/// executed: the agent had started, so its checks run (the critical ones
/// first), the prohibited write is a critical failure, the gate fails the
/// run, and the endpoint's failure is recorded beside the outcome.
#[test]
fn an_endpoint_that_fails_after_the_agent_acted_still_gets_the_trial_graded() {
    let mock = Mock::start(vec![
        oa(None, &[("call_a", "issue_refund", json!({ "order_id": "P-1111", "amount": 19.9 }))], 100, 20),
        Reply::Status(500, r#"{"error":{"message":"boom"}}"#.into(), vec![]),
    ]);
    let agent = openai_agent(&mock, "max_retries = 1");
    let (dir, out, recs) =
        run_files(&[("s.lua", &refund_suite(&agent, "critical_failures = 0")), ("shop.sql", SHOP_SQL)]);
    assert_eq!(out.status.code(), Some(1), "the critical_failures gate fails the run: {}", stderr(&out));
    let r = record(&recs, "c1", 1);
    assert_eq!(r["outcome"], "critical", "{r}");
    assert_eq!(r["ended"], "infra_error", "{r}");
    let infra = r["infra_error"].as_str().unwrap();
    assert!(infra.contains("model unavailable") && infra.contains("HTTP 500"), "{r}");
    assert_eq!(r["calls"]["executed"], 1);
    let prohibited = check(r, "prohibited: SELECT count(*) FROM refunds WHERE order_id <> 'P-9930'");
    assert_eq!(prohibited["passed"], false, "{r}");
    assert_eq!(check(r, "answer mentions the amount")["passed"], false);

    // Critical checks ran first.
    let t = trace(dir.path(), r);
    let log: Vec<&str> = t["log"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert_eq!(log, vec!["ran: audit", "ran: answer"], "{log:?}");
    // The failed call says how many attempts it made.
    let failed = &t["model_calls"][1];
    assert_eq!(failed["attempts"], 2, "{failed}");
    assert!(failed["error"].as_str().unwrap().contains("after 2 attempts"), "{failed}");
    assert_eq!(t["infra_error"], r["infra_error"]);

    // The trial counts in the capability view (the agent had its chance) and its
    // infrastructure error is counted apart.
    let summary = json(&dir.path().join("out/summary.json"));
    assert_eq!(summary["cases"][0]["n"], 1, "{}", summary["cases"][0]);
    assert_eq!(summary["figures"]["critical_failures"], 1);
    assert_eq!(summary["figures"]["infra_errors"], 0);
    assert_eq!(summary["figures"]["infra_errors_after_start"], 1, "{}", summary["figures"]);
    assert!(stdout(&out).contains("after the agent started"), "{}", stdout(&out));

    // The first call failing is still `not_started`: the agent never got its chance.
    let mock = Mock::start(vec![Reply::Status(500, "boom".into(), vec![])]);
    let agent = openai_agent(&mock, "max_retries = 0");
    let (_dir, out, recs) =
        run_files(&[("s.lua", &refund_suite(&agent, "critical_failures = 0")), ("shop.sql", SHOP_SQL)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = record(&recs, "c1", 1);
    assert_eq!((r["outcome"].as_str(), r["ended"].as_str()), (Some("infra_error"), Some("not_started")), "{r}");
    assert!(r["checks"].as_array().unwrap().is_empty());
}

/// A model's tool call whose `arguments` are not JSON (a truncated call, as
/// small local models produce) is recorded as sent and rejected; the next
/// request carries valid JSON in its place (llama.cpp's server answers 500
/// to the raw text).
#[test]
fn malformed_tool_call_arguments_are_kept_in_the_trace_and_sent_back_as_valid_json() {
    let truncated = r#"{"order_id": "P-99"#;
    let call =
        json!({ "id": "call_t", "type": "function", "function": { "name": "issue_refund", "arguments": truncated } });
    let first = Reply::Json(json!({
        "id": "x", "object": "chat.completion", "model": "mock",
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": null, "tool_calls": [call] },
                      "finish_reason": "tool_calls" }],
        "usage": { "prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15 }
    }));
    let mock = Mock::start(vec![first, oa(Some("Refunded 19.9."), &[], 10, 5)]);
    let (dir, out, recs) = run_files(&[("s.lua", &refund_suite(&openai_agent(&mock, ""), "")), ("shop.sql", SHOP_SQL)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = record(&recs, "c1", 1);
    assert_eq!(r["calls"]["rejected"], 1, "{r}");
    assert_eq!(r["ended"], "final", "{r}");
    let t = trace(dir.path(), r);
    assert_eq!(t["calls"][0]["args"], json!(truncated), "the original arguments are in the trace");
    let seen = mock.seen();
    assert_eq!(seen.len(), 2);
    let msgs = seen[1].body["messages"].as_array().unwrap();
    let asst = msgs.iter().find(|m| m["role"] == "assistant").unwrap();
    let sent = asst["tool_calls"][0]["function"]["arguments"].as_str().unwrap();
    let parsed: Value = serde_json::from_str(sent).unwrap_or_else(|e| panic!("not JSON ({e}): {sent}"));
    assert!(parsed.is_object(), "{parsed}");
    assert!(sent.contains("P-99"), "what the model wrote stays visible to it: {sent}");
    let tool = msgs.iter().find(|m| m["role"] == "tool").unwrap();
    assert!(tool["content"].as_str().unwrap().contains("not valid JSON"), "{}", tool["content"]);
}

/// A Responses API answer with text.
fn resp(text: &str, input: u64, output: u64) -> Reply {
    Reply::Json(json!({
        "id": "resp_1", "object": "response", "created_at": 0, "model": "gpt-4.1-mini", "status": "completed",
        "output": [{ "type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                     "content": [{ "type": "output_text", "text": text, "annotations": [] }] }],
        "usage": { "input_tokens": input, "output_tokens": output, "total_tokens": input + output,
                   "input_tokens_details": { "cached_tokens": 0 }, "output_tokens_details": { "reasoning_tokens": 0 } }
    }))
}

/// The proxy's other APIs (Responses, model listings, token counting) and its
/// body limit, as an HTTP client sees them; every call is recorded on the trial.
#[test]
fn model_proxy_serves_responses_models_and_count_tokens_and_refuses_oversized_bodies() {
    let upstream = Mock::start(vec![
        resp("hello", 11, 4),
        Reply::Json(
            json!({ "object": "list", "data": [{ "id": "gpt-4.1-mini", "object": "model", "owned_by": "m" }] }),
        ),
        Reply::Json(json!({ "input_tokens": 42 })),
        Reply::Json(json!({ "data": [{ "type": "model", "id": "claude-sonnet-4-5" }], "has_more": false })),
        oa(Some("big"), &[], 900_000, 1),
    ]);
    let mut openai = Endpoint::new(Provider::OpenAI, &upstream.openai_url(), "gpt-4.1-mini");
    openai.api_key_env = Some("EVALUA_TEST_PROXY_API_KEY".into());
    let mut anthropic = Endpoint::new(Provider::Anthropic, &upstream.url(), "claude-sonnet-4-5");
    anthropic.api_key_env = Some("EVALUA_TEST_PROXY_API_KEY".into());
    // SAFETY: read by this test only.
    unsafe { std::env::set_var("EVALUA_TEST_PROXY_API_KEY", KEY) };
    let proxy = evalua::model::proxy::Proxy::start(
        Some(openai),
        Some(anthropic),
        Default::default(),
        Instant::now() + PATIENCE,
        Instant::now(),
    )
    .unwrap();
    let (oai, ant, dummy) = (proxy.openai_base_url(), proxy.anthropic_base_url(), proxy.dummy_key.clone());
    let answers: Vec<(u16, Value)> = evalua::model::block_on(async move {
        // reqwest is built without a TLS provider of its own (rustls on ring, util::tls): install it first.
        evalua::util::tls::install();
        let c = reqwest::Client::new();
        let bearer = format!("Bearer {dummy}");
        let mut out = Vec::new();
        let reqs = vec![
            c.post(format!("{oai}/responses")).header("authorization", &bearer).json(&json!({ "model": "x", "input": "hi" })),
            c.get(format!("{oai}/models")).header("authorization", &bearer),
            c.post(format!("{ant}/v1/messages/count_tokens"))
                .header("x-api-key", &dummy)
                .header("anthropic-version", "2023-06-01")
                .json(&json!({ "model": "x", "messages": [{ "role": "user", "content": "hi" }] })),
            c.get(format!("{ant}/v1/models")).header("x-api-key", &dummy).header("anthropic-version", "2023-06-01"),
            // 3 MiB: over axum's default limit, under the proxy's.
            c.post(format!("{oai}/chat/completions"))
                .header("authorization", &bearer)
                .json(&json!({ "model": "x", "messages": [{ "role": "user", "content": "x".repeat(3 << 20) }] })),
            // 33 MiB: over the proxy's limit, never forwarded.
            c.post(format!("{oai}/chat/completions"))
                .header("authorization", &bearer)
                .json(&json!({ "model": "x", "messages": [{ "role": "user", "content": "x".repeat(33 << 20) }] })),
            c.post(format!("{ant}/v1/messages"))
                .header("x-api-key", &dummy)
                .header("anthropic-version", "2023-06-01")
                .json(&json!({ "model": "x", "max_tokens": 5, "messages": [{ "role": "user", "content": "x".repeat(33 << 20) }] })),
            c.get(format!("{oai}/models/..%2F..%2Fadmin")).header("authorization", &bearer),
            // 100 MiB: still answered (not a broken pipe while the client is sending).
            c.post(format!("{oai}/chat/completions"))
                .header("authorization", &bearer)
                .header("content-type", "application/json")
                .body(format!(r#"{{"model":"x","messages":[{{"role":"user","content":"{}"}}]}}"#, "x".repeat(100 << 20))),
        ];
        for r in reqs {
            let resp = r.send().await.unwrap();
            let status = resp.status().as_u16();
            out.push((status, resp.json::<Value>().await.unwrap_or(Value::Null)));
        }
        out
    });
    let statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    assert_eq!(statuses, [200, 200, 200, 200, 200, 413, 413, 400, 413], "{answers:?}");
    assert_eq!(answers[0].1["output"][0]["content"][0]["text"], "hello");
    assert_eq!(answers[2].1["input_tokens"], 42);
    // The refusals are in each provider's error format.
    assert_eq!(answers[5].1["error"]["type"], "invalid_request_error", "{}", answers[5].1);
    assert!(answers[5].1["error"]["message"].as_str().unwrap().contains("32 MiB"), "{}", answers[5].1);
    assert_eq!(answers[6].1["type"], "error", "{}", answers[6].1);
    assert_eq!(answers[6].1["error"]["type"], "request_too_large", "{}", answers[6].1);

    // Upstream saw the real key, the suite's model and the right paths; the 33 MiB bodies never left.
    let seen = upstream.seen();
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths,
        ["/v1/responses", "/v1/models", "/v1/messages/count_tokens", "/v1/models", "/v1/chat/completions"]
    );
    assert_eq!(seen[0].auth.as_deref(), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(seen[0].body["model"], "gpt-4.1-mini");
    assert_eq!(seen[2].api_key.as_deref(), Some(KEY));
    assert_eq!(seen[2].body["model"], "claude-sonnet-4-5");
    assert_eq!(seen[3].api_key.as_deref(), Some(KEY));

    // Every call is recorded, with what it spent: a count or a listing spends nothing.
    let calls = proxy.take_calls();
    let apis: Vec<Value> = calls.iter().map(|c| serde_json::to_value(c).unwrap()["api"].clone()).collect();
    assert_eq!(
        apis,
        [
            "responses",
            "models",
            "count_tokens",
            "models",
            "chat_completions",
            "chat_completions",
            "messages",
            "chat_completions"
        ]
    );
    assert_eq!((calls[0].input_tokens, calls[0].output_tokens), (11, 4));
    assert_eq!(calls[0].finish_reason.as_deref(), Some("completed"));
    assert_eq!((calls[2].input_tokens, calls[2].output_tokens), (0, 0));
    assert_eq!(calls[4].input_tokens, 900_000);
    for c in &calls[5..] {
        assert!(c.error.as_deref().unwrap().contains("larger than the proxy's limit of 32 MiB"), "{c:?}");
    }
}
