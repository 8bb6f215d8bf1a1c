//! The JSON a hook receives: the common fields, then the event's own.
//!
//! Common: `session_id`, `transcript_path`, `cwd`, `hook_event_name`, `timestamp`
//! (RFC 3339, UTC), `permission_mode` when known, `agent_id` and `agent_type` inside a
//! sub-agent. The event's fields (`tool_name`, `tool_input`, ...) come from the call path
//! and may add to these but never replace the five that say which session and event
//! this is.

use std::path::PathBuf;

use serde_json::{Map, Value};
use toolbelt_engine::hooks::HookRequest;

/// What the runner knows of its session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// `session_id` (a request's own [`HookRequest::session_id`] wins).
    pub session_id: String,
    /// `transcript_path`: the saved conversation, when there is one (else `""`).
    pub transcript_path: Option<PathBuf>,
    /// `cwd`, and the project folder: hooks run there, and `QWEN_PROJECT_DIR`,
    /// `CLAUDE_PROJECT_DIR` and `GEMINI_PROJECT_DIR` name it.
    pub cwd: PathBuf,
}

/// The keys the event's fields cannot replace.
const FIXED: [&str; 5] = [
    "session_id",
    "transcript_path",
    "cwd",
    "hook_event_name",
    "timestamp",
];

/// The input of `request`'s hooks.
pub(crate) fn hook_input(request: &HookRequest, session: &SessionInfo) -> Map<String, Value> {
    let mut input = Map::new();
    let session_id = request
        .session_id
        .clone()
        .unwrap_or_else(|| session.session_id.clone());
    input.insert("session_id".into(), session_id.into());
    let transcript = session
        .transcript_path
        .as_ref()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    input.insert("transcript_path".into(), transcript.into());
    input.insert(
        "cwd".into(),
        session.cwd.to_string_lossy().into_owned().into(),
    );
    input.insert("hook_event_name".into(), request.event.as_str().into());
    input.insert("timestamp".into(), now_rfc3339().into());
    if let Some(mode) = &request.permission_mode {
        input.insert("permission_mode".into(), mode.clone().into());
    }
    if let Some(agent) = &request.agent {
        input.insert("agent_id".into(), agent.id.clone().into());
        input.insert("agent_type".into(), agent.agent_type.clone().into());
    }
    for (key, value) in &request.fields {
        if !FIXED.contains(&key.as_str()) {
            input.insert(key.clone(), value.clone());
        }
    }
    input
}

/// Now, as `2026-05-01T12:34:56.789Z`.
fn now_rfc3339() -> String {
    let now: chrono::DateTime<chrono::Utc> = std::time::SystemTime::now().into();
    now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolbelt_engine::{hooks::HookAgent, hooks::HookEvent};

    fn session() -> SessionInfo {
        SessionInfo {
            session_id: "s-1".into(),
            transcript_path: Some(PathBuf::from("/t/s-1.jsonl")),
            cwd: PathBuf::from("/w"),
        }
    }

    #[test]
    fn the_common_fields_come_first_and_cannot_be_replaced() {
        let mut request = HookRequest::new(HookEvent::PreToolUse)
            .field("tool_name", "run_shell_command")
            .field("session_id", "forged")
            .field("hook_event_name", "Stop");
        request.permission_mode = Some("auto_edit".into());
        let input = hook_input(&request, &session());
        assert_eq!(input["session_id"], "s-1");
        assert_eq!(input["transcript_path"], "/t/s-1.jsonl");
        assert_eq!(input["cwd"], "/w");
        assert_eq!(input["hook_event_name"], "PreToolUse");
        assert_eq!(input["permission_mode"], "auto_edit");
        assert_eq!(input["tool_name"], "run_shell_command");
        assert!(!input.contains_key("agent_id"));
        let stamp = input["timestamp"].as_str().unwrap();
        assert!(
            chrono::DateTime::parse_from_rfc3339(stamp).is_ok(),
            "{stamp}"
        );
    }

    #[test]
    fn a_requests_session_and_agent_are_used() {
        let mut request = HookRequest::new(HookEvent::SubagentStart);
        request.session_id = Some("mcp-client-7".into());
        request.agent = Some(HookAgent {
            id: "a1".into(),
            agent_type: "Explorer".into(),
        });
        let mut s = session();
        s.transcript_path = None;
        let input = hook_input(&request, &s);
        assert_eq!(input["session_id"], "mcp-client-7");
        assert_eq!(input["transcript_path"], "");
        assert_eq!(input["agent_id"], "a1");
        assert_eq!(input["agent_type"], "Explorer");
        assert!(!input.contains_key("permission_mode"));
    }
}
