//! The Responses client against the fake Responses server on 127.0.0.1 (real HTTP, real
//! streaming, a server that checks every request and plays a reasoning model), and the
//! official Python SDK against the same fake.

use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::fake_responses::{FakeResponses, ResponsesReply};
use crate::test_support::drive;
use crate::{FinishReason, Message, ModelTurn, StreamDelta, ToolSpec, Usage};

fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_retry_after: Duration::from_secs(1),
    }
}

fn model(server: &FakeResponses) -> ResponsesModel {
    let mut config = ResponsesConfig::new(server.base_url(), "gpt-fake");
    config.api_key = Some("sk-test".into());
    config.retry = quick_retries();
    config.request_timeout = Duration::from_secs(10);
    ResponsesModel::new(config).unwrap()
}

fn tools() -> Vec<ToolSpec> {
    [
        "glob",
        "read_file",
        "grep_search",
        "edit",
        "shell",
        "todo_write",
    ]
    .into_iter()
    .map(|name| ToolSpec {
        name: name.into(),
        description: format!("The {name} tool."),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    })
    .collect()
}

fn usage() -> Usage {
    Usage {
        prompt_tokens: 1200,
        completion_tokens: 300,
        total_tokens: 1500,
        cache_read_tokens: 1024,
        reasoning_tokens: 256,
        ..Default::default()
    }
}

/// The seven-call session: a retried 429, parallel calls, a tool result that is an
/// error, an `error` event, a dropped connection and a `response.failed` (all retried).
fn session_script() -> Vec<ResponsesReply> {
    let tests = ResponsesReply::calls(
        "",
        &[
            ("c6", "shell", json!({"command": "cargo test"})),
            ("c7", "read_file", json!({"path": "target/log"})),
        ],
    );
    let ResponsesReply::Turn(tests_turn) = tests.clone() else {
        unreachable!()
    };
    let mut done = ModelTurn {
        text: "All done: «ünïcode» kept.".into(),
        ..Default::default()
    };
    done.usage = Some(usage());
    vec![
        ResponsesReply::Status {
            status: 429,
            retry_after: Some("0".into()),
            message: "Rate limit reached.".into(),
        },
        ResponsesReply::calls(
            "Looking around.",
            &[("c1", "glob", json!({"pattern": "**/*.rs"}))],
        ),
        ResponsesReply::calls(
            "",
            &[
                ("c2", "read_file", json!({"path": "src/lib.rs"})),
                ("c3", "read_file", json!({"path": "missing.rs"})),
                ("c4", "grep_search", json!({"pattern": "fn main"})),
            ],
        ),
        ResponsesReply::ErrorMidStream {
            code: "server_error".into(),
        },
        ResponsesReply::calls(
            "Fixing it.",
            &[(
                "c5",
                "edit",
                json!({"path": "src/lib.rs", "old": "a", "new": "b"}),
            )],
        ),
        ResponsesReply::Drop {
            turn: tests_turn,
            bytes: 1500,
        },
        ResponsesReply::Failed {
            code: "server_error".into(),
            message: "try again".into(),
        },
        tests,
        ResponsesReply::calls(
            "",
            &[(
                "c8",
                "todo_write",
                json!({"todos": [{"content": "ship", "status": "done"}]}),
            )],
        ),
        ResponsesReply::Turn(done),
        ResponsesReply::text("You're welcome."),
    ]
}

#[tokio::test]
async fn a_seven_call_session_with_retries_carries_every_reasoning_item_and_result() {
    let server = FakeResponses::start(session_script()).await.unwrap();
    let m = model(&server);
    let mut request = ModelRequest {
        messages: vec![
            Message::System("You are a test.".into()),
            Message::user_text("fix the build"),
        ],
        tools: tools(),
        tool_choice: None,
        sampling: None,
    };
    let turns = drive(&m, &mut request).await;
    let calls: Vec<&str> = turns
        .iter()
        .flat_map(|t| &t.tool_calls)
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(calls, ["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"]);
    assert_eq!(turns[0].text, "Looking around.");
    assert_eq!(turns[0].finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        turns[2].tool_calls[0].arguments,
        json!({"path": "src/lib.rs", "old": "a", "new": "b"}).to_string()
    );
    let last = turns.last().unwrap();
    assert_eq!(last.text, "All done: «ünïcode» kept.");
    assert_eq!(last.finish_reason, FinishReason::Stop);
    assert_eq!(last.usage, Some(usage()));
    request.messages.push(Message::user_text("thanks"));
    assert_eq!(drive(&m, &mut request).await[0].text, "You're welcome.");
    assert_eq!(server.violations(), Vec::<String>::new());
    assert_eq!(server.unused(), 0);
    let requests = server.requests();
    let body = &requests[4].body;
    assert!(
        body["input"]
            .as_array()
            .unwrap()
            .contains(&json!({"type": "function_call_output",
        "call_id": "c3", "output": "Error: missing.rs does not exist"})),
        "{body}"
    );
    assert_eq!(body["instructions"], "You are a test.");
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-test"));
}

