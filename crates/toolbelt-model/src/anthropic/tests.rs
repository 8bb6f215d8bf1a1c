//! The Messages client against the fake server speaking the Messages API on 127.0.0.1:
//! real HTTP, real named SSE events, and a server that checks every request it gets
//! (tool uses answered, thinking blocks sent back with their signatures).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::fake_server::{Dialect, FakeOpenAi, Reply};
use crate::{FinishReason, Message, OpaquePart, StreamDelta, ToolCall, ToolSpec, Usage, UserPart};

fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_retry_after: Duration::from_secs(2),
    }
}

async fn server(replies: Vec<Reply>) -> FakeOpenAi {
    FakeOpenAi::start_speaking(Dialect::AnthropicMessages, "127.0.0.1:0", replies)
        .await
        .unwrap()
}

fn client(server: &FakeOpenAi) -> AnthropicClient {
    let mut config = AnthropicConfig::new(server.base_url(), "claude-test");
    config.api_key = Some("sk-ant-test".into());
    config.retry = quick_retries();
    config.request_timeout = Duration::from_secs(10);
    AnthropicClient::new(config).unwrap()
}

fn opaque(value: Value) -> OpaquePart {
    OpaquePart {
        format: "anthropic".into(),
        value,
    }
}

/// Thinking, redacted thinking, text and two tool uses in one answer.
fn thinking_turn() -> ModelTurn {
    ModelTurn {
        text: "Looking at both — «ünïcode» included.".into(),
        tool_calls: vec![
            ToolCall {
                id: "toolu_a".into(),
                name: "glob".into(),
                arguments: r#"{"path":"/w","pattern":"**/*.rs"}"#.into(),
            },
            ToolCall {
                id: "toolu_b".into(),
                name: "grep_search".into(),
                arguments: r#"{"path":"/w/src","pattern":"fn main\\(\\)"}"#.into(),
            },
        ],
        finish_reason: FinishReason::ToolCalls,
        usage: Some(Usage {
            prompt_tokens: 1200,
            completion_tokens: 30,
            total_tokens: 1230,
            cache_read_tokens: 1000,
            cache_write_tokens: 150,
            ..Default::default()
        }),
        reasoning: vec![
            opaque(
                json!({"type": "thinking", "thinking": "Two searches at once.", "signature": "c2lnLTE="}),
            ),
            opaque(json!({"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"})),
        ],
    }
}

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![
            Message::System("You are a test.".into()),
            Message::user_text("find main"),
        ],
        tools: vec![
            ToolSpec {
                name: "glob".into(),
                description: "Find files.".into(),
                parameters: json!({"type": "object"}),
            },
            ToolSpec {
                name: "grep_search".into(),
                description: "Search.".into(),
                parameters: json!({"type": "object"}),
            },
        ],
        tool_choice: None,
        sampling: None,
    }
}

/// The request that answers `turn`'s calls, the first with an error.
fn follow_up(turn: &ModelTurn) -> ModelRequest {
    let mut req = request();
    req.messages.push(Message::Assistant {
        text: turn.text.clone(),
        tool_calls: turn.tool_calls.clone(),
        reasoning: turn.reasoning.clone(),
    });
    for (n, c) in turn.tool_calls.iter().enumerate() {
        req.messages.push(Message::Tool {
            call_id: c.id.clone(),
            text: if n == 0 {
                "Error: no such directory".into()
            } else {
                format!("result of {}", c.name)
            },
            is_error: n == 0,
            images: Vec::new(),
        });
    }
    req.messages.push(Message::User(vec![UserPart::Image {
        mime_type: "image/png".into(),
        data: vec![1, 2, 3],
    }]));
    req
}

async fn complete(c: &AnthropicClient, req: &ModelRequest) -> Result<ModelTurn, ModelError> {
    tokio::time::timeout(
        Duration::from_secs(20),
        c.complete(req, &CancellationToken::new()),
    )
    .await
    .expect("the client hung")
}

