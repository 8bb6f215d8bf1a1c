//! The agent's events as `session/update` notifications: the model's text as
//! `agent_message_chunk`, each call as a `tool_call` that `tool_call_update`s carry through
//! its states (title from the tool's description of the call, `kind` from the tool's kind,
//! `locations` from its path arguments, `diff` content for every file change, the
//! output as text), and `todo_write`'s list as a `plan`.
//!
//! The sink is a plain function called in the agent's order; everything it sends goes
//! through the peer's one channel, so the client sees the updates of a turn before the
//! turn's answer.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionNotification, SessionUpdate, Terminal, TextContent, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use serde_json::Value;
use toolbelt_agent::AgentEvent;
use toolbelt_core::{Display, Kind};
use toolbelt_engine::registry::ToolRegistry;
use toolbelt_engine::{scheduler::CallState, scheduler::CompletedCall, scheduler::SchedulerEvent};
use toolbelt_model::{FinishReason, StreamDelta};

use crate::rpc::Peer;
use crate::terminal::{Mirror, Terminals};

/// The most output of a running call shown at once: its last 64 KiB.
const OUTPUT_TAIL: usize = 64 * 1024;

/// How often a running call's output is sent again (each update carries the whole
/// tail, so a chatty command is not sent thousands of times a second); the call's last
/// update carries its result whatever came since.
const OUTPUT_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// What is known of a call between its events.
struct CallView {
    output: String,
    /// When the output was last sent.
    sent: Option<std::time::Instant>,
    /// Its output on its way to the editor's terminal (`terminal.rs`).
    mirror: Option<Arc<Mirror>>,
}

