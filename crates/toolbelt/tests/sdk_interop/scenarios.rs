//! The rest of the list the Claude Agent SDK passes (`claude_sdk_interop/`), through
//! `@qwen-code/sdk` and the same data-driven client (`fixtures/sdk_scenario/client.mjs`
//! with `flavor: "qwen"`): the permission modes, three streamed turns with partial
//! messages, `interrupt()` then another turn, an external MCP server, the system
//! prompt, the turn limit, allowed and excluded tools, an abort, and hooks (which this
//! SDK refuses).

use std::path::Path;

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};

use crate::{Sandbox, call, clean, sdk_dir};

struct Seen {
    messages: Vec<Value>,
    notes: Value,
}

impl Seen {
    fn of_type(&self, kind: &str) -> Vec<&Value> {
        self.messages.iter().filter(|m| m["type"] == kind).collect()
    }

    fn tool_results(&self) -> Vec<&Value> {
        self.of_type("user")
            .into_iter()
            .flat_map(|m| m["message"]["content"].as_array().into_iter().flatten())
            .filter(|b| b["type"] == "tool_result")
            .collect()
    }

    fn ok(self) -> Self {
        assert!(self.notes.get("error").is_none(), "{}", self.notes);
        self
    }
}

/// Runs the scenario client with `scenario` merged into its config.
async fn run(s: &Sandbox, sdk: &Path, server: &FakeOpenAi, scenario: Value) -> Seen {
    let p = |rel: &str| s.dir.path().join(rel).to_string_lossy().into_owned();
    let mut config = json!({
        "flavor": "qwen",
        "sdkDir": sdk,
        "executable": env!("CARGO_BIN_EXE_toolbelt"),
        "cwd": s.ws(),
        "model": "fake-model",
        "env": {
            "HOME": p("home"),
            "TOOLBELT_HOME": p("tbhome"),
            "TOOLBELT_SYSTEM_SETTINGS_PATH": p("no-system-settings.json"),
            "OPENAI_BASE_URL": server.base_url(),
            "OPENAI_API_KEY": "test-key",
        },
    });
    for (k, v) in scenario.as_object().unwrap() {
        config[k] = v.clone();
    }
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sdk_scenario/client.mjs");
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(script)
        .arg(config.to_string())
        .current_dir(s.ws())
        .kill_on_drop(true)
        .stdin(std::process::Stdio::null());
    let output = tokio::time::timeout(crate::CLIENT_TIMEOUT, cmd.output())
        .await
        .expect("the SDK client did not finish in time")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "client failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    Seen {
        messages: v["messages"].as_array().cloned().unwrap_or_default(),
        notes: v["notes"].clone(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen_sdk_permission_modes_decide_who_is_asked() {
    let Some(sdk) = sdk_dir() else { return };
    // (mode, asked, written)
    let cases = [
        ("default", true, true),
        ("auto-edit", false, true),
        ("yolo", false, true),
        ("plan", false, false),
    ];
    for (mode, asked, written) in cases {
        let s = Sandbox::new();
        let server = FakeOpenAi::start(vec![
            call(
                "c1",
                "write_file",
                json!({"file_path": s.path("new.txt"), "content": "new\n"}),
            ),
            Reply::text("Done."),
        ])
        .await
        .unwrap();
        let seen = run(
            &s,
            &sdk,
            &server,
            json!({
                "prompts": ["write new.txt"],
                "options": {"permissionMode": mode},
                "answers": {"write_file": {"behavior": "allow"}},
            }),
        )
        .await
        .ok();
        let was_asked = !seen.notes["asked"].as_array().unwrap().is_empty();
        assert_eq!(was_asked, asked, "{mode}");
        assert_eq!(s.ws().join("new.txt").exists(), written, "{mode}");
        clean(&server);
    }
}

/// Three prompts, partial messages, and `interrupt()` in the second turn's command;
/// the third turn still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen_sdk_three_turns_partial_messages_and_interrupt_then_another_turn() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        call("c1", "run_shell_command", json!({"command": "sleep 30"})),
        Reply::text("Two."),
        Reply::text("Three."),
    ])
    .await
    .unwrap();
    let seen = run(
        &s,
        &sdk,
        &server,
        json!({
            "prompts": ["sleep", "second", "third"],
            "options": {"permissionMode": "yolo", "includePartialMessages": true},
            "onToolUse": "interrupt",
        }),
    )
    .await
    .ok();
    let results = seen.of_type("result");
    assert_eq!(results.len(), 3, "{:?}", seen.notes);
    assert_eq!(results[0]["subtype"], "error_during_execution");
    assert_eq!(results[1]["result"], "Two.");
    assert_eq!(results[2]["result"], "Three.");
    assert!(!seen.of_type("stream_event").is_empty());
    assert_eq!(server.violations(), Vec::<String>::new());
}

