//! One MCP server: starting it, the handshake, its tools, calls, and restarting it when
//! it died.
//!
//! A connection is shared (`Arc`) by every tool of its server. The live rmcp client is
//! a `Link` behind a plain mutex that is held only to look at it or swap it, never
//! across a wait, so calls run concurrently and a slow restart blocks nobody who does
//! not need the server. A server that closes the connection during a call fails that
//! call; the next call starts it again (up to [`RECONNECT_ATTEMPTS`] tries) in a task of
//! its own that every waiting call shares, and each call waits for it with its own
//! cancellation: a cancelled call ends at once, and closing the session does not wait.
//!
//! What a server writes to stderr goes to its log file and never into a status, an
//! error or a result: it is the server's text, and may hold what it was configured
//! with. Errors say where the log is. Every text that leaves is masked with
//! [`toolbelt_config::redact`]. An outage is logged once, not on every call.

mod call;
mod listen;

pub(crate) use call::MAX_INPUT_ROUNDS;

use crate::error::McpError;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use rmcp::{Peer, RoleClient, ServiceError};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use toolbelt_config::redact::redact;
use toolbelt_core::Tool;

use crate::config::{ServerConfig, Transport};
use crate::events::ServerEvents;
use crate::start::{Client, StartError, start};
use crate::status::ServerStatus;
use crate::tool::McpTool;

/// How many times a call tries to start a server that died before giving up.
pub(crate) const RECONNECT_ATTEMPTS: u32 = 3;

/// A restart under way, shared by every call that waits for it.
pub(crate) type Restart = Shared<BoxFuture<'static, Result<Peer<RoleClient>, String>>>;

/// The connection to the server right now.
pub(crate) enum Link {
    /// Never connected, or it died and no restart is under way.
    Down,
    Up(Client),
    Restarting(Restart),
    /// Between two start attempts of the session's background start (`background`):
    /// calls fail at once with this reason instead of starting a second copy.
    Backoff(String),
    /// [`McpConnection::close`] was called: nothing starts again.
    Closed,
}

/// Why a call could not get the server.
pub(crate) enum Unavailable {
    Cancelled,
    Failed(String),
}

/// One server: its rmcp client, status and tools, restarted after a crash.
pub struct McpConnection {
    config: ServerConfig,
    /// The server's stderr (stdio servers), never shown to the model.
    log_path: PathBuf,
    events: ServerEvents,
    /// Held only to look or swap, never across an `.await`.
    link: Mutex<Link>,
    /// A watch, so that a caller can wait for a start to end (`background`).
    status: tokio::sync::watch::Sender<ServerStatus>,
    tools: Mutex<Vec<Arc<McpTool>>>,
    /// Resources and prompts of the last listing (see `catalog`).
    pub(crate) catalog: Mutex<crate::catalog::Catalog>,
    /// The process of the stdio server being started, killed when its handshake times out.
    starting_pid: Mutex<Option<u32>>,
    /// Cancelled by [`McpConnection::close`]: a start under way stops at once (its
    /// process may have been spawned but not yet recorded when `close` looked).
    closing: CancellationToken,
    /// The current outage was logged: one line per server per outage, not per call.
    outage_logged: AtomicBool,
    /// The last start failed because the server wants an OAuth login.
    needs_login: AtomicBool,
}

