#![allow(clippy::too_many_lines)]
//! toolbelt driven by the real `@qwen-code/sdk` (npm), the way an application built on
//! Qwen Code's TypeScript SDK drives Qwen Code: `query()` with `pathToQwenExecutable`
//! pointing at the built binary, which the SDK starts with `--input-format stream-json
//! --output-format stream-json --channel=SDK --session-id ...`, against the loopback
//! fake model server.
//!
//! `tests/fixtures/sdk_client/client.mjs` runs one scenario under Node and prints every
//! message the application received; the assertions here are on those messages, on the
//! files on disk, on the requests the model server saw (every call answered once, in
//! order) and on the processes left. `scripts/setup.sh` installs the SDK into
//! `.cache/sdk`; where it or Node is missing the tests say so and pass, except under
//! `CI`, where they fail.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod resume;
mod scenarios;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{ModelTurn, ToolCall};

const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The SDK's directory, or why it is not there. Under CI a missing SDK fails the test.
fn sdk_dir() -> Option<PathBuf> {
    let dir = repo_root().join(".cache/sdk");
    let found = if !dir
        .join("node_modules/@qwen-code/sdk/package.json")
        .exists()
    {
        Err(format!(
            "{} has no @qwen-code/sdk (scripts/setup.sh installs it)",
            dir.display()
        ))
    } else if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_err()
    {
        Err("node is not on PATH".to_string())
    } else {
        Ok(dir)
    };
    match found {
        Ok(dir) => Some(dir),
        Err(why) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "the SDK interop tests must run under CI: {why}"
            );
            eprintln!("skipped: {why}");
            None
        }
    }
}

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["ws", "home", "tbhome"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        Sandbox { dir }
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws").canonicalize().unwrap()
    }

    fn path(&self, rel: &str) -> String {
        self.ws().join(rel).to_string_lossy().into_owned()
    }

    fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.ws().join(rel), text).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.ws().join(rel)).unwrap()
    }

    /// Runs `scenario` of the client against `server`; what the application saw.
    async fn client(&self, sdk: &Path, scenario: &str, server: &FakeOpenAi, args: Value) -> Client {
        self.client_of(
            sdk,
            Path::new(env!("CARGO_BIN_EXE_toolbelt")),
            scenario,
            server,
            args,
        )
        .await
    }

    /// [`Sandbox::client`] with another executable behind the SDK.
    async fn client_of(
        &self,
        sdk: &Path,
        executable: &Path,
        scenario: &str,
        server: &FakeOpenAi,
        args: Value,
    ) -> Client {
        let p = |rel: &str| self.dir.path().join(rel).to_string_lossy().into_owned();
        let config = json!({
            "scenario": scenario,
            "sdkDir": sdk,
            "executable": executable,
            "cwd": self.ws(),
            "model": "fake-model",
            "env": {
                "HOME": p("home"),
                "TOOLBELT_HOME": p("tbhome"),
                "TOOLBELT_SYSTEM_SETTINGS_PATH": p("no-system-settings.json"),
                "OPENAI_BASE_URL": server.base_url(),
                "OPENAI_API_KEY": "test-key",
            },
            "args": args,
        });
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sdk_client/client.mjs");
        let mut cmd = tokio::process::Command::new("node");
        cmd.arg(script)
            .arg(config.to_string())
            .current_dir(self.ws())
            .kill_on_drop(true)
            .stdin(std::process::Stdio::null());
        let output = tokio::time::timeout(CLIENT_TIMEOUT, cmd.output())
            .await
            .expect("the SDK client did not finish in time")
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "client failed: {stderr}\n{stdout}");
        let v: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("client output is not JSON ({e}): {stdout}\n{stderr}"));
        let client = Client {
            messages: v["messages"].as_array().cloned().unwrap_or_default(),
            notes: v["notes"].clone(),
        };
        assert!(
            client.notes.get("error").is_none(),
            "the client failed: {}",
            client.notes["error"]
        );
        client
    }
}

struct Client {
    messages: Vec<Value>,
    notes: Value,
}

