#![cfg_attr(test, allow(clippy::too_many_lines))]
//! The MCP client of toolbelt: the servers named in the settings become tools in the
//! registry.
//!
//! # Brief overview
//!
//! `config` reads `mcpServers` (plus `--mcp-config` and `mcp.serverCommand`) into one
//! [`ServerConfig`] per server. A session does not wait for them: [`McpServers::start`]
//! starts each in the background, and started again with backoff when it fails
//! (`background`); a server's tools join the session's when it is up
//! ([`McpServers::take_joined`]), and a caller that needs one server waits for that one
//! only ([`McpServers::wait_started`]). Listings (`toolbelt mcp list`, `tools list`)
//! use [`McpServers::connect_all`] instead: every server at once, each within its own
//! `startupTimeout`, so the wait is the slowest healthy server or the timeout, never the
//! sum, and a server that fails or hangs is reported with its reason while the others
//! carry on. Each server is an [`McpConnection`] (rmcp client, status,
//! tools, restart after a crash); each of its tools is an [`McpTool`] registered as
//! `mcp__<alias>__<tool>`. Results are mapped to toolbelt parts in `content`.
//!
//! Resources and prompts (`catalog`): when a server advertises resources, the built-in
//! tools `list_mcp_resources` and `read_mcp_resource` are registered; a server's prompts
//! become commands `/<alias>:<prompt> name=value` ([`McpServers::run_prompt_command`]),
//! whose arguments complete from the server (`complete`).
//!
//! Transports: stdio (rmcp's child-process transport; the server's stderr goes to a log
//! file in the directory the caller names, never into answers, statuses or errors),
//! Streamable HTTP (rmcp's transport on our reqwest client), and the legacy HTTP+SSE
//! transport (`sse`, our own: rmcp has none). HTTP clients follow redirects only within
//! the configured origin, so configured headers never reach another host.
//!
//! OAuth (`oauth`): an HTTP server (Streamable HTTP or SSE) that answers 401 is "needs
//! login"; [`login`] (`toolbelt mcp auth`, [`McpServers::log_in`] for `/mcp auth`) does
//! the authorization code flow and keeps the tokens in toolbelt's store, and later
//! connections send and refresh them.
//!
//! # Secrets
//!
//! Each [`ServerConfig`] registers its credentials (header values, URL user-info, secret
//! `env` values and flags) with [`toolbelt_config::redact::global`] when its connection is
//! made; every status, error and listing of this crate is masked with it.
//!
//! # Trust
//!
//! A server's tool annotations are claims. `readOnlyHint` makes a tool run unasked (as a
//! read) only when the person's settings trust the server (`trust: true` or
//! `trustAnnotations: true`); see `tool`.
//!
//! # Tool-list changes
//!
//! The registry is a plain `ToolRegistry` owned by the session, so a server's
//! `notifications/tools/list_changed` cannot change it behind the owner's back. Instead
//! each connection sends its alias on a channel; the owner, when it is ready to see new
//! tools (between model turns, or right away in a listing), calls
//! [`McpServers::refresh_pending`] (or [`McpServers::take_changed`] /
//! [`McpServers::wait_for_change`] then [`McpServers::refresh`]), which lists that server's tools again and swaps them in with
//! `ToolRegistry::remove_origin` + `register`. No lock around the registry, and a model
//! turn never sees the tool set change under it.
//!
//! # Serving
//!
//! [`serve`] is the other direction: toolbelt's own tools offered to MCP clients
//! (`toolbelt mcp serve`), over stdio or Streamable HTTP.
//!
//! Only this crate knows MCP JSON: everything leaves it as core types.

#![warn(missing_docs, unreachable_pub)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use futures::future::join_all;
use tokio::sync::mpsc;
use toolbelt_engine::{registry::Origin, registry::ToolRegistry};

mod asks;
mod background;
mod catalog;
mod complete;
mod config;
mod connection;
mod content;
mod error;
mod events;
mod list_resources;
mod oauth;
mod prompts;
mod read_resource;
pub mod sdk;
pub mod serve;
mod sse;
mod start;
mod status;
mod tool;

