#![allow(clippy::too_many_lines)]
//! The MCP client against servers that misbehave: a handshake that never answers (the
//! process must be killed, not left behind), a server that cannot be restarted (a
//! cancelled call ends at once instead of waiting out the reconnects), and a legacy SSE
//! server whose `endpoint` points at another origin (the configured headers must not go
//! there).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolbelt_config::settings::McpServerSettings;
use toolbelt_config::settings::Settings;
use toolbelt_core::{ErrorKind, ExecContext, ToolEnvironment, WorkspaceRoots};
use toolbelt_engine::registry::ToolRegistry;
use toolbelt_mcp::{McpServers, ServerConfig, ServerStatus};

fn testserver() -> PathBuf {
    // `cargo test` builds the examples next to the test binaries' directory.
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/mcp_testserver");
    assert!(path.exists(), "{} is missing", path.display());
    path
}

struct Fixture {
    dir: tempfile::TempDir,
    env: Arc<ToolEnvironment>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let roots = WorkspaceRoots::new([dir.path().join("ws")]).unwrap();
    let env = Arc::new(ToolEnvironment::new(
        roots,
        Arc::new(Settings::default()),
        dir.path().join("session"),
    ));
    Fixture { dir, env }
}

impl Fixture {
    async fn connect(&self, alias: &str, entry: McpServerSettings) -> (McpServers, ToolRegistry) {
        let config =
            ServerConfig::from_settings(alias, &entry, &self.dir.path().join("ws")).unwrap();
        let servers =
            McpServers::connect_all(vec![config], Vec::new(), &self.dir.path().join("logs")).await;
        let mut registry = ToolRegistry::new();
        servers.register(&mut registry);
        (servers, registry)
    }
}

/// Polls with a generous deadline (a loaded machine is slow).
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat[stat.rfind(')').unwrap() + 1..]
            .split_whitespace()
            .next()
            .is_some_and(|s| s == "Z" || s == "X"),
    }
}

#[tokio::test]
async fn a_server_whose_handshake_times_out_is_killed() {
    let f = fixture();
    let pid_file = f.dir.path().join("server.pid");
    let entry = McpServerSettings {
        command: Some(testserver().display().to_string()),
        args: vec!["silent".into()],
        env: [(
            "TESTSERVER_PID_FILE".to_string(),
            pid_file.display().to_string(),
        )]
        .into(),
        startup_timeout: Some(1500),
        ..Default::default()
    };
    let (servers, _) = f.connect("hangs", entry).await;
    assert!(matches!(
        servers.connections()[0].status(),
        ServerStatus::Failed(why) if why.contains("no answer within")
    ));
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    eventually("the silent server to be killed", || gone(pid)).await;
}

#[tokio::test]
async fn a_cancelled_call_ends_at_once_while_the_server_restarts() {
    let f = fixture();
    let marker = f.dir.path().join("started-once");
    let entry = McpServerSettings {
        command: Some(testserver().display().to_string()),
        env: [(
            "TESTSERVER_HANG_ON_RESTART".to_string(),
            marker.display().to_string(),
        )]
        .into(),
        // Three restarts of 20 s each would take a minute.
        startup_timeout: Some(20_000),
        ..Default::default()
    };
    let (_servers, registry) = f.connect("t", entry).await;
    let call = |name: &str, args, ctx| {
        let (_, call) = registry.build(name, args).unwrap();
        call.execute(ctx)
    };
    let crashed = call("mcp__t__crash", json!({}), ExecContext::new(f.env.clone())).await;
    assert_eq!(crashed.error.map(|e| e.kind), Some(ErrorKind::McpToolError));
    // Two calls wait for the same restart, which hangs; both are cancelled.
    let first = ExecContext::new(f.env.clone());
    let second = ExecContext::new(f.env.clone());
    let (cancel_first, cancel_second) = (first.cancel.clone(), second.cancel.clone());
    let a = tokio::spawn(call("mcp__t__echo", json!({"message": "a"}), first));
    let b = tokio::spawn(call("mcp__t__echo", json!({"message": "b"}), second));
    let started = Instant::now();
    cancel_first.cancel();
    let a = a.await.unwrap();
    assert_eq!(a.error.map(|e| e.kind), Some(ErrorKind::Cancelled));
    cancel_second.cancel();
    let b = b.await.unwrap();
    assert_eq!(b.error.map(|e| e.kind), Some(ErrorKind::Cancelled));
    // Far under one connect timeout, let alone three.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

/// A legacy SSE server on 127.0.0.1 whose `endpoint` event points at `endpoint`, and a
/// second listener standing for another origin that records whether anything arrived.
#[tokio::test]
async fn an_sse_endpoint_on_another_origin_is_refused_and_gets_no_headers() {
    let f = fixture();
    let other = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let other_port = other.local_addr().unwrap().port();
    let server = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = server.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = server.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let body = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n\
                     event: endpoint\ndata: http://127.0.0.1:{other_port}/messages?session=1\n\n"
                );
                let _ = socket.write_all(body.as_bytes()).await;
                // Keep the stream open, as an SSE server does.
                let _ = socket.read(&mut buf).await;
            });
        }
    });
    let entry = McpServerSettings {
        url: Some(format!("http://127.0.0.1:{port}/sse")),
        headers: [(
            "Authorization".to_string(),
            "Bearer sekrit-token".to_string(),
        )]
        .into(),
        startup_timeout: Some(10_000),
        ..Default::default()
    };
    let (servers, _) = f.connect("sse", entry).await;
    match servers.connections()[0].status() {
        ServerStatus::Failed(why) => {
            assert!(why.contains("origin"), "{why}");
            assert!(!why.contains("sekrit-token"), "{why}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // Nothing reached the other origin (the connection failed before any request).
    let accepted = tokio::time::timeout(Duration::from_millis(1), other.accept()).await;
    assert!(accepted.is_err(), "a request reached the other origin");
}