#[tokio::test]
async fn sampling_takes_the_apis_names_and_custom_headers_go_on_every_attempt() {
    let server = FakeResponses::start(vec![
        ResponsesReply::Status {
            status: 429,
            retry_after: None,
            message: "slow down".into(),
        },
        ResponsesReply::text("one"),
    ])
    .await
    .unwrap();
    let mut config = ResponsesConfig::new(server.base_url(), "gpt-fake");
    config.api_key = Some("sk-test".into());
    config.retry = quick_retries();
    config.sampling = crate::Sampling {
        temperature: Some(0.25),
        top_p: Some(0.9),
        top_k: Some(40),
        max_tokens: Some(2048),
        presence_penalty: Some(0.5),
        frequency_penalty: Some(0.5),
    };
    config.headers = vec![
        ("x-team".into(), "tools".into()),
        ("OpenAI-Organization".into(), "org-1".into()),
    ];
    let m = ResponsesModel::new(config).unwrap();
    let request = ModelRequest {
        messages: vec![Message::user_text("go")],
        ..Default::default()
    };
    let turn = m
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(turn.text, "one");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "a retry, then the answer");
    for r in &requests {
        assert_eq!(r.header("x-team"), Some("tools"));
        assert_eq!(r.header("openai-organization"), Some("org-1"));
        assert_eq!(r.header("authorization"), Some("Bearer sk-test"));
        let body = &r.body;
        assert_eq!(body["temperature"], 0.25);
        assert_eq!(body["top_p"], 0.9);
        assert_eq!(body["max_output_tokens"], 2048);
        // The API has none of these; the fake's check would name them too.
        for absent in [
            "top_k",
            "max_tokens",
            "presence_penalty",
            "frequency_penalty",
        ] {
            assert!(body.get(absent).is_none(), "{absent} in {body}");
        }
    }
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[tokio::test]
async fn a_dropped_reasoning_item_is_refused_loudly() {
    let server = FakeResponses::start(vec![
        ResponsesReply::calls("", &[("c1", "glob", json!({"pattern": "*"}))]),
        ResponsesReply::text("unreachable"),
    ])
    .await
    .unwrap();
    let m = model(&server);
    let mut request = ModelRequest {
        messages: vec![Message::user_text("go")],
        tools: tools(),
        tool_choice: None,
        sampling: None,
    };
    let turn = m
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap();
    let state = turn
        .reasoning
        .first()
        .cloned()
        .expect("the reasoning item is kept");
    assert_eq!(state.format, FORMAT);
    assert_eq!(
        state.value["items"][0]["encrypted_content"],
        "gAAAA-fake-reasoning-1"
    );
    request.messages.push(Message::Assistant {
        text: turn.text,
        tool_calls: turn.tool_calls,
        reasoning: Vec::new(),
    });
    request.messages.push(Message::Tool {
        call_id: "c1".into(),
        text: "a.rs".into(),
        is_error: false,
        images: Vec::new(),
    });
    let err = m
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ModelError::Rejected { status: 400, message } if message.contains("reasoning")),
        "{err}"
    );
    assert!(!server.violations().is_empty());
}

#[tokio::test]
async fn incomplete_responses_and_final_failures_are_told_apart() {
    let cut = |f: FinishReason| {
        ResponsesReply::Turn(ModelTurn {
            text: "partial".into(),
            finish_reason: f,
            ..Default::default()
        })
    };
    let server = FakeResponses::start(vec![
        cut(FinishReason::Length),
        cut(FinishReason::ContentFilter),
        ResponsesReply::Failed {
            code: "context_length_exceeded".into(),
            message: "Your input exceeds the context window.".into(),
        },
    ])
    .await
    .unwrap();
    let m = model(&server);
    let request = ModelRequest {
        messages: vec![Message::user_text("go")],
        ..Default::default()
    };
    let t = m
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        (t.finish_reason, t.text.as_str()),
        (FinishReason::Length, "partial")
    );
    let t = m
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(t.finish_reason, FinishReason::ContentFilter);
    let err = m
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ModelError::Rejected { message, .. } if message.contains("context window")),
        "{err}"
    );
    assert_eq!(server.unused(), 0, "a final failure is not retried");
}

