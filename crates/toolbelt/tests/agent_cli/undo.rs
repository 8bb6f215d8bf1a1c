//! Issue 34, end to end: the agent's calls (an edit, `sed -i` and `rm` through the
//! shell) checkpointed against the fake model server, then `toolbelt restore` as a
//! person runs it; checkpointing off; a restore killed with SIGKILL halfway.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;

use serde_json::json;
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{FinishReason, ModelTurn, ToolCall};

use crate::support::{Run, Workspace};

fn call(id: &str, name: &str, args: serde_json::Value) -> Reply {
    Reply::turn(ModelTurn {
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.to_string(),
        }],
        finish_reason: FinishReason::ToolCalls,
        ..Default::default()
    })
}

async fn agent(w: &Workspace, replies: Vec<Reply>) -> Run {
    let server = FakeOpenAi::start(replies).await.unwrap();
    let url = server.base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "sk-local"),
        ("OPENAI_MODEL", "m"),
    ];
    let run = w.run(&["-p", "change things", "--yolo"], &env, None).await;
    assert_eq!(server.violations(), Vec::<String>::new());
    run
}

/// The IDs of `toolbelt restore --list`, newest first.
/// `tools call write_file` of "new\n" into `a.txt`, approved, which must succeed.
async fn write_new(w: &Workspace, ws: &std::path::Path) {
    let write_args = json!({"file_path": ws.join("a.txt"), "content": "new\n"}).to_string();
    let write = w
        .run(
            &["tools", "call", "write_file", &write_args, "--yes"],
            &[],
            None,
        )
        .await;
    assert_eq!(write.code, 0, "{}", write.stderr);
}

