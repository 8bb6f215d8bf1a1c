//! The Messages API request body, from the conversation.
//!
//! The API has two roles, `user` and `assistant`; a tool's result is a `tool_result`
//! block of a user message. Consecutive messages of one role (several tool results, then
//! the images the agent attaches after them) become one message, tool results first, as
//! the API requires. The system prompt goes in `system`, not among the messages.
//!
//! Prompt caching: `cache_control` marks the system prompt and the last tool, so the
//! unchanging prefix (tools, then system) is cached across the turns of a run.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use super::AnthropicConfig;
use crate::{Message, ModelRequest, UserPart};

/// What `format` an [`crate::OpaquePart`] made here carries.
pub(super) const FORMAT: &str = "anthropic";

/// The body of one streamed request.
pub(super) fn request_body(config: &AnthropicConfig, request: &ModelRequest) -> Value {
    let max_tokens = config.sampling.max_tokens.unwrap_or(config.max_tokens);
    let mut body = json!({
        "model": config.model,
        "max_tokens": max_tokens,
        "stream": true,
        "messages": messages(&request.messages),
    });
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::System(text) if !text.is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if !system.is_empty() {
        let mut block = json!({"type": "text", "text": system.join("\n\n")});
        if config.cache_control {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
        body["system"] = json!([block]);
    }
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters,
                })
            })
            .collect();
        if config.cache_control
            && let Some(last) = tools.last_mut()
        {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
        body["tools"] = Value::Array(tools);
        // With thinking on, the API takes only `auto` or `none`: a forced tool is then
        // asked for in words by the agent's own prompt, not here.
        if let Some(name) = &request.tool_choice
            && config.thinking_budget.is_none()
        {
            body["tool_choice"] = json!({"type": "tool", "name": name});
        }
    }
    if let Some(budget) = config.thinking_budget {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    }
    let s = &config.sampling;
    for (key, value) in [
        ("temperature", s.temperature.map(Value::from)),
        ("top_p", s.top_p.map(Value::from)),
        ("top_k", s.top_k.map(Value::from)),
    ] {
        if let Some(v) = value {
            body[key] = v;
        }
    }
    body
}

/// The conversation as Messages API messages, same-role neighbours merged.
fn messages(conversation: &[Message]) -> Vec<Value> {
    let mut out: Vec<(&str, Vec<Value>)> = Vec::new();
    for m in conversation {
        let (role, blocks) = match m {
            Message::System(_) => continue,
            Message::User(parts) => ("user", parts.iter().filter_map(user_part).collect()),
            Message::Assistant {
                text,
                tool_calls,
                reasoning,
            } => {
                // Thinking blocks first, as they came: the API checks their signatures.
                let mut blocks: Vec<Value> = reasoning
                    .iter()
                    .filter(|p| p.format == FORMAT)
                    .map(|p| p.value.clone())
                    .collect();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for c in tool_calls {
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": c.id,
                        "name": c.name,
                        "input": tool_input(&c.arguments),
                    }));
                }
                ("assistant", blocks)
            }
            Message::Tool { call_id, text } => {
                let mut block = json!({"type": "tool_result", "tool_use_id": call_id});
                if !text.is_empty() {
                    block["content"] = json!([{"type": "text", "text": text}]);
                }
                // Every failed call's result starts so (toolbelt-core's result.rs).
                if text.starts_with("Error: ") {
                    block["is_error"] = Value::Bool(true);
                }
                ("user", vec![block])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

fn user_part(part: &UserPart) -> Option<Value> {
    match part {
        UserPart::Text(text) if text.is_empty() => None,
        UserPart::Text(text) => Some(json!({"type": "text", "text": text})),
        UserPart::Image { mime_type, data } => Some(json!({
            "type": "image",
            "source": {"type": "base64", "media_type": mime_type, "data": STANDARD.encode(data)},
        })),
    }
}

/// A call's `input`, which the API wants as an object. Arguments that are not one were
/// answered with an error by the agent already; an empty object keeps the history
/// valid.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => Value::Object(map),
        _ => Value::Object(Map::new()),
    }
}
