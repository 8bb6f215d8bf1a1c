//! The client against the fake server on 127.0.0.1: real HTTP, real streaming, and a
//! server that checks every request it gets.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::fake_server::{FakeOpenAi, Reply, check_request};
use crate::{Message, ToolCall, ToolSpec, Usage, UserPart};

fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_retry_after: Duration::from_secs(1),
    }
}

fn client(server: &FakeOpenAi, retry: RetryPolicy) -> OpenAiClient {
    let mut config = OpenAiConfig::new(server.base_url(), "fake-model");
    config.api_key = Some("sk-test".into());
    config.retry = retry;
    config.request_timeout = Duration::from_secs(10);
    OpenAiClient::new(config).unwrap()
}

fn two_calls() -> ModelTurn {
    ModelTurn {
        text: "Looking at both — «ünïcode» included.".into(),
        tool_calls: vec![
            ToolCall {
                id: "call_a".into(),
                name: "glob".into(),
                arguments: r#"{"pattern":"**/*.rs","path":"/w"}"#.into(),
            },
            ToolCall {
                id: "call_b".into(),
                name: "grep_search".into(),
                arguments: r#"{"pattern":"fn main\\(\\)","path":"/w/src"}"#.into(),
            },
        ],
        finish_reason: FinishReason::ToolCalls,
        usage: Some(Usage {
            prompt_tokens: 120,
            completion_tokens: 30,
            total_tokens: 150,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![
            Message::System("You are a test.".into()),
            Message::user_text("find main"),
        ],
        tools: vec![ToolSpec {
            name: "glob".into(),
            description: "Find files.".into(),
            parameters: json!({"type": "object"}),
        }],
        tool_choice: None,
        sampling: None,
    }
}

/// The request that answers `turn`'s calls.
fn follow_up(turn: &ModelTurn) -> ModelRequest {
    let mut req = request();
    req.messages.push(Message::Assistant {
        text: turn.text.clone(),
        tool_calls: turn.tool_calls.clone(),
        reasoning: Vec::new(),
    });
    for c in &turn.tool_calls {
        req.messages.push(Message::Tool {
            call_id: c.id.clone(),
            text: format!("result of {}", c.name),
            is_error: false,
            images: Vec::new(),
        });
    }
    req
}

async fn complete(c: &OpenAiClient, req: &ModelRequest) -> Result<ModelTurn, ModelError> {
    tokio::time::timeout(
        Duration::from_secs(20),
        c.complete(req, &CancellationToken::new()),
    )
    .await
    .expect("the client hung")
}

#[tokio::test]
async fn a_stream_split_inside_json_and_arguments_assembles_every_call_and_the_usage() {
    for piece in [1, 3, 7, 64] {
        let server = FakeOpenAi::start(vec![
            Reply::Stream {
                turn: two_calls(),
                piece,
            },
            Reply::text("Found it."),
        ])
        .await
        .unwrap();
        let c = client(&server, quick_retries());
        let turn = complete(&c, &request()).await.unwrap();
        assert_eq!(turn, two_calls(), "piece size {piece}");
        let last = complete(&c, &follow_up(&turn)).await.unwrap();
        assert_eq!(last.text, "Found it.");
        assert_eq!(last.finish_reason, FinishReason::Stop);
        assert_eq!(server.violations(), Vec::<String>::new());
    }
}

#[tokio::test]
async fn the_request_carries_model_tools_stream_options_and_the_key() {
    let server = FakeOpenAi::start(vec![Reply::text("ok")]).await.unwrap();
    let c = client(&server, quick_retries());
    let mut req = request();
    req.messages.push(Message::User(vec![
        UserPart::Text("see".into()),
        UserPart::Image {
            mime_type: "image/png".into(),
            data: vec![1, 2, 3],
        },
    ]));
    complete(&c, &req).await.unwrap();
    let r = &server.requests()[0];
    assert_eq!(r.authorization.as_deref(), Some("Bearer sk-test"));
    assert_eq!(r.body["model"], "fake-model");
    assert_eq!(r.body["stream"], true);
    assert_eq!(r.body["stream_options"]["include_usage"], true);
    assert_eq!(r.body["tools"][0]["function"]["name"], "glob");
    assert_eq!(
        r.body["messages"][2]["content"][1]["image_url"]["url"],
        "data:image/png;base64,AQID"
    );
}

#[tokio::test]
async fn a_tools_images_follow_the_tool_messages_in_a_user_message() {
    use crate::test_support::{PNG_BASE64, answer_with_error_and_image};
    let server = FakeOpenAi::start(vec![Reply::turn(two_calls()), Reply::text("ok")])
        .await
        .unwrap();
    let c = client(&server, RetryPolicy::default());
    let turn = complete(&c, &request()).await.unwrap();
    let mut req = request();
    answer_with_error_and_image(&mut req, &turn);
    complete(&c, &req).await.unwrap();
    assert_eq!(server.violations(), Vec::<String>::new());
    let messages = server.requests()[1].body["messages"].clone();
    // A tool message is text only: no flag (the text says what happened), the image named.
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "call_a", "content": "no such directory"})
    );
    assert_eq!(
        messages[4]["content"],
        "Error: printed by the program\n[image/png attached in the following user message]"
    );
    assert_eq!(
        messages[5],
        json!({"role": "user", "content": [
            {"type": "text", "text": "Media returned by the tool calls above:"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_BASE64}")}},
        ]})
    );
    assert_eq!(messages.as_array().unwrap().len(), 6);
}

