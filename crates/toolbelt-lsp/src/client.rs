//! One running language server: its process, the JSON-RPC framing, requests with a time
//! limit, the documents it has open and the diagnostics it published.
//!
//! Framing is `lsp-server`'s `Message::read`/`write` (Content-Length headers, the
//! protocol's JSON-RPC shapes) on two plain threads, one reading the server's stdout and
//! one writing its stdin: the crate is blocking, small and maintained with rust-analyzer,
//! and the threads keep a server that stops reading or writing from ever blocking the
//! async runtime. `async-lsp` would bring a tower stack toolbelt has no other use for.
//!
//! The server runs in its own process group with toolbelt's owner marker, so ending the
//! client (shutdown, exit, then the group kill and the owner's sweep) leaves nothing
//! behind, whatever the server started.

use std::collections::HashMap;
use std::io::{BufReader, Read};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use lsp_server::{Message, Notification, Request, RequestId, Response};
use lsp_types::Diagnostic;
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};
use toolbelt_process::{GroupCommand, KILL_GRACE, Owner};
use url::Url;

use crate::config::ServerConfig;

/// How much of the server's stderr is kept for error messages.
const STDERR_TAIL: usize = 2048;

type Reply = Result<Value, String>;

/// What the reader thread and the callers share.
struct Shared {
    pending: Mutex<HashMap<i32, oneshot::Sender<Reply>>>,
    diagnostics: Mutex<HashMap<Url, Vec<Diagnostic>>>,
    published: Notify,
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
        self.published.notify_waiters();
    }
}

