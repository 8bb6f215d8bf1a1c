//! The OpenAI-compatible Chat Completions client: one request, streamed or not, with
//! retries.
//!
//! Timeouts: `request_timeout` bounds the wait for the response headers and, when
//! streaming, every gap between two pieces of the body, rather than the whole response:
//! a long answer that keeps coming is fine, a server that goes silent is not.

use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use reqwest::StatusCode;
use tokio_util::sync::CancellationToken;

use crate::retry::{AttemptError, RetryPolicy, error_chain, parse_retry_after, retry, send_error};
use toolbelt_sse::SseDecoder;

use crate::sse::{Step, TurnAssembler};
use crate::wire::{self, Response};
use crate::{FinishReason, Model, ModelError, ModelRequest, ModelTurn};

#[derive(Debug, Clone)]
/// How to reach an OpenAI-compatible server.
pub struct OpenAiConfig {
    /// Up to and including the version, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// Sent as a bearer token when present.
    pub api_key: Option<String>,
    /// The model name sent in each request.
    pub model: String,
    /// Whether to ask for a streamed answer.
    pub stream: bool,
    /// How long a request, or a silence mid-stream, may last.
    pub request_timeout: Duration,
    /// What is retried, and how often.
    pub retry: RetryPolicy,
    /// Whether inline images may be sent.
    pub takes_images: bool,
    /// What set `base_url`, named when nothing listens there (for example
    /// "OPENAI_BASE_URL"); `None` says only "the configuration".
    pub base_url_origin: Option<String>,
    /// Read `<tool_call>` blocks in an answer without `tool_calls` as calls
    /// (`text_calls.rs`; setting `model.toolCallsInText`).
    pub tool_calls_in_text: bool,
    /// Sampling settings sent with each request.
    pub sampling: crate::Sampling,
    /// More headers sent with every request (`customHeaders`).
    pub headers: Vec<(String, String)>,
    /// What set the key, named when the server refuses it; `None` names the usual
    /// flag and variable.
    pub api_key_origin: Option<String>,
}

impl OpenAiConfig {
    /// A configuration for `model` at `base_url`, with default limits and no key.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            stream: true,
            request_timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
            takes_images: false,
            base_url_origin: None,
            tool_calls_in_text: true,
            sampling: crate::Sampling::default(),
            headers: Vec::new(),
            api_key_origin: None,
        }
    }
}

/// The Chat Completions client.
pub struct OpenAiClient {
    http: reqwest::Client,
    config: OpenAiConfig,
    url: String,
}

