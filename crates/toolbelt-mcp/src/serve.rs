//! toolbelt as an MCP server: every registered tool, behind the same workspace boundary,
//! rules and approval policy as the agent, for any MCP client.
//!
//! # Brief overview
//!
//! The binary knows how to assemble a session (settings, roots, registry, rules); this
//! module knows MCP. They meet at [`Workspaces`]: given the workspace roots (the
//! client's `roots`, or none for the current directory) it opens a [`Toolset`]. Each
//! connection is a [`ToolbeltServer`] (rmcp's `ServerHandler`) holding one
//! [`Scheduler`](toolbelt_engine::scheduler::Scheduler) per toolset, so a `tools/call` goes through exactly the flow of a model's
//! function call: lookup, argument checks, rules, approval mode, confirmation,
//! execution, output limits. Results are mapped in `wire`.
//!
//! - **Confirmation**: the client is the one that asks. A call that needs it (by kind,
//!   rules and mode) becomes `elicitation/create` when the client declared elicitation
//!   (`approve`); otherwise it is refused with an `isError` result that says how to
//!   allow it. Read-only tools never ask (unless an explicit `ask` rule says so).
//! - **Long calls**: live output becomes `notifications/progress` when the request has a
//!   progress token (`progress`); `notifications/cancelled` cancels the call's token,
//!   which kills its processes.
//! - **Roots**: when the client offers `roots`, they are the workspace (read lazily, on the
//!   first request that needs the tools, and again after
//!   `notifications/roots/list_changed`).
//! - **List changes**: [`Workspaces::changes`] ticks when the tools may have changed
//!   (a proxied server's list, a settings file, a tool manifest or a skill edited);
//!   each connection then opens its tools again and sends
//!   `notifications/tools/list_changed` if what it offers changed. It also sends one when
//!   its roots change, and when a call changed the approval mode in a way that changes
//!   which `when` clauses hold (an approved `exit_plan_mode` ends plan mode). A client of
//!   2026-07-28 hears of the same on its `subscriptions/listen` request (`listen`).
//! - **Stateless HTTP**: [`ServeOptions::stateless`] makes a connection ask nothing of
//!   the client (no roots, no elicitation), so any process can answer any request.
//! - **Protocol revisions**: 2024-11-05 to 2025-11-25 (the `initialize` handshake, with
//!   the server-to-client requests above), and 2026-07-28, where a client names its
//!   revision and capabilities in every request and a server asks nothing of it on its
//!   own: roots and confirmation come as an `input_required` answer to `tools/call` that
//!   the client fulfils and retries (`rounds`). A client that offers the handshake gets
//!   the handshake; one that starts with `server/discover` or a request of the newest
//!   revision gets that.
//!
//! File changes of all connections are serialised (one `edit`/`write_file` at a time per
//! process): two clients editing one file must not lose either change. Reads, searches
//! and commands run side by side. A change that asks its person gives the turn back
//! while the question is open (`turns`), so a slow answer holds back no other client;
//! what changed meanwhile is caught by the edit tools' own check.

// Logging and roots are deprecated by rmcp for the 2026-07-28 revision only; for
// 2025-11-25 and before they are the protocol, and in 2026-07-28 roots are still how a
// client says where its workspace is (as an input request, see `rounds`).
#![allow(deprecated)]

mod active;
mod approve;
mod busy_poll;
mod coalesce;
pub mod http;
mod listen;
mod progress;
mod rounds;
mod stdio_input;
mod turns;
mod wire;

pub use busy_poll::before_park;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CustomRequest, CustomResult,
    ErrorCode, ErrorData, Implementation, ListToolsResult, LoggingLevel,
    LoggingMessageNotificationParam, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer, SubscriptionContext};
use serde_json::Value;
use tokio::sync::{Mutex, watch};
use tokio_util::sync::CancellationToken;
use toolbelt_config::ApprovalMode;
use toolbelt_core::{Kind, ToolEnvironment};
use toolbelt_engine::registry::ToolRegistry;
use toolbelt_engine::{scheduler::ToolCallRequest, scheduler::TurnInfo};

use active::{Active, Asking, Opening, Roots};
use approve::Remembered;
use progress::ProgressWatch;
use rounds::{AskRoutes, Parked};
use turns::{FileTurn, HeldTurns};