impl Client {
    /// `type` (and `subtype`, content block types) of every message, for readable diffs.
    fn shape(&self) -> Vec<String> {
        self.messages
            .iter()
            .map(|m| {
                let mut s = m["type"].as_str().unwrap_or("?").to_string();
                if let Some(sub) = m["subtype"].as_str() {
                    s = format!("{s}/{sub}");
                }
                if let Some(blocks) = m["message"]["content"].as_array() {
                    let kinds: Vec<&str> =
                        blocks.iter().filter_map(|b| b["type"].as_str()).collect();
                    s = format!("{s}[{}]", kinds.join(","));
                }
                s
            })
            .collect()
    }

    fn results(&self) -> Vec<&Value> {
        self.messages
            .iter()
            .filter(|m| m["type"] == "result")
            .collect()
    }

    fn tool_results(&self) -> Vec<&Value> {
        self.messages
            .iter()
            .filter(|m| m["type"] == "user")
            .flat_map(|m| m["message"]["content"].as_array().into_iter().flatten())
            .filter(|b| b["type"] == "tool_result")
            .collect()
    }
}

fn call(id: &str, name: &str, args: Value) -> Reply {
    Reply::turn(ModelTurn {
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.to_string(),
        }],
        ..Default::default()
    })
}

fn clean(server: &FakeOpenAi) {
    assert_eq!(server.violations(), Vec::<String>::new());
    assert_eq!(
        server.unused(),
        0,
        "the model server's script was not used up"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_single_turn_query_with_a_tool_call() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    s.write("notes.txt", "the answer is 42\n");
    let server = FakeOpenAi::start(vec![
        call(
            "call_1",
            "read_file",
            json!({"file_path": s.path("notes.txt")}),
        ),
        Reply::text("The notes say 42."),
    ])
    .await
    .unwrap();
    let c = s
        .client(
            &sdk,
            "single",
            &server,
            json!({"prompt": "what do the notes say?"}),
        )
        .await;
    assert_eq!(
        c.shape(),
        [
            "system/init",
            "assistant[tool_use]",
            "user[tool_result]",
            "assistant[text]",
            "result/success"
        ]
    );
    let init = &c.messages[0];
    assert_eq!(init["cwd"], json!(s.ws()));
    assert_eq!(init["model"], "fake-model");
    assert_eq!(init["permission_mode"], "yolo");
    assert!(
        init["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "read_file")
    );
    let session = init["session_id"].as_str().unwrap();
    for m in &c.messages {
        assert_eq!(m["session_id"], session, "{m}");
        assert!(m["uuid"].is_string(), "{m}");
        assert!(
            m.get("parent_tool_use_id").is_some_and(Value::is_null),
            "{m}"
        );
    }
    let tool_result = c.tool_results()[0];
    assert_eq!(tool_result["tool_use_id"], "call_1");
    assert_eq!(tool_result["is_error"], false);
    assert!(
        tool_result["content"]
            .as_str()
            .unwrap()
            .contains("the answer is 42")
    );
    let result = c.results()[0];
    assert_eq!(result["result"], "The notes say 42.");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["num_turns"], 2);
    assert_eq!(result["permission_denials"], json!([]));
    assert!(result["usage"]["input_tokens"].is_u64());
    assert!(result["toolbelt"]["tool_calls"][0]["duration_ms"].is_number());
    clean(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_multi_turn_query_from_an_async_iterable_keeps_the_conversation() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        Reply::text("First answer."),
        Reply::text("Second answer."),
    ])
    .await
    .unwrap();
    let c = s
        .client(
            &sdk,
            "multi",
            &server,
            json!({"prompts": ["first question", "second question"]}),
        )
        .await;
    assert_eq!(
        c.shape(),
        [
            "system/init",
            "assistant[text]",
            "result/success",
            "assistant[text]",
            "result/success"
        ]
    );
    assert_eq!(c.results()[1]["result"], "Second answer.");
    // The second request carries the whole first exchange.
    let last = server.last_request().unwrap().body;
    let texts: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].to_string())
        .collect();
    let joined = texts.join("\n");
    for expected in ["first question", "First answer.", "second question"] {
        assert!(
            joined.contains(expected),
            "{expected} missing from {joined}"
        );
    }
    // Control requests answered during the session; an unknown one is an error reply.
    assert_eq!(c.notes["mcpServerStatus"]["subtype"], "mcp_server_status");
    assert_eq!(
        c.notes["supportedCommands"]["subtype"],
        "supported_commands"
    );
    assert!(
        c.notes["unknown"]
            .as_str()
            .unwrap()
            .contains("Unknown control request subtype"),
        "{}",
        c.notes["unknown"]
    );
    clean(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_can_use_tool_denies_a_write_and_allows_an_edit_with_updated_input() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    s.write("keep.txt", "original\n");
    s.write("code.txt", "let x = 1;\n");
    let server = FakeOpenAi::start(vec![
        call("call_w", "write_file", json!({"file_path": s.path("keep.txt"), "content": "overwritten\n"})),
        call(
            "call_e",
            "edit",
            json!({"file_path": s.path("code.txt"), "old_string": "let x = 1;", "new_string": "let x = 2;"}),
        ),
        Reply::text("Done."),
    ])
    .await
    .unwrap();
    let c = s
        .client(
            &sdk,
            "canUseTool",
            &server,
            json!({"prompt": "change things", "newString": "let x = 3; // client"}),
        )
        .await;
    assert_eq!(s.read("keep.txt"), "original\n", "the denied write ran");
    assert_eq!(
        s.read("code.txt"),
        "let x = 3; // client\n",
        "the edit did not use the client's input"
    );
    let asked: Vec<&str> = c.notes["asked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["toolName"].as_str().unwrap())
        .collect();
    assert_eq!(asked, ["write_file", "edit"]);
    assert_eq!(c.notes["asked"][0]["input"]["content"], "overwritten\n");
    let results = c.tool_results();
    assert_eq!(results[0]["is_error"], true);
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("the client keeps this file as it is"),
        "{}",
        results[0]
    );
    assert_eq!(results[1]["is_error"], false, "{}", results[1]);
    let result = c.results()[0];
    assert_eq!(
        result["permission_denials"],
        json!([{"tool_name": "write_file", "tool_use_id": "call_w",
                "tool_input": {"file_path": s.path("keep.txt"), "content": "overwritten\n"}}])
    );
    // The model was told the client's reason.
    let tool_messages: Vec<String> = server.last_request().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect();
    assert!(tool_messages[0].contains("the client keeps this file as it is"));
    clean(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_in_process_mcp_tool_is_called_by_the_model() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        call("call_add", "mcp__calc__add", json!({"a": 2, "b": 3})),
        Reply::text("2 + 3 = 5"),
    ])
    .await
    .unwrap();
    let c = s
        .client(&sdk, "sdkMcp", &server, json!({"prompt": "add 2 and 3"}))
        .await;
    assert_eq!(c.notes["calls"], json!([{"a": 2, "b": 3}]));
    let init = &c.messages[0];
    assert!(
        init["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "mcp__calc__add"),
        "{init}"
    );
    assert_eq!(
        init["mcp_servers"],
        json!([{"name": "calc", "status": "connected"}])
    );
    let result = c.tool_results()[0];
    assert_eq!(result["is_error"], false, "{result}");
    assert!(
        result["content"].as_str().unwrap().contains("sum=5"),
        "{result}"
    );
    // The model was offered the tool with the client's schema.
    let first = &server.requests()[0].body;
    let declared = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp__calc__add")
        .expect("mcp__calc__add declared");
    assert_eq!(
        declared["function"]["parameters"]["required"],
        json!(["a", "b"])
    );
    clean(&server);
}

