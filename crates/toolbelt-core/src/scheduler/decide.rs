//! The approval decision for one call: the order documented in [`super::approval`],
//! with protected configuration (see [`super::protect`]) asked whatever the mode or an
//! earlier "always" answer allows.

use tokio_util::sync::CancellationToken;

use super::protect::ProtectedChange;
use super::run_call::cancelled_error;
use super::{
    ApprovalMode, ApprovalRequest, EXIT_PLAN_MODE, Scheduler, SchedulerEvent, ToolCallRequest,
    Verdict,
};
use crate::confirm::{ConfirmationDetails, ConfirmationOutcome};
use crate::result::{Display, ErrorKind, ToolError, ToolResult};
use crate::rules::Decision;
use crate::tool::{Consent, Invocation, Kind};

impl Scheduler {
    /// What the rules and the mode say of a call before anything of it runs (a declared
    /// tool's `prepare` command included): `Err` with the verdict when a deny rule or
    /// plan mode refuses it, or when `exit_plan_mode` has nothing to exit; otherwise the
    /// rules' decision, for [`Scheduler::decide`].
    pub(super) fn screen(
        &self,
        registration: &crate::registry::Registration,
        kind: Kind,
        invocation: &dyn Invocation,
    ) -> Result<Decision, Box<Verdict>> {
        let tool = registration.name.as_str();
        let subject = invocation.permission_subject();
        // This turn's grants are allow rules on top of the session's (see [`grants`]):
        // deny and ask rules, judged first, still win.
        let granted = self.grants.current();
        let permissions = granted.as_deref().unwrap_or(&self.permissions);
        // A tool that runs another (a declared tool bound to `run_shell_command`) answers
        // to that tool's rules too; the strictest answer wins (Deny > Ask > Allow).
        let target = registration.tool.rule_target();
        let decision = std::iter::once(tool)
            .chain(target)
            .map(|name| permissions.evaluate(name, &subject))
            .max()
            .unwrap_or(Decision::Default);
        if decision == Decision::Deny {
            let rule = std::iter::once(tool)
                .chain(target)
                .find_map(|name| permissions.deny_explanation(name, &subject))
                .unwrap_or_default();
            return Err(Box::new(Verdict::Refuse(ToolError::new(
                ErrorKind::ExecutionDenied,
                format!(
                    "Tool \"{tool}\" is denied by permission rules.{rule} It was not run; do not retry it."
                ),
            ))));
        }
        let mode = self.mode();
        if mode == ApprovalMode::Plan && !kind.is_read_only() && tool != EXIT_PLAN_MODE {
            return Err(Box::new(Verdict::Refuse(ToolError::new(
                ErrorKind::ExecutionDenied,
                format!(
                    "Plan mode is active: only read-only tools (read, search, fetch, think) run, and \"{tool}\" ({}) was not run. Finish researching, then present your plan with {EXIT_PLAN_MODE}; once the user approves it, changes are allowed.",
                    kind.as_str()
                ),
            ))));
        }
        if tool == EXIT_PLAN_MODE && mode != ApprovalMode::Plan {
            return Err(Box::new(Verdict::Answered(ToolResult::text(format!(
                "Plan mode is not active (approval mode {mode}), so there is nothing to exit and no plan approval is needed. Carry on with the task."
            )))));
        }
        Ok(decision)
    }

