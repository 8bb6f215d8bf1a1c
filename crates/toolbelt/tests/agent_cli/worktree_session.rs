//! A session and its worktrees over several runs (issue 45): `--continue` re-attaches
//! like `--resume ID`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{Run, Workspace, json_result};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The workspace as a repository on `main` with one commit.
fn repository() -> Workspace {
    let w = Workspace::new();
    let ws = w.ws();
    git(&ws, &["init", "-q", "-b", "main"]);
    git(&ws, &["config", "user.name", "Test"]);
    git(&ws, &["config", "user.email", "test@example.com"]);
    git(&ws, &["config", "commit.gpgsign", "false"]);
    w.write("README.md", "hello\n");
    git(&ws, &["add", "README.md"]);
    git(&ws, &["commit", "-q", "-m", "first"]);
    w
}

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"tool_calls": [{"id": id, "name": name, "arguments": arguments}]})
}

async fn agent(w: &Workspace, script: &[Value], flags: &[&str]) -> Run {
    let script = w.script(script);
    let mut args = vec![
        "--model-replay",
        script.to_str().unwrap(),
        "--yolo",
        "-o",
        "json",
    ];
    args.extend_from_slice(flags);
    args.extend(["-p", "go"]);
    w.run(&args, &[], None).await
}

fn feat(w: &Workspace) -> PathBuf {
    w.ws().join(".qwen/worktrees/feat")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_re_attaches_to_the_latest_sessions_worktree() {
    let w = repository();
    let wt = feat(&w);
    let run = agent(&w, &[json!({"text": "made"})], &["--worktree=feat"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let id = json_result(&run.stdout)["session_id"].clone();

    let where_am_i = call(
        "c1",
        "run_shell_command",
        json!({"command": "git branch --show-current > where.txt"}),
    );
    let run = agent(
        &w,
        &[where_am_i.clone(), json!({"text": "ok"})],
        &["--continue"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(json_result(&run.stdout)["session_id"], id);
    assert_eq!(
        std::fs::read_to_string(wt.join("where.txt")).unwrap(),
        "worktree-feat\n"
    );
    assert!(!w.ws().join("where.txt").exists());

    // Removed since: said, and the session goes on in the checkout.
    git(
        &w.ws(),
        &["worktree", "remove", "--force", wt.to_str().unwrap()],
    );
    let run = agent(&w, &[where_am_i, json!({"text": "ok"})], &["--continue"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("was removed"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(w.ws().join("where.txt")).unwrap(),
        "main\n"
    );
}
