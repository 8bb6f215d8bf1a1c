//! `toolbelt mcp serve`'s workspaces: a [`Workspaces`] that opens a session (settings,
//! roots, registry, rules, approval mode) for the client's roots, exactly as the agent
//! would; `toolbelt_mcp::serve` speaks MCP.
//!
//! Proxying connects the configured MCP servers once, for every connection, and offers
//! their tools too. A server that is toolbelt itself (a Qwen Code `settings.json` that
//! lists `toolbelt mcp serve` is also read by toolbelt) would start another toolbelt,
//! which would start another: `TOOLBELT_MCP_SERVING` is set in the environment of every
//! proxied server, and a server started with it does not proxy.
//!
//! The files that define the tools (settings, manifests, skills, `.lsp.json`) are
//! watched ([`config_watch`]): when one changes, the tools are opened again. A
//! workspace's language servers outlive that while their configuration stays the same;
//! when it changed, the old servers are ended before the new tools are offered.

mod config_watch;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use config_watch::ConfigWatch;
use tokio::sync::{Mutex, watch};
use toolbelt_core::BoxFuture;
use toolbelt_engine::registry::ToolRegistry;
use toolbelt_engine::scheduler::CallRules;
use toolbelt_mcp::McpServers;
use toolbelt_mcp::serve::{Toolset, Workspaces};

use crate::error::ServeError;
use crate::offer::ToolOffer;
use crate::options::{Policy, SessionOptions};
use crate::session::Session;

/// Set for every server a serving toolbelt proxies (see the module documentation).
const SERVING_ENV: &str = "TOOLBELT_MCP_SERVING";

impl ServeWorkspaces {
    /// The workspaces of a server started in `cwd`. A first session checks the settings
    /// and the policy now, so a mistake is a clear error at start, not a failed
    /// `initialize`. With `proxy_mcp`, the configured MCP servers are connected (unless
    /// this toolbelt was started by another `mcp serve`).
    pub async fn start(
        cwd: &Path,
        options: SessionOptions,
        policy: Policy,
        proxy_mcp: bool,
    ) -> Result<Arc<ServeWorkspaces>, ServeError> {
        let first = Session::open(cwd, options.clone())?;
        let mode = policy.approval_mode.as_deref();
        crate::session::approval_mode(mode, policy.yolo, &first.env.settings)?;
        let nested = std::env::var_os(SERVING_ENV).is_some();
        let mcp = if proxy_mcp && nested {
            options.warn.say(
                "not proxying MCP servers: this toolbelt was started by another `toolbelt mcp serve`",
            );
            None
        } else if proxy_mcp {
            let serving = [(SERVING_ENV, "1")];
            // Waits for every server (each within its `startupTimeout`): the proxied
            // tools are what this server lists to its client, and a client lists once.
            let servers = crate::mcp::connect(&first.env, &options.mcp, &serving, Vec::new());
            Some(Arc::new(servers.await?))
        } else {
            None
        };
        let (changes, _) = watch::channel(0u64);
        let config = match ConfigWatch::start(changes.clone()) {
            Ok(config) => Some(config),
            Err(why) => {
                options.warn.say(&format!(
                    "{why}; edits to the settings take effect at the next start"
                ));
                None
            }
        };
        let workspaces = Arc::new(ServeWorkspaces {
            options,
            policy,
            cwd: cwd.to_path_buf(),
            mcp: mcp.clone(),
            cache: Mutex::new(None),
            changes,
            config,
            jobs: Arc::default(),
            lsp: Mutex::default(),
        });
        if let Some(mcp) = mcp {
            tokio::spawn(follow_proxied(mcp, workspaces.clone()));
        }
        Ok(workspaces)
    }
}

