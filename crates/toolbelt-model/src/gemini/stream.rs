//! The assembly of a turn from Gemini's streamed `GenerateContentResponse` chunks: text
//! parts add text (thought summaries, `thought: true`, are not the answer), each
//! `functionCall` part is one whole call, a `thoughtSignature` is kept for the part it
//! came on, and the last `finishReason` and `usageMetadata` win.
//!
//! Finish reasons become outcomes the agent understands: `MAX_TOKENS` a truncated turn,
//! the safety family a content filter, `MALFORMED_FUNCTION_CALL` and the other tool-call
//! failures a turn that says what happened (rather than an empty answer). A prompt
//! refused outright (`promptFeedback.blockReason`, no candidate) is a content filter too.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value, json};

use super::FORMAT;
use crate::transport::shorten;
use crate::{DeltaSink, FinishReason, ModelTurn, OpaquePart, StreamDelta, ToolCall, Usage};

/// Builds a [`ModelTurn`] from chunks.
#[derive(Debug, Default)]
pub(crate) struct TurnAssembler {
    text: String,
    calls: Vec<ToolCall>,
    /// Thought signatures by call id, and the one of a text part.
    call_signatures: Map<String, Value>,
    text_signature: Option<Value>,
    /// Ids made up for calls the server sent without one.
    generated: Vec<String>,
    finish: Option<String>,
    finish_message: Option<String>,
    blocked: Option<String>,
    usage: Option<Usage>,
    size: usize,
}

/// The most one answer may hold, as for Chat Completions.
const MAX_TURN_BYTES: usize = 64 * 1024 * 1024;

impl TurnAssembler {
    /// Applies one `data:` payload; `Err` says why it is unusable (the attempt is retried).
    /// Never says the turn is complete early: Gemini ends the stream after its last chunk.
    pub(crate) fn apply(&mut self, payload: &str, on_delta: DeltaSink<'_>) -> Result<bool, String> {
        let chunk: Value = serde_json::from_str(payload.trim())
            .map_err(|e| format!("malformed stream data ({e}): {}", shorten(payload)))?;
        if let Some(error) = chunk.get("error") {
            return Err(format!(
                "the server reported an error mid-stream: {}",
                crate::wire::error_message(&json!({ "error": error }).to_string())
            ));
        }
        if let Some(u) = chunk.get("usageMetadata") {
            self.usage = Some(usage(u));
        }
        if let Some(reason) = chunk
            .pointer("/promptFeedback/blockReason")
            .and_then(Value::as_str)
        {
            self.blocked = Some(reason.to_string());
        }
        let candidate = chunk
            .pointer("/candidates/0")
            .cloned()
            .unwrap_or(Value::Null);
        let parts = candidate
            .pointer("/content/parts")
            .and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            self.apply_part(part, on_delta);
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            self.finish = Some(reason.to_string());
        }
        if let Some(m) = candidate.get("finishMessage").and_then(Value::as_str) {
            self.finish_message = Some(m.to_string());
        }
        if self.size > MAX_TURN_BYTES {
            return Err(format!(
                "the answer passed {MAX_TURN_BYTES} bytes (64 MiB) of text and tool calls; it was cut off"
            ));
        }
        Ok(false)
    }

    fn apply_part(&mut self, part: &Value, on_delta: DeltaSink<'_>) {
        let signature = part
            .get("thoughtSignature")
            .filter(|s| s.is_string())
            .cloned();
        if let Some(call) = part.get("functionCall") {
            let index = self.calls.len();
            let id = match call
                .get("id")
                .and_then(Value::as_str)
                .filter(|i| !i.is_empty())
            {
                Some(id) => id.to_string(),
                None => {
                    let id = made_up_id();
                    self.generated.push(id.clone());
                    id
                }
            };
            let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
            let arguments = call
                .get("args")
                .map_or_else(|| "{}".to_string(), Value::to_string);
            self.size += name.len() + arguments.len();
            on_delta(StreamDelta::ToolCallStart {
                index: index as u32,
                id: id.clone(),
                name: name.to_string(),
            });
            on_delta(StreamDelta::ToolCallArguments {
                index: index as u32,
                text: arguments.clone(),
            });
            if let Some(s) = signature {
                self.call_signatures.insert(id.clone(), s);
            }
            self.calls.push(ToolCall {
                id,
                name: name.to_string(),
                arguments,
            });
            return;
        }
        if signature.is_some() {
            self.text_signature = signature;
        }
        let thought = part
            .get("thought")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if let Some(summary) = part
            .get("text")
            .and_then(Value::as_str)
            .filter(|t| thought && !t.is_empty())
        {
            on_delta(StreamDelta::Thinking(summary.to_string()));
        }
        if let Some(text) = part
            .get("text")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty() && !thought)
        {
            self.size += text.len();
            self.text.push_str(text);
            on_delta(StreamDelta::Text(text.to_string()));
        }
    }

    /// Whether a finish reason (or a refused prompt) arrived.
    pub(crate) fn is_complete(&self) -> bool {
        self.finish.is_some() || self.blocked.is_some()
    }

    pub(crate) fn into_turn(self) -> ModelTurn {
        let (finish_reason, note) = match (&self.blocked, self.finish.as_deref()) {
            (Some(block), _) => (
                FinishReason::ContentFilter,
                Some(format!("Gemini refused the prompt ({block}).")),
            ),
            (None, reason) => outcome(reason, !self.calls.is_empty()),
        };
        let mut text = self.text;
        if let Some(note) = note.filter(|_| text.is_empty() && self.calls.is_empty()) {
            text = match &self.finish_message {
                Some(m) => format!("{note} {m}"),
                None => note,
            };
        }
        let mut state = Map::new();
        if !self.call_signatures.is_empty() {
            state.insert("calls".into(), Value::Object(self.call_signatures));
        }
        if let Some(s) = self.text_signature {
            state.insert("text".into(), s);
        }
        if !self.generated.is_empty() {
            state.insert("generated".into(), json!(self.generated));
        }
        ModelTurn {
            text,
            tool_calls: self.calls,
            finish_reason,
            usage: self.usage,
            reasoning: if state.is_empty() {
                Vec::new()
            } else {
                vec![OpaquePart {
                    format: FORMAT.to_string(),
                    value: Value::Object(state),
                }]
            },
        }
    }
}

