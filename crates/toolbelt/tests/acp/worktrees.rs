//! Worktrees in an editor's sessions (issue 45): `--worktree` puts each session in a
//! git worktree of its `cwd`'s repository, and a `cwd` that is itself a worktree is
//! worked in as it is.

use std::path::Path;

use serde_json::json;

use crate::{Editor, call, say, sdk_dir};

/// Runs git in `dir` with an identity of its own and no user configuration.
fn git(e: &Editor, dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", e.home())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

fn repository(e: &Editor) {
    std::fs::create_dir_all(e.home()).unwrap();
    e.write("README.md", "r\n");
    git(e, &e.ws(), &["init", "-q", "-b", "main"]);
    git(e, &e.ws(), &["add", "."]);
    git(e, &e.ws(), &["commit", "-q", "-m", "init"]);
}

/// The shell call's output in the session opened by `steps`.
async fn where_the_shell_runs(e: &Editor, args: &[&str], cwd: &Path) -> String {
    let shell = call(
        "c1",
        "run_shell_command",
        json!({"command": "pwd; git branch --show-current"}),
    );
    let script = e.script("model.jsonl", &[shell, say("Done.")]);
    let mut flags = vec!["--model-replay", &script, "--yolo"];
    flags.extend_from_slice(args);
    let steps = json!([
        {"op": "initialize"},
        {"op": "newSession", "as": "s", "cwd": cwd},
        {"op": "prompt", "text": "where are we?"},
    ]);
    let seen = e.drive(&flags, &[], steps, json!({})).await;
    assert_eq!(
        seen.result(2)["stopReason"],
        "end_turn",
        "{}",
        seen.summary()
    );
    seen.tool_call("execute")["rawOutput"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worktree_flag_puts_an_editors_session_in_a_worktree() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    repository(&e);
    let out = where_the_shell_runs(&e, &["--worktree=feat"], &e.ws()).await;
    let worktree = e.ws().join(".qwen/worktrees/feat");
    assert!(
        out.contains(&worktree.to_string_lossy().into_owned()),
        "{out}"
    );
    assert!(out.contains("worktree-feat"), "{out}");
    assert!(worktree.join("README.md").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_cwd_is_a_worktree_works_there() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    repository(&e);
    let side = e.ws().join("side-tree");
    git(
        &e,
        &e.ws(),
        &["worktree", "add", "-q", "-b", "side", "side-tree"],
    );
    let out = where_the_shell_runs(&e, &[], &side).await;
    assert!(out.contains(&side.to_string_lossy().into_owned()), "{out}");
    assert!(out.contains("\nside"), "{out}");
}
