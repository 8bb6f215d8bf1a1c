//! A session and its worktrees over several runs (issue 45): `--continue` re-attaches
//! like `--resume ID`, and checkpoints follow the session into a worktree it entered
//! with `enter_worktree`, so `toolbelt restore` puts the worktree's files back and
//! never writes to the person's checkout; a sub-agent in a worktree of its own is
//! bound there by the session's path rules.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{ModelTurn, ToolCall};

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

/// The ID of the checkpoint taken before call `call_id`, from `toolbelt restore --list`.
fn before(list: &str, call_id: &str) -> String {
    let line = list
        .lines()
        .find(|l| l.contains(&format!("({call_id})")))
        .unwrap_or_else(|| panic!("no checkpoint of {call_id} in:\n{list}"));
    line.split_whitespace().next().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_in_an_entered_worktree_is_restored_there_and_never_in_the_checkout() {
    let w = repository();
    let (ws, wt) = (w.ws(), feat(&w));
    let run = agent(
        &w,
        &[
            call("c1", "enter_worktree", json!({"name": "feat"})),
            call(
                "c2",
                "write_file",
                json!({"file_path": wt.join("README.md"), "content": "changed\n"}),
            ),
            call(
                "c3",
                "run_shell_command",
                json!({"command": "echo new > added.txt"}),
            ),
            json!({"text": "done"}),
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(wt.join("README.md")).unwrap(),
        "changed\n"
    );
    assert!(wt.join("added.txt").exists());
    // The person works on in their checkout meanwhile.
    w.write("README.md", "mine\n");
    w.write("notes.txt", "my notes\n");

    let list = w.run(&["restore", "--list"], &[], None).await;
    assert_eq!(list.code, 0, "{}", list.stderr);
    let id = before(&list.stdout, "c2");
    // Forced, so a checkout in the checkpoint would be written back too.
    let done = w
        .run(&["restore", &id, "--yes", "--force"], &[], None)
        .await;
    assert_eq!(done.code, 0, "{}\n{}", done.stdout, done.stderr);
    assert_eq!(
        std::fs::read_to_string(wt.join("README.md")).unwrap(),
        "hello\n",
        "{}",
        done.stdout
    );
    assert!(!wt.join("added.txt").exists(), "{}", done.stdout);
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    assert_eq!(
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
        "mine\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "my notes\n"
    );
    assert_eq!(git(&ws, &["branch", "--show-current"]), "main");

    // The restore is a checkpoint of the worktree too: restoring it redoes the edit.
    let list = w.run(&["restore", "--list"], &[], None).await;
    let undo = before(&list.stdout, &format!("restore {id}"));
    let redone = w.run(&["restore", &undo, "--yes"], &[], None).await;
    assert_eq!(redone.code, 0, "{}\n{}", redone.stdout, redone.stderr);
    assert_eq!(
        std::fs::read_to_string(wt.join("README.md")).unwrap(),
        "changed\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
        "mine\n"
    );
}

/// The result of `call_id` in the last request the sub-agent of `route` sent.
fn sub_agent_answer(server: &FakeOpenAi, route: &str, call_id: &str) -> String {
    let requests = server.requests();
    let last = requests
        .iter()
        .rev()
        .find(|r| r.route.as_deref() == Some(route))
        .unwrap_or_else(|| panic!("the sub-agent {route} sent nothing"));
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no answer to {call_id}"))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isolated_sub_agent_is_bound_by_the_path_rules_in_its_worktree() {
    let w = repository();
    let ws = w.ws();
    w.write("secret.txt", "TOPSECRET\n");
    git(&ws, &["add", "secret.txt"]);
    git(&ws, &["commit", "-q", "-m", "secret"]);
    let settings = w.dir.path().join("home/.qwen/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let rules = json!({"permissions": {"deny": ["Read(/secret.txt)"]}});
    std::fs::write(&settings, rules.to_string()).unwrap();

    let look =
        json!({"description": "look", "prompt": "MARK-R: read them", "isolation": "worktree"});
    let turn = |id: &str, name: &str, args: Value| {
        Reply::turn(ModelTurn {
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: args.to_string(),
            }],
            ..Default::default()
        })
    };
    let server = FakeOpenAi::start(vec![turn("a1", "agent", look), Reply::text("done")])
        .await
        .unwrap();
    server.add_route(
        "MARK-R",
        vec![
            turn(
                "r1",
                "read_many_files",
                json!({"paths": ["secret.txt", "README.md"]}),
            ),
            Reply::text("read"),
        ],
    );
    let url = server.base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "sk-local"),
        ("OPENAI_MODEL", "m"),
    ];
    let run = w
        .run(&["--yolo", "-o", "json", "-p", "go"], &env, None)
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(server.violations(), Vec::<String>::new());
    let read = sub_agent_answer(&server, "MARK-R", "r1");
    // The worktree's copy of secret.txt is the checkout's file under another name.
    assert!(
        read.contains("denied by the permission rule `Read(/secret.txt)`"),
        "{read}"
    );
    assert!(read.contains(".qwen/worktrees/agent-"), "{read}");
    assert!(!read.contains("TOPSECRET"), "{read}");
}
