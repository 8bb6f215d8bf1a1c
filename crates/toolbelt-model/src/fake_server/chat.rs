//! The fake server's OpenAI Chat Completions dialect: a turn as streamed chunks (or a
//! whole response), and the checks of a chat request (tools offered, every tool call
//! answered once and in order, the calls the same as the ones sent).

use std::collections::{HashSet, VecDeque};

use serde_json::{Value, json};

use crate::{FinishReason, ModelTurn, ToolCall};

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let v = json!({
        "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": "fake",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    });
    format!("data: {v}\n\n")
}

fn finish_str(turn: &ModelTurn) -> &str {
    match &turn.finish_reason {
        FinishReason::Stop if !turn.tool_calls.is_empty() => "tool_calls",
        FinishReason::Stop => "stop",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::Length => "length",
        FinishReason::ContentFilter => "content_filter",
        FinishReason::Other(s) => s,
    }
}

/// The SSE text of a turn: text in two deltas, each tool call's arguments in pieces of
/// five characters, the finish reason, then a usage chunk and `[DONE]`.
pub fn sse_body(turn: &ModelTurn) -> String {
    let mut out = chunk(json!({"role": "assistant", "content": ""}), None);
    if !turn.text.is_empty() {
        let mid = turn
            .text
            .char_indices()
            .nth(turn.text.chars().count() / 2)
            .map_or(0, |(i, _)| i);
        for part in [&turn.text[..mid], &turn.text[mid..]] {
            out.push_str(&chunk(json!({"content": part}), None));
        }
    }
    for (i, call) in turn.tool_calls.iter().enumerate() {
        out.push_str(&chunk(
            json!({"tool_calls": [{"index": i, "id": call.id, "type": "function",
                "function": {"name": call.name, "arguments": ""}}]}),
            None,
        ));
        let chars: Vec<char> = call.arguments.chars().collect();
        for piece in chars.chunks(5) {
            let piece: String = piece.iter().collect();
            out.push_str(&chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                None,
            ));
        }
    }
    out.push_str(&chunk(json!({}), Some(finish_str(turn))));
    let usage = turn.usage.unwrap_or_default();
    let usage = json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
        "model": "fake", "choices": [], "usage": usage});
    out.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    out
}

pub(super) fn whole_body(turn: &ModelTurn) -> Value {
    let calls: Vec<Value> = turn
        .tool_calls
        .iter()
        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
        .collect();
    let mut message = json!({"role": "assistant", "content": turn.text});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_str(turn)}],
        "usage": turn.usage.unwrap_or_default()})
}

/// The conversation invariants of one request body.
pub fn check_request(body: &Value, sent: &[ToolCall]) -> Vec<String> {
    let mut problems = Vec::new();
    if body
        .get("model")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        problems.push("no model named".to_string());
    }
    check_tools(body, &mut problems);
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        problems.push("no messages array".to_string());
        return problems;
    };
    let seen_calls = check_conversation(messages, &mut problems);
    if seen_calls != sent {
        problems.push(format!(
            "the conversation's tool calls {:?} differ from the ones the server sent {:?}",
            ids(&seen_calls),
            ids(sent)
        ));
    }
    problems
}

/// The request's tools: at most 128, names of 1 to 64 characters, a forced one offered.
fn check_tools(body: &Value, problems: &mut Vec<String>) {
    let tools = body.get("tools").and_then(Value::as_array);
    if let Some(tools) = tools {
        if tools.len() > 128 {
            problems.push(format!(
                "{} tools in one request (at most 128)",
                tools.len()
            ));
        }
        for t in tools {
            let name = t
                .pointer("/function/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            if name.is_empty() || name.len() > 64 {
                problems.push(format!("tool name '{name}' is empty or over 64 characters"));
            }
        }
    }
    if let Some(choice) = body.get("tool_choice").filter(|c| c.is_object()) {
        let forced = choice.pointer("/function/name").and_then(Value::as_str);
        let offered = forced.is_some_and(|f| {
            tools.is_some_and(|ts| {
                ts.iter()
                    .any(|t| t.pointer("/function/name").and_then(Value::as_str) == Some(f))
            })
        });
        if !offered {
            problems.push(format!(
                "tool_choice forces {forced:?}, which is not among the request's tools"
            ));
        }
    }
}

/// Every call answered once, in order, before the conversation goes on; returns the calls
/// the conversation holds.
fn check_conversation(messages: &[Value], problems: &mut Vec<String>) -> Vec<ToolCall> {
    let mut open: VecDeque<String> = VecDeque::new();
    let mut answered: HashSet<String> = HashSet::new();
    let mut seen_calls: Vec<ToolCall> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        if role == "tool" {
            let id = m.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
            // A tool message is text only: a string, or `text` parts.
            let text_only = match m.get("content") {
                Some(Value::String(_)) => true,
                Some(Value::Array(parts)) => {
                    parts.iter().all(|p| p.get("type") == Some(&json!("text")))
                }
                _ => false,
            };
            if !text_only {
                problems.push(format!(
                    "message {i}: a tool message whose content is not text"
                ));
            }
            match open.front() {
                Some(next) if next == id => {
                    open.pop_front();
                    answered.insert(id.to_string());
                }
                _ if answered.contains(id) => {
                    problems.push(format!("message {i}: tool call '{id}' answered twice"))
                }
                Some(next) => problems.push(format!(
                    "message {i}: answers '{id}' but '{next}' is the next call to answer"
                )),
                None => problems.push(format!("message {i}: answers unknown call '{id}'")),
            }
            continue;
        }
        if let Some(id) = open.front() {
            problems.push(format!(
                "message {i} ({role}) comes before call '{id}' was answered"
            ));
            open.clear();
        }
        if role == "assistant"
            && let Some(calls) = m.get("tool_calls").and_then(Value::as_array)
        {
            for c in calls {
                let id = c
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if id.is_empty() {
                    problems.push(format!("message {i}: a tool call without an id"));
                }
                let f = c.get("function").cloned().unwrap_or(Value::Null);
                seen_calls.push(ToolCall {
                    id: id.clone(),
                    name: f.get("name").and_then(Value::as_str).unwrap_or("").into(),
                    arguments: f
                        .get("arguments")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .into(),
                });
                open.push_back(id);
            }
        }
    }
    if let Some(id) = open.front() {
        problems.push(format!("call '{id}' is never answered"));
    }
    seen_calls
}

fn ids(calls: &[ToolCall]) -> Vec<String> {
    calls
        .iter()
        .map(|c| format!("{}:{}", c.id, c.name))
        .collect()
}
