//! The session around the calls: streaming input, `interrupt()`, SDK and external MCP
//! servers, partial messages, the control calls, the system prompt, sessions and abort.

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};

use crate::{Sandbox, bypass, call, clean, last_request_texts, sdk_dir};

/// Three prompts through streaming input, each after the last result; after the first,
/// the control calls the SDK offers; `includePartialMessages` adds stream events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_three_turns_control_calls_and_partial_messages() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        Reply::text("One."),
        Reply::text("Two."),
        Reply::text("Three."),
    ])
    .await
    .unwrap();
    let c = s
        .client(
            &sdk,
            &server,
            json!({
                "prompts": ["first", "second", "third"],
                "options": {"includePartialMessages": true},
                "afterFirst": ["supportedCommands", "supportedModels", "mcpServerStatus"],
            }),
        )
        .await
        .ok();
    let answers: Vec<&Value> = c.results().iter().map(|r| &r["result"]).collect();
    assert_eq!(answers, ["One.", "Two.", "Three."]);
    assert!(
        c.messages
            .iter()
            .any(|m| m["type"] == "stream_event" && m["event"]["type"] == "content_block_delta"),
        "{:?}",
        c.shape()
    );
    assert_eq!(c.notes["supportedCommands"], json!([]));
    assert_eq!(c.notes["supportedModels"][0]["value"], "fake-model");
    assert_eq!(c.notes["mcpServerStatus"], json!([]));
    let (_, users) = last_request_texts(&server);
    assert_eq!(users.len(), 3, "{users:?}");
    clean(&server);
}

/// `interrupt()` while a shell command runs ends that turn; the next prompt still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_interrupt_then_another_turn() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        call("c1", "run_shell_command", json!({"command": "sleep 30"})),
        Reply::text("After the interruption."),
    ])
    .await
    .unwrap();
    let started = std::time::Instant::now();
    let c = s
        .client(
            &sdk,
            &server,
            json!({
                "prompts": ["sleep", "go on"],
                "options": bypass(),
                "onToolUse": "interrupt",
            }),
        )
        .await
        .ok();
    assert!(
        started.elapsed().as_secs() < 25,
        "the command was not cut short"
    );
    let results = c.results();
    assert_eq!(results[0]["subtype"], "error_during_execution");
    assert!(results[0]["errors"][0].is_string(), "{}", results[0]);
    assert_eq!(results[1]["result"], "After the interruption.");
    assert_eq!(server.violations(), Vec::<String>::new());
}

/// An in-process server (`createSdkMcpServer`) and an external one (`mcpServers` with a
/// command) are both called by the model; `mcpServerStatus` lists them connected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_in_process_and_external_mcp_servers() {
    let Some(sdk) = sdk_dir() else { return };
    let everything = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../.cache/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    assert!(
        everything.exists(),
        "scripts/setup.sh installs server-everything"
    );
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        call("c1", "mcp__calc__add", json!({"a": 2, "b": 3})),
        call("c2", "mcp__ext__echo", json!({"message": "from outside"})),
        Reply::text("Both answered."),
    ])
    .await
    .unwrap();
    let c = s
        .client(
            &sdk,
            &server,
            json!({
                "prompts": ["use the servers"],
                "sdkMcp": true,
                "options": {
                    "permissionMode": "bypassPermissions",
                    "allowDangerouslySkipPermissions": true,
                    "mcpServers": {"ext": {"command": "node", "args": [everything, "stdio"]}},
                },
                "afterFirst": ["mcpServerStatus"],
            }),
        )
        .await
        .ok();
    assert_eq!(c.notes["calls"], json!([{"a": 2, "b": 3}]));
    let results = c.tool_results();
    assert!(
        results[0]["content"].to_string().contains("sum=5"),
        "{}",
        results[0]
    );
    assert!(
        results[1]["content"].to_string().contains("from outside"),
        "{}",
        results[1]
    );
    let mut status: Vec<(String, String)> = c.notes["mcpServerStatus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().into(),
                s["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    status.sort();
    assert_eq!(
        status,
        [
            ("calc".into(), "connected".into()),
            ("ext".into(), "connected".into())
        ]
    );
    clean(&server);
}

/// `systemPrompt` (a string) replaces toolbelt's prompt; `sessionId` names the session;
/// `resume` continues it under the same ID, with its history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_system_prompt_session_id_and_resume() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![Reply::text("First."), Reply::text("Second.")])
        .await
        .unwrap();
    let id = "5d0f3c2a-7b1e-4f8a-9c6d-2e4b8a1f0c3d";
    let first = s
        .client(
            &sdk,
            &server,
            json!({
                "prompts": ["remember the word kiwi"],
                "options": {"systemPrompt": "You are the kiwi assistant.", "sessionId": id},
            }),
        )
        .await
        .ok();
    assert_eq!(first.init()["session_id"], id);
    let (system, _) = last_request_texts(&server);
    assert_eq!(system, "You are the kiwi assistant.");

    let second = s
        .client(
            &sdk,
            &server,
            json!({"prompts": ["which word?"], "options": {"resume": id}}),
        )
        .await
        .ok();
    assert_eq!(second.init()["session_id"], id);
    let (_, users) = last_request_texts(&server);
    assert_eq!(users, ["remember the word kiwi", "which word?"]);
    clean(&server);
}

