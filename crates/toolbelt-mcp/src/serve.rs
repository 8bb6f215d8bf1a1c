//! toolbelt as an MCP server: every registered tool, behind the same workspace boundary,
//! rules and approval policy as the agent, for any MCP client.
//!
//! # Brief overview
//!
//! The binary knows how to assemble a session (settings, roots, registry, rules); this
//! module knows MCP. They meet at [`Workspaces`]: given the workspace roots (the
//! client's `roots`, or none for the current directory) it opens a [`Toolset`]. Each
//! connection is a [`ToolbeltServer`] (rmcp's `ServerHandler`) holding one
//! [`Scheduler`] per toolset, so a `tools/call` goes through exactly the flow of a model's
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
//!   which `when` clauses hold (an approved `exit_plan_mode` ends plan mode).
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
    LoggingMessageNotificationParam, PaginatedRequestParams, ProtocolVersion, Root,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer, SubscriptionContext};
use serde_json::Value;
use tokio::sync::{Mutex, watch};
use tokio_util::sync::CancellationToken;
use toolbelt_core::scheduler::{
    ApprovalMode, Approver, NobodyToAsk, Permissions, Scheduler, SchedulerConfig, ToolCallRequest,
    TurnInfo,
};
use toolbelt_core::{Kind, Registration, ToolEnvironment, ToolRegistry};

use approve::{ElicitationApprover, Remembered};
use progress::ProgressWatch;
use rounds::{AskRoutes, Parked, RoundsApprover};
use turns::{FileTurn, HeldTurns, TurnWhileAsking};

/// The tools of one workspace, as the binary assembled them.
pub struct Toolset {
    /// The environment the tools were built with (roots, settings).
    pub env: Arc<ToolEnvironment>,
    /// Every tool offered (built-in, discovered, declared, proxied).
    pub registry: ToolRegistry,
    /// The rules every call is judged by (settings, `--allowed-tools`).
    pub permissions: Permissions,
    /// The approval mode calls start in.
    pub mode: ApprovalMode,
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
    ) -> BoxFuture<'a, Result<Arc<Toolset>, String>>;

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

/// The tools of a connection and the scheduler that runs their calls.
struct Active {
    toolset: Arc<Toolset>,
    scheduler: Scheduler,
    /// The tools as offered: the toolset's, with `when` clauses evaluated in the mode
    /// beside them (the toolset's, until a call changes it).
    listed: std::sync::Mutex<(ApprovalMode, Arc<ToolRegistry>)>,
    generation: u64,
    opening: Opening,
}

/// What a connection's tools were opened for: they are opened again when it changes.
#[derive(Clone, PartialEq, Eq)]
struct Opening {
    roots: Roots,
    asking: Asking,
}

/// Where the workspace comes from.
#[derive(Clone, PartialEq, Eq)]
enum Roots {
    /// Listed by the client with `roots/list` (the handshake revisions), as of its
    /// `n`th `notifications/roots/list_changed`.
    Listed(u64),
    /// Given with the request (2026-07-28: the answer to an input request); `None`: the
    /// default workspace.
    Given(Option<Vec<PathBuf>>),
}

/// How a call that needs confirmation asks the client's person.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Asking {
    /// Nobody can be asked: refused with how to allow it.
    Nobody,
    /// `elicitation/create`, a request of the server's own (the handshake revisions).
    Elicitation,
    /// An input request in the answer to the call (2026-07-28); `always`: the
    /// connection outlives the call, so an "always" answer is offered and kept.
    Rounds { always: bool },
}

