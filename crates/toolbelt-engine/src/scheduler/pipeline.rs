//! Phase 1 of a turn for one call, as a sequence of states with a type each:
//! [`Validated`] (the tool is known and enabled, the guards passed, the invocation is
//! built), [`Screened`] (the rules and plan mode let it through, with the rules'
//! decision), [`Decided`] (a [`Verdict`]), and then either [`Approved`] (phase 2 runs it,
//! and it has *ran* as a [`CompletedCall`]) or a call finished early.
//!
//! Arguments the person corrected go through the same steps again from [`Validated`]
//! (validation, the rules and plan mode: a deny rule still wins); only the question is
//! not asked twice, which [`Validated::corrected`] tells [`Scheduler::decide`]. So do the
//! arguments a hook gives (`updatedInput`): a PreToolUse hook's before the rules judge
//! the call (its decision then applies to the rewritten call), a PermissionRequest
//! hook's in the person's place (see `call_hooks.rs`).

use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::call_hooks::{PreHook, push_context};
use super::guards::{RETRY_LOOP_NOTE, TRUNCATED_EDIT_ADVICE};
use super::run_call::cancelled_error;
use super::{
    Approved, CallState, CompletedCall, Corrector, Prepared, Scheduler, SchedulerEvent,
    ToolCallRequest, TurnInfo, Verdict,
};
use crate::hooks::HookEvent;
use crate::registry::{Origin, Registration, ToolRegistry};
use crate::rules::Decision;
use toolbelt_core::parse_arguments;
use toolbelt_core::{Consent, Invocation, Kind};
use toolbelt_core::{ErrorKind, ToolError, ToolResult};

/// A call whose tool is registered and enabled, whose arguments passed the schema and
/// the guards, with its invocation built (not yet prepared).
pub(super) struct Validated<'r> {
    pub(super) request: ToolCallRequest,
    pub(super) arguments: Value,
    pub(super) registry: &'r ToolRegistry,
    pub(super) registration: &'r Registration,
    pub(super) kind: Kind,
    pub(super) invocation: Box<dyn Invocation>,
    /// The person gave these arguments in place of the model's: they approved the call.
    pub(super) corrected: bool,
    /// What the call's PreToolUse hooks said (nothing without hooks).
    pub(super) pre_hook: PreHook,
}

/// A validated call that the rules and plan mode let through, with the rules' answer.
pub(super) struct Screened<'r> {
    pub(super) call: Validated<'r>,
    pub(super) decision: Decision,
}

/// A call with the verdict of its approval and the description it had then.
pub(super) struct Decided<'r> {
    call: Validated<'r>,
    description: String,
    verdict: Verdict,
}

impl Scheduler {
    /// Phase 1 for one call: validated, screened, decided; approved or finished early.
    pub(super) async fn prepare(
        &self,
        registry: &ToolRegistry,
        request: ToolCallRequest,
        turn: TurnInfo,
        cancel: &CancellationToken,
    ) -> Prepared {
        let call = match self.validate(registry, request, turn, cancel) {
            Ok(call) => call,
            Err(done) => return Prepared::Done(*done),
        };
        let call = match self.pre_tool_use(call, cancel).await {
            Ok(call) => call,
            Err(done) => return Prepared::Done(*done),
        };
        let mut decided = self.judge(call, cancel).await;
        if let Verdict::RunWith(corrected, by) = decided.verdict {
            let context = decided.call.pre_hook.context.clone();
            let call = match self.revalidate(decided.call, corrected, &decided.description, by) {
                Ok(call) => call,
                Err(mut done) => {
                    push_context(&mut done.result, HookEvent::PreToolUse, &context);
                    return Prepared::Done(*done);
                }
            };
            decided = self.judge(call, cancel).await;
        }
        self.conclude(decided)
    }

