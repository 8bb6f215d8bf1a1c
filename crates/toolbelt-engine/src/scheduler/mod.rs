//! The scheduler: the function calls of one model turn in, one result per call out, in
//! call order.
//!
//! # Brief overview
//!
//! [`Scheduler::run`] takes the calls of a turn through two phases:
//!
//! 1. **Validate and approve, one call at a time, in order.** Parse the argument text,
//!    look the tool up (an unknown name gets the closest names), apply the guards
//!    (truncated edit, repeated failure), build the invocation, then decide approval (see
//!    [`approval`]). Asking is sequential on purpose: a person answers one question at a
//!    time, and an "always allow" answer covers the calls after it.
//! 2. **Execute.** The approved calls are split into consecutive runs: a run of read-only
//!    calls (read, search, fetch, think) executes in parallel, at most
//!    [`SchedulerConfig::max_parallel`] at once; any other call executes alone, in order.
//!    `[read, read, edit, read]` becomes `[[read ∥ read], [edit], [read]]`.
//!
//! One [`CancellationToken`] covers the turn: cancelling it stops the call waiting for
//! approval, every running call (each gets a child token, so a tool can return what it
//! had done so far), and every call not yet started. Every call gets exactly one result;
//! every text part passes [`OutputPolicy::limit_result`](toolbelt_core::OutputPolicy::limit_result).
//!
//! Each call is a task of its own (`tokio::spawn`), so a panicking tool becomes an error
//! result instead of ending the session.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use crate::registry::ToolRegistry;
use toolbelt_core::{Consent, Invocation, Kind, ToolEnvironment};
use toolbelt_core::{ErrorKind, ToolError, ToolResult};

pub mod approval;
mod call_hooks;
mod config;
mod decide;
pub mod events;
pub mod grants;
pub mod guards;
mod pipeline;
mod protect;
mod run_call;

pub use approval::{Approval, ApprovalRequest, Approver, Permissions, SessionAllowances};
use call_hooks::CallHooks;
pub use config::{CallRules, NobodyToAsk, SchedulerConfig};
pub use events::{CallState, CompletedCall, SchedulerEvent, ToolCallRequest};
use grants::TurnGrants;
use guards::RetryLoopGuard;
pub use run_call::text_for_model;
use run_call::{JobInfo, execute};
use toolbelt_config::ApprovalMode;

/// Qwen Code's `QWEN_CODE_MAX_TOOL_CONCURRENCY` default.
pub const DEFAULT_MAX_PARALLEL: usize = 10;

/// Facts about the model reply the calls came from.
#[derive(Debug, Clone, Copy, Default)]
pub struct TurnInfo {
    /// The reply stopped at the output token limit.
    pub reply_truncated: bool,
}

/// Runs the tool calls of each model turn: lookup, argument checks, approval (rules,
/// mode, person), execution (read-only calls side by side, the rest one at a time) and
/// the output policy, with exactly one [`CompletedCall`] per call. One per session: it
/// keeps the approval mode and the "always allow" answers across turns.
pub struct Scheduler {
    env: Arc<ToolEnvironment>,
    permissions: Permissions,
    approver: Option<Arc<dyn Approver>>,
    max_parallel: usize,
    events: Option<mpsc::UnboundedSender<SchedulerEvent>>,
    nobody_to_ask: Option<NobodyToAsk>,
    mode: Mutex<ApprovalMode>,
    /// The mode to return to when a plan is approved: the one the session had before it
    /// entered plan mode (`Default` when it started in plan mode).
    before_plan: Mutex<ApprovalMode>,
    allowances: SessionAllowances,
    /// Allow rules granted for the rest of the turn (see [`grants`]).
    grants: TurnGrants,
    retry_guard: Mutex<RetryLoopGuard>,
    /// The session's hooks (see `call_hooks.rs`).
    hooks: Option<Arc<dyn crate::hooks::HookRunner>>,
    checkpoints: Option<Arc<dyn crate::checkpoint::Checkpoints>>,
}

/// A call between the phases: either finished already, or approved with its invocation.
enum Prepared {
    Done(CompletedCall),
    Approved(Approved),
}