/// The processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(marker) {
                found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_interrupt_cancels_a_running_shell_command_and_leaves_no_process() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    // A duration no other process uses, so the check below finds only ours.
    let duration = format!("30.{}", std::process::id());
    let server = FakeOpenAi::start(vec![call(
        "call_sleep",
        "run_shell_command",
        json!({"command": format!("sleep {duration}")}),
    )])
    .await
    .unwrap();
    let started = std::time::Instant::now();
    let c = s
        .client(
            &sdk,
            "interrupt",
            &server,
            json!({"prompt": "wait a while"}),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the interrupt did not end the turn"
    );
    let result = c.results()[0];
    assert_eq!(result["subtype"], "error_during_execution", "{result}");
    assert_eq!(result["is_error"], true);
    let tool_result = c.tool_results()[0];
    assert_eq!(tool_result["tool_use_id"], "call_sleep");
    assert_eq!(tool_result["is_error"], true);
    assert_eq!(
        processes_with(&format!("sleep {duration}")),
        Vec::<String>::new()
    );
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_set_permission_mode_lets_a_refused_write_run() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        call(
            "call_1",
            "write_file",
            json!({"file_path": s.path("out.txt"), "content": "one\n"}),
        ),
        Reply::text("Could not write."),
        call(
            "call_2",
            "write_file",
            json!({"file_path": s.path("out.txt"), "content": "two\n"}),
        ),
        Reply::text("Written."),
    ])
    .await
    .unwrap();
    let c = s
        .client(
            &sdk,
            "permissionMode",
            &server,
            json!({"prompts": ["write one", "write two"]}),
        )
        .await;
    let results = c.results();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["permission_denials"][0]["tool_use_id"], "call_1");
    assert_eq!(results[1]["permission_denials"], json!([]));
    assert_eq!(s.read("out.txt"), "two\n");
    clean(&server);
}

