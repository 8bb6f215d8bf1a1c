//! The Gemini client (`streamGenerateContent` with `alt=sse`): the Gemini API with an API
//! key, or Vertex AI, which differs only in the URL's prefix and the credential (an
//! OAuth access token as a bearer token, or in express mode an API key).
//!
//! Gemini has no deltas of tool calls: each `functionCall` part arrives whole, with its
//! arguments as a JSON object. Thinking models attach a `thoughtSignature` to parts; the
//! next request must carry each one back on the same part, so the turn keeps them in its
//! [`OpaquePart`](crate::OpaquePart) of format `gemini` (`wire.rs` says how). The request shapes are in
//! `gemini/wire.rs`, the schema subset Gemini accepts in `gemini/schema.rs`, the reading of
//! the stream in `gemini/stream.rs`.

use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::retry::{AttemptError, RetryPolicy, retry, with_retries};
use crate::transport::Endpoint;
use crate::{DeltaSink, Model, ModelError, ModelRequest, ModelTurn, Sampling};

mod schema;
mod stream;
mod wire;

/// The name [`OpaquePart::format`](crate::OpaquePart::format) carries for this format.
pub(crate) const FORMAT: &str = "gemini";

/// Which service serves Gemini: they differ in the URL and the credential only.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GeminiService {
    /// The Gemini API: `{base}/v1beta/models/{model}`, the key in `x-goog-api-key`.
    GeminiApi,
    /// Vertex AI: `{base}/v1/projects/{project}/locations/{location}/publishers/google/
    /// models/{model}`, an OAuth access token as a bearer token.
    VertexAi {
        /// The Google Cloud project.
        project: String,
        /// The region, or `global`.
        location: String,
    },
    /// Vertex AI in express mode: `{base}/v1/publishers/google/models/{model}`, a Vertex
    /// AI API key in `x-goog-api-key` (no project or region in the path).
    VertexAiExpress,
}

#[derive(Debug, Clone)]
/// How to reach Gemini.
pub struct GeminiConfig {
    /// The scheme and host, e.g. `https://generativelanguage.googleapis.com` (the API
    /// version is added).
    pub base_url: String,
    /// The API key (Gemini API) or access token (Vertex AI).
    pub api_key: Option<String>,
    /// The model, e.g. `gemini-2.5-pro` (a leading `models/` is dropped).
    pub model: String,
    /// Which service `base_url` is.
    pub service: GeminiService,
    /// How long a request, or a silence mid-stream, may last.
    pub request_timeout: Duration,
    /// What is retried, and how often.
    pub retry: RetryPolicy,
    /// Whether inline images may be sent.
    pub takes_images: bool,
    /// What set `base_url`, named when nothing listens there (for example
    /// "GOOGLE_GEMINI_BASE_URL"); `None` says only "the configuration".
    pub base_url_origin: Option<String>,
    /// Sent as `generationConfig` (`temperature`, `topP`, `topK`, `maxOutputTokens`,
    /// `presencePenalty`, `frequencyPenalty`).
    pub sampling: Sampling,
    /// More headers for every request (`generationConfig.customHeaders`).
    pub headers: Vec<(String, String)>,
}

impl GeminiConfig {
    /// The Gemini API's own host.
    pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";
    /// Vertex AI's global host (a region's is `https://{region}-aiplatform.googleapis.com`).
    pub const VERTEX_GLOBAL_URL: &str = "https://aiplatform.googleapis.com";

    /// The Gemini API for `model` at `base_url`, with default limits and no key.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        GeminiConfig {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            service: GeminiService::GeminiApi,
            request_timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
            takes_images: true,
            base_url_origin: None,
            sampling: Sampling::default(),
            headers: Vec::new(),
        }
    }

    /// Vertex AI in `project` and `location`, at its regional host (`base_url` may be
    /// changed afterwards, for a proxy or a test server).
    pub fn vertex(
        project: impl Into<String>,
        location: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        let location = location.into();
        let host = if location == "global" {
            Self::VERTEX_GLOBAL_URL.to_string()
        } else {
            format!("https://{location}-aiplatform.googleapis.com")
        };
        GeminiConfig {
            service: GeminiService::VertexAi {
                project: project.into(),
                location,
            },
            ..GeminiConfig::new(host, model)
        }
    }

    /// Vertex AI in express mode (an API key, no project) at its global host.
    pub fn vertex_express(model: impl Into<String>) -> Self {
        GeminiConfig {
            service: GeminiService::VertexAiExpress,
            ..GeminiConfig::new(Self::VERTEX_GLOBAL_URL, model)
        }
    }

    /// The streaming URL of this configuration.
    fn url(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        let model = self.model.trim_start_matches("models/");
        let prefix = match &self.service {
            GeminiService::GeminiApi => format!("{base}/v1beta"),
            GeminiService::VertexAi { project, location } => {
                format!("{base}/v1/projects/{project}/locations/{location}/publishers/google")
            }
            GeminiService::VertexAiExpress => format!("{base}/v1/publishers/google"),
        };
        format!("{prefix}/models/{model}:streamGenerateContent?alt=sse")
    }
}

/// The Gemini client.
pub struct GeminiModel {
    config: GeminiConfig,
    endpoint: Endpoint,
}

impl GeminiModel {
    /// A client for `config`; fails when the URL is not HTTP(S) or the HTTP client cannot
    /// be built.
    pub fn new(config: GeminiConfig) -> Result<Self, ModelError> {
        let hint = match config.service {
            GeminiService::GeminiApi => "check GEMINI_API_KEY or GOOGLE_API_KEY",
            GeminiService::VertexAi { .. } => {
                "check the Vertex AI access token and the project's permissions"
            }
            GeminiService::VertexAiExpress => "check GOOGLE_API_KEY (a Vertex AI API key)",
        };
        let endpoint = Endpoint::new(
            config.url(),
            config.request_timeout,
            config.base_url_origin.clone(),
            hint.to_string(),
            &config.headers,
        )?;
        Ok(GeminiModel { config, endpoint })
    }

    async fn attempt(
        &self,
        request: &ModelRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ModelTurn, AttemptError> {
        let body = wire::request_body(request, &request.sampling_over(&self.config.sampling));
        let mut builder = self.endpoint.http.post(&self.endpoint.url).json(&body);
        if let Some(key) = &self.config.api_key {
            builder = match self.config.service {
                GeminiService::GeminiApi | GeminiService::VertexAiExpress => {
                    builder.header("x-goog-api-key", key)
                }
                GeminiService::VertexAi { .. } => builder.bearer_auth(key),
            };
        }
        let response = self.endpoint.send(builder).await?;
        let mut turn = stream::TurnAssembler::default();
        let complete = self
            .endpoint
            .read_events(response, |event| {
                turn.apply(&event.data, on_delta).map_err(retry)
            })
            .await?;
        if complete || turn.is_complete() {
            Ok(turn.into_turn())
        } else {
            Err(retry("the stream ended before the answer was complete"))
        }
    }
}

impl Model for GeminiModel {
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
