//! The fake server's Anthropic Messages dialect: the answer as named server-sent events
//! (`message_start`, `content_block_start/delta/stop`, `message_delta`, `message_stop`,
//! with a `ping`), errors in Anthropic's shape, and the checks of a Messages request,
//! written from the API reference.
//!
//! A scripted turn's `reasoning` parts of format `anthropic` are streamed as thinking
//! blocks (`thinking_delta`, then `signature_delta`) or as a `redacted_thinking` block
//! whole; the checks then want every one back, unchanged, in the assistant messages of
//! later requests, before that message's text and tool uses.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::{FinishReason, ModelTurn, ToolCall};

/// The thinking blocks a turn carries, as sent.
pub(super) fn thinking_blocks(turn: &ModelTurn) -> Vec<Value> {
    turn.reasoning
        .iter()
        .filter(|p| p.format == "anthropic")
        .map(|p| p.value.clone())
        .collect()
}

fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// An `error` event.
pub(super) fn error_event(kind: &str, message: &str) -> String {
    event(
        "error",
        &json!({"type": "error", "error": {"type": kind, "message": message}}),
    )
}

/// An error response's body for `status`.
pub(super) fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

fn stop_reason(turn: &ModelTurn) -> &str {
    match &turn.finish_reason {
        FinishReason::Stop if !turn.tool_calls.is_empty() => "tool_use",
        FinishReason::Stop => "end_turn",
        FinishReason::ToolCalls => "tool_use",
        FinishReason::Length => "max_tokens",
        FinishReason::ContentFilter => "refusal",
        FinishReason::Other(s) => s,
    }
}

/// The usage object: Anthropic counts input without the cached part.
fn usage(turn: &ModelTurn, output: bool) -> Value {
    let u = turn.usage.unwrap_or_default();
    let cached = u.cache_read_tokens + u.cache_write_tokens;
    json!({
        "input_tokens": u.prompt_tokens.saturating_sub(cached),
        "output_tokens": if output { u.completion_tokens } else { 1 },
        "cache_creation_input_tokens": u.cache_write_tokens,
        "cache_read_input_tokens": u.cache_read_tokens,
    })
}

fn input(arguments: &str) -> Value {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}))
}

/// The events of a streamed turn: thinking, text in two deltas, each tool use's input in
/// pieces of five characters, the stop reason, the end.
pub(super) fn sse_body(turn: &ModelTurn) -> String {
    let start = json!({"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "content": [],
        "model": "fake", "stop_reason": null, "stop_sequence": null,
        "usage": usage(turn, false)}});
    let mut out = event("message_start", &start);
    out.push_str(&event("ping", &json!({"type": "ping"})));
    let mut index = 0;
    let mut block = |out: &mut String, start: Value, deltas: Vec<Value>| {
        out.push_str(&event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for delta in deltas {
            out.push_str(&event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        out.push_str(&event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    };
    for thinking in thinking_blocks(turn) {
        let field = |k: &str| thinking.get(k).and_then(Value::as_str).unwrap_or("");
        if field("type") == "thinking" {
            let deltas = vec![
                json!({"type": "thinking_delta", "thinking": field("thinking")}),
                json!({"type": "signature_delta", "signature": field("signature")}),
            ];
            block(
                &mut out,
                json!({"type": "thinking", "thinking": ""}),
                deltas,
            );
        } else {
            block(&mut out, thinking.clone(), Vec::new());
        }
    }
    if !turn.text.is_empty() {
        let mid = turn
            .text
            .char_indices()
            .nth(turn.text.chars().count() / 2)
            .map_or(0, |(i, _)| i);
        let deltas = [&turn.text[..mid], &turn.text[mid..]]
            .iter()
            .map(|t| json!({"type": "text_delta", "text": t}))
            .collect();
        block(&mut out, json!({"type": "text", "text": ""}), deltas);
    }
    for call in &turn.tool_calls {
        let text = input(&call.arguments).to_string();
        let chars: Vec<char> = text.chars().collect();
        let deltas = chars
            .chunks(5)
            .map(|p| json!({"type": "input_json_delta", "partial_json": p.iter().collect::<String>()}))
            .collect();
        let start = json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}});
        block(&mut out, start, deltas);
    }
    out.push_str(&event(
        "message_delta",
        &json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason(turn), "stop_sequence": null},
            "usage": usage(turn, true)}),
    ));
    out.push_str(&event("message_stop", &json!({"type": "message_stop"})));
    out
}

