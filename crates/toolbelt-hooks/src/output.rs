//! What one hook's answer means for its event.
//!
//! Every executor's answer becomes an [`Answer`]: a JSON object, plain text, nothing, a
//! block (exit code 2), something unreadable, or a failure. [`reply`] turns it into the
//! hook's [`Reply`] for the event, by the rules of Qwen Code and Claude Code:
//!
//! - A JSON object: `continue` (false stops the agent, with `stopReason`),
//!   `suppressOutput`, `systemMessage`, `decision` (`approve`/`allow`, `block`/`deny`,
//!   `ask`) with `reason`, and `hookSpecificOutput` (`hookEventName`,
//!   `permissionDecision` with `permissionDecisionReason` on PreToolUse, `updatedInput`,
//!   `additionalContext`, and PermissionRequest's `decision: {behavior, updatedInput,
//!   message}`). Unknown keys are ignored (newer hooks, other tools' fields).
//! - Plain text is context for the model on SessionStart and UserPromptSubmit, a
//!   message for the person elsewhere.
//! - Exit code 2 refuses (stderr is the model's feedback) on the events that can
//!   block; elsewhere it is a failure.
//! - Unreadable output (starts like a JSON object and does not parse, a field of the
//!   wrong type, an unknown decision) is a refusal naming the hook on the events whose
//!   hooks decide (PreToolUse, PermissionRequest, UserPromptSubmit): never a silent
//!   allow. Elsewhere it is a failure.

use serde_json::{Map, Value};
use toolbelt_engine::{hooks::HookDecision, hooks::HookEvent};

/// What came back from one hook.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// A JSON object.
    Json(Map<String, Value>),
    /// Text that is not a JSON object (trimmed, not empty).
    Text(String),
    /// Nothing.
    Empty,
    /// Exit code 2, with standard error.
    Blocked(String),
    /// An answer that cannot be read: what is wrong with it.
    Malformed(String),
    /// The hook failed without blocking: what happened.
    Failed(String),
}

/// One hook's effect on its event.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Reply {
    pub decision: Option<HookDecision>,
    pub reason: Option<String>,
    pub updated_input: Option<Value>,
    pub context: Option<String>,
    pub system_message: Option<String>,
    /// `continue: false`: the reason given to the person.
    pub stop: Option<String>,
    pub suppress_output: bool,
    pub failure: Option<String>,
}

/// Whether a hook of `event` can refuse (a decision or exit code 2 means something).
pub(crate) fn can_block(event: HookEvent) -> bool {
    matches!(
        event,
        HookEvent::PreToolUse
            | HookEvent::PermissionRequest
            | HookEvent::UserPromptSubmit
            | HookEvent::Stop
            | HookEvent::SubagentStop
            | HookEvent::PostToolUse
            | HookEvent::PostToolUseFailure
    )
}

/// Whether a hook of `event` decides whether something happens, so that an answer that
/// cannot be read must refuse.
pub(crate) fn decides(event: HookEvent) -> bool {
    matches!(
        event,
        HookEvent::PreToolUse | HookEvent::PermissionRequest | HookEvent::UserPromptSubmit
    )
}

/// A command's standard output on exit 0: a JSON object, text, or nothing.
pub(crate) fn classify_stdout(stdout: &str) -> Answer {
    let text = stdout.trim();
    if text.is_empty() {
        return Answer::Empty;
    }
    if text.starts_with('{') {
        return match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Answer::Json(map),
            Ok(_) => Answer::Text(text.to_string()),
            Err(e) => Answer::Malformed(format!(
                "its output starts like a JSON object but is not valid JSON ({e})"
            )),
        };
    }
    Answer::Text(text.to_string())
}

/// What `answer`, from the hook `label`, means for `event`.
pub(crate) fn reply(event: HookEvent, label: &str, answer: Answer) -> Reply {
    match answer {
        Answer::Empty => Reply::default(),
        Answer::Text(text) => {
            if matches!(event, HookEvent::SessionStart | HookEvent::UserPromptSubmit) {
                Reply {
                    context: Some(text),
                    ..Reply::default()
                }
            } else {
                Reply {
                    system_message: Some(text),
                    ..Reply::default()
                }
            }
        }
        Answer::Json(map) => match parse_object(event, &map) {
            Ok(reply) => reply,
            Err(what) => malformed(event, label, &what),
        },
        Answer::Blocked(stderr) if can_block(event) => {
            let stderr = stderr.trim();
            let reason = if stderr.is_empty() {
                format!("hook {label} blocked this (exit code 2) without a message")
            } else {
                stderr.to_string()
            };
            Reply {
                decision: Some(HookDecision::Deny),
                reason: Some(reason),
                ..Reply::default()
            }
        }
        Answer::Blocked(stderr) => failed(&format!(
            "exit code 2 (a block, which {event} hooks cannot do){}",
            stderr_tail(&stderr)
        )),
        Answer::Malformed(what) => malformed(event, label, &what),
        Answer::Failed(what) => failed(&what),
    }
}

/// `: <stderr>` (shortened) for a failure message, or nothing.
pub(crate) fn stderr_tail(stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        return String::new();
    }
    let short: String = stderr.chars().take(500).collect();
    let cut = if short.len() < stderr.len() {
        "..."
    } else {
        ""
    };
    format!(": {short}{cut}")
}

fn failed(what: &str) -> Reply {
    Reply {
        failure: Some(what.to_string()),
        ..Reply::default()
    }
}