#[tokio::test]
async fn thinking_text_and_two_tool_uses_assemble_at_any_split_and_the_thinking_goes_back() {
    for piece in [1, 5, 64, 4096] {
        let server = server(vec![
            Reply::Stream {
                turn: thinking_turn(),
                piece,
            },
            Reply::text("Found it."),
        ])
        .await;
        let c = client(&server);
        let turn = complete(&c, &request()).await.unwrap();
        assert_eq!(turn, thinking_turn(), "piece size {piece}");
        let last = complete(&c, &follow_up(&turn)).await.unwrap();
        assert_eq!(last.text, "Found it.");
        assert_eq!(last.finish_reason, FinishReason::Stop);
        assert_eq!(server.violations(), Vec::<String>::new(), "piece {piece}");
    }
}

#[tokio::test]
async fn the_request_has_the_headers_cache_marks_tools_and_results_in_the_apis_shape() {
    let server = server(vec![Reply::turn(thinking_turn()), Reply::text("ok")]).await;
    let c = client(&server);
    let turn = complete(&c, &request()).await.unwrap();
    complete(&c, &follow_up(&turn)).await.unwrap();
    let requests = server.requests();
    let first = &requests[0];
    assert_eq!(first.path, "/v1/messages");
    let header = |name: &str| {
        first
            .headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(header("anthropic-version"), Some("2023-06-01"));
    let body = &first.body;
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 8192);
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You are a test.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
    assert!(body["tools"][0].get("cache_control").is_none());
    assert_eq!(
        body["tools"][1]["cache_control"],
        json!({"type": "ephemeral"})
    );
    // The follow-up: thinking first, then text and tool uses; one user message with both
    // results (the failed one marked) and then the image.
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 3, "{messages:?}");
    let kinds = |m: &Value| {
        m["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["type"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        kinds(&messages[1]),
        [
            "thinking",
            "redacted_thinking",
            "text",
            "tool_use",
            "tool_use"
        ]
    );
    assert_eq!(kinds(&messages[2]), ["tool_result", "tool_result", "image"]);
    assert_eq!(messages[2]["content"][0]["is_error"], true);
    assert!(messages[2]["content"][1].get("is_error").is_none());
    assert_eq!(
        messages[2]["content"][2]["source"],
        json!({"type": "base64", "media_type": "image/png", "data": "AQID"})
    );
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[tokio::test]
async fn a_failed_result_says_so_by_its_flag_and_images_go_inside_their_result() {
    use crate::test_support::{PNG_BASE64, answer_with_error_and_image};
    let server = server(vec![Reply::turn(thinking_turn()), Reply::text("ok")]).await;
    let c = client(&server);
    let turn = complete(&c, &request()).await.unwrap();
    let mut req = request();
    answer_with_error_and_image(&mut req, &turn);
    complete(&c, &req).await.unwrap();
    assert_eq!(server.violations(), Vec::<String>::new());
    let results = &server.requests()[1].body["messages"][2]["content"];
    assert_eq!(
        results[0],
        json!({"type": "tool_result", "tool_use_id": "toolu_a", "is_error": true,
            "content": [{"type": "text", "text": "no such directory"}]})
    );
    assert_eq!(
        results[1],
        json!({"type": "tool_result", "tool_use_id": "toolu_b", "content": [
            {"type": "text", "text": "Error: printed by the program"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_BASE64}},
        ]})
    );
    assert_eq!(
        results.as_array().unwrap().len(),
        2,
        "nothing after the results"
    );
}

#[tokio::test]
async fn the_fake_refuses_an_image_the_api_would_not_take() {
    let server = server(vec![Reply::turn(thinking_turn()), Reply::text("ok")]).await;
    let c = client(&server);
    let turn = complete(&c, &request()).await.unwrap();
    let mut req = request();
    crate::test_support::answer_with_error_and_image(&mut req, &turn);
    if let Some(Message::Tool { images, .. }) = req.messages.last_mut() {
        images[0].mime_type = "image/bmp".into();
    }
    complete(&c, &req).await.unwrap();
    let violations = server.violations();
    assert!(
        violations
            .iter()
            .any(|v| v.contains("an image block without a base64 source")),
        "{violations:?}"
    );
}