pub use background::START_ATTEMPTS;
pub use catalog::{McpPrompt, McpPromptArgument};
pub use config::{
    ConfigProblem, DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, ServerConfig, Transport,
    configured_servers, parse_mcp_config,
};
pub use connection::McpConnection;
pub use error::{McpAuthError, McpConfigError, McpError};
pub use list_resources::{LIST_NAME, LIST_RULE_ALIASES};
pub use oauth::{AuthState, OAuthConfig, login, logout, open_in_browser};
pub use prompts::servers_named;
pub use read_resource::{READ_NAME, READ_RULE_ALIASES};
pub use status::ServerStatus;
pub use tool::McpTool;

/// Every configured server of a session.
pub struct McpServers {
    connections: Vec<Arc<McpConnection>>,
    problems: Vec<ConfigProblem>,
    changes: tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>,
    /// Servers up since the owner last took them (`background`).
    joined: background::Joined,
    /// Ends the background starts.
    stop: tokio_util::sync::CancellationToken,
    /// Lets the held-back starts begin ([`McpServers::launch`]).
    go: tokio_util::sync::CancellationToken,
}

impl Drop for McpServers {
    /// No start is tried again once the session is gone.
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// One server as `toolbelt mcp list` shows it.
#[derive(Debug, Clone)]
pub struct ServerReport {
    /// The entry's name in `mcpServers`.
    pub alias: String,
    /// `stdio`, `http`, `sse`, or `-` for an entry that could not be read.
    pub transport: String,
    /// The command line or URL.
    pub target: String,
    /// Where it stands.
    pub status: ServerStatus,
    /// `(model-facing name, name on the server, description)`.
    pub tools: Vec<(String, String, String)>,
    /// Resources it listed (0 when it advertises none).
    pub resources: usize,
    /// Resource templates it listed.
    pub resource_templates: usize,
    /// Prompts it listed.
    pub prompts: usize,
    /// How toolbelt authenticates to it.
    pub auth: AuthState,
    /// The protocol revision spoken with it (`2026-07-28`, `2025-11-25`, ...) while it is
    /// connected.
    pub protocol: Option<String>,
}

impl McpServers {
    /// Connects every server concurrently; stdio servers log their stderr to
    /// `<log_dir>/<alias>.log`. `log_dir` must be outside what the model's tools can
    /// read (not the session directory): a server's log is its own text. Returns when each has connected, failed or timed out;
    /// see [`McpServers::reports`] for the outcome.
    pub async fn connect_all(
        servers: Vec<ServerConfig>,
        problems: Vec<ConfigProblem>,
        log_dir: &Path,
    ) -> McpServers {
        let (tx, rx) = mpsc::unbounded_channel();
        let connections: Vec<Arc<McpConnection>> = servers
            .into_iter()
            .map(|config| McpConnection::new(config, log_dir, tx.clone()))
            .collect();
        // Failures are in each connection's status; the caller decides how to report them.
        join_all(connections.iter().map(|c| c.connect())).await;
        McpServers::of(connections, problems, rx)
    }

    /// Starts the servers in the background and returns at once: those named in
    /// `first` now, the others at [`McpServers::launch`]. Each is started again with
    /// backoff when it fails (see `background`), until [`McpServers::close`]. A server
    /// that is up is announced by [`McpServers::take_joined`]. Must be called within a
    /// Tokio runtime.
    pub fn start(
        servers: Vec<ServerConfig>,
        problems: Vec<ConfigProblem>,
        log_dir: &Path,
        first: &[String],
    ) -> McpServers {
        let (tx, rx) = mpsc::unbounded_channel();
        let connections: Vec<Arc<McpConnection>> = servers
            .into_iter()
            .map(|config| McpConnection::new(config, log_dir, tx.clone()))
            .collect();
        let servers = McpServers::of(connections, problems, rx);
        for connection in &servers.connections {
            let go = (!first.iter().any(|a| a == connection.alias())).then(|| servers.go.clone());
            // Ends by itself (up, given up) or with `stop`; nothing to join.
            tokio::spawn(background::start_with_retries(
                connection.clone(),
                servers.joined.clone(),
                servers.stop.clone(),
                go,
            ));
        }
        servers
    }

    /// Starts the servers [`McpServers::start`] held back. A session calls it once it
    /// is set up, so that starting a server's process (and the guardian with the first
    /// one) does not compete with its setting up on a busy machine; idempotent.
    pub fn launch(&self) {
        self.go.cancel();
    }

    fn of(
        connections: Vec<Arc<McpConnection>>,
        problems: Vec<ConfigProblem>,
        changes: mpsc::UnboundedReceiver<String>,
    ) -> McpServers {
        McpServers {
            connections,
            problems,
            changes: tokio::sync::Mutex::new(changes),
            joined: Default::default(),
            stop: Default::default(),
            go: Default::default(),
        }
    }

