//! The Gemini client against the fake Gemini server on 127.0.0.1 (real HTTP, real
//! streaming, a server that checks every request and plays a thinking model), the
//! schema subset, and the official Python SDK against the same fake.

use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::fake_gemini::{FakeGemini, GeminiReply};
use crate::{FinishReason, Message, ModelTurn, ToolSpec, Usage};

fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_retry_after: Duration::from_secs(1),
    }
}

fn model(server: &FakeGemini) -> GeminiModel {
    let mut config = GeminiConfig::new(server.base_url(), "gemini-fake");
    config.api_key = Some("test-key".into());
    config.retry = quick_retries();
    config.request_timeout = Duration::from_secs(10);
    GeminiModel::new(config).unwrap()
}

/// Tools as toolbelt declares them: schemars output, with the keywords Gemini refuses.
fn tools() -> Vec<ToolSpec> {
    let spec = |name: &str, parameters: Value| ToolSpec {
        name: name.into(),
        description: format!("The {name} tool."),
        parameters,
    };
    vec![
        spec(
            "glob",
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "title": "GlobArgs",
            "type": "object", "additionalProperties": false, "required": ["pattern"],
            "properties": {"pattern": {"type": "string"}, "path": {"type": ["string", "null"], "default": null}}}),
        ),
        spec(
            "read_file",
            json!({"type": "object", "required": ["path"],
            "properties": {"path": {"type": "string"}, "limit": {"type": ["integer", "null"], "format": "uint", "minimum": 0}}}),
        ),
        spec(
            "grep_search",
            json!({"type": "object", "properties": {"pattern": {"type": "string"},
            "mode": {"$ref": "#/$defs/Mode"}}, "$defs": {"Mode": {"oneOf": [{"const": "content"}, {"const": "files"}]}}}),
        ),
        spec(
            "edit",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}}}),
        ),
        spec(
            "shell",
            json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        ),
        spec(
            "todo_write",
            json!({"type": "object", "properties": {"todos": {"type": "array",
            "items": {"type": "object", "properties": {"content": {"type": "string"}, "status": {"enum": ["pending", "done", 3]}}}}}}),
        ),
    ]
}

fn usage(prompt: u64, completion: u64) -> Usage {
    Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        cache_read_tokens: 8,
        reasoning_tokens: 5,
        ..Default::default()
    }
}

/// The seven-call session: a retried 429, parallel calls, a tool result that is an error,
/// an error mid-stream and a dropped connection (both retried), then a final answer.
fn session_script() -> Vec<GeminiReply> {
    let with_usage = |reply: GeminiReply, u: Usage| match reply {
        GeminiReply::Turn(mut t) => {
            t.usage = Some(u);
            GeminiReply::Turn(t)
        }
        other => other,
    };
    let fix = GeminiReply::calls(
        "Fixing it.",
        &[(
            "c5",
            "edit",
            json!({"path": "src/lib.rs", "old": "a", "new": "b"}),
        )],
    );
    let GeminiReply::Turn(fix_turn) = fix.clone() else {
        unreachable!()
    };
    let tests = GeminiReply::calls(
        "",
        &[
            ("c6", "shell", json!({"command": "cargo test"})),
            ("c7", "read_file", json!({"path": "target/log"})),
        ],
    );
    let GeminiReply::Turn(tests_turn) = tests.clone() else {
        unreachable!()
    };
    vec![
        GeminiReply::Status {
            status: 429,
            retry_after: Some("0".into()),
            message: "Resource has been exhausted (e.g. check quota).".into(),
        },
        GeminiReply::calls(
            "Looking around.",
            &[("c1", "glob", json!({"pattern": "**/*.rs"}))],
        ),
        GeminiReply::calls(
            "",
            &[
                ("c2", "read_file", json!({"path": "src/lib.rs"})),
                ("c3", "read_file", json!({"path": "missing.rs"})),
                (
                    "c4",
                    "grep_search",
                    json!({"pattern": "fn main", "mode": "content"}),
                ),
            ],
        ),
        GeminiReply::ErrorMidStream {
            turn: fix_turn,
            message: "Internal error encountered.".into(),
        },
        fix,
        GeminiReply::Drop {
            turn: tests_turn,
            bytes: 300,
        },
        tests,
        GeminiReply::calls(
            "",
            &[(
                "c8",
                "todo_write",
                json!({"todos": [{"content": "ship", "status": "done"}]}),
            )],
        ),
        with_usage(
            GeminiReply::text("All done: «ünïcode» kept."),
            usage(900, 40),
        ),
        GeminiReply::text("You're welcome."),
    ]
}