/// A whole (not streamed) message.
pub(super) fn whole_body(turn: &ModelTurn) -> Value {
    let mut content = thinking_blocks(turn);
    if !turn.text.is_empty() {
        content.push(json!({"type": "text", "text": turn.text}));
    }
    for c in &turn.tool_calls {
        content.push(
            json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input(&c.arguments)}),
        );
    }
    json!({"id": "msg_fake", "type": "message", "role": "assistant", "model": "fake",
        "content": content, "stop_reason": stop_reason(turn), "stop_sequence": null,
        "usage": usage(turn, true)})
}

/// The headers the API requires.
pub(super) fn check_headers(headers: &[(String, String)]) -> Vec<String> {
    let has = |name: &str| headers.iter().any(|(k, v)| k == name && !v.is_empty());
    let mut problems = Vec::new();
    if !has("anthropic-version") {
        problems.push("no anthropic-version header".to_string());
    }
    if !has("x-api-key") && !has("authorization") {
        problems.push("neither x-api-key nor authorization sent".to_string());
    }
    problems
}

/// The invariants of one Messages request body.
pub(super) fn check_request(body: &Value, sent: &[ToolCall], thinking: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    if body
        .get("model")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        problems.push("no model named".to_string());
    }
    let max_tokens = body.get("max_tokens").and_then(Value::as_u64).unwrap_or(0);
    if max_tokens == 0 {
        problems.push("no max_tokens (the API requires it)".to_string());
    }
    if let Some(budget) = body
        .pointer("/thinking/budget_tokens")
        .and_then(Value::as_u64)
        && (budget < 1024 || budget >= max_tokens)
    {
        problems.push(format!(
            "thinking budget {budget} must be at least 1024 and below max_tokens {max_tokens}"
        ));
    }
    check_tools(body, &mut problems);
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        problems.push("no messages array".to_string());
        return problems;
    };
    let (seen_calls, seen_thinking) = check_conversation(messages, &mut problems);
    let sent_calls: Vec<(String, String, Value)> = sent
        .iter()
        .map(|c| (c.id.clone(), c.name.clone(), input(&c.arguments)))
        .collect();
    if seen_calls != sent_calls {
        problems.push(format!(
            "the conversation's tool uses {:?} differ from the ones the server sent {:?}",
            seen_calls, sent_calls
        ));
    }
    if seen_thinking != thinking {
        problems.push(format!(
            "the thinking blocks sent back {seen_thinking:?} differ from the ones the server sent {thinking:?}"
        ));
    }
    problems
}

fn check_tools(body: &Value, problems: &mut Vec<String>) {
    let tools = body.get("tools").and_then(Value::as_array);
    for t in tools.into_iter().flatten() {
        let name = t.get("name").and_then(Value::as_str).unwrap_or("");
        let valid = (1..=64).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            problems.push(format!(
                "tool name '{name}' does not match ^[a-zA-Z0-9_-]{{1,64}}$"
            ));
        }
        if t.pointer("/input_schema/type").and_then(Value::as_str) != Some("object") {
            problems.push(format!("tool '{name}' has no input_schema of type object"));
        }
    }
    if let Some(forced) = body
        .get("tool_choice")
        .filter(|c| c.get("type").and_then(Value::as_str) == Some("tool"))
        .map(|c| c.get("name").and_then(Value::as_str).unwrap_or(""))
        && !tools.is_some_and(|ts| {
            ts.iter()
                .any(|t| t.get("name").and_then(Value::as_str) == Some(forced))
        })
    {
        problems.push(format!(
            "tool_choice forces '{forced}', which is not offered"
        ));
    }
}

/// Roles, each tool use answered in the next user message (results first, each once),
/// thinking before the rest; returns the tool uses and thinking blocks seen.
fn check_conversation(
    messages: &[Value],
    problems: &mut Vec<String>,
) -> (Vec<(String, String, Value)>, Vec<Value>) {
    let mut seen = Seen::default();
    for (i, m) in messages.iter().enumerate() {
        // Borrowed: a long conversation is checked whole at every request.
        let text_block;
        let blocks: &[Value] = match m.get("content") {
            Some(Value::String(s)) => {
                text_block = [json!({"type": "text", "text": s})];
                &text_block
            }
            Some(Value::Array(a)) => a,
            _ => {
                problems.push(format!("message {i}: no content"));
                &[]
            }
        };
        match m.get("role").and_then(Value::as_str).unwrap_or("") {
            "user" => seen.user(i, blocks, problems),
            "assistant" => seen.assistant(i, blocks, problems),
            other => problems.push(format!(
                "message {i}: role '{other}' (only user and assistant)"
            )),
        }
    }
    if !seen.open.is_empty() {
        problems.push(format!("tool uses {:?} are never answered", seen.open));
    }
    (seen.calls, seen.thinking)
}

