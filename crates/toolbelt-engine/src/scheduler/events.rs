//! What the scheduler works on and what it tells displays: the call request, the states
//! a call moves through, the closed set of events, and the finished call.
//!
//! Events are one closed `enum` rather than callbacks so every reader (the headless
//! printer, the JSON event stream, a future terminal UI, the MCP server) sees the same
//! facts in the same order.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::hooks::HookMessage;
use toolbelt_core::ConfirmationDetails;
use toolbelt_core::ToolResult;

/// One function call as the model sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallRequest {
    /// The model's id for the call; the result goes back under the same id.
    pub call_id: String,
    /// The name the model called, as it wrote it (possibly an alias or an unknown name).
    pub name: String,
    /// The raw argument text. Parsed by the scheduler, so malformed JSON becomes an error
    /// result for the model rather than a fault of the agent.
    pub arguments: String,
}

impl ToolCallRequest {
    /// A request whose `arguments` is the JSON text of `arguments`.
    pub fn new(call_id: impl Into<String>, name: impl Into<String>, arguments: &Value) -> Self {
        ToolCallRequest {
            call_id: call_id.into(),
            name: name.into(),
            arguments: arguments.to_string(),
        }
    }
}

/// Where a call is. `Success`, `Error` and `Cancelled` are terminal: once there, a call
/// never moves again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallState {
    /// Being looked up, parsed and validated.
    Validating,
    /// Waiting for a person's answer.
    AwaitingApproval,
    /// Approved (or needing no approval), waiting to run.
    Scheduled,
    /// Running.
    Executing,
    /// Finished without an error.
    Success,
    /// Failed before or while running: not found, invalid, refused or a tool error.
    Error,
    /// Cancelled (the turn was cancelled, or the person refused the call).
    Cancelled,
}

impl CallState {
    /// Whether the call is finished (`Success`, `Error` or `Cancelled`) and will not move again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            CallState::Success | CallState::Error | CallState::Cancelled
        )
    }

    /// The `snake_case` name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            CallState::Validating => "validating",
            CallState::AwaitingApproval => "awaiting_approval",
            CallState::Scheduled => "scheduled",
            CallState::Executing => "executing",
            CallState::Success => "success",
            CallState::Error => "error",
            CallState::Cancelled => "cancelled",
        }
    }

    /// The state a transition leads to: the wanted one, unless the call is already in a
    /// terminal state, which is final.
    pub fn advance(self, to: CallState) -> CallState {
        if self.is_terminal() { self } else { to }
    }
}

/// A call that reached a terminal state: what goes back to the model and to displays.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletedCall {
    /// The model's id for the call, as in its [`ToolCallRequest`].
    pub call_id: String,
    /// The name the model used (an alias stays as written, so the model recognises it).
    pub name: String,
    /// The arguments as parsed, or `Value::Null` when they were not valid JSON.
    pub arguments: Value,
    /// One line saying what the call did, or the name when it never got that far.
    pub description: String,
    /// `Success`, `Error` or `Cancelled`.
    pub state: CallState,
    /// After the output policy.
    pub result: ToolResult,
    /// Time spent executing (zero when it never ran).
    pub duration: Duration,
    /// A hook of this call said `continue: false`: the agent stops after this turn,
    /// with this reason for the person.
    pub stop: Option<String>,
}

/// Everything a display may want to know, in the order it happens. One call produces
/// `Validated` (unless it fails before), perhaps `AwaitingApproval`, `Started`, any number
/// of `Output`, and exactly one `Finished`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SchedulerEvent {
    /// The call passed lookup and validation.
    Validated {
        /// The call's id.
        call_id: String,
        /// Registered name of the tool (an alias is resolved to the tool's own name).
        tool: String,
        /// One line saying what the call will do ([`toolbelt_core::Invocation::describe`]).
        description: String,
    },
    /// A person is being asked.
    AwaitingApproval {
        /// The call's id.
        call_id: String,
        /// Registered name of the tool.
        tool: String,
        /// What the person is asked.
        details: ConfirmationDetails,
    },
    /// The call is approved (or needs no approval) and waits for its turn.
    Scheduled {
        /// The call's id.
        call_id: String,
    },
    /// The call starts executing.
    Started {
        /// The call's id.
        call_id: String,
        /// Registered name of the tool.
        tool: String,
        /// One line saying what the call does.
        description: String,
    },
    /// Live output of a running call.
    Output {
        /// The call's id.
        call_id: String,
        /// A piece of the output, as the tool produced it (not necessarily whole lines).
        chunk: String,
    },
    /// The session's hooks said something about the call for the person (a
    /// `systemMessage`, a hook that failed, a stop); before the call's `Finished`.
    Hook {
        /// The call's id.
        call_id: String,
        /// What to show.
        message: HookMessage,
    },
    /// The call reached a terminal state; always the last event of a call.
    Finished(CompletedCall),
}

impl SchedulerEvent {
    /// The id of the call the event is about.
    pub fn call_id(&self) -> &str {
        match self {
            SchedulerEvent::Validated { call_id, .. }
            | SchedulerEvent::AwaitingApproval { call_id, .. }
            | SchedulerEvent::Scheduled { call_id }
            | SchedulerEvent::Started { call_id, .. }
            | SchedulerEvent::Output { call_id, .. }
            | SchedulerEvent::Hook { call_id, .. } => call_id,
            SchedulerEvent::Finished(call) => &call.call_id,
        }
    }
}
