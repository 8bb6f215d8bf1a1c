//! Issue 40, end to end: after a real session (a shell command, an edit, a background
//! job, checkpoints, a saved conversation) nothing in toolbelt's store is readable by
//! another user, an old loose store is narrowed, and the model's commands never saw the
//! secrets in toolbelt's environment, while toolbelt itself still used its key.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde_json::json;
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{FinishReason, ModelTurn, ToolCall};

use crate::support::Workspace;

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

/// Every entry below `dir` (links not followed), with its mode.
fn walk(dir: &Path, out: &mut Vec<(PathBuf, u32)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.file_type().is_symlink() {
            continue;
        }
        out.push((path.clone(), meta.mode() & 0o7777));
        if meta.is_dir() {
            walk(&path, out);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_leaves_a_store_only_its_user_can_read_and_no_secret_reaches_a_command() {
    let w = Workspace::new();
    let ws = w.ws();
    w.write("src/a.txt", "one\ntwo\n");
    // An old store, as an earlier toolbelt left it: readable by everyone.
    let store = w.dir.path().join("tbhome");
    std::fs::create_dir_all(store.join("tmp/old-project/shell")).unwrap();
    std::fs::write(store.join("tmp/old-project/shell/old.log"), "old output").unwrap();
    for (p, m) in [
        ("", 0o755),
        ("tmp", 0o755),
        ("tmp/old-project", 0o755),
        ("tmp/old-project/shell", 0o755),
        ("tmp/old-project/shell/old.log", 0o644),
    ] {
        std::fs::set_permissions(store.join(p), std::fs::Permissions::from_mode(m)).unwrap();
    }
    let server = FakeOpenAi::start(vec![
        call("p1", "run_shell_command", json!({"command": "printenv"})),
        call(
            "e1",
            "edit",
            json!({"file_path": ws.join("src/a.txt"), "old_string": "two", "new_string": "TWO"}),
        ),
        call(
            "s1",
            "run_shell_command",
            json!({"command": "seq 1 400000 && echo made > src/b.txt"}),
        ),
        call(
            "b1",
            "run_shell_command",
            json!({"command": "echo from-the-job", "is_background": true}),
        ),
        Reply::text("Done."),
    ])
    .await
    .unwrap();
    let url = server.base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "sk-local-model-key"),
        ("OPENAI_MODEL", "m"),
        ("FOO_TOKEN", "secret-foo-token"),
        ("PLAIN_SETTING", "plain-value"),
    ];
    let run = w.run(&["-p", "change things", "--yolo"], &env, None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(server.violations(), Vec::<String>::new());
    assert_eq!(
        std::fs::read_to_string(ws.join("src/a.txt")).unwrap(),
        "one\nTWO\n"
    );

    // toolbelt used its key; the command it ran for the model did not get it.
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.authorization.as_deref() == Some("Bearer sk-local-model-key")),
        "the model client lost its key"
    );
    let printed = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "p1")
        .and_then(|m| m["content"].as_str())
        .unwrap()
        .to_string();
    assert!(printed.contains("PLAIN_SETTING=plain-value"), "{printed}");
    assert!(!printed.contains("sk-local-model-key"), "{printed}");
    assert!(!printed.contains("secret-foo-token"), "{printed}");

    // The store: everything in it is for its user alone, the old entries too.
    let mut entries = Vec::new();
    walk(&store, &mut entries);
    let me = std::fs::metadata("/proc/self").unwrap().uid();
    assert_eq!(std::fs::metadata(&store).unwrap().mode() & 0o077, 0);
    let kinds = ["history", "sessions", "tmp"];
    for kind in kinds {
        assert!(
            entries.iter().any(|(p, _)| p.starts_with(store.join(kind))),
            "the session wrote nothing under {kind}: {entries:?}"
        );
    }
    assert!(
        entries
            .iter()
            .any(|(p, _)| p.extension().is_some_and(|e| e == "log")),
        "no command log: {entries:?}"
    );
    let loose: Vec<_> = entries
        .iter()
        .filter(|(p, m)| {
            m & 0o077 != 0 && std::fs::symlink_metadata(p).is_ok_and(|meta| meta.uid() == me)
        })
        .collect();
    assert!(loose.is_empty(), "readable by others: {loose:?}");

    // A second session, where a read-only command runs unasked: its log goes with the
    // session (the approved ones above stay).
    let server = FakeOpenAi::start(vec![
        call(
            "u1",
            "run_shell_command",
            json!({"command": "seq 1 300000"}),
        ),
        Reply::text("Done."),
    ])
    .await
    .unwrap();
    let url = server.base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "sk-local"),
        ("OPENAI_MODEL", "m"),
    ];
    let run = w.run(&["-p", "count"], &env, None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let last = server.requests().pop().unwrap();
    let unasked = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "u1")
        .and_then(|m| m["content"].as_str())
        .unwrap()
        .to_string();
    let rest = unasked
        .split("saved in ")
        .nth(1)
        .unwrap_or_else(|| panic!("{unasked}"));
    let log = PathBuf::from(&rest[..rest.find([' ', ';']).unwrap()]);
    assert!(log.starts_with(&store), "{}", log.display());
    assert!(!log.exists(), "{} stayed after the session", log.display());
}
