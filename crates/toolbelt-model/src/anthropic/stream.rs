//! The assembly of a streamed Messages answer from its events.
//!
//! `message_start` carries the usage of the request; each content block comes as
//! `content_block_start`, deltas (`text_delta`, `input_json_delta`, `thinking_delta`,
//! `signature_delta`) and `content_block_stop`, keyed by `index`; `message_delta` brings
//! the stop reason and the final output count; `message_stop` ends it. `ping` and event
//! types this code does not know are skipped (the API may add some). An `error` event is
//! the server failing mid-answer: retried when it is an overload or a server error.

use std::collections::BTreeMap;

use serde_json::Value;

use super::wire::FORMAT;
use crate::retry::{AttemptError, retry};
use crate::{
    DeltaSink, FinishReason, ModelError, ModelTurn, OpaquePart, StreamDelta, ToolCall, Usage,
};

/// The most one answer may hold (as in the chat format's assembler).
const MAX_TURN_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse {
        /// Its position among the answer's calls.
        call: u32,
        id: String,
        name: String,
        /// `input_json_delta` pieces; the start's `input` when none came.
        json: String,
        start_input: Value,
    },
    /// `thinking` and `redacted_thinking`, kept whole to be sent back.
    Opaque(Value),
}

/// What one event meant.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    Continue,
    Done,
}

/// Builds a [`ModelTurn`] from the events of one answer.
#[derive(Debug, Default)]
pub(super) struct MessageAssembler {
    blocks: BTreeMap<u64, Block>,
    calls: u32,
    stop_reason: Option<String>,
    usage: Usage,
    size: usize,
}