struct Approved {
    request: ToolCallRequest,
    arguments: Value,
    tool: String,
    kind: Kind,
    description: String,
    invocation: Box<dyn Invocation>,
    consent: Consent,
    /// What of the tool's facts the checkpoints use (it writes files although read-only;
    /// it changes only the files it names).
    facts: run_call::ToolFactsForCheckpoint,
    /// The call's hooks, for PostToolUse and PostToolUseFailure.
    hooks: Option<CallHooks>,
    /// What its PreToolUse hooks gave the model, added to its result.
    hook_context: Vec<String>,
}

/// Who gave a call the arguments it runs with in place of the model's.
#[derive(Debug, Clone, Copy)]
enum Corrector {
    /// The person, answering its question (see [`Approval::arguments`]).
    Person,
    /// A hook's `updatedInput`.
    Hook(crate::hooks::HookEvent),
}

/// How approval ended for one call.
enum Verdict {
    /// Run, with how it came to run (asked and approved, or never asked).
    Run(Consent),
    /// Approved with corrected arguments: the person's (see [`Approval::arguments`]) or
    /// a PermissionRequest hook's, answering in their place.
    RunWith(Value, Corrector),
    Refuse(ToolError),
    /// Refused because a hook said `continue: false`; the agent stops with the reason.
    Stop(ToolError, String),
    Cancelled(ToolError),
    /// Answered without running the tool (a plan proposed where no one can approve it,
    /// or `exit_plan_mode` outside plan mode).
    Answered(ToolResult),
}

impl Scheduler {
    /// A scheduler for a session in `env`; a `max_parallel` of 0 is taken as 1.
    pub fn new(env: Arc<ToolEnvironment>, config: SchedulerConfig) -> Self {
        let rules = config.rules;
        Scheduler {
            env,
            permissions: rules.permissions,
            approver: config.approver,
            max_parallel: config.max_parallel.max(1),
            events: config.events,
            nobody_to_ask: config.nobody_to_ask,
            mode: Mutex::new(rules.mode),
            before_plan: Mutex::new(ApprovalMode::Default),
            allowances: SessionAllowances::default(),
            grants: TurnGrants::new(config.turn_grants),
            retry_guard: Mutex::new(RetryLoopGuard::default()),
            hooks: rules.hooks,
            checkpoints: rules.checkpoints,
        }
    }

    /// The session's rules as they are now (the current mode), for a scheduler of the
    /// same session that only asks someone else or reports elsewhere (the person's `@`
    /// references, `/memory add`): it keeps the hooks, checkpoints and rules.
    pub fn rules(&self) -> CallRules {
        CallRules {
            permissions: self.permissions.clone(),
            mode: self.mode(),
            hooks: self.hooks.clone(),
            checkpoints: self.checkpoints.clone(),
        }
    }

    /// The current approval mode (it changes when a plan is approved or [`Scheduler::set_mode`] is called).
    pub fn mode(&self) -> ApprovalMode {
        self.mode.lock().map(|m| *m).unwrap_or_default()
    }

    /// Switches the approval mode. Entering plan mode remembers the mode left, which an
    /// approved plan returns to.
    pub fn set_mode(&self, mode: ApprovalMode) {
        if let Ok(mut m) = self.mode.lock() {
            if mode == ApprovalMode::Plan
                && *m != ApprovalMode::Plan
                && let Ok(mut before) = self.before_plan.lock()
            {
                *before = *m;
            }
            *m = mode;
        }
    }

    /// The "always allow" answers of this session.
    pub fn allowances(&self) -> &SessionAllowances {
        &self.allowances
    }

    /// Ends the user turn: what calls granted for the rest of the turn (a skill's
    /// `allowed-tools`) no longer applies. The agent calls it at the start and the end of
    /// every run.
    pub fn end_turn(&self) {
        self.grants.clear();
    }

    /// Who granted tools for the current turn (`skill "x"`), for displays and tests.
    pub fn turn_grant_sources(&self) -> Vec<String> {
        self.grants.sources()
    }

    /// The environment the session's tools were built with.
    pub fn env(&self) -> &Arc<ToolEnvironment> {
        &self.env
    }

    /// The session's permission rules (without this turn's grants).
    pub fn permissions(&self) -> &Permissions {
        &self.permissions
    }

    fn emit(&self, event: SchedulerEvent) {
        if let Some(tx) = &self.events {
            let _ = tx.send(event);
        }
    }