/// An external MCP server from `mcpServers`, called by the model and listed connected;
/// the system prompt replaces toolbelt's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen_sdk_external_mcp_server_and_system_prompt() {
    let Some(sdk) = sdk_dir() else { return };
    let everything = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../.cache/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    assert!(
        everything.exists(),
        "scripts/setup.sh installs server-everything"
    );
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        call("c1", "mcp__ext__echo", json!({"message": "from outside"})),
        Reply::text("Echoed."),
    ])
    .await
    .unwrap();
    let seen = run(
        &s,
        &sdk,
        &server,
        json!({
            "prompts": ["echo"],
            "options": {
                "permissionMode": "yolo",
                "systemPrompt": "You are the echo assistant.",
                "mcpServers": {"ext": {"command": "node", "args": [everything, "stdio"]}},
            },
            "afterFirst": ["mcpServerStatus"],
        }),
    )
    .await
    .ok();
    assert!(
        seen.tool_results()[0]["content"]
            .to_string()
            .contains("from outside")
    );
    assert_eq!(
        seen.notes["mcpServerStatus"]["status"]["ext"], "connected",
        "{}",
        seen.notes
    );
    let body = server.last_request().unwrap().body;
    assert_eq!(
        body["messages"][0]["content"],
        "You are the echo assistant."
    );
    clean(&server);
}

/// `allowedTools` runs a write without asking; `excludeTools` takes the shell away.
/// `maxSessionTurns: 1` ends a run that wants a second model turn with
/// `error_max_turns`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen_sdk_allowed_and_excluded_tools_and_the_turn_limit() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![call(
        "c_w",
        "write_file",
        json!({"file_path": s.path("ok.txt"), "content": "ok\n"}),
    )])
    .await
    .unwrap();
    let seen = run(
        &s,
        &sdk,
        &server,
        json!({
            "prompts": ["write"],
            "options": {
                "permissionMode": "default",
                "allowedTools": ["write_file"],
                "excludeTools": ["run_shell_command"],
                "maxSessionTurns": 1,
            },
        }),
    )
    .await;
    let init = &seen.of_type("system")[0];
    let tools = init["tools"].as_array().unwrap();
    assert!(!tools.iter().any(|t| t == "run_shell_command"), "{tools:?}");
    assert!(s.ws().join("ok.txt").exists());
    let results = seen.of_type("result");
    assert_eq!(results[0]["subtype"], "error_max_turns", "{}", results[0]);
    clean(&server);
}

/// Aborting the query while a command runs leaves no process behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen_sdk_abort_leaves_no_process() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let marker = format!("sleep 48{}", std::process::id() % 1000);
    let server = FakeOpenAi::start(vec![call(
        "c1",
        "run_shell_command",
        json!({"command": marker}),
    )])
    .await
    .unwrap();
    let seen = run(
        &s,
        &sdk,
        &server,
        json!({
            "prompts": ["sleep"],
            "options": {"permissionMode": "yolo"},
            "onToolUse": "abort",
        }),
    )
    .await;
    assert!(seen.notes.get("error").is_some(), "{}", seen.notes);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !crate::processes_with(&marker).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(crate::processes_with(&marker), Vec::<String>::new());
}

/// `@qwen-code/sdk` 0.1.14 has no `hooks` option: `query()` refuses one (its options
/// are checked strictly) before starting anything, and its `initialize` always sends
/// `hooks: null`. toolbelt reads hooks from a client that sends them (Qwen's declared
/// list shape included: `claude_sdk_interop/hook_wire.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen_sdk_refuses_a_hooks_option() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![]).await.unwrap();
    let seen = run(
        &s,
        &sdk,
        &server,
        json!({
            "prompts": ["touch it"],
            "hooks": {"PreToolUse": [{"matcher": "Bash", "answer": {"decision": "block"}}]},
        }),
    )
    .await;
    let error = seen.notes["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("Unrecognized key(s) in object: 'hooks'"),
        "{}",
        seen.notes
    );
    assert_eq!(seen.notes["hooks"], json!([]));
    assert!(server.requests().is_empty());
}
