//! The assembly of a streamed turn from its chunks: the `data` of each server-sent event
//! (decoded by `toolbelt-sse`, the one decoder toolbelt has) is one chunk. A payload that
//! is not JSON is a corrupted stream: the caller retries the request.
//!
//! Tool calls arrive as deltas keyed by `index`: the first carries the id and the name,
//! later ones pieces of the argument text. Some servers omit the index; then a delta
//! with a new id starts a new call and one without an id continues the last.

use std::collections::BTreeMap;

use crate::wire::{Chunk, ToolCallDelta};
use crate::{FinishReason, ModelTurn, ToolCall, Usage};

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    /// Its start was told (once the name is known).
    announced: bool,
}

/// Builds a [`ModelTurn`] from chunks.
#[derive(Debug, Default)]
pub(crate) struct TurnAssembler {
    text: String,
    calls: BTreeMap<u32, PartialCall>,
    last_index: Option<u32>,
    finish: Option<String>,
    usage: Option<Usage>,
    done: bool,
    /// The bytes of text, names and arguments so far (see [`MAX_TURN_BYTES`]).
    size: usize,
}

/// The most one answer may hold, text and tool calls together. A real answer holds a
/// few hundred KiB at most; a server that streams on without end is cut off here
/// instead of filling memory.
const MAX_TURN_BYTES: usize = 64 * 1024 * 1024;

/// What one payload meant.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Continue,
    Done,
}

impl TurnAssembler {
    /// Applies one payload. `Err` carries why the payload is unusable.
    #[cfg(test)]
    pub(crate) fn apply(&mut self, payload: &str) -> Result<Step, String> {
        self.apply_streaming(payload, &|_| {})
    }