/// What a finish reason means, and what to say when the answer is otherwise empty.
fn outcome(reason: Option<&str>, has_calls: bool) -> (FinishReason, Option<String>) {
    match reason {
        None | Some("STOP") | Some("FINISH_REASON_UNSPECIFIED") if has_calls => {
            (FinishReason::ToolCalls, None)
        }
        None | Some("STOP") | Some("FINISH_REASON_UNSPECIFIED") => (FinishReason::Stop, None),
        Some("MAX_TOKENS") => (
            FinishReason::Length,
            Some("Gemini stopped at the output token limit (MAX_TOKENS) before answering.".into()),
        ),
        Some(
            r @ ("SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII"
            | "IMAGE_SAFETY" | "IMAGE_PROHIBITED_CONTENT" | "MODEL_ARMOR"),
        ) => (
            FinishReason::ContentFilter,
            Some(format!("Gemini withheld the answer ({r}).")),
        ),
        Some("MALFORMED_FUNCTION_CALL") => (
            FinishReason::Other("malformed_function_call".into()),
            Some(
                "Gemini produced a function call it could not parse (MALFORMED_FUNCTION_CALL); no tool was run."
                    .into(),
            ),
        ),
        Some(other) => (
            FinishReason::Other(other.to_ascii_lowercase()),
            Some(format!("Gemini stopped ({other}).")),
        ),
    }
}

fn usage(u: &Value) -> Usage {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let prompt = n("promptTokenCount");
    // `candidatesTokenCount` leaves the thinking out; the answer cost both.
    let completion = n("candidatesTokenCount") + n("thoughtsTokenCount");
    Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: match n("totalTokenCount") {
            0 => prompt + completion,
            t => t,
        },
        cache_read_tokens: n("cachedContentTokenCount"),
        cache_write_tokens: 0,
        reasoning_tokens: n("thoughtsTokenCount"),
    }
}

/// An id for a call the server sent without one: unique in this process and unlikely to
/// meet one of an earlier session (a resumed conversation keeps its ids).
fn made_up_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static START: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let start = START.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0)
    });
    format!("gemini_{start:x}_{}", NEXT.fetch_add(1, Ordering::Relaxed))
}
