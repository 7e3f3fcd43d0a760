//! Command agents: any program speaking JSON Lines on stdin/stdout (SPEC §4).
//!
//! One process per trial, started in the trial's fresh work dir (never the
//! suite's folder) with an environment scrubbed to PATH, HOME, LANG and the
//! names the suite lists, in its own process group, which is killed when the
//! trial ends, whatever the agent left running. Everything a process does
//! wrong becomes a recorded outcome: it never started (infra error), exited
//! before `final` (crashed), hung (deadline), printed something that is not a
//! protocol message (protocol_error), or spent a budget (budget). Output is
//! read with fixed bounds: a line longer than [`MAX_LINE`] is a protocol
//! error, and only the last [`STDERR_TAIL`] bytes of stderr are kept.
//!
//! With `tools = "mcp"` the case's tools are also served by an MCP server
//! (see [`super::mcp`]) whose calls arrive on the same queue as stdout, so the
//! loop here answers them through the same executor. With `io = "plain"` the
//! input is the last argument and the whole stdout (exit 0) is the answer.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};

use super::mcp::{self, Event};
use crate::model::Endpoint;
use crate::model::proxy::Proxy;
use crate::process::{self, Group, Launch, Tail, describe_status};
use crate::record::{BudgetHit, CallRecord, Ended};
use crate::spec::{AgentIo, CommandAgentSpec, ModelSpec, ToolsVia};
use crate::trial::{AgentEnd, Trial};

/// The longest line an agent may print.
pub const MAX_LINE: usize = 1024 * 1024;
/// How much of the agent's stderr is kept (the end of it).
pub const STDERR_TAIL: usize = 8 * 1024;
/// How much of an offending line a protocol error quotes.
const QUOTE: usize = 200;
/// How long a process may take to exit after its final message.
const GRACE: Duration = Duration::from_millis(200);
/// Output after which a setup command is killed.
const SETUP_MAX_OUTPUT: usize = 16 * 1024 * 1024;
/// How often the protocol loop looks at the model proxy's budget.
const PROXY_POLL: Duration = Duration::from_millis(50);

fn quote(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let s = s.trim_end();
    if s.chars().count() > QUOTE { format!("{}…", s.chars().take(QUOTE).collect::<String>()) } else { s.to_string() }
}

/// Read stdout line by line, each at most MAX_LINE bytes, into a bounded channel.
fn read_lines(r: impl Read + Send + 'static, tx: SyncSender<Event>) {
    std::thread::spawn(move || {
        let mut r = BufReader::new(r);
        loop {
            let mut buf = Vec::new();
            match r.by_ref().take(MAX_LINE as u64 + 1).read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if buf.len() > MAX_LINE && buf.last() != Some(&b'\n') {
                        buf.truncate(QUOTE * 4);
                        let _ = tx.send(Event::TooLong(buf));
                        return;
                    }
                    if tx.send(Event::Out(buf)).is_err() {
                        return;
                    }
                }
            }
        }
        let _ = tx.send(Event::Eof);
    });
}

/// Read the whole of stdout, at most MAX_LINE bytes (plain io).
fn read_all(r: impl Read + Send + 'static, tx: SyncSender<Event>) {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.take(MAX_LINE as u64 + 1).read_to_end(&mut buf);
        if buf.len() > MAX_LINE {
            buf.truncate(QUOTE * 4);
            let _ = tx.send(Event::TooLong(buf));
        } else {
            let _ = tx.send(Event::Out(buf)).and_then(|_| tx.send(Event::Eof));
        }
    });
}

fn send(stdin: &mut Option<ChildStdin>, msg: &Json) -> bool {
    let Some(w) = stdin.as_mut() else { return false };
    let mut line = msg.to_string();
    line.push('\n');
    w.write_all(line.as_bytes()).and_then(|_| w.flush()).is_ok()
}

/// Run a setup command in the work dir before the agent, within the trial's
/// deadline; a failure is an infrastructure error.
fn setup(argv: &[String], env: &[String], trial: &Trial<'_>) -> Result<(), String> {
    let launch = Launch::new(argv, &trial.workdir).pass(env).view(&crate::trial::view_of(trial.plan));
    let left = trial.deadline.saturating_duration_since(Instant::now());
    let out = process::run_launch(&launch, left, SETUP_MAX_OUTPUT, STDERR_TAIL).map_err(|e| format!("setup: {e}"))?;
    if out.success() {
        return Ok(());
    }
    let stderr = (!out.stderr.is_empty()).then(|| format!("; stderr: {}", quote(out.stderr.as_bytes())));
    Err(format!("setup `{}` failed: {}{}", argv.join(" "), out.describe(), stderr.unwrap_or_default()))
}

