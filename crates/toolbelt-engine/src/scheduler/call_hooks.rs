//! The session's hooks at the steps of one call (see [`crate::hooks`]):
//!
//! - **PreToolUse**, after validation and before the rules, the mode and the question.
//!   `deny` refuses the call with the hook's reason for the model (PermissionDenied does
//!   not fire for a hook's own refusal: the hook already knows); `allow` counts as an
//!   allow rule (never past a deny or ask rule, plan mode or protected configuration);
//!   `ask` as an ask rule (asked whatever the mode, refused when nobody can be asked);
//!   `updatedInput` is validated again as the model's arguments would be (schema, the
//!   tool's checks, the workspace boundary, then the rules), and the decision applies
//!   to the rewritten call; `additionalContext` joins the call's result.
//! - **PermissionRequest**, where a person would be asked (also when nobody can be: a
//!   hook may answer a headless session's question): `allow` runs the call (with its
//!   `updatedInput`, validated and judged by the rules again), `deny` refuses it, no
//!   decision asks as usual. It never approves protected configuration.
//! - **PermissionDenied**, when a rule, plan mode or the want of anyone to ask refused
//!   the call; only its failures are shown.
//! - **PostToolUse** after a call that succeeded, **PostToolUseFailure** after one that
//!   failed or was cancelled: `additionalContext` and a blocking reason are added to the
//!   result the model reads (the call has run).
//! - **Notification** (`permission_prompt`) while a question waits for the person.
//!
//! Any of them may say `continue: false`: the call does not run (or has run), the calls
//! after it in the turn are not run, and [`CompletedCall::stop`] tells the agent to stop.
//! What hooks add for the model is marked as theirs ([`crate::hooks::context_block`]).
//! A request is built only when the runner [`wants`](HookRunner::wants) the event for
//! the tool, and a session without hooks does none of this. Hooks run under the turn's
//! cancellation token.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::pipeline::{Validated, finish_early_boxed};
use super::run_call::cancelled_error;
use super::{
    ApprovalMode, ApprovalRequest, CallState, CompletedCall, Corrector, Scheduler, SchedulerEvent,
    Verdict, text_for_model,
};
use crate::hooks::{
    HookDecision, HookEvent, HookMessage, HookOutcome, HookRequest, HookRunner, context_block,
};
use toolbelt_core::ConfirmationOutcome;
use toolbelt_core::Consent;
use toolbelt_core::{Display, ErrorKind, Part, ToolError, ToolResult};

/// What a call's PreToolUse hooks said that the decision needs, and the context they
/// gave the model.
#[derive(Debug, Clone, Default)]
pub(super) struct PreHook {
    /// Their combined `allow` or `ask` (a `deny` has refused the call already).
    pub(super) decision: Option<HookDecision>,
    /// The reason given with it.
    pub(super) reason: Option<String>,
    /// `additionalContext`, added to the call's result.
    pub(super) context: Vec<String>,
}

impl PreHook {
    /// Whether a hook asked that the person be asked.
    pub(super) fn asks(&self) -> bool {
        self.decision == Some(HookDecision::Ask)
    }

    /// The hook's reason, or `fallback`.
    pub(super) fn reason_or(&self, fallback: &str) -> String {
        match self.reason.as_deref().map(str::trim) {
            Some(reason) if !reason.is_empty() => reason.to_string(),
            _ => fallback.to_string(),
        }
    }

    /// The question's one line, with the hook's reason when a hook asked it (shown as
    /// written).
    pub(super) fn describe_question(&self, description: String) -> String {
        match self.reason.as_deref().map(str::trim) {
            Some(reason) if self.asks() && !reason.is_empty() => {
                format!("{description} (a PreToolUse hook asks: {reason})")
            }
            _ => description,
        }
    }
}

/// Why a call was refused without its hooks or the person refusing it: the
/// PermissionDenied event's `reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Denial {
    /// A deny rule.
    Rule,
    /// Plan mode (the call's kind is not read-only).
    PlanMode,
    /// It needed someone's approval and nobody can be asked.
    NobodyToAsk,
}

impl Denial {
    fn as_str(self) -> &'static str {
        match self {
            Denial::Rule => "permission_rule",
            Denial::PlanMode => "plan_mode",
            Denial::NobodyToAsk => "nobody_to_ask",
        }
    }
}

