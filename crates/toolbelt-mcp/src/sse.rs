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
//! whoever controls its responses) could have our credentials sent anywhere.

use std::collections::{BTreeMap, VecDeque};

use futures::StreamExt;
use reqwest::header::HeaderMap;
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;
use toolbelt_sse::{Event, SseDecoder};

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SseError(String);

pub(crate) struct SseTransport {
    client: reqwest::Client,
    headers: HeaderMap,
    endpoint: reqwest::Url,
    incoming: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl SseTransport {
    /// Opens the event stream and waits for the `endpoint` event.
    pub(crate) async fn connect(
        url: &str,
        headers: &BTreeMap<String, String>,
    ) -> Result<Self, String> {
        let base = reqwest::Url::parse(url).map_err(|e| format!("invalid url {url:?}: {e}"))?;
        let header_map = crate::start::header_map(headers)?;
        let client = crate::start::same_origin_client()?;
        let response = client
            .get(base.clone())
            .headers(header_map.clone())
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| {
                format!(
                    "cannot open the SSE stream at {url}: {}",
                    crate::start::error_chain(&e)
                )
            })?;
        if !response.status().is_success() {
            return Err(format!("GET {url} answered {}", response.status()));
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
                        ));
                    }
                    break endpoint;
                }
                Some(_) => continue,
                None => {
                    return Err(format!(
                        "the SSE stream at {url} ended before its endpoint event"
                    ));
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
            incoming,
            reader,
        })
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(&item);
        async move {
            let response = request
                .send()
                .await
                .map_err(|e| SseError(format!("POST failed: {}", crate::start::error_chain(&e))))?;
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
