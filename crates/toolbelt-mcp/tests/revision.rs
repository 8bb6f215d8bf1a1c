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
use tokio_util::sync::CancellationToken;
use toolbelt_config::settings::McpServerSettings;
use toolbelt_config::settings::Settings;
use toolbelt_core::BoxFuture;
use toolbelt_core::{
    ElicitationAnswer, ElicitationMode, ElicitationRequest, SampledReply, SamplingRequest,
    ServerAskSlot, ServerAsker, ServerSampler,
};
use toolbelt_core::{ExecContext, ToolEnvironment, ToolResult, WorkspaceRoots};
use toolbelt_engine::registry::ToolRegistry;
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
        self.connect_asking(ServerAskSlot::default()).await
    }

    /// [`Fixture::connect`], with `asks` answering what the server asks.
    async fn connect_asking(&self, asks: ServerAskSlot) -> (McpServers, ToolRegistry) {
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
        self.connect_with(entry, asks).await
    }

    /// The server of `entry` as "rev", connected.
    async fn connect_to(&self, entry: McpServerSettings) -> (McpServers, ToolRegistry) {
        self.connect_with(entry, ServerAskSlot::default()).await
    }

    async fn connect_with(
        &self,
        entry: McpServerSettings,
        asks: ServerAskSlot,
    ) -> (McpServers, ToolRegistry) {
        let mut config = ServerConfig::from_settings("rev", &entry, &self.ws()).unwrap();
        config.asks = asks;
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

/// A person who gives the name "Ada" to every form that asks for a name and approves
/// every sampling request, and a model that answers with a fixed haiku; each keeps what
/// it was asked.
#[derive(Default)]
struct Answering {
    asked: std::sync::Mutex<Vec<String>>,
}

impl ServerAsker for Answering {
    fn elicit<'a>(
        &'a self,
        request: &'a ElicitationRequest,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, ElicitationAnswer> {
        Box::pin(async move {
            self.asked.lock().unwrap().push(request.message.clone());
            match &request.mode {
                ElicitationMode::Form(form) if form.fields.iter().any(|f| f.name == "name") => {
                    let mut content = serde_json::Map::new();
                    content.insert("name".into(), json!("Ada"));
                    ElicitationAnswer::Accept(content)
                }
                _ => ElicitationAnswer::Decline,
            }
        })
    }

    fn approve_sampling<'a>(
        &'a self,
        request: &'a SamplingRequest,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<(), toolbelt_core::EmbedderError>> {
        Box::pin(async move {
            let system = request.system_prompt.clone().unwrap_or_default();
            self.asked.lock().unwrap().push(system);
            Ok(())
        })
    }
}

impl ServerSampler for Answering {
    fn sample<'a>(
        &'a self,
        request: &'a SamplingRequest,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<SampledReply, toolbelt_core::EmbedderError>> {
        Box::pin(async move {
            let asked = request.messages.first().map(|m| m.text.clone());
            Ok(SampledReply {
                text: format!("ferrous leaves fall ({})", asked.unwrap_or_default()),
                model: "fake-model".into(),
                truncated: false,
            })
        })
    }
}

/// In this revision an elicitation and a sampling request come as InputRequiredResult
/// rounds of the call: they reach the session's asker and model as a server's own
/// requests do, and the answers go back with the retried call.
#[tokio::test]
async fn a_2026_07_28_servers_elicitation_and_sampling_rounds_are_answered() {
    let Some(f) = Fixture::new() else { return };
    let answering = Arc::new(Answering::default());
    let asks = ServerAskSlot::default();
    asks.set_asker(answering.clone());
    asks.set_sampler(answering.clone());
    let (servers, registry) = f.connect_asking(asks).await;
    assert_eq!(
        servers.connections()[0].protocol_version().as_deref(),
        Some("2026-07-28")
    );
    let r = f.call(&registry, "mcp__rev__greet", json!({})).await;
    assert_eq!(r.llm_text(), "Hello, Ada!", "{r:?}");
    let r = f.call(&registry, "mcp__rev__haiku", json!({})).await;
    assert_eq!(
        r.llm_text(),
        "fake-model: ferrous leaves fall (A haiku on rust)",
        "{r:?}"
    );
    let asked = answering.asked.lock().unwrap().clone();
    assert_eq!(asked, ["Who is asking?", "You write haiku."], "{asked:?}");
}

/// With nobody to ask (headless), the elicitation round is declined and the server
/// hears it.
#[tokio::test]
async fn a_2026_07_28_servers_elicitation_round_is_declined_headless() {
    let Some(f) = Fixture::new() else { return };
    let (_servers, registry) = f.connect().await;
    let r = f.call(&registry, "mcp__rev__greet", json!({})).await;
    assert_eq!(r.llm_text(), "no name (decline)", "{r:?}");
}

/// A round that asks for more inputs than a client answers at once (each may be a
/// question to the person) fails the call with the reason, and asks nobody.
#[tokio::test]
async fn a_round_asking_for_too_many_inputs_at_once_is_refused() {
    let Some(f) = Fixture::new() else { return };
    let answering = Arc::new(Answering::default());
    let asks = ServerAskSlot::default();
    asks.set_asker(answering.clone());
    let (_servers, registry) = f.connect_asking(asks).await;
    let r = f.call(&registry, "mcp__rev__many_asks", json!({})).await;
    assert!(r.error.is_some(), "{r:?}");
    assert!(
        r.llm_text()
            .contains("asked for 9 inputs at once; toolbelt answers at most 8"),
        "{}",
        r.llm_text()
    );
    assert!(answering.asked.lock().unwrap().is_empty());
}