/// One call as its hooks see it: the tool's runtime name, the other names a matcher
/// may give it (its display name and the names its permission rules accept, such as
/// Claude Code's `Bash`), and the arguments it has now.
#[derive(Clone)]
pub(super) struct CallHooks {
    runner: Arc<dyn HookRunner>,
    events: Option<mpsc::UnboundedSender<SchedulerEvent>>,
    call_id: String,
    tool: String,
    aliases: Vec<String>,
    input: Value,
    mode: ApprovalMode,
    nobody_to_ask: bool,
}

impl CallHooks {
    /// Whether any hook runs for `event` on this tool.
    pub(super) fn wants(&self, event: HookEvent) -> bool {
        self.runner.wants(event, Some(&self.tool), &self.aliases)
    }

    /// The request of a tool event, with the tool's fields.
    fn request(&self, event: HookEvent) -> HookRequest {
        let mut request = HookRequest::new(event)
            .field("tool_name", self.tool.clone())
            .field("tool_input", self.input.clone())
            .field("tool_use_id", self.call_id.clone())
            .field("tool_call_id", self.call_id.clone());
        request.target = Some(self.tool.clone());
        request.aliases = self.aliases.clone();
        request.permission_mode = Some(self.mode.hook_name().to_string());
        request.nobody_to_ask = self.nobody_to_ask;
        request
    }

    /// Runs the event's hooks under `cancel`; the person is shown what they said
    /// (only failures for PermissionDenied, whose output is otherwise ignored).
    async fn run(&self, request: HookRequest, cancel: &CancellationToken) -> HookOutcome {
        let event = request.event;
        let outcome = self.runner.run(request, cancel.clone()).await;
        self.report(event, &outcome);
        outcome
    }

    /// Shows the person what the hooks of `event` said (their messages, a stop).
    fn report(&self, event: HookEvent, outcome: &HookOutcome) {
        for message in outcome.messages(event) {
            if event != HookEvent::PermissionDenied || message.failure {
                self.emit(message);
            }
        }
        if event != HookEvent::PermissionDenied
            && let Some(stop) = &outcome.stop
        {
            self.emit(HookMessage::note(
                event,
                format!("a hook stopped the agent: {stop}"),
            ));
        }
    }

    fn emit(&self, message: HookMessage) {
        if let Some(tx) = &self.events {
            let _ = tx.send(SchedulerEvent::Hook {
                call_id: self.call_id.clone(),
                message,
            });
        }
    }

    /// PostToolUse after a call that succeeded, PostToolUseFailure after one that
    /// failed or was cancelled, on the tool's own result: what they say for the model
    /// joins the result after what PreToolUse hooks said (`pre_context`), and a
    /// `continue: false` becomes the call's [`CompletedCall::stop`].
    pub(super) async fn after_run(
        &self,
        done: &mut CompletedCall,
        pre_context: &[String],
        cancel: &CancellationToken,
    ) {
        let event = if done.state == CallState::Success {
            HookEvent::PostToolUse
        } else {
            HookEvent::PostToolUseFailure
        };
        if !self.wants(event) {
            push_context(&mut done.result, HookEvent::PreToolUse, pre_context);
            return;
        }
        let millis = u64::try_from(done.duration.as_millis()).unwrap_or(u64::MAX);
        let request = self.request(event).field("duration_ms", millis);
        let request = match event {
            HookEvent::PostToolUse => request.field("tool_response", tool_response(&done.result)),
            _ => request
                .field(
                    "error",
                    done.result
                        .error
                        .as_ref()
                        .map(|e| e.message.clone())
                        .unwrap_or_default(),
                )
                .field("is_interrupt", done.state == CallState::Cancelled),
        };
        let outcome = self.run(request, cancel).await;
        push_context(&mut done.result, HookEvent::PreToolUse, pre_context);
        let mut context = outcome.additional_context.clone();
        if outcome.denied() {
            context.push(format!(
                "Feedback from a {event} hook on this call (it has already run): {}",
                outcome.reason_or("no reason given")
            ));
        }
        push_context(&mut done.result, event, &context);
        if let Some(stop) = outcome.stop {
            done.stop = Some(stop);
        }
    }
}

