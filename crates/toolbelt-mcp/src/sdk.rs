//! SDK MCP servers: MCP servers that live inside the client of a stream-JSON session
//! (Qwen Code's and Claude Code's SDKs, `createSdkMcpServer`). There is no process and no
//! socket: each JSON-RPC message goes to the client as an `mcp_message` control request,
//! and the answer comes back in its control response.
//!
//! [`SdkTransport`] is an rmcp [`Transport`], so such a server goes through the same
//! client code as every other one (`McpConnection`: handshake, listing, calls, timeouts,
//! cancellation, content mapping). Only the carrier differs, and the carrier is the
//! binary's business: it implements [`SdkMcpChannel`] over its control protocol.
//!
//! A request's answer is waited for in a task of its own, so a slow tool call does not
//! hold the next request back. When the client answers a request with a failure (its
//! server is gone, it timed out), the failure becomes a JSON-RPC error for that request
//! id: the waiting call ends with that reason instead of waiting for its timeout.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// Carries JSON-RPC messages to a server that lives in the client.
pub trait SdkMcpChannel: Send + Sync {
    /// Sends `message` to the client's server `server`. For a request, the answer is the
    /// server's JSON-RPC response (`Ok(Some(..))`); for a notification the client's
    /// acknowledgement carries nothing worth reading (`Ok(None)` or anything).
    fn send(
        &self,
        server: &str,
        message: Value,
    ) -> BoxFuture<'static, Result<Option<Value>, toolbelt_core::EmbedderError>>;
}

impl std::fmt::Debug for dyn SdkMcpChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SdkMcpChannel")
    }
}

/// A channel as a transport setting: equal only to itself.
#[derive(Clone, Debug)]
pub struct SdkChannel(pub Arc<dyn SdkMcpChannel>);

impl PartialEq for SdkChannel {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SdkChannel {}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
/// A message that could not travel over the channel.
pub struct SdkError(String);

/// The rmcp transport of one SDK MCP server.
pub struct SdkTransport {
    server: String,
    channel: Arc<dyn SdkMcpChannel>,
    tx: mpsc::UnboundedSender<ServerJsonRpcMessage>,
    rx: mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
}

impl SdkTransport {
    /// The transport of the SDK server `server`, over `channel`.
    pub fn new(server: &str, channel: &SdkChannel) -> Self {
        let channel = channel.0.clone();
        let (tx, rx) = mpsc::unbounded_channel();
        SdkTransport {
            server: server.to_string(),
            channel,
            tx,
            rx,
        }
    }
}

impl Transport<RoleClient> for SdkTransport {
    type Error = SdkError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request_id = match &item {
            JsonRpcMessage::Request(r) => Some(r.id.clone()),
            _ => None,
        };
        let value = serde_json::to_value(&item);
        let channel = self.channel.clone();
        let server = self.server.clone();
        let tx = self.tx.clone();
        async move {
            let value =
                value.map_err(|e| SdkError(format!("cannot encode an MCP message: {e}")))?;
            let sending = channel.send(&server, value);
            tokio::spawn(async move {
                let answer = sending.await;
                let Some(id) = request_id else {
                    // A notification: the client's acknowledgement carries nothing.
                    return;
                };
                let response = match answer {
                    Ok(Some(response)) => response,
                    Ok(None) => error_for(&id, "the client answered without an MCP response"),
                    Err(why) => error_for(&id, why.message()),
                };
                match serde_json::from_value::<ServerJsonRpcMessage>(response) {
                    Ok(message) => {
                        let _ = tx.send(message);
                    }
                    Err(e) => {
                        let text = format!("the client's MCP response does not parse: {e}");
                        if let Ok(message) = serde_json::from_value(error_for(&id, &text)) {
                            let _ = tx.send(message);
                        }
                    }
                }
            });
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.rx.recv()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.rx.close();
        std::future::ready(Ok(()))
    }
}

/// A JSON-RPC error answering request `id`.
fn error_for(id: &rmcp::model::RequestId, message: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32603, "message": message},
    })
}
