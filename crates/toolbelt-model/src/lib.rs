#![cfg_attr(test, allow(clippy::too_many_lines))]
//! Model access for toolbelt: clients of four wire formats (OpenAI-compatible Chat
//! Completions, Anthropic Messages, Gemini, OpenAI Responses) and a replay model that
//! answers from a script, behind one [`Model`] trait.
//!
//! # Brief overview
//!
//! The agent speaks in plain Rust types ([`Message`], [`ModelRequest`], [`ModelTurn`]);
//! only this crate knows the wire formats. [`OpenAiClient`] sends a Chat Completions
//! request (`wire.rs`), streamed (`sse.rs` decodes the event stream and assembles tool-call
//! deltas by index) or not, and retries what is worth retrying (`retry.rs`: 429, 5xx,
//! connection errors, a stream cut short; exponential backoff with jitter; `Retry-After`
//! honoured, seconds or HTTP date). [`AnthropicClient`] (Messages API), [`GeminiModel`]
//! (Gemini API or Vertex AI) and [`ResponsesModel`] do the same for their formats with
//! the same retry loop. What only one format understands (Anthropic's signed thinking
//! blocks, Gemini's thought signatures, Responses' encrypted reasoning) travels on the
//! assistant message as an [`OpaquePart`] and goes back to that format alone.
//! A refusal the server means (400, 401, 403, 404) ends the run with the server's own
//! message. [`ReplayModel`] answers the n-th request with the n-th turn of a JSONL
//! script, so the whole agent runs offline; [`RecordingModel`] writes a real run's turns
//! in the same format.
//!
//! Feature `fake-server`: scripted Chat Completions, Anthropic Messages, Gemini and
//! Responses servers on 127.0.0.1 that check every request they receive, for tests and
//! benchmarks.

#![warn(missing_docs, unreachable_pub)]

use std::fmt;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

mod anthropic;
mod gemini;
mod openai;
mod replay;
mod responses;
mod retry;
mod sse;
#[cfg(test)]
mod test_support;
mod transport;
mod wire;

#[cfg(any(test, feature = "fake-server"))]
pub mod fake_gemini;
#[cfg(any(test, feature = "fake-server"))]
mod fake_http;
#[cfg(any(test, feature = "fake-server"))]
pub mod fake_responses;
#[cfg(any(test, feature = "fake-server"))]
pub mod fake_server;

pub use anthropic::{AnthropicClient, AnthropicConfig};
#[cfg(any(test, feature = "fake-server"))]
pub use fake_http::FakeRequest;
pub use gemini::{GeminiConfig, GeminiModel, GeminiService};
pub use openai::{OpenAiClient, OpenAiConfig};
pub use replay::{
    RecordingModel, ReplayModel, ScriptError, ScriptTurn, ScriptedCall, parse_script,
};
pub use responses::{ResponsesConfig, ResponsesModel};
pub use retry::RetryPolicy;

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The system prompt.
    System(String),
    /// What the person (or the run) says: text and images.
    User(Vec<UserPart>),
    /// An answer of the model.
    Assistant {
        /// Its text.
        text: String,
        /// The tool calls it asked for.
        tool_calls: Vec<ToolCall>,
        /// Parts only the wire format that produced them reads (thinking blocks and
        /// their signatures), sent back to that format as they came.
        reasoning: Vec<OpaquePart>,
    },
    /// The result of one tool call: its text, whether the call failed, and the images it
    /// returned. Each wire format sends these in its own form (see `docs/models.md`):
    /// Anthropic and Responses inside the result, Gemini and chat completions (whose
    /// results are text only) in the same or the next user content, with a note in the
    /// text. The images are only for models that take them; the agent turns them into a
    /// note in `text` for the others.
    Tool {
        /// The id of the call answered.
        call_id: String,
        /// The result's text (may be empty when `images` are not).
        text: String,
        /// The call failed (not found, invalid, refused, cancelled or a tool error):
        /// the scheduler's outcome, not read from the text.
        is_error: bool,
        /// Images the call returned, in order, after the text.
        images: Vec<ToolImage>,
    },
}

impl Message {
    /// A user message of one text part.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message::User(vec![UserPart::Text(text.into())])
    }
}

#[derive(Debug, Clone, PartialEq)]
/// One part of a user message.
pub enum UserPart {
    /// Text.
    Text(String),
    /// Sent as a `data:` URL to models that take images.
    Image {
        /// The image's MIME type.
        mime_type: String,
        /// The image's bytes.
        data: Vec<u8>,
    },
}

/// An image a tool returned (`read_file` of a PNG, an MCP tool's image content).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolImage {
    /// The image's MIME type (`image/png`).
    pub mime_type: String,
    /// The image's bytes (base64 only on the wire).
    pub data: Vec<u8>,
}

impl ToolImage {
    /// The image as a `data:` URL.
    pub(crate) fn data_url(&self) -> String {
        use base64::Engine;
        let data = base64::engine::general_purpose::STANDARD.encode(&self.data);
        format!("data:{};base64,{data}", self.mime_type)
    }
}

/// A part of an answer that only the wire format which produced it understands, kept
/// on the assistant message and sent back to that format unchanged: Anthropic's
/// `thinking` and `redacted_thinking` blocks with their signatures, which the API wants
/// back while a tool-use turn goes on (an OpenAI Responses reasoning item with its
/// `encrypted_content`, or a Gemini `thoughtSignature`, fit the same shape). Another
/// format leaves it out: a signature is only valid where it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct OpaquePart {
    /// The format that made it: `anthropic`, `gemini`, `openai-responses`.
    pub format: String,
    /// The part as the server sent it.
    pub value: serde_json::Value,
}

