//! The requests toolbelt sends the client (`can_use_tool`, `mcp_message`,
//! `hook_callback`) and their answers.
//!
//! [`ControlChannel::request`] writes a `control_request` with a fresh id and waits for
//! the `control_response` with that id, which the stdin reader hands to
//! [`ControlChannel::resolve`]. A request whose waiter is dropped (the call it was for
//! was cancelled) is withdrawn with `control_cancel_request`; a response nobody waits
//! for any more is dropped. When stdin closes, every pending request fails at once
//! rather than waiting for its time limit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use toolbelt_hooks::HookCallbacks;
use toolbelt_mcp::sdk::SdkMcpChannel;

use crate::wire::{uuid, write_control};

type Pending = HashMap<String, oneshot::Sender<Result<Value, ControlError>>>;

/// Why a control request to the client got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// The client's input closed: no answer can come.
    #[error("the client's input is closed")]
    InputClosed,
    /// The client answered with an error; its message.
    #[error("{0}")]
    Client(String),
}

/// Our control requests to the client, each waiting for its answer by request ID.
#[derive(Default)]
pub struct ControlChannel {
    pending: Mutex<Pending>,
    /// Set when stdin closed: no answer can come any more.
    closed: Mutex<bool>,
}

impl ControlChannel {
    /// A channel with nothing pending.
    pub fn new() -> Arc<Self> {
        Arc::new(ControlChannel::default())
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `request` (an object with its `subtype`) and waits for the answer. Dropping
    /// the future withdraws the request.
    pub fn request(
        self: &Arc<Self>,
        request: Value,
    ) -> BoxFuture<'static, Result<Value, ControlError>> {
        let id = uuid();
        let (tx, rx) = oneshot::channel();
        let closed = *self.closed.lock().unwrap_or_else(PoisonError::into_inner);
        if !closed {
            self.pending().insert(id.clone(), tx);
            write_control(&json!({
                "type": "control_request", "request_id": id, "request": request,
            }));
        }
        let guard = Withdraw {
            channel: self.clone(),
            id,
            done: false,
        };
        Box::pin(async move {
            let mut guard = guard;
            if closed {
                guard.done = true;
                return Err(ControlError::InputClosed);
            }
            let answer = rx.await.unwrap_or(Err(ControlError::InputClosed));
            guard.done = true;
            answer
        })
    }

    /// Hands the client's answer to whoever waits for it.
    pub fn resolve(&self, request_id: &str, outcome: Result<Value, ControlError>) {
        match self.pending().remove(request_id) {
            Some(waiter) => {
                let _ = waiter.send(outcome);
            }
            None => tracing::debug!("a control response for {request_id}, which nobody awaits"),
        }
    }

    /// stdin closed: every waiter fails now.
    pub fn close(&self) {
        *self.closed.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.pending().clear();
    }
}

/// Withdraws a request whose waiter went away before the answer.
struct Withdraw {
    channel: Arc<ControlChannel>,
    id: String,
    done: bool,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if self.channel.pending().remove(&self.id).is_some() {
            write_control(&json!({
                "type": "control_cancel_request", "request_id": self.id,
            }));
        }
    }
}

/// SDK MCP servers: each JSON-RPC message in an `mcp_message` request; the answer's
/// `mcp_response` is the server's.
pub struct SdkCarrier(pub Arc<ControlChannel>);

impl SdkMcpChannel for SdkCarrier {
    fn send(
        &self,
        server: &str,
        message: Value,
    ) -> BoxFuture<'static, Result<Option<Value>, toolbelt_core::EmbedderError>> {
        let asking = self.0.request(json!({
            "subtype": "mcp_message", "server_name": server, "message": message,
        }));
        Box::pin(async move {
            let answer = asking.await.map_err(|e| e.to_string())?;
            Ok(answer.get("mcp_response").cloned())
        })
    }
}

/// SDK hook callbacks (`initialize.hooks`): each run is a `hook_callback` request
/// (`callback_id`, the hook's `input`, `tool_use_id`), whose `response` is the hook's
/// output, the JSON a command hook prints. The time limit is the hooks engine's; when
/// it passes, or the call is cancelled, the request is withdrawn with
/// `control_cancel_request` (the Claude SDK aborts the callback's signal) and an answer
/// arriving later is dropped. An error response is the hook's failure.
pub struct HookCallbackCarrier(pub Arc<ControlChannel>);

impl HookCallbacks for HookCallbackCarrier {
    fn call(
        &self,
        callback_id: &str,
        input: Value,
        tool_use_id: Option<String>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Value, toolbelt_core::EmbedderError>> {
        let asking = self.0.request(json!({
            "subtype": "hook_callback",
            "callback_id": callback_id,
            "input": input,
            "tool_use_id": tool_use_id,
        }));
        Box::pin(async move {
            tokio::select! {
                answer = asking => answer.map_err(|e| e.to_string().into()),
                // Dropping `asking` withdraws the request.
                () = cancel.cancelled() => Err("cancelled".into()),
            }
        })
    }
}