/// Adds hooks' context for the model to a result, as its own marked part.
pub(super) fn push_context(result: &mut ToolResult, event: HookEvent, context: &[String]) {
    if let Some(block) = context_block(event, context) {
        result.llm_content.push(Part::text(block));
    }
}

/// What PostToolUse hooks get as `tool_response`: the text the model reads and what a
/// person sees, without a diff's whole texts.
fn tool_response(result: &ToolResult) -> Value {
    let display = match &result.return_display {
        Display::FileDiff(diff) => json!({
            "type": "file_diff",
            "file_name": diff.file_name,
            "file_path": diff.file_path,
            "diff": diff.diff,
            "is_new_file": diff.is_new_file,
            "added_lines": diff.added_lines,
            "removed_lines": diff.removed_lines,
        }),
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    };
    json!({
        "llm_content": text_for_model(result),
        "result_display": display,
    })
}

impl Scheduler {
    /// The call's hooks, with its arguments as they are now, when a hook runs for one of
    /// `events` on this tool (for any event: `None` for `events`); `None` without
    /// hooks. Asked before anything of the call is copied.
    pub(super) fn call_hooks(
        &self,
        call: &Validated<'_>,
        events: Option<&[HookEvent]>,
    ) -> Option<CallHooks> {
        let runner = self.hooks.as_ref()?;
        let registration = call.registration;
        let tool = registration.tool.as_ref();
        let mut aliases: Vec<String> = Vec::new();
        for name in std::iter::once(tool.display_name()).chain(tool.hook_aliases().iter().copied())
        {
            if name != registration.name && !aliases.iter().any(|a| a == name) {
                aliases.push(name.to_string());
            }
        }
        if let Some(events) = events
            && !events
                .iter()
                .any(|e| runner.wants(*e, Some(&registration.name), &aliases))
        {
            return None;
        }
        Some(CallHooks {
            runner: runner.clone(),
            events: self.events.clone(),
            call_id: call.request.call_id.clone(),
            tool: registration.name.clone(),
            aliases,
            input: call.arguments.clone(),
            mode: self.mode(),
            nobody_to_ask: self.approver.is_none(),
        })
    }