/// Turns one session's events into notifications.
pub(crate) struct Updates {
    peer: Arc<Peer>,
    /// The session's id, known once the session is made (events before it are dropped).
    pub session_id: OnceLock<String>,
    /// The tools, to find a call's kind; set with the session and before each turn
    /// (MCP servers may change theirs).
    registry: Mutex<Option<Arc<ToolRegistry>>>,
    cwd: PathBuf,
    calls: Mutex<HashMap<String, CallView>>,
    /// Whether the model's current answer streamed its text already.
    streamed: Mutex<bool>,
    /// Why the last answer stopped (`max_tokens` is told from it).
    pub last_finish: Mutex<Option<FinishReason>>,
    /// The editor offered `fs/write_text_file`: a file change is also given to it.
    pub editor_writes: OnceLock<bool>,
    /// The editor offered terminals: execute calls show in one.
    pub terminals: OnceLock<Terminals>,
    /// The tasks that create, wait for and release the editor's terminals.
    terminal_tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Updates {
    pub(crate) fn new(peer: Arc<Peer>, cwd: PathBuf) -> Updates {
        Updates {
            peer,
            session_id: OnceLock::new(),
            registry: Mutex::new(None),
            cwd,
            calls: Mutex::new(HashMap::new()),
            streamed: Mutex::new(false),
            last_finish: Mutex::new(None),
            editor_writes: OnceLock::new(),
            terminals: OnceLock::new(),
            terminal_tasks: Mutex::new(Vec::new()),
        }
    }

    /// The tools as they are now.
    pub(crate) fn set_registry(&self, registry: Arc<ToolRegistry>) {
        if let Ok(mut r) = self.registry.lock() {
            *r = Some(registry);
        }
    }

    /// Sends one update for this session.
    pub(crate) fn send(&self, update: SessionUpdate) {
        if let Some(id) = self.session_id.get() {
            let note = SessionNotification::new(id.clone(), update);
            self.peer.notify("session/update", note);
        }
    }

    /// A text chunk of the agent's message.
    pub(crate) fn say(&self, text: &str) {
        if !text.is_empty() {
            let block = ContentBlock::Text(TextContent::new(text));
            self.send(SessionUpdate::AgentMessageChunk(ContentChunk::new(block)));
        }
    }

    /// One event of the agent.
    pub(crate) fn event(&self, event: &AgentEvent) {
        match event {
            AgentEvent::Delta(StreamDelta::Thinking(text)) => {
                let block = ContentBlock::Text(TextContent::new(text.clone()));
                self.send(SessionUpdate::AgentThoughtChunk(ContentChunk::new(block)));
            }
            AgentEvent::Delta(StreamDelta::Text(text)) => {
                if let Ok(mut streamed) = self.streamed.lock() {
                    *streamed = true;
                }
                self.say(text);
            }
            AgentEvent::Assistant {
                text,
                tool_calls,
                finish_reason,
                ..
            } => {
                let streamed = self
                    .streamed
                    .lock()
                    .map(|mut s| std::mem::take(&mut *s))
                    .unwrap_or(false);
                if !streamed {
                    self.say(text);
                }
                if let Ok(mut last) = self.last_finish.lock() {
                    *last = Some(finish_reason.clone());
                }
                for call in tool_calls {
                    let input: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
                    self.announce(&call.id, &call.name, &input);
                }
            }
            AgentEvent::Tool(event) => self.tool(event),
            AgentEvent::Hook(message) => self.say(&format!("\n> {}\n", message.text)),
            _ => {}
        }
    }

    /// The kind ACP names for the tool called `name`.
    pub(crate) fn kind_of(&self, name: &str) -> ToolKind {
        let kind = self
            .registry
            .lock()
            .ok()
            .and_then(|r| r.as_ref().and_then(|r| r.get(name)).map(|r| r.tool.kind()))
            .unwrap_or(Kind::Other);
        acp_kind(kind)
    }

    /// A new call: `pending`, titled with the tool's name until the tool describes it.
    fn announce(&self, id: &str, name: &str, input: &Value) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.insert(
                id.to_string(),
                CallView {
                    output: String::new(),
                    sent: None,
                    mirror: None,
                },
            );
        }
        let call = ToolCall::new(id.to_string(), name.to_string())
            .kind(self.kind_of(name))
            .status(ToolCallStatus::Pending)
            .locations(locations(input, &self.cwd))
            .raw_input(input.clone());
        self.send(SessionUpdate::ToolCall(call));
    }

    fn update(&self, id: &str, fields: ToolCallUpdateFields) {
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id.to_string(),
            fields,
        )));
    }

    fn tool(&self, event: &SchedulerEvent) {
        match event {
            SchedulerEvent::Validated {
                call_id,
                description,
                ..
            } => self.update(
                call_id,
                ToolCallUpdateFields::new().title(description.clone()),
            ),
            SchedulerEvent::Started { call_id, tool, .. } => {
                self.update(
                    call_id,
                    ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
                );
                if self.kind_of(tool) == ToolKind::Execute {
                    self.mirror(call_id);
                }
            }
            SchedulerEvent::Output { call_id, chunk } => self.output(call_id, chunk),
            SchedulerEvent::Finished(call) => self.finished(call),
            _ => {}
        }
    }

    /// An execute call shown in the editor's terminal, when it offers terminals.
    fn mirror(&self, call_id: &str) {
        let (Some(terminals), Some(session_id)) = (self.terminals.get(), self.session_id.get())
        else {
            return;
        };
        let (peer, session, call) = (self.peer.clone(), session_id.clone(), call_id.to_string());
        let show = move |terminal: String| {
            let content = vec![ToolCallContent::Terminal(Terminal::new(terminal))];
            let update = ToolCallUpdate::new(call, ToolCallUpdateFields::new().content(content));
            let note = SessionNotification::new(session, SessionUpdate::ToolCallUpdate(update));
            peer.notify("session/update", note);
        };
        let started = Mirror::start(terminals, &self.peer, session_id, &self.cwd, show);
        let mirror = started.map(|(mirror, task)| {
            if let Ok(mut tasks) = self.terminal_tasks.lock() {
                tasks.push(task);
            }
            mirror
        });
        if let Ok(mut calls) = self.calls.lock()
            && let Some(view) = calls.get_mut(call_id)
        {
            view.mirror = mirror;
        }
    }

    /// Waits (at most 5 s) until the terminals of the calls that ended are released.
    pub(crate) async fn settle_terminals(&self) {
        let tasks: Vec<_> = self
            .terminal_tasks
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        let aborts: Vec<_> = tasks.iter().map(|t| t.abort_handle()).collect();
        let all = futures_join(tasks);
        if tokio::time::timeout(std::time::Duration::from_secs(5), all)
            .await
            .is_err()
        {
            aborts.iter().for_each(tokio::task::AbortHandle::abort);
        }
    }

    /// Live output: the call's output so far (its tail), as text content; in the
    /// editor's terminal when there is one.
    fn output(&self, id: &str, chunk: &str) {
        let text = {
            let Ok(mut calls) = self.calls.lock() else {
                return;
            };
            let Some(view) = calls.get_mut(id) else {
                return;
            };
            if let Some(mirror) = &view.mirror {
                mirror.write(chunk);
                if mirror.terminal_id().is_some() {
                    return;
                }
            }
            view.output.push_str(chunk);
            if view.output.len() > OUTPUT_TAIL * 2 {
                let mut cut = view.output.len() - OUTPUT_TAIL;
                while !view.output.is_char_boundary(cut) {
                    cut += 1;
                }
                view.output.drain(..cut);
            }
            // Sent with a later chunk, or in the call's result.
            if view.sent.is_some_and(|at| at.elapsed() < OUTPUT_EVERY) {
                return;
            }
            view.sent = Some(std::time::Instant::now());
            view.output.clone()
        };
        self.update(
            id,
            ToolCallUpdateFields::new().content(vec![text_content(&text)]),
        );
    }

    fn finished(&self, call: &CompletedCall) {
        let mirror = self
            .calls
            .lock()
            .ok()
            .and_then(|mut calls| calls.remove(&call.call_id))
            .and_then(|view| view.mirror);
        let status = match call.state {
            CallState::Success => ToolCallStatus::Completed,
            _ => ToolCallStatus::Failed,
        };
        let text = call.result.llm_text();
        let terminal = mirror.as_ref().and_then(|m| {
            m.end(i32::from(call.state != CallState::Success));
            m.terminal_id()
        });
        if let Display::FileDiff(diff) = &call.result.return_display
            && call.state == CallState::Success
        {
            self.tell_editor(&diff.file_path, diff.new_content.as_deref());
        }
        let content = match &call.result.return_display {
            Display::FileDiff(diff) if call.state == CallState::Success => {
                vec![diff_content(
                    &diff.file_path,
                    diff.original_content.clone(),
                    diff.new_content.clone(),
                    &diff.diff,
                )]
            }
            _ => match terminal {
                Some(terminal) => vec![ToolCallContent::Terminal(Terminal::new(terminal))],
                None => vec![text_content(&text)],
            },
        };
        if let Display::TodoList { todos } = &call.result.return_display {
            self.send(SessionUpdate::Plan(plan(todos)));
        }
        let fields = ToolCallUpdateFields::new()
            .status(status)
            .content(content)
            .raw_output(Value::String(text));
        self.update(&call.call_id, fields);
    }
}