#[tokio::test]
async fn rate_limits_and_overload_are_retried_honouring_retry_after() {
    let server = server(vec![
        Reply::Status {
            status: 429,
            retry_after: Some("0".into()),
            message: "slow down".into(),
        },
        Reply::Status {
            status: 529,
            retry_after: Some("1".into()),
            message: "Overloaded".into(),
        },
        Reply::text("at last"),
    ])
    .await;
    let c = client(&server);
    let started = Instant::now();
    let turn = complete(&c, &request()).await.unwrap();
    assert_eq!(turn.text, "at last");
    assert_eq!(server.request_count(), 3);
    // The 529's retry-after of one second was waited out (the policy's own delays are
    // a few milliseconds).
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_overload_error_mid_stream_restarts_the_answer_and_a_request_error_ends_it() {
    let server = server(vec![
        Reply::StreamError {
            turn: thinking_turn(),
            events: 6,
            kind: "overloaded_error".into(),
            message: "Overloaded".into(),
        },
        Reply::turn(thinking_turn()),
    ])
    .await;
    let c = client(&server);
    let deltas = Mutex::new(Vec::new());
    let on_delta = |d: StreamDelta| deltas.lock().unwrap().push(d);
    let turn = c
        .complete_streaming(&request(), &CancellationToken::new(), &on_delta)
        .await
        .unwrap();
    assert_eq!(turn, thinking_turn());
    let deltas = deltas.into_inner().unwrap();
    let restart = deltas
        .iter()
        .position(|d| *d == StreamDelta::Restart)
        .expect("the restart is told");
    assert!(deltas[restart..].contains(&StreamDelta::ToolCallStart {
        index: 1,
        id: "toolu_b".into(),
        name: "grep_search".into()
    }));
    // The thinking streams for a display, apart from the answer.
    let thought: String = deltas[restart..]
        .iter()
        .filter_map(|d| match d {
            StreamDelta::Thinking(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thought, "Two searches at once.");

    let server2 = server_with_request_error().await;
    let err = complete(&client(&server2), &request()).await.unwrap_err();
    assert!(
        matches!(&err, ModelError::Rejected { status: 400, message } if message.contains("invalid_request_error")),
        "{err}"
    );
    assert_eq!(server2.request_count(), 1);
}

async fn server_with_request_error() -> FakeOpenAi {
    server(vec![Reply::StreamError {
        turn: thinking_turn(),
        events: 2,
        kind: "invalid_request_error".into(),
        message: "bad".into(),
    }])
    .await
}

#[tokio::test]
async fn a_max_tokens_stop_is_a_truncated_turn_and_a_cut_stream_is_retried() {
    let mut cut = thinking_turn();
    cut.finish_reason = FinishReason::Length;
    let server = server(vec![
        Reply::Drop {
            turn: thinking_turn(),
            bytes: 700,
        },
        Reply::turn(cut.clone()),
    ])
    .await;
    let turn = complete(&client(&server), &request()).await.unwrap();
    assert_eq!(turn.finish_reason, FinishReason::Length);
    assert_eq!(turn.tool_calls, cut.tool_calls);
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn a_refused_key_names_where_it_came_from_and_the_url() {
    let server = server(vec![Reply::status(401, "invalid x-api-key")]).await;
    let mut config = AnthropicConfig::new(server.base_url(), "claude-test");
    config.api_key = Some("wrong".into());
    config.api_key_origin = Some("modelProviders.anthropic[0].envKey MY_KEY".into());
    let err = complete(&AnthropicClient::new(config).unwrap(), &request())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("invalid x-api-key"), "{text}");
    assert!(text.contains("MY_KEY"), "{text}");
    assert!(
        text.contains(&format!("{}/v1/messages", server.base_url())),
        "{text}"
    );
}

#[tokio::test]
async fn the_fake_catches_a_dropped_thinking_block_and_an_unanswered_tool_use() {
    let server = server(vec![Reply::turn(thinking_turn()), Reply::text("ok")]).await;
    let c = client(&server);
    let turn = complete(&c, &request()).await.unwrap();
    let mut req = follow_up(&turn);
    // The assistant message without its thinking, and the second result left out.
    if let Message::Assistant { reasoning, .. } = &mut req.messages[2] {
        reasoning.clear();
    }
    req.messages.remove(4);
    complete(&c, &req).await.unwrap();
    let violations = server.violations().join("\n");
    assert!(
        violations.contains("thinking blocks sent back"),
        "{violations}"
    );
    assert!(violations.contains("toolu_b"), "{violations}");
}

#[test]
fn a_forced_tool_thinking_and_sampling_take_the_apis_shape() {
    let mut config = AnthropicConfig::new("http://x", "claude-test");
    config.sampling = crate::Sampling {
        temperature: Some(0.5),
        top_k: Some(40),
        max_tokens: Some(4000),
        presence_penalty: Some(1.0),
        ..Default::default()
    };
    config.cache_control = false;
    let mut req = request();
    req.tool_choice = Some("glob".into());
    // A call whose arguments are not an object still gives a valid tool use.
    req.messages.push(Message::Assistant {
        text: String::new(),
        tool_calls: vec![ToolCall {
            id: "toolu_x".into(),
            name: "glob".into(),
            arguments: "{not json".into(),
        }],
        reasoning: vec![OpaquePart {
            format: "gemini".into(),
            value: json!({"thoughtSignature": "abc"}),
        }],
    });
    let body = serde_json::to_value(wire::request_body(&config, &req)).unwrap();
    assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "glob"}));
    assert_eq!(body["max_tokens"], 4000);
    assert_eq!(body["temperature"], 0.5);
    assert_eq!(body["top_k"], 40);
    assert!(body.get("presence_penalty").is_none());
    assert!(body.get("thinking").is_none());
    assert!(body["system"][0].get("cache_control").is_none());
    assert!(body["tools"][1].get("cache_control").is_none());
    // Another format's part is left out; the call's input is an empty object.
    assert_eq!(
        body["messages"][1]["content"],
        json!([{"type": "tool_use", "id": "toolu_x", "name": "glob", "input": {}}])
    );
    config.thinking_budget = Some(2048);
    let body = serde_json::to_value(wire::request_body(&config, &req)).unwrap();
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    // With thinking on the API takes no forced tool.
    assert!(body.get("tool_choice").is_none());
}