#[tokio::test]
async fn rate_limit_then_success_honours_retry_after() {
    let server = FakeOpenAi::start(vec![
        Reply::Status {
            status: 429,
            retry_after: Some("0".into()),
            message: "slow down".into(),
        },
        Reply::turn(two_calls()),
    ])
    .await
    .unwrap();
    // A backoff of a minute: only the server's `Retry-After: 0` lets this finish in time.
    let policy = RetryPolicy {
        base_delay: Duration::from_secs(60),
        max_delay: Duration::from_secs(60),
        ..quick_retries()
    };
    let turn = complete(&client(&server, policy), &request())
        .await
        .unwrap();
    assert_eq!(turn.tool_calls.len(), 2);
    assert_eq!(server.requests().len(), 2);
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[tokio::test]
async fn server_error_then_success() {
    let server = FakeOpenAi::start(vec![Reply::status(500, "boom"), Reply::text("fine")])
        .await
        .unwrap();
    let turn = complete(&client(&server, quick_retries()), &request())
        .await
        .unwrap();
    assert_eq!(turn.text, "fine");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_connection_dropped_mid_stream_is_retried() {
    let server = FakeOpenAi::start(vec![
        Reply::Drop {
            turn: two_calls(),
            bytes: 400,
        },
        Reply::turn(two_calls()),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    let c = client(&server, quick_retries());
    let turn = complete(&c, &request()).await.unwrap();
    assert_eq!(turn, two_calls(), "nothing of the broken attempt leaks in");
    complete(&c, &follow_up(&turn)).await.unwrap();
    assert_eq!(server.requests().len(), 3);
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[tokio::test]
async fn a_malformed_data_line_is_retried_and_other_lines_are_ignored() {
    let ok = format!(
        "garbage without a colon\n: a comment\nevent: message\nid: 7\n{}",
        crate::fake_server::sse_body(&ModelTurn {
            text: "clean".into(),
            ..Default::default()
        })
    );
    let server = FakeOpenAi::start(vec![
        Reply::RawStream("data: {\"choices\": [{\"delta\": {\"content\": \"x\"\n\n".into()),
        Reply::RawStream(ok),
    ])
    .await
    .unwrap();
    let turn = complete(&client(&server, quick_retries()), &request())
        .await
        .unwrap();
    assert_eq!(turn.text, "clean");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn unauthorized_ends_at_once_with_the_servers_message() {
    let server = FakeOpenAi::start(vec![
        Reply::status(401, "Incorrect API key provided: sk-t***"),
        Reply::text("never"),
    ])
    .await
    .unwrap();
    let err = complete(&client(&server, quick_retries()), &request())
        .await
        .unwrap_err();
    match err {
        ModelError::Rejected { status, message } => {
            assert_eq!(status, 401);
            assert!(message.contains("Incorrect API key provided"), "{message}");
            assert!(message.contains("OPENAI_API_KEY"), "{message}");
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 1, "not retried");
}

#[tokio::test]
async fn bad_request_and_not_found_are_fatal_too() {
    for status in [400, 404] {
        let server = FakeOpenAi::start(vec![Reply::status(status, "nope")])
            .await
            .unwrap();
        let err = complete(&client(&server, quick_retries()), &request())
            .await
            .unwrap_err();
        assert!(matches!(err, ModelError::Rejected { status: s, .. } if s == status));
    }
}

#[tokio::test]
async fn retries_give_up_with_the_last_reason() {
    let server = FakeOpenAi::start(vec![
        Reply::status(503, "a"),
        Reply::status(502, "b"),
        Reply::status(500, "overloaded"),
    ])
    .await
    .unwrap();
    let err = complete(&client(&server, quick_retries()), &request())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("failed 3 times") && text.contains("overloaded"),
        "{text}"
    );
}

#[tokio::test]
async fn nothing_listening_locally_names_the_configuration_when_nothing_says_more() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let config = OpenAiConfig {
        retry: quick_retries(),
        ..OpenAiConfig::new(format!("http://{addr}/v1"), "m")
    };
    let err = OpenAiClient::new(config)
        .unwrap()
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    // A local refusal is not retried (see the test above); without an origin the
    // message points at the configuration.
    assert!(
        matches!(err, ModelError::Unreachable { .. })
            && err.to_string().contains("the configuration"),
        "{err}"
    );
}

#[tokio::test]
async fn without_streaming_the_whole_response_is_read() {
    let server = FakeOpenAi::start(vec![Reply::Whole(two_calls())])
        .await
        .unwrap();
    let mut config = OpenAiConfig::new(server.base_url(), "m");
    config.stream = false;
    let turn = complete(&OpenAiClient::new(config).unwrap(), &request())
        .await
        .unwrap();
    assert_eq!(turn, two_calls());
    assert!(server.requests()[0].body.get("stream").is_none());
}

#[tokio::test]
async fn cancelling_during_the_backoff_stops_at_once() {
    let server = FakeOpenAi::start(vec![Reply::status(500, "x"), Reply::text("late")])
        .await
        .unwrap();
    let policy = RetryPolicy {
        base_delay: Duration::from_secs(600),
        max_delay: Duration::from_secs(600),
        ..quick_retries()
    };
    let c = client(&server, policy);
    let cancel = CancellationToken::new();
    let req = request();
    let run = c.complete(&req, &cancel);
    let canceller = async {
        // The first request has been answered once the server recorded it.
        while server.requests().is_empty() {
            tokio::task::yield_now().await;
        }
        cancel.cancel();
    };
    let (result, ()) = tokio::time::timeout(Duration::from_secs(20), async {
        tokio::join!(run, canceller)
    })
    .await
    .unwrap();
    assert!(matches!(result, Err(ModelError::Cancelled)));
}

#[test]
fn the_request_checker_catches_orphans_twins_and_foreign_ids() {
    let sent = vec![ToolCall {
        id: "a".into(),
        name: "glob".into(),
        arguments: "{}".into(),
    }];
    let body = |messages: serde_json::Value| json!({"model": "m", "messages": messages});
    let call = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "glob", "arguments": "{}"}}]});
    let answer = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "r"});
    assert!(check_request(&body(json!([call.clone(), answer("a")])), &sent).is_empty());
    let unanswered = check_request(&body(json!([call.clone()])), &sent);
    assert!(unanswered[0].contains("never answered"), "{unanswered:?}");
    let twice = check_request(
        &body(json!([call.clone(), answer("a"), answer("a")])),
        &sent,
    );
    assert!(twice[0].contains("answered twice"), "{twice:?}");
    let orphan = check_request(&body(json!([answer("z")])), &[]);
    assert!(orphan[0].contains("unknown call"), "{orphan:?}");
    let foreign = check_request(&body(json!([call, answer("a")])), &[]);
    assert!(foreign[0].contains("differ"), "{foreign:?}");
}

