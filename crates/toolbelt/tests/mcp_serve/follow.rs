//! A running server follows the files that define its tools: settings, manifests and
//! skills edited while a client is connected change what it offers (announced with
//! `notifications/tools/list_changed`) and the rules its next call meets.

use std::sync::atomic::Ordering;

use serde_json::json;

use crate::support::*;

/// Whether process `pid` runs (exists and is no zombie).
fn alive(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .trim_start()
        .chars()
        .next();
    matches!(state, Some('S' | 'R' | 'D'))
}

async fn tool_names(service: &Service) -> Vec<String> {
    bounded(service.list_all_tools())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

#[tokio::test]
async fn settings_manifests_and_skills_edited_while_serving_are_followed() {
    let ws = Ws::new();
    let client = TestClient::new(Answer::CannotAsk);
    let seen = client.seen.clone();
    // No `.qwen` folder yet: the server must notice it appear.
    let service = ws
        .connect(client, &["--approval-mode", "yolo", "--trust-workspace"])
        .await;
    let names = tool_names(&service).await;
    assert!(names.iter().any(|n| n == "glob"), "{names:?}");
    let echo = json!({"command": "echo followed"});
    let ran = call(&service, "run_shell_command", echo.clone()).await;
    assert!(!is_error(&ran), "{}", text(&ran));

    // One edit: a tool excluded (the list changes) and a deny rule (only the rules do).
    let changed = seen.list_changed_arrived.notified();
    ws.write(
        &ws.ws().join(".qwen/settings.json"),
        r#"{"tools": {"exclude": ["glob"]},
            "permissions": {"deny": ["run_shell_command(echo *)"]}}"#,
    );
    bounded(changed).await;
    let names = tool_names(&service).await;
    assert!(!names.iter().any(|n| n == "glob"), "{names:?}");
    let refused = call(&service, "run_shell_command", echo).await;
    assert!(is_error(&refused), "{}", text(&refused));
    assert!(text(&refused).contains("deny rule"), "{}", text(&refused));

    // A declared tool's manifest added to `.qwen/tools/`.
    let changed = seen.list_changed_arrived.notified();
    ws.write(
        &ws.ws().join(".qwen/tools/notes.json"),
        r#"{"languageModelTools": [{"name": "find_todos", "displayName": "Find TODOs",
              "modelDescription": "Finds the TODO comments.",
              "inputSchema": {"type": "object", "properties": {}}}],
            "bindings": {"find_todos": {"builtin": "grep_search",
                                        "arguments": {"pattern": "TODO"}}}}"#,
    );
    bounded(changed).await;
    let names = tool_names(&service).await;
    assert!(names.iter().any(|n| n == "find_todos"), "{names:?}");

    // A skill in the user's skills folder: the `skill` tool appears.
    let changed = seen.list_changed_arrived.notified();
    ws.write(
        &ws.dir.path().join("home/.qwen/skills/release/SKILL.md"),
        "---\nname: release\ndescription: How to cut a release.\n---\nBump, tag, push.\n",
    );
    bounded(changed).await;
    let names = tool_names(&service).await;
    assert!(names.iter().any(|n| n == "skill"), "{names:?}");
    assert!(seen.list_changed.load(Ordering::SeqCst) >= 3);
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn a_settings_edit_after_an_approved_plan_keeps_the_mode_the_plan_left() {
    let ws = Ws::new();
    let client = TestClient::new(Answer::Accept { always: false });
    let seen = client.seen.clone();
    let service = ws.connect(client, &["--approval-mode", "plan"]).await;
    let plan = call(
        &service,
        "exit_plan_mode",
        json!({"plan": "1. write notes.txt"}),
    )
    .await;
    assert!(!is_error(&plan), "{}", text(&plan));

    // The tools are opened again (a tool excluded) ...
    let changed = seen.list_changed_arrived.notified();
    ws.write(
        &ws.ws().join(".qwen/settings.json"),
        r#"{"tools": {"exclude": ["glob"]}}"#,
    );
    bounded(changed).await;
    // ... and a write is not refused as plan mode: the person approved the plan.
    let path = ws.ws().join("notes.txt");
    let wrote = call(
        &service,
        "write_file",
        json!({"file_path": path, "content": "notes\n"}),
    )
    .await;
    assert!(!is_error(&wrote), "{}", text(&wrote));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "notes\n");
    service.cancel().await.unwrap();
}

