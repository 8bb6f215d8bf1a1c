//! `--input-format stream-json` from the protocol's side, without an SDK: lines written
//! to stdin, messages read from stdout. The SDK-driven tests are in `sdk_interop/`.

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_messages_follow_the_model_as_it_streams() {
    use toolbelt_model::fake_server::{FakeOpenAi, Reply};
    use toolbelt_model::{ModelTurn, ToolCall};
    let w = Workspace::new();
    w.write("a.txt", "alpha\n");
    let arguments = json!({"file_path": w.ws().join("a.txt")}).to_string();
    let server = FakeOpenAi::start(vec![
        Reply::turn(ModelTurn {
            text: "Reading the file now.".into(),
            tool_calls: vec![ToolCall {
                id: "call_r".into(),
                name: "read_file".into(),
                arguments: arguments.clone(),
            }],
            ..Default::default()
        }),
        Reply::text("It says alpha."),
    ])
    .await
    .unwrap();
    let url = server.base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "k"),
        ("OPENAI_MODEL", "m"),
    ];
    let run = w
        .run(
            &["-o", "stream-json", "--include-partial-messages", "read a"],
            &env,
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let messages = lines(&run.stdout);
    // The first answer, up to its message_stop.
    let first: Vec<&Value> = messages
        .iter()
        .skip(1)
        .take_while(|m| m["event"]["type"] != "message_stop")
        .collect();
    let kinds: Vec<String> = first
        .iter()
        .map(|m| match m["event"]["type"].as_str() {
            Some(e) => e.to_string(),
            None => m["type"].as_str().unwrap().to_string(),
        })
        .collect();
    let deltas = |kind: &str, field: &str| -> Vec<String> {
        first
            .iter()
            .filter(|m| m["event"]["delta"]["type"] == kind)
            .map(|m| m["event"]["delta"][field].as_str().unwrap().to_string())
            .collect()
    };
    let text = deltas("text_delta", "text");
    let json_pieces = deltas("input_json_delta", "partial_json");
    assert!(text.len() > 1, "the text came in pieces: {kinds:?}");
    assert!(
        json_pieces.len() > 1,
        "the arguments came in pieces: {kinds:?}"
    );
    assert_eq!(text.concat(), "Reading the file now.");
    assert_eq!(json_pieces.concat(), arguments);
    let squeezed: Vec<&str> = kinds
        .iter()
        .map(String::as_str)
        .fold(Vec::new(), |mut v, k| {
            if v.last() != Some(&k) {
                v.push(k);
            }
            v
        });
    assert_eq!(
        squeezed,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "assistant"
        ]
    );
    let starts: Vec<&Value> = first
        .iter()
        .filter(|m| m["event"]["type"] == "content_block_start")
        .map(|m| &m["event"]["content_block"])
        .collect();
    assert_eq!(starts[1]["type"], "tool_use");
    assert_eq!(starts[1]["id"], "call_r");
    assert_eq!(starts[1]["name"], "read_file");
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mode_set_by_the_client_is_named_in_the_next_turns_system_prompt() {
    let w = Workspace::new();
    let server = toolbelt_model::fake_server::FakeOpenAi::start(vec![
        toolbelt_model::fake_server::Reply::text("first"),
        toolbelt_model::fake_server::Reply::text("second"),
    ])
    .await
    .unwrap();
    let user = |text: &str| {
        json!({"type": "user", "session_id": "", "message": {"role": "user", "content": text},
               "parent_tool_use_id": null})
        .to_string()
    };
    let input = [
        user("one"),
        json!({"type": "control_request", "request_id": "m", "request": {"subtype": "set_permission_mode", "mode": "plan"}}).to_string(),
        user("two"),
    ]
    .join("\n");
    let url = server.base_url();
    let run = w
        .run(
            &[
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
            ],
            &[
                ("OPENAI_BASE_URL", url.as_str()),
                ("OPENAI_API_KEY", "sk-local"),
                ("OPENAI_MODEL", "fake-model"),
            ],
            Some(&input),
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let systems: Vec<String> = server
        .requests()
        .iter()
        .map(|r| {
            r.body["messages"][0]["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(systems.len(), 2);
    assert!(
        systems[0].contains("Approval mode: default"),
        "{}",
        systems[0]
    );
    assert!(systems[1].contains("Approval mode: plan"), "{}", systems[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_broken_off_and_retried_ends_its_partial_message_and_starts_anew() {
    use toolbelt_model::ModelTurn;
    use toolbelt_model::fake_server::{FakeOpenAi, Reply};
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![
        Reply::Drop {
            turn: ModelTurn {
                text: "BROKEN attempt that never finishes".into(),
                ..Default::default()
            },
            bytes: 900,
        },
        Reply::text("The clean answer."),
    ])
    .await
    .unwrap();
    let url = server.base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "k"),
        ("OPENAI_MODEL", "m"),
    ];
    let run = w
        .run(
            &["-o", "stream-json", "--include-partial-messages", "go"],
            &env,
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(server.requests().len(), 2);
    let messages = lines(&run.stdout);
    let events: Vec<&Value> = messages
        .iter()
        .filter(|m| m["type"] == "stream_event")
        .map(|m| &m["event"])
        .collect();
    let kind = |e: &&Value| e["type"].as_str().unwrap().to_string();
    // The broken attempt's message is ended before the retry's starts.
    let starts: Vec<usize> = (0..events.len())
        .filter(|&i| kind(&events[i]) == "message_start")
        .collect();
    assert_eq!(starts.len(), 2, "{events:?}");
    let first: String = events[starts[0]..starts[1]]
        .iter()
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    assert!(first.starts_with("BROKEN"), "{first}");
    assert_eq!(kind(&events[starts[1] - 1]), "message_stop");
    let second: String = events[starts[1]..]
        .iter()
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    assert_eq!(second, "The clean answer.");
    let result = messages.iter().find(|m| m["type"] == "result").unwrap();
    assert_eq!(result["result"], "The clean answer.");
}