impl MessageAssembler {
    /// Applies one event's data.
    pub(super) fn apply(
        &mut self,
        data: &str,
        on_delta: DeltaSink<'_>,
    ) -> Result<Step, AttemptError> {
        let event: Value = serde_json::from_str(data.trim())
            .map_err(|e| retry(format!("malformed stream data ({e}): {}", shorten(data))))?;
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "message_start" => {
                if let Some(u) = event.pointer("/message/usage") {
                    self.read_usage(u);
                }
            }
            "content_block_start" => {
                let block = event.get("content_block").cloned().unwrap_or(Value::Null);
                self.start_block(index, block, on_delta);
            }
            "content_block_delta" => {
                let delta = event.get("delta").cloned().unwrap_or(Value::Null);
                self.apply_delta(index, &delta, on_delta)?;
            }
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(u) = event.get("usage") {
                    self.read_usage(u);
                }
            }
            "message_stop" => return Ok(Step::Done),
            "error" => return Err(stream_error(&event)),
            // `content_block_stop`, `ping`, and types added later.
            _ => {}
        }
        if self.size > MAX_TURN_BYTES {
            return Err(retry(format!(
                "the answer passed {MAX_TURN_BYTES} bytes (64 MiB) of text and tool calls; it was cut off"
            )));
        }
        Ok(Step::Continue)
    }

    fn start_block(&mut self, index: u64, block: Value, on_delta: DeltaSink<'_>) {
        let text = |key: &str| {
            block
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let new = match block.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => {
                let t = text("text");
                if !t.is_empty() {
                    self.size += t.len();
                    on_delta(StreamDelta::Text(t.clone()));
                }
                Block::Text(t)
            }
            "tool_use" => {
                let call = self.calls;
                self.calls += 1;
                let (id, name) = (text("id"), text("name"));
                self.size += name.len();
                on_delta(StreamDelta::ToolCallStart {
                    index: call,
                    id: id.clone(),
                    name: name.clone(),
                });
                Block::ToolUse {
                    call,
                    id,
                    name,
                    json: String::new(),
                    start_input: block.get("input").cloned().unwrap_or(Value::Null),
                }
            }
            _ => Block::Opaque(block),
        };
        self.blocks.insert(index, new);
    }

    fn apply_delta(
        &mut self,
        index: u64,
        delta: &Value,
        on_delta: DeltaSink<'_>,
    ) -> Result<(), AttemptError> {
        let field = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or("");
        let Some(block) = self.blocks.get_mut(&index) else {
            return Err(retry(format!(
                "a content_block_delta for block {index}, which never started"
            )));
        };
        match (
            delta.get("type").and_then(Value::as_str).unwrap_or(""),
            block,
        ) {
            ("text_delta", Block::Text(text)) => {
                let piece = field("text");
                self.size += piece.len();
                text.push_str(piece);
                on_delta(StreamDelta::Text(piece.to_string()));
            }
            ("input_json_delta", Block::ToolUse { call, json, .. }) => {
                let piece = field("partial_json");
                self.size += piece.len();
                json.push_str(piece);
                on_delta(StreamDelta::ToolCallArguments {
                    index: *call,
                    text: piece.to_string(),
                });
            }
            ("thinking_delta", Block::Opaque(value)) => {
                let piece = field("thinking");
                self.size += append(value, "thinking", piece);
                if !piece.is_empty() {
                    on_delta(StreamDelta::Thinking(piece.to_string()));
                }
            }
            ("signature_delta", Block::Opaque(value)) => {
                self.size += append(value, "signature", field("signature"));
            }
            // Citations and delta types added later: nothing this crate reads.
            _ => {}
        }
        Ok(())
    }

    /// Usage from `message_start` (the request) or `message_delta` (cumulative counts).
    fn read_usage(&mut self, u: &Value) {
        let n = |key: &str| u.get(key).and_then(Value::as_u64);
        if let Some(v) = n("input_tokens") {
            self.usage.prompt_tokens = v;
        }
        if let Some(v) = n("output_tokens") {
            self.usage.completion_tokens = v;
        }
        if let Some(v) = n("cache_read_input_tokens") {
            self.usage.cache_read_tokens = v;
        }
        if let Some(v) = n("cache_creation_input_tokens") {
            self.usage.cache_write_tokens = v;
        }
    }

    pub(super) fn into_turn(self) -> ModelTurn {
        let mut turn = ModelTurn::default();
        for block in self.blocks.into_values() {
            match block {
                Block::Text(t) => turn.text.push_str(&t),
                Block::ToolUse {
                    id,
                    name,
                    json,
                    start_input,
                    ..
                } => turn.tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments: if json.is_empty() {
                        match start_input {
                            Value::Object(m) if !m.is_empty() => Value::Object(m).to_string(),
                            _ => "{}".to_string(),
                        }
                    } else {
                        json
                    },
                }),
                Block::Opaque(value) => turn.reasoning.push(OpaquePart {
                    format: FORMAT.to_string(),
                    value,
                }),
            }
        }
        turn.finish_reason = match self.stop_reason.as_deref() {
            Some("end_turn" | "stop_sequence") => FinishReason::Stop,
            Some("tool_use") => FinishReason::ToolCalls,
            Some("max_tokens") => FinishReason::Length,
            Some("refusal") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_string()),
            None if !turn.tool_calls.is_empty() => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        };
        // Anthropic's input count leaves out the cached part; the prompt is all of it.
        let mut usage = self.usage;
        usage.prompt_tokens += usage.cache_read_tokens + usage.cache_write_tokens;
        usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
        turn.usage = Some(usage);
        turn
    }
}

/// Appends `piece` to the string field `key` of a kept block; the bytes added.
fn append(value: &mut Value, key: &str, piece: &str) -> usize {
    if let Some(map) = value.as_object_mut() {
        let entry = map
            .entry(key.to_string())
            .or_insert_with(|| Value::String(String::new()));
        if let Value::String(s) = entry {
            s.push_str(piece);
        } else {
            *entry = Value::String(piece.to_string());
        }
    }
    piece.len()
}

/// An `error` event: retried when the server is overloaded or failed, the end of the
/// request when it says the request itself is wrong.
fn stream_error(event: &Value) -> AttemptError {
    let kind = event
        .pointer("/error/type")
        .and_then(Value::as_str)
        .unwrap_or("error");
    let message = event
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or("(no message)");
    let text = format!("the server reported {kind} mid-stream: {message}");
    match kind {
        "invalid_request_error"
        | "authentication_error"
        | "permission_error"
        | "not_found_error" => AttemptError::Fatal(ModelError::Rejected {
            status: match kind {
                "authentication_error" => 401,
                "permission_error" => 403,
                "not_found_error" => 404,
                _ => 400,
            },
            message: text,
        }),
        _ => retry(text),
    }
}

fn shorten(s: &str) -> String {
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
