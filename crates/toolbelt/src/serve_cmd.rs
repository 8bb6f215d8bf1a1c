//! `toolbelt mcp serve`: toolbelt's tools for any MCP client, over stdio or Streamable
//! HTTP. Assembly only: a [`Workspaces`] that opens a session (settings, roots,
//! registry, rules, approval mode) for the client's roots, exactly as the agent would;
//! `toolbelt_mcp::serve` speaks MCP.
//!
//! `--proxy-mcp` connects the configured MCP servers once, for every connection, and
//! offers their tools too. A server that is toolbelt itself (a Qwen Code
//! `settings.json` that lists `toolbelt mcp serve` is also read by toolbelt) would start
//! another toolbelt, which would start another: `TOOLBELT_MCP_SERVING` is set in the
//! environment of every proxied server, and a server started with it does not proxy.
//!
//! The files that define the tools (settings, manifests, skills) are watched
//! ([`config_watch`]): when one changes, the tools are opened again.

mod config_watch;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use config_watch::ConfigWatch;
use tokio::sync::{Mutex, watch};
use tokio_util::sync::CancellationToken;
use toolbelt_core::scheduler::Permissions;
use toolbelt_core::{BoxFuture, RuleList, ToolRegistry};
use toolbelt_mcp::McpServers;
use toolbelt_mcp::serve::http::{self, HttpOptions};
use toolbelt_mcp::serve::{ServeOptions, Toolset, Workspaces};

use crate::cli::{EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, GlobalArgs, ServeArgs};
use crate::session::{self, Session, connect_mcp_with_env, exclude};

/// Set for every server a serving toolbelt proxies (see the module documentation).
const SERVING_ENV: &str = "TOOLBELT_MCP_SERVING";

pub async fn run(global: &GlobalArgs, args: ServeArgs) -> u8 {
    match serve(global, args).await {
        Ok(()) => EXIT_OK,
        Err((code, message)) => {
            eprintln!("toolbelt: {message}");
            code
        }
    }
}

async fn serve(global: &GlobalArgs, args: ServeArgs) -> Result<(), (u8, String)> {
    let usage = |m: String| (EXIT_USAGE, m);
    let cwd = std::env::current_dir()
        .map_err(|e| usage(format!("cannot read the current directory: {e}")))?;
    let http = args
        .http
        .as_deref()
        .map(|addr| http_options(addr, &args))
        .transpose()
        .map_err(usage)?;
    let nested = std::env::var_os(SERVING_ENV).is_some();
    // A first session checks the settings and flags now, so a mistake is a clear error
    // at start, not a failed `initialize`.
    let first = Session::load_in(global, &cwd, &[]).map_err(|e| usage(e.0))?;
    session::approval_mode(
        args.policy.approval_mode.as_deref(),
        args.policy.yolo,
        &first.env.settings,
    )
    .map_err(usage)?;
    let mcp = if args.proxy_mcp && nested {
        eprintln!(
            "toolbelt: warning: not proxying MCP servers: this toolbelt was started by another `toolbelt mcp serve`"
        );
        None
    } else if args.proxy_mcp {
        let servers = connect_mcp_with_env(&first.env, global, &[(SERVING_ENV, "1")]).await;
        Some(Arc::new(servers.map_err(|e| usage(e.0))?))
    } else {
        None
    };
    let (changes, _) = watch::channel(0u64);
    let config = match ConfigWatch::start(changes.clone()) {
        Ok(config) => Some(config),
        Err(why) => {
            eprintln!(
                "toolbelt: warning: {why}; edits to the settings take effect at the next start"
            );
            None
        }
    };
    let workspaces = Arc::new(ServeWorkspaces {
        global: global.clone(),
        args: args.clone(),
        cwd,
        mcp: mcp.clone(),
        cache: Mutex::new(None),
        changes,
        config,
        jobs: Arc::default(),
    });
    if let Some(mcp) = mcp {
        tokio::spawn(follow_proxied(mcp, workspaces.clone()));
    }
    let options = Arc::new(ServeOptions::new(
        args.stateless,
        "The user can allow it by starting `toolbelt mcp serve` with --approval-mode auto-edit (edits) or --approval-mode yolo (everything), with --allowed-tools {tool}, or with a permissions.allow rule in .qwen/settings.json; or by using an MCP client that supports elicitation.",
    ));
    let stop = CancellationToken::new();
    match http {
        None => toolbelt_mcp::serve::serve_stdio(workspaces, options, stop)
            .await
            .map_err(|e| (EXIT_TOOL_ERROR, e)),
        Some(http) => {
            let open_to_local_users = http.token.is_none();
            let served = http::serve(http, workspaces, options, stop, |addr: SocketAddr| {
                eprintln!(
                    "toolbelt: MCP over Streamable HTTP at http://{addr}{}",
                    http::ENDPOINT
                );
                if open_to_local_users {
                    eprintln!(
                        "toolbelt: note: without --auth-token-env, every process and user of this machine can connect"
                    );
                }
            });
            served.await.map_err(|e| (EXIT_USAGE, e.to_string()))
        }
    }
}