impl OpenAiClient {
    /// A client for `config`; fails when the HTTP client cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        let http = toolbelt_netguard::client_builder()
            .connect_timeout(config.request_timeout.min(Duration::from_secs(30)))
            .default_headers(crate::retry::header_map(&config.headers)?)
            .build()
            .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {e}")))?;
        let url = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        if !url.starts_with("http://") && !url.starts_with("https://") {
            return Err(ModelError::Config(format!(
                "the model base URL must start with http:// or https://, got '{}'",
                config.base_url
            )));
        }
        Ok(OpenAiClient { http, config, url })
    }

    async fn attempt(
        &self,
        request: &ModelRequest,
        on_delta: crate::DeltaSink<'_>,
    ) -> Result<ModelTurn, AttemptError> {
        let body = wire::request_body(
            &self.config.model,
            request,
            self.config.stream,
            &request.sampling_over(&self.config.sampling),
        );
        let mut builder = self.http.post(&self.url).json(&body);
        if let Some(key) = &self.config.api_key {
            builder = builder.bearer_auth(key);
        }
        let timeout = self.config.request_timeout;
        let response = match tokio::time::timeout(timeout, builder.send()).await {
            Err(_) => return Err(retry(format!("no response within {timeout:?}"))),
            Ok(Err(e)) => {
                return Err(send_error(
                    &self.url,
                    self.config.base_url_origin.as_deref(),
                    &e,
                ));
            }
            Ok(Ok(r)) => r,
        };
        let status = response.status();
        if !status.is_success() {
            return Err(self.status_error(status, response).await);
        }
        let mut turn = if self.config.stream {
            self.read_stream(response, on_delta).await?
        } else {
            let text = match tokio::time::timeout(timeout, response.text()).await {
                Err(_) => return Err(retry(format!("the response body took over {timeout:?}"))),
                Ok(Err(e)) => return Err(retry(format!("reading the response: {e}"))),
                Ok(Ok(t)) => t,
            };
            parse_whole(&text)?
        };
        if self.config.tool_calls_in_text {
            let tools: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
            text_calls::extract(&mut turn, &tools);
        }
        Ok(turn)
    }

    async fn status_error(&self, status: StatusCode, response: reqwest::Response) -> AttemptError {
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let body = tokio::time::timeout(self.config.request_timeout, response.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let message = wire::error_message(&body);
        if RetryPolicy::retryable_status(status.as_u16()) {
            AttemptError::Retry {
                reason: format!("HTTP {}: {message}", status.as_u16()),
                retry_after,
            }
        } else {
            let hint = match (status.as_u16(), &self.config.api_key_origin) {
                (401 | 403, Some(origin)) => format!(" (the key comes from {origin})"),
                (401 | 403, None) => " (check OPENAI_API_KEY or --openai-api-key)".to_string(),
                (404, _) => " (check OPENAI_BASE_URL and the model name)".to_string(),
                _ => String::new(),
            };
            AttemptError::Fatal(ModelError::Rejected {
                status: status.as_u16(),
                message: format!("{message}{hint}"),
            })
        }
    }

    async fn read_stream(
        &self,
        response: reqwest::Response,
        on_delta: crate::DeltaSink<'_>,
    ) -> Result<ModelTurn, AttemptError> {
        let timeout = self.config.request_timeout;
        let mut body = response.bytes_stream();
        let mut decoder = SseDecoder::default();
        let mut turn = TurnAssembler::default();
        loop {
            let piece = match tokio::time::timeout(timeout, body.next()).await {
                Err(_) => return Err(retry(format!("the stream was silent for {timeout:?}"))),
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    return Err(retry(format!(
                        "the connection broke mid-stream: {}",
                        error_chain(&e)
                    )));
                }
                Ok(Some(Ok(bytes))) => bytes,
            };
            let events = decoder.feed(&piece).map_err(|e| retry(e.to_string()))?;
            for event in events {
                let step = turn.apply_streaming(&event.data, on_delta).map_err(retry)?;
                if step == Step::Done {
                    return Ok(turn.into_turn());
                }
            }
        }
        if let Some(event) = decoder.finish() {
            turn.apply_streaming(&event.data, on_delta).map_err(retry)?;
        }
        if turn.is_complete() {
            Ok(turn.into_turn())
        } else {
            Err(retry("the stream ended before the answer was complete"))
        }
    }
}

fn parse_whole(text: &str) -> Result<ModelTurn, AttemptError> {
    let response: Response = serde_json::from_str(text).map_err(|e| {
        retry(format!(
            "malformed response ({e}): {}",
            wire::error_message(text)
        ))
    })?;
    let Some(choice) = response.choices.into_iter().next() else {
        return Err(retry("the response has no choices"));
    };
    let tool_calls: Vec<_> = choice
        .message
        .tool_calls
        .into_iter()
        .enumerate()
        .map(|(n, c)| c.into_call(n))
        .collect();
    let finish_reason = match choice.finish_reason.as_deref() {
        Some(r) => FinishReason::from_wire(r),
        None if !tool_calls.is_empty() => FinishReason::ToolCalls,
        None => FinishReason::Stop,
    };
    Ok(ModelTurn {
        text: choice.message.content.unwrap_or_default(),
        tool_calls,
        finish_reason,
        usage: response.usage.map(Into::into),
        ..Default::default()
    })
}

impl Model for OpenAiClient {
    fn name(&self) -> &str {
        &self.config.model
    }

    fn takes_images(&self) -> bool {
        self.config.takes_images
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ModelTurn, ModelError>> {
        self.complete_streaming(request, cancel, &|_| {})
    }

    fn complete_streaming<'a>(
        &'a self,
        request: &'a ModelRequest,
        cancel: &'a CancellationToken,
        on_delta: crate::DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ModelTurn, ModelError>> {
        Box::pin(crate::retry::with_retries(
            &self.config.retry,
            cancel,
            on_delta,
            move || self.attempt(request, on_delta),
        ))
    }
}

#[cfg(test)]
mod tests;
mod text_calls;
