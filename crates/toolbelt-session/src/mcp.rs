//! A session's MCP servers: connecting the configured ones, and following their tool
//! lists during an agent's run.

use std::path::Path;
use std::sync::Arc;

use toolbelt_agent::ToolSource;
use toolbelt_core::{BoxFuture, ToolEnvironment, ToolRegistry};
use toolbelt_mcp::{McpServers, ServerConfig};

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
    let mut extra = toolbelt_mcp::ServerEntries::new();
    for arg in &options.mcp_config {
        extra.extend(toolbelt_mcp::parse_mcp_config(arg).map_err(SetupError)?);
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
    let project = env.roots.primary().unwrap_or(Path::new("/"));
    Ok(McpServers::connect_all(servers, problems, &log_dir(project).join("mcp")).await)
}

/// The MCP servers as the agent's [`ToolSource`]: a server's announced change, or a call
/// to a tool named after a server but not (yet) registered, lists that server's tools
/// again; the session's [`ToolOffer`] applies to the new list as it did at start-up.
pub(crate) struct McpToolSource {
    pub(crate) mcp: Arc<McpServers>,
    pub(crate) offer: ToolOffer,
}

impl ToolSource for McpToolSource {
    fn refresh<'a>(
        &'a self,
        current: &'a ToolRegistry,
        unknown: &'a [String],
    ) -> BoxFuture<'a, Option<ToolRegistry>> {
        Box::pin(async move {
            let mut aliases = self.mcp.take_changed().await;
            for name in unknown {
                if let Some(alias) = self.mcp.server_of_tool_name(name)
                    && !aliases.iter().any(|a| a == alias)
                {
                    aliases.push(alias.to_string());
                }
            }
            if aliases.is_empty() {
                return None;
            }
            let mut next = current.clone();
            for alias in &aliases {
                match self.mcp.refresh(alias, &mut next).await {
                    Ok(()) => tracing::info!("MCP server \"{alias}\": tools listed again"),
                    Err(why) => {
                        tracing::warn!("MCP server \"{alias}\": cannot refresh its tools: {why}")
                    }
                }
            }
            self.offer.apply(&mut next);
            Some(next)
        })
    }
}
