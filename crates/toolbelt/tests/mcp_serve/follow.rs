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