#[tokio::test]
async fn a_seven_call_session_with_retries_sends_every_signature_and_result_back() {
    let server = FakeGemini::start(session_script()).await.unwrap();
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
    let turns = crate::test_support::drive(&m, &mut request).await;
    let calls: Vec<&str> = turns
        .iter()
        .flat_map(|t| &t.tool_calls)
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(calls, ["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"]);
    assert_eq!(turns[0].text, "Looking around.");
    assert_eq!(turns[0].finish_reason, FinishReason::ToolCalls);
    // Compared as JSON: the order of keys depends on serde_json's features, which the
    // workspace unifies.
    let arguments: serde_json::Value =
        serde_json::from_str(&turns[1].tool_calls[2].arguments).unwrap();
    assert_eq!(
        arguments,
        serde_json::json!({"mode": "content", "pattern": "fn main"})
    );
    let last = turns.last().unwrap();
    assert_eq!(
        last.text, "All done: «ünïcode» kept.",
        "the thought summary is not the answer"
    );
    assert_eq!(last.finish_reason, FinishReason::Stop);
    assert_eq!(last.usage, Some(usage(900, 40)));
    // The final answer's signature goes back with the next question.
    request.messages.push(Message::user_text("thanks"));
    let thanks = crate::test_support::drive(&m, &mut request).await;
    assert_eq!(thanks[0].text, "You're welcome.");
    assert_eq!(server.violations(), Vec::<String>::new());
    assert_eq!(server.unused(), 0);
    // The error result reached the model as the response of its call, under `error`.
    let requests = server.requests();
    let body = &requests[4].body;
    let responses: Vec<&Value> = body["contents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["parts"].as_array().unwrap())
        .filter_map(|p| p.get("functionResponse"))
        .collect();
    assert!(
        responses.contains(&&json!({"id": "c3", "name": "read_file",
        "response": {"error": "Error: missing.rs does not exist"}})),
        "{responses:?}"
    );
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "You are a test."}]})
    );
    assert_eq!(requests[0].header("x-goog-api-key"), Some("test-key"));
    assert_eq!(
        requests[0].path,
        "/v1beta/models/gemini-fake:streamGenerateContent?alt=sse"
    );
}

