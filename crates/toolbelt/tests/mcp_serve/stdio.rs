//! Listing and calling over stdio with rmcp's client; the workspace from the client's
//! roots.

use std::sync::atomic::Ordering;

use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn every_tool_is_listed_with_its_title_schema_and_annotations() {
    let ws = Ws::new();
    let service = ws.connect(TestClient::new(Answer::CannotAsk), &[]).await;
    let tools = bounded(service.list_all_tools()).await.unwrap();
    let get = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} not listed"))
    };
    for name in [
        "read_file",
        "grep_search",
        "edit",
        "run_shell_command",
        "glob",
    ] {
        let tool = get(name);
        assert_eq!(tool.input_schema.get("type"), Some(&json!("object")));
        assert!(tool.title.as_deref().is_some_and(|t| !t.is_empty()));
    }
    assert!(
        !tools.iter().any(|t| t.name == "ask_user_question"),
        "nothing over MCP can answer a question for the person"
    );
    let hints = |name: &str| get(name).annotations.clone().unwrap();
    let read = hints("read_file");
    assert_eq!(read.read_only_hint, Some(true));
    assert_eq!(read.open_world_hint, Some(false));
    let edit = hints("edit");
    assert_eq!(edit.read_only_hint, Some(false));
    assert_eq!(edit.destructive_hint, Some(true));
    assert_eq!(edit.idempotent_hint, Some(false));
    assert_eq!(hints("run_shell_command").destructive_hint, Some(true));
    assert_eq!(hints("write_file").idempotent_hint, Some(true));
    assert_eq!(hints("web_fetch").open_world_hint, Some(true));
    assert_eq!(hints("grep_search").open_world_hint, Some(false));
    assert_eq!(get("read_file").title.as_deref(), Some("ReadFile"));
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn reads_searches_and_errors_come_back_as_the_model_would_see_them() {
    let ws = Ws::new();
    let file = ws.ws().join("notes.txt");
    ws.write(&file, "alpha\nneedle in a haystack\nomega\n");
    let service = ws.connect(TestClient::new(Answer::CannotAsk), &[]).await;

    let read = call(&service, "read_file", json!({"absolute_path": file})).await;
    assert!(!is_error(&read), "{}", text(&read));
    assert!(text(&read).contains("needle in a haystack"));

    let grep = call(&service, "grep_search", json!({"pattern": "needle"})).await;
    assert!(!is_error(&grep));
    assert!(text(&grep).contains("notes.txt"), "{}", text(&grep));
    assert!(text(&grep).contains("2:"), "{}", text(&grep));

    let outside = call(
        &service,
        "read_file",
        json!({"absolute_path": "/etc/hostname"}),
    )
    .await;
    assert!(is_error(&outside));
    assert!(
        text(&outside).contains("outside the workspace"),
        "{}",
        text(&outside)
    );

    let unknown = call(&service, "read_fil", json!({})).await;
    assert!(is_error(&unknown));
    assert!(text(&unknown).contains("read_file"), "{}", text(&unknown));

    let invalid = call(&service, "read_file", json!({"absolute_path": 7})).await;
    assert!(is_error(&invalid));
    assert!(
        text(&invalid).contains("absolute_path"),
        "{}",
        text(&invalid)
    );
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn a_client_without_elicitation_is_told_how_to_allow_the_call() {
    let ws = Ws::new();
    let file = ws.ws().join("a.txt");
    ws.write(&file, "hello\n");
    let service = ws.connect(TestClient::new(Answer::CannotAsk), &[]).await;
    let edit = call(
        &service,
        "edit",
        json!({"file_path": file, "old_string": "hello", "new_string": "bye"}),
    )
    .await;
    assert!(is_error(&edit));
    let message = text(&edit);
    assert!(message.contains("offers no elicitation"), "{message}");
    assert!(message.contains("--approval-mode auto-edit"), "{message}");
    assert!(message.contains("--allowed-tools edit"), "{message}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello\n");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn allowed_tools_run_unasked_and_the_diff_comes_in_meta() {
    let ws = Ws::new();
    let file = ws.ws().join("a.txt");
    ws.write(&file, "hello\n");
    let service = ws
        .connect(
            TestClient::new(Answer::CannotAsk),
            &["--allowed-tools", "edit"],
        )
        .await;
    let edit = call(
        &service,
        "edit",
        json!({"file_path": file, "old_string": "hello", "new_string": "bye"}),
    )
    .await;
    assert!(!is_error(&edit), "{}", text(&edit));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "bye\n");
    let display = &edit.meta.as_ref().unwrap().0["toolbelt/display"];
    assert_eq!(display["type"], "file_diff");
    assert!(
        display["diff"].as_str().unwrap().contains("+bye"),
        "{display}"
    );
    // A read's display would only repeat its text: the answer carries the text once.
    let read = call(&service, "read_file", json!({"absolute_path": file})).await;
    assert_eq!(text(&read), "bye");
    assert!(read.meta.is_none(), "{:?}", read.meta);
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn the_clients_roots_are_the_workspace_and_follow_its_changes() {
    let ws = Ws::new();
    let in_other = ws.other().join("b.txt");
    ws.write(&in_other, "from the root\n");
    let in_ws = ws.ws().join("a.txt");
    ws.write(&in_ws, "from the server's directory\n");
    let client = TestClient::new(Answer::CannotAsk).with_roots(vec![ws.other()]);
    let roots = client.roots.clone().unwrap();
    let seen = client.seen.clone();
    let service = ws.connect(client, &[]).await;

    let read = call(&service, "read_file", json!({"absolute_path": in_other})).await;
    assert!(!is_error(&read), "{}", text(&read));
    let outside = call(&service, "read_file", json!({"absolute_path": in_ws})).await;
    assert!(is_error(&outside), "{}", text(&outside));

    *roots.lock().unwrap() = vec![ws.ws()];
    let changed = seen.list_changed_arrived.notified();
    bounded(service.notify_roots_list_changed()).await.unwrap();
    bounded(changed).await;
    assert!(seen.list_changed.load(Ordering::SeqCst) >= 1);
    let read = call(&service, "read_file", json!({"absolute_path": in_ws})).await;
    assert!(!is_error(&read), "{}", text(&read));
    let outside = call(&service, "read_file", json!({"absolute_path": in_other})).await;
    assert!(is_error(&outside), "{}", text(&outside));
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn proxied_servers_tools_are_offered_and_their_changes_announced() {
    let ws = Ws::new();
    let config = json!({"mcpServers": {"t": {"command": testserver()}}}).to_string();
    let client = TestClient::new(Answer::CannotAsk);
    let seen = client.seen.clone();
    let args = ["--proxy-mcp", "--mcp-config", &config, "--yolo"];
    let service = ws.connect(client, &args).await;
    let tools = bounded(service.list_all_tools()).await.unwrap();
    let echo = tools.iter().find(|t| t.name == "mcp__t__echo").unwrap();
    assert_eq!(
        echo.annotations.as_ref().unwrap().open_world_hint,
        Some(true)
    );
    let answer = call(&service, "mcp__t__echo", json!({"message": "through"})).await;
    assert!(text(&answer).contains("echo: through"), "{}", text(&answer));

    let changed = seen.list_changed_arrived.notified();
    call(&service, "mcp__t__add_tool", json!({"name": "fresh"})).await;
    bounded(changed).await;
    let tools = bounded(service.list_all_tools()).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "mcp__t__fresh"));
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn without_proxy_mcp_the_configured_servers_stay_out() {
    let ws = Ws::new();
    let config = json!({"mcpServers": {"t": {"command": testserver()}}}).to_string();
    let service = ws
        .connect(
            TestClient::new(Answer::CannotAsk),
            &["--mcp-config", &config],
        )
        .await;
    let tools = bounded(service.list_all_tools()).await.unwrap();
    assert!(tools.iter().all(|t| !t.name.starts_with("mcp__")));
    assert!(tools.iter().any(|t| t.name == "read_file"));
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn setup_warnings_reach_the_client_as_log_messages() {
    let ws = Ws::new();
    ws.write(&ws.ws().join(".qwen/tools/broken.json"), "{ not json");
    let client = TestClient::new(Answer::CannotAsk);
    let seen = client.seen.clone();
    let logged = seen.logs_arrived.notified();
    let service = ws.connect(client, &[]).await;
    bounded(service.list_all_tools()).await.unwrap();
    bounded(logged).await;
    let logs = seen.logs.lock().unwrap().join("\n");
    assert!(logs.contains("broken.json"), "{logs}");
    service.cancel().await.unwrap();
}

/// Runs `mcp serve` with `input` on its stdin (closed right after) and returns the
/// JSON-RPC messages it printed, once it has exited.
async fn serve_piped(ws: &Ws, args: &[&str], input: Vec<u8>) -> Vec<serde_json::Value> {
    use tokio::io::AsyncWriteExt;
    let mut child = ws
        .command(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Written from a task of its own: a large input fills the pipe before the server
    // has answered anything.
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(&input).await;
        drop(stdin);
    });
    let output = bounded(child.wait_with_output()).await.unwrap();
    writer.await.unwrap();
    assert!(output.status.success(), "{:?}", output.status);
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn handshake() -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "printf", "version": "1"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    format!("{init}\n{initialized}\n")
}

/// `printf '<init>\n<initialized>\n<tools/list>\n' | toolbelt mcp serve`: every request
/// read is answered before the server exits, also one that takes longer than the few
/// seconds rmcp waits for answers once its input has ended.
#[tokio::test]
async fn requests_sent_just_before_the_input_closes_are_answered() {
    let ws = Ws::new();
    let file = ws.ws().join("a.txt");
    ws.write(&file, "hello\n");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let read = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "read_file", "arguments": {"absolute_path": file}}});
    // The work of the call, not a wait for something: rmcp gives up after 5 s.
    let slow = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "run_shell_command", "arguments": {"command": "sleep 6; echo slept"}}});
    let input = format!("{}{list}\n{read}\n{slow}\n", handshake());
    let messages = serve_piped(&ws, &["--approval-mode", "yolo"], input.into_bytes()).await;
    let answer = |id: i64| {
        messages.iter().find(|m| m["id"] == id).unwrap_or_else(|| {
            panic!(
                "no answer to {id}: {:?}",
                messages.iter().map(|m| &m["id"]).collect::<Vec<_>>()
            )
        })
    };
    assert!(answer(2)["result"]["tools"].as_array().unwrap().len() > 5);
    assert_eq!(answer(3)["result"]["content"][0]["text"], "hello");
    let slept = answer(4)["result"]["content"][0]["text"].as_str().unwrap();
    assert!(slept.contains("Output: slept"), "{slept}");
}