pub fn run(trial: &Trial<'_>, spec: &CommandAgentSpec) -> AgentEnd {
    let (argv, env, tools, io) = (&spec.cmd, &spec.env, spec.tools, spec.io);
    let setup_cmd = spec.setup.as_deref();
    if let Err(e) = std::fs::create_dir_all(&trial.workdir) {
        return AgentEnd::infra(format!("cannot create the trial's work dir: {e}"));
    }
    if let Some(s) = setup_cmd
        && !s.is_empty()
        && let Err(e) = setup(s, env, trial)
    {
        return AgentEnd::infra(e);
    }
    // The agent's stdout and, with tools = "mcp", its MCP tool calls: one queue.
    let (tx, events) = mpsc::sync_channel(64);
    let server = match tools {
        ToolsVia::Mcp => match mcp::serve(trial.case.tools.iter().map(|t| &t.spec), tx.clone()) {
            Ok(s) => Some(s),
            Err(e) => return AgentEnd::infra(e),
        },
        ToolsVia::Protocol => None,
    };
    let mut launch = Launch::new(argv, &trial.workdir).pass(env).view(&crate::trial::view_of(trial.plan));
    if let Some(s) = &server {
        launch = launch.set(mcp::URL_VAR, s.url.clone());
    }
    // The model proxy: its address and a per-trial dummy key replace whatever
    // the suite passed through (the real keys stay in the harness).
    let proxy = match &spec.model_proxy {
        None => None,
        Some(p) => {
            let started = trial.state.borrow().started;
            let resolve = |m: &Option<ModelSpec>| m.as_ref().and_then(|m| Endpoint::resolve(m, false).ok());
            match Proxy::start(
                resolve(&p.openai),
                resolve(&p.anthropic),
                trial.plan.suite.budget.clone(),
                trial.deadline,
                started,
            ) {
                Ok(p) => Some(p),
                Err(e) => return AgentEnd::infra(format!("cannot start the model proxy: {e}")),
            }
        }
    };
    if let Some(p) = &proxy {
        launch = launch
            .set("OPENAI_BASE_URL", p.openai_base_url())
            .set("OPENAI_API_KEY", p.dummy_key.clone())
            .set("ANTHROPIC_BASE_URL", p.anthropic_base_url())
            .set("ANTHROPIC_API_KEY", p.dummy_key.clone());
    }
    let stdin = match io {
        AgentIo::Jsonl => Stdio::piped(),
        AgentIo::Plain => {
            launch.argv.push(trial.case.spec.input.clone());
            Stdio::null()
        }
    };
    let mut group = match launch.spawn(stdin, Stdio::piped(), Stdio::piped()) {
        Ok(g) => g,
        Err(e) => return AgentEnd::infra(e.to_string()),
    };
    let mut stdin = group.child.stdin.take();
    let stdout = group.child.stdout.take().expect("piped");
    match io {
        AgentIo::Jsonl => read_lines(stdout, tx),
        AgentIo::Plain => read_all(stdout, tx),
    }
    let stderr = Tail::keep(group.child.stderr.take().expect("piped"), STDERR_TAIL);

    let mut end = match io {
        AgentIo::Jsonl => {
            converse(trial, &mut stdin, &events, &mut group, server.as_ref().map(|s| s.url.as_str()), proxy.as_ref())
        }
        AgentIo::Plain => plain(trial, &events, &mut group, proxy.as_ref()),
    };
    drop(stdin);
    if end.ended == Ended::Final {
        // Let it exit by itself; whatever it leaves behind dies with the group.
        group.exit_status(GRACE);
    }
    group.kill();
    // Calls still in flight get "the trial has ended".
    drop(server);
    drop(events);
    if let Some(p) = &proxy
        && let Some(why) = sync_proxy(trial, p)
        && end.ended == Ended::Final
    {
        end = AgentEnd::budget(&why);
    }
    end.stderr_tail = stderr.nonempty();
    end
}