/// The processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(marker) {
                found.push(cmdline);
            }
        }
    }
    found
}

/// Aborting the query (its `AbortController`) while a command runs leaves no process:
/// neither toolbelt nor the command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_abort_leaves_no_process() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let marker = format!("sleep 47{}", std::process::id() % 1000);
    let server = FakeOpenAi::start(vec![call(
        "c1",
        "run_shell_command",
        json!({"command": marker}),
    )])
    .await
    .unwrap();
    let c = s
        .client(
            &sdk,
            &server,
            json!({
                "prompts": ["sleep"],
                "options": bypass(),
                "onToolUse": "abort",
            }),
        )
        .await;
    assert!(
        c.notes["error"]
            .as_str()
            .unwrap_or_default()
            .contains("abort"),
        "{}",
        c.notes
    );
    // toolbelt ends its command as it ends; give it the SDK's grace period to do so.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !processes_with(&marker).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}

/// `mcpServersDelivery: "initialize"`: the servers come in `initialize` (not on the
/// command line, where other users can read their environment), and toolbelt confirms
/// them with `mcp_servers_applied` (the SDK ends a session without it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_mcp_servers_delivered_in_initialize() {
    let Some(sdk) = sdk_dir() else { return };
    let everything = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../.cache/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    assert!(
        everything.exists(),
        "scripts/setup.sh installs server-everything"
    );
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        call("c1", "mcp__ext__echo", json!({"message": "delivered"})),
        Reply::text("Echoed."),
    ])
    .await
    .unwrap();
    let c = s
        .client(
            &sdk,
            &server,
            json!({
                "prompts": ["echo"],
                "options": {
                    "permissionMode": "bypassPermissions",
                    "allowDangerouslySkipPermissions": true,
                    "mcpServersDelivery": "initialize",
                    "mcpServers": {"ext": {"command": "node", "args": [everything, "stdio"]}},
                },
            }),
        )
        .await
        .ok();
    assert!(
        c.tool_results()[0]["content"]
            .to_string()
            .contains("delivered")
    );
    clean(&server);
}

/// An MCP server's elicitation reaches the application's `onElicitation` (Claude's SDK
/// reads toolbelt's `elicitation` control request as Claude Code's), and its answer
/// reaches the server: server-everything's form, answered in the application. Its
/// sampling request, which Claude's SDK cannot approve, is refused with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_on_elicitation_answers_an_mcp_servers_form() {
    let Some(sdk) = sdk_dir() else { return };
    let everything = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../.cache/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    assert!(
        everything.exists(),
        "scripts/setup.sh installs server-everything"
    );
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        call("c1", "mcp__ext__trigger-elicitation-request", json!({})),
        call(
            "c2",
            "mcp__ext__trigger-sampling-request",
            json!({"prompt": "hi", "maxTokens": 16}),
        ),
        Reply::text("Answered."),
    ])
    .await
    .unwrap();
    let c = s
        .client(
            &sdk,
            &server,
            json!({
                "prompts": ["ask me"],
                "options": {
                    "permissionMode": "bypassPermissions",
                    "allowDangerouslySkipPermissions": true,
                    "mcpServers": {"ext": {"command": "node", "args": [everything, "stdio"]}},
                },
                "elicitation": {"action": "accept", "content": {"name": "Ada Lovelace"}},
            }),
        )
        .await
        .ok();
    let elicited = &c.notes["elicited"];
    assert_eq!(elicited.as_array().map(Vec::len), Some(1), "{elicited}");
    assert_eq!(elicited[0]["serverName"], "ext");
    assert_eq!(elicited[0]["mode"], "form");
    assert_eq!(elicited[0]["requestedSchema"]["required"], json!(["name"]));
    let results = c.tool_results();
    assert!(
        results[0]["content"]
            .to_string()
            .contains("- Name: Ada Lovelace"),
        "{}",
        results[0]
    );
    // Claude's SDK has no sampling request: it answers toolbelt's `mcp_sampling` with an
    // error, and the sampling is refused at once, with the reason, rather than hanging.
    let refused = results[1]["content"].to_string();
    assert!(
        refused.contains("refused the sampling request") && refused.contains("Unsupported"),
        "{refused}"
    );
    clean(&server);
}
