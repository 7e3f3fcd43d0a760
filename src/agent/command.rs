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

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};

use super::mcp::{self, Event};
use super::protocol::{self, AgentMessage, quote};
use crate::model::Endpoint;
use crate::model::proxy::Proxy;
use crate::process::{self, Group, Io, Launch, Tail, describe_status};
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
/// How often the protocol loop looks for a stop request (SIGINT, SIGTERM).
const CANCEL_POLL: Duration = Duration::from_millis(100);

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

/// Read stdout as it comes, at most MAX_LINE bytes in all (plain io): the
/// agent may exit while a child of its still holds the pipe open, so what it
/// wrote must be there without waiting for the end of the stream.
fn read_all(mut r: impl Read + Send + 'static, tx: SyncSender<Event>) {
    std::thread::spawn(move || {
        let mut total = 0usize;
        let mut prefix = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            match r.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    total += n;
                    if prefix.len() < QUOTE * 4 {
                        prefix.extend_from_slice(&chunk[..n.min(QUOTE * 4 - prefix.len())]);
                    }
                    if total > MAX_LINE {
                        let _ = tx.send(Event::TooLong(prefix));
                        return;
                    }
                    if tx.send(Event::Out(chunk[..n].to_vec())).is_err() {
                        return;
                    }
                }
            }
        }
        let _ = tx.send(Event::Eof);
    });
}

fn send(stdin: &mut Option<File>, msg: &Json) -> bool {
    let Some(w) = stdin.as_mut() else { return false };
    let mut line = msg.to_string();
    line.push('\n');
    w.write_all(line.as_bytes()).and_then(|_| w.flush()).is_ok()
}

/// Run a setup command in the work dir before the agent, within the trial's
/// deadline; a failure is an infrastructure error.
fn setup(argv: &[String], env: &[String], trial: &Trial<'_>) -> Result<(), String> {
    let launch = Launch::new(argv, &trial.workdir).pass(env).view(&crate::trial::agent_view(trial.plan));
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
    let mut launch = Launch::new(argv, &trial.workdir).pass(env).view(&crate::trial::agent_view(trial.plan));
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
        AgentIo::Jsonl => Io::Piped,
        AgentIo::Plain => {
            launch.argv.push(trial.input.clone());
            Io::Null
        }
    };
    let mut group = match launch.spawn(stdin, Io::Piped, Io::Piped) {
        Ok(g) => g,
        Err(e) => return AgentEnd::infra(e.to_string()),
    };
    let mut stdin = group.stdin.take();
    let stdout = group.stdout.take().expect("piped");
    match io {
        AgentIo::Jsonl => read_lines(stdout, tx),
        AgentIo::Plain => read_all(stdout, tx),
    }
    let stderr = Tail::keep(group.stderr.take().expect("piped"), STDERR_TAIL);

    let mut end = match io {
        AgentIo::Jsonl => {
            converse(trial, &mut stdin, &events, &mut group, server.as_ref().map(|s| s.url.as_str()), proxy.as_ref())
        }
        AgentIo::Plain => plain(trial, &events, &mut group, proxy.as_ref()),
    };
    drop(stdin);
    if end.ended.by_agent() {
        // Let it exit by itself; whatever it leaves behind dies with the group.
        group.exit_status(GRACE);
    }
    group.kill();
    // Calls still in flight get "the trial has ended".
    drop(server);
    drop(events);
    if let Some(p) = &proxy
        && let Some(why) = sync_proxy(trial, p)
        && end.ended.by_agent()
    {
        end = AgentEnd::budget(&why);
    }
    // The agent is dead: its last stderr lines (a crash's reason) may still
    // be in the pipe, unread by the drain thread on a busy machine.
    stderr.wait_closed(STDERR_SETTLE);
    end.stderr_tail = stderr.nonempty();
    end
}

/// How long the stderr drain may take to reach the end of a dead agent's
/// stderr: far above the need (a few ms), short enough for the rare agent
/// whose escaped child holds the pipe open.
const STDERR_SETTLE: Duration = Duration::from_secs(5);

/// How often the loops look at the agent's process between events: its exit
/// is noticed even while a child it left behind holds stdout open.
const EXIT_POLL: Duration = Duration::from_millis(25);

/// Watches the agent's process (not only its stdout) for its exit.
struct ExitWatch {
    last: Instant,
    /// The leader's status once it exited (the rest of its group is killed
    /// then), and until when output already written may still arrive.
    exited: Option<(Option<std::process::ExitStatus>, Instant)>,
}

impl ExitWatch {
    fn new() -> Self {
        ExitWatch { last: Instant::now(), exited: None }
    }

    /// Look at the process (at most every EXIT_POLL). When the leader has
    /// exited, its group is killed: a child holding stdout dies and the
    /// stream ends; output written before the exit still arrives.
    fn poll(&mut self, group: &mut Group) {
        if self.exited.is_some() || self.last.elapsed() < EXIT_POLL {
            return;
        }
        self.last = Instant::now();
        if group.has_exited() {
            self.exited = Some((group.exit_status(Duration::ZERO), Instant::now() + GRACE));
        }
    }

    /// How long to wait for the next event.
    fn wait(&self, wait: Duration) -> Duration {
        match self.exited {
            // Exited: drain what is left of stdout, up to the grace.
            Some((_, until)) => wait.min(until.saturating_duration_since(Instant::now())),
            None => wait.min(EXIT_POLL),
        }
    }

