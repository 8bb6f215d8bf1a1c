//! The session's hooks at the agent's own steps (see `toolbelt_engine::hooks`; the
//! scheduler fires the tool events):
//!
//! - **UserPromptSubmit** before a prompt goes to the model: a block (`deny`) sends
//!   nothing and ends the run with [`StopReason::PromptBlocked`], the person shown the
//!   reason; `additionalContext` goes with the prompt as a part of its own, marked as
//!   the hooks' ([`context_block`]). Not in sub-agents, whose prompt is a model's.
//! - **SessionStart** (`startup`, `resume`, `compact`): its context joins the next
//!   prompt the same way. **SessionEnd** when the front end ends the session.
//! - **Stop** (in a sub-agent **SubagentStop**) when the model answered without calls
//!   and the run would end: a block makes the agent go on with the reason as a new
//!   user message, at most [`STOP_HOOK_BLOCK_CAP`] times in a row; past that the run
//!   ends with a note.
//! - **SubagentStart** before a sub-agent's first request: its context goes into the
//!   sub-agent's first message.
//! - **PreCompact** before `/compress` summarises: a block keeps the history as it was;
//!   its context is kept after the summary.
//! - **Notification** (`idle_prompt`) when an interactive front end is idle.
//!
//! `continue: false` from any of them stops the agent after the current step with
//! [`StopReason::HookStopped`]. What hooks say for the person arrives as
//! [`AgentEvent::Hook`]. Hooks run under the run's cancellation token.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolbelt_core::BoxFuture;
use toolbelt_engine::{
    hooks::HookAgent, hooks::HookEvent, hooks::HookMessage, hooks::HookOutcome, hooks::HookRequest,
    hooks::HookRunner, hooks::context_block,
};
use toolbelt_model::{Message, ModelRequest, UserPart};

use crate::compress::{self, CompressError, Compressed};
use crate::{Agent, AgentEvent, StopReason};

/// How many times in a row Stop (or SubagentStop) hooks may keep the agent going
/// before it stops anyway (Qwen Code's `stopHookBlockingCap` default).
pub const STOP_HOOK_BLOCK_CAP: usize = 8;

/// What the agent's hooks left for the next prompt: SessionStart's context, or its
/// `continue: false`.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    context: Vec<String>,
    stop: Option<String>,
}

/// The sub-agent an agent is, for its hook events (SubagentStop's fields).
#[derive(Debug, Clone)]
pub(crate) struct AsSubagent {
    agent: HookAgent,
    transcript: Option<PathBuf>,
}

/// The session's runner inside a sub-agent: every request says which sub-agent it
/// comes from (`agent_id`, `agent_type`), the scheduler's as well as the agent's own.
pub(crate) struct InSubagent {
    pub(crate) inner: Arc<dyn HookRunner>,
    pub(crate) agent: HookAgent,
}

impl HookRunner for InSubagent {
    fn wants(&self, event: HookEvent, target: Option<&str>, aliases: &[String]) -> bool {
        self.inner.wants(event, target, aliases)
    }

    fn run(
        &self,
        mut request: HookRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, HookOutcome> {
        if request.agent.is_none() {
            request.agent = Some(self.agent.clone());
        }
        self.inner.run(request, cancel)
    }
}

/// The Stop checks of one run: how many blocked in a row.
#[derive(Debug, Default)]
pub(crate) struct StopChecks {
    blocks: usize,
}

impl Agent {
    /// Makes this agent the sub-agent `agent` (its transcript at `transcript`): its end
    /// fires SubagentStop instead of Stop, and its prompt no UserPromptSubmit.
    pub(crate) fn for_subagent(mut self, agent: HookAgent, transcript: Option<PathBuf>) -> Self {
        self.subagent = Some(AsSubagent { agent, transcript });
        self
    }

    /// A request for `event`, if a hook runs for it and `target`.
    fn hook_request(&self, event: HookEvent, target: Option<&str>) -> Option<HookRequest> {
        let runner = self.hooks.as_ref()?;
        if !runner.wants(event, target, &[]) {
            return None;
        }
        let mut request = HookRequest::new(event);
        request.target = target.map(str::to_string);
        request.permission_mode = Some(self.scheduler.mode().hook_name().to_string());
        Some(request)
    }

