#![allow(clippy::too_many_lines)]
//! toolbelt driven by the real Claude Agent SDK (`@anthropic-ai/claude-agent-sdk`, npm)
//! the way an application built on it drives Claude Code: `query()` with
//! `pathToClaudeCodeExecutable` pointing at the built binary, which the SDK starts with
//! Claude Code's flags (`--output-format stream-json --verbose --input-format
//! stream-json --model=X --permission-mode=...`, ...), against the loopback fake model
//! server.
//!
//! `tests/fixtures/sdk_scenario/client.mjs` reads one data-driven scenario (query
//! options, prompts, `canUseTool` answers, control calls) and prints every message the
//! application received; the assertions are on those messages, the files on disk, the
//! requests the model server saw and the processes left. `scripts/setup.sh` installs
//! the SDK into `.cache/claude-sdk`; where it or Node is missing the tests say so and
//! pass, except under `CI`, where they fail.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod control;
mod hook_wire;
mod hooks;
mod options;
mod permissions;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{ModelTurn, ToolCall};

const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);

/// The SDK's directory, or why it is not there. Under CI a missing SDK fails the test.
fn sdk_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.cache/claude-sdk");
    let found = if !dir
        .join("node_modules/@anthropic-ai/claude-agent-sdk/package.json")
        .exists()
    {
        Err(format!(
            "{} has no @anthropic-ai/claude-agent-sdk (scripts/setup.sh installs it)",
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
                "the Claude SDK interop tests must run under CI: {why}"
            );
            eprintln!("skipped: {why}");
            None
        }
    }
}

/// A workspace, a home and a toolbelt home of its own.
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

    fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.ws().join(rel)).ok()
    }

    /// Runs the client with `scenario` (merged into the config) against `server`.
    async fn client(&self, sdk: &Path, server: &FakeOpenAi, scenario: Value) -> Client {
        let p = |rel: &str| self.dir.path().join(rel).to_string_lossy().into_owned();
        let mut config = json!({
            "sdkDir": sdk,
            "executable": env!("CARGO_BIN_EXE_toolbelt"),
            "cwd": self.ws(),
            "model": "fake-model",
            "env": {
                "PATH": std::env::var("PATH").unwrap_or_default(),
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
        Client {
            messages: v["messages"].as_array().cloned().unwrap_or_default(),
            notes: v["notes"].clone(),
        }
    }
}

struct Client {
    messages: Vec<Value>,
    notes: Value,
}

impl Client {
    /// Fails the test with what the client noted when the query threw.
    fn ok(self) -> Self {
        assert!(
            self.notes.get("error").is_none(),
            "the query failed: {}\n{:?}",
            self.notes["error"],
            self.shape()
        );
        self
    }

    /// `type` (and `subtype`, content block types) of every message.
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

    fn init(&self) -> &Value {
        self.messages
            .iter()
            .find(|m| m["type"] == "system" && m["subtype"] == "init")
            .expect("a system/init message")
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

/// The SDK's options for a run that asks nobody: `bypassPermissions`, and the flag the
/// SDK requires with it.
fn bypass() -> Value {
    json!({"permissionMode": "bypassPermissions", "allowDangerouslySkipPermissions": true})
}

/// Every call answered once, in order, and the script used up.
fn clean(server: &FakeOpenAi) {
    assert_eq!(server.violations(), Vec::<String>::new());
    assert_eq!(
        server.unused(),
        0,
        "the model server's script was not used up"
    );
}

/// The system message and the user texts of the model server's last request.
fn last_request_texts(server: &FakeOpenAi) -> (String, Vec<String>) {
    let body = server.last_request().unwrap().body;
    let messages = body["messages"].as_array().unwrap();
    let text = |m: &Value| match &m["content"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let system = messages
        .iter()
        .find(|m| m["role"] == "system")
        .map(text)
        .unwrap_or_default();
    let users = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(text)
        .collect();
    (system, users)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_one_tool_session() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    s.write("notes.txt", "the answer is 42\n");
    let server = FakeOpenAi::start(vec![
        call(
            "call_1",
            "read_file",
            json!({"absolute_path": s.path("notes.txt")}),
        ),
        Reply::text("The notes say 42."),
    ])
    .await
    .unwrap();
    let c = s
        .client(
            &sdk,
            &server,
            json!({"prompts": ["what do the notes say?"]}),
        )
        .await
        .ok();
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
    let init = c.init();
    assert_eq!(init["model"], "fake-model");
    let session = init["session_id"].as_str().unwrap();
    assert!(uuid::Uuid::try_parse(session).is_ok(), "{session}");
    assert!(
        c.tool_results()[0]["content"]
            .to_string()
            .contains("the answer is 42")
    );
    let result = c.results()[0];
    assert_eq!(result["result"], "The notes say 42.");
    assert_eq!(result["is_error"], false);
    clean(&server);
}

/// `maxTurns`: the run stops with Claude's `error_max_turns`, whose `errors` the SDK
/// reads (it throws on an error result without them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_max_turns_ends_with_an_error_result_the_sdk_reads() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    s.write("a.txt", "a\n");
    let server = FakeOpenAi::start(vec![call(
        "call_1",
        "read_file",
        json!({"absolute_path": s.path("a.txt")}),
    )])
    .await
    .unwrap();
    let c = s
        .client(
            &sdk,
            &server,
            json!({"prompts": ["read a"], "options": {"maxTurns": 1}}),
        )
        .await;
    let result = c.results()[0];
    assert_eq!(result["subtype"], "error_max_turns", "{result}");
    assert_eq!(result["is_error"], true);
    assert!(
        result["errors"][0].as_str().unwrap().contains("limit of 1"),
        "{result}"
    );
    clean(&server);
}
