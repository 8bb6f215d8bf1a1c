//! `/mcp auth NAME` in the interactive agent, against the OAuth fixture of `mcp_cli`
//! (`tests/fixtures/mcp_oauth_server.mjs`, from the MCP TypeScript SDK's auth parts, which
//! `scripts/setup.sh` installs): the server shows as "needs login", the command shows the
//! authorization URL (no browser: the terminal has no display), the test follows it as a
//! browser would, and the server comes up with its tools.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};

use crate::pty::{COLS, Pty};
use crate::support::Workspace;

/// The SDK's install, or `None` (skipped) outside CI when it is missing.
fn node_modules() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.cache/node/node_modules");
    let node = std::process::Command::new("node").arg("--version").output();
    if node.is_ok() && dir.join("@modelcontextprotocol/sdk/package.json").exists() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "node or the MCP TypeScript SDK is missing and CI must run this test; scripts/setup.sh installs it"
    );
    eprintln!("skipped: node or the MCP TypeScript SDK is missing");
    None
}

/// The URL the screen shows after `marker`: the rows it was wrapped over, joined.
fn url_after(screen: &str, marker: &str) -> String {
    let rows: Vec<&str> = screen.lines().collect();
    let at = rows.iter().position(|r| r.contains(marker)).unwrap();
    let mut url = String::new();
    for row in &rows[at + 1..] {
        let piece = row.trim_end();
        url.push_str(piece);
        if row.chars().count() < usize::from(COLS) || piece.contains(' ') {
            break;
        }
    }
    url.trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_auth_logs_in_from_the_interactive_agent_and_the_tools_join() {
    let Some(modules) = node_modules() else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_oauth_server.mjs");
    let mut fixture = tokio::process::Command::new("node")
        .arg(script)
        .arg(&modules)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(fixture.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let started: serde_json::Value = serde_json::from_str(&first).unwrap();
    let mcp = started["mcp"].as_str().unwrap();

    let w = Workspace::new();
    // The session waits for its servers' first start, so `/mcp` finds it over.
    let settings = w.dir.path().join("home/.qwen/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, json!({"mcp": {"waitAtStart": true}}).to_string()).unwrap();
    let server = FakeOpenAi::start(vec![Reply::text("ok")]).await.unwrap();
    let base = server.base_url();
    let servers = json!({"mcpServers": {"secure": {"httpUrl": mcp}}}).to_string();
    let args = [
        "--openai-base-url",
        base.as_str(),
        "-m",
        "fake-model",
        "--mcp-config",
        servers.as_str(),
    ];
    let bin = Path::new(env!("CARGO_BIN_EXE_toolbelt"));
    let env = [("DISPLAY", ""), ("WAYLAND_DISPLAY", "")];
    let pty = Pty::spawn(bin, &w.ws(), w.dir.path(), &args, &env);
    pty.wait_for(" mode (shift+tab");

    pty.line("/mcp");
    pty.wait_for("needs login: run `toolbelt mcp auth secure`");
    pty.line("/mcp auth secure");
    let marker = "Open this URL to log in to MCP server \"secure\":";
    let screen = pty.wait_until("the authorization URL", |s| {
        s.contains(marker) && s.contains("no graphical display")
    });
    let url = url_after(&screen, marker);
    assert!(
        url.contains("code_challenge_method=S256"),
        "{url}\n{screen}"
    );

    let http = toolbelt_netguard::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let answer = http.get(&url).send().await.unwrap();
    assert_eq!(answer.status(), 302, "{url}");
    let location = answer.headers()["location"].to_str().unwrap().to_string();
    let page = http
        .get(location)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("Logged in"), "{page}");
    pty.wait_for("Logged in to MCP server \"secure\": it is connected");

    pty.line("/mcp");
    pty.wait_until("the server up with its tool", |s| {
        s.contains("auth: oauth") && s.contains("mcp__secure__whoami")
    });
}
