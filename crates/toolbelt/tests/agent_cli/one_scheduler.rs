//! Issue 42's four bugs, each from a scheduler a front end configured by hand: the
//! person's `/memory add` and `@path` reads went around the session's hooks and flags,
//! `tools call` judged calls in another mode than the `when` clauses, and an MCP server's
//! changed list brought back a tool `--disallowedTools` had removed. Every scheduler is
//! now made from the session's one description of its rules; these hold it so.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{FinishReason, ModelTurn, ToolCall};

use crate::pty::Pty;
use crate::support::Workspace;

fn call(id: &str, name: &str, arguments: Value) -> Reply {
    Reply::turn(ModelTurn {
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.to_string(),
        }],
        finish_reason: FinishReason::ToolCalls,
        ..Default::default()
    })
}

/// A PreToolUse hook for `matcher` in the project's settings that refuses every call it
/// sees (exit 2, the reason on stderr) and notes the tool's name in `hook.log`.
fn refusing_hook(w: &Workspace, matcher: &str) -> PathBuf {
    let log = w.dir.path().join("hook.log");
    let script = w.dir.path().join("refuse.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/bash\ngrep -o '\"tool_name\":\"[a-z_]*\"' >> '{}'\necho 'REFUSED-BY-HOOK' >&2\nexit 2\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hook = json!({"matcher": matcher, "hooks": [{"type": "command", "command": script}]});
    w.write(
        ".qwen/settings.json",
        &json!({"hooks": {"PreToolUse": [hook]}}).to_string(),
    );
    log
}

/// The interactive agent in `w` against `server`, trusted, with `args`.
fn interactive(w: &Workspace, server: &FakeOpenAi, args: &[&str]) -> Pty {
    let url = server.base_url();
    let mut all = vec![
        "--openai-base-url",
        url.as_str(),
        "-m",
        "fake-model",
        "--trust-workspace",
    ];
    all.extend_from_slice(args);
    let pty = Pty::spawn(
        Path::new(env!("CARGO_BIN_EXE_toolbelt")),
        &w.ws(),
        w.dir.path(),
        &all,
        &[],
    );
    pty.wait_for(" mode (shift+tab");
    pty
}

/// The global memory file `/memory add` writes.
fn global_memory(w: &Workspace) -> PathBuf {
    w.dir.path().join("home/.qwen/QWEN.md")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_add_is_a_call_the_session_hooks_see() {
    let w = Workspace::new();
    let log = refusing_hook(&w, "save_memory");
    let server = FakeOpenAi::start(vec![]).await.unwrap();
    tokio::task::block_in_place(|| {
        let pty = interactive(&w, &server, &[]);
        pty.line("/memory add HOOKED-FACT");
        pty.wait_for("REFUSED-BY-HOOK");
        pty.send(crate::pty::keys::CTRL_D);
        pty.wait_exit();
    });
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(seen.contains("save_memory"), "the hook saw: {seen:?}");
    let memory = std::fs::read_to_string(global_memory(&w)).unwrap_or_default();
    assert!(!memory.contains("HOOKED-FACT"), "{memory}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_add_answers_to_the_flags_rules() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![]).await.unwrap();
    tokio::task::block_in_place(|| {
        let pty = interactive(&w, &server, &["--disallowedTools", "save_memory"]);
        pty.line("/memory add FLAGGED-FACT");
        pty.wait_for("/memory add failed");
        pty.send(crate::pty::keys::CTRL_D);
        pty.wait_exit();
    });
    let memory = std::fs::read_to_string(global_memory(&w)).unwrap_or_default();
    assert!(!memory.contains("FLAGGED-FACT"), "{memory}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_path_reads_meet_the_hooks_that_guard_reads() {
    let w = Workspace::new();
    w.write("secret.md", "THE-GUARDED-TEXT\n");
    let log = refusing_hook(&w, "read_file|read_many_files");
    let server = FakeOpenAi::start(vec![Reply::text("ok")]).await.unwrap();
    let url = server.base_url();
    let run = w
        .run(
            &[
                "--openai-base-url",
                &url,
                "-m",
                "m",
                "--trust-workspace",
                "-p",
                "explain @secret.md",
            ],
            &[],
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let user = server.requests()[0].body["messages"][1]["content"].to_string();
    assert!(!user.contains("THE-GUARDED-TEXT"), "{user}");
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(seen.contains("read_"), "the hook saw: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_call_judges_calls_in_the_settings_mode() {
    let w = Workspace::new();
    w.write(
        ".qwen/settings.json",
        &json!({"tools": {"approvalMode": "plan"}}).to_string(),
    );
    let target = w.ws().join("made.txt");
    let args = json!({"file_path": target, "content": "x"}).to_string();
    let run = w
        .run(
            &[
                "tools",
                "call",
                "write_file",
                &args,
                "--yes",
                "--trust-workspace",
            ],
            &[],
            None,
        )
        .await;
    assert_eq!(
        run.code, 3,
        "refused in plan mode: {}{}",
        run.stdout, run.stderr
    );
    assert!(!target.exists(), "plan mode writes nothing");
}

/// The `mcp_testserver` example of `toolbelt-mcp`, built by `cargo test --workspace`.
fn testserver() -> String {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_toolbelt"));
    let path = exe.parent().unwrap().join("examples/mcp_testserver");
    assert!(path.exists(), "{} is missing", path.display());
    path.to_string_lossy().into_owned()
}

/// The tool names of one recorded request.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            let names = tools.iter().map(|t| t["function"]["name"].as_str());
            names.map(|n| n.unwrap_or_default().to_string()).collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_disallowed_by_name_stays_out_when_its_server_lists_again() {
    let w = Workspace::new();
    w.write(
        ".qwen/settings.json",
        // The first request must offer the server's tools: it is waited for.
        &json!({"mcpServers": {"t": {"command": testserver(), "trust": true}},
                "mcp": {"waitAtStart": true}})
        .to_string(),
    );
    let server = FakeOpenAi::start(vec![
        call("c1", "mcp__t__add_tool", json!({"name": "fresh"})),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    let url = server.base_url();
    let args = [
        "--openai-base-url",
        &url,
        "-m",
        "m",
        "--trust-workspace",
        "--yolo",
        "--disallowedTools",
        "mcp__t__echo",
        "-p",
        "add a tool",
    ];
    let run = w.run(&args, &[], None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}", run.stderr);
    let (first, second) = (offered(&requests[0].body), offered(&requests[1].body));
    assert!(first.contains(&"mcp__t__add_tool".to_string()), "{first:?}");
    assert!(!first.contains(&"mcp__t__echo".to_string()), "{first:?}");
    assert!(second.contains(&"mcp__t__fresh".to_string()), "{second:?}");
    assert!(!second.contains(&"mcp__t__echo".to_string()), "{second:?}");
}
