//! Saved sessions: every run is saved, `--continue` and `--resume ID` send the saved
//! conversation (tool results from the file, nothing run again) before the new prompt.
//! One loopback server serves all the runs of a test, so its check that the
//! conversation's calls are exactly the ones it sent spans the runs.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{FinishReason, ModelTurn, ToolCall};

use crate::support::{Run, Workspace};

fn read_readme(w: &Workspace, id: &str) -> Reply {
    Reply::turn(ModelTurn {
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: json!({"absolute_path": w.ws().join("README.md")}).to_string(),
        }],
        finish_reason: FinishReason::ToolCalls,
        ..Default::default()
    })
}

async fn run(w: &Workspace, server: &FakeOpenAi, args: &[&str]) -> Run {
    let url = server.base_url();
    let mut all = vec!["--openai-base-url", url.as_str(), "-m", "m", "-o", "json"];
    all.extend_from_slice(args);
    w.run(&all, &[], None).await
}

fn session_id(run: &Run) -> String {
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = crate::support::json_result(&run.stdout);
    v["session_id"].as_str().unwrap().to_string()
}

/// `<TOOLBELT_HOME>/sessions/<project>`, the one project directory there.
fn project_dir(w: &Workspace) -> PathBuf {
    let sessions = w.dir.path().join("tbhome/sessions");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

fn header(dir: &Path, id: &str) -> Value {
    let text = std::fs::read_to_string(dir.join(format!("{id}.jsonl"))).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

/// The (role, content) of each message after the system prompt.
fn conversation(body: &Value) -> Vec<(String, String)> {
    body["messages"].as_array().unwrap()[1..]
        .iter()
        .map(|m| {
            let content = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Null => m["tool_calls"][0]["id"].as_str().unwrap_or("").to_string(),
                other => other.to_string(),
            };
            (m["role"].as_str().unwrap().to_string(), content)
        })
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(r, c)| (r.to_string(), c.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_sends_the_saved_conversation_and_runs_no_call_again() {
    let w = Workspace::new();
    w.write("README.md", "first version\n");
    let server = FakeOpenAi::start(vec![
        read_readme(&w, "c1"),
        Reply::text("It says first version."),
        Reply::text("Still first version, as read before."),
    ])
    .await
    .unwrap();
    let first = session_id(&run(&w, &server, &["what does the readme say?"]).await);
    // Had the call run again, the history would show this.
    w.write("README.md", "changed\n");
    let second = run(&w, &server, &["--continue", "and now?"]).await;
    let second_id = session_id(&second);
    assert_eq!(server.violations(), Vec::<String>::new());
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "no new model turn, no new call");
    assert_eq!(
        conversation(&requests[2].body),
        pairs(&[
            ("user", "what does the readme say?"),
            ("assistant", "c1"),
            ("tool", "first version"),
            ("assistant", "It says first version."),
            ("user", "and now?"),
        ])
    );
    let v = crate::support::json_result(&second.stdout);
    assert_eq!(
        v["toolbelt"]["tool_calls"],
        json!([]),
        "the second run made no call"
    );

    // The continuation keeps the session's ID in a new file naming its parent, and
    // holds the whole history.
    assert_eq!(first, second_id);
    let dir = project_dir(&w);
    assert_eq!(
        header(&dir, &format!("{first}.1"))["parent"],
        first.as_str()
    );
    assert_eq!(header(&dir, &format!("{first}.1"))["id"], first.as_str());
    assert_eq!(header(&dir, &first)["parent"], Value::Null);
    let saved = std::fs::read_to_string(dir.join(format!("{first}.1.jsonl"))).unwrap();
    let types: Vec<String> = saved
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["type"].to_string())
        .collect();
    assert_eq!(
        types,
        [
            "\"session\"",
            "\"user\"",
            "\"assistant\"",
            "\"tool\"",
            "\"assistant\"",
            "\"user\"",
            "\"assistant\""
        ]
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join(format!("{first}.jsonl"))), 0o600);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_continues_the_chosen_session_and_refuses_unknown_ids() {
    let w = Workspace::new();
    w.write("README.md", "readme\n");
    let server = FakeOpenAi::start(vec![
        read_readme(&w, "c1"),
        Reply::text("It says readme."),
        Reply::text("Follow-up answer."),
    ])
    .await
    .unwrap();
    // Session B on a server of its own: `server` checks that each conversation holds
    // exactly the calls it sent, and B's holds none.
    let other = FakeOpenAi::start(vec![Reply::text("Other answer.")])
        .await
        .unwrap();
    let a = session_id(&run(&w, &server, &["first question"]).await);
    let b = session_id(&run(&w, &other, &["other question"]).await);

    let listed = run(&w, &server, &["--resume"]).await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    // Newest first: ID, start time, how many prompts, the first one.
    let lines: Vec<&str> = listed.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", listed.stdout);
    assert!(
        lines[0].starts_with(&format!("{b}  20"))
            && lines[0].ends_with("  1 prompt  other question"),
        "{}",
        listed.stdout
    );
    assert!(
        lines[1].starts_with(&format!("{a}  20"))
            && lines[1].ends_with("  1 prompt  first question"),
        "{}",
        listed.stdout
    );

    let resumed = run(&w, &server, &["--resume", &a, "follow-up"]).await;
    let c = session_id(&resumed);
    assert_eq!(server.violations(), Vec::<String>::new());
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        conversation(&requests[2].body),
        pairs(&[
            ("user", "first question"),
            ("assistant", "c1"),
            ("tool", "readme"),
            ("assistant", "It says readme."),
            ("user", "follow-up"),
        ])
    );
    assert_eq!(c, a, "a resumed session keeps its ID");
    // The listing shows how far the continued conversation went, not only its start.
    let listed = run(&w, &server, &["--resume"]).await;
    let line = listed
        .stdout
        .lines()
        .find(|l| l.starts_with(a.as_str()))
        .unwrap_or_else(|| panic!("{}", listed.stdout));
    assert!(
        line.ends_with("  2 prompts  first question → follow-up"),
        "{line}"
    );
    assert_eq!(
        header(&project_dir(&w), &format!("{a}.1"))["parent"],
        a.as_str()
    );

    let unknown = run(
        &w,
        &server,
        &["--resume", "20200101T000000.000Z-00000000", "x"],
    )
    .await;
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(
        unknown
            .stderr
            .contains("no session \"20200101T000000.000Z-00000000\""),
        "{}",
        unknown.stderr
    );
    for id in [&a, &b] {
        assert!(
            unknown.stderr.contains(id.as_str()),
            "lists {id}: {}",
            unknown.stderr
        );
    }
    for path in ["../../../etc/passwd", "/etc/passwd"] {
        let refused = run(&w, &server, &["--resume", path, "x"]).await;
        assert_eq!(refused.code, 2, "{}", refused.stderr);
        assert!(
            refused.stderr.contains("not a session ID"),
            "{}",
            refused.stderr
        );
    }
    assert_eq!(
        server.requests().len(),
        3,
        "refused runs asked the model nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_cut_short_mid_call_resumes_with_an_error_for_the_call() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![Reply::text("hello"), Reply::text("resumed")])
        .await
        .unwrap();
    session_id(&run(&w, &server, &["hi"]).await);
    let dir = project_dir(&w);
    // The run crashed while writing the result of a write_file call.
    let id = "20261123T000000.000Z-0000abcd";
    let target = w.ws().join("made.txt");
    let lines = [
        json!({"type": "session", "version": 1, "id": id, "cwd": w.ws(), "model": "m", "started": "2026-11-23T00:00:00.000Z", "parent": null}).to_string(),
        json!({"type": "user", "content": [{"text": "make a file"}]}).to_string(),
        json!({"type": "assistant", "text": "", "tool_calls": [{"id": "w1", "name": "write_file", "arguments": json!({"file_path": target, "content": "x"}).to_string()}]}).to_string(),
        "{\"type\":\"tool\",\"call_id\":\"w1\",\"te".to_string(),
    ];
    let path = dir.join(format!("{id}.jsonl"));
    std::fs::write(&path, lines.join("\n")).unwrap();

    let resumed = run(&w, &server, &["--resume", id, "did it work?"]).await;
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    // An ID from before IDs were UUIDs still resumes; the continuation takes a UUID.
    let continued = session_id(&resumed);
    assert!(uuid::Uuid::try_parse(&continued).is_ok(), "{continued}");
    let file_line = format!("{}:4: incomplete last line skipped", path.display());
    assert!(resumed.stderr.contains(&file_line), "{}", resumed.stderr);
    assert!(
        resumed
            .stderr
            .contains("ended before 1 tool call(s) finished (w1)"),
        "{}",
        resumed.stderr
    );
    let conv = conversation(&server.requests()[1].body);
    assert_eq!(conv.len(), 4, "{conv:?}");
    assert_eq!(conv[2].0, "tool");
    assert!(
        conv[2]
            .1
            .contains("the session ended before this tool call finished"),
        "{conv:?}"
    );
    assert_eq!(conv[3], ("user".to_string(), "did it work?".to_string()));
    assert!(!target.exists(), "the call was not run again");
    // The server never sent w1 (the file was written by hand); every other rule holds.
    let violations: Vec<String> = server
        .violations()
        .into_iter()
        .filter(|v| !v.contains("differ from the ones the server sent"))
        .collect();
    assert_eq!(violations, Vec::<String>::new());

    // Damage elsewhere than the last line is an error naming the file and line.
    let mut damaged = lines.to_vec();
    damaged[1] = "{not json".to_string();
    std::fs::write(&path, damaged.join("\n") + "\n").unwrap();
    let refused = run(&w, &server, &["--resume", id, "again?"]).await;
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    let named = format!("{}:2: not a session record", path.display());
    assert!(refused.stderr.contains(&named), "{}", refused.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_without_a_saved_session_is_a_usage_error() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![Reply::text("unused")])
        .await
        .unwrap();
    let run = run(&w, &server, &["--continue", "go on"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("no saved session for this project"),
        "{}",
        run.stderr
    );
    assert!(server.requests().is_empty());
}

/// A run that never got an answer (nothing listens at the model's URL) is not saved:
/// `--resume` and `--continue` offer only conversations there are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_never_reached_a_model_is_not_saved() {
    let w = Workspace::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let failed = w
        .run(&["--openai-base-url", &url, "-m", "m", "hello"], &[], None)
        .await;
    assert_ne!(failed.code, 0, "{}", failed.stderr);
    let sessions = w.dir.path().join("tbhome/sessions");
    let saved: Vec<String> = walk_files(&sessions);
    assert!(saved.is_empty(), "{saved:?}");
    let run = w
        .run(
            &["--openai-base-url", &url, "-m", "m", "--continue", "go on"],
            &[],
            None,
        )
        .await;
    assert!(
        run.stderr.contains("no saved session for this project"),
        "{}",
        run.stderr
    );
}

/// Every `.jsonl` file under `dir` (none when it does not exist).
fn walk_files(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            found.extend(walk_files(&path));
        } else if path.extension().is_some_and(|x| x == "jsonl") {
            found.push(path.display().to_string());
        }
    }
    found
}
