//! The OpenAI Responses API client (`POST {base}/responses`, streamed): the API OpenAI's
//! current models and Codex speak.
//!
//! Requests are stateless (`store: false`): the whole conversation goes with each one,
//! and a reasoning model's reasoning items come back encrypted
//! (`include: ["reasoning.encrypted_content"]`) so the next request can hand them back in
//! place. The turn keeps them in an [`OpaquePart`](crate::OpaquePart) of format
//! `openai-responses`, with the
//! order of the answer's items (`responses/wire.rs` says how). The stream's events are
//! folded into a turn by `responses/stream.rs`.

use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::retry::{AttemptError, RetryPolicy, retry, with_retries};
use crate::transport::Endpoint;
use crate::{DeltaSink, Model, ModelError, ModelRequest, ModelTurn, Sampling};

mod stream;
mod wire;

/// The name [`OpaquePart::format`](crate::OpaquePart::format) carries for this format.
pub(crate) const FORMAT: &str = "openai-responses";

#[derive(Debug, Clone)]
/// How to reach a Responses API server.
pub struct ResponsesConfig {
    /// Up to and including the version, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// Sent as a bearer token when present.
    pub api_key: Option<String>,
    /// The model name sent in each request.
    pub model: String,
    /// `reasoning.effort` (`minimal`, `low`, `medium`, `high`) for reasoning models;
    /// `None` leaves it to the server (and suits models that do not reason).
    pub reasoning_effort: Option<String>,
    /// How long a request, or a silence mid-stream, may last.
    pub request_timeout: Duration,
    /// What is retried, and how often.
    pub retry: RetryPolicy,
    /// Whether inline images may be sent.
    pub takes_images: bool,
    /// What set `base_url`, named when nothing listens there (for example
    /// "OPENAI_BASE_URL"); `None` says only "the configuration".
    pub base_url_origin: Option<String>,
    /// Sent as `temperature`, `top_p` and `max_output_tokens`; the API has no `top_k`
    /// and no penalties, so those are not sent.
    pub sampling: Sampling,
    /// More headers for every request (`generationConfig.customHeaders`).
    pub headers: Vec<(String, String)>,
}

impl ResponsesConfig {
    /// OpenAI's own endpoint.
    pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

    /// A configuration for `model` at `base_url`, with default limits and no key.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        ResponsesConfig {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            reasoning_effort: None,
            request_timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
            takes_images: true,
            base_url_origin: None,
            sampling: Sampling::default(),
            headers: Vec::new(),
        }
    }
}

/// The Responses API client.
pub struct ResponsesModel {
    config: ResponsesConfig,
    endpoint: Endpoint,
}

impl ResponsesModel {
    /// A client for `config`; fails when the URL is not HTTP(S) or the HTTP client cannot
    /// be built.
    pub fn new(config: ResponsesConfig) -> Result<Self, ModelError> {
        let url = format!("{}/responses", config.base_url.trim_end_matches('/'));
        let endpoint = Endpoint::new(
            url,
            config.request_timeout,
            config.base_url_origin.clone(),
            "check OPENAI_API_KEY".to_string(),
            &config.headers,
        )?;
        Ok(ResponsesModel { config, endpoint })
    }

    async fn attempt(
        &self,
        request: &ModelRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ModelTurn, AttemptError> {
        let body = wire::request_body(
            &self.config.model,
            self.config.reasoning_effort.as_deref(),
            &request.sampling_over(&self.config.sampling),
            request,
        );
        let mut builder = self.endpoint.http.post(&self.endpoint.url).json(&body);
        if let Some(key) = &self.config.api_key {
            builder = builder.bearer_auth(key);
        }
        let response = self.endpoint.send(builder).await?;
        let mut turn = stream::TurnAssembler::default();
        let complete = self
            .endpoint
            .read_events(response, |event| turn.apply(&event.data, on_delta))
            .await?;
        if complete {
            Ok(turn.into_turn())
        } else {
            Err(retry("the stream ended before response.completed"))
        }
    }
}

impl Model for ResponsesModel {
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
        on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ModelTurn, ModelError>> {
        Box::pin(with_retries(&self.config.retry, cancel, on_delta, || {
            self.attempt(request, on_delta)
        }))
    }
}

#[cfg(test)]
mod tests;