impl OpaquePart {
    /// The value of the first of `parts` that `format` made. (Gemini and Responses keep
    /// all of an answer's state in one part; Anthropic keeps one part per thinking block.)
    pub fn of_format<'a>(parts: &'a [OpaquePart], format: &str) -> Option<&'a serde_json::Value> {
        parts.iter().find(|p| p.format == format).map(|p| &p.value)
    }
}

/// A function call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The id the result must name.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The argument text as the model sent it (possibly not even JSON).
    pub arguments: String,
}

/// A tool as the model is told about it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The registered name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
}

/// Sampling settings sent with every request where the wire format has them (Qwen
/// Code's `generationConfig.samplingParams`); `None` leaves the server's default.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sampling {
    /// `temperature`.
    pub temperature: Option<f64>,
    /// `top_p`.
    pub top_p: Option<f64>,
    /// `top_k` (not in OpenAI's chat format, but vLLM and others take it; not in the
    /// Responses API).
    pub top_k: Option<u32>,
    /// The most tokens of one answer.
    pub max_tokens: Option<u32>,
    /// `presence_penalty` (chat format and Gemini).
    pub presence_penalty: Option<f64>,
    /// `frequency_penalty` (chat format and Gemini).
    pub frequency_penalty: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Default)]
/// One request to the model.
pub struct ModelRequest {
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// The tool the model must call in this request (`tool_choice` naming it), as VS
    /// Code's loop forces each `#reference`d tool once. `None`: the model chooses.
    pub tool_choice: Option<String>,
    /// Sampling settings of this request alone, over the client's (an MCP server's
    /// sampling request: its `maxTokens` and temperature). `None`: the client's.
    pub sampling: Option<Sampling>,
}

impl ModelRequest {
    /// The client's `base` settings with this request's own over them.
    pub fn sampling_over(&self, base: &Sampling) -> Sampling {
        let Some(own) = &self.sampling else {
            return base.clone();
        };
        Sampling {
            temperature: own.temperature.or(base.temperature),
            top_p: own.top_p.or(base.top_p),
            top_k: own.top_k.or(base.top_k),
            max_tokens: own.max_tokens.or(base.max_tokens),
            presence_penalty: own.presence_penalty.or(base.presence_penalty),
            frequency_penalty: own.frequency_penalty.or(base.frequency_penalty),
        }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    #[default]
    /// The answer is complete.
    Stop,
    /// The model asks for tool calls.
    ToolCalls,
    /// The output token limit cut the reply off.
    Length,
    /// A content filter cut the reply.
    ContentFilter,
    #[serde(untagged)]
    /// A reason this crate does not know, as sent.
    Other(String),
}

impl FinishReason {
    /// The reason a server sent (`stop`, `tool_calls`, ...).
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
    /// Tokens of the request.
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub completion_tokens: u64,
    /// Both.
    pub total_tokens: u64,
    /// Tokens of the request read from the server's prompt cache (counted in
    /// `prompt_tokens` too).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// Tokens of the request written to the server's prompt cache (counted in
    /// `prompt_tokens` too).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// Of `completion_tokens`, those spent on reasoning the answer does not show.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Adds `other`'s counts (a run's total over its requests).
    pub fn add(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
    }
}

/// One answer of the model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelTurn {
    /// The answer text.
    pub text: String,
    /// The tool calls asked for, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// Token counts, when the server sent them.
    pub usage: Option<Usage>,
    /// Parts for the assistant message that only this format reads
    /// ([`Message::Assistant`]'s `reasoning`).
    pub reasoning: Vec<OpaquePart>,
}

/// Faults that end a run: the model cannot be used. (A tool failure is never one.)
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The server refused the request and retrying will not help (bad request, bad key,
    /// unknown model or endpoint). Carries the server's own message.
    #[error("the model server refused the request (HTTP {status}): {message}")]
    Rejected {
        /// The HTTP status.
        status: u16,
        /// The server's message.
        message: String,
    },
    /// Every attempt failed with a retryable error.
    #[error("the model server failed {attempts} times; last error: {last}")]
    Unavailable {
        /// How many attempts were made.
        attempts: u32,
        /// The last attempt's error.
        last: String,
    },
    /// The server cannot be reached in a way a retry a few seconds later would not
    /// change: nothing listens at a local address (the connection was refused), or the
    /// host name does not resolve. Retrying would only make the person wait. `origin`
    /// names what set the URL.
    #[error(
        "cannot reach the model server at {url}: {reason}. The URL comes from {origin}; check that the server runs and the URL is right, or point it elsewhere"
    )]
    Unreachable {
        /// The URL tried.
        url: String,
        /// What set it (a flag, a variable, a settings file).
        origin: String,
        /// What went wrong, for a person (`the connection was refused (nothing listens
        /// there)`, `its host name does not resolve (...)`).
        reason: String,
    },
    #[error("the model request was cancelled")]
    /// The run was cancelled while waiting for the model.
    Cancelled,
    /// The replay script has no answer for this request, or cannot be read.
    #[error("replay: {0}")]
    Replay(String),
    #[error("{0}")]
    /// The client cannot be set up (a bad URL, a header that cannot be sent).
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
        /// Its position in the answer.
        index: u32,
        /// Its id (empty until known).
        id: String,
        /// The tool's name (empty until known).
        name: String,
    },
    /// More argument text of the tool call at `index`.
    ToolCallArguments {
        /// The call's position in the answer.
        index: u32,
        /// The added text.
        text: String,
    },
    /// The request is tried again (the last attempt failed, perhaps mid-stream): what
    /// was streamed so far is void, and the answer streams again from its start.
    Restart,
    /// More of the model's reasoning, as the server shows it (Anthropic's thinking,
    /// Gemini's thought summaries, `reasoning_content` of OpenAI-compatible servers):
    /// for a display; it is not the answer.
    Thinking(String),
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