#[tokio::test]
async fn deltas_stream_and_a_retry_restarts_them() {
    let server = FakeResponses::start(vec![
        ResponsesReply::ErrorMidStream {
            code: "server_error".into(),
        },
        ResponsesReply::calls("Hi.", &[("c1", "glob", json!({"pattern": "*.rs"}))]),
    ])
    .await
    .unwrap();
    let m = model(&server);
    let seen = std::sync::Mutex::new(Vec::new());
    let request = ModelRequest {
        messages: vec![Message::user_text("go")],
        tools: tools(),
        tool_choice: None,
        sampling: None,
    };
    let sink = |d: StreamDelta| seen.lock().unwrap().push(d);
    let turn = m
        .complete_streaming(&request, &CancellationToken::new(), &sink)
        .await
        .unwrap();
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen[0], StreamDelta::Restart);
    let text: String = seen
        .iter()
        .filter_map(|d| match d {
            StreamDelta::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Hi.");
    let args: String = seen
        .iter()
        .filter_map(|d| match d {
            StreamDelta::ToolCallArguments { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(args, turn.tool_calls[0].arguments);
    assert!(
        seen.contains(&StreamDelta::ToolCallStart {
            index: 2,
            id: "c1".into(),
            name: "glob".into()
        }),
        "{seen:?}"
    );
}

#[test]
fn the_request_is_stateless_with_reasoning_back_in_place_and_images_inline() {
    let state = crate::OpaquePart {
        format: FORMAT.into(),
        value: json!({"items": [
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc", "status": "completed"},
            {"type": "function_call", "call_id": "c1"},
            {"type": "message"},
        ]}),
    };
    let request = ModelRequest {
        messages: vec![
            Message::User(vec![
                crate::UserPart::Text("look".into()),
                crate::UserPart::Image {
                    mime_type: "image/png".into(),
                    data: vec![1, 2],
                },
            ]),
            Message::Assistant {
                text: "Sure.".into(),
                tool_calls: vec![crate::ToolCall {
                    id: "c1".into(),
                    name: "glob".into(),
                    arguments: "{}".into(),
                }],
                reasoning: vec![state],
            },
            Message::Tool {
                call_id: "c1".into(),
                text: "none".into(),
                is_error: false,
                images: Vec::new(),
            },
        ],
        tools: tools(),
        tool_choice: Some("glob".into()),
        sampling: None,
    };
    let body = wire::request_body(
        "gpt-fake",
        Some("high"),
        &crate::Sampling::default(),
        &request,
    );
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "look"},
                {"type": "input_image", "image_url": "data:image/png;base64,AQI=", "detail": "auto"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"},
            {"type": "function_call", "call_id": "c1", "name": "glob", "arguments": "{}"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sure."}]},
            {"type": "function_call_output", "call_id": "c1", "output": "none"},
        ])
    );
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "name": "glob"})
    );
}

#[tokio::test]
async fn a_tools_images_go_inside_its_output_as_input_image_items() {
    use crate::test_support::{PNG_BASE64, answer_with_error_and_image};
    let server = FakeResponses::start(vec![
        ResponsesReply::calls(
            "",
            &[("c1", "glob", json!({})), ("c2", "read_file", json!({}))],
        ),
        ResponsesReply::text("ok"),
    ])
    .await
    .unwrap();
    let m = model(&server);
    let mut request = ModelRequest {
        messages: vec![Message::user_text("look")],
        tools: tools(),
        tool_choice: None,
        sampling: None,
    };
    let turn = m
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap();
    answer_with_error_and_image(&mut request, &turn);
    m.complete(&request, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(server.violations(), Vec::<String>::new());
    let input = server.requests()[1].body["input"].clone();
    let outputs: Vec<&Value> = input
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .collect();
    // Text alone stays a string; with an image, a list of items.
    assert_eq!(outputs[0]["output"], "no such directory");
    assert_eq!(
        outputs[1]["output"],
        json!([
            {"type": "input_text", "text": "Error: printed by the program"},
            {"type": "input_image", "image_url": format!("data:image/png;base64,{PNG_BASE64}"), "detail": "auto"},
        ])
    );
    // Nothing else carries the image.
    assert_eq!(input.to_string().matches(PNG_BASE64).count(), 1);
}

#[tokio::test]
async fn the_official_python_sdk_parses_every_scripted_turn() {
    let Some(python) = crate::test_support::python("openai") else {
        return;
    };
    let script: Vec<ResponsesReply> = session_script()
        .into_iter()
        .filter(|r| matches!(r, ResponsesReply::Turn(_) | ResponsesReply::Status { .. }))
        .take(7)
        .collect();
    let server = FakeResponses::start(script.clone()).await.unwrap();
    let lines =
        crate::test_support::run(&python, "responses_client.py", &[&server.base_url()]).await;
    let expected: Vec<Value> = script
        .iter()
        .map(|r| match r {
            ResponsesReply::Status { status, .. } => json!({"error": status}),
            ResponsesReply::Turn(t) => json!({
                "text": t.text,
                "calls": t.tool_calls.iter().map(|c| json!([c.id, c.name, c.arguments])).collect::<Vec<_>>(),
                "reasoning": 1,
                "status": "completed",
                "usage": t.usage.map(|u| json!([u.prompt_tokens, u.cache_read_tokens, u.completion_tokens, u.reasoning_tokens, u.total_tokens])).unwrap_or(json!([0, 0, 0, 0, 0])),
            }),
            other => panic!("not in the SDK script: {other:?}"),
        })
        .collect();
    assert_eq!(lines, expected);
    assert_eq!(
        server.violations(),
        Vec::<String>::new(),
        "the SDK's requests"
    );
    assert_eq!(server.unused(), 0);
}
