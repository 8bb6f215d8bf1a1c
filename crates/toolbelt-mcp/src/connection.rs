//! One MCP server: starting it, the handshake, its tools, calls, and restarting it when
//! it died.
//!
//! A connection is shared (`Arc`) by every tool of its server. The live rmcp client sits
//! behind an async mutex that is held only to take a clone of its `Peer` or to
//! (re)connect, so calls run concurrently. A server that closes the connection during a
//! call fails that call; the next call starts it again (up to [`RECONNECT_ATTEMPTS`]
//! tries), and the other servers never notice.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::{Map, Value};
use tokio::sync::mpsc::UnboundedSender;
use toolbelt_core::{ErrorKind, ExecContext, Tool, ToolResult};

use crate::config::{ServerConfig, Transport};
use crate::events::ServerEvents;
use crate::sse::SseTransport;
use crate::tool::McpTool;

/// How many times a call tries to start a server that died before giving up.
pub const RECONNECT_ATTEMPTS: u32 = 3;

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerStatus {
    Connecting,
    Connected,
    /// Why it is not usable.
    Failed(String),
}

impl std::fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerStatus::Connecting => f.write_str("connecting"),
            ServerStatus::Connected => f.write_str("connected"),
            ServerStatus::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

type Client = RunningService<RoleClient, ServerEvents>;

pub struct McpConnection {
    config: ServerConfig,
    /// The server's stderr (stdio servers), never shown to the model.
    log_path: PathBuf,
    events: ServerEvents,
    live: tokio::sync::Mutex<Option<Client>>,
    status: Mutex<ServerStatus>,
    tools: Mutex<Vec<Arc<McpTool>>>,
    /// The process of the stdio server being started, killed when its handshake times out.
    starting_pid: Mutex<Option<u32>>,
}

