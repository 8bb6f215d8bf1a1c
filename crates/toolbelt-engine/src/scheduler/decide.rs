//! The approval decision for one call: the order documented in [`super::approval`],
//! with protected configuration (see [`super::protect`]) asked whatever the mode or an
//! earlier "always" answer allows. [`Scheduler::screen`] takes a [`Validated`] call to a
//! [`Screened`] one (or refuses it), [`Scheduler::decide`] gives the screened call its
//! [`Verdict`].

use tokio_util::sync::CancellationToken;

use super::call_hooks::Denial;
use super::pipeline::{Screened, Validated};
use super::protect::ProtectedChange;
use super::run_call::cancelled_error;
use super::{
    Approval, ApprovalMode, ApprovalRequest, Approver, Corrector, Scheduler, SchedulerEvent,
    Verdict,
};
use crate::hooks::HookDecision;
use crate::rules::Decision;
use toolbelt_core::{ConfirmationDetails, ConfirmationOutcome};
use toolbelt_core::{Consent, PermissionSubject};
use toolbelt_core::{Display, ErrorKind, ToolError, ToolResult};

/// The names whose rules judge a call: the tool's, and the tool it runs (a declared tool
/// bound to `run_shell_command`).
fn rule_names<'a>(call: &'a Validated<'_>) -> Vec<&'a str> {
    std::iter::once(call.registration.name.as_str())
        .chain(call.registration.tool.rule_target())
        .collect()
}

