#![cfg_attr(test, allow(clippy::too_many_lines))]
#![warn(missing_docs, unreachable_pub)]
//! The agent loop: the prompt goes to the model, the tool calls of its answer go through
//! the scheduler, their results go back, until the model answers without tool calls or
//! the turn limit is reached.
//!
//! # Brief overview
//!
//! [`Agent::run`] owns the conversation. Each turn it sends the whole history and the
//! tool declarations to the [`Model`], records the answer, and hands the calls to the
//! [`Scheduler`], which returns one result per call in call order. Architecture
//! Invariant: every tool call of an assistant message is answered by exactly one tool
//! message before the next request, also when the turn was cancelled, so the
//! conversation stays well-formed for any server.
//!
//! Events (model answers and the scheduler's call events, in the order they happen) go
//! to one callback, which the command line turns into text, JSON or a JSON stream.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolbelt_core::{BoxFuture, Display, Part, ToolEnvironment};
use toolbelt_engine::registry::ToolRegistry;
use toolbelt_engine::{hooks::HookMessage, hooks::HookRunner};
use toolbelt_engine::{
    scheduler::CallState, scheduler::CompletedCall, scheduler::Scheduler,
    scheduler::SchedulerConfig, scheduler::SchedulerEvent, scheduler::ToolCallRequest,
    scheduler::TurnInfo, scheduler::text_for_model,
};
use toolbelt_model::{
    FinishReason, Message, Model, ModelError, ModelRequest, ModelTurn, StreamDelta, ToolCall,
    ToolImage, ToolSpec, Usage, UserPart,
};

pub mod at_paths;
// Issue 33: monitor events and scheduled prompts between turns.
mod between_turns;
pub use between_turns::TurnEvents;
pub mod compress;
pub mod context_files;
pub mod event_text;
// Issue 31: the session's hooks at the agent's steps.
mod hooks;
pub use hooks::STOP_HOOK_BLOCK_CAP;
pub mod prompt;
mod references;
pub mod subagents;
mod tool_search;

pub use tool_search::{MAX_TOOLS_PER_REQUEST, ToolIndex};
pub mod transcript;

/// Qwen Code's `MAX_TURNS`.
pub const DEFAULT_MAX_TURNS: usize = 100;

/// What happened, for displays.
// Each event is moved once into the sink; boxing the large variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum AgentEvent {
    /// The model answered.
    Assistant {
        /// The turn it answers (1 for the first model request of the run).
        turn: usize,
        /// Its text (may be empty when it only calls tools).
        text: String,
        /// The calls it makes.
        tool_calls: Vec<ToolCall>,
        /// Why it stopped.
        finish_reason: FinishReason,
        /// Tokens, when the server reports them.
        usage: Option<Usage>,
    },
    /// A tool call moved on.
    Tool(SchedulerEvent),
    /// An event of a sub-agent started by the `agent` call `parent_call_id`; the
    /// sub-agent's own sub-agents nest further.
    SubAgent {
        /// The sub-agent's id (its transcript's file name).
        agent_id: String,
        /// The `agent` call that started the sub-agent.
        parent_call_id: String,
        /// What happened in the sub-agent.
        event: Box<AgentEvent>,
    },
    /// A piece of the answer the model is streaming (before its `Assistant` event).
    Delta(StreamDelta),
    /// The session's hooks said something for the person at one of the agent's own
    /// steps (a `systemMessage`, a failure, a blocked prompt, a stop). A call's hooks
    /// come as [`SchedulerEvent::Hook`]; [`AgentEvent::hook_message`] finds both.
    Hook(HookMessage),
}

impl AgentEvent {
    /// What the hooks said, if this event is a hook message: the agent's own, a call's,
    /// or one from a sub-agent at any depth.
    pub fn hook_message(&self) -> Option<&HookMessage> {
        match self {
            AgentEvent::Hook(message) | AgentEvent::Tool(SchedulerEvent::Hook { message, .. }) => {
                Some(message)
            }
            AgentEvent::SubAgent { event, .. } => event.hook_message(),
            _ => None,
        }
    }
}