impl McpConnection {
    pub fn new(
        config: ServerConfig,
        log_dir: &Path,
        changes: UnboundedSender<String>,
    ) -> Arc<Self> {
        let file_name: String = config
            .alias
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Arc::new(McpConnection {
            events: ServerEvents::new(&config.alias, changes),
            log_path: log_dir.join(format!("{file_name}.log")),
            config,
            live: tokio::sync::Mutex::new(None),
            status: Mutex::new(ServerStatus::Connecting),
            tools: Mutex::new(Vec::new()),
            starting_pid: Mutex::new(None),
        })
    }

    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    pub fn alias(&self) -> &str {
        &self.config.alias
    }

    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    pub fn status(&self) -> ServerStatus {
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set_status(&self, status: ServerStatus) {
        *self.status.lock().unwrap_or_else(PoisonError::into_inner) = status;
    }

    /// The tools of the last successful listing, after `includeTools`/`excludeTools`.
    pub fn tools(&self) -> Vec<Arc<McpTool>> {
        self.tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Starts the server, does the handshake and lists its tools, all within the
    /// connect timeout. The outcome is also the connection's status.
    pub async fn connect(self: &Arc<Self>) -> Result<(), String> {
        self.set_status(ServerStatus::Connecting);
        let outcome = tokio::time::timeout(self.config.connect_timeout, async {
            let mut live = self.live.lock().await;
            let client = self.start().await?;
            let peer = client.peer().clone();
            *live = Some(client);
            drop(live);
            self.list_and_store(&peer).await
        })
        .await;
        let outcome = match outcome {
            Ok(result) => result,
            Err(_) => {
                self.kill_starting();
                self.live.lock().await.take();
                Err(format!(
                    "no answer within {} (connect timeout)",
                    human_duration(self.config.connect_timeout)
                ))
            }
        };
        match &outcome {
            Ok(()) => self.set_status(ServerStatus::Connected),
            Err(why) => self.set_status(ServerStatus::Failed(self.with_log_hint(why))),
        }
        outcome.map_err(|why| self.with_log_hint(&why))
    }

    /// Lists the tools again (after `notifications/tools/list_changed`).
    pub async fn refresh_tools(self: &Arc<Self>) -> Result<(), String> {
        let peer = self.peer().await?;
        match tokio::time::timeout(self.config.connect_timeout, self.list_and_store(&peer)).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "tools/list got no answer within {}",
                human_duration(self.config.connect_timeout)
            )),
        }
    }

    async fn list_and_store(self: &Arc<Self>, peer: &Peer<RoleClient>) -> Result<(), String> {
        let listed = peer
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list failed: {}", service_error_text(&e)))?;
        let tools: Vec<Arc<McpTool>> = listed
            .into_iter()
            .filter(|t| self.config.offers_tool(&t.name))
            .map(|t| Arc::new(McpTool::new(self.clone(), t)))
            .collect();
        *self.tools.lock().unwrap_or_else(PoisonError::into_inner) = tools;
        Ok(())
    }

    /// Starts the transport and does the `initialize` handshake.
    async fn start(&self) -> Result<Client, String> {
        let handshake =
            |e: rmcp::service::ClientInitializeError| format!("the MCP handshake failed: {e}");
        match &self.config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                if !cwd.is_dir() {
                    return Err(format!(
                        "the working directory {} does not exist",
                        cwd.display()
                    ));
                }
                if let Some(dir) = self.log_path.parent() {
                    let _ = std::fs::create_dir_all(dir);
                }
                let stderr = match std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.log_path)
                {
                    Ok(file) => Stdio::from(file),
                    Err(_) => Stdio::null(),
                };
                let mut cmd = tokio::process::Command::new(command);
                // rmcp kills a dropped child from a spawned task; if the runtime ends
                // first, that task is dropped instead, and only kill_on_drop still kills
                // a server that ignores its closed stdin.
                cmd.args(args).envs(env).current_dir(cwd).kill_on_drop(true);
                let (transport, _) = TokioChildProcess::builder(cmd)
                    .stderr(stderr)
                    .spawn()
                    .map_err(|e| format!("cannot start `{command}`: {e}"))?;
                self.events
                    .clone()
                    .serve(transport)
                    .await
                    .map_err(handshake)
            }
            Transport::StreamableHttp { url, headers } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    if name.eq_ignore_ascii_case("authorization")
                        && let Some(token) = value.strip_prefix("Bearer ")
                    {
                        config = config.auth_header(token.to_string());
                        continue;
                    }
                    let name = HeaderName::from_bytes(name.as_bytes())
                        .map_err(|e| format!("header name {name:?}: {e}"))?;
                    let value =
                        HeaderValue::from_str(value).map_err(|e| format!("header {name}: {e}"))?;
                    custom.insert(name, value);
                }
                let transport =
                    StreamableHttpClientTransport::from_config(config.custom_headers(custom));
                self.events
                    .clone()
                    .serve(transport)
                    .await
                    .map_err(handshake)
            }
            Transport::Sse { url, headers } => {
                let transport = SseTransport::connect(url, headers).await?;
                self.events
                    .clone()
                    .serve(transport)
                    .await
                    .map_err(handshake)
            }
        }
    }

    /// Kills a stdio server whose handshake timed out. rmcp kills a dropped child from a
    /// spawned task, which never runs when the program exits right after (as
    /// `toolbelt mcp list` does); a server that ignores its closed stdin would outlive us.
    fn kill_starting(&self) {
        let pid = self
            .starting_pid
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1) else {
            return;
        };
        // SAFETY: `kill` takes plain integers and touches no memory of ours. The pid is
        // our own child whose handle was dropped a moment ago; at worst rmcp's kill task
        // has just reaped it, and a pid is not reused within microseconds.
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }

    /// The live client's peer; starts the server again when it died.
    async fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let mut live = self.live.lock().await;
        if let Some(client) = live.as_ref()
            && !client.is_closed()
        {
            return Ok(client.peer().clone());
        }
        live.take();
        let mut last = String::from("it is not connected");
        for _ in 0..RECONNECT_ATTEMPTS {
            match tokio::time::timeout(self.config.connect_timeout, self.start()).await {
                Ok(Ok(client)) => {
                    let peer = client.peer().clone();
                    *live = Some(client);
                    self.set_status(ServerStatus::Connected);
                    return Ok(peer);
                }
                Ok(Err(why)) => last = why,
                Err(_) => {
                    self.kill_starting();
                    last = format!(
                        "no answer within {} (connect timeout)",
                        human_duration(self.config.connect_timeout)
                    )
                }
            }
        }
        let why = format!(
            "it could not be restarted after {RECONNECT_ATTEMPTS} attempts: {}",
            self.with_log_hint(&last)
        );
        self.set_status(ServerStatus::Failed(why.clone()));
        Err(why)
    }

    /// Runs `tool` on the server: honours `ctx.cancel` (sends `notifications/cancelled`),
    /// the call timeout, and passes progress notifications to `ctx.output`.
    pub async fn call(&self, tool: &str, args: Value, ctx: ExecContext) -> ToolResult {
        let alias = &self.config.alias;
        let failed = |why: String| ToolResult::err(ErrorKind::McpToolError, why);
        let peer = match self.peer().await {
            Ok(peer) => peer,
            Err(why) => return failed(format!("MCP server \"{alias}\" is not available: {why}")),
        };
        let arguments = match args {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(
            CallToolRequestParams::new(tool.to_string()).with_arguments(arguments),
        ));
        let options = PeerRequestOptions::with_timeout(self.config.call_timeout);
        let handle = match peer.send_request_with_option(request, options).await {
            Ok(handle) => handle,
            Err(e) => return self.failed_call(tool, e).await,
        };
        let id = handle.id.clone();
        let token = handle.progress_token.clone();
        self.events
            .watch_progress(token.clone(), ctx.output.clone());
        let outcome = tokio::select! {
            response = handle.await_response() => Some(response),
            _ = ctx.cancel.cancelled() => None,
        };
        self.events.unwatch_progress(&token);
        match outcome {
            None => {
                let param =
                    CancelledNotificationParam::new(Some(id), Some("cancelled by the user".into()));
                let _ = peer.notify_cancelled(param).await;
                ToolResult::err(
                    ErrorKind::Cancelled,
                    format!("The call to MCP tool \"{tool}\" of server \"{alias}\" was cancelled."),
                )
            }
            Some(Ok(ServerResult::CallToolResult(result))) => {
                crate::content::to_tool_result(alias, tool, result)
            }
            Some(Ok(_)) => failed(format!(
                "MCP tool \"{tool}\" of server \"{alias}\" answered with something other than a tool result (tasks and input requests are not supported)."
            )),
            Some(Err(e)) => self.failed_call(tool, e).await,
        }
    }

    async fn failed_call(&self, tool: &str, error: ServiceError) -> ToolResult {
        let alias = &self.config.alias;
        match error {
            ServiceError::McpError(e) => ToolResult::err(
                ErrorKind::McpToolError,
                format!(
                    "MCP tool \"{tool}\" of server \"{alias}\" failed: MCP error {}: {}",
                    e.code.0, e.message
                ),
            ),
            ServiceError::Timeout { timeout } => ToolResult::err(
                ErrorKind::Timeout,
                format!(
                    "MCP tool \"{tool}\" of server \"{alias}\" did not answer within {}; the request was cancelled.",
                    human_duration(timeout)
                ),
            ),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                self.live.lock().await.take();
                let why = "the server closed the connection during a call (it may have crashed); it will be restarted on next use".to_string();
                self.set_status(ServerStatus::Failed(self.with_log_hint(&why)));
                ToolResult::err(
                    ErrorKind::McpToolError,
                    format!(
                        "MCP tool \"{tool}\" of server \"{alias}\" failed: {}",
                        self.with_log_hint(&why)
                    ),
                )
            }
            other => ToolResult::err(
                ErrorKind::McpToolError,
                format!(
                    "MCP tool \"{tool}\" of server \"{alias}\" failed: {}",
                    service_error_text(&other)
                ),
            ),
        }
    }

    /// Adds the last line the server wrote to stderr, and where the whole log is.
    fn with_log_hint(&self, why: &str) -> String {
        if !matches!(self.config.transport, Transport::Stdio { .. }) {
            return why.to_string();
        }
        let last = std::fs::read(&self.log_path).ok().and_then(|bytes| {
            let text =
                String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(2048)..]).into_owned();
            text.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::to_string)
        });
        match last {
            Some(line) if !why.contains("(log ") => format!(
                "{why} (log {}: last line: {})",
                self.log_path.display(),
                line.chars().take(200).collect::<String>()
            ),
            _ => why.to_string(),
        }
    }

    /// The registered tools, as `dyn Tool`.
    pub fn dyn_tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools()
            .into_iter()
            .map(|t| t as Arc<dyn Tool>)
            .collect()
    }

    /// Closes the connection (a stdio server gets its stdin closed, then is killed).
    pub async fn close(&self) {
        if let Some(mut client) = self.live.lock().await.take() {
            let _ = client.close_with_timeout(Duration::from_secs(2)).await;
        }
    }
}

fn service_error_text(e: &ServiceError) -> String {
    match e {
        ServiceError::McpError(e) => format!("MCP error {}: {}", e.code.0, e.message),
        other => other.to_string(),
    }
}

/// `2 s`, `1.5 s`, `10 min`.
pub fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(60_000) && ms >= 60_000 {
        format!("{} min", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}
