#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A session parses its permission rules before its registry exists, with the words of
//! every built-in tool (`toolbelt_session::rule_vocabulary`), not with what the
//! settings happen to register. These tests open real sessions and hold:
//! - that vocabulary equal to what the full registry of a session's agent says (every
//!   built-in, the skill tool, the agent tool), so the two cannot drift;
//! - `Read(...)` path rules covering `grep_search` and `glob`;
//! - `deny: ["WebSearch"]` denying `web_search` with no search provider configured;
//! - `tools.core` restricting the shell to the commands it names.
//!
//! Each case runs in a child process (this test binary again, one test selected) with a
//! HOME and TOOLBELT_HOME of its own, whose `~/.qwen/settings.json` holds the rules.

#[path = "../examples/open_session.rs"]
mod example;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::json;
use toolbelt_core::{ErrorKind, PermissionSubject};
use toolbelt_engine::rules::Decision;
use toolbelt_engine::scheduler::CallState;
use toolbelt_session::{AgentOptions, Session, SessionOptions, Setup};

/// Set in the child: the workspace it works in.
const CHILD_WORKSPACE: &str = "RULE_VOCABULARY_TEST_WORKSPACE";

/// Runs test `name` of this binary in a child with its own HOME (whose user settings
/// are `settings`) and TOOLBELT_HOME, in a fresh workspace; returns the workspace.
fn run_child(name: &str, settings: serde_json::Value) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("workspace");
    let root = dir.path().join("ws");
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::write(root.join("secret/key.txt"), "TOPSECRET-41\n").unwrap();
    std::fs::write(root.join("open.txt"), "TOPSECRET-41 is a name\n").unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".qwen")).unwrap();
    std::fs::write(home.join(".qwen/settings.json"), settings.to_string()).unwrap();
    // A skill of the person's, so the session registers the skill tool.
    std::fs::create_dir_all(home.join(".qwen/skills/demo")).unwrap();
    let skill = "---\nname: demo\ndescription: A demonstration skill.\n---\nSay hello.\n";
    std::fs::write(home.join(".qwen/skills/demo/SKILL.md"), skill).unwrap();
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_WORKSPACE, &root)
        .env("HOME", &home)
        .env("TOOLBELT_HOME", home.join(".toolbelt"))
        .env_remove("TOOLBELT_TRUST_WORKSPACE")
        .output()
        .expect("run the child");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the child failed:\n{text}");
    assert!(text.contains("1 passed"), "the child ran no test:\n{text}");
    (dir, root)
}

/// The child's workspace, or `None` when this runs as a test of its own (then it has
/// nothing to do: the parent tests run it).
fn child_workspace() -> Option<PathBuf> {
    std::env::var_os(CHILD_WORKSPACE).map(PathBuf::from)
}

#[test]
fn the_session_vocabulary_is_what_a_full_registry_says() {
    let provider = json!({"webSearch": {"provider": [
        {"type": "searxng", "baseUrl": "http://127.0.0.1:9"}
    ]}});
    run_child("child_compares_the_vocabularies", provider);
}

#[tokio::test(flavor = "multi_thread")]
async fn child_compares_the_vocabularies() {
    let Some(root) = child_workspace() else {
        return;
    };
    let script = root.join("model.jsonl");
    std::fs::write(&script, "{\"text\": \"ok\"}\n").unwrap();
    let session = Session::open(&root, SessionOptions::default()).unwrap();
    let options = AgentOptions {
        model_replay: Some(script),
        ..AgentOptions::default()
    };
    let setup = Setup {
        read_prompt: None,
        sink: Arc::new(|_| {}),
        approver: None,
    };
    let prepared = session.agent(options, setup).await.unwrap();
    let registry = prepared.agent.registry();
    for name in ["web_search", "skill", "agent", "grep_search"] {
        assert!(registry.get(name).is_some(), "{name} is registered");
    }
    // The MCP resource tools are registered only when a server offers resources.
    let mut registered = registry.rule_vocabulary();
    registered.merge(&toolbelt_mcp::rule_vocabulary());
    assert_eq!(registered, toolbelt_session::rule_vocabulary());
}