impl McpConnection {
    /// A connection to `config`, not yet made; stdio stderr goes under `log_dir`, list changes are announced on `changes`.
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
        config
            .transport
            .register_secrets(toolbelt_config::redact::global());
        config
            .oauth
            .register_secrets(toolbelt_config::redact::global());
        Arc::new(McpConnection {
            events: ServerEvents::new(&config, changes),
            log_path: log_dir.join(format!("{file_name}.log")),
            config,
            link: Mutex::new(Link::Down),
            status: tokio::sync::watch::Sender::new(ServerStatus::Connecting),
            tools: Mutex::new(Vec::new()),
            catalog: Mutex::new(Default::default()),
            starting_pid: Mutex::new(None),
            closing: CancellationToken::new(),
            outage_logged: AtomicBool::new(false),
            needs_login: AtomicBool::new(false),
        })
    }

    /// The configuration it was made from.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// What the server tells us and asks (its [`ServerEvents`]).
    pub(crate) fn events(&self) -> &ServerEvents {
        &self.events
    }

    /// The server's alias.
    pub fn alias(&self) -> &str {
        &self.config.alias
    }

    /// Where a stdio server's stderr goes.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// Where it stands now.
    pub fn status(&self) -> ServerStatus {
        self.status.borrow().clone()
    }

    /// Follows the status (to wait for a start to end).
    pub fn watch_status(&self) -> tokio::sync::watch::Receiver<ServerStatus> {
        self.status.subscribe()
    }

    /// Masked, since a reason may quote a URL or a command line.
    pub(crate) fn set_status(&self, status: ServerStatus) {
        self.status.send_replace(status.masked());
    }

    pub(crate) fn link(&self) -> std::sync::MutexGuard<'_, Link> {
        self.link.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The server is up: status, and the next outage will be logged again.
    fn mark_connected(&self) {
        self.set_status(ServerStatus::Connected);
        self.outage_logged.store(false, Ordering::SeqCst);
    }

    /// The server is not usable: status, and one warning per outage. One that wants an
    /// OAuth login is "needs login", not failed.
    fn mark_failed(&self, why: &str) {
        if self.needs_login.load(Ordering::SeqCst) {
            let hint = format!("run `toolbelt mcp auth {}`", self.config.alias);
            self.set_status(ServerStatus::NeedsLogin(hint));
            return;
        }
        let why = self.with_log_hint(why);
        if !self.outage_logged.swap(true, Ordering::SeqCst) {
            tracing::warn!(
                "MCP server \"{}\" is not available: {}",
                self.config.alias,
                redact(&why)
            );
        }
        self.set_status(ServerStatus::Failed(why));
    }

    /// The tools of the last successful listing, after `includeTools`/`excludeTools`.
    pub fn tools(&self) -> Vec<Arc<McpTool>> {
        self.tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Starts the server, does the handshake and lists its tools, all within the
    /// connect timeout. The outcome is also the connection's status; the caller reports
    /// a failure (this counts as the outage's one warning).
    pub async fn connect(self: &Arc<Self>) -> Result<(), McpError> {
        self.connect_announcing(None)
            .await
            .map_err(McpError::Connect)
    }

    /// [`McpConnection::connect`]; when it is up, `joined` is told before the status
    /// says so, so that whoever sees "connected" finds it announced.
    pub(crate) async fn connect_announcing(
        self: &Arc<Self>,
        joined: Option<&crate::background::Joined>,
    ) -> Result<(), String> {
        self.set_status(ServerStatus::Connecting);
        let starting = tokio::time::timeout(self.config.startup_timeout, async {
            let client = self.start().await?;
            let peer = client.peer().clone();
            self.install(client)?;
            self.listen_for_changes(&peer).await;
            self.list_and_store(&peer).await
        });
        let outcome = tokio::select! {
            outcome = starting => outcome,
            () = self.closing.cancelled() => {
                // Dropping the start drops a child rmcp had not handed over yet (it
                // kills it); one already recorded is killed here with its group.
                self.kill_starting();
                Ok(Err("the connection was closed".to_string()))
            }
        };
        // Whether it answered or not, the process is no longer "being started".
        let outcome = match outcome {
            Ok(result) => {
                self.starting_pid
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                result
            }
            Err(_) => {
                self.kill_starting();
                Err(self.startup_timed_out())
            }
        };
        match &outcome {
            Ok(()) => {
                if let Some(joined) = joined {
                    (joined.lock().unwrap_or_else(PoisonError::into_inner))
                        .push(self.alias().to_string());
                }
                self.mark_connected();
            }
            Err(why) => {
                // A client that answered the handshake but not tools/list is dropped.
                let mut link = self.link();
                if matches!(*link, Link::Up(_)) {
                    *link = Link::Down;
                }
                drop(link);
                self.outage_logged.store(true, Ordering::SeqCst);
                self.mark_failed(why);
            }
        }
        outcome.map_err(|why| redact(&self.with_log_hint(&why)))
    }

    /// The live client's peer, or why there is none.
    pub(crate) fn live_peer(&self) -> Result<Peer<RoleClient>, String> {
        match &*self.link() {
            Link::Up(client) if !client.is_closed() => Ok(client.peer().clone()),
            Link::Closed => Err("the connection was closed".into()),
            _ => Err("the server closed the connection after the handshake".into()),
        }
    }

    /// The protocol revision the live client speaks with the server (`2026-07-28`,
    /// `2025-11-25`, ...), `None` when it is not connected.
    pub fn protocol_version(&self) -> Option<String> {
        match &*self.link() {
            Link::Up(client) if !client.is_closed() => client
                .peer()
                .peer_info()
                .map(|info| info.protocol_version.as_str().to_string()),
            _ => None,
        }
    }

    /// Makes `client` the live one, unless the connection was closed meanwhile.
    fn install(&self, client: Client) -> Result<(), String> {
        let mut link = self.link();
        if matches!(*link, Link::Closed) {
            return Err("the connection was closed".into());
        }
        *link = Link::Up(client);
        Ok(())
    }

    /// Lists the tools again (after a `list_changed` notification), and the resources
    /// and prompts.
    pub async fn refresh_tools(self: &Arc<Self>) -> Result<(), McpError> {
        let peer = match self.peer(&CancellationToken::new()).await {
            Ok(peer) => peer,
            Err(Unavailable::Failed(why)) => return Err(McpError::Unavailable(why)),
            Err(Unavailable::Cancelled) => return Err(McpError::Cancelled),
        };
        // A listing is bounded like the first one (`startupTimeout`): the session waits
        // for it before its next model request.
        match tokio::time::timeout(self.config.startup_timeout, self.list_and_store(&peer)).await {
            Ok(result) => result.map_err(McpError::List),
            Err(_) => Err(McpError::ListTimeout(human_duration(
                self.config.startup_timeout,
            ))),
        }
    }

    pub(crate) async fn list_and_store(
        self: &Arc<Self>,
        peer: &Peer<RoleClient>,
    ) -> Result<(), String> {
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
        self.list_catalog(peer).await;
        Ok(())
    }

    /// Starts the transport and does the `initialize` handshake.
    async fn start(&self) -> Result<Client, String> {
        let started = start(
            &self.config,
            &self.events,
            &self.log_path,
            &self.starting_pid,
        )
        .await;
        let needs_login = matches!(started, Err(StartError::NeedsLogin(_)));
        self.needs_login.store(needs_login, Ordering::SeqCst);
        started.map_err(|e| match e {
            StartError::NeedsLogin(why) | StartError::Failed(why) => why,
            StartError::OlderRevisions => "no protocol revision in common".into(),
        })
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
        // The server leads its own process group (`process_group(0)`): kill the group,
        // so whatever it started (`npx` → node) goes too. The pid is our own child whose
        // handle was dropped a moment ago, and a pid is not reused within microseconds.
        if let Some(pid) = pid {
            toolbelt_process::signal_group(pid, rustix::process::Signal::KILL);
        }
    }

    /// The live client's peer. When the server died, starts it again (or joins the
    /// restart under way) and waits for that, or for `cancel`, whichever comes first.
    pub(crate) async fn peer(
        self: &Arc<Self>,
        cancel: &CancellationToken,
    ) -> Result<Peer<RoleClient>, Unavailable> {
        let restart = {
            let mut link = self.link();
            match &*link {
                Link::Up(client) if !client.is_closed() => return Ok(client.peer().clone()),
                Link::Closed => {
                    return Err(Unavailable::Failed("the connection was closed".into()));
                }
                Link::Backoff(why) => return Err(Unavailable::Failed(why.clone())),
                Link::Restarting(restart) => restart.clone(),
                Link::Up(_) | Link::Down => {
                    let restart = self.spawn_restart();
                    *link = Link::Restarting(restart.clone());
                    restart
                }
            }
        };
        tokio::select! {
            outcome = restart => outcome.map_err(Unavailable::Failed),
            _ = cancel.cancelled() => Err(Unavailable::Cancelled),
        }
    }

    /// A task that starts the server again, up to [`RECONNECT_ATTEMPTS`] times, each
    /// within the connect timeout. It runs on its own, so a cancelled caller does not
    /// stop a restart that others wait for; it holds no lock while it waits.
    fn spawn_restart(self: &Arc<Self>) -> Restart {
        let this = Arc::clone(self);
        let task = tokio::spawn(async move { this.restart().await });
        async move {
            match task.await {
                Ok(outcome) => outcome,
                Err(e) => Err(format!("the restart stopped: {e}")),
            }
        }
        .boxed()
        .shared()
    }

    async fn restart(&self) -> Result<Peer<RoleClient>, String> {
        let mut last = String::from("it is not connected");
        for _ in 0..RECONNECT_ATTEMPTS {
            if matches!(*self.link(), Link::Closed) {
                return Err("the connection was closed".into());
            }
            let attempt = tokio::time::timeout(self.config.startup_timeout, self.start()).await;
            let started = match attempt {
                Ok(started) => {
                    self.starting_pid
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .take();
                    started
                }
                Err(_) => {
                    self.kill_starting();
                    Err(self.startup_timed_out())
                }
            };
            match started {
                Ok(client) => {
                    let peer = client.peer().clone();
                    self.install(client)?;
                    self.listen_for_changes(&peer).await;
                    self.mark_connected();
                    return Ok(peer);
                }
                Err(why) => last = why,
            }
        }
        let why = format!("it could not be restarted after {RECONNECT_ATTEMPTS} attempts: {last}");
        let mut link = self.link();
        if matches!(*link, Link::Restarting(_)) {
            *link = Link::Down;
        }
        drop(link);
        self.mark_failed(&why);
        Err(redact(&self.with_log_hint(&why)))
    }

    /// Why a start took too long, naming the setting.
    fn startup_timed_out(&self) -> String {
        format!(
            "no answer within {} (startupTimeout)",
            human_duration(self.config.startup_timeout)
        )
    }

    /// Where the server's log is (stdio servers). Never its content: that is the
    /// server's text and may hold what it was configured with (see the module docs).
    pub(crate) fn with_log_hint(&self, why: &str) -> String {
        if !matches!(self.config.transport, Transport::Stdio { .. }) || why.contains("(server log ")
        {
            return why.to_string();
        }
        format!("{why} (server log {})", self.log_path.display())
    }

    /// The registered tools, as `dyn Tool`.
    pub fn dyn_tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools()
            .into_iter()
            .map(|t| t as Arc<dyn Tool>)
            .collect()
    }

    /// Closes the connection (a stdio server gets its stdin closed, then is killed).
    /// Does not wait for a restart under way: that one finds the link closed and stops.
    pub async fn close(&self) {
        self.closing.cancel();
        let previous = std::mem::replace(&mut *self.link(), Link::Closed);
        if let Link::Up(mut client) = previous {
            let _ = client.close_with_timeout(Duration::from_secs(2)).await;
        }
        self.kill_starting();
    }
}

pub(crate) fn service_error_text(e: &ServiceError) -> String {
    match e {
        ServiceError::McpError(e) => format!("MCP error {}: {}", e.code.0, e.message),
        other => other.to_string(),
    }
}

/// `2 s`, `1.5 s`, `10 min`.
pub(crate) fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(60_000) && ms >= 60_000 {
        format!("{} min", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}