#[tokio::test]
async fn a_dropped_thought_signature_is_refused_loudly() {
    let server = FakeGemini::start(vec![
        GeminiReply::calls("", &[("c1", "glob", json!({"pattern": "*"}))]),
        GeminiReply::text("unreachable"),
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
    assert!(!turn.reasoning.is_empty());
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
        matches!(&err, ModelError::Rejected { status: 400, message } if message.contains("thought_signature")),
        "{err}"
    );
    assert!(
        server
            .violations()
            .iter()
            .any(|v| v.contains("without its thoughtSignature")),
        "{:?}",
        server.violations()
    );
}

#[tokio::test]
async fn finish_reasons_become_clear_outcomes() {
    let turn = |reason: &str| {
        GeminiReply::Turn(ModelTurn {
            finish_reason: FinishReason::Other(reason.into()),
            ..Default::default()
        })
    };
    let server = FakeGemini::start(vec![
        turn("MAX_TOKENS"),
        turn("SAFETY"),
        turn("MALFORMED_FUNCTION_CALL"),
    ])
    .await
    .unwrap();
    let m = model(&server);
    let request = ModelRequest {
        messages: vec![Message::user_text("go")],
        tools: tools(),
        tool_choice: None,
        sampling: None,
    };
    let mut outcomes = Vec::new();
    for _ in 0..3 {
        let t = m
            .complete(&request, &CancellationToken::new())
            .await
            .unwrap();
        assert!(t.tool_calls.is_empty());
        outcomes.push((t.finish_reason, t.text));
    }
    assert_eq!(outcomes[0].0, FinishReason::Length);
    assert!(outcomes[0].1.contains("MAX_TOKENS"), "{}", outcomes[0].1);
    assert_eq!(outcomes[1].0, FinishReason::ContentFilter);
    assert!(outcomes[1].1.contains("SAFETY"), "{}", outcomes[1].1);
    assert_eq!(
        outcomes[2].0,
        FinishReason::Other("malformed_function_call".into())
    );
    assert!(
        outcomes[2].1.contains("no tool was run"),
        "{}",
        outcomes[2].1
    );
}

#[tokio::test]
async fn vertex_ai_differs_only_in_the_path_and_the_bearer_token() {
    let server = FakeGemini::start(vec![GeminiReply::text("hi")])
        .await
        .unwrap();
    let mut config = GeminiConfig::vertex("proj-1", "us-central1", "gemini-fake");
    assert_eq!(
        config.base_url,
        "https://us-central1-aiplatform.googleapis.com"
    );
    config.base_url = server.base_url();
    config.api_key = Some("ya29.token".into());
    let m = GeminiModel::new(config).unwrap();
    let request = ModelRequest {
        messages: vec![Message::user_text("go")],
        ..Default::default()
    };
    assert_eq!(
        m.complete(&request, &CancellationToken::new())
            .await
            .unwrap()
            .text,
        "hi"
    );
    let r = &server.requests()[0];
    assert_eq!(
        r.path,
        "/v1/projects/proj-1/locations/us-central1/publishers/google/models/gemini-fake:streamGenerateContent?alt=sse"
    );
    assert_eq!(r.header("authorization"), Some("Bearer ya29.token"));
    assert_eq!(r.header("x-goog-api-key"), None);
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[tokio::test]
async fn vertex_ai_express_mode_takes_the_key_on_the_global_path() {
    let server = FakeGemini::start(vec![GeminiReply::text("hi")])
        .await
        .unwrap();
    let mut config = GeminiConfig::vertex_express("gemini-fake");
    assert_eq!(config.base_url, "https://aiplatform.googleapis.com");
    config.base_url = server.base_url();
    config.api_key = Some("vertex-key".into());
    let m = GeminiModel::new(config).unwrap();
    let request = ModelRequest {
        messages: vec![Message::user_text("go")],
        ..Default::default()
    };
    let turn = m
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(turn.text, "hi");
    let r = &server.requests()[0];
    assert_eq!(
        r.path,
        "/v1/publishers/google/models/gemini-fake:streamGenerateContent?alt=sse"
    );
    assert_eq!(r.header("x-goog-api-key"), Some("vertex-key"));
    assert_eq!(r.header("authorization"), None);
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[tokio::test]
async fn sampling_goes_in_generation_config_and_custom_headers_on_every_attempt() {
    let server = FakeGemini::start(vec![
        GeminiReply::Status {
            status: 429,
            retry_after: None,
            message: "slow down".into(),
        },
        GeminiReply::text("one"),
        GeminiReply::text("two"),
    ])
    .await
    .unwrap();
    let mut config = GeminiConfig::new(server.base_url(), "gemini-fake");
    config.api_key = Some("test-key".into());
    config.retry = quick_retries();
    config.sampling = crate::Sampling {
        temperature: Some(0.25),
        top_p: Some(0.9),
        top_k: Some(40),
        max_tokens: Some(2048),
        presence_penalty: Some(0.5),
        frequency_penalty: Some(-0.5),
    };
    config.headers = vec![("x-team".into(), "tools".into())];
    let m = GeminiModel::new(config).unwrap();
    let mut request = ModelRequest {
        messages: vec![Message::user_text("go")],
        ..Default::default()
    };
    crate::test_support::drive(&m, &mut request).await;
    request.messages.push(Message::user_text("again"));
    crate::test_support::drive(&m, &mut request).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "a retry, then two requests");
    for r in &requests {
        assert_eq!(r.header("x-team"), Some("tools"), "{}", r.path);
        assert_eq!(r.header("x-goog-api-key"), Some("test-key"));
        assert_eq!(
            r.body["generationConfig"],
            json!({"temperature": 0.25, "topP": 0.9, "topK": 40, "maxOutputTokens": 2048,
                "presencePenalty": 0.5, "frequencyPenalty": -0.5})
        );
    }
    assert_eq!(server.violations(), Vec::<String>::new());
    // Nothing set, nothing sent: the server's defaults stay.
    let body = wire::request_body(&request, &crate::Sampling::default());
    assert!(body.get("generationConfig").is_none(), "{body}");
    // A header HTTP cannot carry is a configuration error naming it.
    let mut bad = GeminiConfig::new(server.base_url(), "gemini-fake");
    bad.headers = vec![("bad header".into(), "x".into())];
    let err = GeminiModel::new(bad).err().unwrap().to_string();
    assert!(err.contains("'bad header'"), "{err}");
}

#[tokio::test]
async fn cancelling_during_a_long_retry_after_stops_at_once() {
    let server = FakeGemini::start(vec![GeminiReply::Status {
        status: 429,
        retry_after: Some("30".into()),
        message: "slow down".into(),
    }])
    .await
    .unwrap();
    let mut config = GeminiConfig::new(server.base_url(), "gemini-fake");
    config.api_key = Some("k".into());
    config.retry.max_retry_after = Duration::from_secs(60);
    let m = GeminiModel::new(config).unwrap();
    let cancel = CancellationToken::new();
    let request = ModelRequest {
        messages: vec![Message::user_text("go")],
        ..Default::default()
    };
    let canceller = cancel.clone();
    let started = std::time::Instant::now();
    let (result, ()) = tokio::join!(m.complete(&request, &cancel), async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        canceller.cancel();
    });
    assert!(matches!(result, Err(ModelError::Cancelled)), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn schemas_are_cut_to_the_subset_gemini_accepts() {
    let tools = tools();
    let glob = schema::compliant(&tools[0].parameters);
    assert_eq!(
        glob,
        json!({"title": "GlobArgs", "type": "object", "required": ["pattern"],
        "properties": {"pattern": {"type": "string"}, "path": {"type": "string", "nullable": true}}})
    );
    let grep = schema::compliant(&tools[2].parameters);
    assert_eq!(
        grep["properties"]["mode"],
        json!({"anyOf": [
        {"type": "string", "enum": ["content"]}, {"type": "string", "enum": ["files"]}]})
    );
    let todo = schema::compliant(&tools[5].parameters);
    assert_eq!(
        todo["properties"]["todos"]["items"]["properties"]["status"],
        json!({"enum": ["pending", "done"]})
    );
    let read = schema::compliant(&tools[1].parameters);
    assert_eq!(
        read["properties"]["limit"],
        json!({"type": "integer", "nullable": true, "minimum": 0})
    );
    // A cycle through `$ref` ends; no parameters at all is still an object.
    let cyclic = json!({"$ref": "#/$defs/Node", "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}});
    assert_eq!(schema::compliant(&cyclic)["type"], "object");
    assert_eq!(schema::compliant(&json!(true)), json!({"type": "object"}));
    assert_eq!(
        schema::compliant(&json!({"type": ["string", "integer"]})),
        json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
    );
}

#[tokio::test]
async fn a_failed_result_is_an_error_response_and_images_follow_the_responses() {
    use crate::test_support::{PNG_BASE64, answer_with_error_and_image};
    let server = FakeGemini::start(vec![
        GeminiReply::calls(
            "",
            &[("c1", "glob", json!({})), ("c2", "read_file", json!({}))],
        ),
        GeminiReply::text("ok"),
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
    let contents = server.requests()[1].body["contents"].clone();
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"id": "c1", "name": "glob", "response": {"error": "no such directory"}}},
            {"functionResponse": {"id": "c2", "name": "read_file", "response": {"output":
                "Error: printed by the program\n[image/png attached after the function responses]"}}},
            {"inlineData": {"mimeType": "image/png", "data": PNG_BASE64}},
        ]})
    );
}

#[test]
fn calls_without_ids_get_made_up_ones_that_are_not_sent_back() {
    let mut a = stream::TurnAssembler::default();
    a.apply(r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"glob","args":{"pattern":"*"}},"thoughtSignature":"c2ln"},{"functionCall":{"name":"glob","args":{}}}]},"finishReason":"STOP"}]}"#, &|_| {}).unwrap();
    let turn = a.into_turn();
    assert_eq!(turn.tool_calls.len(), 2);
    assert_ne!(turn.tool_calls[0].id, turn.tool_calls[1].id);
    let mut request = ModelRequest {
        messages: vec![Message::user_text("go")],
        ..Default::default()
    };
    request.messages.push(Message::Assistant {
        text: String::new(),
        tool_calls: turn.tool_calls.clone(),
        reasoning: turn.reasoning,
    });
    for c in &turn.tool_calls {
        request.messages.push(Message::Tool {
            call_id: c.id.clone(),
            text: "ok".into(),
            is_error: false,
            images: Vec::new(),
        });
    }
    let body = wire::request_body(&request, &crate::Sampling::default());
    assert_eq!(
        body["contents"][1]["parts"],
        json!([
            {"functionCall": {"name": "glob", "args": {"pattern": "*"}}, "thoughtSignature": "c2ln"},
            {"functionCall": {"name": "glob", "args": {}}},
        ])
    );
    assert_eq!(
        body["contents"][2]["parts"][1],
        json!({"functionResponse": {"name": "glob", "response": {"output": "ok"}}})
    );
}