    /// No servers at all.
    pub fn empty() -> McpServers {
        let (_tx, rx) = mpsc::unbounded_channel();
        McpServers::of(Vec::new(), Vec::new(), rx)
    }

    /// The servers that came up since the last call, once each, in the order they did.
    /// Their tools are listed already: [`McpServers::adopt`] registers them.
    pub fn take_joined(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .joined
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Puts the tools `alias` listed last into `registry` (in place of the ones it had),
    /// and the resource tools when it offers resources; asks the server nothing.
    pub fn adopt(&self, alias: &str, registry: &mut ToolRegistry) {
        let Some(connection) = self.connections.iter().find(|c| c.alias() == alias) else {
            return;
        };
        registry.remove_origin(&Origin::Mcp {
            server: alias.to_string(),
        });
        register_server(connection, registry);
        self.register_resource_tools(registry);
    }

    /// Waits until the start under way of each server named in `aliases` ended (up, or
    /// failed), each at most its `startupTimeout`: for a caller that needs those
    /// servers and no other. Unknown names are ignored.
    pub async fn wait_started(&self, aliases: &[String]) {
        let named = self
            .connections
            .iter()
            .filter(|c| aliases.iter().any(|a| a == c.alias()));
        join_all(named.map(|c| c.wait_started())).await;
    }

    /// Every connection, in configuration order.
    pub fn connections(&self) -> &[Arc<McpConnection>] {
        &self.connections
    }

    /// Registers the tools of every connected server, and the resource tools when one
    /// of them advertises resources.
    pub fn register(&self, registry: &mut ToolRegistry) {
        for connection in &self.connections {
            register_server(connection, registry);
        }
        self.register_resource_tools(registry);
    }

    /// `list_mcp_resources` and `read_mcp_resource`, once, when a server advertises
    /// resources. Built-ins: their rule aliases are toolbelt's words, not a server's.
    fn register_resource_tools(&self, registry: &mut ToolRegistry) {
        let offered = self.connections.iter().any(|c| c.offers_resources());
        if !offered || registry.get(LIST_NAME).is_some() {
            return;
        }
        let servers = self.connections.clone();
        registry.register(
            Arc::new(list_resources::ListMcpResources::new(servers.clone())),
            Origin::BuiltIn,
        );
        registry.register(
            Arc::new(read_resource::ReadMcpResource::new(servers)),
            Origin::BuiltIn,
        );
    }

    /// The aliases of the configured servers, in configuration order.
    pub fn aliases(&self) -> Vec<String> {
        self.connections
            .iter()
            .map(|c| c.alias().to_string())
            .collect()
    }

    /// Waits for the next `tools/list_changed` and returns the server's alias.
    pub async fn wait_for_change(&self) -> Option<String> {
        self.changes.lock().await.recv().await
    }

    /// Lists `alias`'s tools again and replaces them in `registry`.
    pub async fn refresh(&self, alias: &str, registry: &mut ToolRegistry) -> Result<(), McpError> {
        let Some(connection) = self.connections.iter().find(|c| c.alias() == alias) else {
            return Err(McpError::UnknownServer(alias.to_string()));
        };
        connection.refresh_tools().await?;
        registry.remove_origin(&Origin::Mcp {
            server: alias.to_string(),
        });
        register_server(connection, registry);
        self.register_resource_tools(registry);
        Ok(())
    }

    /// The servers that announced a changed tool list since the last call, once each.
    pub async fn take_changed(&self) -> Vec<String> {
        let mut pending = Vec::new();
        let mut changes = self.changes.lock().await;
        while let Ok(alias) = changes.try_recv() {
            if !pending.contains(&alias) {
                pending.push(alias);
            }
        }
        pending
    }

    /// The server whose tools are named like `name` (`mcp__<alias>__...`), if it is one
    /// of these: a model may call a tool a server added before its announcement
    /// arrived.
    pub fn server_of_tool_name(&self, name: &str) -> Option<&str> {
        self.connections.iter().map(|c| c.alias()).find(|alias| {
            let prefix = toolbelt_engine::registry::sanitize_tool_name(&format!("mcp__{alias}__"));
            name.starts_with(&prefix)
        })
    }

    /// Applies every change announced so far; returns the servers refreshed.
    pub async fn refresh_pending(&self, registry: &mut ToolRegistry) -> Vec<String> {
        let pending = self.take_changed().await;
        let mut refreshed = Vec::new();
        for alias in pending {
            match self.refresh(&alias, registry).await {
                Ok(()) => refreshed.push(alias),
                Err(why) => {
                    tracing::warn!("MCP server \"{alias}\": cannot refresh its tools: {why}")
                }
            }
        }
        refreshed
    }

    /// `(alias, uri)` of each subscribed resource a server said changed since the last
    /// call (`notifications/resources/updated`), once each.
    pub fn take_resource_updates(&self) -> Vec<(String, String)> {
        (self.connections.iter())
            .flat_map(|c| {
                let alias = c.alias().to_string();
                (c.events().take_updated().into_iter()).map(move |uri| (alias.clone(), uri))
            })
            .collect()
    }

    /// Every server with its status and tools, in alias order, entries that could not be
    /// read included.
    pub fn reports(&self) -> Vec<ServerReport> {
        let mut reports: Vec<ServerReport> = self
            .connections
            .iter()
            .map(|c| {
                let (resources, resource_templates, prompts) = c.catalog_counts();
                ServerReport {
                    alias: c.alias().to_string(),
                    transport: c.config().transport.kind().to_string(),
                    target: c.config().transport.target(),
                    status: c.status(),
                    tools: c
                        .tools()
                        .iter()
                        .map(|t| {
                            use toolbelt_core::Tool;
                            (
                                t.name().to_string(),
                                t.remote_name().to_string(),
                                t.description().to_string(),
                            )
                        })
                        .collect(),
                    resources,
                    resource_templates,
                    prompts,
                    auth: AuthState::of(c.config()),
                    protocol: c.protocol_version(),
                }
            })
            .collect();
        reports.extend(self.problems.iter().map(|p| ServerReport {
            alias: p.alias.clone(),
            transport: "-".into(),
            target: String::new(),
            status: ServerStatus::Failed(toolbelt_config::redact::redact(&p.reason)),
            tools: Vec::new(),
            resources: 0,
            resource_templates: 0,
            prompts: 0,
            auth: AuthState::None,
            protocol: None,
        }));
        reports.sort_by(|a, b| a.alias.cmp(&b.alias));
        reports
    }

    /// Logs in to server `alias` ([`login`]), then starts it again in the background
    /// (its tools join as after any start, [`McpServers::take_joined`]) and waits for that
    /// start to end (at most its `startupTimeout`): `/mcp auth` in a session, which then
    /// tells the person where the server stands. Must be called within a Tokio runtime.
    pub async fn log_in(
        &self,
        alias: &str,
        timeout: std::time::Duration,
        show_url: impl FnOnce(&str),
    ) -> Result<std::path::PathBuf, McpAuthError> {
        let Some(connection) = self.connections.iter().find(|c| c.alias() == alias) else {
            return Err(McpAuthError::Flow(format!(
                "no MCP server named \"{alias}\""
            )));
        };
        let kept = login(connection.config(), timeout, show_url).await?;
        // Before the start, so that the wait below does not see the old "needs login".
        connection.set_status(ServerStatus::Connecting);
        tokio::spawn(background::start_with_retries(
            connection.clone(),
            self.joined.clone(),
            self.stop.clone(),
            None,
        ));
        connection.wait_started().await;
        Ok(kept)
    }

    /// Stops the background starts and closes every connection.
    pub async fn close(&self) {
        self.stop.cancel();
        join_all(self.connections.iter().map(|c| c.close())).await;
    }
}

/// What permission rules may call the resource tools, known before any server
/// connects (the session's vocabulary is made before its registry).
pub fn rule_vocabulary() -> toolbelt_engine::rules::RuleVocabulary {
    let mut vocabulary = toolbelt_engine::rules::RuleVocabulary::default();
    vocabulary.add(LIST_NAME, LIST_RULE_ALIASES, None);
    vocabulary.add(READ_NAME, READ_RULE_ALIASES, None);
    vocabulary
}

fn register_server(connection: &Arc<McpConnection>, registry: &mut ToolRegistry) {
    let origin = Origin::Mcp {
        server: connection.alias().to_string(),
    };
    for tool in connection.dyn_tools() {
        registry.register(tool, origin.clone());
    }
}

/// Convenience for callers that hold the extra servers of `--mcp-config` as a map.
pub type ServerEntries = BTreeMap<String, toolbelt_config::settings::McpServerSettings>;
