//! The OpenAI Chat Completions wire format: request bodies, streamed chunks, whole
//! responses. Architecture Invariant: these shapes exist only in this crate; everything
//! else speaks [`crate::Message`] and [`crate::ModelTurn`].
//!
//! Deserialization is deliberately lenient (every field optional, unknown fields
//! ignored): OpenAI-compatible servers (vLLM, Ollama, llama.cpp, DashScope) differ in
//! what they leave out.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{Message, ModelRequest, Sampling, ToolCall, Usage, UserPart};

/// The request body.
pub(crate) fn request_body(
    model: &str,
    request: &ModelRequest,
    stream: bool,
    sampling: &Sampling,
) -> Value {
    let messages = messages(&request.messages);
    let mut body = json!({
        "model": model,
        "messages": messages,
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    }
                })
            })
            .collect();
        body["tools"] = Value::Array(tools);
        if let Some(name) = &request.tool_choice {
            body["tool_choice"] = json!({"type": "function", "function": {"name": name}});
        }
    }
    for (key, value) in [
        ("temperature", sampling.temperature.map(Value::from)),
        ("top_p", sampling.top_p.map(Value::from)),
        ("top_k", sampling.top_k.map(Value::from)),
        ("max_tokens", sampling.max_tokens.map(Value::from)),
        (
            "presence_penalty",
            sampling.presence_penalty.map(Value::from),
        ),
        (
            "frequency_penalty",
            sampling.frequency_penalty.map(Value::from),
        ),
    ] {
        if let Some(v) = value {
            body[key] = v;
        }
    }
    if stream {
        body["stream"] = Value::Bool(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

/// The conversation as chat messages. A `tool` message takes only text, so the images
/// of a run of tool results follow it in one user message, each named in its result's
/// text. (No field says a result failed: its text says so.)
fn messages(conversation: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(conversation.len() + 1);
    let mut media: Vec<Value> = Vec::new();
    for m in conversation {
        if !matches!(m, Message::Tool { .. }) {
            flush_media(&mut out, &mut media);
        }
        let Message::Tool {
            call_id,
            text,
            images,
            ..
        } = m
        else {
            out.push(message(m));
            continue;
        };
        let mut text = text.clone();
        for image in images {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&format!(
                "[{} attached in the following user message]",
                image.mime_type
            ));
            media.push(json!({"type": "image_url", "image_url": {"url": image.data_url()}}));
        }
        out.push(json!({"role": "tool", "tool_call_id": call_id, "content": text}));
    }
    flush_media(&mut out, &mut media);
    out
}

/// The user message that carries the images of the tool results before it.
fn flush_media(out: &mut Vec<Value>, media: &mut Vec<Value>) {
    if media.is_empty() {
        return;
    }
    let mut content =
        vec![json!({"type": "text", "text": "Media returned by the tool calls above:"})];
    content.append(media);
    out.push(json!({"role": "user", "content": content}));
}

fn message(m: &Message) -> Value {
    match m {
        Message::System(text) => json!({"role": "system", "content": text}),
        Message::User(parts) => {
            if let [UserPart::Text(text)] = parts.as_slice() {
                return json!({"role": "user", "content": text});
            }
            let content: Vec<Value> = parts
                .iter()
                .map(|p| match p {
                    UserPart::Text(text) => json!({"type": "text", "text": text}),
                    UserPart::Image { mime_type, data } => json!({
                        "type": "image_url",
                        "image_url": {"url": format!("data:{mime_type};base64,{}", STANDARD.encode(data))}
                    }),
                })
                .collect();
            json!({"role": "user", "content": content})
        }
        Message::Assistant {
            text, tool_calls, ..
        } => {
            let mut v = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::String(text.clone()) }});
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments}
                        })
                    })
                    .collect();
                v["tool_calls"] = Value::Array(calls);
            }
            v
        }
        Message::Tool { call_id, text, .. } => {
            json!({"role": "tool", "tool_call_id": call_id, "content": text})
        }
    }
}

/// One `data:` payload of a streamed response.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub(crate) struct Chunk {
    pub choices: Vec<ChunkChoice>,
    pub usage: Option<WireUsage>,
    pub error: Option<Value>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub(crate) struct ChunkChoice {
    pub index: u32,
    pub delta: Delta,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub(crate) struct Delta {
    pub content: Option<String>,
    /// The reasoning of servers that stream it beside the answer (Qwen's, DeepSeek's).
    pub reasoning_content: Option<String>,
    pub tool_calls: Vec<ToolCallDelta>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub(crate) struct ToolCallDelta {
    pub index: Option<u32>,
    pub id: Option<String>,
    pub function: FunctionDelta,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub(crate) struct FunctionDelta {
    pub name: Option<String>,
    pub arguments: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, Default, Clone, Copy)]
#[serde(default)]
pub struct WireUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// OpenAI's count of prompt tokens served from its cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    /// OpenAI's count of completion tokens spent on hidden reasoning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
}

#[derive(Debug, Deserialize, Serialize, Default, Clone, Copy)]
#[serde(default)]
pub struct PromptTokensDetails {
    pub cached_tokens: u64,
}

#[derive(Debug, Deserialize, Serialize, Default, Clone, Copy)]
#[serde(default)]
pub struct CompletionTokensDetails {
    pub reasoning_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            total_tokens: if u.total_tokens == 0 {
                u.prompt_tokens + u.completion_tokens
            } else {
                u.total_tokens
            },
            cache_read_tokens: u.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
            cache_write_tokens: 0,
            reasoning_tokens: u
                .completion_tokens_details
                .map_or(0, |d| d.reasoning_tokens),
        }
    }
}

/// A whole (non-streamed) response.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub(crate) struct Response {
    pub choices: Vec<ResponseChoice>,
    pub usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub(crate) struct ResponseChoice {
    pub message: ResponseMessage,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub(crate) struct ResponseMessage {
    pub content: Option<String>,
    pub tool_calls: Vec<WireToolCall>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub(crate) struct WireToolCall {
    pub id: String,
    pub function: WireFunction,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub(crate) struct WireFunction {
    pub name: String,
    /// Text in OpenAI's format; some servers send an object instead.
    pub arguments: Value,
}

impl WireToolCall {
    pub(crate) fn into_call(self, n: usize) -> ToolCall {
        let arguments = match self.function.arguments {
            Value::String(s) => s,
            Value::Null => String::new(),
            other => other.to_string(),
        };
        ToolCall {
            id: if self.id.is_empty() {
                format!("call_{n}")
            } else {
                self.id
            },
            name: self.function.name,
            arguments,
        }
    }
}

/// The message of an error body (`{"error": {"message": ...}}` and its variants), or
/// the body itself, shortened.
pub(crate) fn error_message(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        let e = v.get("error").unwrap_or(&v);
        e.get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| e.as_str().map(str::to_string))
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    let text = if text.is_empty() {
        "(empty response body)".to_string()
    } else {
        text
    };
    match text.char_indices().nth(500) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}