    /// The approval decision for one validated call that [`Scheduler::screen`] let
    /// through with the rules' `decision` (see [`super::approval`] for the order).
    /// `approved`: the person already allowed this call (with corrected arguments), so
    /// only the rules and plan mode could still stop it, and they did not.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn decide(
        &self,
        registration: &crate::registry::Registration,
        request: &ToolCallRequest,
        decision: Decision,
        description: &str,
        invocation: &dyn Invocation,
        cancel: &CancellationToken,
        approved: bool,
    ) -> Verdict {
        let tool = registration.name.as_str();
        let kind = registration.tool.kind();
        let subject = invocation.permission_subject();
        let target = registration.tool.rule_target();
        let mode = self.mode();
        let details = invocation.confirmation().await;
        let forced_ask = decision == Decision::Ask;
        let details = match details {
            Some(d) => d,
            None if forced_ask => {
                ConfirmationDetails::generic(registration.tool.display_name(), description)
            }
            // Nothing asked, nobody approved: the tool runs the call as an unasked one
            // (the shell confines it), unless the person gave it their arguments or
            // runs everything in yolo.
            None if approved || mode == ApprovalMode::Yolo => {
                return Verdict::Run(Consent::Approved);
            }
            None => return Verdict::Run(Consent::Unasked),
        };
        if approved {
            if tool == EXIT_PLAN_MODE && mode == ApprovalMode::Plan {
                self.leave_plan_mode(ConfirmationOutcome::ProceedOnce);
            }
            return Verdict::Run(Consent::Approved);
        }
        let names: Vec<&str> = std::iter::once(tool).chain(target).collect();
        let protected = ProtectedChange::of(&self.env.roots, &details);
        if !forced_ask {
            let plan_exit = tool == EXIT_PLAN_MODE;
            let auto = match &protected {
                // Only yolo and a rule of the session's that names the file approve
                // protected configuration; the session's rules, not the turn's grants.
                Some(change) => {
                    mode == ApprovalMode::Yolo
                        || (decision == Decision::Allow
                            && change.named_by_rule(&self.permissions, &names, &subject))
                }
                None => {
                    decision == Decision::Allow
                        || (mode == ApprovalMode::Yolo && !plan_exit)
                        || (mode == ApprovalMode::AutoEdit
                            && matches!(details, ConfirmationDetails::Edit { .. }))
                        || self.allowances.covers(tool, &registration.origin, &details)
                }
            };
            if auto {
                if plan_exit && mode == ApprovalMode::Plan {
                    self.leave_plan_mode(ConfirmationOutcome::ProceedOnce);
                }
                return Verdict::Run(Consent::Approved);
            }
        }
        let (details, description) = match &protected {
            Some(change) => change.mark(details, description),
            None => (details, description.to_string()),
        };
        let Some(approver) = &self.approver else {
            if tool == EXIT_PLAN_MODE
                && let ConfirmationDetails::Plan { plan, .. } = &details
            {
                // No one to approve: the plan is the session's answer and the run ends
                // with it (the agent loop stops on an unapproved plan).
                return Verdict::Answered(ToolResult::with_display(
                    "The plan was recorded as the session's answer; it was not approved, and no changes are to be made.",
                    Display::Plan {
                        plan: plan.clone(),
                        approved: false,
                    },
                ));
            }
            let (why, how) = match &self.nobody_to_ask {
                Some(n) => (n.why.clone(), n.how.replace("{tool}", tool)),
                None => (
                    format!(
                        "this session runs without anyone to ask (non-interactive, approval mode {mode})"
                    ),
                    format!(
                        "The user can allow it with --yolo, --approval-mode auto-edit (for edits) or --allowed-tools {tool}."
                    ),
                ),
            };
            if let Some(change) = &protected {
                return Verdict::Refuse(change.refusal(tool, &names, &why));
            }
            // An ask rule, not the tool, asked: name it, so the person knows which rule
            // to change.
            let asked_by = names
                .iter()
                .find_map(|name| {
                    let verdict = self.permissions.rules().verdict(name, &subject);
                    (verdict.decision == Decision::Ask)
                        .then_some(verdict.rule)
                        .flatten()
                })
                .filter(|_| forced_ask)
                .map(|rule| format!(", asked for by the permission rule `{rule}`"))
                .unwrap_or_default();
            return Verdict::Refuse(ToolError::new(
                ErrorKind::ExecutionDenied,
                format!(
                    "Tool \"{tool}\" needs the user's approval ({}{asked_by}), and {why}, so it was not run. Do not retry it; continue without it if you can, or tell the user what you need. {how}",
                    details.title()
                ),
            ));
        };
        self.emit(SchedulerEvent::AwaitingApproval {
            call_id: request.call_id.clone(),
            tool: tool.to_string(),
            details: details.clone(),
        });
        let ask = ApprovalRequest {
            call_id: request.call_id.clone(),
            tool: tool.to_string(),
            kind,
            description,
            details: details.clone(),
            // "Always" would contradict an ask rule, and would approve protected
            // configuration the next time without the person seeing it.
            // A shell command without root commands names nothing a rule could approve
            // without approving everything (a wrapper, `eval`, a name only known when it
            // runs): the shell tool leaves them out, and "always" is not offered.
            may_always_allow: !forced_ask
                && protected.is_none()
                && !matches!(&details, ConfirmationDetails::Exec { root_commands, .. } if root_commands.is_empty()),
        };
        let answer = tokio::select! {
            answer = approver.approve(&ask) => answer,
            _ = cancel.cancelled() => return Verdict::Cancelled(cancelled_error()),
        };
        let outcome = answer.outcome;
        if !outcome.proceeds() {
            let said = answer
                .message
                .as_deref()
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .map(|m| format!(" The user said: {m}"))
                .unwrap_or_default();
            if tool == EXIT_PLAN_MODE {
                return Verdict::Refuse(ToolError::new(
                    ErrorKind::ExecutionDenied,
                    format!(
                        "The user did not approve the plan. Plan mode stays on: keep researching with read-only tools, ask what they want changed if unclear, and present a revised plan with exit_plan_mode.{said}"
                    ),
                ));
            }
            return Verdict::Cancelled(ToolError::new(
                ErrorKind::ExecutionDenied,
                format!("The user did not allow this call to \"{tool}\"; it was not run.{said}"),
            ));
        }
        if ask.may_always_allow {
            self.allowances
                .remember(outcome, tool, &registration.origin, &details);
        }
        if let Some(corrected) = answer.arguments {
            // Plan mode is left, if at all, when the corrected call is decided.
            return Verdict::RunWith(corrected);
        }
        if tool == EXIT_PLAN_MODE && mode == ApprovalMode::Plan {
            self.leave_plan_mode(outcome);
        }
        Verdict::Run(Consent::Approved)
    }

    /// An approved plan returns the session to the mode it had before plan mode, or to
    /// auto-edit when the person chose "always" (approve the plan and its edits).
    fn leave_plan_mode(&self, outcome: ConfirmationOutcome) {
        let before = self.before_plan.lock().map(|b| *b).unwrap_or_default();
        self.set_mode(if outcome == ConfirmationOutcome::ProceedAlways {
            ApprovalMode::AutoEdit
        } else {
            before
        });
    }
}