/// The same scripted session through Qwen Code 0.24.4 (installed beside the SDK by
/// scripts/setup.sh) and through toolbelt: the same sequence of message types and
/// content block types. Qwen Code also sends `stream_event`s of its own (`goal_state`,
/// not in the SDK's `StreamEvent` union) without partial messages being asked for; they
/// are left out of the comparison.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_session_has_the_message_sequence_of_qwen_code() {
    let Some(sdk) = sdk_dir() else { return };
    let qwen = sdk.join("node_modules/@qwen-code/qwen-code/cli.js");
    assert!(
        qwen.exists(),
        "{} is missing (scripts/setup.sh installs it)",
        qwen.display()
    );
    let mut shapes = Vec::new();
    for executable in [Path::new(env!("CARGO_BIN_EXE_toolbelt")), qwen.as_path()] {
        let s = Sandbox::new();
        s.write("notes.txt", "the answer is 42\n");
        let server = FakeOpenAi::start(vec![
            Reply::turn(ModelTurn {
                text: "Let me look.".into(),
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "read_file".into(),
                    arguments: json!({"file_path": s.path("notes.txt")}).to_string(),
                }],
                ..Default::default()
            }),
            Reply::text("The notes say 42."),
        ])
        .await
        .unwrap();
        // Qwen Code's side requests (no tools) get a short answer outside the script.
        server.set_side_reply(Reply::text("{\"next_speaker\": \"user\"}"));
        let c = s
            .client_of(
                &sdk,
                executable,
                "single",
                &server,
                json!({"prompt": "what do the notes say?"}),
            )
            .await;
        let shape: Vec<String> = c
            .shape()
            .into_iter()
            .zip(&c.messages)
            .filter(|(_, m)| m["type"] != "stream_event" || m["event"]["type"] != "goal_state")
            .map(|(s, _)| s)
            .collect();
        assert_eq!(
            server.violations(),
            Vec::<String>::new(),
            "{}",
            executable.display()
        );
        assert!(
            c.tool_results()
                .iter()
                .all(|r| r["content"].as_str().unwrap().contains("the answer is 42")),
            "{}: {:?}",
            executable.display(),
            c.tool_results()
        );
        shapes.push(shape);
    }
    assert_eq!(
        shapes[0], shapes[1],
        "toolbelt (left) and Qwen Code 0.24.4 (right)"
    );
    assert_eq!(
        shapes[0],
        [
            "system/init",
            "assistant[text]",
            "assistant[tool_use]",
            "user[tool_result]",
            "assistant[text]",
            "result/success"
        ]
    );
}
