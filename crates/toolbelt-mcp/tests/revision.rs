//! The MCP client against a server on the official Python MCP SDK that speaks the
//! 2026-07-28 revision (`tests/fixtures/rev2026_server.py`, run by the virtualenv
//! `scripts/setup.sh` makes in `.cache/python`): toolbelt probes it with
//! `server/discover`, calls its tools statelessly, answers its `InputRequiredResult`
//! for the roots with the workspace, and hears its list changes on
//! `subscriptions/listen`. Servers of older revisions are in `servers.rs`.

// Test helpers outside #[test] functions may unwrap: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use toolbelt_core::settings::McpServerSettings;
use toolbelt_core::{
    ExecContext, Settings, ToolEnvironment, ToolRegistry, ToolResult, WorkspaceRoots,
};
use toolbelt_mcp::{McpServers, ServerConfig, ServerStatus};

/// The virtualenv's Python with the SDK, or `None` (skipped) outside CI when missing.
fn python() -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.cache/python/bin/python");
    if python.exists() {
        return Some(python);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is missing and CI must run this test; scripts/setup.sh creates it",
        python.display()
    );
    eprintln!("skipped: {} is missing", python.display());
    None
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rev2026_server.py")
}

struct Fixture {
    dir: tempfile::TempDir,
    env: Arc<ToolEnvironment>,
    python: PathBuf,
}

impl Fixture {
    fn new() -> Option<Fixture> {
        let python = python()?;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        let roots = WorkspaceRoots::new([dir.path().join("ws")]).unwrap();
        let env = Arc::new(ToolEnvironment::new(
            roots,
            Arc::new(Settings::default()),
            dir.path().join("session"),
        ));
        Some(Fixture { dir, env, python })
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// The fixture server over stdio, with its own HOME.
    async fn connect(&self) -> (McpServers, ToolRegistry) {
        let entry = McpServerSettings {
            command: Some(self.python.to_string_lossy().into_owned()),
            args: vec![script().to_string_lossy().into_owned()],
            env: [(
                "HOME".to_string(),
                self.dir.path().to_string_lossy().into_owned(),
            )]
            .into(),
            ..Default::default()
        };
        self.connect_to(entry).await
    }

    /// The server of `entry` as "rev", connected.
    async fn connect_to(&self, entry: McpServerSettings) -> (McpServers, ToolRegistry) {
        let config = ServerConfig::from_settings("rev", &entry, &self.ws()).unwrap();
        let log_dir = self.dir.path().join("session").join("mcp");
        let servers = McpServers::connect_all(vec![config], Vec::new(), &log_dir).await;
        assert_eq!(
            servers.connections()[0].status(),
            ServerStatus::Connected,
            "{:?}",
            servers.reports()
        );
        let mut registry = ToolRegistry::new();
        servers.register(&mut registry);
        (servers, registry)
    }

    async fn call(&self, registry: &ToolRegistry, name: &str, args: Value) -> ToolResult {
        match registry.build(name, args) {
            Ok((_, call)) => call.execute(ExecContext::new(self.env.clone())).await,
            Err(e) => ToolResult::error(e),
        }
    }
}

#[tokio::test]
async fn a_2026_07_28_server_is_spoken_to_in_its_revision() {
    let Some(f) = Fixture::new() else { return };
    let (servers, registry) = f.connect().await;
    assert!(registry.get("mcp__rev__echo").is_some());
    assert_eq!(
        f.call(&registry, "mcp__rev__protocol", json!({}))
            .await
            .llm_text(),
        "2026-07-28"
    );
    assert_eq!(
        f.call(&registry, "mcp__rev__echo", json!({"message": "hi"}))
            .await
            .llm_text(),
        "echo: hi"
    );
    assert_eq!(
        servers.connections()[0].protocol_version().as_deref(),
        Some("2026-07-28")
    );
}

#[tokio::test]
async fn the_roots_a_2026_07_28_server_asks_for_are_the_workspace() {
    let Some(f) = Fixture::new() else { return };
    let (servers, registry) = f.connect().await;
    // In this revision the server asks with an InputRequiredResult, not a request.
    assert_eq!(
        servers.connections()[0].protocol_version().as_deref(),
        Some("2026-07-28")
    );
    let r = f.call(&registry, "mcp__rev__workspace", json!({})).await;
    assert!(r.error.is_none(), "{r:?}");
    let uris: Vec<String> = [f.ws(), std::fs::canonicalize(f.ws()).unwrap()]
        .iter()
        .map(|path| url::Url::from_file_path(path).unwrap().to_string())
        .collect();
    let text = r.llm_text();
    assert!(uris.contains(&text), "{text} is not one of {uris:?}");
}

#[tokio::test]
async fn a_tool_a_2026_07_28_server_adds_joins_through_subscriptions_listen() {
    let Some(f) = Fixture::new() else { return };
    let (servers, mut registry) = f.connect().await;
    assert!(registry.get("mcp__rev__late").is_none());
    let r = f
        .call(&registry, "mcp__rev__add_tool", json!({"name": "late"}))
        .await;
    assert_eq!(r.llm_text(), "added late");
    let alias = tokio::time::timeout(Duration::from_secs(10), servers.wait_for_change())
        .await
        .expect("a list change on the subscriptions/listen stream");
    assert_eq!(alias.as_deref(), Some("rev"));
    servers.refresh("rev", &mut registry).await.unwrap();
    assert_eq!(
        f.call(&registry, "mcp__rev__late", json!({}))
            .await
            .llm_text(),
        "I am late"
    );
}

#[tokio::test]
async fn a_2026_07_28_server_over_streamable_http_is_spoken_to_in_its_revision() {
    let Some(f) = Fixture::new() else { return };
    let mut child = tokio::process::Command::new(&f.python)
        .arg(script())
        .arg("http")
        .env("HOME", f.dir.path())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let url = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let entry = McpServerSettings {
        http_url: Some(url),
        ..Default::default()
    };
    let (servers, registry) = f.connect_to(entry).await;
    assert_eq!(
        servers.connections()[0].protocol_version().as_deref(),
        Some("2026-07-28")
    );
    assert_eq!(
        f.call(&registry, "mcp__rev__echo", json!({"message": "over http"}))
            .await
            .llm_text(),
        "echo: over http"
    );
    let r = f.call(&registry, "mcp__rev__workspace", json!({})).await;
    assert!(r.llm_text().starts_with("file://"), "{r:?}");
}

#[tokio::test]
async fn a_prompt_that_asks_for_the_roots_gets_the_workspace() {
    let Some(f) = Fixture::new() else { return };
    let (servers, _registry) = f.connect().await;
    let text = servers
        .run_prompt_command("/rev:review")
        .await
        .expect("a prompt command")
        .unwrap();
    let uri = url::Url::from_file_path(f.ws()).unwrap();
    assert!(text.contains(&format!("Review {uri}")), "{text}");
}
