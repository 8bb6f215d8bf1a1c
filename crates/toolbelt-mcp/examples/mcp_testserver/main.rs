//! An MCP server built with `rmcp`, for toolbelt's tests and benchmarks (and as an
//! example of what the client handles). `cargo test` builds it; tests find it next to
//! their own executable, in `target/<profile>/examples/`.
//!
//! Modes (first argument):
//! - `stdio` (default): MCP over stdin/stdout.
//! - `garbage`: prints lines that are not JSON-RPC on stdout, then serves stdio.
//! - `silent`: reads stdin and never answers (a server that hangs in `initialize`).
//! - `http`: Streamable HTTP at `http://127.0.0.1:PORT/mcp` and the legacy SSE transport
//!   at `/sse`; prints the base URL `http://127.0.0.1:PORT` on stdout once listening.
//!
//! Tools: `echo`, `image`, `structured`, `resource`, `fail` (an `isError` result),
//! `protocol_error` (a JSON-RPC error), `sleep` (honours cancellation), `cancelled_count`,
//! `crash` (exits mid-call), `progress`, `add_tool` (changes the tool list and says so),
//! `read_status` (`readOnlyHint`), `pid`, `protocol` (the negotiated revision;
//! `TESTSERVER_PROTOCOL` restricts the server to one). `TESTSERVER_STDERR` is written to stderr at start, and
//! `TESTSERVER_STDERR_BYTES` that many bytes `e`.
//!
//! Misbehaving on purpose: `TESTSERVER_PID_FILE` names a file the server writes its pid
//! to at start (so a test can see it gone); with `TESTSERVER_HANG_ON_RESTART` naming a
//! file, the first start creates the file and serves, every later start (the file
//! exists) hangs like `silent`: a server that cannot be restarted.

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProtocolVersion, ResourceContents, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

mod http;

/// A 1x1 transparent PNG.
const TINY_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

#[derive(Default)]
struct State {
    extra_tools: Mutex<Vec<String>>,
    cancelled: AtomicUsize,
    cancelled_changed: tokio::sync::Notify,
}

fn state() -> &'static State {
    static STATE: OnceLock<State> = OnceLock::new();
    STATE.get_or_init(State::default)
}

#[derive(Clone, Default)]
pub struct TestServer;

fn schema(value: Value) -> Arc<Map<String, Value>> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

fn no_args() -> Arc<Map<String, Value>> {
    schema(json!({"type": "object", "properties": {}}))
}

fn tools() -> Vec<Tool> {
    let mut tools = vec![
        Tool::new(
            "echo",
            "Echoes the message back.",
            schema(
                json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
            ),
        ),
        Tool::new("image", "Returns a tiny PNG image.", no_args()),
        Tool::new(
            "structured",
            "Returns structured content only.",
            schema(json!({"type": "object", "properties": {"city": {"type": "string"}}})),
        ),
        Tool::new(
            "resource",
            "Returns an embedded resource and a link.",
            no_args(),
        ),
        Tool::new("fail", "Always fails with an isError result.", no_args()),
        Tool::new(
            "protocol_error",
            "Always fails with a JSON-RPC error.",
            no_args(),
        ),
        Tool::new(
            "sleep",
            "Sleeps for ms milliseconds; stops when cancelled.",
            schema(json!({"type": "object", "properties": {"ms": {"type": "integer"}}})),
        ),
        Tool::new(
            "cancelled_count",
            "How many calls were cancelled; waits up to wait_ms for at least one.",
            schema(json!({"type": "object", "properties": {"wait_ms": {"type": "integer"}}})),
        ),
        Tool::new(
            "crash",
            "Exits the server process in the middle of the call.",
            no_args(),
        ),
        Tool::new(
            "progress",
            "Sends steps progress notifications, then answers.",
            schema(json!({"type": "object", "properties": {"steps": {"type": "integer"}}})),
        ),
        Tool::new(
            "add_tool",
            "Adds a tool named name and sends notifications/tools/list_changed.",
            schema(
                json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
            ),
        ),
        Tool::new("read_status", "Reads a status; changes nothing.", no_args())
            .with_annotations(ToolAnnotations::new().read_only(true)),
        Tool::new("pid", "The server's process id.", no_args()),
        Tool::new("protocol", "The negotiated protocol revision.", no_args()),
    ];
    let extra = state()
        .extra_tools
        .lock()
        .map(|t| t.clone())
        .unwrap_or_default();
    for name in extra {
        tools.push(Tool::new(name, "A tool added at run time.", no_args()));
    }
    tools
}

fn text(t: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(t)]).into()
}

fn int_arg(args: &Option<Map<String, Value>>, key: &str, default: u64) -> u64 {
    args.as_ref()
        .and_then(|a| a.get(key))
        .and_then(Value::as_u64)
        .unwrap_or(default)
}

fn str_arg(args: &Option<Map<String, Value>>, key: &str) -> String {
    args.as_ref()
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("toolbelt-testserver", "0.1.0"))
    }

    /// `TESTSERVER_PROTOCOL=2025-03-26` makes the server speak only that revision.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        let only = std::env::var("TESTSERVER_PROTOCOL")
            .ok()
            .and_then(|v| serde_json::from_value::<ProtocolVersion>(json!(v)).ok());
        match only {
            Some(version) => Cow::Owned(vec![version]),
            None => Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS),
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments;
        match request.name.as_ref() {
            "sleep" => Ok(sleep(&args, &context).await),
            "cancelled_count" => Ok(cancelled_count(&args).await),
            "crash" => {
                eprintln!("testserver: crashing on purpose");
                std::process::exit(3)
            }
            "progress" => Ok(progress(&args, &context).await),
            "add_tool" => {
                let name = str_arg(&args, "name");
                if let Ok(mut extra) = state().extra_tools.lock() {
                    extra.push(name.clone());
                }
                let _ = context.peer.notify_tool_list_changed().await;
                Ok(text(format!("added {name}")))
            }
            "protocol" => {
                let version = context
                    .protocol_version()
                    .and_then(|v| serde_json::to_value(v).ok());
                Ok(text(
                    version
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                ))
            }
            other => fixed_answer(other, &args),
        }
    }
}