/// Receives every [`AgentEvent`] of a run, in order.
pub type EventSink = Arc<dyn Fn(AgentEvent) + Send + Sync>;

/// Where the tools can change during a run: MCP servers that announce a new list
/// (`notifications/tools/list_changed`) or have just added a tool the model already
/// names. The agent asks before every model request and before running calls whose
/// names it does not know; a turn keeps the registry it started with.
pub trait ToolSource: Send + Sync {
    /// `current` with the changes applied, or `None` when nothing changed. `unknown`
    /// holds the names of the coming calls that `current` lacks (empty before a model
    /// request).
    fn refresh<'a>(
        &'a self,
        current: &'a ToolRegistry,
        unknown: &'a [String],
    ) -> BoxFuture<'a, Option<ToolRegistry>>;
}

/// Why the run stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum StopReason {
    /// The model answered without tool calls.
    Answered,
    /// `max_turns` model turns were used.
    MaxTurns(usize),
    /// The person or the parent cancelled the run.
    Cancelled,
    /// The model could not be used (refused, unreachable after retries).
    ModelFailed(ModelError),
    /// In plan mode with no one to approve, the model presented its plan
    /// (`exit_plan_mode`); the plan is the answer.
    PlanProposed,
    /// A UserPromptSubmit hook blocked the prompt, for this reason; nothing was sent.
    PromptBlocked(String),
    /// A hook said `continue: false`, with this reason.
    HookStopped(String),
    /// The prompt could not be made (an MCP prompt command failed), for this reason;
    /// nothing was sent.
    PromptNotMade(String),
}

impl StopReason {
    /// What went wrong, for a person; `None` when the run ended as it should (answered,
    /// or a plan proposed).
    pub fn error_text(&self) -> Option<String> {
        match self {
            StopReason::MaxTurns(n) => Some(format!(
                "reached the limit of {n} model turns (--max-session-turns) before the model answered"
            )),
            StopReason::Cancelled => Some("interrupted".to_string()),
            StopReason::ModelFailed(e) => Some(e.to_string()),
            StopReason::PromptBlocked(why) => {
                Some(format!("a UserPromptSubmit hook blocked the prompt: {why}"))
            }
            StopReason::HookStopped(why) => Some(format!("a hook stopped the run: {why}")),
            StopReason::PromptNotMade(why) => Some(why.clone()),
            StopReason::Answered | StopReason::PlanProposed => None,
        }
    }
}

/// The outcome of a run, complete or not.
#[derive(Debug)]
pub struct RunOutcome {
    /// The text of the last answer.
    pub answer: String,
    /// Every tool call, in order.
    pub calls: Vec<CompletedCall>,
    /// Tokens of every request of the run.
    pub usage: Usage,
    /// Model requests made.
    pub turns: usize,
    /// Why the run ended.
    pub stop: StopReason,
    /// Time spent waiting for the model.
    pub model_time: Duration,
    /// Time spent running tools.
    pub tool_time: Duration,
}

impl RunOutcome {
    /// A run that never reached the model because its prompt could not be made.
    pub fn prompt_not_made(why: String) -> RunOutcome {
        RunOutcome {
            answer: String::new(),
            calls: Vec::new(),
            usage: Usage::default(),
            turns: 0,
            stop: StopReason::PromptNotMade(why),
            model_time: Duration::ZERO,
            tool_time: Duration::ZERO,
        }
    }
}

