//! `hook_callback` from the protocol's side, with a client that is not an SDK: lines
//! written to toolbelt's stdin as each message arrives. What an SDK that misbehaves
//! does: answers for requests never sent, answers after the time limit, answers too
//! large or unreadable, bad `initialize.hooks`, and going away while a callback runs.
//! Qwen's list shape (`[{"event", "callback_id"}]`), which its SDK declares but does
//! not send, is read here too.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};

use crate::{Sandbox, call, clean};

/// How long one message may take; only reached when toolbelt hangs.
const MESSAGE_TIMEOUT: Duration = Duration::from_secs(60);

/// toolbelt in stream-JSON mode, spoken to line by line.
struct Wire {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Wire {
    /// toolbelt in yolo mode against `server`, with `initialize` sent (its `hooks`).
    async fn start(s: &Sandbox, server: &FakeOpenAi, hooks: &Value) -> Wire {
        let p = |rel: &str| s.dir.path().join(rel);
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .args([
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--channel=SDK",
                "--model",
                "fake-model",
                "--approval-mode",
                "yolo",
            ])
            .current_dir(s.ws())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", p("home"))
            .env("TOOLBELT_HOME", p("tbhome"))
            .env(
                "TOOLBELT_SYSTEM_SETTINGS_PATH",
                p("no-system-settings.json"),
            )
            .env("OPENAI_BASE_URL", server.base_url())
            .env("OPENAI_API_KEY", "test-key")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut wire = Wire {
            child,
            stdin,
            lines,
        };
        wire.queue(json!({"type": "control_request", "request_id": "init",
            "request": {"subtype": "initialize", "hooks": hooks}}))
            .await;
        wire
    }

    /// Writes one line.
    async fn queue(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        let line = format!("{message}\n");
        stdin.write_all(line.as_bytes()).await.unwrap();
    }

    async fn prompt(&mut self, text: &str) {
        self.queue(
            json!({"type": "user", "session_id": "", "parent_tool_use_id": null,
            "message": {"role": "user", "content": text}}),
        )
        .await;
    }

    /// Answers our request `id` with `response`.
    async fn answer(&mut self, id: &str, response: Value) {
        self.queue(json!({"type": "control_response",
            "response": {"subtype": "success", "request_id": id, "response": response}}))
            .await;
    }

    /// The next message; `None` when stdout closed.
    async fn next(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(MESSAGE_TIMEOUT, self.lines.next_line())
            .await
            .expect("toolbelt wrote nothing for a minute")
            .unwrap()?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")))
    }

    /// Reads until a message satisfies `wanted`, which it returns.
    async fn until(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            let m = self.next().await.expect("stdout closed first");
            if wanted(&m) {
                return m;
            }
        }
    }

    async fn hook_callback(&mut self) -> Value {
        self.until(|m| m["type"] == "control_request" && m["request"]["subtype"] == "hook_callback")
            .await
    }

    async fn result(&mut self) -> Value {
        self.until(|m| m["type"] == "result").await
    }

    /// Closes stdin and waits for the exit code.
    async fn end(mut self) -> i32 {
        self.stdin = None;
        while self.next().await.is_some() {}
        tokio::time::timeout(MESSAGE_TIMEOUT, self.child.wait())
            .await
            .expect("toolbelt did not exit")
            .unwrap()
            .code()
            .unwrap_or(-1)
    }
}

fn tool_result_text(m: &Value) -> String {
    m["message"]["content"][0]["content"].to_string()
}

async fn tool_result(wire: &mut Wire) -> String {
    let m = wire
        .until(|m| m["type"] == "user" && m["message"]["content"][0]["type"] == "tool_result")
        .await;
    tool_result_text(&m)
}

/// Qwen's list shape registers a callback; an answer for a request never sent is
/// dropped, and the real answer's denial holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen_shaped_hooks_are_called_and_a_stray_answer_is_dropped() {
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        call("c1", "run_shell_command", json!({"command": "touch ran"})),
        Reply::text("Refused."),
    ])
    .await
    .unwrap();
    let hooks = json!([{"event": "PreToolUse", "callback_id": "qwen-1", "matcher": "Bash"}]);
    let mut wire = Wire::start(&s, &server, &hooks).await;
    let init = wire.until(|m| m["type"] == "control_response").await;
    assert_eq!(init["response"]["subtype"], "success", "{init}");
    let capabilities = &init["response"]["response"]["capabilities"];
    assert_eq!(capabilities["can_handle_hook_callback"], true);
    wire.prompt("touch it").await;
    let request = wire.hook_callback().await;
    assert_eq!(request["request"]["callback_id"], "qwen-1");
    assert_eq!(request["request"]["tool_use_id"], "c1");
    assert_eq!(
        request["request"]["input"]["tool_input"]["command"],
        "touch ran"
    );
    let id = request["request_id"].as_str().unwrap().to_string();
    wire.answer("never-sent", json!({"decision": "approve"}))
        .await;
    wire.answer(&id, json!({"decision": "block", "reason": "not from qwen"}))
        .await;
    assert!(tool_result(&mut wire).await.contains("not from qwen"));
    assert_eq!(wire.result().await["subtype"], "success");
    assert_eq!(wire.end().await, 0);
    assert!(s.read("ran").is_none());
    clean(&server);
}