#[test]
fn a_forced_tool_is_sent_as_tool_choice_and_checked_against_the_tools() {
    let mut req = request();
    req.tool_choice = Some("glob".into());
    let body = crate::wire::request_body("m", &req, true, &Default::default());
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "glob"}})
    );
    assert!(
        check_request(&body, &[]).is_empty(),
        "{:?}",
        check_request(&body, &[])
    );
    req.tool_choice = Some("grep".into());
    let body = crate::wire::request_body("m", &req, true, &Default::default());
    let problems = check_request(&body, &[]);
    assert!(problems[0].contains("not among"), "{problems:?}");
    req.tool_choice = None;
    assert!(
        crate::wire::request_body("m", &req, true, &Default::default())
            .get("tool_choice")
            .is_none()
    );
}

#[tokio::test]
async fn deltas_follow_the_answer_and_a_retry_restarts_them() {
    let server = FakeOpenAi::start(vec![
        Reply::Drop {
            turn: ModelTurn {
                text: "the first attempt breaks off".into(),
                ..Default::default()
            },
            bytes: 900,
        },
        Reply::text("streamed in pieces"),
    ])
    .await
    .unwrap();
    let seen = std::sync::Mutex::new(Vec::<String>::new());
    let sink = |d: crate::StreamDelta| {
        seen.lock().unwrap().push(match d {
            crate::StreamDelta::Text(t) => t,
            crate::StreamDelta::Restart => "<restart>".to_string(),
            other => format!("{other:?}"),
        })
    };
    let c = client(&server, quick_retries());
    let turn = tokio::time::timeout(
        Duration::from_secs(20),
        c.complete_streaming(&request(), &CancellationToken::new(), &sink),
    )
    .await
    .expect("the client hung")
    .unwrap();
    assert_eq!(turn.text, "streamed in pieces");
    let seen = seen.lock().unwrap().clone();
    let restart = seen.iter().position(|s| s == "<restart>").unwrap();
    assert!(
        restart > 0,
        "the broken attempt streamed some text: {seen:?}"
    );
    assert!(
        "the first attempt breaks off".starts_with(&seen[..restart].concat()),
        "{seen:?}"
    );
    assert!(
        seen.len() - restart > 2,
        "the text came in pieces: {seen:?}"
    );
    assert_eq!(seen[restart + 1..].concat(), "streamed in pieces");
}

