//! `--input-format stream-json` from the protocol's side, without an SDK: lines written
//! to stdin, messages read from stdout. The SDK-driven tests are in `sdk_interop.rs`.

use serde_json::{Value, json};

use crate::support::Workspace;

fn lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn response<'a>(messages: &'a [Value], id: &str) -> &'a Value {
    messages
        .iter()
        .find(|m| m["type"] == "control_response" && m["response"]["request_id"] == id)
        .unwrap_or_else(|| panic!("no response to {id}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_lines_and_unknown_requests_get_errors_and_the_session_goes_on() {
    let w = Workspace::new();
    let script = w.script(&[json!({"text": "first"}), json!({"text": "second"})]);
    let user = |text: &str| {
        json!({"type": "user", "session_id": "", "message": {"role": "user", "content": text},
               "parent_tool_use_id": null})
        .to_string()
    };
    let input = [
        json!({"type": "control_request", "request_id": "init", "request": {"subtype": "initialize", "hooks": null}}).to_string(),
        "not json at all".to_string(),
        json!({"type": "control_request", "request_id": "odd", "request": {"subtype": "make_coffee"}}).to_string(),
        json!({"type": "user", "message": {"content": [{"type": "video"}]}}).to_string(),
        user("one"),
        "{\"type\": \"control_request\", \"request\": {}}".to_string(),
        user("two"),
        json!({"type": "control_request", "request_id": 7, "request": {"subtype": "set_permission_mode", "mode": "sideways"}}).to_string(),
    ]
    .join("\n");
    let run = w
        .run(
            &[
                "--model-replay",
                script.to_str().unwrap(),
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--channel=SDK",
            ],
            &[],
            Some(&input),
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let messages = lines(&run.stdout);
    assert_eq!(
        response(&messages, "init")["response"]["subtype"],
        "success"
    );
    let odd = &response(&messages, "odd")["response"];
    assert_eq!(odd["subtype"], "error");
    assert!(odd["error"].as_str().unwrap().contains("make_coffee"));
    let mode = &response(&messages, "7")["response"];
    assert_eq!(mode["subtype"], "error");
    assert!(
        mode["error"]
            .as_str()
            .unwrap()
            .contains("unknown approval mode")
    );
    // Each bad line named, on stderr and to the client; both turns ran.
    for (line, says) in [(2, "not JSON"), (4, "unsupported type"), (6, "request_id")] {
        assert!(
            run.stderr
                .contains(&format!("stream-json input line {line} skipped: ")),
            "{}",
            run.stderr
        );
        assert!(
            messages.iter().any(|m| m["subtype"] == "input_error"
                && m["data"]["line"] == line
                && m["data"]["error"].as_str().unwrap().contains(says)),
            "line {line}"
        );
    }
    let answers: Vec<&Value> = messages
        .iter()
        .filter(|m| m["type"] == "result")
        .map(|m| &m["result"])
        .collect();
    assert_eq!(answers, ["first", "second"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_id_names_the_saved_session_and_is_never_reused() {
    let w = Workspace::new();
    let script = w.script(&[json!({"text": "hello"})]);
    let id = "6f1c2b3a-0000-4000-8000-00000000beef";
    let args = [
        "--model-replay",
        script.to_str().unwrap(),
        "-o",
        "json",
        "--session-id",
        id,
        "hi",
    ];
    let run = w.run(&args, &[], None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let messages: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
    assert!(messages.iter().all(|m| m["session_id"] == id));
    let saved: Vec<_> = walk(&w.dir.path().join("tbhome/sessions"));
    assert!(
        saved.iter().any(|p| p.ends_with(format!("{id}.jsonl"))),
        "{saved:?}"
    );
    let again = w.run(&args, &[], None).await;
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(
        again
            .stderr
            .contains("already saved; continue it with --resume"),
        "{}",
        again.stderr
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}