/// Move the proxy's recorded calls into the trial; returns the budget spent, if any.
fn sync_proxy(trial: &Trial<'_>, p: &Proxy) -> Option<BudgetHit> {
    let calls = p.take_calls();
    let mut st = trial.state.borrow_mut();
    for c in calls {
        st.usage.input_tokens += c.input_tokens;
        st.usage.output_tokens += c.output_tokens;
        st.usage.cost_usd += c.cost_usd.unwrap_or(0.0);
        st.model_calls.push(c);
    }
    let why = p.budget_hit();
    if why.is_some() && st.budget_hit.is_none() {
        st.budget_hit = why.clone();
    }
    why
}

/// How long to wait for the agent's next event: with a model proxy, short
/// enough to look at its budget in between. Err(end) when the proxy spent one.
fn next_wait(trial: &Trial<'_>, proxy: Option<&Proxy>, left: Duration) -> Result<Duration, AgentEnd> {
    match proxy {
        None => Ok(left),
        Some(p) => match sync_proxy(trial, p) {
            Some(why) => Err(AgentEnd::budget(&why)),
            None => Ok(left.min(PROXY_POLL)),
        },
    }
}

/// One tool call through the trial's executor; Err(why) when it spent a budget (the trial ends).
fn call(trial: &Trial<'_>, id: Option<String>, name: &str, args: Json) -> (CallRecord, Result<(), BudgetHit>) {
    let reply = trial.call_tool(id, name, args);
    let hit = trial.state.borrow().budget_hit.clone();
    (reply.record, hit.map_or(Ok(()), Err))
}

/// Answer an MCP `tools/call`; Err(end) when it spent a budget.
fn mcp_call(trial: &Trial<'_>, c: mcp::McpCall) -> Result<(), AgentEnd> {
    let args = c.args.clone();
    let name = c.name.clone();
    let (record, budget) = call(trial, None, &name, args);
    c.answer(&record);
    budget.map_err(|why| AgentEnd::budget(&why))
}