/// Opening the tools again keeps the workspace's background commands running; the
/// client stops one with `task_stop`.
#[tokio::test]
async fn background_commands_survive_the_tools_being_opened_again_and_stop_on_request() {
    let ws = Ws::new();
    let client = TestClient::new(Answer::CannotAsk);
    let seen = client.seen.clone();
    let service = ws.connect(client, &["--approval-mode", "yolo"]).await;
    let started = call(
        &service,
        "run_shell_command",
        json!({"command": "sleep 4323", "is_background": true}),
    )
    .await;
    assert!(!is_error(&started), "{}", text(&started));
    let pid: u32 = text(&started)
        .lines()
        .find_map(|l| l.strip_prefix("PID: "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no PID in {}", text(&started)));
    let pid = host_pid(pid, "sleep 4323");

    let changed = seen.list_changed_arrived.notified();
    ws.write(
        &ws.ws().join(".qwen/settings.json"),
        r#"{"tools": {"exclude": ["glob"]}}"#,
    );
    bounded(changed).await;
    // A call after the change runs on the new tools (and waits for any cleanup the
    // old ones would have done when dropped).
    let listed = call(&service, "run_shell_command", json!({"command": "true"})).await;
    assert!(!is_error(&listed), "{}", text(&listed));
    assert!(
        alive(pid),
        "the background command ended with the old tools"
    );
    // The client stops it.
    let stopped = call(&service, "task_stop", json!({"task_id": "bg_1"})).await;
    assert!(text(&stopped).contains("was stopped"), "{}", text(&stopped));
    assert!(!alive(pid), "task_stop left it running");
    service.cancel().await.unwrap();
}

/// A language server that answers `hover` with its own name and writes its pid to
/// `<name>.pid` in its working directory (the workspace).
const NAMED_SERVER: &str = r#"
import json, os, sys
name = sys.argv[1]
with open(name + ".pid", "w") as f: f.write(str(os.getpid()))
def read():
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line: sys.exit(0)
        line = line.strip()
        if not line: break
        if line.lower().startswith(b"content-length:"): length = int(line.split(b":")[1])
    return json.loads(sys.stdin.buffer.read(length))
def send(msg):
    body = json.dumps(msg).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()
while True:
    msg = read()
    method = msg.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": {"hoverProvider": True}}})
    elif method == "textDocument/didOpen":
        uri = msg["params"]["textDocument"]["uri"]
        send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {"uri": uri, "diagnostics": []}})
    elif method == "textDocument/hover":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"contents": "I am " + name}})
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
    elif method == "exit":
        sys.exit(0)
"#;

fn lsp_json(ws: &Ws, name: &str) -> String {
    json!({name: {"command": "python3", "args": [ws.ws().join("server.py"), name],
                  "extensionToLanguage": {".py": "python"}}})
    .to_string()
}

fn read_pid(ws: &Ws, name: &str) -> u32 {
    let path = ws.ws().join(format!("{name}.pid"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .parse()
        .unwrap()
}

/// Issue 32: the language servers follow `.lsp.json` while serving. A settings edit
/// that leaves their configuration alone keeps the running server (and its warm state);
/// an edit of `.lsp.json` ends it, and the next call is answered by the new one.
#[tokio::test]
async fn an_edited_lsp_json_replaces_the_language_server_and_ends_the_old_one() {
    let ws = Ws::new();
    ws.write(&ws.ws().join("server.py"), NAMED_SERVER);
    ws.write(&ws.ws().join("main.py"), "x = 1\n");
    ws.write(&ws.ws().join(".lsp.json"), &lsp_json(&ws, "alpha"));
    let client = TestClient::new(Answer::CannotAsk);
    let seen = client.seen.clone();
    let service = ws.connect(client, &["--trust-workspace"]).await;
    let hover = json!({"operation": "hover", "filePath": ws.ws().join("main.py"),
                       "line": 1, "character": 1});
    let first = call(&service, "lsp", hover.clone()).await;
    assert_eq!(text(&first), "I am alpha");
    let alpha = read_pid(&ws, "alpha");

    // A settings edit: the tools are opened again, the server is kept.
    let changed = seen.list_changed_arrived.notified();
    ws.write(
        &ws.ws().join(".qwen/settings.json"),
        r#"{"tools": {"exclude": ["glob"]}}"#,
    );
    bounded(changed).await;
    assert_eq!(
        text(&call(&service, "lsp", hover.clone()).await),
        "I am alpha"
    );
    assert_eq!(read_pid(&ws, "alpha"), alpha, "the same server answered");
    assert!(alive(alpha));

    // `.lsp.json` names another server: the old one is ended before the new tools are
    // offered (the tool's description names the servers, so the list changed).
    let changed = seen.list_changed_arrived.notified();
    ws.write(&ws.ws().join(".lsp.json"), &lsp_json(&ws, "beta"));
    bounded(changed).await;
    assert!(!alive(alpha), "the old server {alpha} still runs");
    assert_eq!(text(&call(&service, "lsp", hover).await), "I am beta");
    let beta = read_pid(&ws, "beta");
    assert!(alive(beta));
    service.cancel().await.unwrap();
}