impl Scheduler {
    /// What the rules and the mode say of a call before anything of it runs (a declared
    /// tool's `prepare` command included): the call back with the verdict when a deny
    /// rule or plan mode refuses it (and which of them did), or when a plan-ending tool
    /// has nothing to end; otherwise the call with the rules' decision, for
    /// [`Scheduler::decide`].
    pub(super) fn screen<'r>(
        &self,
        call: Validated<'r>,
    ) -> Result<Screened<'r>, Box<(Validated<'r>, Verdict, Option<Denial>)>> {
        match self.rules_and_plan_mode(&call) {
            Ok(decision) => Ok(Screened { call, decision }),
            Err(refused) => {
                let (verdict, denial) = *refused;
                Err(Box::new((call, verdict, denial)))
            }
        }
    }

    fn rules_and_plan_mode(
        &self,
        call: &Validated<'_>,
    ) -> Result<Decision, Box<(Verdict, Option<Denial>)>> {
        let tool = call.registration.name.as_str();
        let kind = call.kind;
        let subject = call.invocation.permission_subject();
        // This turn's grants are allow rules on top of the session's (see [`grants`]):
        // deny and ask rules, judged first, still win.
        let granted = self.grants.current();
        let permissions = granted.as_deref().unwrap_or(&self.permissions);
        // A tool that runs another answers to that tool's rules too; the strictest
        // answer wins (Deny > Ask > Allow).
        let names = rule_names(call);
        let decision = names
            .iter()
            .map(|name| permissions.evaluate(name, &subject))
            .max()
            .unwrap_or(Decision::Default);
        if decision == Decision::Deny {
            let rule = names
                .iter()
                .find_map(|name| permissions.deny_explanation(name, &subject))
                .unwrap_or_default();
            return Err(Box::new((
                Verdict::Refuse(ToolError::new(
                    ErrorKind::ExecutionDenied,
                    format!(
                        "Tool \"{tool}\" is denied by permission rules.{rule} It was not run; do not retry it."
                    ),
                )),
                Some(Denial::Rule),
            )));
        }
        let mode = self.mode();
        let ends_plan = call.registration.tool.ends_plan_mode();
        if mode == ApprovalMode::Plan && !kind.is_read_only() && !ends_plan {
            let present = match call.registry.plan_mode_exit() {
                Some(exit) => format!("present your plan with {exit}"),
                None => "present your plan".to_string(),
            };
            return Err(Box::new((
                Verdict::Refuse(ToolError::new(
                    ErrorKind::ExecutionDenied,
                    format!(
                        "Plan mode is active: only read-only tools (read, search, fetch, think) run, and \"{tool}\" ({}) was not run. Finish researching, then {present}; once the user approves it, changes are allowed.",
                        kind.as_str()
                    ),
                )),
                Some(Denial::PlanMode),
            )));
        }
        if ends_plan && mode != ApprovalMode::Plan {
            return Err(Box::new((
                Verdict::Answered(ToolResult::text(format!(
                    "Plan mode is not active (approval mode {mode}), so there is nothing to exit and no plan approval is needed. Carry on with the task."
                ))),
                None,
            )));
        }
        Ok(decision)
    }

    /// The approval decision for a screened call (see [`super::approval`] for the
    /// order). A corrected call was already allowed by the person, so only the rules
    /// and plan mode could still stop it, and they did not. A PreToolUse hook's `ask`
    /// counts as an ask rule (asked whatever the mode; PermissionRequest hooks do not
    /// answer it in the person's place), its `allow` as an allow rule (never for
    /// protected configuration).
    pub(super) async fn decide(
        &self,
        screened: &Screened<'_>,
        cancel: &CancellationToken,
    ) -> Verdict {
        let call = &screened.call;
        let mode = self.mode();
        let details = match self.what_to_ask(screened, mode).await {
            Ok(details) => details,
            Err(consent) => return Verdict::Run(consent),
        };
        let ends_plan = call.registration.tool.ends_plan_mode();
        let protected = ProtectedChange::of(&self.env.roots, &details);
        let must_ask = screened.decision == Decision::Ask || call.pre_hook.asks();
        if call.corrected
            || (!must_ask && self.approves_unasked(screened, mode, &details, protected.as_ref()))
        {
            if ends_plan && mode == ApprovalMode::Plan {
                self.leave_plan_mode(ConfirmationOutcome::ProceedOnce);
            }
            return Verdict::Run(Consent::Approved);
        }
        let description = call.invocation.describe();
        let (details, description) = match &protected {
            Some(change) => change.mark(details, &description),
            None => (details, description),
        };
        if !call.pre_hook.asks()
            && let Some(verdict) = self
                .permission_request(call, mode, protected.is_some(), cancel)
                .await
        {
            return verdict;
        }
        let Some(approver) = &self.approver else {
            let verdict = self.refuse_unasked(screened, mode, &details, protected.as_ref());
            self.permission_denied(call, Denial::NobodyToAsk, &verdict, cancel)
                .await;
            return verdict;
        };
        // "Always" would contradict an ask rule (or a hook that asks), and would approve
        // protected configuration the next time without the person seeing it.
        // A shell command without root commands names nothing a rule could approve
        // without approving everything (a wrapper, `eval`, a name only known when it
        // runs): the shell tool leaves them out, and "always" is not offered.
        let may_always_allow = !must_ask
            && protected.is_none()
            && !matches!(&details, ConfirmationDetails::Exec { root_commands, .. } if root_commands.is_empty());
        let ask = ApprovalRequest {
            call_id: call.request.call_id.clone(),
            tool: call.registration.name.clone(),
            kind: call.kind,
            description: call.pre_hook.describe_question(description),
            details,
            may_always_allow,
        };
        self.ask(approver.as_ref(), call, mode, ask, cancel).await
    }

    /// The question the call asks: its own confirmation, or a generic one when an ask
    /// rule matched; `Err` with how it runs when nothing is asked (unasked, so the shell
    /// confines it, unless the person gave it their arguments or runs everything in yolo).
    async fn what_to_ask(
        &self,
        screened: &Screened<'_>,
        mode: ApprovalMode,
    ) -> Result<ConfirmationDetails, Consent> {
        let call = &screened.call;
        match call.invocation.confirmation().await {
            Some(details) => Ok(details),
            None if screened.decision == Decision::Ask || call.pre_hook.asks() => {
                Ok(ConfirmationDetails::generic(
                    call.registration.tool.display_name(),
                    &call.invocation.describe(),
                ))
            }
            None if call.corrected || mode == ApprovalMode::Yolo => Err(Consent::Approved),
            None => Err(Consent::Unasked),
        }
    }

    /// Whether the rules, the mode or an "always" answer approve a call that asks,
    /// without a question; for protected configuration only yolo and a rule of the
    /// session's that names the file (the session's rules, not the turn's grants).
    fn approves_unasked(
        &self,
        screened: &Screened<'_>,
        mode: ApprovalMode,
        details: &ConfirmationDetails,
        protected: Option<&ProtectedChange>,
    ) -> bool {
        let call = &screened.call;
        let allowed = screened.decision == Decision::Allow;
        match protected {
            Some(change) => {
                let subject: PermissionSubject = call.invocation.permission_subject();
                mode == ApprovalMode::Yolo
                    || (allowed
                        && change.named_by_rule(&self.permissions, &rule_names(call), &subject))
            }
            None => {
                allowed
                    || call.pre_hook.decision == Some(HookDecision::Allow)
                    || (mode == ApprovalMode::Yolo && !call.registration.tool.ends_plan_mode())
                    || (mode == ApprovalMode::AutoEdit
                        && matches!(details, ConfirmationDetails::Edit { .. }))
                    || self.allowances.covers(
                        &call.registration.name,
                        &call.registration.origin,
                        details,
                    )
            }
        }
    }

    /// The verdict when a call must ask and nobody can be asked: a plan becomes the
    /// session's answer; anything else is refused, saying why and how to allow it.
    fn refuse_unasked(
        &self,
        screened: &Screened<'_>,
        mode: ApprovalMode,
        details: &ConfirmationDetails,
        protected: Option<&ProtectedChange>,
    ) -> Verdict {
        let call = &screened.call;
        let tool = call.registration.name.as_str();
        if call.registration.tool.ends_plan_mode()
            && let ConfirmationDetails::Plan { plan, .. } = details
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
        if let Some(change) = protected {
            return Verdict::Refuse(change.refusal(
                tool,
                &rule_names(call),
                self.permissions.rules().vocabulary(),
                &why,
            ));
        }
        let asked_by = self.asking_rule(screened);
        Verdict::Refuse(ToolError::new(
            ErrorKind::ExecutionDenied,
            format!(
                "Tool \"{tool}\" needs the user's approval ({}{asked_by}), and {why}, so it was not run. Do not retry it; continue without it if you can, or tell the user what you need. {how}",
                details.title()
            ),
        ))
    }

    /// When an ask rule or a hook, not the tool, asked: the words that name it, so the
    /// person knows which rule or hook to change; empty otherwise.
    fn asking_rule(&self, screened: &Screened<'_>) -> String {
        if screened.decision != Decision::Ask && screened.call.pre_hook.asks() {
            return format!(
                ", asked for by a PreToolUse hook: {}",
                screened.call.pre_hook.reason_or("it gave no reason")
            );
        }
        if screened.decision != Decision::Ask {
            return String::new();
        }
        let subject = screened.call.invocation.permission_subject();
        rule_names(&screened.call)
            .iter()
            .find_map(|name| {
                let verdict = self.permissions.rules().verdict(name, &subject);
                (verdict.decision == Decision::Ask)
                    .then_some(verdict.rule)
                    .flatten()
            })
            .map(|rule| format!(", asked for by the permission rule `{rule}`"))
            .unwrap_or_default()
    }

    /// Asks the person, and makes their answer a verdict (remembering an "always").
    async fn ask(
        &self,
        approver: &dyn Approver,
        call: &Validated<'_>,
        mode: ApprovalMode,
        ask: ApprovalRequest,
        cancel: &CancellationToken,
    ) -> Verdict {
        self.emit(SchedulerEvent::AwaitingApproval {
            call_id: ask.call_id.clone(),
            tool: ask.tool.clone(),
            details: ask.details.clone(),
        });
        // The person's hooks hear of the question (Notification) beside it.
        self.notify_question(call, &ask, cancel);
        let answer = tokio::select! {
            answer = approver.approve(&ask) => answer,
            _ = cancel.cancelled() => return Verdict::Cancelled(cancelled_error()),
        };
        let outcome = answer.outcome;
        if !outcome.proceeds() {
            return refusal_by_person(call, &answer);
        }
        let tool = call.registration.name.as_str();
        if ask.may_always_allow {
            self.allowances
                .remember(outcome, tool, &call.registration.origin, &ask.details);
        }
        if let Some(corrected) = answer.arguments {
            // Plan mode is left, if at all, when the corrected call is decided.
            return Verdict::RunWith(corrected, Corrector::Person);
        }
        if call.registration.tool.ends_plan_mode() && mode == ApprovalMode::Plan {
            self.leave_plan_mode(outcome);
        }
        Verdict::Run(Consent::Approved)
    }

    /// An approved plan returns the session to the mode it had before plan mode, or to
    /// auto-edit when the person chose "always" (approve the plan and its edits).
    pub(super) fn leave_plan_mode(&self, outcome: ConfirmationOutcome) {
        let before = self.before_plan.lock().map(|b| *b).unwrap_or_default();
        self.set_mode(if outcome == ConfirmationOutcome::ProceedAlways {
            ApprovalMode::AutoEdit
        } else {
            before
        });
    }
}

/// The verdict when the person said no, with what they said.
fn refusal_by_person(call: &Validated<'_>, answer: &Approval) -> Verdict {
    let tool = call.registration.name.as_str();
    let said = answer
        .message
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(|m| format!(" The user said: {m}"))
        .unwrap_or_default();
    if call.registration.tool.ends_plan_mode() {
        return Verdict::Refuse(ToolError::new(
            ErrorKind::ExecutionDenied,
            format!(
                "The user did not approve the plan. Plan mode stays on: keep researching with read-only tools, ask what they want changed if unclear, and present a revised plan with {tool}.{said}"
            ),
        ));
    }
    Verdict::Cancelled(ToolError::new(
        ErrorKind::ExecutionDenied,
        format!("The user did not allow this call to \"{tool}\"; it was not run.{said}"),
    ))
}