impl Active {
    fn listed(&self) -> std::sync::MutexGuard<'_, (ApprovalMode, Arc<ToolRegistry>)> {
        match self.listed.lock() {
            Ok(listed) => listed,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn registry(&self) -> Arc<ToolRegistry> {
        self.listed().1.clone()
    }

    /// The tools offered, as the client sees them.
    fn offered(&self) -> Vec<Tool> {
        offered(&self.registry()).map(wire::tool).collect()
    }

    /// Evaluates the `when` clauses again if a call changed the approval mode; `true`
    /// when that changed which tools are offered.
    fn follow_mode(&self) -> bool {
        let Some(when_context) = &self.toolset.when_context else {
            return false;
        };
        let mode = self.scheduler.mode();
        let mut listed = self.listed();
        if listed.0 == mode {
            return false;
        }
        let mut registry = (*listed.1).clone();
        registry.apply_when(&when_context(mode));
        let changed = !offered(&registry)
            .map(|r| &r.name)
            .eq(offered(&listed.1).map(|r| &r.name));
        *listed = (mode, Arc::new(registry));
        changed
    }
}

/// The tools a registry offers: registered, and not held back by a `when` clause.
fn offered(registry: &ToolRegistry) -> impl Iterator<Item = &Registration> {
    registry.all().filter(|r| !registry.is_disabled(&r.name))
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
    /// The connection's tools, opened again when the tools, the roots or the way to ask
    /// changed.
    async fn active(
        &self,
        peer: &Peer<RoleServer>,
        opening: Opening,
    ) -> Result<Arc<Active>, ErrorData> {
        let mut slot = self.active.lock().await;
        let generation = *self.changes.borrow();
        if let Some(active) = slot.as_ref()
            && active.generation == generation
            && active.opening == opening
        {
            return Ok(active.clone());
        }
        let roots = match &opening.roots {
            Roots::Listed(_) => self.client_roots(peer).await,
            Roots::Given(dirs) => dirs.clone(),
        };
        let toolset = self
            .workspaces
            .open(roots.as_deref())
            .await
            .map_err(|e| ErrorData::internal_error(e, None))?;
        for warning in &toolset.warnings {
            self.log(peer, LoggingLevel::Warning, warning).await;
        }
        let scheduler = self.scheduler_for(&toolset, peer, opening.asking);
        // Tools opened again (a settings file or a proxied server changed) keep the
        // mode a call moved the connection to (an approved plan), unless the mode the
        // settings and flags give changed too: then that one is the person's newer word.
        if let Some(before) = slot.as_ref()
            && before.toolset.mode == toolset.mode
        {
            scheduler.set_mode(before.scheduler.mode());
        }
        let active = Arc::new(Active {
            listed: std::sync::Mutex::new((toolset.mode, Arc::new(toolset.registry.clone()))),
            toolset,
            scheduler,
            generation,
            opening,
        });
        active.follow_mode();
        *slot = Some(active.clone());
        Ok(active)
    }

    /// How the tools of a client of the handshake revisions are opened.
    fn handshake_opening(&self, peer: &Peer<RoleServer>) -> Opening {
        let asks = !self.options.stateless
            && peer
                .peer_info()
                .is_some_and(|info| info.capabilities.elicitation.is_some());
        Opening {
            roots: Roots::Listed(self.roots_epoch.load(Ordering::SeqCst)),
            asking: if asks {
                Asking::Elicitation
            } else {
                Asking::Nobody
            },
        }
    }

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

    /// The tools as the client was last told them; `None` before it asked.
    async fn offered_now(&self) -> Option<Vec<Tool>> {
        let slot = self.active.lock().await;
        slot.as_ref().map(|active| active.offered())
    }

    fn scheduler_for(
        &self,
        toolset: &Toolset,
        peer: &Peer<RoleServer>,
        asking: Asking,
    ) -> Scheduler {
        let (events, routed) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(self.progress.clone().route(routed));
        let turn = TurnWhileAsking {
            turn: self.options.file_changes.clone(),
            held: self.turns.clone(),
        };
        let approver: Option<Arc<dyn Approver>> = match asking {
            Asking::Nobody => None,
            Asking::Elicitation => Some(Arc::new(ElicitationApprover {
                peer: peer.clone(),
                remembered: self.remembered.clone(),
                turn,
            })),
            Asking::Rounds { always } => Some(Arc::new(RoundsApprover {
                routes: self.routes.clone(),
                remembered: self.remembered.clone(),
                turn,
                offer_always: always,
            })),
        };
        let why = if self.options.stateless {
            "this server runs stateless, so it cannot ask the MCP client's user".to_string()
        } else {
            "the MCP client offers no elicitation, so the server cannot ask its user".to_string()
        };
        let scheduler = Scheduler::new(
            toolset.env.clone(),
            SchedulerConfig {
                mode: toolset.mode,
                permissions: toolset.permissions.clone(),
                approver,
                events: Some(events),
                nobody_to_ask: Some(NobodyToAsk {
                    why: format!("{why} (approval mode {})", toolset.mode),
                    how: self.options.how_to_allow.clone(),
                }),
                ..Default::default()
            },
        );
        self.remembered.replay(&scheduler, &toolset.registry);
        scheduler
    }

    /// The client's roots as directories, when it offers them and this connection may
    /// ask; `None` means the default workspace.
    async fn client_roots(&self, peer: &Peer<RoleServer>) -> Option<Vec<PathBuf>> {
        if self.options.stateless {
            return None;
        }
        peer.peer_info()?.capabilities.roots.as_ref()?;
        let listed = tokio::time::timeout(Duration::from_secs(10), peer.list_roots()).await;
        let roots = match listed {
            Ok(Ok(result)) => result.roots,
            Ok(Err(e)) => {
                self.log(peer, LoggingLevel::Warning, &format!("cannot list the client's roots ({e}); the workspace is the server's directory")).await;
                return None;
            }
            Err(_) => {
                self.log(peer, LoggingLevel::Warning, "the client did not list its roots within 10 s; the workspace is the server's directory").await;
                return None;
            }
        };
        self.root_dirs(peer, roots).await
    }

    /// The client's roots as directories on this machine (the others are ignored with a
    /// warning); `None` when none is left: the default workspace.
    async fn root_dirs(&self, peer: &Peer<RoleServer>, roots: Vec<Root>) -> Option<Vec<PathBuf>> {
        let mut dirs = Vec::new();
        for root in roots {
            match url::Url::parse(&root.uri).ok().and_then(|u| {
                (u.scheme() == "file")
                    .then(|| u.to_file_path().ok())
                    .flatten()
            }) {
                Some(path) if path.is_dir() => dirs.push(path),
                _ => {
                    let message = format!(
                        "ignoring the root {}: not a directory on this machine (file:// URI)",
                        root.uri
                    );
                    self.log(peer, LoggingLevel::Warning, &message).await;
                }
            }
        }
        (!dirs.is_empty()).then_some(dirs)
    }

    /// Sends `message` to the client as `notifications/message` when it wants `level`.
    async fn log(&self, peer: &Peer<RoleServer>, level: LoggingLevel, message: &str) {
        tracing::warn!("{message}");
        let message = toolbelt_core::redact::redact(message);
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

/// Serves one client over stdin/stdout until it closes its end (or `stop` is cancelled).
/// Nothing but MCP is written to stdout.
pub async fn serve_stdio(
    workspaces: Arc<dyn Workspaces>,
    options: Arc<ServeOptions>,
    stop: tokio_util::sync::CancellationToken,
) -> Result<(), String> {
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
            .map_err(|e| format!("the MCP connection ended with an error: {e}")),
        Err(e) => Err(format!("the MCP handshake failed: {e}")),
    };
    // What was answered is written before the process ends (a client that stopped
    // reading does not hold it up for long).
    let _ = tokio::time::timeout(Duration::from_secs(5), drained.wait()).await;
    ended
}
