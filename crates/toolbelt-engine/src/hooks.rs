//! The contract between toolbelt's call path and the person's hooks (Qwen Code's and
//! Claude Code's `hooks` settings, and the SDKs' hook callbacks).
//!
//! Core knows *when* a hook event happens and what it means for a call (the scheduler
//! asks [`HookRunner`] at PreToolUse, PermissionRequest, PermissionDenied, PostToolUse
//! and PostToolUseFailure; the agent at the session's events). *Which* hooks run, how
//! (a command, an HTTP POST, an SDK callback), and how their outputs combine is the
//! runner's business: `toolbelt-hooks` builds one from the settings layers. A session
//! without hooks has no runner, and the call path costs nothing more.
//!
//! One outcome per event, whatever number of hooks ran: [`HookOutcome`] is already the
//! combination (the strictest decision wins: deny, then ask, then allow).

use std::fmt;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use toolbelt_core::BoxFuture;

/// The points at which hooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEvent {
    /// Before a call is decided; may allow, ask, deny or rewrite its input.
    PreToolUse,
    /// After a call succeeded; may add context for the model or block (feedback).
    PostToolUse,
    /// After a call failed (or was cancelled while running).
    PostToolUseFailure,
    /// When a person would be asked about a call; may answer in their place.
    PermissionRequest,
    /// When a call was refused without a person (a rule, plan mode, nobody to ask).
    PermissionDenied,
    /// Before a prompt goes to the model; may block it or add context.
    UserPromptSubmit,
    /// When a session starts (`startup`), resumes (`resume`) or restarts after a
    /// compaction (`compact`).
    SessionStart,
    /// When a session ends.
    SessionEnd,
    /// When the agent is about to end its turn; a block makes it go on.
    Stop,
    /// When a sub-agent starts.
    SubagentStart,
    /// When a sub-agent is about to finish; a block makes it go on.
    SubagentStop,
    /// Before the conversation is compacted.
    PreCompact,
    /// When toolbelt notifies the person (a question is waiting, the agent is idle).
    Notification,
    /// After a git worktree was made for the session, a tool or a sub-agent (issue 45).
    /// toolbelt always makes it with git; the hook is told, it does not replace that.
    WorktreeCreate,
    /// After such a worktree was removed.
    WorktreeRemove,
}