/// `Read(/secret/**)` (and `Read` is not `read_file` alone): the walks of `grep_search`
/// and `glob` leave the folder's files out, and `grep_search` naming one is refused.
#[test]
fn a_read_rule_covers_grep_search_and_glob() {
    let settings = json!({"permissions": {"deny": ["Read(/secret/**)"]}});
    run_child("child_is_kept_out_of_the_secret", settings);
}

#[tokio::test(flavor = "multi_thread")]
async fn child_is_kept_out_of_the_secret() {
    let Some(root) = child_workspace() else {
        return;
    };
    let args = json!({"pattern": "TOPSECRET"});
    let done = example::run(&root, "grep_search", &args, Some("yolo"))
        .await
        .unwrap();
    let text = done.result.llm_text();
    assert_eq!(done.state, CallState::Success, "{text}");
    assert!(text.contains("open.txt"), "{text}");
    assert!(
        !text.contains("key.txt"),
        "the walk read the secret: {text}"
    );
    let args = json!({"pattern": "*", "path": root.join("secret")});
    let done = example::run(&root, "glob", &args, Some("yolo"))
        .await
        .unwrap();
    let text = done.result.llm_text();
    assert!(!text.contains("key.txt"), "glob listed the secret: {text}");
    assert!(text.contains("permission rules deny"), "{text}");
    let args = json!({"pattern": "TOP", "path": root.join("secret/key.txt")});
    let done = example::run(&root, "grep_search", &args, Some("yolo"))
        .await
        .unwrap();
    let kind = done.result.error.as_ref().map(|e| e.kind);
    let text = done.result.llm_text();
    assert_eq!(kind, Some(ErrorKind::ExecutionDenied), "{text}");
    assert!(text.contains("Read(/secret/**)"), "{text}");
}

/// `WebSearch` names `web_search` though no provider is configured (the tool is not
/// registered): the session's rules deny it, and the alias is no unknown tool.
#[test]
fn a_websearch_deny_rule_holds_without_a_provider() {
    let settings = json!({"permissions": {"deny": ["WebSearch"]}});
    run_child("child_has_web_search_denied", settings);
}

#[tokio::test(flavor = "multi_thread")]
async fn child_has_web_search_denied() {
    let Some(root) = child_workspace() else {
        return;
    };
    let session = Session::open(&root, SessionOptions::default()).unwrap();
    assert!(session.registry.get("web_search").is_none());
    assert_eq!(
        session
            .rules
            .evaluate("web_search", &PermissionSubject::None),
        Decision::Deny
    );
    assert!(session.rules.unknown_tools(|_| false).is_empty());
}

/// `tools.core: ["run_shell_command(echo)"]` restricts the shell to `echo`, even in yolo.
#[test]
fn tools_core_restricts_the_shell() {
    let settings = json!({"tools": {"core": ["run_shell_command(echo)"]}});
    let (_dir, root) = run_child("child_runs_only_echo", settings);
    assert!(!root.join("made.txt").exists(), "touch ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn child_runs_only_echo() {
    let Some(root) = child_workspace() else {
        return;
    };
    let echo = json!({"command": "echo hello-41", "is_background": false});
    let done = example::run(&root, "run_shell_command", &echo, Some("yolo"))
        .await
        .unwrap();
    assert_eq!(done.state, CallState::Success, "{}", done.result.llm_text());
    let touch = json!({"command": "touch made.txt", "is_background": false});
    let done = example::run(&root, "run_shell_command", &touch, Some("yolo"))
        .await
        .unwrap();
    let kind = done.result.error.as_ref().map(|e| e.kind);
    let text = done.result.llm_text();
    assert_eq!(kind, Some(ErrorKind::ExecutionDenied), "{text}");
    assert!(text.contains("tools.core"), "{text}");
    assert!(!Path::new(&root).join("made.txt").exists());
}