#[tokio::test]
async fn a_refused_local_connection_fails_at_once_naming_the_url_and_its_origin() {
    // A port nothing listens on: bound, then released.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut config = OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "m");
    // Retries that would take minutes: the error must not wait for them.
    config.retry = RetryPolicy {
        max_attempts: 6,
        base_delay: Duration::from_secs(60),
        max_delay: Duration::from_secs(60),
        max_retry_after: Duration::from_secs(60),
    };
    config.base_url_origin = Some("OPENAI_BASE_URL".into());
    let c = OpenAiClient::new(config).unwrap();
    let err = complete(&c, &request()).await.unwrap_err();
    match &err {
        ModelError::Unreachable { url, origin, .. } => {
            assert_eq!(url, &format!("http://127.0.0.1:{port}/v1/chat/completions"));
            assert_eq!(origin, "OPENAI_BASE_URL");
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("refused") && text.contains("OPENAI_BASE_URL"),
        "{text}"
    );
}

#[tokio::test]
async fn a_host_name_that_does_not_resolve_fails_at_once_naming_the_url_and_its_origin() {
    // `.invalid` never resolves (RFC 6761), online or offline.
    let mut config = OpenAiConfig::new("http://model.invalid/v1", "m");
    config.retry = RetryPolicy {
        max_attempts: 6,
        base_delay: Duration::from_secs(60),
        max_delay: Duration::from_secs(60),
        max_retry_after: Duration::from_secs(60),
    };
    config.base_url_origin = Some("the default (set OPENAI_BASE_URL)".into());
    let c = OpenAiClient::new(config).unwrap();
    let started = std::time::Instant::now();
    let err = complete(&c, &request()).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(30));
    match &err {
        ModelError::Unreachable { url, origin, .. } => {
            assert_eq!(url, "http://model.invalid/v1/chat/completions");
            assert!(origin.contains("OPENAI_BASE_URL"), "{origin}");
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("does not resolve") && text.contains("model.invalid"),
        "{text}"
    );
}

#[tokio::test]
async fn tool_calls_left_in_the_text_become_calls_unless_turned_off() {
    let text = "Checking.\n<tool_call>\n{\"name\": \"glob\", \"arguments\": {\"pattern\": \"*.rs\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"grep_search\", \"arguments\": {\"pattern\": \"fn\"}}\n</tool_call>";
    for on in [true, false] {
        let server = FakeOpenAi::start(vec![Reply::text(text)]).await.unwrap();
        let mut config = OpenAiConfig::new(server.base_url(), "fake-model");
        config.tool_calls_in_text = on;
        let turn = complete(&OpenAiClient::new(config).unwrap(), &request())
            .await
            .unwrap();
        if on {
            let names: Vec<_> = turn.tool_calls.iter().map(|c| c.name.as_str()).collect();
            assert_eq!(names, ["glob", "grep_search"]);
            assert_eq!(turn.tool_calls[1].arguments, r#"{"pattern":"fn"}"#);
            assert_eq!(turn.text, "Checking.");
            assert_eq!(turn.finish_reason, FinishReason::ToolCalls);
        } else {
            assert!(turn.tool_calls.is_empty());
            assert_eq!(turn.text, text);
        }
    }
}

#[tokio::test]
async fn mistral_and_llama_calls_in_the_text_become_calls_unless_turned_off() {
    for text in [
        "[TOOL_CALLS][{\"name\": \"glob\", \"arguments\": {\"pattern\": \"*.rs\"}}]",
        "<|python_tag|>{\"name\": \"glob\", \"parameters\": {\"pattern\": \"*.rs\"}}",
        "{\"name\": \"glob\", \"parameters\": {\"pattern\": \"*.rs\"}}",
    ] {
        for on in [true, false] {
            let server = FakeOpenAi::start(vec![Reply::text(text)]).await.unwrap();
            let mut config = OpenAiConfig::new(server.base_url(), "fake-model");
            config.tool_calls_in_text = on;
            let turn = complete(&OpenAiClient::new(config).unwrap(), &request())
                .await
                .unwrap();
            if on {
                assert_eq!(turn.tool_calls.len(), 1, "{text}");
                assert_eq!(turn.tool_calls[0].name, "glob");
                assert_eq!(turn.tool_calls[0].arguments, r#"{"pattern":"*.rs"}"#);
                assert_eq!(turn.text, "");
                assert_eq!(turn.finish_reason, FinishReason::ToolCalls);
            } else {
                assert!(turn.tool_calls.is_empty());
                assert_eq!(turn.text, text);
            }
        }
    }
}
