//! A session's MCP servers: connecting the configured ones, and following their tool
//! lists during an agent's run.
//!
//! An agent session does not wait for its servers ([`start`]): each comes up in the
//! background, and its tools join at the next model request, with a note to the model
//! ([`McpNotes`]). It waits only for the servers its first prompt needs
//! ([`needed_servers`]), for those a declared tool is bound to (it is registered over
//! their tool at start), and for a stream-JSON client's own (`sdk`) servers, which live
//! in the client and whose tools the client expects in `system/init`; with
//! `mcp.waitAtStart`, for every server. Listings
//! (`toolbelt mcp list`, `tools list`) and `mcp serve` wait for every server
//! ([`connect`]): what they show or offer is the servers' tools. A subscribed resource
//! a server says changed is named to the model at its next request ([`ResourceUpdates`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use toolbelt_agent::{ToolSource, TurnEvents};
use toolbelt_core::{BoxFuture, ToolEnvironment};
use toolbelt_engine::{registry::Origin, registry::ToolRegistry};
use toolbelt_mcp::{ConfigProblem, McpServers, ServerConfig};

use crate::offer::ToolOffer;
use crate::options::McpOptions;
use crate::paths::log_dir;
use crate::session::SetupError;

/// Connects every MCP server of the settings and of `--mcp-config`, filtered by
/// `--allowed-mcp-server-names`, plus `more` configured elsewhere (a stream-JSON client's
/// own), with `extra_env` set for every stdio server. Stdio servers log to
/// `<toolbelt home>/logs/<project>/mcp/<alias>.log`.
pub async fn connect(
    env: &ToolEnvironment,
    options: &McpOptions,
    extra_env: &[(&str, &str)],
    more: Vec<ServerConfig>,
) -> Result<McpServers, SetupError> {
    let (servers, problems, log_dir) = configured(env, options, extra_env, more)?;
    Ok(McpServers::connect_all(servers, problems, &log_dir).await)
}

/// The same servers as [`connect`], started in the background (see the module's
/// documentation); waits only for the `sdk` servers, those `prompt` needs and those
/// declared tools are `bound` to.
pub(crate) async fn start(
    env: &ToolEnvironment,
    options: &McpOptions,
    more: Vec<ServerConfig>,
    prompt: &str,
    bound: &[String],
) -> Result<McpServers, SetupError> {
    let (servers, problems, log_dir) = configured(env, options, &[], more)?;
    let aliases: Vec<String> = servers.iter().map(|s| s.alias.clone()).collect();
    let mut waited = if env.settings.mcp.wait_at_start {
        aliases.clone()
    } else {
        needed_servers(prompt, &aliases)
    };
    waited.extend(bound.iter().filter(|b| aliases.contains(b)).cloned());
    waited.extend(
        (servers.iter())
            .filter(|s| matches!(s.transport, toolbelt_mcp::Transport::Sdk { .. }))
            .map(|s| s.alias.clone()),
    );
    // The others start once the session is set up (`McpServers::launch` in `agent`).
    let servers = McpServers::start(servers, problems, &log_dir, &waited);
    servers.wait_started(&waited).await;
    Ok(servers)
}

/// The configured server `alias` (as [`connect`] would connect it), for a login or a
/// logout (`toolbelt mcp auth`, `toolbelt mcp logout`).
pub fn server_named(
    env: &ToolEnvironment,
    options: &McpOptions,
    alias: &str,
) -> Result<ServerConfig, SetupError> {
    let (servers, problems, _) = configured(env, options, &[], Vec::new())?;
    if let Some(problem) = problems.iter().find(|p| p.alias == alias) {
        return Err(SetupError(format!(
            "MCP server \"{alias}\" cannot be used: {}",
            problem.reason
        )));
    }
    (servers.into_iter().find(|s| s.alias == alias))
        .ok_or_else(|| SetupError(format!("no MCP server named \"{alias}\" is configured")))
}