impl Updates {
    /// A file toolbelt changed, given to an editor that offered `fs/write_text_file`, so
    /// its buffer holds the new text. toolbelt has already written the file itself
    /// (confined to the workspace, atomically, checkpointed): the editor's write is the
    /// same text, and toolbelt does not depend on what the editor does with it. A file
    /// too large to carry whole (over 1 MiB) is left to the editor's own reload.
    fn tell_editor(&self, path: &Path, text: Option<&str>) {
        let (Some(true), Some(text), Some(id)) =
            (self.editor_writes.get(), text, self.session_id.get())
        else {
            return;
        };
        let params = serde_json::json!({"sessionId": id, "path": path, "content": text});
        self.peer.request_detached("fs/write_text_file", params);
    }
}

/// ACP's name for a tool's kind.
pub(crate) fn acp_kind(kind: Kind) -> ToolKind {
    match kind {
        Kind::Read => ToolKind::Read,
        Kind::Edit => ToolKind::Edit,
        Kind::Delete => ToolKind::Delete,
        Kind::Move => ToolKind::Move,
        Kind::Search => ToolKind::Search,
        Kind::Execute => ToolKind::Execute,
        Kind::Fetch => ToolKind::Fetch,
        Kind::Think => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// Text as tool call content.
pub(crate) fn text_content(text: &str) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::Text(TextContent::new(text)))
}

