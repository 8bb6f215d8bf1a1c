//! The assembly of a turn from the Responses API's streamed events (the `type` in each
//! event's data names it). Output items are keyed by `output_index`:
//! `response.output_item.added` opens one (a `function_call` with its `call_id` and
//! name), `response.output_text.delta` and `response.function_call_arguments.delta` add
//! to it, the `.done` events and `response.output_item.done` carry the final form, which
//! wins. `response.completed` ends the turn with the usage; `response.incomplete` ends it
//! truncated (`max_output_tokens`) or filtered (`content_filter`).
//!
//! `response.failed` and `error` end the attempt: retried when the code says the server
//! or a rate limit failed, final when it says the request itself is wrong (too long a
//! context, a refused prompt, no quota left), since sending it again cannot help.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::FORMAT;
use crate::retry::{AttemptError, retry};
use crate::transport::shorten;
use crate::{
    DeltaSink, FinishReason, ModelError, ModelTurn, OpaquePart, StreamDelta, ToolCall, Usage,
};

/// One output item as far as it has arrived.
#[derive(Debug)]
enum Item {
    Reasoning(Value),
    Message(String),
    Call(ToolCall),
    Other,
}

/// Builds a [`ModelTurn`] from events.
#[derive(Debug, Default)]
pub(crate) struct TurnAssembler {
    items: BTreeMap<u64, Item>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    size: usize,
}

/// The most one answer may hold, as for Chat Completions.
const MAX_TURN_BYTES: usize = 64 * 1024 * 1024;

/// Error codes that say the request is wrong, not the server: another attempt fails too.
const FINAL_CODES: &[&str] = &[
    "context_length_exceeded",
    "invalid_prompt",
    "insufficient_quota",
    "invalid_request_error",
    "invalid_api_key",
    "model_not_found",
];

impl TurnAssembler {
    /// Applies one event's data; `Ok(true)` once the response is complete.
    pub(crate) fn apply(
        &mut self,
        payload: &str,
        on_delta: DeltaSink<'_>,
    ) -> Result<bool, AttemptError> {
        let event: Value = serde_json::from_str(payload.trim())
            .map_err(|e| retry(format!("malformed stream data ({e}): {}", shorten(payload))))?;
        let index = event
            .get("output_index")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match kind {
            "response.output_item.added" | "response.output_item.done" => {
                self.item(index, event.get("item").unwrap_or(&Value::Null), on_delta);
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let delta = event
                    .get("delta")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let entry = self
                    .items
                    .entry(index)
                    .or_insert(Item::Message(String::new()));
                if let Item::Message(text) = entry
                    && !delta.is_empty()
                {
                    text.push_str(delta);
                    self.size += delta.len();
                    on_delta(StreamDelta::Text(delta.to_string()));
                }
            }
            "response.function_call_arguments.delta" => {
                let delta = event
                    .get("delta")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if let Some(Item::Call(call)) = self.items.get_mut(&index) {
                    call.arguments.push_str(delta);
                    self.size += delta.len();
                    on_delta(StreamDelta::ToolCallArguments {
                        index: index as u32,
                        text: delta.to_string(),
                    });
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(Item::Call(call)), Some(args)) = (
                    self.items.get_mut(&index),
                    event.get("arguments").and_then(Value::as_str),
                ) {
                    call.arguments = args.to_string();
                }
            }
            "response.completed" | "response.incomplete" => {
                self.finish(event.get("response").unwrap_or(&Value::Null));
                return Ok(true);
            }
            "response.failed" => {
                let error = event.pointer("/response/error").unwrap_or(&Value::Null);
                return Err(failure(error));
            }
            "error" => return Err(failure(&event)),
            _ => {}
        }
        if self.size > MAX_TURN_BYTES {
            return Err(retry(format!(
                "the answer passed {MAX_TURN_BYTES} bytes (64 MiB) of text and tool calls; it was cut off"
            )));
        }
        Ok(false)
    }