/// The servers a prompt needs before it is sent (see [`toolbelt_mcp::servers_named`]).
pub(crate) fn needed_servers(prompt: &str, aliases: &[String]) -> Vec<String> {
    toolbelt_mcp::servers_named(prompt, aliases)
}

type Configured = (Vec<ServerConfig>, Vec<ConfigProblem>, PathBuf);

/// Every server to connect, the entries that are wrong, and where stdio servers log.
fn configured(
    env: &ToolEnvironment,
    options: &McpOptions,
    extra_env: &[(&str, &str)],
    more: Vec<ServerConfig>,
) -> Result<Configured, SetupError> {
    let mut extra = toolbelt_mcp::ServerEntries::new();
    for arg in &options.mcp_config {
        extra.extend(toolbelt_mcp::parse_mcp_config(arg).map_err(|e| SetupError(e.to_string()))?);
    }
    let allowed = &options.allowed_mcp_server_names;
    let project_root = env
        .roots
        .primary()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    // Claude's `--strict-mcp-config`: the settings' servers are left out.
    let mut settings = std::borrow::Cow::Borrowed(&*env.settings);
    if options.strict {
        settings.to_mut().mcp_servers.clear();
    }
    let (mut servers, problems) = toolbelt_mcp::configured_servers(
        &settings,
        &extra,
        (!allowed.is_empty()).then_some(allowed.as_slice()),
        &project_root,
    );
    // toolbelt's own `mcp serve` in the settings (README's client configuration for
    // Qwen Code, read here too) would offer this session's tools a second time: left
    // out, with a note. One named by `--mcp-config` was asked for by name: connected.
    let own_exe = std::env::current_exe().ok();
    servers.retain(|server| {
        let own = !extra.contains_key(&server.alias)
            && server.is_toolbelt_serve(own_exe.as_deref());
        if own {
            tracing::warn!(
                "MCP server \"{}\" left out: it is toolbelt's own `toolbelt mcp serve`, whose tools this session has already",
                server.alias
            );
        }
        !own
    });
    for server in &mut servers {
        if let toolbelt_mcp::Transport::Stdio { env, .. } = &mut server.transport {
            for (key, value) in extra_env {
                env.insert(key.to_string(), value.to_string());
            }
        }
    }
    servers.extend(more);
    // Every server is told the workspace's roots (`roots/list`); OAuth tokens are kept
    // in the store.
    let token_dir = crate::paths::toolbelt_home().join("mcp-oauth");
    for server in &mut servers {
        server.roots = env.roots.roots().to_vec();
        server.oauth.store_dir = Some(token_dir.clone());
    }
    let project = env.roots.primary().unwrap_or(Path::new("/"));
    // What a server asks (elicitation, sampling) goes to the session's person and model.
    for server in &mut servers {
        server.asks = env.server_asks.clone();
    }
    Ok((servers, problems, log_dir(project).join("mcp")))
}

/// The MCP servers as the agent's [`ToolSource`]: a server that came up adds the tools
/// it listed; a server's announced change, or a call to a tool named after a server but
/// not (yet) registered, lists that server's tools again; the session's [`ToolOffer`]
/// applies to the new list as it did at start-up. A server whose tools join is named in
/// `notes`, for the model.
pub(crate) struct McpToolSource {
    pub(crate) mcp: Arc<McpServers>,
    pub(crate) offer: ToolOffer,
    pub(crate) notes: McpNotes,
}

