//! One running language server: its process or connection, the JSON-RPC framing,
//! requests with a time limit, the documents it has open, the diagnostics it published
//! and the work it reported in progress.
//!
//! Framing is `lsp-server`'s `Message::read`/`write` (Content-Length headers, the
//! protocol's JSON-RPC shapes) on plain threads (`client/threads.rs`), one reading what
//! the server writes and one writing to it, over its pipes or a socket
//! (`transport.rs`): the crate is blocking, small and maintained with rust-analyzer, and
//! the threads keep a server that stops reading or writing from ever blocking the async
//! runtime. `async-lsp` would bring a tower stack toolbelt has no other use for.
//!
//! A server toolbelt starts runs in its own process group with toolbelt's owner marker,
//! so ending the client (shutdown, exit, then the group kill and the owner's sweep)
//! leaves nothing behind, whatever the server started. A server toolbelt only connected
//! to is not toolbelt's: ending the client closes the connection and nothing more.
//!
//! A server answers before it has loaded the project: typescript-language-server routes
//! questions to a syntax-only server while tsserver loads, and finds references in the
//! open file alone (and clangd finds references in the files it indexed so far). So
//! the first question after the first file is opened waits
//! ([`LspClient::wait_until_loaded`]) until the server published diagnostics (which
//! tsserver computes on the loaded project) or reported work, and no work it reported
//! (`$/progress`: tsserver's project loading, clangd's index) is still going on; at most
//! `startupTimeout`.
//!
//! Some servers say nothing while they index: pyright reports no progress, publishes
//! nothing for files not open, and answers `workspace/symbol` with an empty list until
//! it has read its settings and listed the project (its log line "Found N source
//! files", taken as its word that it is ready). So an empty answer from a server that
//! started less than `startupTimeout` ago and may still be busy ([`LspClient::busy`])
//! is asked again before it is believed (`indexing::until_found`).

mod threads;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use lsp_server::{Message, Notification, Request, RequestId};
use lsp_types::Diagnostic;
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};
use toolbelt_process::{KILL_GRACE, Owner};
use url::Url;

use crate::config::ServerConfig;
use crate::error::LspError;
use crate::transport::{Channel, Socket};
pub(crate) use threads::read_available;

type Reply = Result<Value, String>;

/// A server without signs of readiness that said nothing for this long is taken to have
/// settled (pyright's longest silence while it loads a small project is a few hundred ms).
const QUIET: Duration = Duration::from_secs(2);

/// What the reader thread and the callers share.
struct Shared {
    pending: Mutex<HashMap<i32, oneshot::Sender<Reply>>>,
    diagnostics: Mutex<HashMap<Url, Vec<Diagnostic>>>,
    progress: Mutex<threads::Progress>,
    /// Told when diagnostics or progress arrive, and when the server dies.
    changed: Notify,
    /// Why the server is gone (`None` while it runs).
    dead: Mutex<Option<String>>,
    stderr_tail: Mutex<Vec<u8>>,
    settings: Option<Value>,
    /// Set by the waiter thread once the server process exited (and was reaped).
    exited: Mutex<bool>,
}

impl Shared {
    fn die(&self, why: String) {
        let mut dead = lock(&self.dead);
        if dead.is_none() {
            *dead = Some(why.clone());
        }
        drop(dead);
        for (_, tx) in lock(&self.pending).drain() {
            let _ = tx.send(Err(why.clone()));
        }
        self.changed.notify_waiters();
    }
}

