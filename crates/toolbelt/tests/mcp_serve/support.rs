//! A temp workspace, the binary as an MCP server, and an rmcp client whose answers
//! (elicitation, roots) each test chooses.

// Roots and logging are deprecated by rmcp for the 2026-07-28 revision only; the server
// speaks 2025-11-25 and before, where they are the protocol.
#![allow(deprecated)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, ErrorData, Implementation, ListRootsResult,
    LoggingMessageNotificationParam, ProgressNotificationParam, Root,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::Notify;

pub struct Ws {
    pub dir: tempfile::TempDir,
}

impl Ws {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["ws", "other", "home", "tbhome"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        Ws { dir }
    }

    /// The server's working directory (canonical, as the tools report paths).
    pub fn ws(&self) -> PathBuf {
        self.dir.path().join("ws").canonicalize().unwrap()
    }

    /// A second directory, outside the default workspace.
    pub fn other(&self) -> PathBuf {
        self.dir.path().join("other").canonicalize().unwrap()
    }

    pub fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// `toolbelt mcp serve ARGS` in the workspace with a clean environment.
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = self.toolbelt(&["mcp", "serve"]);
        cmd.args(args);
        cmd
    }

    /// `toolbelt ARGS` in the workspace with the same clean environment.
    pub fn toolbelt(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolbelt"));
        cmd.args(args)
            .current_dir(self.ws())
            .env("HOME", self.dir.path().join("home"))
            .env("TOOLBELT_HOME", self.dir.path().join("tbhome"))
            .env(
                "TOOLBELT_SYSTEM_SETTINGS_PATH",
                self.dir.path().join("none.json"),
            )
            .kill_on_drop(true);
        cmd
    }

    /// An rmcp client connected to `toolbelt mcp serve ARGS` over stdio.
    pub async fn connect(&self, client: TestClient, args: &[&str]) -> Service {
        let mut cmd = self.command(args);
        cmd.stderr(Stdio::null());
        let transport = TokioChildProcess::new(cmd).unwrap();
        bounded(client.serve(transport)).await.unwrap()
    }
}

pub type Service = RunningService<RoleClient, TestClient>;

/// How the client answers `elicitation/create`.
#[derive(Clone, Copy, PartialEq)]
pub enum Answer {
    /// The client declares no elicitation capability.
    CannotAsk,
    Accept {
        always: bool,
    },
    Decline,
}

/// What the server sent the client.
#[derive(Default)]
pub struct Seen {
    pub questions: Mutex<Vec<String>>,
    pub schemas: Mutex<Vec<Value>>,
    pub progress: Mutex<Vec<(f64, String)>>,
    pub progress_arrived: Notify,
    pub list_changed: AtomicUsize,
    pub list_changed_arrived: Notify,
    pub logs: Mutex<Vec<String>>,
    pub logs_arrived: Notify,
}

/// A person who takes their time: each question adds a permit to `asked`, and is
/// answered only after the test adds one to `answer`.
pub struct SlowPerson {
    pub asked: tokio::sync::Semaphore,
    pub answer: tokio::sync::Semaphore,
}

impl Default for SlowPerson {
    fn default() -> Self {
        SlowPerson {
            asked: tokio::sync::Semaphore::new(0),
            answer: tokio::sync::Semaphore::new(0),
        }
    }
}

#[derive(Clone)]
pub struct TestClient {
    pub answer: Answer,
    /// `Some`: the client offers these roots.
    pub roots: Option<Arc<Mutex<Vec<PathBuf>>>>,
    pub seen: Arc<Seen>,
    /// `Some`: questions wait for the test (see [`SlowPerson`]).
    pub slow: Option<Arc<SlowPerson>>,
}

impl TestClient {
    pub fn new(answer: Answer) -> Self {
        TestClient {
            answer,
            roots: None,
            seen: Arc::default(),
            slow: None,
        }
    }

    pub fn slow(mut self, person: Arc<SlowPerson>) -> Self {
        self.slow = Some(person);
        self
    }

    pub fn with_roots(mut self, roots: Vec<PathBuf>) -> Self {
        self.roots = Some(Arc::new(Mutex::new(roots)));
        self
    }

