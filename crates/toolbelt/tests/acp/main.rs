//! `toolbelt --acp` driven by the official Agent Client Protocol client library
//! (`@agentclientprotocol/sdk`, npm) the way an editor drives it: Zed, JetBrains and
//! Neovim's CodeCompanion start the agent over stdio and speak JSON-RPC 2.0 to it.
//!
//! `tests/fixtures/acp_client/drive.mjs` runs one scenario of steps under Node
//! (initialize, session/new, prompts, cancel, load, list, raw lines...) with the SDK's
//! client app, answers the agent's permission questions from a scripted queue, serves
//! `fs/*` from the real files, and prints everything it saw as one JSON object; the
//! assertions here are on that object, on the files on disk and on the processes left.
//! Every session/update the agent sends must pass the SDK's schema (the driver lists the
//! ones it rejects as problems, and every test checks there are none). The model is a
//! replay script (`--model-replay`), or the loopback fake model server where a test
//! looks at what the model was sent.
//!
//! `scripts/setup.sh` installs the SDK into `.cache/acp`; where it or Node is missing the
//! tests say so and pass, except under `CI`, where they fail.

// A test target: a failed unwrap is a failed test, with its location.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cancel;
mod commands;
mod handshake;
mod mcp;
mod permissions;
mod prompt_content;
mod sessions;
mod turns;
mod worktrees;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{ModelTurn, ToolCall};

/// How long one scenario may take; the driver's own timeout is shorter, so a hang is
/// reported with what the editor saw until then.
const DRIVER_TIMEOUT: Duration = Duration::from_secs(150);
const SCENARIO_TIMEOUT_MS: u64 = 90_000;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The SDK's directory, or why it is not there. Under CI a missing SDK fails the test.
fn sdk_dir() -> Option<PathBuf> {
    let dir = repo_root().join(".cache/acp");
    let found = if !dir
        .join("node_modules/@agentclientprotocol/sdk/package.json")
        .exists()
    {
        Err(format!(
            "{} has no @agentclientprotocol/sdk (scripts/setup.sh installs it)",
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
                "the ACP tests must run under CI: {why}"
            );
            eprintln!("skipped: {why}");
            None
        }
    }
}

/// A workspace, a HOME and a TOOLBELT_HOME of their own.
struct Editor {
    dir: tempfile::TempDir,
    sdk: PathBuf,
}

impl Editor {
    fn new(sdk: PathBuf) -> Editor {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["ws", "home", "tbhome"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        Editor { dir, sdk }
    }

    /// The session's working directory (canonical, as the tools report paths).
    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws").canonicalize().unwrap()
    }

