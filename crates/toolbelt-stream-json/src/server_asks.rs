//! What MCP servers ask, put to the stream-JSON client as control requests, the way
//! `can_use_tool` asks about a call:
//!
//! - `elicitation` (`mcp_server_name`, `message`, `mode` `form` with its
//!   `requested_schema`, or `url` with `url` and `elicitation_id`), answered with
//!   `{"action": "accept" | "decline" | "cancel", "content": {...}}`;
//! - `mcp_sampling` (`mcp_server_name`, `system_prompt`, `messages` as
//!   `{"role", "text"}`, `max_tokens`, `temperature`), answered like `can_use_tool`:
//!   `{"behavior": "allow"}` or `{"behavior": "deny", "message": ...}`.
//!
//! A client that answers with an error (one that does not know the request), or not
//! within the time limit, has not chosen: the elicitation is cancelled, the sampling
//! refused. The MCP crate checks accepted content against the form before the server
//! gets it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_core::BoxFuture;
use toolbelt_core::{
    ElicitationAnswer, ElicitationMode, ElicitationRequest, SamplingRequest, ServerAsker,
};

use crate::control::ControlChannel;

/// The stream-JSON client as the person MCP servers ask.
pub struct ClientServerAsker {
    control: Arc<ControlChannel>,
    timeout: Duration,
}

impl ClientServerAsker {
    /// Asks through `control`, giving up after `timeout`.
    pub fn new(control: Arc<ControlChannel>, timeout: Duration) -> Self {
        ClientServerAsker { control, timeout }
    }

    /// The client's answer to `request`, or why there is none.
    async fn ask(&self, request: Value, cancel: &CancellationToken) -> Result<Value, String> {
        let asking = self.control.request(request);
        tokio::select! {
            answer = tokio::time::timeout(self.timeout, asking) => match answer {
                Ok(answer) => answer.map_err(|e| e.to_string()),
                Err(_) => Err(format!("no answer within {} s", self.timeout.as_secs())),
            },
            // Dropping `asking` withdraws the request.
            () = cancel.cancelled() => Err("cancelled".to_string()),
        }
    }
}

impl ServerAsker for ClientServerAsker {
    fn elicit<'a>(
        &'a self,
        request: &'a ElicitationRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, ElicitationAnswer> {
        Box::pin(async move {
            let mut asked = json!({
                "subtype": "elicitation",
                "mcp_server_name": request.server,
                "message": request.message,
            });
            match &request.mode {
                ElicitationMode::Form(form) => {
                    asked["mode"] = json!("form");
                    asked["requested_schema"] = form.schema.clone();
                }
                ElicitationMode::Url {
                    url,
                    elicitation_id,
                } => {
                    asked["mode"] = json!("url");
                    asked["url"] = json!(url);
                    asked["elicitation_id"] = json!(elicitation_id);
                }
                _ => return ElicitationAnswer::Decline,
            }
            match self.ask(asked, cancel).await {
                Ok(answer) => elicitation_answer(&answer),
                Err(why) => {
                    tracing::warn!(
                        "the client was not asked MCP server \"{}\"'s question to the end ({why}); cancelled",
                        request.server
                    );
                    ElicitationAnswer::Cancel
                }
            }
        })
    }

    fn approve_sampling<'a>(
        &'a self,
        request: &'a SamplingRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<(), toolbelt_core::EmbedderError>> {
        Box::pin(async move {
            let messages: Vec<Value> = (request.messages.iter())
                .map(|m| json!({"role": if m.assistant { "assistant" } else { "user" }, "text": m.text}))
                .collect();
            let asked = json!({
                "subtype": "mcp_sampling",
                "mcp_server_name": request.server,
                "system_prompt": request.system_prompt,
                "messages": messages,
                "max_tokens": request.max_tokens,
                "temperature": request.temperature,
            });
            let answer = self
                .ask(asked, cancel)
                .await
                .map_err(|why| format!("the client was not asked to the end ({why})"))?;
            match answer.get("behavior").and_then(Value::as_str) {
                Some("allow") => Ok(()),
                _ => Err(answer
                    .get("message")
                    .and_then(Value::as_str)
                    .filter(|m| !m.trim().is_empty())
                    .unwrap_or("the client denied it")
                    .into()),
            }
        })
    }
}

/// `{"action", "content"}` as an answer; anything else has not chosen.
fn elicitation_answer(answer: &Value) -> ElicitationAnswer {
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => ElicitationAnswer::Accept(
            answer
                .get("content")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_else(Map::new),
        ),
        Some("decline") => ElicitationAnswer::Decline,
        _ => ElicitationAnswer::Cancel,
    }
}
