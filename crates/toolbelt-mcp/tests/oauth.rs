//! A session's server behind OAuth (`McpServers::log_in`, what `/mcp auth` runs), against
//! the binary tests' fixture `crates/toolbelt/tests/fixtures/mcp_oauth_server.mjs` (an
//! authorization server and an MCP server from the MCP TypeScript SDK's auth parts, which
//! `scripts/setup.sh` installs): the server is "needs login" and left alone until the
//! login; then it starts again by itself and its tools join the session. The test follows
//! the login's redirect as a browser would.

// Test helpers outside #[test] functions may unwrap: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use toolbelt_config::settings::McpServerSettings;
use toolbelt_engine::registry::ToolRegistry;
use toolbelt_mcp::{McpServers, ServerConfig, ServerStatus};

/// The SDK's install, or `None` (skipped) outside CI when it is missing.
fn node_modules() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.cache/node/node_modules");
    let found = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok()
        && dir.join("@modelcontextprotocol/sdk/package.json").exists()
        && dir.join("express").exists();
    if found {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "node or the MCP TypeScript SDK is missing and CI must run this test; scripts/setup.sh installs it"
    );
    eprintln!("skipped: node or the MCP TypeScript SDK is missing");
    None
}

/// The fixture, running (killed when dropped), and its MCP URL.
async fn oauth_server(modules: &Path) -> (tokio::process::Child, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../toolbelt/tests/fixtures/mcp_oauth_server.mjs");
    let mut child = tokio::process::Command::new("node")
        .arg(script)
        .arg(modules)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("the fixture did not start within 60 s")
        .unwrap()
        .expect("the fixture exited");
    let started: serde_json::Value = serde_json::from_str(&first).unwrap();
    (child, started["mcp"].as_str().unwrap().to_string())
}

/// The browser: fetches the authorization URL, follows its redirect to the listener,
/// and returns the page the listener answered.
async fn follow(url: String) -> String {
    let http = toolbelt_netguard::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let answer = http.get(url).send().await.unwrap();
    assert_eq!(answer.status(), 302);
    let location = answer.headers()["location"].to_str().unwrap().to_string();
    http.get(location)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_needs_a_login_starts_again_after_it_and_its_tools_join() {
    let Some(modules) = node_modules() else {
        return;
    };
    let (_fixture, url) = oauth_server(&modules).await;
    let dir = tempfile::tempdir().unwrap();
    let entry = McpServerSettings {
        http_url: Some(url),
        ..Default::default()
    };
    let mut config = ServerConfig::from_settings("secure", &entry, dir.path()).unwrap();
    config.oauth.store_dir = Some(dir.path().join("mcp-oauth"));
    let servers = McpServers::start(
        vec![config],
        Vec::new(),
        &dir.path().join("logs"),
        &["secure".to_string()],
    );
    servers.wait_started(&["secure".to_string()]).await;
    let status = servers.connections()[0].status();
    assert!(
        matches!(&status, ServerStatus::NeedsLogin(hint) if hint.contains("toolbelt mcp auth secure")),
        "{status:?}"
    );
    assert!(servers.take_joined().is_empty());

    let (url_tx, url_rx) = tokio::sync::oneshot::channel::<String>();
    let login = servers.log_in("secure", Duration::from_secs(60), move |url| {
        let _ = url_tx.send(url.to_string());
    });
    let browser = async { follow(url_rx.await.unwrap()).await };
    let (kept, page) = tokio::join!(login, browser);
    let kept = kept.unwrap();
    assert!(kept.starts_with(dir.path().join("mcp-oauth")), "{kept:?}");
    assert!(page.contains("Logged in"), "{page}");

    let mut watch = servers.connections()[0].watch_status();
    tokio::time::timeout(
        Duration::from_secs(60),
        watch.wait_for(|s| *s == ServerStatus::Connected),
    )
    .await
    .expect("the server did not come up after the login")
    .unwrap();
    assert_eq!(servers.take_joined(), ["secure"]);
    let mut registry = ToolRegistry::new();
    servers.adopt("secure", &mut registry);
    assert!(registry.get("mcp__secure__whoami").is_some());
    servers.close().await;
}