/// The tools of one workspace, as the binary assembled them.
pub struct Toolset {
    /// The environment the tools were built with (roots, settings).
    pub env: Arc<ToolEnvironment>,
    /// Every tool offered (built-in, discovered, declared, proxied).
    pub registry: ToolRegistry,
    /// The session's rules (settings, `--allowed-tools`), the approval mode calls start
    /// in, its hooks (run around every call) and its file checkpoints (taken before
    /// every call that may change files; `toolbelt restore` undoes them): every
    /// connection's scheduler is made from them.
    pub rules: toolbelt_engine::scheduler::CallRules,
    /// Problems met while assembling (a bad manifest, a rule that names no tool): sent
    /// to the client as `notifications/message` warnings.
    pub warnings: Vec<String>,
    /// The when-clause context keys in an approval mode: when a call changes the mode
    /// (`exit_plan_mode` ends plan mode) the `when` clauses are evaluated again and the
    /// client told if the list changed. `None`: the list stays as opened.
    pub when_context: Option<WhenContext>,
}

/// The when-clause context keys of a workspace in an approval mode.
pub type WhenContext = Arc<dyn Fn(ApprovalMode) -> serde_json::Map<String, Value> + Send + Sync>;

/// Opens toolsets: implemented by the binary, which knows settings and sessions.
pub trait Workspaces: Send + Sync + 'static {
    /// The tools for the workspace `roots` (their first is the primary directory), or
    /// for the default workspace (the current directory and the flags') when `None`.
    /// The error is said to the client.
    fn open<'a>(
        &'a self,
        roots: Option<&'a [PathBuf]>,
    ) -> BoxFuture<'a, Result<Arc<Toolset>, toolbelt_core::EmbedderError>>;

    /// A connection ended (not a stateless one): what its calls started in the
    /// background (their call ids begin with `calls`) is to end too. Nothing by default.
    fn connection_ended(&self, calls: &str) {
        let _ = calls;
    }

    /// A counter that grows when tools or rules may have changed (a proxied server's
    /// list, a settings file): connections open their toolset again, so calls from then
    /// on follow the new rules, and tell their client if the offered tools changed.
    fn changes(&self) -> watch::Receiver<u64>;
}

/// How connections behave; shared by every connection of a process.
pub struct ServeOptions {
    /// Ask nothing of the client (no roots, no elicitation): any process can answer any
    /// request. Calls that need confirmation are refused.
    pub stateless: bool,
    /// How the person allows a call when nobody can be asked, as a sentence; `{tool}` is
    /// replaced with the tool's name.
    pub how_to_allow: String,
    /// Serialises file changes across connections (see [`turns`]).
    file_changes: FileTurn,
    /// Calls of the 2026-07-28 revision waiting for their person's answer (see
    /// [`rounds`]): process-wide, because over HTTP each round is a connection of its own.
    parked: Parked,
}

impl ServeOptions {
    /// Options; `how_to_allow` as in [`ServeOptions::how_to_allow`].
    pub fn new(stateless: bool, how_to_allow: impl Into<String>) -> Self {
        ServeOptions {
            stateless,
            how_to_allow: how_to_allow.into(),
            file_changes: FileTurn::default(),
            parked: Parked::default(),
        }
    }
}

/// One MCP connection (a stdio session, an HTTP session, or one stateless request).
pub struct ToolbeltServer {
    connection: Arc<Connection>,
}

/// What a connection knows, shared with the task that follows tool-list changes.
struct Connection {
    workspaces: Arc<dyn Workspaces>,
    /// [`Workspaces::changes`], subscribed once per connection.
    changes: watch::Receiver<u64>,
    options: Arc<ServeOptions>,
    active: Mutex<Option<Arc<Active>>>,
    /// Grows when the client says its roots changed.
    roots_epoch: AtomicU64,
    /// It served a request of the 2026-07-28 revision over HTTP, where every request is a
    /// connection of its own: its end is not the end of what its calls started.
    per_request: AtomicBool,
    /// Where the calls that ask in rounds send their questions, by call id.
    routes: Arc<AskRoutes>,
    /// Grows when a call changed which tools are offered (an approved plan), for the
    /// connection's `subscriptions/listen` (see [`listen`]).
    list_ticks: watch::Sender<u64>,
    /// `mcp-<connection>-`: what its call ids begin with, unique in the process.
    call_prefix: String,
    next_call: AtomicU64,
    remembered: Arc<Remembered>,
    /// The turns for file changes its calls hold.
    turns: Arc<HeldTurns>,
    progress: ProgressWatch,
    /// The lowest level of `notifications/message` the client wants, as `level_rank`.
    log_level: Arc<AtomicU8>,
    /// The client's session, the `session_id` its calls' hooks receive.
    session: Arc<active::ClientSession>,
}

