#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `Session::agent` says why it failed by cause (`AgentError`), so an embedder can match
//! it: a replay script that is not there is the model's, an unknown `--resume` ID the
//! saved sessions', a rule that does not parse the flags'. Each keeps the text the
//! person reads. The cases run in a child process (this test binary again) with a HOME
//! and TOOLBELT_HOME of its own.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use toolbelt_session::{AgentError, AgentOptions, Resume, Session, SessionOptions, Setup};

/// Set in the child: the workspace it works in.
const CHILD_WORKSPACE: &str = "AGENT_ERRORS_TEST_WORKSPACE";

#[test]
fn each_cause_of_a_failed_agent_is_its_own_variant() {
    let dir = tempfile::tempdir().expect("workspace");
    let root = dir.path().join("ws");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new(exe)
        .args(["child_meets_each_cause", "--exact", "--nocapture"])
        .env(CHILD_WORKSPACE, &root)
        .env("HOME", &home)
        .env("TOOLBELT_HOME", home.join(".toolbelt"))
        .output()
        .expect("run the child");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the child failed:\n{text}");
    assert!(text.contains("1 passed"), "the child ran no test:\n{text}");
}

fn setup() -> Setup {
    Setup {
        read_prompt: None,
        sink: Arc::new(|_| {}),
        approver: None,
    }
}

async fn agent_error(root: &Path, options: AgentOptions) -> AgentError {
    let session = Session::open(root, SessionOptions::default()).unwrap();
    match session.agent(options, setup()).await {
        Ok(_) => panic!("the agent was made"),
        Err(e) => e,
    }
}

#[tokio::test]
async fn child_meets_each_cause() {
    let Some(root) = std::env::var_os(CHILD_WORKSPACE).map(PathBuf::from) else {
        return;
    };
    let script = root.join("model.jsonl");
    std::fs::write(&script, "{\"text\": \"ok\"}\n").unwrap();

    let missing = AgentOptions {
        model_replay: Some(root.join("no-such-script.jsonl")),
        ..AgentOptions::default()
    };
    let e = agent_error(&root, missing).await;
    assert!(matches!(e, AgentError::Model(_)), "{e:?}");

    let unknown = AgentOptions {
        model_replay: Some(script.clone()),
        resume: Resume::Id("no-such-session".into()),
        ..AgentOptions::default()
    };
    let e = agent_error(&root, unknown).await;
    assert!(matches!(e, AgentError::Saved(_)), "{e:?}");
    assert!(e.to_string().contains("no-such-session"), "{e}");

    let mut bad_rule = AgentOptions {
        model_replay: Some(script),
        ..AgentOptions::default()
    };
    bad_rule.policy.allowed_tools = vec!["run_shell_command(git".into()];
    let e = agent_error(&root, bad_rule).await;
    assert!(matches!(e, AgentError::Flags(_)), "{e:?}");
    assert!(e.to_string().contains("is not a permission rule"), "{e}");
}