    /// Runs the request's hooks; the person is shown what they said, and a stop.
    async fn run_hooks(&self, request: HookRequest, cancel: &CancellationToken) -> HookOutcome {
        let Some(runner) = &self.hooks else {
            return HookOutcome::default();
        };
        let event = request.event;
        let outcome = runner.run(request, cancel.clone()).await;
        for message in outcome.messages(event) {
            self.emit(AgentEvent::Hook(message));
        }
        if let Some(stop) = &outcome.stop {
            self.note(event, format!("a hook stopped the agent: {stop}"));
        }
        outcome
    }

    fn note(&self, event: HookEvent, text: String) {
        self.emit(AgentEvent::Hook(HookMessage::note(event, text)));
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// SessionStart, for a session that starts (`startup`), resumes (`resume`) or
    /// goes on after `/compress` (`compact`): its context joins the next prompt, and
    /// its `continue: false` ends the next run before the model is asked.
    pub async fn start_session(&self, source: &str, cancel: &CancellationToken) {
        let Some(request) = self.hook_request(HookEvent::SessionStart, Some(source)) else {
            return;
        };
        let request = request
            .field("source", source)
            .field("model", self.model.name());
        let outcome = self.run_hooks(request, cancel).await;
        let mut pending = self.pending();
        pending.context.extend(outcome.additional_context);
        if outcome.stop.is_some() {
            pending.stop = outcome.stop;
        }
    }

    /// SessionEnd, when the front end ends the session for `reason` (`other`,
    /// `prompt_input_exit`, `clear`, ...). Its output is only shown.
    pub async fn end_session(&self, reason: &str) {
        if let Some(request) = self.hook_request(HookEvent::SessionEnd, Some(reason)) {
            let request = request.field("reason", reason);
            self.run_hooks(request, &CancellationToken::new()).await;
        }
    }

    /// Notification (`idle_prompt`): the interactive agent waits for the person.
    pub async fn notify_idle(&self) {
        let kind = "idle_prompt";
        if let Some(request) = self.hook_request(HookEvent::Notification, Some(kind)) {
            let request = request
                .field("message", "toolbelt is waiting for your input")
                .field("notification_type", kind);
            self.run_hooks(request, &CancellationToken::new()).await;
        }
    }

    /// SubagentStart, before this sub-agent's first request: the context its hooks give
    /// (a block for its first message), or `Err` with the reason a hook stopped it.
    pub(crate) async fn start_subagent(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, String> {
        let event = HookEvent::SubagentStart;
        let Some(me) = &self.subagent else {
            return Ok(None);
        };
        let Some(request) = self.hook_request(event, Some(&me.agent.agent_type)) else {
            return Ok(None);
        };
        let request = request
            .field("agent_id", me.agent.id.clone())
            .field("agent_type", me.agent.agent_type.clone());
        let outcome = self.run_hooks(request, cancel).await;
        match outcome.stop {
            Some(stop) => Err(stop),
            None => Ok(context_block(event, &outcome.additional_context)),
        }
    }

    /// UserPromptSubmit and what SessionStart left: the prompt as it goes to the model
    /// (with the hooks' context as parts of their own), or why it does not go.
    pub(crate) async fn submit_prompt(
        &self,
        mut prompt: Vec<UserPart>,
        cancel: &CancellationToken,
    ) -> Result<Vec<UserPart>, StopReason> {
        let event = HookEvent::UserPromptSubmit;
        let request = match self.subagent {
            Some(_) => None,
            None => self.hook_request(event, None),
        };
        if let Some(request) = request {
            let text: Vec<&str> = prompt
                .iter()
                .filter_map(|p| match p {
                    UserPart::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            let request = request.field("prompt", text.join("\n"));
            let outcome = self.run_hooks(request, cancel).await;
            if cancel.is_cancelled() {
                return Err(StopReason::Cancelled);
            }
            if let Some(stop) = outcome.stop {
                return Err(StopReason::HookStopped(stop));
            }
            if outcome.denied() {
                let reason = outcome.reason_or("no reason given");
                self.note(
                    event,
                    format!("the prompt was blocked and not sent to the model: {reason}"),
                );
                return Err(StopReason::PromptBlocked(reason));
            }
            prompt.extend(context_block(event, &outcome.additional_context).map(UserPart::Text));
        }
        let pending = std::mem::take(&mut *self.pending());
        if let Some(stop) = pending.stop {
            return Err(StopReason::HookStopped(stop));
        }
        if let Some(block) = context_block(HookEvent::SessionStart, &pending.context) {
            prompt.insert(0, UserPart::Text(block));
        }
        Ok(prompt)
    }

    /// Stop (SubagentStop in a sub-agent) when the run would end with `last`, the
    /// model's answer: `Continue` when a hook blocked (the reason is the model's next
    /// message), else how the run ends.
    pub(crate) async fn check_stop(
        &self,
        request: &mut ModelRequest,
        last: &str,
        checks: &mut StopChecks,
        cancel: &CancellationToken,
    ) -> ControlFlow<StopReason> {
        let (event, target) = match &self.subagent {
            Some(me) => (HookEvent::SubagentStop, Some(me.agent.agent_type.as_str())),
            None => (HookEvent::Stop, None),
        };
        let Some(mut hook) = self.hook_request(event, target) else {
            return ControlFlow::Break(StopReason::Answered);
        };
        hook = hook
            .field("stop_hook_active", checks.blocks > 0)
            .field("last_assistant_message", last);
        if let Some(me) = &self.subagent {
            hook = hook
                .field("agent_id", me.agent.id.clone())
                .field("agent_type", me.agent.agent_type.clone())
                .field(
                    "agent_transcript_path",
                    me.transcript
                        .as_ref()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default(),
                );
        }
        let outcome = self.run_hooks(hook, cancel).await;
        if let Some(stop) = outcome.stop {
            return ControlFlow::Break(StopReason::HookStopped(stop));
        }
        if cancel.is_cancelled() {
            return ControlFlow::Break(StopReason::Cancelled);
        }
        if !outcome.denied() {
            return ControlFlow::Break(StopReason::Answered);
        }
        if checks.blocks >= STOP_HOOK_BLOCK_CAP {
            self.note(
                event,
                format!("the hooks kept the agent going {STOP_HOOK_BLOCK_CAP} times in a row; it stops here"),
            );
            return ControlFlow::Break(StopReason::Answered);
        }
        checks.blocks += 1;
        let reason = outcome.reason_or("no reason given");
        self.note(event, format!("a hook keeps the agent going: {reason}"));
        self.push(
            request,
            Message::User(vec![UserPart::Text(format!(
                "A {event} hook did not let you finish yet. Its reason:\n{reason}"
            ))]),
        );
        ControlFlow::Continue(())
    }

    /// `/compress` with its hooks: PreCompact first (a block keeps the history as it
    /// was; its context is kept after the summary), then the summary replaces the
    /// history (recorded in the session file), then SessionStart with `compact`.
    pub async fn compress(&self, cancel: &CancellationToken) -> Result<Compressed, CompressError> {
        let event = HookEvent::PreCompact;
        let trigger = "manual";
        let mut context = Vec::new();
        if let Some(request) = self.hook_request(event, Some(trigger)) {
            let request = request
                .field("trigger", trigger)
                .field("custom_instructions", "");
            let outcome = self.run_hooks(request, cancel).await;
            if let Some(stop) = outcome.stop {
                return Err(CompressError::Blocked(stop));
            }
            if outcome.denied() {
                return Err(CompressError::Blocked(outcome.reason_or("no reason given")));
            }
            context = outcome.additional_context;
        }
        let mut compressed = compress::compress(&*self.model, &self.history(), cancel).await?;
        if let Some(block) = context_block(event, &context)
            && let Some(Message::User(summary)) = compressed.history.first_mut()
        {
            summary.push(UserPart::Text(block));
        }
        self.replace_history(compressed.history.clone());
        self.start_session("compact", cancel).await;
        Ok(compressed)
    }
}