impl ToolSource for McpToolSource {
    fn refresh<'a>(
        &'a self,
        current: &'a ToolRegistry,
        unknown: &'a [String],
    ) -> BoxFuture<'a, Option<ToolRegistry>> {
        Box::pin(async move {
            let joined = self.mcp.take_joined();
            let mut aliases = self.mcp.take_changed().await;
            for name in unknown {
                if let Some(alias) = self.mcp.server_of_tool_name(name)
                    && !aliases.iter().any(|a| a == alias)
                {
                    aliases.push(alias.to_string());
                }
            }
            if aliases.is_empty() && joined.is_empty() {
                return None;
            }
            let mut next = current.clone();
            for alias in &joined {
                self.mcp.adopt(alias, &mut next);
            }
            for alias in &aliases {
                match self.mcp.refresh(alias, &mut next).await {
                    Ok(()) => tracing::info!("MCP server \"{alias}\": tools listed again"),
                    Err(why) => {
                        tracing::warn!("MCP server \"{alias}\": cannot refresh its tools: {why}")
                    }
                }
            }
            self.offer.apply(&mut next);
            for alias in joined.iter().chain(&aliases) {
                self.notes.joined(alias, current, &next);
            }
            Some(next)
        })
    }
}

/// Notes to the model about servers whose tools joined since its last request,
/// delivered with the next one (the agent's [`TurnEvents`]).
#[derive(Clone, Default)]
pub(crate) struct McpNotes(Arc<Mutex<Vec<String>>>);

/// At most this many tool names in one note; the model has the declarations anyway.
const NAMES_IN_A_NOTE: usize = 20;

impl McpNotes {
    /// Notes `alias` when `next` offers tools of it and `before` offered none (a server
    /// that came up, or whose first tools arrived); once per server and change.
    fn joined(&self, alias: &str, before: &ToolRegistry, next: &ToolRegistry) {
        let origin = Origin::Mcp {
            server: alias.to_string(),
        };
        let names = |r: &ToolRegistry| -> Vec<String> {
            (r.all().filter(|t| t.origin == origin))
                .map(|t| t.name.clone())
                .collect()
        };
        let now = names(next);
        if now.is_empty() || !names(before).is_empty() {
            return;
        }
        let mut list = now[..now.len().min(NAMES_IN_A_NOTE)].join(", ");
        if now.len() > NAMES_IN_A_NOTE {
            list.push_str(&format!(" and {} more", now.len() - NAMES_IN_A_NOTE));
        }
        let note = format!(
            "<system-reminder>The MCP server \"{alias}\" has finished starting: its tools are now available ({list}).</system-reminder>"
        );
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(note);
    }
}

impl TurnEvents for McpNotes {
    fn take(&self) -> Option<String> {
        let notes = std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner));
        (!notes.is_empty()).then(|| notes.join("\n"))
    }
}

/// Reminders, at the model's next request, of subscribed MCP resources whose server
/// said they changed (see `toolbelt_mcp`'s catalog): the model read them, and what it
/// read may be stale.
pub(crate) struct ResourceUpdates(pub(crate) Arc<McpServers>);

impl TurnEvents for ResourceUpdates {
    fn take(&self) -> Option<String> {
        let notes: Vec<String> = (self.0.take_resource_updates().into_iter())
            .map(|(alias, uri)| {
                format!(
                    "<system-reminder>The MCP server \"{alias}\" says the resource {uri} changed since it was read; read it again if its current content matters.</system-reminder>"
                )
            })
            .collect();
        (!notes.is_empty()).then(|| notes.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::needed_servers;

    #[test]
    fn a_prompt_needs_the_servers_of_its_prompt_command_and_its_resources() {
        let aliases = ["docs".to_string(), "slow".to_string(), "db".to_string()];
        let needed = |prompt: &str| needed_servers(prompt, &aliases);
        assert_eq!(needed("/slow:greet name=Ann"), ["slow"]);
        assert_eq!(needed("  /docs:x"), ["docs"]);
        assert_eq!(
            needed("summarize @db:table://users and @docs:readme"),
            ["docs", "db"]
        );
        assert!(needed("/slowly:greet").is_empty());
        assert!(needed("read src/slow:1 and mail@slow.example").is_empty());
        assert!(needed("plain").is_empty());
    }
}