impl HookEvent {
    /// Every event, in the order above.
    pub const ALL: [HookEvent; 15] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::PermissionRequest,
        HookEvent::PermissionDenied,
        HookEvent::UserPromptSubmit,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::Stop,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
        HookEvent::Notification,
        HookEvent::WorktreeCreate,
        HookEvent::WorktreeRemove,
    ];

    /// The name settings and hook inputs use (`PreToolUse`).
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::PermissionDenied => "PermissionDenied",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Notification => "Notification",
            HookEvent::WorktreeCreate => "WorktreeCreate",
            HookEvent::WorktreeRemove => "WorktreeRemove",
        }
    }

    /// The event a settings key names, if it is one.
    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Whether the event is about one tool call (its matcher is compared with the tool's
    /// name and aliases).
    pub fn is_tool_event(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse
                | HookEvent::PostToolUse
                | HookEvent::PostToolUseFailure
                | HookEvent::PermissionRequest
                | HookEvent::PermissionDenied
        )
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The sub-agent an event happens in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookAgent {
    /// The sub-agent's id (`agent_id`).
    pub id: String,
    /// Its type, the name of its definition (`agent_type`).
    pub agent_type: String,
}

/// One event, as the call path or the agent reports it. The runner adds the common
/// fields (`session_id`, `transcript_path`, `cwd`, `hook_event_name`, `timestamp`) and
/// the ones below that are set.
#[derive(Debug, Clone)]
pub struct HookRequest {
    /// Which event.
    pub event: HookEvent,
    /// What the event's matchers are compared with: the tool's runtime name for tool
    /// events; the source, reason, agent type, trigger or notification type for the
    /// others; `None` for events without matchers (UserPromptSubmit, Stop).
    pub target: Option<String>,
    /// Other names the target answers to when a matcher names it exactly (a tool's
    /// display name and the names its permission rules accept, such as Claude's `Bash`).
    pub aliases: Vec<String>,
    /// The event's own fields (`tool_name`, `tool_input`, `tool_use_id`,
    /// `tool_response`, `error`, `prompt`, `source`, ...).
    pub fields: Map<String, Value>,
    /// The approval mode in effect (`permission_mode`), as Qwen Code spells it
    /// (`default`, `plan`, `auto_edit`, `yolo`).
    pub permission_mode: Option<String>,
    /// The sub-agent the event happens in (`agent_id`, `agent_type`).
    pub agent: Option<HookAgent>,
    /// The session the event belongs to when it is not the runner's own (`mcp serve`:
    /// the MCP client's session).
    pub session_id: Option<String>,
    /// No one can be asked where this event happens (headless, a background
    /// sub-agent): an `ask` from a hook is a refusal that says so.
    pub nobody_to_ask: bool,
}

impl HookRequest {
    /// A request for `event` with no fields yet.
    pub fn new(event: HookEvent) -> Self {
        HookRequest {
            event,
            target: None,
            aliases: Vec::new(),
            fields: Map::new(),
            permission_mode: None,
            agent: None,
            session_id: None,
            nobody_to_ask: false,
        }
    }

    /// Adds one event field.
    pub fn field(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.fields.insert(key.to_string(), value.into());
        self
    }
}

/// A permission decision from hooks. Ordered by strictness: `Allow < Ask < Deny`, so
/// the combination of several hooks' decisions is their maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HookDecision {
    /// Go ahead without the question (never past a deny rule, plan mode or protected
    /// configuration: the call path still holds those).
    Allow,
    /// Ask the person even if the rules and mode would not.
    Ask,
    /// Refuse: for tool events the call does not run; for UserPromptSubmit the prompt
    /// is not sent; for Stop and SubagentStop the agent does not stop but goes on with
    /// [`HookOutcome::reason`] as its next instruction; for PostToolUse the reason is
    /// feedback the model reads with the result. A `block` decision and exit code 2 are
    /// this too.
    Deny,
}

/// A hook that failed without blocking (exit code other than 0 and 2, a timeout, an
/// HTTP error): shown to the person, the event goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookFailure {
    /// The hook, as its settings name it (its `name`, else its command or URL), with
    /// the file it comes from.
    pub hook: String,
    /// What went wrong.
    pub message: String,
}

/// What the hooks of one event came to, combined.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookOutcome {
    /// The strictest decision any hook gave (see [`HookDecision`]). An `Ask` stays
    /// `Ask` even when the request said [`HookRequest::nobody_to_ask`]: the runner does
    /// not know what the call path would tell the model, so the call path refuses the
    /// call and says why (nobody can be asked where it runs).
    pub decision: Option<HookDecision>,
    /// The reasons given with that decision (joined, in hook order), for the model when
    /// it is a deny, for the person when it is an ask.
    pub reason: Option<String>,
    /// The input a hook gave in place of the call's (`updatedInput`). The call path
    /// validates it against the tool's schema and judges it again by the rules and the
    /// workspace boundary.
    pub updated_input: Option<Value>,
    /// Context for the model (`additionalContext`, and a command's plain stdout where the
    /// event takes it), in hook order.
    pub additional_context: Vec<String>,
    /// Messages for the person (`systemMessage`), in hook order.
    pub system_messages: Vec<String>,
    /// A hook said `continue: false`: the agent stops after this event, with this reason
    /// (`stopReason`) for the person.
    pub stop: Option<String>,
    /// A hook asked that its output not be shown in the transcript (`suppressOutput`).
    pub suppress_output: bool,
    /// Hooks that failed without blocking.
    pub failures: Vec<HookFailure>,
}

impl HookOutcome {
    /// Whether a hook refused the event's action (see [`HookDecision::Deny`]).
    pub fn denied(&self) -> bool {
        self.decision == Some(HookDecision::Deny)
    }