#[test]
fn a_refused_prompt_and_an_error_chunk_are_told_apart() {
    let mut a = stream::TurnAssembler::default();
    a.apply(r#"{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":3,"totalTokenCount":3}}"#, &|_| {}).unwrap();
    assert!(a.is_complete());
    let turn = a.into_turn();
    assert_eq!(turn.finish_reason, FinishReason::ContentFilter);
    assert!(turn.text.contains("PROHIBITED_CONTENT"), "{}", turn.text);
    let mut b = stream::TurnAssembler::default();
    let err = b
        .apply(
            r#"{"error":{"code":500,"message":"backend died","status":"INTERNAL"}}"#,
            &|_| {},
        )
        .unwrap_err();
    assert!(err.contains("backend died"), "{err}");
}

/// The session of the SDK test: a 429, then eight calls over five answers, then text.
fn sdk_script() -> Vec<GeminiReply> {
    session_script()
        .into_iter()
        .filter(|r| matches!(r, GeminiReply::Turn(_) | GeminiReply::Status { .. }))
        .take(7)
        .collect()
}

#[tokio::test]
async fn the_official_python_sdk_parses_every_scripted_turn() {
    let Some(python) = crate::test_support::python("google-genai") else {
        return;
    };
    let server = FakeGemini::start(sdk_script()).await.unwrap();
    let lines = crate::test_support::run(&python, "gemini_client.py", &[&server.base_url()]).await;
    let expected: Vec<Value> = sdk_script()
        .iter()
        .map(|r| match r {
            GeminiReply::Status { status, .. } => json!({"error": status, "status": "RESOURCE_EXHAUSTED"}),
            GeminiReply::Turn(t) => json!({
                "text": t.text,
                "thoughts": 1,
                "calls": t.tool_calls.iter().map(|c| json!([c.id, c.name, serde_json::from_str::<Value>(&c.arguments).unwrap()])).collect::<Vec<_>>(),
                "signatures": 1,
                "finish": "STOP",
                "total_tokens": t.usage.map_or(0, |u| u.total_tokens),
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
    // Every chunk, strictly: no field the SDK's types do not know, no unknown enum value.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chunks.json");
    let chunks = server.chunks_sent();
    std::fs::write(&file, serde_json::to_string(&chunks).unwrap()).unwrap();
    let file = file.to_string_lossy().into_owned();
    let validated =
        crate::test_support::run(&python, "gemini_client.py", &["--validate", &file]).await;
    assert_eq!(validated, [json!({"validated": chunks.len()})]);
}
