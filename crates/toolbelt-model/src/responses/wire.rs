//! Responses API request bodies: `instructions` from the system prompt, `input` items
//! (`message`, `function_call`, `function_call_output`, and the `reasoning` items a
//! reasoning model made), `function` tools. A tool's images go inside its
//! `function_call_output`, whose `output` is then a list of `input_text` and
//! `input_image` (data URL) items rather than a string.
//!
//! What an answer keeps for later requests (its one [`crate::OpaquePart`] of format
//! `openai-responses`) is `{"items": [...]}`: the answer's output items in their order, reasoning items whole (id, summary,
//! encrypted content) and the others as markers (`{"type": "message"}`,
//! `{"type": "function_call", "call_id": ...}`) filled from the message's text and calls
//! when it is sent back. So a reasoning item returns exactly where it stood, before the
//! calls it led to.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::FORMAT;
use crate::{Message, ModelRequest, OpaquePart, Sampling, ToolCall, ToolImage, UserPart};

/// The fields of a reasoning item the API takes back as input.
const REASONING_FIELDS: &[&str] = &["type", "id", "summary", "encrypted_content", "content"];

/// The request body.
pub(crate) fn request_body(
    model: &str,
    effort: Option<&str>,
    sampling: &Sampling,
    request: &ModelRequest,
) -> Value {
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::System(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let input: Vec<Value> = request.messages.iter().flat_map(items).collect();
    let mut body = json!({
        "model": model,
        "input": input,
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
    });
    if !system.is_empty() {
        body["instructions"] = json!(system.join("\n\n"));
    }
    if let Some(effort) = effort {
        body["reasoning"] = json!({"effort": effort, "summary": "auto"});
    }
    // The API has no `top_k` and no penalties; a server that rejects unknown fields
    // would refuse them, so they are left out rather than guessed at.
    if let Some(t) = sampling.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(p) = sampling.top_p {
        body["top_p"] = json!(p);
    }
    if let Some(n) = sampling.max_tokens {
        body["max_output_tokens"] = json!(n);
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    // Strict mode needs every property required and no other keys: the
                    // tools' own schemas are not written for it, and they validate anyway.
                    "strict": false,
                })
            })
            .collect();
        body["tools"] = Value::Array(tools);
        body["parallel_tool_calls"] = json!(true);
        body["tool_choice"] = match &request.tool_choice {
            Some(name) => json!({"type": "function", "name": name}),
            None => json!("auto"),
        };
    }
    body
}

/// The input items of one message.
fn items(m: &Message) -> Vec<Value> {
    match m {
        Message::System(_) => Vec::new(),
        Message::User(parts) => {
            let content: Vec<Value> = parts
                .iter()
                .map(|p| match p {
                    UserPart::Text(text) => json!({"type": "input_text", "text": text}),
                    UserPart::Image { mime_type, data } => json!({
                        "type": "input_image",
                        "image_url": format!("data:{mime_type};base64,{}", STANDARD.encode(data)),
                        "detail": "auto",
                    }),
                })
                .collect();
            vec![json!({"type": "message", "role": "user", "content": content})]
        }
        Message::Assistant {
            text,
            tool_calls,
            reasoning,
        } => assistant_items(text, tool_calls, reasoning),
        Message::Tool {
            call_id,
            text,
            images,
            ..
        } => vec![json!({
            "type": "function_call_output", "call_id": call_id, "output": output(text, images)
        })],
    }
}

/// A `function_call_output`'s `output`: its text, or with images a list of `input_text`
/// and `input_image` items. (The API has no failure flag for a result; its text says so.)
fn output(text: &str, images: &[ToolImage]) -> Value {
    if images.is_empty() {
        return json!(text);
    }
    let text = (!text.is_empty()).then(|| json!({"type": "input_text", "text": text}));
    let images = images
        .iter()
        .map(|i| json!({"type": "input_image", "image_url": i.data_url(), "detail": "auto"}));
    Value::Array(text.into_iter().chain(images).collect())
}

fn assistant_items(text: &str, calls: &[ToolCall], reasoning: &[OpaquePart]) -> Vec<Value> {
    let message = || {
        json!({"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": text}]})
    };
    let call = |c: &ToolCall| json!({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments});
    let order = OpaquePart::of_format(reasoning, FORMAT)
        .and_then(|s| s.get("items"))
        .and_then(Value::as_array);
    let mut out = Vec::new();
    let mut text_sent = text.is_empty();
    let mut sent_calls = Vec::new();
    for item in order.into_iter().flatten() {
        match item.get("type").and_then(Value::as_str) {
            Some("reasoning") => {
                let kept: serde_json::Map<String, Value> = item
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(k, _)| REASONING_FIELDS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                out.push(Value::Object(kept));
            }
            Some("message") if !text_sent => {
                out.push(message());
                text_sent = true;
            }
            Some("function_call") => {
                let id = item.get("call_id").and_then(Value::as_str);
                if let Some(c) = calls.iter().find(|c| Some(c.id.as_str()) == id) {
                    out.push(call(c));
                    sent_calls.push(c.id.as_str());
                }
            }
            _ => {}
        }
    }
    // Whatever the state does not place (or all of it, without a state) in the usual order.
    if !text_sent {
        out.push(message());
    }
    for c in calls
        .iter()
        .filter(|c| !sent_calls.contains(&c.id.as_str()))
    {
        out.push(call(c));
    }
    out
}
