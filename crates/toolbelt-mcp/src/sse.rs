//! The legacy HTTP+SSE transport (protocol 2024-11-05), for `url` servers. rmcp has no
//! client for it, so this is a small one on `reqwest`.
//!
//! The client opens a GET on the URL and reads Server-Sent Events. The first `endpoint`
//! event names (relative to the URL) where to POST our messages; every `message` event
//! after it is one JSON-RPC message from the server. A message that does not parse is
//! logged and skipped, so one bad line does not end the session.
//!
//! The configured headers (API keys) go with every request, so every request must go to
//! the origin the person configured: an `endpoint` on another scheme, host or port is
//! refused, and redirects are followed only within the origin. Otherwise a server (or
//! whoever controls its responses) could have our credentials sent anywhere. The same
//! holds for an OAuth access token (`oauth`), asked for before each request so that it
//! is refreshed when it expires; a 401 to the GET is a login to do.

use std::collections::{BTreeMap, VecDeque};

use futures::StreamExt;
use reqwest::header::HeaderMap;
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::auth::AuthorizationManager;
use std::sync::Arc;

use crate::start::StartError;
use tokio::sync::mpsc;
use toolbelt_sse::{Event, SseDecoder};

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SseError(String);

pub(crate) struct SseTransport {
    client: reqwest::Client,
    headers: HeaderMap,
    endpoint: reqwest::Url,
    /// The kept OAuth tokens, when the server is logged in to.
    auth: Option<Arc<AuthorizationManager>>,
    incoming: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl SseTransport {
    /// Opens the event stream and waits for the `endpoint` event. A 401 is
    /// [`StartError::NeedsLogin`] (with the status line; the caller decides whether a
    /// login applies).
    pub(crate) async fn connect(
        url: &str,
        headers: &BTreeMap<String, String>,
        auth: Option<Arc<AuthorizationManager>>,
    ) -> Result<Self, StartError> {
        let base = reqwest::Url::parse(url).map_err(|e| format!("invalid url {url:?}: {e}"))?;
        let header_map = crate::start::header_map(headers)?;
        let client = crate::start::same_origin_client()?;
        let open =
            || (client.get(base.clone())).header(reqwest::header::ACCEPT, "text/event-stream");
        let response = send_authorized(open, &header_map, auth.as_deref())
            .await
            .map_err(|e| format!("cannot open the SSE stream at {url}: {e}"))?;
        if response.status() == reqwest::StatusCode::UNAUTHORIZED {
            let why = format!("GET {url} answered {}", response.status());
            return Err(StartError::NeedsLogin(why));
        }
        if !response.status().is_success() {
            return Err(format!("GET {url} answered {}", response.status()).into());
        }
        let mut events = EventStream::new(
            response
                .bytes_stream()
                .map(|chunk| chunk.map(|b| b.to_vec()))
                .boxed(),
        );
        let endpoint = loop {
            match events.next_event().await {
                Some(event) if event.name == "endpoint" => {
                    let endpoint = base
                        .join(event.data.trim())
                        .map_err(|e| format!("bad endpoint event {:?}: {e}", event.data))?;
                    if endpoint.origin() != base.origin() {
                        return Err(format!(
                            "the SSE server at {url} named an endpoint on another origin ({endpoint}); refused, since the configured headers would go there"
                        )
                        .into());
                    }
                    break endpoint;
                }
                Some(_) => continue,
                None => {
                    return Err(
                        format!("the SSE stream at {url} ended before its endpoint event").into(),
                    );
                }
            }
        };
        let (tx, incoming) = mpsc::channel(64);
        let reader = tokio::spawn(async move {
            while let Some(event) = events.next_event().await {
                if event.name != "message" {
                    continue;
                }
                match serde_json::from_str::<ServerJsonRpcMessage>(&event.data) {
                    Ok(message) => {
                        if tx.send(message).await.is_err() {
                            break;
                        }
                    }
                    Err(e) => tracing::warn!("SSE server sent a message that is not JSON-RPC: {e}"),
                }
            }
        });
        Ok(SseTransport {
            client,
            headers: header_map,
            endpoint,
            auth,
            incoming,
            reader,
        })
    }
}

/// Sends what `build` makes, with `headers` and the access token when the server is
/// logged in to. A token the server refuses (401) is refreshed once and the request
/// sent again; a refresh that fails leaves the 401 to the caller.
async fn send_authorized(
    build: impl Fn() -> reqwest::RequestBuilder,
    headers: &HeaderMap,
    auth: Option<&AuthorizationManager>,
) -> Result<reqwest::Response, String> {
    let mut refreshed = false;
    loop {
        let request = build().headers(with_token(headers.clone(), auth).await?);
        let response = (request.send().await).map_err(|e| crate::start::error_chain(&e))?;
        match auth {
            Some(auth) if response.status() == reqwest::StatusCode::UNAUTHORIZED && !refreshed => {
                if auth.refresh_token().await.is_err() {
                    return Ok(response);
                }
                refreshed = true;
            }
            _ => return Ok(response),
        }
    }
}

/// `headers` with `Authorization: Bearer <token>` when the server is logged in to; rmcp
/// refreshes a token about to expire first.
async fn with_token(
    mut headers: HeaderMap,
    auth: Option<&AuthorizationManager>,
) -> Result<HeaderMap, String> {
    let Some(auth) = auth else {
        return Ok(headers);
    };
    let token = auth
        .get_access_token()
        .await
        .map_err(|e| toolbelt_config::redact::redact(&crate::start::error_chain(&e)))?;
    let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| "the access token is not a valid header value".to_string())?;
    value.set_sensitive(true);
    headers.insert(reqwest::header::AUTHORIZATION, value);
    Ok(headers)
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let (client, endpoint) = (self.client.clone(), self.endpoint.clone());
        let (headers, auth) = (self.headers.clone(), self.auth.clone());
        async move {
            let post = || client.post(endpoint.clone()).json(&item);
            let response = send_authorized(post, &headers, auth.as_deref())
                .await
                .map_err(|e| SseError(format!("POST failed: {e}")))?;
            if response.status().is_success() {
                Ok(())
            } else {
                Err(SseError(format!("POST answered {}", response.status())))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.reader.abort();
        std::future::ready(Ok(()))
    }
}

/// The event stream of the GET, decoded by `toolbelt-sse` as chunks arrive.
struct EventStream {
    bytes: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    decoder: SseDecoder,
    ready: VecDeque<Event>,
}

impl EventStream {
    fn new(bytes: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>) -> Self {
        EventStream {
            bytes,
            decoder: SseDecoder::default(),
            ready: VecDeque::new(),
        }
    }

    /// The next event; `None` when the stream ended or broke.
    async fn next_event(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            match self.bytes.next().await {
                Some(Ok(chunk)) => match self.decoder.feed(&chunk) {
                    Ok(events) => self.ready.extend(events),
                    Err(e) => {
                        tracing::warn!("MCP SSE stream: {e}");
                        return None;
                    }
                },
                _ => return None,
            }
        }
    }
}