/// A language server toolbelt started or connected to, and talks to.
pub struct LspClient {
    name: String,
    shared: Arc<Shared>,
    out: mpsc::Sender<Message>,
    next_id: AtomicI32,
    /// Open documents and their versions.
    open: tokio::sync::Mutex<HashMap<Url, (i32, String)>>,
    /// The `capabilities` of the server's `initialize` answer.
    capabilities: std::sync::OnceLock<Value>,
    owner: Owner,
    /// The process group of the server toolbelt started; `None` when it only connected.
    pgid: Option<u32>,
    /// The connection to a socket server.
    socket: Option<Socket>,
    /// Set once the server loaded its project (or `startupTimeout` passed waiting).
    loaded: AtomicBool,
    /// When the server was started (or connected to).
    started: Instant,
    startup_timeout: Duration,
    shutdown_timeout: Duration,
    request_timeout: Duration,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl LspClient {
    /// Starts the server and runs the `initialize` handshake on `root`, within the
    /// server's `startupTimeout`. On failure nothing of the server is left running.
    pub async fn start(config: &ServerConfig, root: &Path) -> Result<Arc<LspClient>, LspError> {
        let owner = Owner::new();
        let channel = crate::transport::open(config, root, &owner)
            .await
            .map_err(LspError::Launch)?;
        let client = Arc::new(Self::run(config, channel, owner).map_err(LspError::Launch)?);
        let root_uri = Url::from_directory_path(root)
            .map_err(|()| LspError::NotADirectory(root.to_path_buf()))?;
        let name = root.file_name().map_or_else(
            || root.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let params = json!({
            "processId": std::process::id(),
            "rootUri": root_uri,
            "rootPath": root,
            "workspaceFolders": [{"uri": root_uri, "name": name}],
            "initializationOptions": config.initialization_options,
            "capabilities": client_capabilities(),
            "clientInfo": {"name": "toolbelt", "version": env!("CARGO_PKG_VERSION")},
        });
        let answer = client
            .request("initialize", params, config.startup_timeout)
            .await
            .map_err(|e| LspError::Handshake {
                name: config.name.clone(),
                why: e.to_string(),
            })?;
        let _ = client
            .capabilities
            .set(answer.get("capabilities").cloned().unwrap_or(Value::Null));
        client.notify("initialized", json!({}));
        if let Some(settings) = &config.settings {
            client.notify(
                "workspace/didChangeConfiguration",
                json!({"settings": settings}),
            );
        }
        Ok(client)
    }

    /// Starts the threads over an open channel.
    fn run(config: &ServerConfig, channel: Channel, owner: Owner) -> Result<LspClient, String> {
        let shared = Arc::new(Shared {
            pending: Mutex::default(),
            diagnostics: Mutex::default(),
            progress: Mutex::default(),
            changed: Notify::new(),
            dead: Mutex::default(),
            stderr_tail: Mutex::default(),
            settings: config.settings.clone(),
            exited: Mutex::new(false),
        });
        let Channel {
            reader,
            writer,
            process,
            socket,
        } = channel;
        let pgid = process.as_ref().map(|p| p.pgid);
        let (out, rx) = mpsc::channel::<Message>();
        let name = &config.name;
        let mut spawned = threads::spawn_io(
            name,
            socket.is_some(),
            &shared,
            out.clone(),
            rx,
            writer,
            reader,
        );
        if let Some(started) = process {
            let stderr = started
                .stderr
                .map(|e| Arc::new(std::fs::File::from(std::os::fd::OwnedFd::from(e))));
            if let Some(stderr) = &stderr {
                spawned =
                    spawned.and_then(|()| threads::spawn_stderr(name, &shared, stderr.clone()));
            }
            spawned = spawned
                .and_then(|()| threads::spawn_waiter(name, shared.clone(), started.child, stderr));
        }
        if let Err(e) = spawned {
            if let Some(socket) = &socket {
                socket.close();
            }
            if let Some(pgid) = pgid {
                toolbelt_process::terminate_groups_blocking(&[pgid], KILL_GRACE);
            }
            return Err(format!(
                "cannot start the threads of a language server: {e}"
            ));
        }
        Ok(LspClient {
            name: config.name.clone(),
            shared,
            out,
            next_id: AtomicI32::new(1),
            open: tokio::sync::Mutex::default(),
            capabilities: std::sync::OnceLock::new(),
            owner,
            pgid,
            socket,
            loaded: AtomicBool::new(false),
            started: Instant::now(),
            startup_timeout: config.startup_timeout,
            shutdown_timeout: config.shutdown_timeout,
            request_timeout: config.request_timeout,
        })
    }

    /// The server's name (its key in `.lsp.json`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the server announced `provider` (`definitionProvider`) in its capabilities.
    pub fn supports(&self, provider: &str) -> bool {
        self.capabilities
            .get()
            .and_then(|c| c.get(provider))
            .is_some_and(|v| !v.is_null() && v != &Value::Bool(false))
    }

    /// How long one request may take (`requestTimeout`).
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// The reason the server is gone, or `None` while it runs.
    pub fn dead(&self) -> Option<String> {
        lock(&self.shared.dead).clone()
    }

    /// Sends a request and waits at most `limit` for its answer.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        limit: Duration,
    ) -> Result<Value, LspError> {
        if let Some(why) = self.dead() {
            return Err(LspError::Gone(why));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert(id, tx);
        let request = Request::new(RequestId::from(id), method.to_string(), params);
        if self.out.send(request.into()).is_err() {
            lock(&self.shared.pending).remove(&id);
            return Err(LspError::Gone(
                self.dead()
                    .unwrap_or_else(|| "the server's input is closed".into()),
            ));
        }
        match tokio::time::timeout(limit, rx).await {
            Ok(Ok(reply)) => reply.map_err(|e| LspError::Answer(self.with_stderr(e))),
            Ok(Err(_)) => Err(LspError::Gone(self.with_stderr(
                self.dead().unwrap_or_else(|| "the server went away".into()),
            ))),
            Err(_) => {
                lock(&self.shared.pending).remove(&id);
                // Ask the server to stop working on it; it may ignore this.
                self.notify("$/cancelRequest", json!({"id": id}));
                Err(LspError::Timeout {
                    name: self.name.clone(),
                    method: method.to_string(),
                    ms: limit.as_millis(),
                })
            }
        }
    }

    fn with_stderr(&self, message: String) -> String {
        let tail = lock(&self.shared.stderr_tail);
        let tail = String::from_utf8_lossy(&tail);
        let tail = tail.trim();
        if tail.is_empty() {
            message
        } else {
            format!("{message}; its last error output: {tail}")
        }
    }

    /// Sends a notification (nothing comes back).
    pub fn notify(&self, method: &str, params: Value) {
        let _ = self
            .out
            .send(Notification::new(method.to_string(), params).into());
    }

    /// Makes the server see `path` with `text` as its content: `didOpen` the first time,
    /// `didChange` (whole text) when it changed since. Returns the document's URI.
    pub async fn sync_document(
        &self,
        path: &Path,
        language: &str,
        text: &str,
    ) -> Result<Url, LspError> {
        let uri =
            Url::from_file_path(path).map_err(|()| LspError::NotAbsolute(path.to_path_buf()))?;
        let mut open = self.open.lock().await;
        match open.get_mut(&uri) {
            Some((_, old)) if old == text => {}
            Some((version, old)) => {
                // What was published is about the old text: wait for the new answer.
                lock(&self.shared.diagnostics).remove(&uri);
                *version += 1;
                *old = text.to_string();
                self.notify(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": uri, "version": *version},
                           "contentChanges": [{"text": text}]}),
                );
            }
            None => {
                lock(&self.shared.diagnostics).remove(&uri);
                open.insert(uri.clone(), (1, text.to_string()));
                self.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}}),
                );
            }
        }
        Ok(uri)
    }

    /// Whether any document was opened on the server.
    pub(crate) async fn has_open_documents(&self) -> bool {
        !self.open.lock().await.is_empty()
    }

    /// Waits, the first time only, until the server has loaded its project: it has
    /// published diagnostics or reported work, and no work it reported is still in
    /// progress (or it died); at most `startupTimeout`. Call it after a document was
    /// opened, before the question about it.
    pub async fn wait_until_loaded(&self) {
        if self.loaded.load(Ordering::Acquire) {
            return;
        }
        let deadline = Instant::now() + self.startup_timeout;
        loop {
            let notified = self.shared.changed.notified();
            let published = !lock(&self.shared.diagnostics).is_empty();
            let idle = {
                let progress = lock(&self.shared.progress);
                (published || progress.began) && progress.active.is_empty()
            };
            if idle || self.dead().is_some() {
                break;
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                tracing::info!(
                    "the language server `{}` was still loading after {} ms; asking anyway",
                    self.name,
                    self.startup_timeout.as_millis()
                );
                break;
            };
            let _ = tokio::time::timeout(left, notified).await;
        }
        self.loaded.store(true, Ordering::Release);
    }

    /// How long the server's startup window (`startupTimeout` from its start) is still
    /// open; `None` once it closed.
    pub(crate) fn startup_left(&self) -> Option<Duration> {
        (self.started + self.startup_timeout).checked_duration_since(Instant::now())
    }

    /// Whether an empty answer may only mean the server has not indexed the project yet:
    /// work it reported is still in progress, or, in its startup window, it gave no sign
    /// of being ready (no progress ended, no word of its own) and said something in the
    /// last [`QUIET`].
    pub(crate) fn busy(&self) -> bool {
        let progress = lock(&self.shared.progress);
        if !progress.active.is_empty() {
            return true;
        }
        self.startup_left().is_some()
            && !progress.began
            && !progress.announced_ready
            && progress.last_heard.elapsed() < QUIET
    }

    /// The diagnostics last published for `uri`, waiting up to `limit` for a first
    /// publication when none came yet.
    pub async fn diagnostics_for(&self, uri: &Url, limit: Duration) -> Option<Vec<Diagnostic>> {
        let deadline = Instant::now() + limit;
        loop {
            let notified = self.shared.changed.notified();
            if let Some(found) = lock(&self.shared.diagnostics).get(uri) {
                return Some(found.clone());
            }
            if self.dead().is_some() {
                return None;
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            if tokio::time::timeout(left, notified).await.is_err() {
                return None;
            }
        }
    }

    /// What was last published for the file at `path`, without waiting.
    pub fn published_for_path(&self, path: &Path) -> Option<Vec<Diagnostic>> {
        let uri = Url::from_file_path(path).ok()?;
        lock(&self.shared.diagnostics).get(&uri).cloned()
    }

    /// Every diagnostic published so far, by document.
    pub fn all_diagnostics(&self) -> Vec<(Url, Vec<Diagnostic>)> {
        let mut all: Vec<_> = lock(&self.shared.diagnostics)
            .iter()
            .filter(|(_, d)| !d.is_empty())
            .map(|(u, d)| (u.clone(), d.clone()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// `shutdown`, `exit`, then the group kill: what ends the server in an orderly way.
    /// A server toolbelt only connected to is left running: the connection is closed.
    pub async fn shutdown(&self) {
        if self.pgid.is_none() {
            return self.kill();
        }
        if self.dead().is_none() {
            let _ = self
                .request("shutdown", Value::Null, self.shutdown_timeout)
                .await;
            self.notify("exit", Value::Null);
        }
        let deadline = Instant::now() + self.shutdown_timeout;
        while Instant::now() < deadline && !*lock(&self.shared.exited) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.kill();
    }

    fn kill(&self) {
        self.shared
            .die(format!("the language server `{}` was stopped", self.name));
        if let Some(socket) = &self.socket {
            socket.close();
        }
        if let Some(pgid) = self.pgid {
            toolbelt_process::terminate_groups_blocking(&[pgid], KILL_GRACE);
            self.owner.kill_blocking(KILL_GRACE, true);
        }
    }
}

impl Drop for LspClient {
    /// A client dropped without [`LspClient::shutdown`] (toolbelt ending, a failed start)
    /// still ends its server and everything the server started.
    fn drop(&mut self) {
        // Also after the server exited: what it started may still run.
        self.kill();
    }
}

fn client_capabilities() -> Value {
    json!({
        "general": {"positionEncodings": ["utf-16"]},
        "window": {"workDoneProgress": true},
        "workspace": {"configuration": true, "workspaceFolders": true, "symbol": {}},
        "textDocument": {
            "synchronization": {"didSave": false},
            "definition": {"linkSupport": true},
            "implementation": {"linkSupport": true},
            "references": {},
            "hover": {"contentFormat": ["markdown", "plaintext"]},
            "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
            "callHierarchy": {},
            "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
                "quickfix", "refactor", "refactor.extract", "refactor.inline", "refactor.rewrite",
                "source", "source.organizeImports", "source.fixAll"]}}},
            "publishDiagnostics": {"relatedInformation": false}
        }
    })
}