/// A language server process toolbelt started and talks to.
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
    pgid: u32,
    shutdown_timeout: Duration,
    request_timeout: Duration,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl LspClient {
    /// Starts the server and runs the `initialize` handshake on `root`, within the
    /// server's `startupTimeout`. On failure nothing of the server is left running.
    pub async fn start(config: &ServerConfig, root: &Path) -> Result<Arc<LspClient>, String> {
        let client = Arc::new(Self::spawn(config, root)?);
        let root_uri = Url::from_directory_path(root)
            .map_err(|()| format!("{} is not an absolute directory", root.display()))?;
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
            .map_err(|e| format!("the language server `{}` did not start: {e}", config.name))?;
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

    fn spawn(config: &ServerConfig, root: &Path) -> Result<LspClient, String> {
        let owner = Owner::new();
        let mut command = GroupCommand::new(&config.command, &owner);
        command
            .args(&config.args)
            .envs(&config.env)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn_std().map_err(|e| {
            format!(
                "cannot start the language server `{}` (`{}`): {e}",
                config.name, config.command
            )
        })?;
        let pgid = child.id();
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the server's pipes are missing".into());
        };
        let shared = Arc::new(Shared {
            pending: Mutex::default(),
            diagnostics: Mutex::default(),
            published: Notify::new(),
            dead: Mutex::default(),
            stderr_tail: Mutex::default(),
            settings: config.settings.clone(),
            exited: Mutex::new(false),
        });
        let (out, rx) = mpsc::channel::<Message>();
        let stderr = Arc::new(std::fs::File::from(std::os::fd::OwnedFd::from(stderr)));
        let spawned = spawn_threads(
            &config.name,
            shared.clone(),
            out.clone(),
            rx,
            stdin,
            stdout,
            stderr.clone(),
        )
        .and_then(|()| spawn_waiter(&config.name, shared.clone(), child, stderr));
        if let Err(e) = spawned {
            toolbelt_process::terminate_groups_blocking(&[pgid], KILL_GRACE);
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
    pub async fn request(&self, method: &str, params: Value, limit: Duration) -> Reply {
        if let Some(why) = self.dead() {
            return Err(why);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert(id, tx);
        let request = Request::new(RequestId::from(id), method.to_string(), params);
        if self.out.send(request.into()).is_err() {
            lock(&self.shared.pending).remove(&id);
            return Err(self
                .dead()
                .unwrap_or_else(|| "the server's input is closed".into()));
        }
        match tokio::time::timeout(limit, rx).await {
            Ok(Ok(reply)) => reply.map_err(|e| self.with_stderr(e)),
            Ok(Err(_)) => {
                Err(self.with_stderr(self.dead().unwrap_or_else(|| "the server went away".into())))
            }
            Err(_) => {
                lock(&self.shared.pending).remove(&id);
                // Ask the server to stop working on it; it may ignore this.
                self.notify("$/cancelRequest", json!({"id": id}));
                Err(format!(
                    "the language server `{}` did not answer `{method}` within {} ms",
                    self.name,
                    limit.as_millis()
                ))
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
    ) -> Result<Url, String> {
        let uri = Url::from_file_path(path)
            .map_err(|()| format!("{} is not an absolute path", path.display()))?;
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

    /// The diagnostics last published for `uri`, waiting up to `limit` for a first
    /// publication when none came yet.
    pub async fn diagnostics_for(&self, uri: &Url, limit: Duration) -> Option<Vec<Diagnostic>> {
        let deadline = Instant::now() + limit;
        loop {
            let notified = self.shared.published.notified();
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
    pub async fn shutdown(&self) {
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
        toolbelt_process::terminate_groups_blocking(&[self.pgid], KILL_GRACE);
        self.owner.kill_blocking(KILL_GRACE, true);
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

fn spawn_threads(
    name: &str,
    shared: Arc<Shared>,
    out: mpsc::Sender<Message>,
    rx: mpsc::Receiver<Message>,
    mut stdin: std::process::ChildStdin,
    stdout: std::process::ChildStdout,
    stderr: Arc<std::fs::File>,
) -> std::io::Result<()> {
    let writer_shared = shared.clone();
    std::thread::Builder::new()
        .name(format!("lsp-write-{name}"))
        .spawn(move || {
            for message in rx {
                if let Err(e) = message.write(&mut stdin) {
                    writer_shared.die(format!("cannot write to the language server: {e}"));
                    return;
                }
            }
        })?;
    let tail = shared.clone();
    std::thread::Builder::new()
        .name(format!("lsp-err-{name}"))
        .spawn(move || {
            // Wait for output without the lock, then read what is there under it, so the
            // waiter (which drains the rest once the server exited) never races us.
            while readable(&stderr, None) {
                let mut t = lock(&tail.stderr_tail);
                if readable(&stderr, Some(0)) && !read_some(&stderr, &mut t) {
                    return;
                }
            }
        })?;
    let name = name.to_string();
    std::thread::Builder::new()
        .name(format!("lsp-read-{name}"))
        .spawn(move || read_loop(&name, &shared, &out, stdout))?;
    Ok(())
}

/// Whether `file` has something to read (or reached its end) within `timeout_ms`
/// (`None`: waits as long as it takes).
fn readable(file: &std::fs::File, timeout_ms: Option<i64>) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let timeout = timeout_ms.map(|ms| Timespec {
        tv_sec: ms / 1000,
        tv_nsec: (ms % 1000) * 1_000_000,
    });
    let mut fds = [PollFd::new(file, PollFlags::IN)];
    loop {
        match poll(&mut fds, timeout.as_ref()) {
            Ok(n) => return n > 0,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return false,
        }
    }
}

/// Reads what is there into the tail; false at the end of the output.
fn read_some(mut file: &std::fs::File, tail: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 1024];
    match file.read(&mut buf) {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            tail.extend_from_slice(&buf[..n]);
            let excess = tail.len().saturating_sub(STDERR_TAIL);
            tail.drain(..excess);
            true
        }
    }
}

/// Reaps the server. Its pipes are no sign of its end: a child it started may hold them
/// open, so a crash is noticed here, with the error output it wrote before it.
fn spawn_waiter(
    name: &str,
    shared: Arc<Shared>,
    mut child: Child,
    stderr: Arc<std::fs::File>,
) -> std::io::Result<()> {
    let name = name.to_string();
    std::thread::Builder::new()
        .name(format!("lsp-wait-{name}"))
        .spawn(move || {
            let status = child.wait();
            {
                let mut t = lock(&shared.stderr_tail);
                while readable(&stderr, Some(0)) && read_some(&stderr, &mut t) {}
            }
            *lock(&shared.exited) = true;
            let how = match status {
                Ok(s) => s.to_string(),
                Err(e) => e.to_string(),
            };
            shared.die(format!("the language server `{name}` exited ({how})"));
        })?;
    Ok(())
}

fn read_loop(
    name: &str,
    shared: &Shared,
    out: &mpsc::Sender<Message>,
    stdout: std::process::ChildStdout,
) {
    let mut reader = crate::framing::Bounded::new(BufReader::new(stdout));
    loop {
        match Message::read(&mut reader) {
            Ok(Some(Message::Response(response))) => answer(shared, response),
            Ok(Some(Message::Notification(n))) => notification(shared, n),
            Ok(Some(Message::Request(request))) => {
                let _ = out.send(server_request(shared, request).into());
            }
            Ok(None) => {
                return shared.die(format!("the language server `{name}` exited"));
            }
            Err(e) => {
                return shared.die(format!(
                    "the language server `{name}` wrote something that is not an LSP message on its stdout ({e})"
                ));
            }
        }
    }
}

fn answer(shared: &Shared, response: Response) {
    let Ok(id) = response.id.to_string().parse::<i32>() else {
        return;
    };
    let Some(tx) = lock(&shared.pending).remove(&id) else {
        return;
    };
    let reply = match (response.result, response.error) {
        (_, Some(e)) => Err(format!(
            "the server answered with error {}: {}",
            e.code, e.message
        )),
        (result, None) => Ok(result.unwrap_or(Value::Null)),
    };
    let _ = tx.send(reply);
}

fn notification(shared: &Shared, n: Notification) {
    if n.method != "textDocument/publishDiagnostics" {
        return;
    }
    let Ok(params) = serde_json::from_value::<lsp_types::PublishDiagnosticsParams>(n.params) else {
        return;
    };
    lock(&shared.diagnostics).insert(params.uri, params.diagnostics);
    shared.published.notify_waiters();
}

/// Answers what a server asks of its client: its settings for `workspace/configuration`,
/// and an empty success for the rest (progress tokens, capability registration).
fn server_request(shared: &Shared, request: Request) -> Response {
    let result = if request.method == "workspace/configuration" {
        let items = request
            .params
            .get("items")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let section = |i: usize| {
            let name = request.params["items"][i]["section"].as_str().unwrap_or("");
            let mut v = shared.settings.clone().unwrap_or(Value::Null);
            for part in name.split('.').filter(|p| !p.is_empty()) {
                v = v.get(part).cloned().unwrap_or(Value::Null);
            }
            v
        };
        Value::Array((0..items).map(section).collect())
    } else {
        Value::Null
    };
    Response::new_ok(request.id, result)
}

fn client_capabilities() -> Value {
    json!({
        "general": {"positionEncodings": ["utf-16"]},
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
