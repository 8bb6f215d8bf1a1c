//! The Messages API request body, from the conversation.
//!
//! The API has two roles, `user` and `assistant`; a tool's result is a `tool_result`
//! block of a user message, with `is_error` when the call failed and, when the tool
//! returned images, `content` as `text` and `image` blocks (the images inside the result
//! they belong to). Consecutive messages of one role (several tool results, then what
//! the person adds) become one message, tool results first, as the API requires. The
//! system prompt goes in `system`, not among the messages.
//!
//! Prompt caching: `cache_control` marks the system prompt and the last tool, so the
//! unchanging prefix (tools, then system) is cached across the turns of a run.
//!
//! The body is typed and borrows the conversation rather than being built as a JSON
//! tree: the whole conversation is sent at every turn, and copying it into a tree each
//! time made a long session's requests cost twice the chat format's.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use serde_json::{Map, Value};

use super::AnthropicConfig;
use crate::{Message, ModelRequest, UserPart};

/// What `format` an [`crate::OpaquePart`] made here carries.
pub(super) const FORMAT: &str = "anthropic";

/// One streamed request.
#[derive(Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<SystemBlock>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_k: Option<u32>,
}

/// `{"type": "ephemeral"}`.
#[derive(Serialize, Clone, Copy)]
#[serde(tag = "type", rename = "ephemeral")]
struct Ephemeral {}

#[derive(Serialize)]
#[serde(tag = "type", rename = "text")]
struct SystemBlock {
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<Ephemeral>,
}

#[derive(Serialize)]
struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<Ephemeral>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename = "tool")]
struct ToolChoice<'a> {
    name: &'a str,
}

#[derive(Serialize)]
#[serde(tag = "type", rename = "enabled")]
struct Thinking {
    budget_tokens: u32,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Block<'a> {
    Typed(TypedBlock<'a>),
    /// A thinking block as the server sent it.
    Opaque(&'a Value),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum TypedBlock<'a> {
    Text {
        text: &'a str,
    },
    Image {
        source: ImageSource<'a>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        content: Vec<ResultBlock<'a>>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// A block of a `tool_result`'s content.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ResultBlock<'a> {
    Text { text: &'a str },
    Image { source: ImageSource<'a> },
}

#[derive(Serialize)]
#[serde(tag = "type", rename = "base64")]
struct ImageSource<'a> {
    media_type: &'a str,
    data: String,
}

/// The body of one streamed request.
pub(super) fn request_body<'a>(config: &'a AnthropicConfig, request: &'a ModelRequest) -> Body<'a> {
    let cache = config.cache_control.then_some(Ephemeral {});
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::System(text) if !text.is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let system = if system.is_empty() {
        Vec::new()
    } else {
        vec![SystemBlock {
            text: system.join("\n\n"),
            cache_control: cache,
        }]
    };
    let last = request.tools.len().saturating_sub(1);
    let tools = request
        .tools
        .iter()
        .enumerate()
        .map(|(i, t)| Tool {
            name: &t.name,
            description: &t.description,
            input_schema: &t.parameters,
            cache_control: cache.filter(|_| i == last),
        })
        .collect();
    // With thinking on, the API takes only `auto` or `none`: a forced tool is then asked
    // for in words by the agent's own prompt, not here.
    let tool_choice = request
        .tool_choice
        .as_deref()
        .filter(|_| config.thinking_budget.is_none() && !request.tools.is_empty())
        .map(|name| ToolChoice { name });
    let sampling = request.sampling_over(&config.sampling);
    Body {
        model: &config.model,
        max_tokens: sampling.max_tokens.unwrap_or(config.max_tokens),
        stream: true,
        system,
        messages: messages(&request.messages),
        tools,
        tool_choice,
        thinking: config
            .thinking_budget
            .map(|budget_tokens| Thinking { budget_tokens }),
        temperature: sampling.temperature,
        top_p: sampling.top_p,
        top_k: sampling.top_k,
    }
}

/// The conversation as Messages API messages, same-role neighbours merged.
fn messages(conversation: &[Message]) -> Vec<WireMessage<'_>> {
    let mut out: Vec<WireMessage<'_>> = Vec::new();
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
                let mut blocks: Vec<Block<'_>> = reasoning
                    .iter()
                    .filter(|p| p.format == FORMAT)
                    .map(|p| Block::Opaque(&p.value))
                    .collect();
                if !text.is_empty() {
                    blocks.push(Block::Typed(TypedBlock::Text { text }));
                }
                for c in tool_calls {
                    blocks.push(Block::Typed(TypedBlock::ToolUse {
                        id: &c.id,
                        name: &c.name,
                        input: tool_input(&c.arguments),
                    }));
                }
                ("assistant", blocks)
            }
            Message::Tool {
                call_id,
                text,
                is_error,
                images,
            } => {
                let text = (!text.is_empty()).then_some(ResultBlock::Text { text });
                let images = images.iter().map(|i| ResultBlock::Image {
                    source: ImageSource {
                        media_type: &i.mime_type,
                        data: STANDARD.encode(&i.data),
                    },
                });
                let block = TypedBlock::ToolResult {
                    tool_use_id: call_id,
                    content: text.into_iter().chain(images).collect(),
                    is_error: *is_error,
                };
                ("user", vec![Block::Typed(block)])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => out.push(WireMessage {
                role,
                content: blocks,
            }),
        }
    }
    out
}

fn user_part(part: &UserPart) -> Option<Block<'_>> {
    match part {
        UserPart::Text(text) if text.is_empty() => None,
        UserPart::Text(text) => Some(Block::Typed(TypedBlock::Text { text })),
        UserPart::Image { mime_type, data } => Some(Block::Typed(TypedBlock::Image {
            source: ImageSource {
                media_type: mime_type,
                data: STANDARD.encode(data),
            },
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
