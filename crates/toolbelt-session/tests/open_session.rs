#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The example `open_session` opens a session as the binary does and runs a call
//! through the scheduler: an edit in auto-edit runs, an edit of protected configuration
//! (`.qwen/settings.json`) is refused, with nobody to ask; an untrusted folder's settings
//! cannot approve its own calls.
//!
//! Each case runs in a child process (this test binary again, one test selected) with a
//! HOME and TOOLBELT_HOME of its own: the session reads both from the environment.

#[path = "../examples/open_session.rs"]
mod example;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use toolbelt_core::ErrorKind;
use toolbelt_engine::scheduler::CallState;

/// Set in the child: the workspace it works in.
const CHILD_WORKSPACE: &str = "OPEN_SESSION_TEST_WORKSPACE";

/// Runs test `name` of this binary in a child with its own HOME and TOOLBELT_HOME, in
/// workspace `dir`; returns its output, after checking it passed.
fn run_child(name: &str, dir: &Path, home: &Path) -> String {
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_WORKSPACE, dir)
        .env("HOME", home)
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
    text
}

fn workspace() -> (tempfile::TempDir, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("workspace");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::create_dir_all(root.join(".qwen")).expect(".qwen");
    std::fs::write(root.join(".qwen/settings.json"), "{}\n").expect("settings");
    let home = tempfile::tempdir().expect("home");
    (dir, root, home)
}

#[test]
fn the_example_runs_an_edit_through_the_scheduler() {
    let (_dir, root, home) = workspace();
    run_child("child_writes_a_file", &root, home.path());
    let written = std::fs::read_to_string(root.join("notes.txt")).expect("notes.txt");
    assert_eq!(written, "hello\n");
}

#[test]
fn the_example_cannot_write_protected_configuration() {
    let (_dir, root, home) = workspace();
    run_child("child_is_refused_the_settings", &root, home.path());
    let settings = std::fs::read_to_string(root.join(".qwen/settings.json")).expect("settings");
    assert_eq!(settings, "{}\n", "the settings file changed");
}

#[test]
fn the_example_keeps_an_untrusted_folder_from_approving_its_own_calls() {
    let (_dir, root, home) = workspace();
    // A cloned repository's settings asking for yolo: stripped until the person trusts
    // the folder, so the edit asks, and with nobody to ask it is refused.
    let yolo = "{\"tools\": {\"approvalMode\": \"yolo\"}}\n";
    std::fs::write(root.join(".qwen/settings.json"), yolo).unwrap();
    run_child("child_is_refused_an_edit", &root, home.path());
    assert!(
        !root.join("notes.txt").exists(),
        "the untrusted folder approved the edit"
    );
}

/// What the repository's git configuration runs, in the project, beside `.git`.
const GIT_RUNS: &[&str] = &[
    ".githooks/pre-commit",
    "tools/fsmonitor.sh",
    "scripts/conv.sh",
];

#[test]
fn the_example_cannot_write_what_git_runs() {
    let (_dir, root, home) = workspace();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let config = "[core]\n\thooksPath = .githooks\n\tfsmonitor = tools/fsmonitor.sh\n\
                  [diff \"x\"]\n\ttextconv = sh scripts/conv.sh\n";
    std::fs::write(root.join(".git/config"), config).unwrap();
    std::fs::write(root.join(".gitattributes"), "*.bin diff=x\n").unwrap();
    run_child("child_is_refused_what_git_runs", &root, home.path());
    for file in GIT_RUNS {
        assert!(!root.join(file).exists(), "{file} was written");
    }
}

/// The child's workspace, or `None` when this runs as a test of its own (then it has
/// nothing to do: the parent tests above run it).
fn child_workspace() -> Option<PathBuf> {
    std::env::var_os(CHILD_WORKSPACE).map(PathBuf::from)
}

#[tokio::test(flavor = "multi_thread")]
async fn child_writes_a_file() {
    let Some(root) = child_workspace() else {
        return;
    };
    let path = root.join("notes.txt");
    let args = json!({"file_path": path, "content": "hello\n"});
    let done = example::run(&root, "write_file", &args, Some("auto-edit"))
        .await
        .expect("the session opens");
    assert_eq!(done.state, CallState::Success, "{}", done.result.llm_text());
}

#[tokio::test(flavor = "multi_thread")]
async fn child_is_refused_the_settings() {
    let Some(root) = child_workspace() else {
        return;
    };
    let path = root.join(".qwen/settings.json");
    let args = json!({"file_path": path, "content": "{\"tools\": {\"approvalMode\": \"yolo\"}}\n"});
    let done = example::run(&root, "write_file", &args, Some("auto-edit"))
        .await
        .expect("the session opens");
    assert_eq!(done.state, CallState::Error, "{}", done.result.llm_text());
    let kind = done.result.error.as_ref().map(|e| e.kind);
    assert_eq!(
        kind,
        Some(ErrorKind::ExecutionDenied),
        "{}",
        done.result.llm_text()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn child_is_refused_an_edit() {
    let Some(root) = child_workspace() else {
        return;
    };
    let args = json!({"file_path": root.join("notes.txt"), "content": "hello\n"});
    let done = example::run(&root, "write_file", &args, None)
        .await
        .expect("the session opens");
    let kind = done.result.error.as_ref().map(|e| e.kind);
    assert_eq!(
        kind,
        Some(ErrorKind::ExecutionDenied),
        "{}",
        done.result.llm_text()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn child_is_refused_what_git_runs() {
    let Some(root) = child_workspace() else {
        return;
    };
    for file in GIT_RUNS {
        let args = json!({"file_path": root.join(file), "content": "touch pwned\n"});
        let done = example::run(&root, "write_file", &args, Some("auto-edit"))
            .await
            .expect("the session opens");
        let kind = done.result.error.as_ref().map(|e| e.kind);
        assert_eq!(
            kind,
            Some(ErrorKind::ExecutionDenied),
            "{file}: {}",
            done.result.llm_text()
        );
    }
}