/// A 50 MB request is answered with an error naming the limit, and the server goes on
/// reading what follows.
#[tokio::test]
async fn an_oversized_request_gets_an_error_naming_the_limit_and_serving_goes_on() {
    let ws = Ws::new();
    let big = "x".repeat(50 * 1024 * 1024);
    let write = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "write_file", "arguments": {"file_path": ws.ws().join("big.txt"), "content": big}}});
    let list = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"});
    let input = format!("{}{write}\n{list}\n", handshake());
    let messages = serve_piped(&ws, &[], input.into_bytes()).await;
    let refused = messages
        .iter()
        .find(|m| m["id"] == 7)
        .unwrap_or_else(|| panic!("no answer to the large request: {messages:?}"));
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("16 MiB"), "{message}");
    assert_eq!(refused["error"]["code"], -32600);
    assert!(
        messages
            .iter()
            .any(|m| m["id"] == 8 && m["result"]["tools"].is_array())
    );
    assert!(!ws.ws().join("big.txt").exists());
}

/// An MCP client's change is checkpointed like an agent's: `toolbelt restore` undoes
/// it. A read opens no history.
#[tokio::test]
async fn a_clients_change_is_checkpointed_and_toolbelt_restore_undoes_it() {
    let w = Ws::new();
    let ws = w.ws();
    w.write(&ws.join("a.txt"), "old\n");
    let service = w
        .connect(
            TestClient::new(Answer::CannotAsk),
            &["--approval-mode", "yolo"],
        )
        .await;
    let read = call(
        &service,
        "read_file",
        json!({"absolute_path": ws.join("a.txt")}),
    )
    .await;
    assert!(!is_error(&read), "{}", text(&read));
    assert!(!w.dir.path().join("tbhome/history").exists());
    let wrote = call(
        &service,
        "write_file",
        json!({"file_path": ws.join("a.txt"), "content": "new\n"}),
    )
    .await;
    assert!(!is_error(&wrote), "{}", text(&wrote));
    service.cancel().await.unwrap();
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "new\n");

    let list = w.toolbelt(&["restore", "--list"]).output().await.unwrap();
    let list = String::from_utf8_lossy(&list.stdout).to_string();
    let ids: Vec<&str> = list
        .lines()
        .filter(|l| l.contains("before write_file"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(ids.len(), 1, "{list}");
    let done = w
        .toolbelt(&["restore", ids[0], "--yes"])
        .output()
        .await
        .unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "old\n");
}