    /// An output item, as added (the start of a call) or done (its final form).
    fn item(&mut self, index: u64, item: &Value, on_delta: DeltaSink<'_>) {
        let field = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or_default();
        match field("type") {
            "reasoning" => {
                self.items.insert(index, Item::Reasoning(item.clone()));
            }
            "message" => {
                let text: String = item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c.get("text").or_else(|| c.get("refusal")))
                    .filter_map(Value::as_str)
                    .collect();
                let entry = self
                    .items
                    .entry(index)
                    .or_insert(Item::Message(String::new()));
                // The done item's text is the whole; deltas may have shown part of it.
                if let Item::Message(streamed) = entry
                    && text.len() > streamed.len()
                {
                    if let Some(rest) = text.strip_prefix(streamed.as_str()) {
                        on_delta(StreamDelta::Text(rest.to_string()));
                    }
                    *streamed = text;
                }
            }
            "function_call" => {
                let call = ToolCall {
                    id: field("call_id").to_string(),
                    name: field("name").to_string(),
                    arguments: field("arguments").to_string(),
                };
                match self.items.get_mut(&index) {
                    Some(Item::Call(existing)) => {
                        if !call.arguments.is_empty() {
                            existing.arguments = call.arguments;
                        }
                    }
                    _ => {
                        on_delta(StreamDelta::ToolCallStart {
                            index: index as u32,
                            id: call.id.clone(),
                            name: call.name.clone(),
                        });
                        self.size += call.name.len() + call.arguments.len();
                        self.items.insert(index, Item::Call(call));
                    }
                }
            }
            _ => {
                self.items.entry(index).or_insert(Item::Other);
            }
        }
    }

    /// The final response: its usage, why it stopped, and any output the events missed.
    fn finish(&mut self, response: &Value) {
        if let Some(u) = response.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage(u));
        }
        if self.items.is_empty() {
            for (i, item) in response
                .get("output")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                self.item(i as u64, item, &|_| {});
            }
        }
        self.finish = match response
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str)
        {
            Some("max_output_tokens") => Some(FinishReason::Length),
            Some("content_filter") => Some(FinishReason::ContentFilter),
            Some(other) => Some(FinishReason::Other(other.to_string())),
            None => None,
        };
    }

    pub(crate) fn into_turn(self) -> ModelTurn {
        let mut text = String::new();
        let mut calls = Vec::new();
        let mut order = Vec::new();
        let mut reasoned = false;
        for item in self.items.into_values() {
            match item {
                Item::Reasoning(r) => {
                    reasoned = true;
                    order.push(r);
                }
                Item::Message(t) => {
                    text.push_str(&t);
                    order.push(json!({"type": "message"}));
                }
                Item::Call(c) => {
                    order.push(json!({"type": "function_call", "call_id": c.id}));
                    calls.push(c);
                }
                Item::Other => {}
            }
        }
        let finish_reason = match self.finish {
            Some(f) => f,
            None if calls.is_empty() => FinishReason::Stop,
            None => FinishReason::ToolCalls,
        };
        ModelTurn {
            text,
            tool_calls: calls,
            finish_reason,
            usage: self.usage,
            reasoning: if reasoned {
                vec![OpaquePart {
                    format: FORMAT.to_string(),
                    value: json!({ "items": order }),
                }]
            } else {
                Vec::new()
            },
        }
    }
}

/// A failure the stream reported: final when its code says the request is wrong.
fn failure(error: &Value) -> AttemptError {
    let code = error
        .get("code")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("(no message)");
    if FINAL_CODES.contains(&code) {
        AttemptError::Fatal(ModelError::Rejected {
            status: 400,
            message: format!("{message} ({code})"),
        })
    } else {
        retry(format!(
            "the server reported an error mid-stream: {message} ({code})"
        ))
    }
}

fn usage(u: &Value) -> Usage {
    let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    let (input, output) = (n("/input_tokens"), n("/output_tokens"));
    Usage {
        prompt_tokens: input,
        completion_tokens: output,
        total_tokens: match n("/total_tokens") {
            0 => input + output,
            t => t,
        },
        cache_read_tokens: n("/input_tokens_details/cached_tokens"),
        cache_write_tokens: 0,
        reasoning_tokens: n("/output_tokens_details/reasoning_tokens"),
    }
}
