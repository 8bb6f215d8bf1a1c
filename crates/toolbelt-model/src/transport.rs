//! One HTTP attempt of the Gemini and Responses clients: timeouts, a refused local port,
//! a status that is retried or final, and the reading of its event stream. The retry
//! loop around attempts, and what is worth another one, is `retry.rs`'s, shared with the
//! Chat Completions and Anthropic clients.

use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use toolbelt_sse::{Event, SseDecoder};

use crate::ModelError;
use crate::retry::{AttemptError, RetryPolicy, error_chain, parse_retry_after, retry, send_error};

/// Where requests go and how long they may take.
pub(crate) struct Endpoint {
    pub(crate) http: reqwest::Client,
    /// The full URL of the request.
    pub(crate) url: String,
    /// Bounds the wait for the headers and every silence mid-stream.
    pub(crate) timeout: Duration,
    /// What set the URL, named when nothing listens there.
    pub(crate) origin: Option<String>,
    /// Said after a 401 or 403 (which key or setting to check).
    pub(crate) auth_hint: String,
}

impl Endpoint {
    /// An endpoint at `url` that sends `headers` with every request; fails when the URL
    /// is not HTTP(S), a header cannot be sent, or the client cannot be built.
    pub(crate) fn new(
        url: String,
        timeout: Duration,
        origin: Option<String>,
        auth_hint: String,
        headers: &[(String, String)],
    ) -> Result<Self, ModelError> {
        if !url.starts_with("http://") && !url.starts_with("https://") {
            return Err(ModelError::Config(format!(
                "the model base URL must start with http:// or https://, got '{url}'"
            )));
        }
        let http = toolbelt_netguard::client_builder()
            .connect_timeout(timeout.min(Duration::from_secs(30)))
            .default_headers(crate::retry::header_map(headers)?)
            .build()
            .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Endpoint {
            http,
            url,
            timeout,
            origin,
            auth_hint,
        })
    }

    /// Sends `request` (built on `self.http` for `self.url`); a success status's response.
    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, AttemptError> {
        let timeout = self.timeout;
        let response = match tokio::time::timeout(timeout, request.send()).await {
            Err(_) => return Err(retry(format!("no response within {timeout:?}"))),
            Ok(Err(e)) => return Err(send_error(&self.url, self.origin.as_deref(), &e)),
            Ok(Ok(r)) => r,
        };
        let status = response.status();
        if status.is_success() {
            Ok(response)
        } else {
            Err(self.status_error(status, response).await)
        }
    }

    async fn status_error(&self, status: StatusCode, response: reqwest::Response) -> AttemptError {
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let body = tokio::time::timeout(self.timeout, response.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let message = crate::wire::error_message(&body);
        let code = status.as_u16();
        if RetryPolicy::retryable_status(code) {
            return AttemptError::Retry {
                reason: format!("HTTP {code}: {message}"),
                retry_after,
            };
        }
        let hint = match code {
            401 | 403 => format!(" ({})", self.auth_hint),
            404 => format!(
                " (check the base URL and the model name; the URL was {})",
                self.url
            ),
            _ => String::new(),
        };
        AttemptError::Fatal(ModelError::Rejected {
            status: code,
            message: format!("{message}{hint}"),
        })
    }

    /// Feeds each event of `response`'s stream to `apply` until it says the turn is
    /// complete (`Ok(true)`) or the stream ends; whether it completed.
    pub(crate) async fn read_events(
        &self,
        response: reqwest::Response,
        mut apply: impl FnMut(&Event) -> Result<bool, AttemptError>,
    ) -> Result<bool, AttemptError> {
        let timeout = self.timeout;
        let mut body = response.bytes_stream();
        let mut decoder = SseDecoder::default();
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
            for event in decoder.feed(&piece).map_err(|e| retry(e.to_string()))? {
                if apply(&event)? {
                    return Ok(true);
                }
            }
        }
        match decoder.finish() {
            Some(event) => apply(&event),
            None => Ok(false),
        }
    }
}

/// At most 200 characters of `s`, for error messages that quote a payload.
pub(crate) fn shorten(s: &str) -> String {
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