    fn path(&self, rel: &str) -> String {
        self.ws().join(rel).to_string_lossy().into_owned()
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.ws().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.ws().join(rel)).unwrap()
    }

    /// A replay script of model turns; its path.
    fn script(&self, name: &str, turns: &[Value]) -> String {
        let text: Vec<String> = turns.iter().map(Value::to_string).collect();
        let path = self.dir.path().join(name);
        std::fs::write(&path, text.join("\n")).unwrap();
        path.to_string_lossy().into_owned()
    }

    /// `toolbelt trust WS` with this HOME: the workspace's own rules count.
    fn trust_workspace(&self) {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .arg("trust")
            .arg(self.ws())
            .envs(self.env())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "toolbelt trust: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn env(&self) -> Vec<(String, String)> {
        let p = |rel: &str| self.dir.path().join(rel).to_string_lossy().into_owned();
        vec![
            ("HOME".into(), p("home")),
            ("TOOLBELT_HOME".into(), p("tbhome")),
            (
                "TOOLBELT_SYSTEM_SETTINGS_PATH".into(),
                p("no-system-settings.json"),
            ),
        ]
    }

    /// Runs `steps` against `toolbelt --acp ARGS` with the permission answers `answers`;
    /// what the editor saw. `scenario` adds keys (`env`, `buffers`, `flag`).
    async fn drive(&self, args: &[&str], answers: &[&str], steps: Value, scenario: Value) -> Seen {
        let mut config = json!({
            "sdkDir": self.sdk,
            "cwd": self.ws(),
            "env": {},
            "timeoutMs": SCENARIO_TIMEOUT_MS,
            "permissions": answers,
            "steps": steps,
        });
        for (k, v) in scenario.as_object().unwrap() {
            config[k] = v.clone();
        }
        for (k, v) in self.env() {
            config["env"][k] = json!(v);
        }
        let file = self.dir.path().join("scenario.json");
        std::fs::write(&file, config.to_string()).unwrap();
        let driver =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp_client/drive.mjs");
        let mut cmd = tokio::process::Command::new("node");
        cmd.arg(driver)
            .arg(&file)
            .arg(env!("CARGO_BIN_EXE_toolbelt"))
            .args(args)
            .current_dir(self.ws())
            .kill_on_drop(true)
            .stdin(std::process::Stdio::null());
        // The agent inherits the driver's environment: no model of the developer's.
        for var in [
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "OPENAI_MODEL",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_MODEL",
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "GOOGLE_GEMINI_BASE_URL",
            "GEMINI_MODEL",
        ] {
            cmd.env_remove(var);
        }
        let output = tokio::time::timeout(DRIVER_TIMEOUT, cmd.output())
            .await
            .expect("the ACP driver did not finish in time")
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let raw: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!("the driver's output is not JSON ({e}): {stdout}\n{stderr}")
        });
        let seen = Seen { raw };
        assert!(
            output.status.success() && seen.raw["error"].is_null(),
            "the driver failed: {}\n{}",
            seen.raw["error"],
            seen.summary()
        );
        assert_eq!(
            seen.raw["problems"],
            json!([]),
            "what a conforming agent never causes:\n{}",
            seen.summary()
        );
        seen
    }
}

/// What the editor saw (the driver's JSON object).
struct Seen {
    raw: Value,
}

impl Seen {
    /// The tail of the wire and the agent's stderr, for failure messages.
    fn summary(&self) -> String {
        let wire = self.raw["wire"].as_array().cloned().unwrap_or_default();
        let tail: Vec<String> = wire
            .iter()
            .rev()
            .take(40)
            .rev()
            .map(|w| {
                let text = format!("{} {}", w["dir"].as_str().unwrap_or("?"), w["msg"]);
                text.chars().take(600).collect()
            })
            .collect();
        format!(
            "problems: {}\nsdk log: {}\nexit: {}\nwire (last 40):\n{}\nagent stderr:\n{}",
            self.raw["problems"],
            self.raw["sdkLog"],
            self.raw["exit"],
            tail.join("\n"),
            self.raw["agentStderr"].as_str().unwrap_or_default()
        )
    }

    /// The record of step `n`: `{op, method, params, result | error}`.
    fn step(&self, n: usize) -> &Value {
        &self.raw["steps"][n]
    }

    /// The result of step `n`, which must have succeeded.
    fn result(&self, n: usize) -> &Value {
        let step = self.step(n);
        assert!(
            step.get("error").is_none_or(Value::is_null) && step.get("result").is_some(),
            "step {n} ({}) failed: {}\n{}",
            step["op"],
            step["error"],
            self.summary()
        );
        &step["result"]
    }

    /// The JSON-RPC error of step `n`, which must have failed.
    fn error(&self, n: usize) -> &Value {
        let step = self.step(n);
        assert!(
            step.get("error").is_some_and(|e| !e.is_null()),
            "step {n} ({}) did not fail: {}",
            step["op"],
            step["result"]
        );
        &step["error"]
    }

    fn session(&self, name: &str) -> String {
        self.raw["sessions"][name].as_str().unwrap().to_string()
    }