/// `mcp serve`'s [`Workspaces`]: opens a session per workspace, the last one cached (a
/// stateless server opens one per request; a discovery command must not run each time).
pub struct ServeWorkspaces {
    options: SessionOptions,
    policy: Policy,
    cwd: PathBuf,
    mcp: Option<Arc<McpServers>>,
    cache: Mutex<Option<Opened>>,
    changes: watch::Sender<u64>,
    /// Follows the files that define the tools; `None` where nothing can be watched.
    config: Option<Arc<ConfigWatch>>,
    /// The background jobs of each workspace (by primary folder), kept across
    /// reopenings; a connection's end ends those its calls started.
    jobs: Arc<Mutex<HashMap<PathBuf, Arc<toolbelt_tools::JobTable>>>>,
    /// The language servers of each workspace (by primary folder), kept across
    /// reopenings while their configuration is the same.
    lsp: Mutex<HashMap<PathBuf, Arc<toolbelt_lsp::Servers>>>,
}

/// The last toolset opened: for which roots, at which generation of the tools.
struct Opened {
    roots: Option<Vec<PathBuf>>,
    generation: u64,
    toolset: Arc<Toolset>,
}

impl Workspaces for ServeWorkspaces {
    fn open<'a>(
        &'a self,
        roots: Option<&'a [PathBuf]>,
    ) -> BoxFuture<'a, Result<Arc<Toolset>, toolbelt_core::EmbedderError>> {
        Box::pin(async move {
            let generation = *self.changes.borrow();
            let mut cache = self.cache.lock().await;
            if let Some(opened) = cache.as_ref()
                && opened.roots.as_deref() == roots
                && opened.generation == generation
            {
                return Ok(opened.toolset.clone());
            }
            let toolset = Arc::new(self.assemble(roots).await?);
            *cache = Some(Opened {
                roots: roots.map(<[PathBuf]>::to_vec),
                generation,
                toolset: toolset.clone(),
            });
            Ok(toolset)
        })
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn connection_ended(&self, calls: &str) {
        // Called from a drop: the stopping runs on a task of its own (each stop waits
        // for the job's processes to end). Without a runtime the process is ending, and
        // the exit's cleanup ends every job anyway.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let jobs = self.jobs.clone();
        let calls = calls.to_string();
        runtime.spawn(async move {
            let tables: Vec<_> = jobs.lock().await.values().cloned().collect();
            stop_started_by(tables, &calls).await;
        });
    }
}

/// Stops the jobs of `tables` that calls beginning with `calls` started.
async fn stop_started_by(tables: Vec<Arc<toolbelt_tools::JobTable>>, calls: &str) {
    for table in tables {
        let stopped = table.stop_started_by(calls).await;
        table.remove_logs_of(calls);
        if !stopped.is_empty() {
            tracing::info!(
                "a connection ended: stopped its background jobs {}",
                stopped.join(", ")
            );
        }
    }
}

impl ServeWorkspaces {
    async fn assemble(&self, roots: Option<&[PathBuf]>) -> Result<Toolset, String> {
        let (primary, more) = match roots {
            Some([first, rest @ ..]) => (first, rest),
            _ => (&self.cwd, &[][..]),
        };
        let mut options = self.options.clone();
        options.more_dirs = more.to_vec();
        // The workspace's background jobs outlive its tools being opened again.
        options.shell_jobs = self.jobs.lock().await.get(primary).cloned();
        options.lsp_servers = self.lsp.lock().await.get(primary).cloned();
        let mut session = Session::open(primary, options).map_err(|e| e.0)?;
        self.jobs
            .lock()
            .await
            .insert(primary.to_path_buf(), session.shell_jobs.clone());
        self.keep_language_servers(primary, &session.lsp).await;
        if let Some(config) = &self.config {
            config.add(config_watch::tool_sources(primary, &session.env.settings));
        }
        session.load_extensions(false).await.map_err(|e| e.0)?;
        self.offer_tools(&mut session);
        let (permissions, mode) = session
            .permissions(&self.policy, "--allowed-tools")
            .map_err(|e| e.to_string())?;
        session.apply_when(mode);
        let when_context = when_context(&session, mode);
        let checkpoints = Some(session.lazy_checkpoints("mcp-serve", true));
        let rules = CallRules::new(permissions, mode, session.hooks(), checkpoints);
        let Session {
            env,
            registry,
            warnings,
            ..
        } = session;
        Ok(Toolset {
            env,
            registry,
            rules,
            warnings,
            when_context: Some(when_context),
        })
    }