/// The agent loop of one conversation: a model, the tools and the scheduler that runs them (see the crate documentation).
pub struct Agent {
    model: Arc<dyn Model>,
    /// The tools as of the last refresh; each turn runs with a snapshot.
    registry: std::sync::Mutex<Arc<ToolRegistry>>,
    source: Option<Arc<dyn ToolSource>>,
    scheduler: Scheduler,
    scheduler_events: tokio::sync::Mutex<mpsc::UnboundedReceiver<SchedulerEvent>>,
    /// Sent first in each run; the session may make it again between runs.
    system_prompt: std::sync::Mutex<String>,
    max_turns: usize,
    sink: Option<EventSink>,
    /// Defers tools behind `tool_search` above the `tools.search` budget.
    tool_search: tool_search::ToolSearch,
    /// The conversation so far (a resumed session, then every run of this agent),
    /// between the system prompt and the next prompt.
    history: std::sync::Mutex<Vec<Message>>,
    /// Where each message is saved as it joins the conversation.
    log: Option<Arc<transcript::SessionWriter>>,
    /// Set after the first failed write, so a full disk warns once.
    log_failed: std::sync::atomic::AtomicBool,
    /// The background agents this loop's `agent` tool starts: their notices join the
    /// conversation before the next request.
    background: Option<Arc<subagents::BackgroundTasks>>,
    /// A background sub-agent's messages from the loop that started it.
    inbox: Option<Arc<subagents::Inbox>>,
    /// Other sources of events between turns (monitors; see `between_turns.rs`).
    events: Vec<Arc<dyn TurnEvents>>,
    /// Whether a run waits for them (see `Agent::set_wait_for_events`).
    events_wait: std::sync::atomic::AtomicBool,
    /// The session's hooks (the scheduler's runner; see `hooks.rs`).
    hooks: Option<Arc<dyn HookRunner>>,
    /// Set when this agent is a sub-agent: its hook events say which.
    subagent: Option<hooks::AsSubagent>,
    /// What SessionStart hooks left for the next prompt.
    pending: std::sync::Mutex<hooks::Pending>,
    /// The session's file checkpoints, told where each user turn starts (issue 34).
    checkpoints: Option<Arc<dyn toolbelt_engine::checkpoint::Checkpoints>>,
}

impl Agent {
    /// The agent takes the scheduler's event channel over (any `events` in `config` is
    /// replaced) so model and tool events reach `sink` in order. The hooks in `config`
    /// are the agent's too (UserPromptSubmit, Stop, ...; see [`Agent::start_session`]).
    pub fn new(
        model: Arc<dyn Model>,
        registry: Arc<ToolRegistry>,
        env: Arc<ToolEnvironment>,
        config: SchedulerConfig,
        system_prompt: String,
        max_turns: usize,
        sink: Option<EventSink>,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        // The agent has turns and ends each one (see `run_with_references`), so calls may
        // grant tools for the rest of it (a skill's `allowed-tools`).
        let config = config.events(tx).turn_grants(true);
        let tool_search = tool_search::ToolSearch::new(env.settings.tools.search.clone());
        let hooks = config.rules().hooks().cloned();
        let checkpoints = config.rules().checkpoints().cloned();
        Agent {
            model,
            registry: std::sync::Mutex::new(registry),
            source: None,
            scheduler: Scheduler::new(env, config),
            scheduler_events: tokio::sync::Mutex::new(rx),
            system_prompt: std::sync::Mutex::new(system_prompt),
            max_turns: max_turns.max(1),
            sink,
            tool_search,
            history: std::sync::Mutex::new(Vec::new()),
            log: None,
            log_failed: std::sync::atomic::AtomicBool::new(false),
            background: None,
            inbox: None,
            events: Vec::new(),
            events_wait: std::sync::atomic::AtomicBool::new(true),
            hooks,
            subagent: None,
            pending: std::sync::Mutex::new(hooks::Pending::default()),
            checkpoints,
        }
    }

    /// Reads `inbox` (a background sub-agent's `send_message` messages) between turns,
    /// as user messages before the next model request; the loop does not end while a
    /// message waits, and closes the inbox when it ends by answering.
    pub fn with_inbox(mut self, inbox: Arc<subagents::Inbox>) -> Self {
        self.inbox = Some(inbox);
        self
    }