#[tokio::test]
async fn cancelling_while_the_server_is_silent_stops_at_once() {
    // The answer comes ten minutes after the request was recorded.
    let server = server(vec![Reply::Delayed {
        delay: Duration::from_secs(600),
        then: Box::new(Reply::text("late")),
    }])
    .await;
    let c = client(&server);
    let cancel = CancellationToken::new();
    let req = request();
    let run = c.complete(&req, &cancel);
    let canceller = async {
        while server.requests().is_empty() {
            tokio::task::yield_now().await;
        }
        cancel.cancel();
    };
    let (result, ()) = tokio::time::timeout(Duration::from_secs(20), async {
        tokio::join!(run, canceller)
    })
    .await
    .expect("cancel was not prompt");
    assert!(matches!(result, Err(ModelError::Cancelled)));
}

#[test]
fn a_requests_own_sampling_goes_over_the_clients() {
    let mut config = AnthropicConfig::new("http://x", "claude-test");
    config.sampling = crate::Sampling {
        temperature: Some(0.5),
        top_k: Some(40),
        max_tokens: Some(4000),
        ..Default::default()
    };
    let mut req = request();
    // An MCP server's sampling request: its limit and temperature, the client's others.
    req.sampling = Some(crate::Sampling {
        max_tokens: Some(100),
        temperature: Some(0.7),
        ..Default::default()
    });
    let body = serde_json::to_value(wire::request_body(&config, &req)).unwrap();
    assert_eq!(body["max_tokens"], 100);
    assert!((body["temperature"].as_f64().unwrap() - 0.7).abs() < 1e-9);
    assert_eq!(body["top_k"], 40);
}