    /// Keeps `servers` as the workspace's; the servers they replace (their configuration
    /// changed) are ended now, so no process of theirs outlives the change, and a call
    /// still holding them is told to call again.
    async fn keep_language_servers(&self, primary: &Path, servers: &Arc<toolbelt_lsp::Servers>) {
        let replaced = self
            .lsp
            .lock()
            .await
            .insert(primary.to_path_buf(), servers.clone())
            .filter(|old| !Arc::ptr_eq(old, servers));
        if let Some(old) = replaced {
            tracing::info!(
                "the language servers of {} were configured anew; ending the old ones",
                primary.display()
            );
            old.shutdown().await;
        }
    }

    /// The proxied servers' tools, `task_stop` for the client's background commands (jobs
    /// only: there are no sub-agents here), without the excluded tools and the tool that
    /// asks a person.
    fn offer_tools(&self, session: &mut Session) {
        if let Some(mcp) = &self.mcp {
            mcp.register(&mut session.registry);
        }
        let jobs = crate::subagents::ShellJobTable(session.shell_jobs.clone());
        session.registry.register(
            Arc::new(toolbelt_agent::subagents::TaskStop::shell_jobs(Arc::new(
                jobs,
            ))),
            toolbelt_engine::registry::Origin::BuiltIn,
        );
        ToolOffer::for_policy(&session.env.settings, &self.policy).apply(&mut session.registry);
        // Nothing here can answer the model's questions to a person (the client is the
        // one asking), so the tool that would only ever be refused is not offered.
        session.registry.retain(
            |r| !r.tool.facts().asks_a_person,
            "an MCP client cannot answer questions meant for a person",
        );
    }
}

/// A call can change the mode (exit_plan_mode ends plan mode): the connection evaluates
/// the `when` clauses again with these keys.
fn when_context(
    session: &Session,
    mode: toolbelt_config::ApprovalMode,
) -> toolbelt_mcp::serve::WhenContext {
    let keys_at_open = session.when_context(mode);
    // A `--context approvalMode=...` pair wins over the mode, as at open.
    let pinned = keys_at_open.get("approvalMode") != Some(&serde_json::json!(mode.to_string()));
    Arc::new(move |mode| {
        let mut keys = keys_at_open.clone();
        if !pinned {
            keys.insert("approvalMode".into(), serde_json::json!(mode.to_string()));
        }
        keys
    })
}

/// Lists a proxied server's tools again when it announces a change, then tells every
/// connection. Announcements are coalesced and taken at most every [`CHANGE_PAUSE`]: a
/// server that announces in a loop must not make every connection rebuild its tools
/// (and re-run a discovery command) and flood its client.
async fn follow_proxied(mcp: Arc<McpServers>, workspaces: Arc<ServeWorkspaces>) {
    while let Some(first) = mcp.wait_for_change().await {
        let mut aliases = vec![first];
        for alias in mcp.take_changed().await {
            if !aliases.contains(&alias) {
                aliases.push(alias);
            }
        }
        let mut scratch = ToolRegistry::new();
        for alias in &aliases {
            if let Err(why) = mcp.refresh(alias, &mut scratch).await {
                tracing::warn!("MCP server \"{alias}\": cannot refresh its tools: {why}");
            }
        }
        workspaces.changes.send_modify(|g| *g += 1);
        tokio::time::sleep(CHANGE_PAUSE).await;
    }
}

/// The shortest time between two tool-list changes taken from proxied servers.
const CHANGE_PAUSE: std::time::Duration = std::time::Duration::from_millis(250);
