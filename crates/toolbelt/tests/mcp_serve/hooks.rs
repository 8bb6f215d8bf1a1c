//! Hooks under `mcp serve`: the workspace's tool hooks run around every client's calls,
//! a refusal reaches the client as the call's error, and each hook hears the MCP
//! client's session as `session_id` (over HTTP the `Mcp-Session-Id` the client sends;
//! the toolset and its hook engine are shared by every connection, so not theirs).

use serde_json::{Value, json};

use crate::http::{initialize, message, post, start_http};
use crate::support::*;

/// The user's settings: a PreToolUse hook that logs `session_id` and the command, and
/// refuses `rm`.
fn hooks(ws: &Ws) -> std::path::PathBuf {
    let log = ws.dir.path().join("sessions.log");
    let hook = format!(
        r#"input=$(cat); echo "$input" | jq -r '[.session_id, .tool_input.command] | join(" ")' >> {}; if echo "$input" | jq -e '.tool_input.command | startswith("rm ")' > /dev/null; then echo 'no rm over mcp' >&2; exit 2; fi"#,
        log.display()
    );
    ws.write(
        &ws.dir.path().join("home/.qwen/settings.json"),
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": hook}]}]}})
            .to_string(),
    );
    log
}

/// Opens an HTTP session: its `Mcp-Session-Id`.
async fn open(url: &str) -> String {
    let (status, headers, body) = post(url, &initialize(1), &[]).await;
    assert_eq!(status, 200, "{body}");
    let id = headers["mcp-session-id"].to_str().unwrap().to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, body) = post(url, &initialized, &[("Mcp-Session-Id", &id)]).await;
    assert!(status.is_success(), "{status} {body}");
    id
}

async fn shell(url: &str, session: &str, command: &str) -> Value {
    let request = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "run_shell_command", "arguments": {"command": command}}});
    let (status, _, body) = post(url, &request, &[("Mcp-Session-Id", session)]).await;
    assert_eq!(status, 200, "{body}");
    message(&body)["result"].clone()
}

#[tokio::test]
async fn tool_hooks_hear_each_mcp_clients_own_session() {
    let ws = Ws::new();
    let log = hooks(&ws);
    ws.write(&ws.ws().join("keep.txt"), "x");
    let (_server, url) = start_http(&ws, &["--approval-mode", "yolo"], &[]).await;
    let (first, second) = (open(&url).await, open(&url).await);
    assert_ne!(first, second);
    let ran = shell(&url, &first, "echo one").await;
    assert_eq!(ran["isError"], false, "{ran}");
    let refused = shell(&url, &second, "rm keep.txt").await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(refused.to_string().contains("no rm over mcp"), "{refused}");
    assert!(ws.ws().join("keep.txt").exists());

    // Over stdio the connection is the session: an id of its own.
    let stdio = ws
        .connect(
            TestClient::new(Answer::CannotAsk),
            &["--approval-mode", "yolo"],
        )
        .await;
    let result = call(
        &stdio,
        "run_shell_command",
        json!({"command": "echo three"}),
    )
    .await;
    assert!(!is_error(&result), "{}", text(&result));
    stdio.cancel().await.unwrap();

    let logged = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = logged.lines().collect();
    assert_eq!(lines.len(), 3, "{logged}");
    assert_eq!(lines[0], format!("{first} echo one"));
    assert_eq!(lines[1], format!("{second} rm keep.txt"));
    let (id, command) = lines[2].split_once(' ').unwrap();
    assert_eq!(command, "echo three");
    assert!(id.len() >= 32 && id != first && id != second, "{id}");
}
