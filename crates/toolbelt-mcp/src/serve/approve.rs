//! Confirmation through the MCP client: `elicitation/create` with what the call would do
//! (the diff, the command, the URL), accept or decline, and a checkbox to allow the same
//! for the rest of the connection.
//!
//! The "always" answers are also kept here, not only in the scheduler, because a
//! connection gets a new scheduler when its workspace changes (the client's roots
//! changed, a proxied server's tools changed): [`Remembered::replay`] carries them over.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use rmcp::service::{Peer, RoleServer};
use toolbelt_core::{ConfirmationDetails, ConfirmationOutcome};
use toolbelt_engine::registry::ToolRegistry;
use toolbelt_engine::{
    scheduler::Approval, scheduler::ApprovalRequest, scheduler::Approver, scheduler::Scheduler,
};

use super::turns::TurnWhileAsking;

/// The checkbox of the question: allow this tool (the shell: these root commands; an MCP
/// tool: its server) for the rest of the connection.
pub(super) const ALWAYS_FIELD: &str = "always";

/// How long a question waits for the person. A client that never answers must not hold
/// a call for ever; an unanswered question is a "no".
pub(super) const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// The "always" answers of one connection, to give each new scheduler.
#[derive(Default)]
pub(super) struct Remembered {
    answers: Mutex<Vec<(ConfirmationOutcome, String, ConfirmationDetails)>>,
}

impl Remembered {
    fn add(&self, outcome: ConfirmationOutcome, tool: &str, details: &ConfirmationDetails) {
        if let Ok(mut answers) = self.answers.lock() {
            answers.push((outcome, tool.to_string(), details.clone()));
        }
    }

    /// Gives `scheduler` every "always" answer of the connection so far.
    pub(super) fn replay(&self, scheduler: &Scheduler, registry: &ToolRegistry) {
        let Ok(answers) = self.answers.lock() else {
            return;
        };
        for (outcome, tool, details) in answers.iter() {
            if let Some(registration) = registry.get(tool) {
                scheduler
                    .allowances()
                    .remember(*outcome, tool, &registration.origin, details);
            }
        }
    }
}

/// Asks the MCP client's person through elicitation.
pub(super) struct ElicitationApprover {
    pub peer: Peer<RoleServer>,
    pub remembered: Arc<Remembered>,
    /// The call's turn for file changes, given back while the question is open.
    pub turn: TurnWhileAsking,
}

impl Approver for ElicitationApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let Some(params) = form(request, true) else {
                return ConfirmationOutcome::Cancel.into();
            };
            let asking = self
                .peer
                .create_elicitation_with_timeout(params, Some(ANSWER_TIMEOUT));
            let accepted = |answer: &Result<ElicitResult, _>| matches!(answer, Ok(result) if result.action == ElicitationAction::Accept);
            let answer = self.turn.around(&request.call_id, asking, accepted).await;
            let answer = answer
                .inspect_err(|e| tracing::warn!("elicitation for {} failed: {e}", request.tool))
                .ok();
            self.remembered.outcome(request, answer.as_ref()).into()
        })
    }
}

/// The question about `request` as an elicitation form: the question, and the checkbox
/// that allows the same for the rest of the connection when the answer may be remembered
/// and `offer_always` (the connection lives on to remember it). `None` if the schema
/// cannot be built.
pub(super) fn form(request: &ApprovalRequest, offer_always: bool) -> Option<ElicitRequestParams> {
    let schema = if request.may_always_allow && offer_always {
        let label = always_label(&request.details);
        ElicitationSchema::builder()
            .optional_bool_with(ALWAYS_FIELD, |b| b.title(label).with_default(false))
            .build()
    } else {
        ElicitationSchema::builder().build()
    };
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question(request),
        requested_schema: schema.ok()?,
    })
}

impl Remembered {
    /// What the person's answer allows (no answer, a failed question or a timeout: the
    /// call does not run); an "always" answer is remembered for the connection.
    pub(super) fn outcome(
        &self,
        request: &ApprovalRequest,
        answer: Option<&ElicitResult>,
    ) -> ConfirmationOutcome {
        let outcome = match answer {
            Some(result) if result.action == ElicitationAction::Accept => {
                let always = request.may_always_allow
                    && result
                        .content
                        .as_ref()
                        .and_then(|c| c.get(ALWAYS_FIELD))
                        .and_then(serde_json::Value::as_bool)
                        .unwrap_or(false);
                if always {
                    always_outcome(&request.details)
                } else {
                    ConfirmationOutcome::ProceedOnce
                }
            }
            _ => ConfirmationOutcome::Cancel,
        };
        if outcome != ConfirmationOutcome::ProceedOnce && outcome.proceeds() {
            self.add(outcome, &request.tool, &request.details);
        }
        outcome
    }
}

/// The question: what runs, then the tool's own details (the diff, the command and its
/// root commands, the URLs, the MCP server and tool).
fn question(request: &ApprovalRequest) -> String {
    format!(
        "Allow {} ({})?\n{}\n\n{}",
        request.tool,
        request.kind.as_str(),
        request.description,
        request.details.summary()
    )
}

fn always_label(details: &ConfirmationDetails) -> String {
    match details {
        ConfirmationDetails::Exec { root_commands, .. } if !root_commands.is_empty() => format!(
            "Also allow {} for the rest of this connection",
            root_commands.join(", ")
        ),
        ConfirmationDetails::Mcp { server, .. } => {
            format!(
                "Also allow every tool of the MCP server `{server}` for the rest of this connection"
            )
        }
        _ => "Also allow this tool for the rest of this connection".to_string(),
    }
}

fn always_outcome(details: &ConfirmationDetails) -> ConfirmationOutcome {
    match details {
        ConfirmationDetails::Exec { .. } => ConfirmationOutcome::ProceedAlwaysRootCommand,
        ConfirmationDetails::Mcp { .. } => ConfirmationOutcome::ProceedAlwaysServer,
        _ => ConfirmationOutcome::ProceedAlways,
    }
}