/// What the conversation held so far.
#[derive(Default)]
struct Seen {
    calls: Vec<(String, String, Value)>,
    thinking: Vec<Value>,
    /// Tool uses of the last assistant message not answered yet.
    open: HashSet<String>,
}

fn kind(block: &Value) -> &str {
    block.get("type").and_then(Value::as_str).unwrap_or("")
}

impl Seen {
    fn user(&mut self, i: usize, blocks: &[Value], problems: &mut Vec<String>) {
        let mut results_done = false;
        for b in blocks {
            if kind(b) != "tool_result" {
                if kind(b) == "image" {
                    check_image(i, b, problems);
                }
                results_done = true;
                continue;
            }
            let id = b.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
            if results_done {
                problems.push(format!(
                    "message {i}: tool_result '{id}' after other content"
                ));
            }
            if !self.open.remove(id) {
                problems.push(format!("message {i}: tool_result for '{id}', which the previous message did not ask for (or was answered already)"));
            }
            if b.get("is_error").is_some_and(|e| !e.is_boolean()) {
                problems.push(format!("message {i}: is_error is not a boolean"));
            }
            check_result_content(i, b.get("content"), problems);
        }
        if !self.open.is_empty() {
            problems.push(format!(
                "message {i}: tool uses {:?} are not answered",
                self.open
            ));
            self.open.clear();
        }
    }

    fn assistant(&mut self, i: usize, blocks: &[Value], problems: &mut Vec<String>) {
        if !self.open.is_empty() {
            problems.push(format!(
                "message {i}: tool uses {:?} are not answered before it",
                self.open
            ));
            self.open.clear();
        }
        let mut other_seen = false;
        for b in blocks {
            match kind(b) {
                "thinking" | "redacted_thinking" => {
                    if other_seen {
                        problems.push(format!(
                            "message {i}: a thinking block after text or a tool use"
                        ));
                    }
                    self.thinking.push(b.clone());
                }
                "tool_use" => {
                    other_seen = true;
                    let s = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    self.open.insert(s("id"));
                    let input = b.get("input").cloned().unwrap_or(Value::Null);
                    self.calls.push((s("id"), s("name"), input));
                }
                _ => other_seen = true,
            }
        }
    }
}

/// A `tool_result`'s `content`: absent, a string, or `text` and `image` blocks.
fn check_result_content(i: usize, content: Option<&Value>, problems: &mut Vec<String>) {
    let blocks = match content {
        None | Some(Value::String(_)) => return,
        Some(Value::Array(blocks)) => blocks,
        Some(other) => {
            problems.push(format!(
                "message {i}: a tool_result whose content is neither text nor blocks: {other}"
            ));
            return;
        }
    };
    for b in blocks {
        match kind(b) {
            "text" if b.get("text").is_some_and(Value::is_string) => {}
            "image" => check_image(i, b, problems),
            other => problems.push(format!(
                "message {i}: a tool_result content block of type '{other}' (text or image)"
            )),
        }
    }
}

/// An `image` block: a base64 source of a media type the API takes.
fn check_image(i: usize, block: &Value, problems: &mut Vec<String>) {
    use base64::Engine;
    let source = |k: &str| {
        block
            .pointer(&format!("/source/{k}"))
            .and_then(Value::as_str)
    };
    let media = source("media_type").unwrap_or("");
    let decodes =
        source("data").is_some_and(|d| base64::engine::general_purpose::STANDARD.decode(d).is_ok());
    if source("type") != Some("base64")
        || !["image/jpeg", "image/png", "image/gif", "image/webp"].contains(&media)
        || !decodes
    {
        problems.push(format!(
            "message {i}: an image block without a base64 source of a JPEG, PNG, GIF or WebP: {block}"
        ));
    }
}
