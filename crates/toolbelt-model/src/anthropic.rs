//! The Anthropic Messages client (`POST {base}/v1/messages`), always streamed, with the
//! retries every format shares (`retry.rs`).
//!
//! Written from Anthropic's API reference: the key goes in `x-api-key`, the API version
//! in `anthropic-version`. `wire.rs` (in `anthropic/`) makes the request body from the
//! conversation, `stream.rs` assembles the answer from the server-sent events. HTTP 429
//! and 529 (`overloaded_error`) are retried honouring `retry-after`, like every 5xx; so is
//! an `error` event mid-stream that says the server is overloaded or failed.
//!
//! Timeouts as in the chat client: `request_timeout` bounds the wait for the headers and
//! each silence of the stream, not a long answer that keeps coming.

use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use reqwest::StatusCode;
use tokio_util::sync::CancellationToken;
use toolbelt_sse::SseDecoder;

use crate::retry::{AttemptError, RetryPolicy, error_chain, parse_retry_after, retry, send_error};
use crate::{Model, ModelError, ModelRequest, ModelTurn, Sampling};

mod stream;
mod wire;

/// The `anthropic-version` header sent: the version the Messages API is documented at.
const API_VERSION: &str = "2023-06-01";

#[derive(Debug, Clone)]
/// How to reach an Anthropic Messages server.
pub struct AnthropicConfig {
    /// The server, e.g. `https://api.anthropic.com` (a trailing `/v1` is accepted too).
    pub base_url: String,
    /// Sent as `x-api-key` when present.
    pub api_key: Option<String>,
    /// The model name sent in each request.
    pub model: String,
    /// `max_tokens`, which the API requires (from [`Sampling::max_tokens`] when set).
    pub max_tokens: u32,
    /// Extended thinking's `budget_tokens`; `None` leaves thinking off.
    pub thinking_budget: Option<u32>,
    /// Mark the system prompt and the last tool for prompt caching (`cache_control`).
    pub cache_control: bool,
    /// Sampling settings (`temperature`, `top_p`, `top_k`).
    pub sampling: Sampling,
    /// More headers sent with every request (`customHeaders`).
    pub headers: Vec<(String, String)>,
    /// How long a request, or a silence mid-stream, may last.
    pub request_timeout: Duration,
    /// What is retried, and how often.
    pub retry: RetryPolicy,
    /// Whether inline images may be sent.
    pub takes_images: bool,
    /// What set `base_url` (a flag, a variable, a setting), named in errors.
    pub base_url_origin: Option<String>,
    /// What set the key, named when the server refuses it.
    pub api_key_origin: Option<String>,
}

impl AnthropicConfig {
    /// A configuration for `model` at `base_url`, with default limits and no key.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        AnthropicConfig {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            max_tokens: 8192,
            thinking_budget: None,
            cache_control: true,
            sampling: Sampling::default(),
            headers: Vec::new(),
            request_timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
            takes_images: true,
            base_url_origin: None,
            api_key_origin: None,
        }
    }
}

/// The Messages API client.
pub struct AnthropicClient {
    http: reqwest::Client,
    config: AnthropicConfig,
    url: String,
}

impl AnthropicClient {
    /// A client for `config`; fails on a URL that is not http(s) or a header that
    /// cannot be sent.
    pub fn new(config: AnthropicConfig) -> Result<Self, ModelError> {
        let base = config.base_url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        let url = format!("{base}/v1/messages");
        if !url.starts_with("http://") && !url.starts_with("https://") {
            return Err(ModelError::Config(format!(
                "the Anthropic base URL must start with http:// or https://, got '{}'{}",
                config.base_url,
                origin_note(config.base_url_origin.as_deref())
            )));
        }
        let http = toolbelt_netguard::client_builder()
            .connect_timeout(config.request_timeout.min(Duration::from_secs(30)))
            .default_headers(crate::retry::header_map(&config.headers)?)
            .build()
            .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(AnthropicClient { http, config, url })
    }

    async fn attempt(
        &self,
        request: &ModelRequest,
        on_delta: crate::DeltaSink<'_>,
    ) -> Result<ModelTurn, AttemptError> {
        let body = wire::request_body(&self.config, request);
        let mut builder = self
            .http
            .post(&self.url)
            .header("anthropic-version", API_VERSION)
            .json(&body);
        if let Some(key) = &self.config.api_key {
            builder = builder.header("x-api-key", key);
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
        self.read_stream(response, on_delta).await
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
        let message = crate::wire::error_message(&body);
        // 529 is Anthropic's "overloaded"; it is in the 5xx range the policy retries.
        if RetryPolicy::retryable_status(status.as_u16()) {
            return AttemptError::Retry {
                reason: format!("HTTP {} from {}: {message}", status.as_u16(), self.url),
                retry_after,
            };
        }
        let hint = match status.as_u16() {
            401 | 403 => format!(
                " (the key comes from {}; the server is {})",
                self.config
                    .api_key_origin
                    .as_deref()
                    .unwrap_or("ANTHROPIC_API_KEY"),
                self.url
            ),
            404 => format!(
                " (check the model name '{}' and the URL {}{})",
                self.config.model,
                self.url,
                origin_note(self.config.base_url_origin.as_deref())
            ),
            _ => String::new(),
        };
        AttemptError::Fatal(ModelError::Rejected {
            status: status.as_u16(),
            message: format!("{message}{hint}"),
        })
    }

    async fn read_stream(
        &self,
        response: reqwest::Response,
        on_delta: crate::DeltaSink<'_>,
    ) -> Result<ModelTurn, AttemptError> {
        let timeout = self.config.request_timeout;
        let mut body = response.bytes_stream();
        let mut decoder = SseDecoder::default();
        let mut turn = stream::MessageAssembler::default();
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
                if turn.apply(&event.data, on_delta)? == stream::Step::Done {
                    return Ok(turn.into_turn());
                }
            }
        }
        if let Some(event) = decoder.finish()
            && turn.apply(&event.data, on_delta)? == stream::Step::Done
        {
            return Ok(turn.into_turn());
        }
        Err(retry(
            "the stream ended before message_stop: the answer is incomplete",
        ))
    }
}

fn origin_note(origin: Option<&str>) -> String {
    origin.map(|o| format!("; set by {o}")).unwrap_or_default()
}

impl Model for AnthropicClient {
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