/// A file change as a `diff`: the whole texts when they were kept (files up to 1 MiB),
/// else the unified diff as text.
pub(crate) fn diff_content(
    path: &Path,
    old: Option<String>,
    new: Option<String>,
    unified: &str,
) -> ToolCallContent {
    match new {
        Some(new) => ToolCallContent::Diff(Diff::new(path.to_path_buf(), new).old_text(old)),
        None => text_content(unified),
    }
}

/// The files a call names, for the editor to follow: the path arguments of the file
/// tools (`file_path`, `absolute_path`, `path`, `notebook_path`), with the line where
/// one is given.
pub(crate) fn locations(input: &Value, cwd: &Path) -> Vec<ToolCallLocation> {
    const PATH_KEYS: [&str; 4] = ["file_path", "absolute_path", "path", "notebook_path"];
    let Some(path) = PATH_KEYS
        .iter()
        .find_map(|key| input.get(*key).and_then(Value::as_str))
        .filter(|p| !p.trim().is_empty())
    else {
        return Vec::new();
    };
    let line = ["line", "offset"]
        .iter()
        .find_map(|key| input.get(*key).and_then(Value::as_u64))
        .and_then(|l| u32::try_from(l).ok());
    vec![ToolCallLocation::new(cwd.join(path)).line(line)]
}

/// `todo_write`'s list as ACP's plan (every entry, as the protocol asks).
fn plan(todos: &[toolbelt_core::TodoItem]) -> Plan {
    let entries = todos
        .iter()
        .map(|t| {
            let status = match t.status {
                toolbelt_core::TodoStatus::Pending => PlanEntryStatus::Pending,
                toolbelt_core::TodoStatus::InProgress => PlanEntryStatus::InProgress,
                toolbelt_core::TodoStatus::Completed => PlanEntryStatus::Completed,
            };
            PlanEntry::new(t.content.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    Plan::new(entries)
}

/// Waits for every task.
async fn futures_join(tasks: Vec<tokio::task::JoinHandle<()>>) {
    for task in tasks {
        let _ = task.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn locations_come_from_path_arguments_relative_to_the_session() {
        let cwd = Path::new("/work/p");
        let found = locations(&json!({"file_path": "src/a.rs", "offset": 12}), cwd);
        let found = serde_json::to_value(&found).unwrap();
        assert_eq!(found, json!([{"path": "/work/p/src/a.rs", "line": 12}]));
        let absolute = locations(&json!({"absolute_path": "/etc/hosts"}), cwd);
        assert_eq!(
            serde_json::to_value(&absolute).unwrap()[0]["path"],
            "/etc/hosts"
        );
        assert!(locations(&json!({"command": "ls"}), cwd).is_empty());
    }

    #[test]
    fn a_large_file_change_is_shown_as_its_unified_diff() {
        let kept = diff_content(
            Path::new("/p/a"),
            Some("a\n".into()),
            Some("b\n".into()),
            "",
        );
        let kept = serde_json::to_value(&kept).unwrap();
        assert_eq!(kept["type"], "diff");
        assert_eq!(kept["oldText"], "a\n");
        assert_eq!(kept["newText"], "b\n");
        let large = diff_content(Path::new("/p/a"), None, None, "@@ -1 +1 @@");
        assert_eq!(serde_json::to_value(&large).unwrap()["type"], "content");
    }
}
