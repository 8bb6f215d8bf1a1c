#![cfg_attr(test, allow(clippy::too_many_lines))]
//! Model access for toolbelt: an OpenAI-compatible Chat Completions client and a replay
//! model that answers from a script, behind one [`Model`] trait.
//!
//! # Brief overview
//!
//! The agent speaks in plain Rust types ([`Message`], [`ModelRequest`], [`ModelTurn`]);
//! only this crate knows the OpenAI wire format (`wire.rs`). [`OpenAiClient`] sends a
//! request, streamed (`sse.rs` decodes the event stream and assembles tool-call deltas by
//! index) or not, and retries what is worth retrying (`retry.rs`: 429, 5xx, connection
//! errors, a stream cut short; exponential backoff with jitter; `Retry-After` honoured, seconds or HTTP date).
//! A refusal the server means (400, 401, 403, 404) ends the run with the server's own
//! message. [`ReplayModel`] answers the n-th request with the n-th turn of a JSONL
//! script, so the whole agent runs offline; [`RecordingModel`] writes a real run's turns
//! in the same format.
//!
//! Feature `fake-server`: a scripted OpenAI-compatible server on 127.0.0.1 that checks
//! every request it receives, for tests and benchmarks.

use std::fmt;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

mod openai;
mod replay;
mod retry;
mod sse;
mod wire;

#[cfg(any(test, feature = "fake-server"))]
pub mod fake_server;

pub use openai::{OpenAiClient, OpenAiConfig};
pub use replay::{RecordingModel, ReplayModel, ScriptTurn, ScriptedCall, parse_script};
pub use retry::RetryPolicy;

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    System(String),
    User(Vec<UserPart>),
    Assistant {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, as text.
    Tool {
        call_id: String,
        text: String,
    },
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Self {
        Message::User(vec![UserPart::Text(text.into())])
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum UserPart {
    Text(String),
    /// Sent as a `data:` URL to models that take images.
    Image {
        mime_type: String,
        data: Vec<u8>,
    },
}

/// A function call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The argument text as the model sent it (possibly not even JSON).
    pub arguments: String,
}

/// A tool as the model is told about it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelRequest {
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    /// The tool the model must call in this request (`tool_choice` naming it), as VS
    /// Code's loop forces each `#reference`d tool once. `None`: the model chooses.
    pub tool_choice: Option<String>,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    #[default]
    Stop,
    ToolCalls,
    /// The output token limit cut the reply off.
    Length,
    ContentFilter,
    #[serde(untagged)]
    Other(String),
}

impl FinishReason {
    pub fn from_wire(s: &str) -> Self {
        match s {
            "stop" | "end_turn" => FinishReason::Stop,
            "tool_calls" | "function_call" => FinishReason::ToolCalls,
            "length" | "max_tokens" => FinishReason::Length,
            "content_filter" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_string()),
        }
    }
}

/// Token counts of one request, as the server reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
    }
}

/// One answer of the model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelTurn {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: FinishReason,
    pub usage: Option<Usage>,
}

/// Faults that end a run: the model cannot be used. (A tool failure is never one.)
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The server refused the request and retrying will not help (bad request, bad key,
    /// unknown model or endpoint). Carries the server's own message.
    #[error("the model server refused the request (HTTP {status}): {message}")]
    Rejected { status: u16, message: String },
    /// Every attempt failed with a retryable error.
    #[error("the model server failed {attempts} times; last error: {last}")]
    Unavailable { attempts: u32, last: String },
    /// Nothing listens at a local address: the connection was refused, so retrying would
    /// only make the person wait. `origin` names what set the URL.
    #[error(
        "cannot reach the model server at {url}: the connection was refused (nothing listens there). The URL comes from {origin}; check that the server runs, or point it elsewhere"
    )]
    Unreachable { url: String, origin: String },
    #[error("the model request was cancelled")]
    Cancelled,
    /// The replay script has no answer for this request, or cannot be read.
    #[error("replay: {0}")]
    Replay(String),
    #[error("{0}")]
    Config(String),
}

/// A piece of an answer while the model streams it, for displays that show it as it
/// comes (the assembled [`ModelTurn`] is still the answer).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamDelta {
    /// More answer text.
    Text(String),
    /// A tool call begins: its position in the answer, id and name (as far as known).
    ToolCallStart {
        index: u32,
        id: String,
        name: String,
    },
    /// More argument text of the tool call at `index`.
    ToolCallArguments { index: u32, text: String },
    /// The request is tried again (the last attempt failed, perhaps mid-stream): what
    /// was streamed so far is void, and the answer streams again from its start.
    Restart,
}

/// Where [`Model::complete_streaming`] sends the pieces.
pub type DeltaSink<'a> = &'a (dyn Fn(StreamDelta) + Send + Sync);

/// Something that answers model requests.
pub trait Model: Send + Sync {
    /// The model's name, for output and records.
    fn name(&self) -> &str;
    /// Whether inline images may be sent to it.
    fn takes_images(&self) -> bool {
        false
    }
    /// Answers one request. Stops promptly with [`ModelError::Cancelled`] when `cancel`
    /// fires.
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ModelTurn, ModelError>>;

    /// [`Model::complete`], telling `on_delta` each piece as it arrives. Models that do
    /// not stream send nothing (the default). A retried attempt starts its pieces over.
    fn complete_streaming<'a>(
        &'a self,
        request: &'a ModelRequest,
        cancel: &'a CancellationToken,
        on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ModelTurn, ModelError>> {
        let _ = on_delta;
        self.complete(request, cancel)
    }
}

impl fmt::Debug for dyn Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Model").field(&self.name()).finish()
    }
}