/// A callback that does not answer within its `timeout` is a failure (the call goes
/// ahead, as Claude's default `onFailure` says), its request is withdrawn, and the
/// answer that comes after is dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_past_its_timeout_is_withdrawn_and_its_late_answer_dropped() {
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        call("c1", "run_shell_command", json!({"command": "touch ran"})),
        call("c2", "run_shell_command", json!({"command": "touch again"})),
        Reply::text("Done."),
    ])
    .await
    .unwrap();
    let hooks = json!({"PreToolUse": [{"hookCallbackIds": ["slow"], "timeout": 0.5}]});
    let mut wire = Wire::start(&s, &server, &hooks).await;
    wire.prompt("touch it").await;
    let request = wire.hook_callback().await;
    let id = request["request_id"].as_str().unwrap().to_string();
    let cancel = wire.until(|m| m["type"] == "control_cancel_request").await;
    assert_eq!(cancel["request_id"], id.as_str());
    wire.answer(&id, json!({"decision": "block", "reason": "too late"}))
        .await;
    let first = tool_result(&mut wire).await;
    assert!(!first.contains("too late"), "{first}");
    // The second call's callback is answered in time.
    let request = wire.hook_callback().await;
    let id = request["request_id"].as_str().unwrap().to_string();
    wire.answer(&id, json!({})).await;
    tool_result(&mut wire).await;
    assert_eq!(wire.result().await["subtype"], "success");
    assert_eq!(wire.end().await, 0);
    assert!(s.read("ran").is_some());
    assert!(s.read("again").is_some());
    clean(&server);
}

/// An answer over 1 MiB, one with a field of the wrong type, and an error response:
/// the first two refuse the call (never a silent allow), the error lets it go ahead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_unreadable_and_error_answers() {
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        call("c1", "run_shell_command", json!({"command": "touch one"})),
        call("c2", "run_shell_command", json!({"command": "touch two"})),
        call("c3", "run_shell_command", json!({"command": "touch three"})),
        Reply::text("Done."),
    ])
    .await
    .unwrap();
    let hooks = json!({"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["h"]}]});
    let mut wire = Wire::start(&s, &server, &hooks).await;
    wire.prompt("touch them").await;
    let id = |m: &Value| m["request_id"].as_str().unwrap().to_string();
    let huge = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "additionalContext": "x".repeat(2 << 20)}});
    let request = wire.hook_callback().await;
    wire.answer(&id(&request), huge).await;
    assert!(tool_result(&mut wire).await.contains("larger than 1 MiB"));
    let request = wire.hook_callback().await;
    wire.answer(&id(&request), json!({"decision": 7})).await;
    assert!(tool_result(&mut wire).await.contains("cannot be read"));
    let request = wire.hook_callback().await;
    wire.queue(
        json!({"type": "control_response", "response": {"subtype": "error",
        "request_id": id(&request), "error": "Error: hook callback not found: h"}}),
    )
    .await;
    tool_result(&mut wire).await;
    assert_eq!(wire.result().await["subtype"], "success");
    assert_eq!(wire.end().await, 0);
    assert!(s.read("one").is_none());
    assert!(s.read("two").is_none());
    assert!(s.read("three").is_some());
    clean(&server);
}

/// The SDK goes away while a callback is pending: the call is not left waiting for the
/// time limit, and toolbelt exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_going_away_ends_the_wait() {
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        call("c1", "run_shell_command", json!({"command": "touch ran"})),
        Reply::text("Done."),
    ])
    .await
    .unwrap();
    let hooks = json!({"PreToolUse": [{"hookCallbackIds": ["h"], "timeout": 3600}]});
    let mut wire = Wire::start(&s, &server, &hooks).await;
    wire.prompt("touch it").await;
    wire.hook_callback().await;
    let started = std::time::Instant::now();
    assert_eq!(wire.end().await, 0);
    assert!(started.elapsed() < Duration::from_secs(30));
}

/// Bad `initialize.hooks` fail `initialize` with the entry named; nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_initialize_hooks_are_named_in_the_error() {
    let cases = [
        (
            json!({"PreToolUse": [{"hookCallbackIds": "h1"}]}),
            "hooks.PreToolUse[0].hookCallbackIds: must be a list of callback ids",
        ),
        (
            json!({"PreToolUs": [{"hookCallbackIds": ["h1"]}]}),
            "did you mean PreToolUse?",
        ),
        (
            json!({"PreToolUse": [{"matcher": "(", "hookCallbackIds": ["h1"]}]}),
            "hooks.PreToolUse[0].matcher",
        ),
        (json!([{"event": "Stop"}]), "hooks[0].callback_id"),
        (json!("PreToolUse"), "\"hooks\" must be an object of events"),
    ];
    for (hooks, says) in cases {
        let s = Sandbox::new();
        let server = FakeOpenAi::start(vec![]).await.unwrap();
        let mut wire = Wire::start(&s, &server, &hooks).await;
        let init = wire.until(|m| m["type"] == "control_response").await;
        assert_eq!(init["response"]["subtype"], "error", "{hooks}: {init}");
        let error = init["response"]["error"].as_str().unwrap();
        assert!(error.contains(says), "{hooks}: {error}");
        assert!(error.starts_with("initialize: "), "{error}");
        wire.end().await;
        assert!(server.requests().is_empty());
    }
}