    /// Parses the arguments, finds the tool, applies the guards (truncated edit,
    /// repeated failure) and builds the invocation.
    fn validate<'r>(
        &self,
        registry: &'r ToolRegistry,
        request: ToolCallRequest,
        turn: TurnInfo,
        cancel: &CancellationToken,
    ) -> Result<Validated<'r>, Box<CompletedCall>> {
        if cancel.is_cancelled() {
            return Err(finish_early_boxed(
                request,
                Value::Null,
                "",
                cancelled_error(),
            ));
        }
        let arguments = match parse_arguments(&request.arguments) {
            Ok(v) => v,
            Err(e) => return Err(finish_early_boxed(request, Value::Null, "", e)),
        };
        let Some(registration) = registry.get(&request.name) else {
            let error = registry.not_found(&request.name);
            return Err(finish_early_boxed(request, arguments, "", error));
        };
        if let Some(error) = registry.disabled(&request.name) {
            return Err(finish_early_boxed(request, arguments, "", error));
        }
        let kind = registration.tool.kind();
        if turn.reply_truncated && kind == Kind::Edit {
            let error = ToolError::new(ErrorKind::ExecutionDenied, TRUNCATED_EDIT_ADVICE);
            return Err(finish_early_boxed(request, arguments, "", error));
        }
        let tool = registration.name.as_str();
        let invocation = match registration.build(arguments.clone()) {
            Ok(inv) => inv,
            Err(mut error) => {
                let repeated = self
                    .retry_guard
                    .lock()
                    .map(|mut g| g.failed(tool, &error.message))
                    .unwrap_or(false);
                if repeated {
                    error.message = format!("{}\n\n{RETRY_LOOP_NOTE}", error.message);
                }
                return Err(finish_early_boxed(request, arguments, "", error));
            }
        };
        if let Ok(mut g) = self.retry_guard.lock() {
            g.passed(tool);
        }
        Ok(Validated {
            request,
            arguments,
            registry,
            registration,
            kind,
            invocation,
            corrected: false,
            pre_hook: PreHook::default(),
        })
    }

    /// The call again with the person's (or a hook's) arguments in place of the
    /// model's: they are validated as the model's were (schema, the tool's own checks,
    /// the workspace boundary; the guards are the model's, not theirs). Arguments the
    /// person or a PermissionRequest hook gave approve the call; a PreToolUse hook's
    /// are judged as the model's would be.
    pub(super) fn revalidate<'r>(
        &self,
        call: Validated<'r>,
        corrected: Value,
        description: &str,
        by: Corrector,
    ) -> Result<Validated<'r>, Box<CompletedCall>> {
        match call.registration.build(corrected.clone()) {
            Ok(invocation) => Ok(Validated {
                arguments: corrected,
                invocation,
                corrected: match by {
                    Corrector::Person => true,
                    Corrector::Hook(event) => event == HookEvent::PermissionRequest,
                },
                ..call
            }),
            Err(mut error) => {
                let who = match by {
                    Corrector::Person => "the user".to_string(),
                    Corrector::Hook(event) => format!("a {event} hook"),
                };
                error.message = format!(
                    "The arguments {who} gave in place of yours are not valid: {}",
                    error.message
                );
                Err(finish_early_boxed(
                    call.request,
                    corrected,
                    description,
                    error,
                ))
            }
        }
    }

    /// Screens the call, prepares it unless it will be refused, and decides it.
    async fn judge<'r>(&self, call: Validated<'r>, cancel: &CancellationToken) -> Decided<'r> {
        // A call the rules or plan mode refuse runs nothing, not even its `prepare`.
        let mut screened = match self.screen(call) {
            Ok(screened) => screened,
            Err(refused) => {
                let (call, verdict, denial) = *refused;
                let description = self.announce(&call);
                if let Some(denial) = denial {
                    self.permission_denied(&call, denial, &verdict, cancel)
                        .await;
                }
                return Decided {
                    call,
                    description,
                    verdict,
                };
            }
        };
        // With nobody to ask, the whole decision is known before `prepare` (its messages
        // only word a question), so a call that will be refused runs nothing either.
        let early = match &self.approver {
            None => Some(self.decide(&screened, cancel).await),
            Some(_) => None,
        };
        if early.as_ref().is_none_or(Verdict::runs) {
            screened.call.invocation.prepare(cancel).await;
        }
        let description = self.announce(&screened.call);
        let verdict = match early {
            Some(verdict) => verdict,
            None => self.decide(&screened, cancel).await,
        };
        Decided {
            call: screened.call,
            description,
            verdict,
        }
    }

    /// The call's description once prepared; the first time, displays learn of it.
    fn announce(&self, call: &Validated<'_>) -> String {
        let description = call.invocation.describe();
        if !call.corrected {
            self.emit(SchedulerEvent::Validated {
                call_id: call.request.call_id.clone(),
                tool: call.registration.name.clone(),
                description: description.clone(),
            });
        }
        description
    }

    /// What the verdict makes of the call: approved for phase 2, or finished.
    fn conclude(&self, decided: Decided<'_>) -> Prepared {
        let Decided {
            mut call,
            description,
            verdict,
        } = decided;
        let context = std::mem::take(&mut call.pre_hook.context);
        let consent = match verdict {
            Verdict::Run(consent) => consent,
            // (`decide` for a corrected call never answers `RunWith`; were it to, the
            // person gave those arguments.)
            Verdict::RunWith(..) => Consent::Approved,
            verdict => {
                let mut done = finished_by(verdict, call.request, call.arguments, &description);
                push_context(&mut done.result, HookEvent::PreToolUse, &context);
                return Prepared::Done(done);
            }
        };
        // Only the scheduler's own kind of tool is believed when it grants: an MCP or
        // discovered tool's invocation is toolbelt code too, but a grant is a built-in's
        // (the `skill` tool's) capability.
        if call.registration.origin == Origin::BuiltIn
            && let Some(grant) = call.invocation.turn_grant()
        {
            self.grants.add(&self.permissions, &grant);
        }
        self.emit(SchedulerEvent::Scheduled {
            call_id: call.request.call_id.clone(),
        });
        // The call's hooks run after it when one is for PostToolUse(Failure), or when
        // PreToolUse left context for its result.
        let after = [HookEvent::PostToolUse, HookEvent::PostToolUseFailure];
        let hooks = self.call_hooks(&call, context.is_empty().then_some(&after[..]));
        Prepared::Approved(Approved {
            request: call.request,
            arguments: call.arguments,
            tool: call.registration.name.clone(),
            kind: call.kind,
            description,
            invocation: call.invocation,
            consent,
            facts: {
                let facts = call.registration.tool.facts();
                super::run_call::ToolFactsForCheckpoint {
                    writes_files: facts.writes_files,
                    edits_named_files: facts.edits_named_files,
                }
            },
            hooks,
            hook_context: context,
        })
    }
}