    /// Delivers the notices of `tasks` (background agents the loop's `agent` tool
    /// started) as user messages before each model request, and keeps the loop going
    /// while tasks run: a model that answers while one still runs gets its notice at
    /// the next turn instead of the run ending without it.
    pub fn with_background(mut self, tasks: Arc<subagents::BackgroundTasks>) -> Self {
        self.background = Some(tasks);
        self
    }

    /// Adds the notices of finished background agents and the inbox's messages as one
    /// user message. Called only between turns, after every call of the last answer has
    /// its tool message.
    fn deliver_notices(&self, request: &mut ModelRequest) {
        let mut notices = match &self.background {
            Some(tasks) => tasks.take_notices(),
            None => Vec::new(),
        };
        if let Some(inbox) = &self.inbox {
            notices.extend(inbox.take().into_iter().map(|m| {
                let m = subagents::escape_closing(&m, "message-from-parent");
                format!("<message-from-parent>\nThe agent that started you sends this message (send_message):\n{m}\n</message-from-parent>")
            }));
        }
        notices.extend(self.take_events());
        if !notices.is_empty() {
            self.push(
                request,
                Message::User(vec![UserPart::Text(notices.join("\n\n"))]),
            );
        }
    }

    /// Continues a conversation: `history` (without a system prompt, every tool call
    /// answered, as [`transcript::LoadedSession::messages`] gives it) is sent before the
    /// new prompt. Nothing in it is run again.
    pub fn with_history(self, history: Vec<Message>) -> Self {
        self.set_history(history);
        self
    }