/// The tools whose answer depends on their arguments only, and the ones `add_tool` added.
fn fixed_answer(
    name: &str,
    args: &Option<Map<String, Value>>,
) -> Result<CallToolResponse, ErrorData> {
    match name {
        "echo" => Ok(text(format!("echo: {}", str_arg(args, "message")))),
        "image" => Ok(CallToolResult::success(vec![
            ContentBlock::text("a tiny image"),
            ContentBlock::image(TINY_PNG, "image/png"),
        ])
        .into()),
        "structured" => {
            let mut result = CallToolResult::structured(
                json!({"city": str_arg(args, "city"), "temperature": 21}),
            );
            result.content.clear();
            Ok(result.into())
        }
        "resource" => Ok(CallToolResult::success(vec![
            ContentBlock::resource(ResourceContents::text("file body", "file:///notes.txt")),
            ContentBlock::resource_link(rmcp::model::Resource::new("file:///big.log", "big.log")),
        ])
        .into()),
        "fail" => Ok(CallToolResult::error(vec![ContentBlock::text("disk is full")]).into()),
        "protocol_error" => Err(ErrorData::invalid_params("bad widget id", None)),
        "read_status" => Ok(text("all good")),
        "pid" => Ok(text(std::process::id().to_string())),
        other => {
            let extra = state()
                .extra_tools
                .lock()
                .map(|t| t.clone())
                .unwrap_or_default();
            if extra.iter().any(|t| t == other) {
                Ok(text(format!("dynamic {other}")))
            } else {
                Err(ErrorData::invalid_params(
                    format!("Unknown tool: {other}"),
                    None,
                ))
            }
        }
    }
}

/// `sleep`: waits `ms`, or answers `cancelled` (and counts it) when the client cancels.
async fn sleep(
    args: &Option<Map<String, Value>>,
    context: &RequestContext<RoleServer>,
) -> CallToolResponse {
    let ms = int_arg(args, "ms", 60_000);
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_millis(ms)) => text("slept"),
        _ = context.ct.cancelled() => {
            state().cancelled.fetch_add(1, Ordering::SeqCst);
            state().cancelled_changed.notify_waiters();
            text("cancelled")
        }
    }
}

/// `cancelled_count`: how many calls were cancelled, waiting up to `wait_ms` for one.
async fn cancelled_count(args: &Option<Map<String, Value>>) -> CallToolResponse {
    let wait = Duration::from_millis(int_arg(args, "wait_ms", 0));
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let notified = state().cancelled_changed.notified();
        let n = state().cancelled.load(Ordering::SeqCst);
        if n > 0 || tokio::time::Instant::now() >= deadline {
            return text(format!("cancelled: {n}"));
        }
        let _ = tokio::time::timeout_at(deadline, notified).await;
    }
}

/// `progress`: `steps` progress notifications, then the answer.
async fn progress(
    args: &Option<Map<String, Value>>,
    context: &RequestContext<RoleServer>,
) -> CallToolResponse {
    let steps = int_arg(args, "steps", 3);
    if let Some(token) = context.meta.get_progress_token() {
        for i in 1..=steps {
            let param = ProgressNotificationParam::new(token.clone(), i as f64)
                .with_total(steps as f64)
                .with_message(format!("step {i}"));
            let _ = context.peer.notify_progress(param).await;
        }
    }
    text(format!("done after {steps} steps"))
}

#[tokio::main]
async fn main() {
    if let Ok(line) = std::env::var("TESTSERVER_STDERR") {
        eprintln!("{line}");
    }
    if let Some(n) = std::env::var("TESTSERVER_STDERR_BYTES")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
    {
        use std::io::Write;
        let _ = std::io::stderr().write_all(&vec![b'e'; n]);
    }
    if let Ok(path) = std::env::var("TESTSERVER_PID_FILE") {
        let _ = std::fs::write(path, std::process::id().to_string());
    }
    let mut mode = std::env::args().nth(1).unwrap_or_else(|| "stdio".into());
    if let Ok(marker) = std::env::var("TESTSERVER_HANG_ON_RESTART") {
        // create_new: exactly one start wins the marker and serves.
        if std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&marker)
            .is_err()
        {
            mode = "silent".into();
        }
    }
    match mode.as_str() {
        "silent" => {
            let mut sink = tokio::io::sink();
            let _ = tokio::io::copy(&mut tokio::io::stdin(), &mut sink).await;
            // Stdin closed: still never answer, until killed.
            std::future::pending::<()>().await;
        }
        "http" => http::serve().await,
        other => {
            if other == "garbage" {
                println!("Starting server... this line is not JSON-RPC");
                println!("{{\"not\": \"a message\"}}");
            }
            match TestServer.serve(rmcp::transport::stdio()).await {
                Ok(running) => {
                    let _ = running.waiting().await;
                }
                Err(e) => eprintln!("testserver: {e}"),
            }
        }
    }
}