    /// Runs the calls of one model turn; returns one completed call per request, in the
    /// order given.
    pub async fn run(
        &self,
        registry: &ToolRegistry,
        calls: Vec<ToolCallRequest>,
        turn: TurnInfo,
        cancel: &CancellationToken,
    ) -> Vec<CompletedCall> {
        let mut prepared = Vec::with_capacity(calls.len());
        // Once a hook has stopped the agent, the calls after it are not run.
        let mut stopped: Option<String> = None;
        for request in calls {
            let p = match &stopped {
                Some(reason) => Prepared::Done(pipeline::skipped_after_stop(request, reason)),
                None => self.prepare(registry, request, turn, cancel).await,
            };
            if let Prepared::Done(done) = &p {
                if stopped.is_none() {
                    stopped.clone_from(&done.stop);
                }
                self.emit(SchedulerEvent::Finished(done.clone()));
            }
            prepared.push(p);
        }
        self.execute_all(prepared, cancel).await
    }

    /// Phase 2: runs the approved calls in consecutive batches; returns every call in the
    /// original order.
    async fn execute_all(
        &self,
        prepared: Vec<Prepared>,
        cancel: &CancellationToken,
    ) -> Vec<CompletedCall> {
        let mut out: Vec<Option<CompletedCall>> = Vec::with_capacity(prepared.len());
        // Read-only calls waiting to run together: (slot in `out`, call).
        let mut batch: Vec<(usize, Approved)> = Vec::new();
        for p in prepared {
            match p {
                Prepared::Done(done) => out.push(Some(done)),
                Prepared::Approved(call) if call.kind.is_read_only() => {
                    batch.push((out.len(), call));
                    out.push(None);
                }
                Prepared::Approved(call) => {
                    self.run_parallel(std::mem::take(&mut batch), &mut out, cancel)
                        .await;
                    let done = self.start_call(call, None, cancel).await;
                    self.emit(SchedulerEvent::Finished(done.clone()));
                    out.push(Some(done));
                }
            }
        }
        self.run_parallel(batch, &mut out, cancel).await;
        out.into_iter().flatten().collect()
    }

    async fn run_parallel(
        &self,
        batch: Vec<(usize, Approved)>,
        out: &mut [Option<CompletedCall>],
        cancel: &CancellationToken,
    ) {
        if batch.is_empty() {
            return;
        }
        let permits = Arc::new(Semaphore::new(self.max_parallel));
        let running: Vec<(usize, _)> = batch
            .into_iter()
            .map(|(slot, call)| (slot, self.start_call(call, Some(permits.clone()), cancel)))
            .collect();
        for (slot, handle) in running {
            let done = handle.await;
            self.emit(SchedulerEvent::Finished(done.clone()));
            out[slot] = Some(done);
        }
    }

    /// Starts one call as a task of its own; the returned future yields its completed
    /// call, never fails.
    fn start_call(
        &self,
        call: Approved,
        permits: Option<Arc<Semaphore>>,
        cancel: &CancellationToken,
    ) -> impl std::future::Future<Output = CompletedCall> + Send + 'static {
        let turn_cancel = cancel.clone();
        let cancel = cancel.child_token();
        let env = self.env.clone();
        let events = self.events.clone();
        let Approved {
            request,
            arguments,
            tool,
            kind,
            description,
            invocation,
            consent,
            facts,
            hooks,
            hook_context,
        } = call;
        let call_id = request.call_id.clone();
        let job = execute(
            invocation,
            JobInfo {
                call_id: call_id.clone(),
                tool: tool.clone(),
                description: description.clone(),
                consent,
                checkpoint: self.checkpoints.clone().map(|c| (c, kind, facts)),
            },
            env.clone(),
            events,
            permits,
            cancel,
        );
        let handle = tokio::spawn(job);
        async move {
            let (result, duration) = match handle.await {
                Ok(done) => done,
                Err(e) => (
                    ToolResult::err(
                        ErrorKind::ExecutionFailed,
                        format!("the tool failed unexpectedly: {e}"),
                    ),
                    Duration::ZERO,
                ),
            };
            let state = match &result.error {
                None => CallState::Success,
                Some(e) if e.kind == ErrorKind::Cancelled => CallState::Cancelled,
                Some(_) => CallState::Error,
            };
            let result = env.output.limit_result(result, &tool);
            let mut done = CompletedCall {
                call_id,
                name: request.name,
                arguments,
                description,
                state,
                result,
                duration,
                stop: None,
            };
            if let Some(hooks) = hooks {
                hooks
                    .after_run(&mut done, &hook_context, &turn_cancel)
                    .await;
            }
            done
        }
    }
}

#[cfg(test)]
mod tests;