/// Unreadable output: a refusal where the event's hooks decide, else a failure.
fn malformed(event: HookEvent, label: &str, what: &str) -> Reply {
    if decides(event) {
        Reply {
            decision: Some(HookDecision::Deny),
            reason: Some(format!(
                "hook {label} answered with output that cannot be read: {what}. A hook whose answer cannot be read refuses rather than allows."
            )),
            ..Reply::default()
        }
    } else {
        failed(&format!("its output cannot be read: {what}"))
    }
}

/// The fields of a JSON answer; `Err` names the field that is wrong.
fn parse_object(event: HookEvent, map: &Map<String, Value>) -> Result<Reply, String> {
    let mut reply = Reply::default();
    if let Some(false) = bool_field(map, "continue")? {
        let reason = string_field(map, "stopReason")?;
        reply.stop = Some(reason.unwrap_or_else(|| "a hook said not to continue".to_string()));
    } else {
        string_field(map, "stopReason")?;
    }
    reply.suppress_output = bool_field(map, "suppressOutput")?.unwrap_or(false);
    reply.system_message = string_field(map, "systemMessage")?;
    let mut decision = match string_field(map, "decision")? {
        Some(word) => Some(top_level_decision(&word)?),
        None => None,
    };
    let mut reason = string_field(map, "reason")?;
    match map.get("hookSpecificOutput") {
        None | Some(Value::Null) => {}
        Some(Value::Object(specific)) => {
            let own = parse_specific(event, specific)?;
            if own.decision.is_some() {
                decision = own.decision;
                reason = own.reason.or(reason);
            }
            reply.updated_input = own.updated_input;
            reply.context = own.context;
        }
        Some(other) => return Err(wrong_type("hookSpecificOutput", "an object", other)),
    }
    // Decisions mean something only where a hook can refuse.
    if can_block(event) {
        reply.decision = decision;
        reply.reason = reason.filter(|r| !r.trim().is_empty());
    }
    Ok(reply)
}

/// `hookSpecificOutput`'s decision, input and context.
fn parse_specific(event: HookEvent, specific: &Map<String, Value>) -> Result<Reply, String> {
    if let Some(name) = string_field(specific, "hookEventName")?
        && name != event.as_str()
    {
        return Err(format!(
            "hookSpecificOutput.hookEventName is {} on a {event} event",
            crate::config::quoted(&name)
        ));
    }
    let mut own = Reply {
        context: string_field(specific, "additionalContext")?,
        updated_input: object_field(specific, "updatedInput")?,
        ..Reply::default()
    };
    let permission = string_field(specific, "permissionDecision")?;
    let permission_reason = string_field(specific, "permissionDecisionReason")?;
    if event == HookEvent::PreToolUse
        && let Some(word) = permission
    {
        own.decision = permission_decision(&word)?;
        own.reason = permission_reason;
    }
    match specific.get("decision") {
        None | Some(Value::Null) => {}
        Some(Value::Object(decision)) if event == HookEvent::PermissionRequest => {
            let behavior = string_field(decision, "behavior")?;
            own.decision = match behavior.as_deref() {
                Some("allow") => Some(HookDecision::Allow),
                Some("deny") => Some(HookDecision::Deny),
                Some(other) => {
                    return Err(format!(
                        "hookSpecificOutput.decision.behavior is {}; accepted: allow, deny",
                        crate::config::quoted(other)
                    ));
                }
                None => return Err("hookSpecificOutput.decision has no \"behavior\"".into()),
            };
            own.reason = string_field(decision, "message")?;
            if let Some(input) = object_field(decision, "updatedInput")? {
                own.updated_input = Some(input);
            }
            bool_field(decision, "interrupt")?;
        }
        Some(Value::Object(_)) => {}
        Some(other) => {
            return Err(wrong_type(
                "hookSpecificOutput.decision",
                "an object",
                other,
            ));
        }
    }
    Ok(own)
}

/// A top-level `decision`.
fn top_level_decision(word: &str) -> Result<HookDecision, String> {
    match word {
        "approve" | "allow" => Ok(HookDecision::Allow),
        "block" | "deny" => Ok(HookDecision::Deny),
        "ask" => Ok(HookDecision::Ask),
        other => Err(format!(
            "\"decision\" is {}; accepted: approve, allow, block, deny, ask",
            crate::config::quoted(other)
        )),
    }
}

/// `permissionDecision`; `defer` (Claude Code's "decide as usual") is no decision.
fn permission_decision(word: &str) -> Result<Option<HookDecision>, String> {
    match word {
        "allow" => Ok(Some(HookDecision::Allow)),
        "deny" => Ok(Some(HookDecision::Deny)),
        "ask" => Ok(Some(HookDecision::Ask)),
        "defer" => Ok(None),
        other => Err(format!(
            "hookSpecificOutput.permissionDecision is {}; accepted: allow, deny, ask",
            crate::config::quoted(other)
        )),
    }
}

fn wrong_type(key: &str, expected: &str, value: &Value) -> String {
    let shown = value.to_string();
    let shown: String = shown.chars().take(60).collect();
    format!("\"{key}\" must be {expected}, not {shown}")
}

fn string_field(map: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(wrong_type(key, "a string", other)),
    }
}

fn bool_field(map: &Map<String, Value>, key: &str) -> Result<Option<bool>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(wrong_type(key, "true or false", other)),
    }
}

fn object_field(map: &Map<String, Value>, key: &str) -> Result<Option<Value>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value @ Value::Object(_)) => Ok(Some(value.clone())),
        Some(other) => Err(wrong_type(key, "an object", other)),
    }
}

#[cfg(test)]
mod tests;
