//! Git worktrees (issue 45) through the binary: `--worktree` with a scripted model that
//! edits and commits, `--resume` re-attaching, the clear errors, `toolbelt worktree`.

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

fn shell(id: &str, command: &str) -> Value {
    json!({"tool_calls": [{"id": id, "name": "run_shell_command", "arguments": {"command": command}}]})
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
async fn a_worktree_session_commits_on_its_branch_and_leaves_the_checkout_untouched() {
    let w = repository();
    let wt = feat(&w);
    let edit = json!({"tool_calls": [{"id": "c1", "name": "write_file", "arguments": {
        "file_path": wt.join("README.md"), "content": "changed\n"}}]});
    let run = agent(
        &w,
        &[
            edit,
            shell("c2", "git commit -q -am 'edit in the worktree'"),
            json!({"text": "done"}),
        ],
        &["--worktree=feat"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(json_result(&run.stdout)["result"], "done");
    // The person's checkout: same file, same branch, same history, nothing to commit.
    let ws = w.ws();
    assert_eq!(
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
        "hello\n"
    );
    assert_eq!(git(&ws, &["branch", "--show-current"]), "main");
    assert_eq!(git(&ws, &["rev-list", "--count", "main"]), "1");
    assert_eq!(git(&ws, &["status", "--porcelain"]), "");
    // The work: on worktree-feat, in the worktree.
    assert_eq!(
        git(&ws, &["log", "-1", "--format=%s", "worktree-feat"]),
        "edit in the worktree"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("README.md")).unwrap(),
        "changed\n"
    );
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_re_attaches_to_the_sessions_worktree_and_reports_a_removed_one() {
    let w = repository();
    let wt = feat(&w);
    let run = agent(&w, &[json!({"text": "made"})], &["--worktree=feat"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let id = json_result(&run.stdout)["session_id"]
        .as_str()
        .unwrap()
        .to_string();

    let run = agent(
        &w,
        &[
            shell("c1", "git branch --show-current > where.txt"),
            json!({"text": "ok"}),
        ],
        &["--resume", &id],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(wt.join("where.txt")).unwrap(),
        "worktree-feat\n"
    );
    assert!(!w.ws().join("where.txt").exists());

    git(
        &w.ws(),
        &["worktree", "remove", "--force", wt.to_str().unwrap()],
    );
    let run = agent(
        &w,
        &[
            shell("c1", "git branch --show-current > where.txt"),
            json!({"text": "ok"}),
        ],
        &["--resume", &id],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("was removed"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(w.ws().join("where.txt")).unwrap(),
        "main\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worktree_errors_are_clear_and_start_nothing() {
    let plain = Workspace::new();
    let run = agent(&plain, &[json!({"text": "x"})], &["--worktree=feat"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("not in a git repository"),
        "{}",
        run.stderr
    );

    let w = repository();
    for bad in ["--worktree=../up", "--worktree=a/b", "--worktree=.."] {
        let run = agent(&w, &[json!({"text": "x"})], &[bad]).await;
        assert_eq!(run.code, 2, "{bad}: {}", run.stderr);
        assert!(run.stderr.contains("bad worktree name"), "{}", run.stderr);
    }
    assert!(!w.ws().join(".qwen").exists());
    assert!(!w.dir.path().join("up").exists());

    let run = agent(&w, &[json!({"text": "x"})], &["--worktree=feat"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = agent(&w, &[json!({"text": "x"})], &["--worktree=feat"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("is taken"), "{}", run.stderr);

    git(&w.ws(), &["checkout", "-q", "--detach"]);
    let run = agent(&w, &[json!({"text": "x"})], &["-w"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("detached"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worktree_list_and_remove_keep_the_guards() {
    let w = repository();
    let run = agent(&w, &[json!({"text": "x"})], &["--worktree=feat"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = agent(&w, &[json!({"text": "x"})], &["--worktree=spare"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    std::fs::write(feat(&w).join("draft.txt"), "x").unwrap();

    let run = w.run(&["worktree", "list"], &[], None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("feat\tworktree-feat\t"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("1 uncommitted file(s)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("spare\tworktree-spare\t"),
        "{}",
        run.stdout
    );

    let run = w.run(&["worktree", "remove", "feat"], &[], None).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("uncommitted"), "{}", run.stderr);
    assert!(feat(&w).is_dir());
    let run = w
        .run(
            &["worktree", "remove", "feat", "--discard-changes"],
            &[],
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!feat(&w).exists());
    let run = w.run(&["worktree", "remove", "../spare"], &[], None).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = w.run(&["worktree", "remove", "nothing"], &[], None).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no worktree named"), "{}", run.stderr);
}

fn turn(calls: &[(&str, &str, Value)]) -> Reply {
    Reply::turn(ModelTurn {
        tool_calls: calls
            .iter()
            .map(|(id, name, args)| ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: args.to_string(),
            })
            .collect(),
        ..Default::default()
    })
}

fn sh(id: &str, command: &str) -> Reply {
    turn(&[(id, "run_shell_command", json!({"command": command}))])
}

async fn with_server(w: &Workspace, server: &FakeOpenAi) -> Run {
    let url = server.base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "sk-local"),
        ("OPENAI_MODEL", "m"),
    ];
    w.run(&["--yolo", "-o", "json", "-p", "go"], &env, None)
        .await
}

/// The answer to `call_id` in the parent's last request.
fn answer(server: &FakeOpenAi, call_id: &str) -> String {
    let parent: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.route.is_none())
        .collect();
    let body = &parent.last().unwrap().body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no answer to {call_id}"))
        .to_string()
}

fn agent_worktrees(w: &Workspace) -> Vec<PathBuf> {
    let dir = w.ws().join(".qwen/worktrees");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    found.sort();
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_isolated_sub_agents_edit_the_same_path_in_their_own_worktrees() {
    let w = repository();
    let isolated = |marker: &str| json!({"description": "edit", "prompt": format!("{marker}: edit shared.txt"), "isolation": "worktree"});
    let server = FakeOpenAi::start(vec![
        turn(&[
            ("a1", "agent", isolated("MARK-A")),
            ("a2", "agent", isolated("MARK-B")),
        ]),
        Reply::text("both done"),
    ])
    .await
    .unwrap();
    // Each writes only once the other has started: both worktrees exist side by side.
    server.add_route(
        "MARK-A",
        vec![
            Reply::rendezvous(
                "start",
                2,
                sh(
                    "s1",
                    "echo from-A > shared.txt && git add shared.txt && git commit -qm A",
                ),
            ),
            Reply::text("A done"),
        ],
    );
    server.add_route(
        "MARK-B",
        vec![
            Reply::rendezvous("start", 2, sh("s2", "echo from-B > shared.txt")),
            Reply::text("B done"),
        ],
    );
    let run = with_server(&w, &server).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        server.violations(),
        Vec::<String>::new(),
        "a1: {}\na2: {}\n{}",
        answer(&server, "a1"),
        answer(&server, "a2"),
        run.stderr
    );
    assert!(!w.ws().join("shared.txt").exists());
    let trees = agent_worktrees(&w);
    assert_eq!(trees.len(), 2, "{trees:?}");
    let mut contents: Vec<String> = trees
        .iter()
        .map(|t| std::fs::read_to_string(t.join("shared.txt")).unwrap())
        .collect();
    contents.sort();
    assert_eq!(contents, ["from-A\n", "from-B\n"]);
    for (call, says) in [("a1", "A done"), ("a2", "B done")] {
        let text = answer(&server, call);
        assert!(text.starts_with(says), "{text}");
        assert!(text.contains("[worktree preserved: "), "{text}");
        assert!(text.contains("(branch worktree-agent-"), "{text}");
    }
    let committed = trees
        .iter()
        .find(|t| git(t, &["status", "--porcelain"]).is_empty())
        .unwrap();
    assert_eq!(git(committed, &["log", "-1", "--format=%s"]), "A");
    assert_eq!(git(&w.ws(), &["rev-list", "--count", "main"]), "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isolated_definition_that_changes_nothing_leaves_no_worktree_or_branch() {
    let w = repository();
    w.write(
        ".qwen/agents/looker.md",
        "---\nname: looker\ndescription: Looks\nisolation: worktree\n---\nYou look.\n",
    );
    // The definition joins the repository's history, so the person's tree is clean.
    git(&w.ws(), &["add", ".qwen"]);
    git(&w.ws(), &["commit", "-qm", "agent"]);
    let call = json!({"description": "look", "prompt": "MARK-L: look", "subagent_type": "looker"});
    let server = FakeOpenAi::start(vec![turn(&[("a1", "agent", call)]), Reply::text("done")])
        .await
        .unwrap();
    server.add_route(
        "MARK-L",
        vec![sh("s1", "git branch --show-current"), Reply::text("looked")],
    );
    let run = with_server(&w, &server).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let sub: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.route.as_deref() == Some("MARK-L"))
        .collect();
    // It worked in its worktree, on its branch...
    let system = sub[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.contains(".qwen/worktrees/agent-"), "{system}");
    let shell = sub[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .to_string();
    assert!(shell.contains("worktree-agent-"), "{shell}");
    // ...and left nothing behind.
    let text = answer(&server, "a1");
    assert!(!text.contains("worktree preserved"), "{text}");
    assert!(agent_worktrees(&w).is_empty(), "{:?}", agent_worktrees(&w));
    assert_eq!(
        git(&w.ws(), &["branch", "--format=%(refname:short)"]),
        "main"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_worktree_gets_linked_directories_and_included_files() {
    let w = repository();
    w.write(".gitignore", "node_modules/\n.env\n");
    w.write(".worktreeinclude", ".env\n");
    w.write(
        ".qwen/settings.json",
        r#"{"worktree": {"symlinkDirectories": ["node_modules", "../up"]}}"#,
    );
    git(&w.ws(), &["add", "."]);
    git(&w.ws(), &["commit", "-qm", "setup"]);
    w.write("node_modules/dep/index.js", "x");
    w.write(".env", "TOKEN=1\n");
    let run = agent(&w, &[json!({"text": "ok"})], &["--worktree=feat"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let wt = feat(&w);
    assert!(
        wt.join("node_modules")
            .symlink_metadata()
            .unwrap()
            .is_symlink()
    );
    assert!(wt.join("node_modules/dep/index.js").is_file());
    assert_eq!(
        std::fs::read_to_string(wt.join(".env")).unwrap(),
        "TOKEN=1\n"
    );
    assert!(run.stderr.contains("\"../up\""), "{}", run.stderr);
    assert!(!w.dir.path().join("up").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worktree_hooks_hear_of_every_worktree_made_and_removed() {
    let w = repository();
    let log = w.dir.path().join("hooks.log");
    let hook = json!([{"matcher": "", "hooks": [{"type": "command",
        "command": format!("cat >> '{}'; echo >> '{}'", log.display(), log.display())}]}]);
    let settings = json!({"hooks": {"WorktreeCreate": hook, "WorktreeRemove": hook}});
    let user = w.dir.path().join("home/.qwen/settings.json");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, settings.to_string()).unwrap();

    let isolated = json!({"tool_calls": [{"id": "a1", "name": "agent", "arguments": {
        "description": "look", "prompt": "look", "isolation": "worktree"}}]});
    let run = agent(
        &w,
        &[isolated, json!({"text": "looked"}), json!({"text": "done"})],
        &["--worktree=feat"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let enter = json!({"tool_calls": [{"id": "e1", "name": "enter_worktree", "arguments": {"name": "side"}}]});
    let exit = json!({"tool_calls": [{"id": "x1", "name": "exit_worktree", "arguments": {"action": "remove"}}]});
    let run = agent(&w, &[enter, exit, json!({"text": "done"})], &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!w.ws().join(".qwen/worktrees/side").exists());

    let heard: Vec<(String, String)> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let path = v["worktree_path"].as_str().unwrap().to_string();
            assert!(path.ends_with(v["name"].as_str().unwrap()), "{v}");
            (
                v["hook_event_name"].as_str().unwrap().to_string(),
                v["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let names: Vec<(&str, &str)> = heard
        .iter()
        .map(|(e, n)| {
            (
                e.as_str(),
                if n.starts_with("agent-") {
                    "agent"
                } else {
                    n.as_str()
                },
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("WorktreeCreate", "feat"),
            ("WorktreeCreate", "agent"),
            ("WorktreeRemove", "agent"),
            ("WorktreeCreate", "side"),
            ("WorktreeRemove", "side"),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_json_session_works_in_its_worktree() {
    let w = repository();
    let script = w.script(&[
        shell(
            "c1",
            "echo stream > made.txt && git add made.txt && git commit -qm stream",
        ),
        json!({"text": "committed"}),
    ]);
    let input = json!({"type": "user", "session_id": "", "parent_tool_use_id": null,
        "message": {"role": "user", "content": "commit something"}})
    .to_string();
    let args = [
        "--model-replay",
        script.to_str().unwrap(),
        "--yolo",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--worktree=feat",
    ];
    let run = w.run(&args, &[], Some(&input)).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let init: Value = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|m| m["subtype"] == "init")
        .unwrap();
    assert_eq!(init["cwd"].as_str().unwrap(), feat(&w).to_str().unwrap());
    assert!(run.stdout.contains("\"committed\""), "{}", run.stdout);
    assert!(!w.ws().join("made.txt").exists());
    assert_eq!(
        git(&w.ws(), &["log", "-1", "--format=%s", "worktree-feat"]),
        "stream"
    );
    assert_eq!(git(&w.ws(), &["status", "--porcelain"]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isolated_sub_agent_cannot_move_the_sessions_shell() {
    let w = repository();
    let isolated = json!({"tool_calls": [{"id": "a1", "name": "agent", "arguments": {
        "description": "try", "prompt": "try", "isolation": "worktree"}}]});
    let enter = json!({"tool_calls": [{"id": "e1", "name": "enter_worktree",
        "arguments": {"name": "moved"}, "expect_error": true}]});
    let run = agent(
        &w,
        &[
            isolated,
            enter,
            json!({"text": "could not"}),
            shell("s1", "git branch --show-current > where.txt"),
            json!({"text": "done"}),
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!w.ws().join(".qwen/worktrees/moved").exists());
    assert_eq!(
        std::fs::read_to_string(w.ws().join("where.txt")).unwrap(),
        "main\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_with_a_worktree_name_re_attaches_without_a_sidecar() {
    let w = repository();
    let run = agent(&w, &[json!({"text": "made"})], &["--worktree=feat"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let id = json_result(&run.stdout)["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let sessions = w.dir.path().join("tbhome/sessions");
    let mut removed = 0;
    for project in std::fs::read_dir(&sessions).unwrap() {
        let sidecar = project.unwrap().path().join(format!("{id}.worktree.json"));
        if sidecar.exists() {
            std::fs::remove_file(sidecar).unwrap();
            removed += 1;
        }
    }
    assert_eq!(removed, 1);
    let script = [
        shell("c1", "git branch --show-current > where.txt"),
        json!({"text": "ok"}),
    ];
    let run = agent(&w, &script, &["--resume", &id, "--worktree=feat"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(feat(&w).join("where.txt")).unwrap(),
        "worktree-feat\n"
    );
}
