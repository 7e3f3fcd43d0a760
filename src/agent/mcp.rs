//! The case's tools served over the Model Context Protocol (streamable HTTP on
//! 127.0.0.1), for command agents declared with `tools = "mcp"`.
//!
//! The trial's Lua state and executor live on the trial's thread and are not
//! `Send`, so the MCP server (rmcp on a tokio runtime shared by the whole run,
//! one listener per trial on an ephemeral port) never runs a tool itself: each
//! `tools/call` is forwarded to the trial thread as an [`Event::Call`] on the
//! same channel that carries the agent's stdout, and the command-agent loop
//! answers it through the one executor every agent uses. `tools/list` lists
//! exactly the case's tools (name, description, inputSchema).

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::mpsc::{SyncSender, TrySendError};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value as Json, json};
use tokio::sync::oneshot;

use crate::record::{CallRecord, CallStatus};
use crate::spec::ToolSpec;

/// The protocol version the server offers (the newest with an `initialize`
/// handshake that rmcp speaks); a client asking for an older one it also
/// supports gets that one.
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;
const SUPPORTED: &[ProtocolVersion] =
    &[ProtocolVersion::V_2025_03_26, ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25];
/// The environment variable that carries the server's URL to the agent.
pub const URL_VAR: &str = "EVALUA_MCP_URL";

/// What the command-agent loop on the trial thread waits for: the agent's
/// stdout, read by a thread, and tool calls from the trial's MCP server.
pub enum Event {
    /// A line of stdout (JSON Lines io), or all of it (plain io).
    Out(Vec<u8>),
    /// Stdout went past its bound; the first bytes of it.
    TooLong(Vec<u8>),
    /// Stdout closed.
    Eof,
    /// A `tools/call` from the agent's MCP client.
    Call(McpCall),
}

pub struct McpCall {
    pub name: String,
    pub args: Json,
    reply: oneshot::Sender<CallToolResult>,
}

impl McpCall {
    /// Answer the call with what the executor recorded: executed → the
    /// result; rejected, denied or failed → `isError` with the reason.
    pub fn answer(self, r: &CallRecord) {
        let _ = self.reply.send(result_of(r));
    }
}

fn result_of(r: &CallRecord) -> CallToolResult {
    let v = if r.reply_status() == "ok" {
        let content = r.result.clone().unwrap_or(Json::Null);
        let text = match &content {
            Json::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut v = json!({ "content": [{ "type": "text", "text": text }], "isError": false });
        if content.is_object() {
            v["structuredContent"] = content;
        }
        v
    } else {
        let status = match &r.status {
            CallStatus::Faulted(Some(f)) if f.retry_after_s.is_some() => "rate limited",
            CallStatus::Rejected => "rejected",
            CallStatus::Denied => "denied",
            _ => "failed",
        };
        let why = r.error.clone().unwrap_or_default();
        json!({ "content": [{ "type": "text", "text": format!("{status}: {why}") }], "isError": true })
    };
    serde_json::from_value(v).unwrap_or_else(|_| CallToolResult::error(Vec::new()))
}

fn error_result(text: &str) -> CallToolResult {
    serde_json::from_value(json!({ "content": [{ "type": "text", "text": text }], "isError": true }))
        .unwrap_or_else(|_| CallToolResult::error(Vec::new()))
}

#[derive(Clone)]
struct Handler {
    tools: Arc<Vec<Tool>>,
    events: SyncSender<Event>,
}

impl Handler {
    /// Hand a call to the trial thread and wait for its answer.
    async fn forward(&self, name: String, args: Json) -> CallToolResult {
        let (tx, rx) = oneshot::channel();
        let ev = Event::Call(McpCall { name, args, reply: tx });
        let sent = match self.events.try_send(ev) {
            Ok(()) => true,
            Err(TrySendError::Disconnected(_)) => false,
            // The trial thread is busy with a burst of stdout: wait off the runtime's worker.
            Err(TrySendError::Full(ev)) => {
                let events = self.events.clone();
                tokio::task::spawn_blocking(move || events.send(ev).is_ok()).await.unwrap_or(false)
            }
        };
        if !sent {
            return error_result("the trial has ended");
        }
        rx.await.unwrap_or_else(|_| error_result("the trial has ended"))
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.protocol_version = PROTOCOL_VERSION;
        info.server_info = Implementation::new("evalua", env!("CARGO_PKG_VERSION"));
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(SUPPORTED)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map(Json::Object).unwrap_or_else(|| json!({}));
        Ok(self.forward(request.name.into_owned(), args).await.into())
    }
}

/// An MCP tool definition from a suite tool.
fn tool_def(t: &ToolSpec) -> Result<Tool, String> {
    let schema = if t.params.is_object() { t.params.clone() } else { json!({ "type": "object" }) };
    serde_json::from_value(json!({ "name": t.name, "description": t.description, "inputSchema": schema }))
        .map_err(|e| format!("tool {}: not an MCP tool definition: {e}", t.name))
}

/// The session `DELETE` is answered 200 (rmcp says 202): the MCP
/// specification leaves the code open, and the official SDKs treat anything
/// but 200 or 204 as a failed session end (logged each time an agent exits).
async fn session_end(req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    let delete = req.method() == axum::http::Method::DELETE;
    let mut resp = next.run(req).await;
    if delete && resp.status() == axum::http::StatusCode::ACCEPTED {
        *resp.status_mut() = axum::http::StatusCode::OK;
    }
    resp
}

/// One trial's MCP server; stopped (sessions ended, listener closed) when dropped.
pub struct Server {
    pub url: String,
    stop: Box<dyn Fn() + Send>,
}

impl Drop for Server {
    fn drop(&mut self) {
        (self.stop)();
    }
}

/// Start a server for `tools` on 127.0.0.1 (an ephemeral port, a random path);
/// its calls arrive on `events`.
pub fn serve<'a>(tools: impl Iterator<Item = &'a ToolSpec>, events: SyncSender<Event>) -> Result<Server, String> {
    let tools = tools.map(tool_def).collect::<Result<Vec<_>, _>>()?;
    // The process's one tokio runtime (the model clients' and the model proxy's).
    let rt = crate::model::runtime();
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("MCP server: cannot listen on 127.0.0.1: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| format!("MCP server: {e}"))?;
    let addr = listener.local_addr().map_err(|e| format!("MCP server: {e}"))?;
    let _guard = rt.enter();
    let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| format!("MCP server: {e}"))?;

    let config = StreamableHttpServerConfig::default().with_sse_keep_alive(None).with_sse_retry(None);
    let cancel = config.cancellation_token.clone();
    let handler = Handler { tools: Arc::new(tools), events };
    let service =
        StreamableHttpService::new(move || Ok(handler.clone()), Arc::new(LocalSessionManager::default()), config);
    // A path nobody can guess: another trial's agent cannot reach these tools.
    let token = crate::util::digest::random_hex(16);
    let path = format!("/mcp/{token}");
    let router = axum::Router::new().route_service(&path, service).layer(axum::middleware::from_fn(session_end));
    let shutdown = cancel.clone();
    rt.spawn(async move {
        // At most so many connections at once: an agent cannot take evalua's descriptors.
        let listener =
            crate::util::capped::Capped::new(listener, crate::util::capped::MAX_CONNECTIONS_PER_TRIAL, "MCP server");
        let _ = axum::serve(listener, router).with_graceful_shutdown(shutdown.cancelled_owned()).await;
    });
    Ok(Server { url: format!("http://{addr}{path}"), stop: Box::new(move || cancel.cancel()) })
}
