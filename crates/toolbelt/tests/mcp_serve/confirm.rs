//! Confirmation through elicitation, live output as progress, and cancellation.

use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
};
use rmcp::service::PeerRequestOptions;
use serde_json::json;

use crate::support::*;

fn edit_args(file: &std::path::Path) -> serde_json::Value {
    json!({"file_path": file, "old_string": "hello", "new_string": "bye"})
}

#[tokio::test]
async fn an_accepted_question_runs_the_edit_after_showing_the_diff() {
    let ws = Ws::new();
    let file = ws.ws().join("a.txt");
    ws.write(&file, "hello\n");
    let client = TestClient::new(Answer::Accept { always: false });
    let service = ws.connect(client.clone(), &[]).await;
    let edit = call(&service, "edit", edit_args(&file)).await;
    assert!(!is_error(&edit), "{}", text(&edit));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "bye\n");
    let questions = client.questions();
    assert_eq!(questions.len(), 1);
    assert!(questions[0].contains("-hello"), "{}", questions[0]);
    assert!(questions[0].contains("+bye"), "{}", questions[0]);
    let schema = client.seen.schemas.lock().unwrap()[0].clone();
    assert_eq!(schema["properties"]["always"]["type"], "boolean");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn a_declined_question_leaves_the_file_unchanged() {
    let ws = Ws::new();
    let file = ws.ws().join("a.txt");
    ws.write(&file, "hello\n");
    let client = TestClient::new(Answer::Decline);
    let service = ws.connect(client.clone(), &[]).await;
    let edit = call(&service, "edit", edit_args(&file)).await;
    assert!(is_error(&edit));
    assert!(text(&edit).contains("did not allow"), "{}", text(&edit));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello\n");
    assert_eq!(client.questions().len(), 1);
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn always_for_a_root_command_stops_the_next_question_for_it_only() {
    let ws = Ws::new();
    let client = TestClient::new(Answer::Accept { always: true });
    let service = ws.connect(client.clone(), &[]).await;
    let first = call(
        &service,
        "run_shell_command",
        json!({"command": "touch one"}),
    )
    .await;
    assert!(!is_error(&first), "{}", text(&first));
    assert!(ws.ws().join("one").exists());
    assert_eq!(client.questions().len(), 1);
    assert!(client.questions()[0].contains("touch one"));
    let schema = client.seen.schemas.lock().unwrap()[0].clone();
    let label = schema["properties"]["always"]["title"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(label.contains("touch"), "{label}");
    let second = call(
        &service,
        "run_shell_command",
        json!({"command": "touch two"}),
    )
    .await;
    assert!(!is_error(&second), "{}", text(&second));
    assert!(ws.ws().join("two").exists());
    assert_eq!(
        client.questions().len(),
        1,
        "touch was allowed for the connection"
    );
    let other = call(
        &service,
        "run_shell_command",
        json!({"command": "mkdir three"}),
    )
    .await;
    assert!(!is_error(&other), "{}", text(&other));
    assert_eq!(client.questions().len(), 2, "mkdir is another root command");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn read_only_tools_never_ask() {
    let ws = Ws::new();
    let file = ws.ws().join("a.txt");
    ws.write(&file, "hello\n");
    let client = TestClient::new(Answer::Decline);
    let service = ws.connect(client.clone(), &[]).await;
    for (tool, args) in [
        ("read_file", json!({"absolute_path": file})),
        ("grep_search", json!({"pattern": "hello"})),
        ("glob", json!({"pattern": "*.txt"})),
        ("list_directory", json!({"path": ws.ws()})),
    ] {
        let result = call(&service, tool, args).await;
        assert!(!is_error(&result), "{tool}: {}", text(&result));
    }
    assert!(client.questions().is_empty());
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn live_output_arrives_as_progress() {
    let ws = Ws::new();
    let client = TestClient::new(Answer::CannotAsk);
    let seen = client.seen.clone();
    let service = ws.connect(client, &["--yolo"]).await;
    let command = "for i in 1 2 3 4 5; do echo step$i; sleep 0.15; done";
    let result = call(&service, "run_shell_command", json!({"command": command})).await;
    assert!(text(&result).contains("step5"), "{}", text(&result));
    let progress = seen.progress.lock().unwrap().clone();
    assert!(progress.len() >= 2, "{progress:?}");
    assert!(progress.windows(2).all(|w| w[0].0 < w[1].0), "{progress:?}");
    assert!(progress[0].1.starts_with("step"), "{progress:?}");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn cancelling_a_long_command_kills_it_and_the_server_goes_on() {
    let ws = Ws::new();
    let client = TestClient::new(Answer::CannotAsk);
    let seen = client.seen.clone();
    let service = ws.connect(client, &["--yolo"]).await;
    let params = CallToolRequestParams::new("run_shell_command").with_arguments(
        json!({"command": "echo pid=$$; exec sleep 3031"})
            .as_object()
            .cloned()
            .unwrap(),
    );
    let started = seen.progress_arrived.notified();
    let handle = service
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    bounded(started).await;
    let line = seen.progress.lock().unwrap()[0].1.clone();
    let pid: u32 = line.trim_start_matches("pid=").trim().parse().unwrap();
    let pid = i32::try_from(host_pid(pid, "3031")).unwrap();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    let id = handle.id.clone();
    service
        .notify_cancelled(CancelledNotificationParam::new(
            Some(id),
            Some("test".into()),
        ))
        .await
        .unwrap();
    // The process is gone within the kill grace period.
    bounded(async {
        while process_alive(pid) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let next = call(
        &service,
        "run_shell_command",
        json!({"command": "echo still here"}),
    )
    .await;
    assert!(text(&next).contains("still here"));
    service.cancel().await.unwrap();
}

/// Alive and not a zombie.
fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// A tool whose `when` clause reads the approval mode is offered once a call changes
/// the mode (an approved plan ends plan mode), and the client is told its list changed.
#[tokio::test]
async fn ending_plan_mode_offers_the_tools_its_when_clauses_held_back() {
    use rmcp::ServiceExt;
    let ws = Ws::new();
    let notes = ws.ws().join("notes.txt");
    ws.write(&notes, "one two\n");
    let manifest = json!({
        "languageModelTools": [{
            "name": "after_plan_probe",
            "displayName": "After-plan probe",
            "modelDescription": "Reads the notes once plan mode is over.",
            "when": "approvalMode != 'plan'",
            "inputSchema": {"type": "object", "properties": {}}
        }],
        "bindings": {
            "after_plan_probe": {"builtin": "read_file", "arguments": {"absolute_path": notes}}
        }
    });
    ws.write(
        &ws.ws().join(".qwen/tools/project.json"),
        &manifest.to_string(),
    );
    let client = TestClient::new(Answer::Accept { always: false });
    let mut cmd = ws.command(&["--approval-mode", "plan"]);
    cmd.env("TOOLBELT_TRUST_WORKSPACE", "1")
        .stderr(std::process::Stdio::null());
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let service = bounded(client.clone().serve(transport)).await.unwrap();

    let names = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools.into_iter().map(|t| t.name.to_string()).collect()
    };
    let before = names(bounded(service.list_all_tools()).await.unwrap());
    assert!(before.contains(&"exit_plan_mode".to_string()), "{before:?}");
    assert!(
        !before.contains(&"after_plan_probe".to_string()),
        "{before:?}"
    );

    let changed = client.seen.list_changed_arrived.notified();
    let exit = call(
        &service,
        "exit_plan_mode",
        json!({"plan": "1. Read the notes.\n2. Count the words."}),
    )
    .await;
    assert!(!is_error(&exit), "{}", text(&exit));
    bounded(changed).await;
    let after = names(bounded(service.list_all_tools()).await.unwrap());
    assert!(after.contains(&"after_plan_probe".to_string()), "{after:?}");
    let probe = call(&service, "after_plan_probe", json!({})).await;
    assert_eq!(text(&probe), "one two", "{}", text(&probe));
    service.cancel().await.unwrap();
}