impl ToolbeltServer {
    /// A connection's handler.
    pub fn new(workspaces: Arc<dyn Workspaces>, options: Arc<ServeOptions>) -> Self {
        ToolbeltServer {
            connection: Arc::new(Connection {
                changes: workspaces.changes(),
                workspaces,
                options,
                active: Mutex::new(None),
                roots_epoch: AtomicU64::new(0),
                per_request: AtomicBool::new(false),
                routes: Arc::default(),
                list_ticks: watch::Sender::new(0),
                call_prefix: format!("mcp-{}-", CONNECTIONS.fetch_add(1, Ordering::Relaxed)),
                next_call: AtomicU64::new(1),
                remembered: Arc::default(),
                turns: Arc::default(),
                progress: ProgressWatch::default(),
                log_level: Arc::new(AtomicU8::new(level_rank(LoggingLevel::Info))),
                session: Arc::default(),
            }),
        }
    }
}

/// Connections opened by this process, for unique call ids.
static CONNECTIONS: AtomicU64 = AtomicU64::new(1);

/// A connection that ends (an HTTP session deleted or expired, a stdio client gone)
/// ends the background commands its calls started: nothing of a connection outlives
/// it. A stateless connection lives for one request, so its jobs are left to the
/// process's end.
impl Drop for ToolbeltServer {
    fn drop(&mut self) {
        if !self.connection.options.stateless && !self.connection.per_request.load(Ordering::SeqCst)
        {
            self.connection
                .workspaces
                .connection_ended(&self.connection.call_prefix);
        }
    }
}

impl Connection {
    /// The id of the connection's next call (unique in the process).
    fn next_call_id(&self) -> String {
        format!(
            "{}{}",
            self.call_prefix,
            self.next_call.fetch_add(1, Ordering::SeqCst)
        )
    }

    /// Runs one call through the connection's scheduler, with the process's turn for
    /// file changes when it changes files; its result as MCP, and whether the tools
    /// offered changed (the call changed the approval mode).
    async fn run_call(
        &self,
        active: &Active,
        call_id: &str,
        name: &str,
        arguments: &Value,
        cancel: &CancellationToken,
    ) -> (Result<CallToolResult, ErrorData>, bool) {
        let call = ToolCallRequest::new(call_id, name, arguments);
        let registry = active.registry();
        let exclusive = registry
            .get(name)
            .is_some_and(|r| changes_files(r.tool.kind()));
        let _turn = if exclusive {
            Some(
                self.turns
                    .take_for_call(&self.options.file_changes, call_id)
                    .await,
            )
        } else {
            None
        };
        let mut done = active
            .scheduler
            .run(&registry, vec![call], TurnInfo::default(), cancel)
            .await;
        let list_changed = active.follow_mode();
        if list_changed {
            self.list_ticks.send_modify(|n| *n += 1);
        }
        let result = match done.pop() {
            Some(call) => Ok(wire::call_result(call)),
            None => Err(ErrorData::internal_error("the call gave no result", None)),
        };
        (result, list_changed)
    }

    /// Sends `message` to the client as `notifications/message` when it wants `level`.
    async fn log(&self, peer: &Peer<RoleServer>, level: LoggingLevel, message: &str) {
        tracing::warn!("{message}");
        let message = toolbelt_config::redact::redact(message);
        if level_rank(level) >= self.log_level.load(Ordering::SeqCst) {
            let _ = peer
                .notify_logging_message(
                    LoggingMessageNotificationParam::new(level, Value::String(message))
                        .with_logger("toolbelt"),
                )
                .await;
        }
    }

    /// Follows [`Workspaces::changes`]: opens the tools again and tells the client when
    /// what it is offered changed (names, descriptions, schemas, annotations). A change
    /// that leaves the list as it was (a settings edit that only touched rules) is taken
    /// silently, as is one before the client first listed the tools.
    ///
    /// A stateless connection follows nothing: it lives for one request and has no
    /// stream to notify on (its next request opens the tools as they are then).
    fn watch_changes(self: Arc<Self>, peer: Peer<RoleServer>) {
        if self.options.stateless {
            return;
        }
        let mut changes = self.changes.clone();
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                // A connection that ended is not opened again for nothing.
                if peer.is_transport_closed() {
                    break;
                }
                let Some(before) = self.offered_now().await else {
                    continue;
                };
                let after = match self.active(&peer, self.handshake_opening(&peer)).await {
                    Ok(active) => active.offered(),
                    Err(e) => {
                        let message = format!("cannot open the tools again: {}", e.message);
                        self.log(&peer, LoggingLevel::Warning, &message).await;
                        continue;
                    }
                };
                if before != after && peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }
}

/// The requests of the revisions served: one of these that reaches
/// `on_custom_request` had parameters rmcp could not read.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "logging/setLevel",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "server/discover",
    "subscriptions/listen",
];

