//! The client as the person who approves: a call that needs confirmation becomes a
//! `can_use_tool` control request (tool name, input, tool use id, suggestions), and the
//! client's `{"behavior": "allow", "updatedInput": ...}` or `{"behavior": "deny",
//! "message": ...}` is the answer. Updated input goes back to the scheduler, which
//! validates it again and applies the rules and the mode to it before it runs; a denial's
//! message is what the model is told.
//!
//! No answer within the time limit (`initialize`'s `timeout.canUseTool`, else
//! [`crate::session_loop::DEFAULT_APPROVAL_TIMEOUT`]) refuses the call, and so does an answer that is
//! not one of the two. When the call is cancelled while the question is open, the
//! scheduler drops this future and the request is withdrawn with
//! `control_cancel_request` (see [`crate::control`]).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};
use toolbelt_core::{BoxFuture, ConfirmationOutcome};
use toolbelt_engine::{scheduler::Approval, scheduler::ApprovalRequest, scheduler::Approver};

use crate::control::ControlChannel;
use crate::wire::Emitter;

/// The stream-JSON client as the scheduler's [`Approver`]: a `can_use_tool` request per
/// question.
pub struct ClientApprover {
    control: Arc<ControlChannel>,
    /// Where the calls' inputs are known (set once the session is assembled).
    emitter: Arc<OnceLock<Arc<Emitter>>>,
    timeout: Duration,
}

impl ClientApprover {
    /// Asks through `control`, giving up after `timeout` (in `dontAsk` mode the session
    /// does not ask it: `toolbelt_session::DontAsk`).
    pub fn new(
        control: Arc<ControlChannel>,
        emitter: Arc<OnceLock<Arc<Emitter>>>,
        timeout: Duration,
    ) -> Self {
        ClientApprover {
            control,
            emitter,
            timeout,
        }
    }
}

impl Approver for ClientApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let input = self
                .emitter
                .get()
                .map_or(Value::Null, |e| e.input_of(&request.call_id));
            let asking = self.control.request(json!({
                "subtype": "can_use_tool",
                "tool_name": request.tool,
                "tool_use_id": request.call_id,
                "input": input,
                "permission_suggestions": null,
                "blocked_path": null,
            }));
            match tokio::time::timeout(self.timeout, asking).await {
                Ok(Ok(answer)) => decision(&answer),
                Ok(Err(why)) => Approval::deny(format!(
                    "The client could not be asked about this call ({why}); it was not run."
                )),
                Err(_) => Approval::deny(format!(
                    "The client did not answer within {} s whether this call may run; it was not run.",
                    self.timeout.as_secs()
                )),
            }
        })
    }
}

/// The client's answer as an approval.
fn decision(answer: &Value) -> Approval {
    match answer.get("behavior").and_then(Value::as_str) {
        Some("allow") => match answer.get("updatedInput") {
            Some(input) if input.is_object() => Approval::with_arguments(input.clone()),
            _ => ConfirmationOutcome::ProceedOnce.into(),
        },
        Some("deny") => Approval::deny(
            answer
                .get("message")
                .and_then(Value::as_str)
                .filter(|m| !m.trim().is_empty())
                .unwrap_or("The client denied this call.")
                .to_string(),
        ),
        _ => Approval::deny(
            "The client's answer was neither allow nor deny; the call was not run.".to_string(),
        ),
    }
}