    /// What the person is shown of this outcome: the hooks' system messages (unless a
    /// hook asked for quiet with `suppressOutput`), then every failure.
    pub fn messages(&self, event: HookEvent) -> Vec<HookMessage> {
        let shown = if self.suppress_output {
            &[][..]
        } else {
            &self.system_messages[..]
        };
        let said = shown.iter().map(|text| HookMessage {
            event,
            hook: None,
            text: text.clone(),
            failure: false,
        });
        let failed = self.failures.iter().map(|f| HookMessage {
            event,
            hook: Some(f.hook.clone()),
            text: f.message.clone(),
            failure: true,
        });
        said.chain(failed).collect()
    }

    /// The reason a hook gave with its decision, or `fallback` when it gave none.
    pub fn reason_or(&self, fallback: &str) -> String {
        match self.reason.as_deref().map(str::trim) {
            Some(reason) if !reason.is_empty() => reason.to_string(),
            _ => fallback.to_string(),
        }
    }
}

/// Something hooks have to say to the person: a `systemMessage`, a hook that failed, or
/// what a hook decided that changes the run (a blocked prompt, a stop). The scheduler
/// sends it as `SchedulerEvent::Hook`, the agent as `AgentEvent::Hook`; every display
/// shows it (the headless agent on stderr, the terminal as a line, stream-JSON as a
/// `system` message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookMessage {
    /// The event whose hooks said it.
    pub event: HookEvent,
    /// The hook, when one hook is meant (a failure).
    pub hook: Option<String>,
    /// What to show.
    pub text: String,
    /// A hook failed (without blocking).
    pub failure: bool,
}

impl HookMessage {
    /// A message about the event as a whole (a blocked prompt, a stop).
    pub fn note(event: HookEvent, text: impl Into<String>) -> Self {
        HookMessage {
            event,
            hook: None,
            text: text.into(),
            failure: false,
        }
    }
}

impl fmt::Display for HookMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.hook, self.failure) {
            (Some(hook), true) => write!(f, "{} hook {hook} failed: {}", self.event, self.text),
            (None, true) => write!(f, "{} hook failed: {}", self.event, self.text),
            _ => write!(f, "{} hook: {}", self.event, self.text),
        }
    }
}

/// The most characters of hook context one block carries to the model; past it the
/// rest is cut, marked.
pub const MAX_CONTEXT_CHARS: usize = 10_000;

/// Hooks' `additionalContext` as one block for the model, marked as coming from the
/// person's hooks rather than from the person or a tool: `<hook-context
/// event="PostToolUse">...</hook-context>`. `&`, `<` and `>` are escaped, so a hook's
/// text cannot close the block or forge another; the whole is cut at
/// [`MAX_CONTEXT_CHARS`]. `None` when there is nothing to say.
pub fn context_block(event: HookEvent, texts: &[String]) -> Option<String> {
    let joined = texts
        .iter()
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    if joined.is_empty() {
        return None;
    }
    let mut escaped = String::with_capacity(joined.len());
    for (count, c) in joined.chars().enumerate() {
        if count == MAX_CONTEXT_CHARS {
            escaped.push_str("\n[hook context cut at 10000 characters]");
            break;
        }
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            c => escaped.push(c),
        }
    }
    Some(format!(
        "<hook-context event=\"{event}\">\n{escaped}\n</hook-context>"
    ))
}

/// Whether a prompt's text part is a [`context_block`] (the hooks' words, not the
/// person's): listings of sessions show the person's prompt instead.
pub fn is_context_block(text: &str) -> bool {
    text.starts_with("<hook-context event=\"")
}

/// Runs the hooks configured for a session. Built by `toolbelt-hooks` (settings layers
/// and SDK callbacks); the scheduler and the agent hold it as `Arc<dyn HookRunner>`.
pub trait HookRunner: Send + Sync {
    /// Whether any hook would run for this event and target. Cheap: the call path asks
    /// it before building a request, so a session whose hooks do not match costs
    /// nothing more.
    fn wants(&self, event: HookEvent, target: Option<&str>, aliases: &[String]) -> bool;

    /// Runs every matching hook of the event (in parallel where the settings allow) and
    /// combines their outputs. Never fails: a hook that cannot run is a
    /// [`HookFailure`], and malformed output from a hook whose event decides something
    /// is a refusal naming the hook, never a silent allow. Cancelling `cancel` ends the
    /// hooks' processes and returns what had come back.
    fn run(
        &self,
        request: HookRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, HookOutcome>;
}