    /// [`TurnAssembler::apply`], telling `on_delta` what the payload added.
    pub(crate) fn apply_streaming(
        &mut self,
        payload: &str,
        on_delta: crate::DeltaSink<'_>,
    ) -> Result<Step, String> {
        let payload = payload.trim();
        if payload == "[DONE]" {
            self.done = true;
            return Ok(Step::Done);
        }
        let chunk: Chunk = serde_json::from_str(payload)
            .map_err(|e| format!("malformed stream data ({e}): {}", shorten(payload)))?;
        if let Some(error) = chunk.error {
            return Err(format!(
                "the server reported an error mid-stream: {}",
                crate::wire::error_message(&error.to_string())
            ));
        }
        if let Some(u) = chunk.usage {
            self.usage = Some(u.into());
        }
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(text) = choice.delta.reasoning_content.filter(|t| !t.is_empty()) {
                on_delta(crate::StreamDelta::Thinking(text));
            }
            if let Some(text) = choice.delta.content.filter(|t| !t.is_empty()) {
                self.size += text.len();
                self.text.push_str(&text);
                on_delta(crate::StreamDelta::Text(text));
            }
            for delta in choice.delta.tool_calls {
                self.apply_call(delta, on_delta);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(reason);
            }
        }
        if self.size > MAX_TURN_BYTES {
            return Err(format!(
                "the answer passed {MAX_TURN_BYTES} bytes (64 MiB) of text and tool calls; it was cut off"
            ));
        }
        Ok(Step::Continue)
    }

    fn apply_call(&mut self, delta: ToolCallDelta, on_delta: crate::DeltaSink<'_>) {
        let index = match (delta.index, &delta.id) {
            (Some(i), _) => i,
            (None, Some(id)) => match self.calls.iter().find(|(_, c)| &c.id == id) {
                Some((&i, _)) => i,
                None => self.calls.keys().next_back().map_or(0, |i| i + 1),
            },
            (None, None) => self.last_index.unwrap_or(0),
        };
        self.last_index = Some(index);
        let call = self.calls.entry(index).or_default();
        if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
            call.id = id;
        }
        if let Some(name) = delta.function.name.filter(|n| !n.is_empty()) {
            // Most servers send the name once; some repeat it whole in every delta, a
            // few split it. A repeat is not appended.
            if call.name.is_empty() {
                self.size += name.len();
                call.name = name;
            } else if call.name != name {
                self.size += name.len();
                call.name.push_str(&name);
            }
        }
        if !call.announced && !call.name.is_empty() {
            call.announced = true;
            on_delta(crate::StreamDelta::ToolCallStart {
                index,
                id: call.id.clone(),
                name: call.name.clone(),
            });
        }
        if let Some(args) = delta.function.arguments.filter(|a| !a.is_empty()) {
            self.size += args.len();
            call.arguments.push_str(&args);
            if call.announced {
                on_delta(crate::StreamDelta::ToolCallArguments { index, text: args });
            }
        }
    }

    /// Whether the stream said it was complete (`[DONE]` or a finish reason).
    pub(crate) fn is_complete(&self) -> bool {
        self.done || self.finish.is_some()
    }

    pub(crate) fn into_turn(self) -> ModelTurn {
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_values()
            .enumerate()
            .filter(|(_, c)| !c.name.is_empty())
            .map(|(n, c)| ToolCall {
                id: if c.id.is_empty() {
                    format!("call_{n}")
                } else {
                    c.id
                },
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        let finish_reason = match self.finish.as_deref() {
            Some(r) => FinishReason::from_wire(r),
            None if !tool_calls.is_empty() => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        };
        ModelTurn {
            text: self.text,
            tool_calls,
            finish_reason,
            usage: self.usage,
            ..Default::default()
        }
    }
}

fn shorten(s: &str) -> String {
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_calls_are_assembled_by_index() {
        let mut a = TurnAssembler::default();
        for payload in [
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"glob","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","function":{"name":"grep_search","arguments":"{\"pat"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pattern\":\"*.rs\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"tern\":\"fn\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}"#,
        ] {
            assert_eq!(a.apply(payload), Ok(Step::Continue));
        }
        let turn = a.into_turn();
        assert_eq!(turn.tool_calls.len(), 2);
        assert_eq!(turn.tool_calls[0].arguments, r#"{"pattern":"*.rs"}"#);
        assert_eq!(turn.tool_calls[1].name, "grep_search");
        assert_eq!(turn.tool_calls[1].arguments, r#"{"pattern":"fn"}"#);
        assert_eq!(turn.finish_reason, FinishReason::ToolCalls);
        assert_eq!(turn.usage.map(|u| u.total_tokens), Some(15));
    }

    #[test]
    fn reasoning_content_streams_as_thinking_and_stays_out_of_the_answer() {
        let mut a = TurnAssembler::default();
        let seen = std::sync::Mutex::new(Vec::new());
        let sink = |d: crate::StreamDelta| seen.lock().unwrap().push(d);
        for payload in [
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"Think first."}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"The answer."},"finish_reason":"stop"}]}"#,
        ] {
            assert_eq!(a.apply_streaming(payload, &sink), Ok(Step::Continue));
        }
        assert_eq!(
            seen.into_inner().unwrap(),
            [
                crate::StreamDelta::Thinking("Think first.".into()),
                crate::StreamDelta::Text("The answer.".into())
            ]
        );
        assert_eq!(a.into_turn().text, "The answer.");
    }

    #[test]
    fn an_answer_that_streams_on_past_64_mib_is_cut_off() {
        for delta in [
            format!(r#"{{"content":"{}"}}"#, "t".repeat(1 << 20)),
            format!(
                r#"{{"tool_calls":[{{"index":0,"id":"c","function":{{"name":"glob","arguments":"{}"}}}}]}}"#,
                "a".repeat(1 << 20)
            ),
        ] {
            let payload = format!(r#"{{"choices":[{{"index":0,"delta":{delta}}}]}}"#);
            let mut a = TurnAssembler::default();
            let mut steps = 0;
            let error = loop {
                match a.apply(&payload) {
                    Ok(_) => steps += 1,
                    Err(e) => break e,
                }
                assert!(steps <= 64, "still taking after {steps} MiB");
            };
            // 64 MiB pass (less the name of the call).
            assert!((63..=64).contains(&steps), "{steps}: {error}");
            assert!(error.contains("64 MiB"), "{error}");
        }
    }

    #[test]
    fn deltas_without_index_follow_their_ids() {
        let mut a = TurnAssembler::default();
        for payload in [
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"{"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"y","arguments":"{}"}}]}}]}"#,
        ] {
            a.apply(payload).unwrap();
        }
        let calls = a.into_turn().tool_calls;
        assert_eq!(
            calls
                .iter()
                .map(|c| (c.id.as_str(), c.arguments.as_str()))
                .collect::<Vec<_>>(),
            [("a", "{}"), ("b", "{}")]
        );
    }

    #[test]
    fn malformed_data_is_an_error_naming_it() {
        let mut a = TurnAssembler::default();
        let err = a.apply("{not json").unwrap_err();
        assert!(err.contains("malformed stream data"), "{err}");
    }
}
