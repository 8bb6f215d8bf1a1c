#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{OpenAiClient, OpenAiConfig, RetryPolicy, ToolCall};

use super::*;

fn client(server: &FakeOpenAi) -> Arc<dyn Model> {
    let mut config = OpenAiConfig::new(server.base_url(), "m");
    config.retry = RetryPolicy {
        max_attempts: 1,
        base_delay: Duration::from_millis(1),
        ..Default::default()
    };
    Arc::new(OpenAiClient::new(config).unwrap())
}

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments: format!("{{\"n\":\"{id}\"}}"),
    }
}

/// `turns` exchanges: a prompt, an answer with `calls` tool calls and their results (the
/// second failed, the third with an image), then a final answer. Each text is `size`
/// characters.
fn history(turns: usize, calls: usize, size: usize) -> Vec<Message> {
    let filler = "x".repeat(size);
    let mut h = Vec::new();
    for t in 0..turns {
        h.push(Message::user_text(format!("prompt {t} {filler}")));
        if calls > 0 {
            let cs: Vec<ToolCall> = (0..calls)
                .map(|c| call(&format!("t{t}c{c}"), "read_file"))
                .collect();
            h.push(Message::Assistant {
                text: String::new(),
                tool_calls: cs.clone(),
                reasoning: Vec::new(),
            });
            for (n, c) in cs.into_iter().enumerate() {
                h.push(Message::Tool {
                    call_id: c.id,
                    text: format!("result {filler}"),
                    is_error: n == 1,
                    images: (n == 2)
                        .then(|| toolbelt_model::ToolImage {
                            mime_type: "image/png".into(),
                            data: b"\x89PNG".to_vec(),
                        })
                        .into_iter()
                        .collect(),
                });
            }
        }
        h.push(Message::Assistant {
            text: format!("answer {t} {filler}"),
            tool_calls: Vec::new(),
            reasoning: Vec::new(),
        });
    }
    h
}

/// Every tool result follows the call it answers, every call is answered before the
/// next assistant or user prompt.
fn assert_well_formed(h: &[Message]) {
    let mut open: HashSet<String> = HashSet::new();
    for m in h {
        match m {
            Message::Assistant { tool_calls, .. } => {
                assert!(
                    open.is_empty(),
                    "unanswered calls {open:?} before an answer"
                );
                open = tool_calls.iter().map(|c| c.id.clone()).collect();
            }
            Message::Tool { call_id, .. } => {
                assert!(open.remove(call_id), "a result without its call: {call_id}");
            }
            Message::User(_) => assert!(open.is_empty(), "unanswered calls {open:?}"),
            Message::System(_) => {}
        }
    }
    assert!(open.is_empty(), "unanswered calls at the end: {open:?}");
}

#[tokio::test]
async fn the_older_part_becomes_the_models_summary_and_the_recent_part_stays() {
    let server = FakeOpenAi::start(vec![Reply::text("## Goal\nFix the parser.")])
        .await
        .unwrap();
    let model = client(&server);
    let h = history(6, 3, 200);
    let out = compress(&*model, &h, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.summary, "## Goal\nFix the parser.");
    assert_well_formed(&out.history);
    match &out.history[0] {
        Message::User(parts) => match &parts[0] {
            UserPart::Text(t) => {
                assert!(t.starts_with(SUMMARY_HEADING), "{t}");
                assert!(t.ends_with("Fix the parser."), "{t}");
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    // The kept part is the end of the old history, starting with a prompt.
    let kept = &out.history[2..];
    assert!(!kept.is_empty());
    assert_eq!(kept, &h[h.len() - kept.len()..]);
    assert!(matches!(kept[0], Message::User(_)));
    assert!(out.after_chars < out.before_chars);
    assert_eq!(out.before_messages, h.len());

    // One request, without tools, carrying the older part as text.
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    assert!(
        body.get("tools")
            .is_none_or(|t| t.as_array().is_some_and(Vec::is_empty))
    );
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["role"], "system");
    let text = messages[1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let text = if text.is_empty() {
        messages[1]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    } else {
        text
    };
    assert!(text.contains("[user]\nprompt 0 "), "{text}");
    assert!(
        text.contains("(calls read_file with {\"n\":\"t0c1\"})"),
        "{text}"
    );
    assert!(text.contains("[result of read_file]\nresult "), "{text}");
    // A failed result is marked; an image is named, not sent.
    assert!(
        text.contains("[result of read_file, failed]\nresult "),
        "{text}"
    );
    assert!(text.contains("\n[an image, image/png]"), "{text}");
    assert!(!text.contains("base64"), "{text}");
    // The kept part keeps its results whole: error marks and images.
    assert!(
        kept.iter()
            .any(|m| matches!(m, Message::Tool { is_error: true, .. }))
    );
    assert!(
        kept.iter()
            .any(|m| matches!(m, Message::Tool { images, .. } if images.len() == 1))
    );
    assert!(
        !text.contains("prompt 5 "),
        "the kept part is not summarised"
    );
    assert!(server.violations().is_empty(), "{:?}", server.violations());
}

#[test]
fn the_split_never_separates_a_call_from_its_result() {
    for turns in 1..8 {
        for calls in 0..4 {
            for size in [1, 50, 3000] {
                let h = history(turns, calls, size);
                let split = split_point(&h);
                assert_well_formed(&h[..split]);
                assert_well_formed(&h[split..]);
                if split < h.len() {
                    assert!(matches!(h[split], Message::User(_)));
                    assert!(matches!(
                        &h[split - 1],
                        Message::Assistant { tool_calls, .. } if tool_calls.is_empty()
                    ));
                }
            }
        }
    }
    // One long turn still in its tool calls: no prompt boundary, everything summarised.
    let mut h = history(1, 3, 10);
    h.pop();
    assert_eq!(split_point(&h), h.len());
}

#[tokio::test]
async fn too_little_history_an_empty_summary_and_a_failing_model_change_nothing() {
    let server = FakeOpenAi::start(vec![Reply::text("  "), Reply::status(401, "bad key")])
        .await
        .unwrap();
    let model = client(&server);
    let none = CancellationToken::new();
    assert!(matches!(
        compress(&*model, &[Message::user_text("hi")], &none).await,
        Err(CompressError::NothingToCompress)
    ));
    let h = history(3, 1, 100);
    assert!(matches!(
        compress(&*model, &h, &none).await,
        Err(CompressError::EmptySummary)
    ));
    let err = compress(&*model, &h, &none).await.unwrap_err();
    assert!(matches!(err, CompressError::Model(_)), "{err}");
    assert!(err.to_string().contains("could not summarise"), "{err}");
}

#[test]
fn a_huge_history_is_bounded_in_the_transcript() {
    let h = history(40, 1, 20_000);
    let text = transcript(&h);
    assert!(text.len() <= MAX_TRANSCRIPT_CHARS + 200, "{}", text.len());
    assert!(text.contains("characters of the middle of the session left out"));
    assert!(text.contains("prompt 0 "), "the goal stays");
    assert!(text.contains("answer 39 "), "the latest stays");
    assert!(
        text.contains("characters left out"),
        "each message is capped"
    );
}