    /// The conversation so far, without the system prompt: the history it started with
    /// and every message of its runs. Each run continues it, so one agent serves a
    /// whole interactive session (run one prompt at a time).
    pub fn history(&self) -> Vec<Message> {
        match self.history.lock() {
            Ok(h) => h.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the conversation (`/clear` with an empty one, `/compress` with a
    /// summary). The caller keeps it well-formed: every tool call answered.
    pub fn set_history(&self, history: Vec<Message>) {
        match self.history.lock() {
            Ok(mut h) => *h = history,
            Err(poisoned) => *poisoned.into_inner() = history,
        }
    }

    /// The system prompt the next run sends.
    pub fn system_prompt(&self) -> String {
        match self.system_prompt.lock() {
            Ok(p) => p.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the system prompt from the next run on (a run under way keeps its own):
    /// the context files were reloaded, or the approval mode it names has changed.
    pub fn set_system_prompt(&self, text: String) {
        match self.system_prompt.lock() {
            Ok(mut p) => *p = text,
            Err(poisoned) => *poisoned.into_inner() = text,
        }
    }

    /// Replaces the conversation with `history` (what `/compress` made) and records
    /// the replacement in the session file, so a resumed session continues from it.
    pub fn replace_history(&self, history: Vec<Message>) {
        self.record(|log| log.replace_history(&history));
        self.set_history(history);
    }

    /// Writes to the session file, if there is one; the first failure is a warning.
    fn record(
        &self,
        write: impl FnOnce(&transcript::SessionWriter) -> Result<(), transcript::TranscriptError>,
    ) {
        if let Some(log) = &self.log
            && let Err(e) = write(log)
            && !self
                .log_failed
                .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            tracing::warn!("the session is no longer saved: {e}");
        }
    }

    /// Saves every message of the run (the new prompt, the model's answers, the tool
    /// results) to `log` as it joins the conversation. A failed write is a warning: the
    /// run matters more than its record.
    pub fn with_session_log(mut self, log: Arc<transcript::SessionWriter>) -> Self {
        self.log = Some(log);
        self
    }

    /// Adds `message` to the conversation, saving it first.
    fn push(&self, request: &mut ModelRequest, message: Message) {
        self.record(|log| log.append(&message));
        request.messages.push(message);
    }

    /// Whether the model takes images (else an image is a note in the text).
    pub fn takes_images(&self) -> bool {
        self.model.takes_images()
    }

    /// The scheduler that runs this agent's calls (its approval mode, its "always" answers).
    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }

    /// Lets the tools change during a run (see [`ToolSource`]).
    pub fn with_tool_source(mut self, source: Arc<dyn ToolSource>) -> Self {
        self.source = Some(source);
        self
    }

    /// The tools as they are now.
    pub fn registry(&self) -> Arc<ToolRegistry> {
        match self.registry.lock() {
            Ok(r) => r.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Applies the tool source's changes now, before a run: for a front end about to read
    /// what the person referenced through tools that may have just joined (an MCP
    /// server's resources, once that server is up).
    pub async fn sync_tools(&self) {
        self.refresh_tools(&[]).await;
    }

    /// Applies the tool source's changes, if any; `true` when the tools changed (the
    /// model must then be told the new declarations).
    async fn refresh_tools(&self, unknown: &[String]) -> bool {
        let Some(source) = &self.source else {
            return false;
        };
        let current = self.registry();
        let Some(next) = source.refresh(&current, unknown).await else {
            return false;
        };
        self.set_registry(Arc::new(next));
        true
    }

    fn set_registry(&self, next: Arc<ToolRegistry>) {
        match self.registry.lock() {
            Ok(mut r) => *r = next,
            Err(poisoned) => *poisoned.into_inner() = next,
        }
    }

    /// The declarations of the next model request (see [`tool_search`]): core tools,
    /// and above the `tools.search` budget `tool_search` with the tools it found and
    /// those in `forced`, at most [`tool_search::MAX_TOOLS_PER_REQUEST`]. Registers
    /// `tool_search` into the agent's registry when deferral starts.
    fn declarations(&self, forced: &[String]) -> Vec<ToolSpec> {
        let registry = self.registry();
        let (replaced, plan) = self.tool_search.declarations(&registry, forced);
        if let Some(next) = replaced {
            self.set_registry(next);
        }
        if !plan.core_cut.is_empty() {
            tracing::warn!(
                "{} tools are not declared: a request carries at most {} tools ({})",
                plan.core_cut.len(),
                tool_search::MAX_TOOLS_PER_REQUEST,
                plan.core_cut.join(", ")
            );
        }
        // The model crate knows no core type: the declaration is copied field by field.
        let spec = |d: toolbelt_engine::registry::FunctionDeclaration| ToolSpec {
            name: d.name,
            description: d.description,
            parameters: d.parameters,
        };
        plan.declarations.into_iter().map(spec).collect()
    }

    fn emit(&self, event: AgentEvent) {
        if let Some(sink) = &self.sink {
            sink(event);
        }
    }

    /// Runs the loop for one prompt. Never fails: a model fault is a [`StopReason`], so
    /// the caller still gets the calls made so far. `#references` are read from the
    /// prompt's text; when the prompt holds text the person did not write (files inlined
    /// for `@path`), use [`Agent::run_with_references`].
    pub async fn run(&self, prompt: Vec<UserPart>, cancel: &CancellationToken) -> RunOutcome {
        let written: String = prompt
            .iter()
            .filter_map(|p| match p {
                UserPart::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        self.run_with_references(prompt, &written, cancel).await
    }

    /// [`Agent::run`], with the `#references` read from `written` (what the person
    /// typed) rather than from the prompt, so the content of an inlined file cannot
    /// force a call or bring in a tool its `when` clause hides.
    ///
    /// A run is one user turn: what a call granted for the rest of the turn (a skill's
    /// `allowed-tools`) ends with it, however the run ends.
    pub async fn run_with_references(
        &self,
        prompt: Vec<UserPart>,
        written: &str,
        cancel: &CancellationToken,
    ) -> RunOutcome {
        // A skill's grants last for one run (see `toolbelt_core::TurnGrant`).
        self.scheduler.end_turn();
        let prompt = match self.submit_prompt(prompt, cancel).await {
            Ok(prompt) => prompt,
            Err(stop) => {
                self.scheduler.end_turn();
                return RunOutcome {
                    answer: String::new(),
                    calls: Vec::new(),
                    usage: Usage::default(),
                    turns: 0,
                    stop,
                    model_time: Duration::ZERO,
                    tool_time: Duration::ZERO,
                };
            }
        };
        let history = self.history();
        if let Some(checkpoints) = &self.checkpoints {
            checkpoints.begin_turn(toolbelt_engine::checkpoint::TurnStart {
                history_len: history.len(),
                prompt: written.to_string(),
            });
        }
        let mut messages = Vec::with_capacity(history.len() + 2);
        messages.push(Message::System(self.system_prompt()));
        messages.extend(history);
        let mut request = ModelRequest {
            messages,
            tools: Vec::new(),
            tool_choice: None,
            sampling: None,
        };
        let outcome = self.converse(&mut request, prompt, written, cancel).await;
        self.scheduler.end_turn();
        // Whatever ended the run, the conversation holds every call answered (the
        // invariant above), so the next run can go on from it.
        self.set_history(request.messages.split_off(1));
        outcome
    }

    /// The loop of one run, on `request` (the system prompt and the history).
    async fn converse(
        &self,
        request: &mut ModelRequest,
        prompt: Vec<UserPart>,
        written: &str,
        cancel: &CancellationToken,
    ) -> RunOutcome {
        self.push(request, Message::User(prompt));
        self.refresh_tools(&[]).await;
        let referenced = self.enable_referenced(written);
        let mut forced = referenced.clone().into_iter();
        let mut outcome = RunOutcome {
            answer: String::new(),
            calls: Vec::new(),
            usage: Usage::default(),
            turns: 0,
            stop: StopReason::MaxTurns(self.max_turns),
            model_time: Duration::ZERO,
            tool_time: Duration::ZERO,
        };
        let mut stop_checks = hooks::StopChecks::default();
        for turn_number in 1..=self.max_turns {
            if cancel.is_cancelled() {
                outcome.stop = StopReason::Cancelled;
                return outcome;
            }
            if turn_number > 1 {
                self.refresh_tools(&[]).await;
            }
            self.deliver_notices(request);
            // Every request: tool_search may have found tools since the last one, and
            // referenced tools are declared even when deferred.
            request.tools = self.declarations(&referenced);
            request.tool_choice = forced
                .by_ref()
                .find(|t| request.tools.iter().any(|d| &d.name == t));
            let turn = match self
                .ask_model(request, turn_number, &mut outcome, cancel)
                .await
            {
                Ok(turn) => turn,
                Err(stop) => {
                    outcome.stop = stop;
                    return outcome;
                }
            };
            let next = if turn.tool_calls.is_empty() {
                match self.end_without_calls(turn_number, cancel).await {
                    ControlFlow::Break(StopReason::Answered) => {
                        self.check_stop(request, &turn.text, &mut stop_checks, cancel)
                            .await
                    }
                    other => other,
                }
            } else {
                self.answer_turn(request, &turn, &mut outcome, cancel).await
            };
            if let ControlFlow::Break(stop) = next {
                outcome.stop = stop;
                return outcome;
            }
        }
        outcome
    }

    /// The tools `#reference`d in what the person wrote: they join the request even
    /// when their `when` clause is false, and each is forced once, in order, before the
    /// model chooses freely.
    fn enable_referenced(&self, written: &str) -> Vec<String> {
        let referenced = references::referenced_tools(written, &self.registry());
        if referenced.iter().any(|t| self.registry().is_disabled(t)) {
            let mut enabled = (*self.registry()).clone();
            for tool in &referenced {
                enabled.enable(tool);
            }
            self.set_registry(Arc::new(enabled));
        }
        referenced
    }

    /// One model request: its reply, shown and added to the conversation, or why the
    /// run stops.
    async fn ask_model(
        &self,
        request: &mut ModelRequest,
        turn_number: usize,
        outcome: &mut RunOutcome,
        cancel: &CancellationToken,
    ) -> Result<ModelTurn, StopReason> {
        let started = Instant::now();
        let on_delta = |delta: StreamDelta| self.emit(AgentEvent::Delta(delta));
        let answer = self
            .model
            .complete_streaming(request, cancel, &on_delta)
            .await;
        outcome.model_time += started.elapsed();
        outcome.turns = turn_number;
        let turn = match answer {
            Ok(t) => t,
            Err(ModelError::Cancelled) => return Err(StopReason::Cancelled),
            Err(e) => return Err(StopReason::ModelFailed(e)),
        };
        if let Some(u) = turn.usage {
            outcome.usage.add(u);
        }
        self.emit(AgentEvent::Assistant {
            turn: turn_number,
            text: turn.text.clone(),
            tool_calls: turn.tool_calls.clone(),
            finish_reason: turn.finish_reason.clone(),
            usage: turn.usage,
        });
        outcome.answer = turn.text.clone();
        self.push(
            request,
            Message::Assistant {
                text: turn.text.clone(),
                tool_calls: turn.tool_calls.clone(),
                // Thinking blocks, thought signatures and reasoning items go back with
                // the answer.
                reasoning: turn.reasoning.clone(),
            },
        );
        Ok(turn)
    }

    /// A reply without calls ends the run, unless a message came while the model
    /// worked or background agents are still running (their answers are the next
    /// turn's), with turns left.
    async fn end_without_calls(
        &self,
        turn_number: usize,
        cancel: &CancellationToken,
    ) -> ControlFlow<StopReason> {
        if turn_number < self.max_turns {
            // A message that came while it worked is read before it ends.
            if self.inbox.as_ref().is_some_and(|i| i.has_messages()) {
                return ControlFlow::Continue(());
            }
            // Monitors still running: their events are the next turn's (between_turns.rs).
            if self.events_pending() {
                match self.wait_for_events(cancel).await {
                    Some(true) => return ControlFlow::Continue(()),
                    Some(false) => {}
                    None => return ControlFlow::Break(StopReason::Cancelled),
                }
            }
            // Background agents still running: their answers are the next turn's.
            if let Some(tasks) = &self.background
                && tasks.pending()
            {
                let message = async {
                    match &self.inbox {
                        Some(inbox) => inbox.wait().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = tasks.wait_for_notice(cancel) => {}
                    _ = message => {}
                }
                if cancel.is_cancelled() {
                    return ControlFlow::Break(StopReason::Cancelled);
                }
                return ControlFlow::Continue(());
            }
            // Closed in one step with the check, so no message is accepted
            // after it and left unread.
            if self.inbox.as_ref().is_some_and(|i| !i.close_if_empty()) {
                return ControlFlow::Continue(());
            }
        }
        ControlFlow::Break(StopReason::Answered)
    }

    /// Runs the calls of a reply and answers each in the conversation; a plan proposed
    /// without approval or a cancellation ends the run.
    async fn answer_turn(
        &self,
        request: &mut ModelRequest,
        turn: &ModelTurn,
        outcome: &mut RunOutcome,
        cancel: &CancellationToken,
    ) -> ControlFlow<StopReason> {
        let calls: Vec<ToolCallRequest> = turn
            .tool_calls
            .iter()
            .map(|c| ToolCallRequest {
                call_id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect();
        let info = TurnInfo {
            reply_truncated: turn.finish_reason == FinishReason::Length,
        };
        // A call to a tool a server has just added (its announcement may still be
        // on its way) finds it after a refresh.
        let unknown: Vec<String> = {
            let registry = self.registry();
            calls
                .iter()
                .filter(|c| registry.get(&c.name).is_none())
                .map(|c| c.name.clone())
                .collect()
        };
        if !unknown.is_empty() {
            self.refresh_tools(&unknown).await;
        }
        let started = Instant::now();
        let completed = self.run_tools(calls, info, cancel).await;
        outcome.tool_time += started.elapsed();
        self.answer_calls(request, &completed);
        let proposed = completed
            .iter()
            .find_map(|c| match &c.result.return_display {
                Display::Plan {
                    plan,
                    approved: false,
                } => Some(plan.clone()),
                _ => None,
            });
        let stopped = completed.iter().find_map(|c| c.stop.clone());
        outcome.calls.extend(completed);
        if let Some(plan) = proposed {
            outcome.answer = plan;
            return ControlFlow::Break(StopReason::PlanProposed);
        }
        // A call's hook said `continue: false` (every call is answered above).
        if let Some(reason) = stopped {
            return ControlFlow::Break(StopReason::HookStopped(reason));
        }
        if cancel.is_cancelled() {
            return ControlFlow::Break(StopReason::Cancelled);
        }
        ControlFlow::Continue(())
    }

    /// Runs the scheduler while forwarding its events as they come.
    async fn run_tools(
        &self,
        calls: Vec<ToolCallRequest>,
        info: TurnInfo,
        cancel: &CancellationToken,
    ) -> Vec<CompletedCall> {
        let mut events = self.scheduler_events.lock().await;
        let registry = self.registry();
        let mut running = std::pin::pin!(self.scheduler.run(&registry, calls, info, cancel));
        let completed = loop {
            tokio::select! {
                biased;
                Some(event) = events.recv() => self.emit(AgentEvent::Tool(event)),
                done = &mut running => break done,
            }
        };
        while let Ok(event) = events.try_recv() {
            self.emit(AgentEvent::Tool(event));
        }
        completed
    }

    /// One tool message per call, in order, each with its images for a model that takes
    /// them (the wire format puts them where its API reads them).
    fn answer_calls(&self, request: &mut ModelRequest, completed: &[CompletedCall]) {
        let takes_images = self.model.takes_images();
        for call in completed {
            self.push(request, tool_message(call, takes_images));
        }
    }
}

/// The result of `call` for the model. `is_error` is the scheduler's outcome (an error or
/// a cancellation). A model that takes images gets the result's images beside its text,
/// and a note for other inline media (audio, PDF); another model gets a note for each.
fn tool_message(call: &CompletedCall, takes_images: bool) -> Message {
    let mut images = Vec::new();
    let mut text = if takes_images {
        let mut texts = Vec::new();
        let mut other_media = false;
        for part in &call.result.llm_content {
            match part {
                Part::InlineData {
                    mime_type, data, ..
                } if mime_type.starts_with("image/") => images.push(ToolImage {
                    mime_type: mime_type.clone(),
                    data: data.clone(),
                }),
                Part::InlineData { .. } => other_media = true,
                Part::Text { text } => texts.push(text.clone()),
                _ => {}
            }
        }
        if other_media {
            texts.push("[other inline media (audio, PDF) is not sent to this model]".into());
        }
        texts.join("\n")
    } else {
        text_for_model(&call.result)
    };
    if text.trim().is_empty() && images.is_empty() {
        text = "Tool execution succeeded.".to_string();
    }
    Message::Tool {
        call_id: call.call_id.clone(),
        text,
        is_error: call.state != CallState::Success,
        images,
    }
}

/// The session's model as a [`toolbelt_core::AskOnce`]: one question with its own
/// instructions, no conversation, no tools. What `web_fetch` gets when
/// `tools.webFetch.summarize` is on.
pub struct ModelAsker(pub Arc<dyn Model>);

impl toolbelt_core::AskOnce for ModelAsker {
    fn ask<'a>(
        &'a self,
        instructions: &'a str,
        question: &'a str,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, toolbelt_core::EmbedderError>> {
        Box::pin(async move {
            let request = ModelRequest {
                messages: vec![
                    Message::System(instructions.to_string()),
                    Message::user_text(question),
                ],
                tools: Vec::new(),
                tool_choice: None,
                sampling: None,
            };
            match self.0.complete(&request, cancel).await {
                Ok(turn) if !turn.text.trim().is_empty() => Ok(turn.text),
                Ok(_) => Err("the model gave an empty answer".into()),
                Err(e) => Err(e.to_string().into()),
            }
        })
    }
}

#[cfg(test)]
mod hooks_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod turn_grant_tests;