/// `notifications/message` levels in order (RFC 5424, least severe first).
fn level_rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Kinds that change files: one at a time per process (see the module documentation).
fn changes_files(kind: Kind) -> bool {
    matches!(kind, Kind::Edit | Kind::Delete | Kind::Move)
}

impl ServerHandler for ToolbeltServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new("toolbelt", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "toolbelt's coding tools: read, search, edit and run commands inside the workspace \
             (the client's roots, or the server's directory). Paths are absolute. Calls that \
             change files or run commands may ask the user first.",
        )
    }

    /// Every revision up to 2026-07-28: those with an `initialize` handshake (2024-11-05
    /// to 2025-11-25), and 2026-07-28, whose roots and confirmations come in rounds
    /// (`rounds`).
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let opening = if rounds::modern(&self.connection, &context) {
            self.connection.listing_opening(&context).await
        } else {
            self.connection.handshake_opening(&context.peer)
        };
        let active = self.connection.active(&context.peer, opening).await?;
        Ok(ListToolsResult::with_all_items(active.offered()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let connection = &self.connection;
        connection.session.note(&context);
        if rounds::modern(connection, &context) {
            return rounds::call(connection, request, context).await;
        }
        let opening = connection.handshake_opening(&context.peer);
        let active = connection.active(&context.peer, opening).await?;
        let call_id = connection.next_call_id();
        if let Some(token) = context.meta.get_progress_token() {
            connection
                .progress
                .watch(&call_id, context.peer.clone(), token);
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let (result, list_changed) = connection
            .run_call(&active, &call_id, &request.name, &arguments, &context.ct)
            .await;
        connection.progress.unwatch(&call_id);
        if list_changed {
            let _ = context.peer.notify_tool_list_changed().await;
        }
        result.map(CallToolResponse::from)
    }

    /// A request rmcp could not read as any method it knows: a known method whose
    /// parameters have the wrong shape (`"name": 5`) is -32602 naming the method, an
    /// unknown one -32601 naming it; rmcp alone would call both "method not found".
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = request.method;
        if KNOWN_METHODS.contains(&method.as_str()) {
            return Err(ErrorData::invalid_params(
                format!(
                    "invalid parameters for {method}: they do not match the MCP schema of this method (check the names and types, e.g. tools/call needs a string `name` and an object `arguments`)"
                ),
                None,
            ));
        }
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
            None,
        ))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.connection
            .log_level
            .store(level_rank(request.level), Ordering::SeqCst);
        Ok(())
    }

    /// `subscriptions/listen` (2026-07-28): tool list changes only.
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // rmcp keeps of it what was requested and advertised.
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        listen::tools_changed(&self.connection, context).await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.connection.clone().watch_changes(context.peer.clone());
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.connection.roots_epoch.fetch_add(1, Ordering::SeqCst);
        // The tools may differ (when clauses read the folder count) and every path of
        // the old roots may now be outside: the client lists them again.
        let _ = context.peer.notify_tool_list_changed().await;
    }
}

/// Why [`serve_stdio`] ended with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeStdioError {
    /// The client's `initialize` failed; what rmcp said.
    #[error("the MCP handshake failed: {0}")]
    Handshake(String),
    /// The connection's task ended abnormally; what rmcp said.
    #[error("the MCP connection ended with an error: {0}")]
    Ended(String),
}

/// Serves one client over stdin/stdout until it closes its end (or `stop` is cancelled).
/// Nothing but MCP is written to stdout.
pub async fn serve_stdio(
    workspaces: Arc<dyn Workspaces>,
    options: Arc<ServeOptions>,
    stop: tokio_util::sync::CancellationToken,
) -> Result<(), ServeStdioError> {
    use rmcp::ServiceExt;
    let server = ToolbeltServer::new(workspaces, options);
    let (input, output) = rmcp::transport::stdio_pipes();
    let (output, drained) = coalesce::Output::new(busy_poll::Watched::new(output));
    // Every request read is answered before the end of the input reaches rmcp, and an
    // oversized one is answered with the limit (see `stdio_input`).
    let pending = Arc::new(stdio_input::Pending::default());
    let input = stdio_input::Input::new(input, pending.clone(), output.injector());
    let output = stdio_input::Answers::new(output, pending);
    let ended = match server.serve_with_ct((input, output), stop).await {
        Ok(running) => running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| ServeStdioError::Ended(e.to_string())),
        Err(e) => Err(ServeStdioError::Handshake(e.to_string())),
    };
    // What was answered is written before the process ends (a client that stopped
    // reading does not hold it up for long).
    let _ = tokio::time::timeout(Duration::from_secs(5), drained.wait()).await;
    ended
}
