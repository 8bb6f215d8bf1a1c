//! What MCP servers ask, put to the editor: an elicitation becomes ACP's
//! `elicitation/create` (form or URL, scoped to the session) when the editor offers
//! that mode (`clientCapabilities.elicitation`), and is declined otherwise. The answer
//! (`{"action": "accept", "content": ...}`, `decline`, `cancel`) goes back as it came;
//! the MCP crate checks accepted content against the form. ACP has no request that
//! approves a model call, so sampling is refused here unless the server's settings
//! allow it.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_core::BoxFuture;
use toolbelt_core::{
    ElicitationAnswer, ElicitationMode, ElicitationRequest, SamplingRequest, ServerAsker,
};

use crate::rpc::Peer;
use crate::updates::Updates;

/// The editor of one session, for what its MCP servers ask.
pub(crate) struct EditorAsker {
    pub peer: Arc<Peer>,
    /// Where the session's id is known once it is made.
    pub updates: Arc<Updates>,
    /// The editor offers form elicitation.
    pub form: bool,
    /// The editor offers URL elicitation.
    pub url: bool,
}

impl ServerAsker for EditorAsker {
    fn elicit<'a>(
        &'a self,
        request: &'a ElicitationRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, ElicitationAnswer> {
        Box::pin(async move {
            let Some(session) = self.updates.session_id.get() else {
                return ElicitationAnswer::Cancel;
            };
            let params = match &request.mode {
                ElicitationMode::Form(form) if self.form => json!({
                    "mode": "form", "sessionId": session, "message": request.message,
                    "requestedSchema": form.schema,
                }),
                ElicitationMode::Url {
                    url,
                    elicitation_id,
                } if self.url => json!({
                    "mode": "url", "sessionId": session, "message": request.message,
                    "url": url, "elicitationId": elicitation_id,
                }),
                _ => {
                    tracing::warn!(
                        "MCP server \"{}\" asked for input; declined: the editor does not offer that kind of elicitation",
                        request.server
                    );
                    return ElicitationAnswer::Decline;
                }
            };
            let answer = tokio::select! {
                // Dropping the request withdraws it (`$/cancel_request`).
                answer = self.peer.request("elicitation/create", params) => answer,
                () = cancel.cancelled() => return ElicitationAnswer::Cancel,
            };
            match answer {
                Ok(answer) => match answer.get("action").and_then(Value::as_str) {
                    Some("accept") => ElicitationAnswer::Accept(
                        (answer.get("content").and_then(Value::as_object).cloned())
                            .unwrap_or_else(Map::new),
                    ),
                    Some("decline") => ElicitationAnswer::Decline,
                    _ => ElicitationAnswer::Cancel,
                },
                Err(e) => {
                    tracing::warn!("the editor failed elicitation/create: {}", e.message);
                    ElicitationAnswer::Cancel
                }
            }
        })
    }

    fn approve_sampling<'a>(
        &'a self,
        _request: &'a SamplingRequest,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<(), toolbelt_core::EmbedderError>> {
        Box::pin(async {
            Err("ACP has no way to ask the person (\"sampling\": \"allow\" in the server's settings lets it run unasked)".into())
        })
    }
}