    /// The exit status, once the grace for its last output is over.
    fn over(&self) -> Option<Option<std::process::ExitStatus>> {
        self.exited.filter(|(_, until)| Instant::now() >= *until).map(|(s, _)| s)
    }
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
    if crate::util::cancel::requested() {
        return Err(AgentEnd::interrupted());
    }
    let left = left.min(CANCEL_POLL);
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
    let mut watch = ExitWatch::new();
    loop {
        let left = trial.deadline.saturating_duration_since(Instant::now());
        // After stdout closed, only tool calls can still arrive: poll for the exit meanwhile.
        let wait = match next_wait(trial, proxy, left) {
            Ok(w) if eof => w.min(Duration::from_millis(2)),
            Ok(w) => watch.wait(w),
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
        let status = if eof {
            match watch.exited {
                Some((status, _)) => Some(status),
                None => group.exit_status(Duration::ZERO).map(Some),
            }
        } else {
            watch.poll(group);
            watch.over()
        };
        if let Some(status) = status {
            if status.is_some_and(|s| s.success()) {
                let text = String::from_utf8_lossy(&out);
                end.answer = text.trim_end_matches(['\n', '\r']).to_string();
                trial.state.borrow_mut().usage.turns += 1;
            } else {
                end.ended = Ended::Crashed;
                end.error = Some(format!("the agent failed ({})", describe_status(status)));
            }
            return end;
        }
    }
}

/// The protocol loop: returns how the agent's part ended.
fn converse(
    trial: &Trial<'_>,
    stdin: &mut Option<File>,
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
        "input": trial.input, "tools": tools, "budget": trial.plan.suite.budget,
    });
    if let Some(url) = mcp_url {
        start["mcp_url"] = json!(url);
    }
    send(stdin, &start);

    let stop = |end: &mut AgentEnd, ended: Ended, error: String| {
        end.ended = ended;
        end.error = Some(error);
    };
    let crashed = |end: &mut AgentEnd, status: Option<std::process::ExitStatus>| {
        let why = format!("the agent exited before its final message ({})", describe_status(status));
        stop(end, Ended::Crashed, why);
    };
    let mut watch = ExitWatch::new();
    loop {
        // The process, not only its stdout: a child it left behind may hold the pipe.
        watch.poll(group);
        if let Some(status) = watch.over() {
            crashed(&mut end, status);
            return end;
        }
        let left = trial.deadline.saturating_duration_since(Instant::now());
        let wait = match next_wait(trial, proxy, left) {
            Ok(w) => watch.wait(w),
            Err(end) => return end,
        };
        let event = match events.recv_timeout(wait) {
            Ok(Event::Call(c)) => {
                if let Err(e) = mcp_call(trial, c) {
                    return e;
                }
                if Instant::now() >= trial.deadline {
                    stop(&mut end, Ended::Deadline, "the trial's deadline passed during a tool call".into());
                    return end;
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
                let status = match watch.exited {
                    Some((status, _)) => status,
                    None => group.exit_status(GRACE),
                };
                crashed(&mut end, status);
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
        let msg = match protocol::parse_line(&bytes) {
            Ok(Some(m)) => m,
            Ok(None) => continue,
            Err(why) => {
                stop(&mut end, Ended::ProtocolError, why);
                return end;
            }
        };
        match msg {
            AgentMessage::ToolCall { id, name, arguments } => {
                let (r, budget) = call(trial, id, &name, arguments);
                // The agent's own id, even when the trace had to make it unique.
                let reply_id = r.requested_id.as_ref().unwrap_or(&r.id);
                let mut out =
                    json!({ "type": "tool_result", "id": reply_id, "status": r.reply_status(), "content": r.result });
                if let Some(e) = &r.error {
                    out["error"] = json!(e);
                }
                if let Some(s) = r.fault().and_then(|f| f.retry_after_s) {
                    out["retry_after_s"] = json!(s);
                }
                send(stdin, &out);
                if let Err(why) = budget {
                    return AgentEnd::budget(&why);
                }
                // A handler stops at the deadline; whatever the agent says next is too late.
                if Instant::now() >= trial.deadline {
                    stop(&mut end, Ended::Deadline, "the trial's deadline passed during a tool call".into());
                    return end;
                }
            }
            // With a model proxy, the proxy's accounting counts, not the agent's word.
            AgentMessage::Usage { .. } if proxy.is_some() => {}
            AgentMessage::Usage { input_tokens, output_tokens, cost_usd } => {
                let mut st = trial.state.borrow_mut();
                st.usage.input_tokens = st.usage.input_tokens.saturating_add(input_tokens);
                st.usage.output_tokens = st.usage.output_tokens.saturating_add(output_tokens);
                st.usage.cost_usd += cost_usd;
                if let Some(hit) = st.note_usage(&trial.plan.suite.budget) {
                    drop(st);
                    return AgentEnd::budget(&hit);
                }
            }
            AgentMessage::Message { content } => match trial.agent_says(content) {
                Ok(reply) => {
                    send(stdin, &json!({ "type": "user", "content": reply }));
                }
                Err(why) => {
                    return AgentEnd::budget(&why);
                }
            },
            AgentMessage::Final { content, abstain } => {
                end.answer = content;
                if abstain {
                    end.ended = Ended::Abstained;
                }
                trial.state.borrow_mut().usage.turns += 1;
                return end;
            }
        }
    }
}