    /// PreToolUse: the call back with what its hooks decided (and perhaps their
    /// arguments, validated again), or finished when they refused or stopped it.
    pub(super) async fn pre_tool_use<'r>(
        &self,
        mut call: Validated<'r>,
        cancel: &CancellationToken,
    ) -> Result<Validated<'r>, Box<CompletedCall>> {
        let event = HookEvent::PreToolUse;
        let Some(hooks) = self.call_hooks(&call, Some(&[event])) else {
            return Ok(call);
        };
        let outcome = hooks.run(hooks.request(event), cancel).await;
        let tool = call.registration.name.clone();
        let refusal = if cancel.is_cancelled() {
            Some(cancelled_error())
        } else if let Some(stop) = &outcome.stop {
            Some(denied(format!(
                "Tool \"{tool}\" was not run: a PreToolUse hook stopped the agent ({stop})."
            )))
        } else if outcome.denied() {
            Some(denied(format!(
                "Tool \"{tool}\" was blocked by a PreToolUse hook: {}. It was not run; do not retry it unchanged.",
                outcome.reason_or("it gave no reason").trim_end_matches('.')
            )))
        } else {
            None
        };
        if let Some(error) = refusal {
            // What the call was (the command, the file), as a call that ran shows it.
            let description = call.invocation.describe();
            let mut done = finish_early_boxed(call.request, call.arguments, &description, error);
            done.stop = outcome.stop;
            push_context(&mut done.result, event, &outcome.additional_context);
            return Err(done);
        }
        call.pre_hook = PreHook {
            decision: outcome.decision,
            reason: outcome.reason,
            context: outcome.additional_context,
        };
        match outcome.updated_input {
            Some(input) => {
                let context = call.pre_hook.context.clone();
                self.revalidate(call, input, "", Corrector::Hook(event))
                    .map_err(|mut done| {
                        push_context(&mut done.result, event, &context);
                        done
                    })
            }
            None => Ok(call),
        }
    }

    /// PermissionRequest, where the person would be asked: the hooks' answer in their
    /// place, or `None` to ask as usual. An `allow` of protected configuration is not
    /// taken (the person is asked, or the call refused when nobody can be).
    pub(super) async fn permission_request(
        &self,
        call: &Validated<'_>,
        mode: ApprovalMode,
        protected: bool,
        cancel: &CancellationToken,
    ) -> Option<Verdict> {
        let event = HookEvent::PermissionRequest;
        let hooks = self.call_hooks(call, Some(&[event]))?;
        let outcome = hooks.run(hooks.request(event), cancel).await;
        let tool = call.registration.name.as_str();
        if cancel.is_cancelled() {
            return Some(Verdict::Cancelled(cancelled_error()));
        }
        if let Some(stop) = outcome.stop {
            let error = denied(format!(
                "Tool \"{tool}\" was not run: a PermissionRequest hook stopped the agent ({stop})."
            ));
            return Some(Verdict::Stop(error, stop));
        }
        match outcome.decision {
            Some(HookDecision::Deny) => Some(Verdict::Refuse(denied(format!(
                "Tool \"{tool}\" was denied by a PermissionRequest hook: {}. It was not run; do not retry it unchanged.",
                outcome.reason_or("it gave no reason").trim_end_matches('.')
            )))),
            Some(HookDecision::Allow) if protected => {
                hooks.emit(HookMessage::note(
                    event,
                    format!("a hook's allow does not approve \"{tool}\": it changes protected configuration"),
                ));
                None
            }
            Some(HookDecision::Allow) => {
                if let Some(input) = outcome.updated_input {
                    return Some(Verdict::RunWith(input, Corrector::Hook(event)));
                }
                if call.registration.tool.ends_plan_mode() && mode == ApprovalMode::Plan {
                    self.leave_plan_mode(ConfirmationOutcome::ProceedOnce);
                }
                Some(Verdict::Run(Consent::Approved))
            }
            Some(HookDecision::Ask) | None => None,
        }
    }

    /// PermissionDenied, when `verdict` refuses the call for `denial`'s reason.
    pub(super) async fn permission_denied(
        &self,
        call: &Validated<'_>,
        denial: Denial,
        verdict: &Verdict,
        cancel: &CancellationToken,
    ) {
        let event = HookEvent::PermissionDenied;
        let Verdict::Refuse(error) = verdict else {
            return;
        };
        let Some(hooks) = self.call_hooks(call, Some(&[event])) else {
            return;
        };
        let request = hooks
            .request(event)
            .field("reason", denial.as_str())
            .field("message", error.message.clone());
        hooks.run(request, cancel).await;
    }

    /// Notification (`permission_prompt`) as `ask` is put to the person. It runs on a
    /// task of its own to its own end (its time limit, or `cancel`: the call's): the
    /// question never waits for it, and a quick answer does not cut short a hook that is
    /// still sending its notification (Claude Code and Qwen Code let it finish too).
    /// Its processes are ended with its run, like every hook's.
    pub(super) fn notify_question(
        &self,
        call: &Validated<'_>,
        ask: &ApprovalRequest,
        cancel: &CancellationToken,
    ) {
        let event = HookEvent::Notification;
        let kind = "permission_prompt";
        if !self
            .hooks
            .as_ref()
            .is_some_and(|runner| runner.wants(event, Some(kind), &[]))
        {
            return;
        }
        let Some(hooks) = self.call_hooks(call, None) else {
            return;
        };
        let mut request = HookRequest::new(event)
            .field(
                "message",
                format!(
                    "toolbelt needs your permission to use {}: {}",
                    ask.tool, ask.description
                ),
            )
            .field("title", "Permission needed")
            .field("notification_type", kind);
        request.target = Some(kind.to_string());
        request.permission_mode = Some(hooks.mode.hook_name().to_string());
        // Started here (the request is the runner's before the question is put), run
        // to its end on a task of its own.
        let running = hooks.runner.run(request, cancel.clone());
        tokio::spawn(async move {
            let outcome = running.await;
            hooks.report(event, &outcome);
        });
    }
}

fn denied(message: String) -> ToolError {
    ToolError::new(ErrorKind::ExecutionDenied, message)
}