fn ids(list: &str) -> Vec<String> {
    list.lines()
        .filter(|l| l.contains("before "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_a_sed_and_an_rm_through_the_agent_are_restored_exactly() {
    let w = Workspace::new();
    let ws = w.ws();
    w.write("src/a.txt", "one\ntwo\n");
    w.write("src/b.sh", "#!/bin/sh\necho old\n");
    std::fs::set_permissions(ws.join("src/b.sh"), std::fs::Permissions::from_mode(0o751)).unwrap();
    w.write("src/c.txt", "to be removed\n");
    let run = agent(
        &w,
        vec![
            call(
                "e1",
                "edit",
                json!({"file_path": ws.join("src/a.txt"), "old_string": "two", "new_string": "TWO"}),
            ),
            call(
                "s1",
                "run_shell_command",
                json!({"command": "sed -i 's/old/new/' src/b.sh && rm src/c.txt"}),
            ),
            Reply::text("Done."),
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.join("src/a.txt")).unwrap(),
        "one\nTWO\n"
    );
    assert!(!ws.join("src/c.txt").exists());

    let list = w.run(&["restore", "--list"], &[], None).await;
    assert_eq!(list.code, 0, "{}", list.stderr);
    let found = ids(&list.stdout);
    assert_eq!(found.len(), 2, "{}", list.stdout);
    assert!(
        list.stdout
            .lines()
            .next()
            .unwrap()
            .contains("run_shell_command (s1)"),
        "{}",
        list.stdout
    );
    let (shell, edit) = (&found[0], &found[1]);

    // Without --yes and without a terminal: the diff, and nothing written.
    let refused = w.run(&["restore", shell], &[], None).await;
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(
        refused.stdout.contains("-echo new") && refused.stdout.contains("+echo old"),
        "{}",
        refused.stdout
    );
    assert!(
        refused.stdout.contains("recreate src/c.txt"),
        "{}",
        refused.stdout
    );
    assert!(refused.stderr.contains("--yes"), "{}", refused.stderr);
    assert!(!ws.join("src/c.txt").exists());

    let done = w.run(&["restore", shell, "--yes"], &[], None).await;
    assert_eq!(done.code, 0, "{}\n{}", done.stdout, done.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.join("src/b.sh")).unwrap(),
        "#!/bin/sh\necho old\n"
    );
    let mode = std::fs::metadata(ws.join("src/b.sh"))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o751);
    assert_eq!(
        std::fs::read_to_string(ws.join("src/c.txt")).unwrap(),
        "to be removed\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("src/a.txt")).unwrap(),
        "one\nTWO\n"
    );

    // Only one file of the edit's checkpoint.
    let done = w
        .run(
            &["restore", &edit[..6], "--yes", "--", "src/a.txt"],
            &[],
            None,
        )
        .await;
    assert_eq!(done.code, 0, "{}\n{}", done.stdout, done.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.join("src/a.txt")).unwrap(),
        "one\ntwo\n"
    );

    // The restores are checkpoints too, newest first.
    let list = w.run(&["restore"], &[], None).await;
    assert!(
        list.stdout
            .lines()
            .next()
            .unwrap()
            .contains("before restore"),
        "{}",
        list.stdout
    );
    let bad = w.run(&["restore", "zzzz"], &[], None).await;
    assert_eq!(bad.code, 2);
    // Issue 40: a path outside the workspace is a usage error, not "nothing to restore".
    std::fs::create_dir_all(ws.join("../outside")).unwrap();
    std::fs::write(ws.join("../outside/a.txt"), "mine").unwrap();
    let outside = w
        .run(
            &["restore", shell, "--yes", "--", "../outside/a.txt"],
            &[],
            None,
        )
        .await;
    assert_eq!(outside.code, 2, "{}\n{}", outside.stdout, outside.stderr);
    assert!(
        outside.stderr.contains("outside the workspace"),
        "{}",
        outside.stderr
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("../outside/a.txt")).unwrap(),
        "mine"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpointing_off_takes_none() {
    let w = Workspace::new();
    let settings = w.dir.path().join("home/.qwen");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(
        settings.join("settings.json"),
        r#"{"general": {"checkpointing": {"enabled": false}}}"#,
    )
    .unwrap();
    let ws = w.ws();
    let run = agent(
        &w,
        vec![
            call(
                "w1",
                "write_file",
                json!({"file_path": ws.join("n.txt"), "content": "x"}),
            ),
            Reply::text("Done."),
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(ws.join("n.txt").exists());
    let list = w.run(&["restore", "--list"], &[], None).await;
    assert!(
        list.stdout.starts_with("No checkpoints yet"),
        "{}",
        list.stdout
    );
    assert!(!w.dir.path().join("tbhome/history").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_killed_halfway_leaves_each_file_old_or_new_and_finishes_next_time() {
    const FILES: usize = 40;
    const SIZE: usize = 256 * 1024;
    let w = Workspace::new();
    let ws = w.ws();
    for i in 0..FILES {
        w.write(&format!("data/f{i:02}.txt"), &"a".repeat(SIZE));
    }
    let run = agent(
        &w,
        vec![
            call(
                "s1",
                "run_shell_command",
                json!({"command": format!("for f in data/*.txt; do head -c {SIZE} /dev/zero | tr '\\0' b > $f.new && mv $f.new $f; done")}),
            ),
            Reply::text("Done."),
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let list = w.run(&["restore", "--list"], &[], None).await;
    let id = ids(&list.stdout)[0].clone();

    // Paused halfway through the 11th file (the debug-only hook), then SIGKILL.
    let fifo = w.dir.path().join("paused");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let pause = format!("10:{}", fifo.display());
    let mut child = w
        .command(
            &["restore", &id, "--yes"],
            &[("TOOLBELT_TEST_RESTORE_PAUSE", pause.as_str())],
        )
        .spawn()
        .unwrap();
    let mut said = String::new();
    let fifo2 = fifo.clone();
    tokio::task::spawn_blocking(move || {
        std::fs::File::open(fifo2)
            .unwrap()
            .read_to_string(&mut said)
            .map(|_| said)
    })
    .await
    .unwrap()
    .unwrap();
    child.start_kill().unwrap();
    let status = child.wait().await.unwrap();
    assert!(!status.success());

    let mut old = 0;
    let mut new = 0;
    for i in 0..FILES {
        let text = std::fs::read(ws.join(format!("data/f{i:02}.txt"))).unwrap();
        assert_eq!(text.len(), SIZE, "file {i} is whole");
        if text.iter().all(|&b| b == b'a') {
            old += 1;
        } else {
            assert!(text.iter().all(|&b| b == b'b'), "file {i} is mixed");
            new += 1;
        }
    }
    assert_eq!((old, new), (10, FILES - 10), "ten restored before the kill");
    let leftovers: Vec<_> = std::fs::read_dir(ws.join("data"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // The store is intact: the list reads, and the same restore finishes.
    let list = w.run(&["restore", "--list"], &[], None).await;
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert!(!list.stdout.contains("damaged"), "{}", list.stdout);
    let done = w.run(&["restore", &id, "--yes"], &[], None).await;
    assert_eq!(done.code, 0, "{}\n{}", done.stdout, done.stderr);
    for i in 0..FILES {
        let text = std::fs::read(ws.join(format!("data/f{i:02}.txt"))).unwrap();
        assert!(text.iter().all(|&b| b == b'a'), "file {i} restored");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_json_rewind_files_takes_the_files_back_to_before_a_user_message() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let w = Workspace::new();
    let ws = w.ws();
    w.write("kept.txt", "before\n");
    let script = w.script(&[
        json!({"tool_calls": [{"id": "w1", "name": "write_file",
            "arguments": {"file_path": ws.join("made.txt"), "content": "new\n"}}]}),
        json!({"tool_calls": [{"id": "w2", "name": "write_file",
            "arguments": {"file_path": ws.join("kept.txt"), "content": "after\n"}}]}),
        json!({"text": "done"}),
    ]);
    let mut child = w
        .command(
            &[
                "--model-replay",
                script.to_str().unwrap(),
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--yolo",
            ],
            &[],
        )
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let user =
        json!({"type": "user", "uuid": "u-1", "message": {"role": "user", "content": "make it"}});
    stdin
        .write_all(format!("{user}\n").as_bytes())
        .await
        .unwrap();
    while let Some(line) = out.next_line().await.unwrap() {
        if serde_json::from_str::<serde_json::Value>(&line).unwrap()["type"] == "result" {
            break;
        }
    }
    assert_eq!(
        std::fs::read_to_string(ws.join("kept.txt")).unwrap(),
        "after\n"
    );
    let dry = control(
        &mut stdin,
        &mut out,
        "r1",
        json!({"subtype": "rewind_files", "user_message_id": "u-1", "dry_run": true}),
    )
    .await;
    assert_eq!(dry["canRewind"], true, "{dry}");
    assert_eq!(dry["filesChanged"].as_array().unwrap().len(), 2, "{dry}");
    assert!(ws.join("made.txt").exists());
    let done = control(
        &mut stdin,
        &mut out,
        "r2",
        json!({"subtype": "rewind_files", "user_message_id": "u-1"}),
    )
    .await;
    assert_eq!(done["canRewind"], true, "{done}");
    assert!(!ws.join("made.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("kept.txt")).unwrap(),
        "before\n"
    );
    let unknown = control(
        &mut stdin,
        &mut out,
        "r3",
        json!({"subtype": "rewind_files", "user_message_id": "nope"}),
    )
    .await;
    assert_eq!(unknown["canRewind"], false);
    assert!(
        unknown["error"].as_str().unwrap().contains("nope"),
        "{unknown}"
    );
    let _ = child.kill().await;
}

/// Sends a control request and reads lines until its answer.
async fn control(
    stdin: &mut tokio::process::ChildStdin,
    out: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    id: &str,
    request: serde_json::Value,
) -> serde_json::Value {
    use tokio::io::AsyncWriteExt;
    let line = json!({"type": "control_request", "request_id": id, "request": request});
    stdin
        .write_all(format!("{line}\n").as_bytes())
        .await
        .unwrap();
    loop {
        let line = out.next_line().await.unwrap().unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        if v["type"] == "control_response" && v["response"]["request_id"] == id {
            return v["response"]["response"].clone();
        }
    }
}

/// `toolbelt tools call` takes a checkpoint before a call that changes files, which
/// `toolbelt restore` undoes like an agent's, and opens no history at all for a read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_call_checkpoints_a_change_and_nothing_for_a_read() {
    let w = Workspace::new();
    let ws = w.ws();
    w.write("a.txt", "old\n");
    let read_args = json!({"absolute_path": ws.join("a.txt")}).to_string();
    let read = w
        .run(&["tools", "call", "read_file", &read_args], &[], None)
        .await;
    assert_eq!(read.code, 0, "{}", read.stderr);
    assert!(!w.dir.path().join("tbhome/history").exists());

    write_new(&w, &ws).await;
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "new\n");

    let list = w.run(&["restore", "--list"], &[], None).await;
    let found = ids(&list.stdout);
    assert_eq!(found.len(), 1, "{}", list.stdout);
    assert!(list.stdout.contains("write_file"), "{}", list.stdout);
    let done = w.run(&["restore", &found[0], "--yes"], &[], None).await;
    assert_eq!(done.code, 0, "{}\n{}", done.stdout, done.stderr);
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "old\n");
}

/// Issue 42: a checkpoint store that lost its objects is toolbelt's own state failing
/// (exit 4), not a usage error (2) that other arguments would fix; nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_checkpoint_store_exits_4_and_restores_nothing() {
    let w = Workspace::new();
    let ws = w.ws();
    w.write("a.txt", "old\n");
    write_new(&w, &ws).await;
    let list = w.run(&["restore", "--list"], &[], None).await;
    let found = ids(&list.stdout);
    assert_eq!(found.len(), 1, "{}", list.stdout);
    let mut stores = vec![w.dir.path().join("tbhome/history")];
    let mut removed = 0;
    while let Some(dir) = stores.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == "objects") {
                std::fs::remove_dir_all(&path).unwrap();
                removed += 1;
            } else if path.is_dir() {
                stores.push(path);
            }
        }
    }
    assert_eq!(removed, 1, "one store's objects");
    let done = w.run(&["restore", &found[0], "--yes"], &[], None).await;
    assert_eq!(done.code, 4, "{}\n{}", done.stdout, done.stderr);
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "new\n");
}