impl Verdict {
    /// Whether the call runs (possibly with the person's arguments).
    fn runs(&self) -> bool {
        matches!(self, Verdict::Run(_) | Verdict::RunWith(..))
    }
}

/// The completed call of one whose verdict does not run it.
fn finished_by(
    verdict: Verdict,
    request: ToolCallRequest,
    arguments: Value,
    description: &str,
) -> CompletedCall {
    match verdict {
        Verdict::Answered(result) => {
            let mut done = finish_early(request, arguments, description, cancelled_error());
            done.state = CallState::Success;
            done.result = result;
            done
        }
        Verdict::Cancelled(error) => {
            let mut done = finish_early(request, arguments, description, error);
            done.state = CallState::Cancelled;
            done
        }
        Verdict::Stop(error, reason) => {
            let mut done = finish_early(request, arguments, description, error);
            done.stop = Some(reason);
            done
        }
        Verdict::Refuse(error) => finish_early(request, arguments, description, error),
        // Runs: never given here.
        Verdict::Run(_) | Verdict::RunWith(..) => finish_early(
            request,
            arguments,
            description,
            ToolError::new(ErrorKind::ExecutionFailed, "the call was not run"),
        ),
    }
}

/// A call after one whose hook stopped the agent: not run.
pub(super) fn skipped_after_stop(request: ToolCallRequest, reason: &str) -> CompletedCall {
    let error = ToolError::new(
        ErrorKind::ExecutionDenied,
        format!("Not run: a hook stopped the agent before this call ({reason})."),
    );
    let arguments = parse_arguments(&request.arguments).unwrap_or(Value::Null);
    finish_early(request, arguments, "", error)
}

pub(super) fn finish_early_boxed(
    request: ToolCallRequest,
    arguments: Value,
    description: &str,
    error: ToolError,
) -> Box<CompletedCall> {
    Box::new(finish_early(request, arguments, description, error))
}

/// The completed call of one that never ran: an error result (cancelled or refused).
fn finish_early(
    request: ToolCallRequest,
    arguments: Value,
    description: &str,
    error: ToolError,
) -> CompletedCall {
    let state = if error.kind == ErrorKind::Cancelled {
        CallState::Cancelled
    } else {
        CallState::Error
    };
    let description = if description.is_empty() {
        request.name.clone()
    } else {
        description.to_string()
    };
    CompletedCall {
        call_id: request.call_id,
        name: request.name,
        arguments,
        description,
        state,
        result: ToolResult::error(error),
        duration: Duration::ZERO,
        stop: None,
    }
}
