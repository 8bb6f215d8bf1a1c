//! The records of a session file, one per line (the format is described in the parent
//! module), and their conversion to and from the conversation's messages.

use base64::Engine;
use serde::{Deserialize, Serialize};
use toolbelt_model::{Message, OpaquePart, ToolCall, ToolImage, UserPart};

use super::SessionHeader;

/// One line of the file, as written.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Line {
    Session(SessionHeader),
    User {
        content: Vec<ContentRecord>,
    },
    Assistant {
        text: String,
        #[serde(default)]
        tool_calls: Vec<CallRecord>,
        /// Parts only the format that made them reads (signed thinking blocks, thought
        /// signatures, encrypted reasoning): a resumed tool-use turn must send them back.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasoning: Vec<ReasoningRecord>,
    },
    Tool {
        call_id: String,
        text: String,
        /// Always written; `None` on a line from before it was (see the parent module).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageRecord>,
    },
    /// The history from here on (`/compress`): replaces every message before it.
    Compressed {
        history: Vec<Line>,
    },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum ContentRecord {
    Text(String),
    Image(ImageRecord),
}

/// An image, its bytes in base64.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ImageRecord {
    mime_type: String,
    data: String,
}

impl ImageRecord {
    fn new(mime_type: &str, data: &[u8]) -> Self {
        ImageRecord {
            mime_type: mime_type.to_string(),
            data: base64::engine::general_purpose::STANDARD.encode(data),
        }
    }

    /// The MIME type and the bytes.
    fn decode(self) -> Result<(String, Vec<u8>), String> {
        let data = base64::engine::general_purpose::STANDARD
            .decode(self.data.as_bytes())
            .map_err(|e| format!("an image that is not base64: {e}"))?;
        Ok((self.mime_type, data))
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ReasoningRecord {
    format: String,
    value: serde_json::Value,
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct CallRecord {
    id: String,
    name: String,
    arguments: String,
}

impl Line {
    /// `None` for the system prompt, which is not saved.
    pub(super) fn from_message(message: &Message) -> Option<Line> {
        Some(match message {
            Message::System(_) => return None,
            Message::User(parts) => Line::User {
                content: parts
                    .iter()
                    .map(|p| match p {
                        UserPart::Text(t) => ContentRecord::Text(t.clone()),
                        UserPart::Image { mime_type, data } => {
                            ContentRecord::Image(ImageRecord::new(mime_type, data))
                        }
                    })
                    .collect(),
            },
            Message::Assistant {
                text,
                tool_calls,
                reasoning,
            } => Line::Assistant {
                reasoning: reasoning
                    .iter()
                    .map(|p| ReasoningRecord {
                        format: p.format.clone(),
                        value: p.value.clone(),
                    })
                    .collect(),
                text: text.clone(),
                tool_calls: tool_calls
                    .iter()
                    .map(|c| CallRecord {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                    })
                    .collect(),
            },
            Message::Tool {
                call_id,
                text,
                is_error,
                images,
            } => Line::Tool {
                call_id: call_id.clone(),
                text: text.clone(),
                is_error: Some(*is_error),
                images: images
                    .iter()
                    .map(|i| ImageRecord::new(&i.mime_type, &i.data))
                    .collect(),
            },
        })
    }

    pub(super) fn into_message(self) -> Result<Message, String> {
        Ok(match self {
            Line::Session(_) => return Err("a second session header".to_string()),
            Line::Compressed { .. } => {
                return Err("a compression inside a compressed history".to_string());
            }
            Line::User { content } => {
                let mut parts = Vec::with_capacity(content.len());
                for c in content {
                    parts.push(match c {
                        ContentRecord::Text(t) => UserPart::Text(t),
                        ContentRecord::Image(image) => {
                            let (mime_type, data) = image.decode()?;
                            UserPart::Image { mime_type, data }
                        }
                    });
                }
                Message::User(parts)
            }
            Line::Assistant {
                text,
                tool_calls,
                reasoning,
            } => Message::Assistant {
                text,
                tool_calls: tool_calls
                    .into_iter()
                    .map(|c| ToolCall {
                        id: c.id,
                        name: c.name,
                        arguments: c.arguments,
                    })
                    .collect(),
                reasoning: reasoning
                    .into_iter()
                    .map(|r| OpaquePart {
                        format: r.format,
                        value: r.value,
                    })
                    .collect(),
            },
            Line::Tool {
                call_id,
                text,
                is_error,
                images,
            } => Message::Tool {
                is_error: is_error.unwrap_or_else(|| text.starts_with("Error: ")),
                call_id,
                text,
                images: images
                    .into_iter()
                    .map(|i| {
                        let (mime_type, data) = i.decode()?;
                        Ok(ToolImage { mime_type, data })
                    })
                    .collect::<Result<_, String>>()?,
            },
        })
    }
}