/// Plain io: the agent's whole stdout is its answer when it exits 0.
fn plain(trial: &Trial<'_>, events: &Receiver<Event>, group: &mut Group, proxy: Option<&Proxy>) -> AgentEnd {
    let mut end = AgentEnd::running();
    let mut out = Vec::new();
    let mut eof = false;
    loop {
        let left = trial.deadline.saturating_duration_since(Instant::now());
        // After stdout closed, only tool calls can still arrive: poll for the exit meanwhile.
        let wait = match next_wait(trial, proxy, left) {
            Ok(w) if eof => w.min(Duration::from_millis(2)),
            Ok(w) => w,
            Err(end) => return end,
        };
        match events.recv_timeout(wait) {
            Ok(Event::Out(b)) => out.extend_from_slice(&b),
            Ok(Event::TooLong(prefix)) => {
                end.ended = Ended::ProtocolError;
                end.error = Some(format!("more than {MAX_LINE} bytes on stdout: {}", quote(&prefix)));
                return end;
            }
            Ok(Event::Call(c)) => {
                if let Err(e) = mcp_call(trial, c) {
                    return e;
                }
            }
            Ok(Event::Eof) | Err(RecvTimeoutError::Disconnected) => eof = true,
            Err(RecvTimeoutError::Timeout) if Instant::now() >= trial.deadline => {
                end.ended = Ended::Deadline;
                end.error = Some("the agent did not finish before the deadline".into());
                return end;
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        if eof && let Some(status) = group.exit_status(Duration::ZERO) {
            if status.success() {
                let text = String::from_utf8_lossy(&out);
                end.answer = text.trim_end_matches(['\n', '\r']).to_string();
                trial.state.borrow_mut().usage.turns += 1;
            } else {
                end.ended = Ended::Crashed;
                end.error = Some(format!("the agent failed ({})", describe_status(Some(status))));
            }
            return end;
        }
    }
}

/// The protocol loop: returns how the agent's part ended.
fn converse(
    trial: &Trial<'_>,
    stdin: &mut Option<ChildStdin>,
    events: &Receiver<Event>,
    group: &mut Group,
    mcp_url: Option<&str>,
    proxy: Option<&Proxy>,
) -> AgentEnd {
    let mut end = AgentEnd::running();
    let tools: Vec<Json> = trial
        .case
        .tools
        .iter()
        .map(|t| json!({ "name": t.spec.name, "description": t.spec.description, "parameters": t.spec.params }))
        .collect();
    let mut start = json!({
        "type": "start", "case": trial.case.spec.id, "trial": trial.number, "seed": trial.seed,
        "input": trial.case.spec.input, "tools": tools, "budget": trial.plan.suite.budget,
    });
    if let Some(url) = mcp_url {
        start["mcp_url"] = json!(url);
    }
    send(stdin, &start);

    let stop = |end: &mut AgentEnd, ended: Ended, error: String| {
        end.ended = ended;
        end.error = Some(error);
    };
    loop {
        let left = trial.deadline.saturating_duration_since(Instant::now());
        let wait = match next_wait(trial, proxy, left) {
            Ok(w) => w,
            Err(end) => return end,
        };
        let event = match events.recv_timeout(wait) {
            Ok(Event::Call(c)) => {
                if let Err(e) = mcp_call(trial, c) {
                    return e;
                }
                continue;
            }
            Ok(ev @ (Event::Out(_) | Event::TooLong(_))) => ev,
            Err(RecvTimeoutError::Timeout) if Instant::now() < trial.deadline => continue,
            Err(RecvTimeoutError::Timeout) => {
                stop(&mut end, Ended::Deadline, "the agent did not finish before the deadline".into());
                return end;
            }
            Ok(Event::Eof) | Err(RecvTimeoutError::Disconnected) => {
                let status = group.exit_status(GRACE);
                stop(
                    &mut end,
                    Ended::Crashed,
                    format!("the agent exited before its final message ({})", describe_status(status)),
                );
                return end;
            }
        };
        let bytes = match event {
            Event::TooLong(prefix) => {
                stop(
                    &mut end,
                    Ended::ProtocolError,
                    format!("a line longer than {MAX_LINE} bytes: {}", quote(&prefix)),
                );
                return end;
            }
            Event::Out(b) => b,
            Event::Eof | Event::Call(_) => unreachable!("handled above"),
        };
        if bytes.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let msg: Json = match serde_json::from_slice(&bytes) {
            Ok(m @ Json::Object(_)) => m,
            _ => {
                stop(&mut end, Ended::ProtocolError, format!("not a JSON object: {}", quote(&bytes)));
                return end;
            }
        };
        match msg.get("type").and_then(|t| t.as_str()).unwrap_or("") {
            "tool_call" => {
                let id = msg.get("id").and_then(|v| v.as_str()).map(String::from);
                let name = msg.get("name").and_then(|v| v.as_str()).unwrap_or("").to_string();
                let args = msg.get("arguments").cloned().unwrap_or_else(|| json!({}));
                let (r, budget) = call(trial, id, &name, args);
                let mut out =
                    json!({ "type": "tool_result", "id": r.id, "status": r.status.reply(), "content": r.result });
                if let Some(e) = &r.error {
                    out["error"] = json!(e);
                }
                send(stdin, &out);
                if let Err(why) = budget {
                    return AgentEnd::budget(&why);
                }
            }
            // With a model proxy, the proxy's accounting counts, not the agent's word.
            "usage" if proxy.is_some() => {}
            "usage" => {
                let n = |k: &str| msg.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
                let mut st = trial.state.borrow_mut();
                st.usage.input_tokens += n("input_tokens");
                st.usage.output_tokens += n("output_tokens");
                st.usage.cost_usd += msg.get("cost_usd").and_then(|v| v.as_f64()).unwrap_or(0.0);
                if let Some(hit) = st.note_usage(&trial.plan.suite.budget) {
                    drop(st);
                    return AgentEnd::budget(&hit);
                }
            }
            "message" => {
                let text = msg.get("content").and_then(|v| v.as_str()).unwrap_or("").to_string();
                match trial.agent_says(text) {
                    Ok(reply) => {
                        send(stdin, &json!({ "type": "user", "content": reply }));
                    }
                    Err(why) => {
                        return AgentEnd::budget(&why);
                    }
                }
            }
            "final" => {
                end.answer = match msg.get("content") {
                    Some(Json::String(s)) => s.clone(),
                    Some(Json::Null) | None => String::new(),
                    Some(other) => other.to_string(),
                };
                trial.state.borrow_mut().usage.turns += 1;
                return end;
            }
            other => {
                let what = if other.is_empty() {
                    "a message without a \"type\"".to_string()
                } else {
                    format!("unknown message type {other:?}")
                };
                stop(&mut end, Ended::ProtocolError, format!("{what}: {}", quote(&bytes)));
                return end;
            }
        }
    }
}
