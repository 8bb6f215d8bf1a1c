//! Servers started in the background (`McpServers::start`): a slow server joins when
//! it is up, a failing one is started again with backoff, and closing stops both. The
//! servers are the `mcp_testserver` example behind a small `sh` script that holds its
//! start until the test creates a file (the "gate"), so no test depends on a
//! server's speed.

// Test helpers outside #[test] functions may unwrap: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use toolbelt_config::settings::McpServerSettings;
use toolbelt_core::Tool;
use toolbelt_engine::registry::ToolRegistry;
use toolbelt_mcp::{McpServers, ServerConfig, ServerStatus};

fn testserver() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    let path = dir.join("examples").join("mcp_testserver");
    assert!(
        path.exists(),
        "{} is missing: `cargo test` builds it",
        path.display()
    );
    path
}

/// A stdio server running `script` under `sh`, with `$SERVER` the test server.
fn scripted(dir: &Path, alias: &str, script: &str) -> ServerConfig {
    let entry = McpServerSettings {
        command: Some("sh".into()),
        args: vec!["-c".into(), script.into()],
        env: [(
            "SERVER".to_string(),
            testserver().to_string_lossy().into_owned(),
        )]
        .into(),
        ..Default::default()
    };
    ServerConfig::from_settings(alias, &entry, dir).unwrap()
}

/// Waits (bounded) until `alias`'s status satisfies `done`.
async fn status_until(
    servers: &McpServers,
    alias: &str,
    done: impl FnMut(&ServerStatus) -> bool,
) -> ServerStatus {
    let connection = servers
        .connections()
        .iter()
        .find(|c| c.alias() == alias)
        .unwrap();
    let mut watch = connection.watch_status();
    tokio::time::timeout(Duration::from_secs(30), watch.wait_for(done))
        .await
        .expect("the status never came")
        .unwrap()
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_returns_at_once_and_a_slow_server_joins_when_it_is_up() {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let slow = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; exec \"$SERVER\"",
        gate.display()
    );
    let servers = McpServers::start(
        vec![
            scripted(dir.path(), "slow", &slow),
            scripted(dir.path(), "fast", "exec \"$SERVER\""),
        ],
        Vec::new(),
        &dir.path().join("logs"),
        &[],
    );
    servers.launch();
    // The gate is closed: `start` cannot have waited for this one.
    assert_eq!(servers.connections()[0].status(), ServerStatus::Connecting);
    servers.wait_started(&["fast".to_string()]).await;
    assert_eq!(servers.take_joined(), ["fast"]);
    assert_eq!(servers.connections()[0].status(), ServerStatus::Connecting);

    std::fs::write(&gate, "").unwrap();
    servers.wait_started(&["slow".to_string()]).await;
    assert_eq!(servers.connections()[0].status(), ServerStatus::Connected);
    assert_eq!(servers.take_joined(), ["slow"]);
    assert!(servers.take_joined().is_empty(), "announced once");
    let mut registry = ToolRegistry::new();
    servers.adopt("slow", &mut registry);
    let echo = registry
        .get("mcp__slow__echo")
        .expect("its tools are adopted");
    assert_eq!(echo.tool.display_name(), "echo (slow MCP Server)");
    servers.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_fails_to_start_is_started_again_after_a_backoff() {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let flaky = format!(
        "if [ -e '{}' ]; then exec \"$SERVER\"; fi; exit 3",
        gate.display()
    );
    let servers = McpServers::start(
        vec![scripted(dir.path(), "flaky", &flaky)],
        Vec::new(),
        &dir.path().join("logs"),
        &[],
    );
    servers.launch();
    let failed = status_until(&servers, "flaky", |s| {
        matches!(s, ServerStatus::Retrying { .. })
    })
    .await;
    let text = failed.to_string();
    assert!(
        text.starts_with("failed: ") && text.contains("start 2 of 6 in 1 s"),
        "{text}"
    );
    assert!(text.contains("server log"), "{text}");
    // Meanwhile a caller is told why at once, and no second copy is started.
    let tools: Vec<String> = servers.connections()[0]
        .tools()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert!(tools.is_empty());

    std::fs::write(&gate, "").unwrap();
    status_until(&servers, "flaky", |s| *s == ServerStatus::Connected).await;
    assert_eq!(servers.take_joined(), ["flaky"]);
    servers.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_ends_a_start_under_way_and_the_retries() {
    let dir = tempfile::tempdir().unwrap();
    let (pid_file, starts) = (dir.path().join("pid"), dir.path().join("starts"));
    let hangs = format!(
        "echo $$ > '{}'; while :; do sleep 0.05; done",
        pid_file.display()
    );
    let fails = format!("echo x >> '{}'; exit 3", starts.display());
    let servers = McpServers::start(
        vec![
            scripted(dir.path(), "hangs", &hangs),
            scripted(dir.path(), "fails", &fails),
        ],
        Vec::new(),
        &dir.path().join("logs"),
        &[],
    );
    servers.launch();
    status_until(&servers, "fails", |s| {
        matches!(s, ServerStatus::Retrying { .. })
    })
    .await;
    let pid: i32 = loop {
        // Written by the script as it starts; bounded by the test harness's timeout.
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            break pid;
        }
        tokio::task::yield_now().await;
    };
    servers.close().await;
    // The hanging start was killed with its process group.
    let gone = |pid: i32| {
        std::process::Command::new("kill")
            .args(["-0", &pid.to_string()])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| !s.success())
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !gone(pid) {
        assert!(std::time::Instant::now() < deadline, "{pid} still runs");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Not a synchronisation: a window past the first two backoffs (1 s, 2 s) in which
    // no start may happen.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let count = std::fs::read_to_string(&starts).unwrap().lines().count();
    assert_eq!(count, 1, "a start after close");
}