    /// Every update (the `update` of each session/update), in order.
    fn updates(&self) -> Vec<&Value> {
        self.raw["updates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| &u["params"]["update"])
            .collect()
    }

    /// The updates of kind `kind` that arrived during step `n` (any step: `None`).
    fn updates_of(&self, kind: &str, step: Option<usize>) -> Vec<&Value> {
        self.raw["updates"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|u| step.is_none_or(|n| u["step"] == n))
            .map(|u| &u["params"]["update"])
            .filter(|u| u["sessionUpdate"] == kind)
            .collect()
    }

    /// The text of the `kind` chunks (agent_message_chunk...) of step `n`, joined.
    fn text_of(&self, kind: &str, step: Option<usize>) -> String {
        self.updates_of(kind, step)
            .iter()
            .filter_map(|u| u["content"]["text"].as_str())
            .collect()
    }

    /// The tool call `tool_call` announced with `kind`, merged with its updates:
    /// the last value of every field, plus `statuses` (every status in order) and
    /// `updateContents` (the content of every tool_call_update).
    fn tool_call(&self, kind: &str) -> Value {
        let calls: Vec<&Value> = self
            .updates_of("tool_call", None)
            .into_iter()
            .filter(|u| u["kind"] == kind)
            .collect();
        assert_eq!(
            calls.len(),
            1,
            "one tool_call of kind {kind} expected: {calls:?}\n{}",
            self.summary()
        );
        self.merged(calls[0]["toolCallId"].as_str().unwrap())
    }

    fn merged(&self, id: &str) -> Value {
        let mut merged = json!({"statuses": [], "updateContents": []});
        for u in self.updates() {
            if u["toolCallId"] != id {
                continue;
            }
            for (k, v) in u.as_object().unwrap() {
                if !v.is_null() {
                    merged[k] = v.clone();
                }
            }
            if let Some(status) = u.get("status").filter(|s| !s.is_null()) {
                merged["statuses"]
                    .as_array_mut()
                    .unwrap()
                    .push(status.clone());
            }
            if u["sessionUpdate"] == "tool_call_update"
                && let Some(content) = u["content"].as_array()
            {
                let all = merged["updateContents"].as_array_mut().unwrap();
                all.extend(content.iter().cloned());
            }
        }
        merged
    }

    fn permissions(&self) -> &Vec<Value> {
        self.raw["permissions"].as_array().unwrap()
    }

    fn fs_calls(&self, method: &str) -> Vec<&Value> {
        self.raw["fs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["method"] == method)
            .collect()
    }
}

/// One model turn that calls `name` with `args`.
fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"tool_calls": [{"id": id, "name": name, "arguments": args}]})
}

fn say(text: &str) -> Value {
    json!({ "text": text })
}

/// The kinds of the options of a permission request.
fn option_kinds(request: &Value) -> Vec<String> {
    request["request"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap().to_string())
        .collect()
}

/// The steps every scenario starts with: initialize (fs and terminal off) and a new
/// session in the workspace, saved as `s`.
fn start() -> Vec<Value> {
    vec![
        json!({"op": "initialize"}),
        json!({"op": "newSession", "as": "s"}),
    ]
}

/// The environment that points the agent at the loopback model server.
fn model_env(server: &FakeOpenAi) -> Value {
    json!({
        "OPENAI_BASE_URL": server.base_url(),
        "OPENAI_API_KEY": "test-key",
        "OPENAI_MODEL": "fake-model",
    })
}

/// A reply of the loopback model server that calls `name` with `args`.
fn model_call(id: &str, name: &str, args: Value) -> Reply {
    Reply::turn(ModelTurn {
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.to_string(),
        }],
        ..Default::default()
    })
}

/// Every request answered once, in order, and the script used up.
fn clean(server: &FakeOpenAi) {
    assert_eq!(server.violations(), Vec::<String>::new());
    assert_eq!(
        server.unused(),
        0,
        "the model server's script was not used up"
    );
}

/// The tool results the model was given in the last request, in order.
fn tool_messages(server: &FakeOpenAi) -> Vec<String> {
    server.last_request().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect()
}
