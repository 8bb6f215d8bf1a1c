//! Output formats, model flags, exit codes, record and replay, `@path`.

use std::path::Path;

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{FinishReason, ModelTurn, ToolCall, parse_script};

use crate::support::{Workspace, json_result, wait};

fn read_call(ws: &Path, id: &str) -> Value {
    json!({"tool_calls": [{"id": id, "name": "read_file", "arguments": {"absolute_path": ws.join("README.md")}}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_session_prints_the_answer_and_the_tool_activity() {
    let w = Workspace::new();
    w.write("README.md", "hello from the readme\n");
    let script = w.script(&[
        read_call(&w.ws(), "c1"),
        // A misspelt name on purpose: the script says it expects the error.
        json!({"tool_calls": [{"id": "c2", "name": "read_fil", "arguments": {}, "expect_error": true}]}),
        json!({"text": "The README says hello."}),
    ]);
    let run = w
        .run(
            &[
                "--model-replay",
                script.to_str().unwrap(),
                "what does the readme say?",
            ],
            &[],
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "The README says hello.\n");
    assert!(run.stderr.contains("✓ read_file"), "{}", run.stderr);
    assert!(run.stderr.contains("✗ read_fil read_fil"), "{}", run.stderr);
    assert!(run.stderr.contains("tool_not_registered"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_and_stream_json_describe_calls_usage_and_timings() {
    let w = Workspace::new();
    w.write("README.md", "hi\n");
    let script = w.script(&[
        read_call(&w.ws(), "c1"),
        json!({"text": "ok", "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}}),
    ]);
    let s = script.to_str().unwrap();
    let run = w
        .run(&["--model-replay", s, "-o", "json", "go"], &[], None)
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = json_result(&run.stdout);
    assert_eq!(v["result"], "ok");
    assert_eq!(v["subtype"], "success");
    assert_eq!(v["is_error"], false);
    assert_eq!(v["num_turns"], 2);
    assert_eq!(v["usage"]["input_tokens"], 7);
    assert_eq!(v["usage"]["output_tokens"], 2);
    assert_eq!(v["usage"]["total_tokens"], 9);
    assert_eq!(v["permission_denials"], json!([]));
    assert!(v["duration_ms"].is_u64());
    assert_eq!(v["toolbelt"]["tool_calls"][0]["name"], "read_file");
    assert_eq!(v["toolbelt"]["tool_calls"][0]["status"], "success");
    assert!(
        v["toolbelt"]["tool_calls"][0]["duration_ms"]
            .as_f64()
            .unwrap()
            >= 0.0
    );

    let run = w
        .run(
            &[
                "--model-replay",
                s,
                "--output-format",
                "stream-json",
                "--include-partial-messages",
                "go",
            ],
            &[],
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let events: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<String> = events
        .iter()
        .map(|e| {
            let t = e["type"].as_str().unwrap();
            match (e["subtype"].as_str(), e["event"]["type"].as_str()) {
                (Some(sub), _) | (_, Some(sub)) => format!("{t}:{sub}"),
                _ => t.to_string(),
            }
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "system:init",
            "stream_event:message_start",
            "stream_event:content_block_start",
            "stream_event:content_block_delta",
            "stream_event:content_block_stop",
            "assistant",
            "stream_event:message_stop",
            "user",
            "stream_event:message_start",
            "stream_event:content_block_start",
            "stream_event:content_block_delta",
            "stream_event:content_block_stop",
            "assistant",
            "stream_event:message_stop",
            "result:success"
        ]
    );
    assert_eq!(events[3]["event"]["delta"]["type"], "input_json_delta");
    assert_eq!(events[5]["message"]["content"][0]["type"], "tool_use");
    assert_eq!(events[7]["message"]["content"][0]["content"], "hi");
    assert_eq!(events[7]["message"]["content"][0]["is_error"], false);
    assert_eq!(
        events[10]["event"]["delta"],
        json!({"type": "text_delta", "text": "ok"})
    );
    let session = events[0]["session_id"].as_str().unwrap();
    assert!(events.iter().all(|e| e["session_id"] == session));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn against_a_loopback_server_every_request_is_well_formed() {
    let w = Workspace::new();
    w.write("README.md", "loopback\n");
    let call = ToolCall {
        id: "call_x".into(),
        name: "read_file".into(),
        arguments: json!({"absolute_path": w.ws().join("README.md")}).to_string(),
    };
    let server = FakeOpenAi::start(vec![
        Reply::turn(ModelTurn {
            tool_calls: vec![call],
            finish_reason: FinishReason::ToolCalls,
            ..Default::default()
        }),
        Reply::text("It says loopback."),
    ])
    .await
    .unwrap();
    let url = server.base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "sk-local"),
        ("OPENAI_MODEL", "qwen3-coder-plus"),
    ];
    let run = w
        .run(&["-p", "Summarise", "--yolo"], &env, Some("the piped part"))
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "It says loopback.\n");
    assert_eq!(server.violations(), Vec::<String>::new());
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].authorization.as_deref(),
        Some("Bearer sk-local")
    );
    assert_eq!(requests[0].body["model"], "qwen3-coder-plus");
    assert_eq!(
        requests[0].body["messages"][1]["content"],
        "Summarise\n\nthe piped part"
    );
    assert_eq!(requests[1].body["messages"][3]["content"], "loopback");
    let system = requests[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains(&w.ws().display().to_string()),
        "names the workspace"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_references_inline_files_before_the_first_request() {
    let w = Workspace::new();
    w.write("docs/spec.md", "the spec text\n");
    let server = FakeOpenAi::start(vec![Reply::text("read it")])
        .await
        .unwrap();
    let url = server.base_url();
    let run = w
        .run(
            &[
                "--openai-base-url",
                &url,
                "-m",
                "m",
                "explain @docs/spec.md please",
            ],
            &[],
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let user = server.requests()[0].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        user.starts_with("explain @docs/spec.md please\n\n--- Content from referenced files ---"),
        "{user}"
    );
    assert!(user.contains("the spec text"), "{user}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flags_win_over_the_environment_and_a_refusal_ends_the_run() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![Reply::status(401, "Invalid API key: sk-b***")])
        .await
        .unwrap();
    let url = server.base_url();
    let run = w
        .run(
            &[
                "--openai-base-url",
                &url,
                "--openai-api-key",
                "sk-bad",
                "-m",
                "m1",
                "hi",
            ],
            &[
                ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
                ("OPENAI_MODEL", "other"),
            ],
            None,
        )
        .await;
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("HTTP 401") && run.stderr.contains("Invalid API key"),
        "{}",
        run.stderr
    );
    assert_eq!(server.requests()[0].body["model"], "m1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_turn_limit_and_usage_errors_have_their_exit_codes() {
    let w = Workspace::new();
    w.write("README.md", "x\n");
    let script = w.script(&[
        read_call(&w.ws(), "a"),
        read_call(&w.ws(), "b"),
        json!({"text": "late"}),
    ]);
    let s = script.to_str().unwrap();
    let run = w
        .run(
            &["--model-replay", s, "--max-session-turns", "2", "go"],
            &[],
            None,
        )
        .await;
    assert_eq!(run.code, 53, "{}", run.stderr);
    assert!(run.stderr.contains("--max-session-turns"), "{}", run.stderr);

    let run = w.run(&["--model-replay", s], &[], None).await;
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("no prompt"), "{}", run.stderr);

    let run = w
        .run(
            &[
                "--yolo",
                "--approval-mode",
                "plan",
                "--model-replay",
                s,
                "x",
            ],
            &[],
            None,
        )
        .await;
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("cannot be used together"),
        "{}",
        run.stderr
    );

    let run = w.run(&["hi"], &[], None).await;
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("no model"), "{}", run.stderr);

    // A model but no server and no key: the default URL would only fail, after retries
    // (and offline, name lookups). Said at once, naming what is missing; nothing is sent.
    let started = std::time::Instant::now();
    let run = w.run(&["-m", "qwen3-coder", "hi"], &[], None).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    for needed in [
        "no model server is configured",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
    ] {
        assert!(run.stderr.contains(needed), "{needed}: {}", run.stderr);
    }
    assert!(!run.stderr.contains("retrying"), "{}", run.stderr);
    // The bound: under a second (it takes about 20 ms).
    assert!(started.elapsed() < std::time::Duration::from_secs(1));

    let run = w.run(&["tools", "list"], &[], None).await;
    assert_eq!(
        run.code, 0,
        "the tools subcommand still works: {}",
        run.stderr
    );
    assert!(run.stdout.contains("read_file"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_run_replays_to_the_same_answer() {
    let w = Workspace::new();
    w.write("README.md", "rec\n");
    let call = ToolCall {
        id: "call_r".into(),
        name: "read_file".into(),
        arguments: json!({"absolute_path": w.ws().join("README.md")}).to_string(),
    };
    let server = FakeOpenAi::start(vec![
        Reply::turn(ModelTurn {
            tool_calls: vec![call.clone()],
            ..Default::default()
        }),
        Reply::text("recorded answer"),
    ])
    .await
    .unwrap();
    let record = w.dir.path().join("rec.jsonl");
    let url = server.base_url();
    let run = w
        .run(
            &[
                "--openai-base-url",
                &url,
                "-m",
                "m",
                "--record",
                record.to_str().unwrap(),
                "go",
            ],
            &[],
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let script = parse_script(&std::fs::read_to_string(&record).unwrap(), None).unwrap();
    assert_eq!(script[0].to_model_turn(1).tool_calls, [call]);
    let replay = w
        .run(
            &["--model-replay", record.to_str().unwrap(), "go"],
            &[],
            None,
        )
        .await;
    assert_eq!(replay.stdout, "recorded answer\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_calls_that_need_approval_are_refused_unless_allowed() {
    let w = Workspace::new();
    let target = w.ws().join("new.txt");
    let script = w.script(&[
        json!({"tool_calls": [{"id": "w", "name": "write_file", "arguments": {"file_path": target, "content": "x\n"}}]}),
        json!({"text": "tried"}),
    ]);
    let s = script.to_str().unwrap();
    let run = w
        .run(&["--model-replay", s, "-o", "json", "write"], &[], None)
        .await;
    let v = json_result(&run.stdout);
    assert_eq!(
        v["toolbelt"]["tool_calls"][0]["error"]["type"], "execution_denied",
        "{v}"
    );
    assert_eq!(v["permission_denials"][0]["tool_name"], "write_file");
    assert!(!target.exists());
    let run = w
        .run(
            &[
                "--model-replay",
                s,
                "--allowed-tools",
                "write_file",
                "write",
            ],
            &[],
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_the_request_in_flight_and_exits_130() {
    let w = Workspace::new();
    // A server that accepts the request and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let child = w
        .command(&["--openai-base-url", &url, "-m", "m", "wait forever"], &[])
        .spawn()
        .unwrap();
    let pid = child.id().unwrap().to_string();
    // Once the connection is accepted the request is in flight.
    let (_socket, _) = listener.accept().await.unwrap();
    let status = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    let run = wait(child).await;
    assert_eq!(run.code, 130, "{}", run.stderr);
    assert!(run.stderr.contains("interrupted"), "{}", run.stderr);
}

/// SIGTERM and SIGHUP go through the same cleanup as Ctrl-C twice and exit with
/// 128 + the signal (before, the default action killed toolbelt with no cleanup and no
/// exit code).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_and_sighup_end_through_the_cleanup() {
    for (signal, code) in [("-TERM", 143), ("-HUP", 129)] {
        let w = Workspace::new();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let child = w
            .command(&["--openai-base-url", &url, "-m", "m", "wait forever"], &[])
            .spawn()
            .unwrap();
        let pid = child.id().unwrap().to_string();
        let (_socket, _) = listener.accept().await.unwrap();
        let status = std::process::Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap();
        assert!(status.success());
        let run = wait(child).await;
        assert_eq!(run.code, code, "{signal}: {}", run.stderr);
    }
}

/// The SDK's `systemPrompt`, `appendSystemPrompt` and `coreTools` options arrive as these
/// flags: the request carries the given system prompt and only the listed built-ins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_prompt_flags_and_core_tools_shape_the_request() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![Reply::text("one"), Reply::text("two")])
        .await
        .unwrap();
    let url = server.base_url();
    let base = ["--openai-base-url", url.as_str(), "-m", "m"];
    let mut args = base.to_vec();
    args.extend([
        "--system-prompt",
        "You are terse.",
        "--append-system-prompt",
        "Answer in French.",
        "--core-tools",
        "read_file,run_shell_command(git *)",
        "hi",
    ]);
    let run = w.run(&args, &[], None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut args = base.to_vec();
    args.extend(["--append-system-prompt", "Answer in French.", "hi"]);
    let run = w.run(&args, &[], None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);

    let requests = server.requests();
    let system = |i: usize| {
        requests[i].body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(system(0), "You are terse.\n\nAnswer in French.");
    let declared: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(declared, ["read_file", "run_shell_command"]);
    // Appended to toolbelt's own prompt, which is kept.
    assert!(system(1).len() > 200, "{}", system(1));
    assert!(system(1).ends_with("\n\nAnswer in French."));
    assert!(requests[1].body["tools"].as_array().unwrap().len() > 2);
}

/// An `@` reference to an image reaches a model that takes images as an image part of
/// the user message, after the text; a model that takes none gets only the text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_at_referenced_image_is_an_image_part_for_a_model_that_takes_images() {
    let w = Workspace::new();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    std::fs::write(w.ws().join("pixel.png"), png).unwrap();
    for vision in [true, false] {
        w.write(
            ".qwen/settings.json",
            &json!({"model": {"vision": vision}}).to_string(),
        );
        let server = FakeOpenAi::start(vec![Reply::text("seen")]).await.unwrap();
        let url = server.base_url();
        let run = w
            .run(
                &["--openai-base-url", &url, "-m", "m", "what is @pixel.png"],
                &[],
                None,
            )
            .await;
        assert_eq!(run.code, 0, "{}", run.stderr);
        let content = server.requests()[0].body["messages"][1]["content"].clone();
        let images: Vec<&Value> = content
            .as_array()
            .map(|parts| parts.iter().filter(|p| p["type"] == "image_url").collect())
            .unwrap_or_default();
        if vision {
            assert_eq!(images.len(), 1, "{content}");
            let url = images[0]["image_url"]["url"].as_str().unwrap();
            assert!(url.starts_with("data:image/png;base64,"), "{url}");
            let text = &content.as_array().unwrap()[0]["text"];
            assert!(
                text.as_str().unwrap().starts_with("what is @pixel.png"),
                "the text comes first: {content}"
            );
        } else {
            assert!(images.is_empty(), "{content}");
        }
    }
}