/// `--http ADDR:PORT` and the token of `--auth-token-env`.
fn http_options(addr: &str, args: &ServeArgs) -> Result<HttpOptions, String> {
    let addr: SocketAddr = addr
        .parse()
        .map_err(|e| format!("--http {addr}: {e} (write ADDR:PORT, such as 127.0.0.1:8765)"))?;
    let token = match &args.auth_token_env {
        None => None,
        Some(name) => match std::env::var(name) {
            Ok(token) if !token.trim().is_empty() => {
                // Never in a log line, an error or a message to a client.
                toolbelt_core::redact::global().add_secret(token.trim());
                Some(token.trim().to_string())
            }
            _ => {
                return Err(format!(
                    "--auth-token-env {name}: the environment variable {name} is not set or empty"
                ));
            }
        },
    };
    Ok(HttpOptions {
        addr,
        token,
        stateless: args.stateless,
    })
}

/// Opens a session per workspace, the last one cached (a stateless server opens one per
/// request; a discovery command must not run each time).
struct ServeWorkspaces {
    global: GlobalArgs,
    args: ServeArgs,
    cwd: PathBuf,
    mcp: Option<Arc<McpServers>>,
    cache: Mutex<Option<Opened>>,
    changes: watch::Sender<u64>,
    /// Follows the files that define the tools; `None` where nothing can be watched.
    config: Option<Arc<ConfigWatch>>,
    /// The background jobs of each workspace (by primary folder), kept across
    /// reopenings; a connection's end ends those its calls started.
    jobs: Arc<Mutex<HashMap<PathBuf, Arc<toolbelt_tools::JobTable>>>>,
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
    ) -> BoxFuture<'a, Result<Arc<Toolset>, String>> {
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
        // The workspace's background jobs outlive its tools being opened again.
        let jobs = self.jobs.lock().await.get(primary).cloned();
        let mut session =
            Session::load_keeping_jobs(&self.global, primary, more, jobs).map_err(|e| e.0)?;
        self.jobs
            .lock()
            .await
            .insert(primary.to_path_buf(), session.shell_jobs.clone());
        if let Some(config) = &self.config {
            config.add(config_watch::tool_sources(primary, &session.env.settings));
        }
        session
            .load_extensions_with(&self.global, false)
            .await
            .map_err(|e| e.0)?;
        if let Some(mcp) = &self.mcp {
            mcp.register(&mut session.registry);
            session.registry.apply_settings(&session.env.settings);
        }
        // The client stops the background commands it started with `task_stop` (jobs
        // only: there are no sub-agents here).
        session.registry.register(
            Arc::new(toolbelt_agent::subagents::TaskStop::shell_jobs(Arc::new(
                crate::agent_subagents::ShellJobTable(session.shell_jobs.clone()),
            ))),
            toolbelt_core::Origin::BuiltIn,
        );
        exclude(&mut session.registry, &self.args.policy.exclude_tools);
        // Nothing here can answer the model's questions to a person (the client is the
        // one asking), so the tool that would only ever be refused is not offered.
        session.registry.retain(
            |r| r.name != "ask_user_question",
            "an MCP client cannot answer questions meant for a person",
        );
        let mut permissions = Permissions::from_rules(session.rules.clone());
        for tool in &self.args.policy.allowed_tools {
            permissions.add(RuleList::Allow, tool);
        }
        // A rule that does not parse is an error, as in the settings: dropping it would run
        // the session under other rules than the ones given.
        if let Some(bad) = permissions.invalid().first() {
            return Err(format!(
                "--allowed-tools: `{bad}` is not a permission rule (write `Tool` or `Tool(specifier)`, with balanced parentheses)"
            ));
        }
        let mode = session::approval_mode(
            self.args.policy.approval_mode.as_deref(),
            self.args.policy.yolo,
            &session.env.settings,
        )?;
        session.apply_when(mode);
        // A call can change the mode (exit_plan_mode ends plan mode): the connection
        // evaluates the `when` clauses again with these keys.
        let when_context: toolbelt_mcp::serve::WhenContext = {
            let keys_at_open = session.when_context(mode);
            // A `--context approvalMode=...` pair wins over the mode, as at open.
            let pinned =
                keys_at_open.get("approvalMode") != Some(&serde_json::json!(mode.to_string()));
            Arc::new(move |mode| {
                let mut keys = keys_at_open.clone();
                if !pinned {
                    keys.insert("approvalMode".into(), serde_json::json!(mode.to_string()));
                }
                keys
            })
        };
        let Session {
            env,
            registry,
            warnings,
            ..
        } = session;
        Ok(Toolset {
            env,
            registry,
            permissions,
            mode,
            warnings,
            when_context: Some(when_context),
        })
    }
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