    pub fn questions(&self) -> Vec<String> {
        self.seen.questions.lock().unwrap().clone()
    }
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        let mut caps = serde_json::Map::new();
        if self.answer != Answer::CannotAsk {
            caps.insert("elicitation".into(), json!({}));
        }
        if self.roots.is_some() {
            caps.insert("roots".into(), json!({"listChanged": true}));
        }
        let caps: ClientCapabilities = serde_json::from_value(Value::Object(caps)).unwrap();
        ClientConfig::new(caps, Implementation::new("toolbelt-test-client", "1.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        {
            self.seen.questions.lock().unwrap().push(message);
            self.seen
                .schemas
                .lock()
                .unwrap()
                .push(serde_json::to_value(requested_schema).unwrap());
        }
        if let Some(person) = &self.slow {
            person.asked.add_permits(1);
            person.answer.acquire().await.unwrap().forget();
        }
        Ok(match self.answer {
            Answer::Accept { always } => ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({ "always": always })),
            _ => ElicitResult::new(ElicitationAction::Decline),
        })
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let roots = match &self.roots {
            Some(roots) => roots.lock().unwrap().clone(),
            None => Vec::new(),
        };
        Ok(ListRootsResult::new(
            roots
                .iter()
                .map(|p| Root::new(format!("file://{}", p.display())))
                .collect(),
        ))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.seen
            .progress
            .lock()
            .unwrap()
            .push((params.progress, params.message.unwrap_or_default()));
        self.seen.progress_arrived.notify_waiters();
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.seen.list_changed.fetch_add(1, Ordering::SeqCst);
        self.seen.list_changed_arrived.notify_waiters();
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.seen.logs.lock().unwrap().push(params.data.to_string());
        self.seen.logs_arrived.notify_waiters();
    }
}

/// Calls `name` with `args`; a JSON-RPC error fails the test.
pub async fn call(service: &Service, name: &str, args: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(name.to_string())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    bounded(service.call_tool(params)).await.unwrap()
}

/// The text parts of a result, joined.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// Waits for `future`, bounded so a hang fails the test.
pub async fn bounded<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), future)
        .await
        .expect("timed out after 30 s")
}

/// The `mcp_testserver` example of `toolbelt-mcp`, built by `cargo test --workspace`.
pub fn testserver() -> String {
    let path = std::env::current_exe()
        .unwrap()
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("examples")
        .join("mcp_testserver");
    assert!(
        path.exists(),
        "{} is missing: run `cargo test --workspace` (or `cargo build -p toolbelt-mcp --examples`) first",
        path.display()
    );
    path.display().to_string()
}

/// The process a server's approved command names `ns_pid` (in `$$`, `$!` or a result's
/// `PID:`), as this test sees it: approved commands run in a PID namespace of the
/// server's, so the id means nothing here. `needle` is part of its command line, which
/// tells it from the processes with that id in other servers' namespaces.
///
/// The call answers once the command's process exists, which may be before it has
/// `exec`ed the shell (until then its command line is toolbelt's): looked for again
/// until it has, within a generous deadline.
pub fn host_pid(ns_pid: u32, needle: &str) -> u32 {
    let ours = std::fs::read_link("/proc/self/ns/pid").unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let found = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .find(|pid| {
                std::fs::read_link(format!("/proc/{pid}/ns/pid")).is_ok_and(|ns| ns != ours)
                    && toolbelt_process::isolate::namespace_pid(*pid) == ns_pid
                    && std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                        String::from_utf8_lossy(&c)
                            .replace('\0', " ")
                            .contains(needle)
                    })
            });
        if let Some(pid) = found {
            return pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no process {ns_pid} running {needle:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// An MCP client transport to `url` over streamable HTTP, on a client from
/// `toolbelt_netguard::client_builder` (which installs the TLS provider; rmcp's own
/// `from_uri` would build a client without one).
pub fn http_transport(
    url: &str,
) -> rmcp::transport::StreamableHttpClientTransport<reqwest::Client> {
    let client = toolbelt_netguard::client_builder()
        .build()
        .expect("an HTTP client");
    rmcp::transport::StreamableHttpClientTransport::with_client(
        client,
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url),
    )
}
