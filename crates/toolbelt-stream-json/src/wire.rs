//! The messages of the SDK protocol, as the SDKs declare them (`@qwen-code/sdk`'s
//! `dist/index.d.ts`: `SDKSystemMessage`, `SDKAssistantMessage`, `SDKUserMessage`,
//! `SDKResultMessage`, `SDKPartialAssistantMessage`, `CLIControlResponse`), built from
//! the agent's events.
//!
//! The [`Emitter`] owns what every message shares (the session id, the model's name) and
//! where messages go: one line each on stdout (`stream-json`), or kept and printed as
//! one JSON array at the end (`json`). Control messages always go out at once, whatever
//! the format: the client waits for them.
//!
//! The sequence follows Qwen Code 0.24.4: each content block of a model answer is an
//! `assistant` message of its own (text first, then one per `tool_use`), each finished
//! call a `user` message with its `tool_result`, and with partial messages on, every
//! model answer opens with `message_start` and closes with `message_stop`, each block
//! between its `content_block_start` and `content_block_stop`. toolbelt's own figures
//! (per-call timings, the call's status) ride in a `toolbelt` field beside the standard
//! ones, never in their place.
//!
//! Sub-agents: every builder takes the `parent_tool_use_id` of the call the message
//! belongs to; the main agent's messages carry `null`.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};
use toolbelt_agent::{AgentEvent, RunOutcome, StopReason};
use toolbelt_core::{Display, ErrorKind};
use toolbelt_engine::hooks::HookMessage;
use toolbelt_engine::{scheduler::CallState, scheduler::CompletedCall, scheduler::SchedulerEvent};
use toolbelt_model::{StreamDelta, ToolCall, Usage};
use toolbelt_session::Prepared;

use crate::out::check;

/// How the messages are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Not at all (the headless agent's text output).
    Text,
    /// Kept, and written as one JSON array by [`Emitter::finish`].
    Json,
    /// One JSON object a line, as they happen.
    StreamJson,
}

/// A fresh message id.
pub fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// What `system`/`init` says about the session.
pub struct InitInfo<'a> {
    /// The session's directory.
    pub cwd: &'a std::path::Path,
    /// The tools' names.
    pub tools: Vec<String>,
    /// `(name, status)` of every MCP server.
    pub mcp_servers: Vec<(String, String)>,
    /// The approval mode, in the words the client used.
    pub permission_mode: &'a str,
    /// Sub-agent names (none until sub-agents exist).
    pub agents: Vec<String>,
    /// Skill names (none until skills exist).
    pub skills: Vec<String>,
    /// Slash commands: the MCP servers' prompts, `server:prompt`.
    pub slash_commands: Vec<String>,
    /// Flags accepted and not honoured: `(flag, why)`.
    pub ignored_flags: Vec<(String, String)>,
}

impl InitInfo<'_> {
    /// The `system`/`init` facts of a prepared session.
    pub fn of(p: &Prepared) -> InitInfo<'_> {
        InitInfo {
            cwd: &p.cwd,
            tools: p.agent.registry().all().map(|r| r.name.clone()).collect(),
            mcp_servers: p
                .mcp
                .reports()
                .into_iter()
                .map(|r| {
                    let status = match r.status {
                        toolbelt_mcp::ServerStatus::Connected => "connected".to_string(),
                        toolbelt_mcp::ServerStatus::Connecting => "pending".to_string(),
                        // Claude Code's word for a server that wants an OAuth login.
                        toolbelt_mcp::ServerStatus::NeedsLogin(_) => "needs-auth".to_string(),
                        _ => "failed".to_string(),
                    };
                    (r.alias, status)
                })
                .collect(),
            permission_mode: p.agent.scheduler().mode().as_str(),
            agents: p.agents.clone(),
            skills: p.skills.clone(),
            slash_commands: p.mcp.prompts().iter().map(|p| p.command()).collect(),
            ignored_flags: (p.options.ignored.iter())
                .map(|i| (i.flag.clone(), i.why.clone()))
                .collect(),
        }
    }
}

/// Writes the protocol's messages for one session.
pub struct Emitter {
    session_id: String,
    format: OutputFormat,
    partial: bool,
    model: Mutex<String>,
    /// `-o json`: every message, printed as one array by [`Emitter::finish`].
    kept: Mutex<Vec<Value>>,
    /// The arguments of every call the model made, by call id: what `can_use_tool`
    /// shows and what `permission_denials` lists.
    inputs: Mutex<HashMap<String, Value>>,
    /// The usage of the last model answer (`get_context_usage`).
    last_usage: Mutex<Option<Usage>>,
    /// The partial message being streamed, if any.
    streaming: Mutex<Streaming>,
}

/// Where the stream of the current model answer stands (partial messages).
#[derive(Default)]
struct Streaming {
    /// `message_start` was sent for the answer being streamed.
    open: bool,
    /// The content block open now.
    block: Option<Block>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    Tool(u32),
}

impl Emitter {
    /// The messages of session `session_id` on `model`, in `format`; `partial` adds
    /// `stream_event` messages.
    pub fn new(session_id: String, model: &str, format: OutputFormat, partial: bool) -> Self {
        Emitter {
            session_id,
            format,
            partial,
            model: Mutex::new(model.to_string()),
            kept: Mutex::new(Vec::new()),
            inputs: Mutex::new(HashMap::new()),
            last_usage: Mutex::new(None),
            streaming: Mutex::new(Streaming::default()),
        }
    }

    /// The model's name as messages carry it now.
    pub fn model(&self) -> String {
        self.model.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// The model is now `name` (`set_model`).
    pub fn set_model(&self, name: &str) {
        if let Ok(mut m) = self.model.lock() {
            *m = name.to_string();
        }
    }

    /// The usage the last model answer reported.
    pub fn last_usage(&self) -> Option<Usage> {
        self.last_usage.lock().ok().and_then(|u| *u)
    }

    /// The input of call `id` as the model gave it (`null` when unknown).
    pub fn input_of(&self, id: &str) -> Value {
        self.inputs
            .lock()
            .ok()
            .and_then(|m| m.get(id).cloned())
            .unwrap_or(Value::Null)
    }

    /// A session message: printed now (`stream-json`) or kept for the array (`json`).
    fn send(&self, message: Value) {
        match self.format {
            OutputFormat::StreamJson => write_line(&message),
            OutputFormat::Json => {
                if let Ok(mut kept) = self.kept.lock() {
                    kept.push(message);
                }
            }
            OutputFormat::Text => {}
        }
    }

    /// The fields every message has.
    fn envelope(&self, kind: &str, parent: Option<&str>) -> Value {
        json!({
            "type": kind,
            "uuid": uuid(),
            "session_id": self.session_id,
            "parent_tool_use_id": parent,
        })
    }

    /// The `system`/`init` message.
    pub fn init(&self, info: &InitInfo<'_>) {
        let mut v = self.envelope("system", None);
        v["subtype"] = json!("init");
        v["cwd"] = json!(info.cwd);
        v["tools"] = json!(info.tools);
        v["mcp_servers"] = info
            .mcp_servers
            .iter()
            .map(|(name, status)| json!({"name": name, "status": status}))
            .collect();
        v["model"] = json!(self.model());
        v["permission_mode"] = json!(info.permission_mode);
        v["slash_commands"] = json!(info.slash_commands);
        v["agents"] = json!(info.agents);
        v["skills"] = json!(info.skills);
        v["toolbelt_version"] = json!(env!("CARGO_PKG_VERSION"));
        // Not Claude's: what this session accepted and does not honour.
        v["toolbelt_ignored_flags"] = info
            .ignored_flags
            .iter()
            .map(|(flag, why)| json!({"flag": flag, "why": why}))
            .collect();
        self.send(v);
    }

    /// What hooks said for the person: a `system`/`hook_response` message, in the
    /// shape of Claude Code's (`hook_event`, `hook_name`, `output`, `stdout` or
    /// `stderr`, `outcome`).
    fn hook_message(&self, message: &HookMessage, parent: Option<&str>) {
        let mut v = self.envelope("system", parent);
        v["subtype"] = json!("hook_response");
        v["hook_event"] = json!(message.event.as_str());
        v["hook_name"] = json!(message.hook.as_deref().unwrap_or(message.event.as_str()));
        v["output"] = json!(message.text);
        let (stream, outcome) = if message.failure {
            ("stderr", "error")
        } else {
            ("stdout", "success")
        };
        v[stream] = json!(message.text);
        v["outcome"] = json!(outcome);
        self.send(v);
    }

    /// A stdin line that could not be used: `system`/`input_error`.
    pub fn input_error(&self, line: usize, why: &str) {
        let mut v = self.envelope("system", None);
        v["subtype"] = json!("input_error");
        v["data"] = json!({"line": line, "error": why});
        self.send(v);
    }

    /// The messages of one agent event.
    pub fn event(&self, event: &AgentEvent) {
        self.event_in(event, None);
    }

    /// [`Emitter::event`] for an event of the sub-agent started by call `parent`
    /// (`None`: the main agent).
    pub fn event_in(&self, event: &AgentEvent, parent: Option<&str>) {
        if let AgentEvent::Hook(message) | AgentEvent::Tool(SchedulerEvent::Hook { message, .. }) =
            event
        {
            return self.hook_message(message, parent);
        }
        match event {
            AgentEvent::Assistant {
                text,
                tool_calls,
                usage,
                ..
            } => self.assistant(text, tool_calls, usage.as_ref(), parent),
            AgentEvent::Tool(SchedulerEvent::Finished(call)) => self.tool_result(call, parent),
            AgentEvent::Delta(delta) if self.partial => self.delta(delta, parent),
            // A sub-agent's messages carry the id of the `agent` call that started it
            // (the innermost, when they nest). Its streamed pieces are left out: they
            // would interleave with the parent's open message.
            AgentEvent::SubAgent {
                parent_call_id,
                event,
                ..
            } if !matches!(**event, AgentEvent::Delta(_)) => {
                self.event_in(event, Some(parent_call_id))
            }
            _ => {}
        }
    }

    fn streaming(&self) -> std::sync::MutexGuard<'_, Streaming> {
        self.streaming
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn stream_event(&self, event: Value, parent: Option<&str>) {
        let mut v = self.envelope("stream_event", parent);
        v["event"] = event;
        self.send(v);
    }

    /// One piece of a streamed answer: `message_start` before the first, a block's
    /// start when the kind of content changes, and the delta.
    fn delta(&self, delta: &StreamDelta, parent: Option<&str>) {
        // A retried request: the message streamed so far ends here, and the next
        // attempt's pieces start a new one (a client keeps the last message it got).
        if *delta == StreamDelta::Restart {
            if self.close_stream(parent) {
                self.stream_event(json!({"type": "message_stop"}), parent);
            }
            return;
        }
        let mut state = self.streaming();
        if !state.open {
            state.open = true;
            self.stream_event(
                json!({"type": "message_start", "message": {
                    "id": uuid(), "role": "assistant", "model": self.model(), "content": []}}),
                parent,
            );
        }
        let (block, start, piece) = match delta {
            StreamDelta::Text(text) => (
                Block::Text,
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": text}),
            ),
            StreamDelta::ToolCallStart { index, id, name } => (
                Block::Tool(*index),
                json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                Value::Null,
            ),
            StreamDelta::ToolCallArguments { index, text } => (
                Block::Tool(*index),
                json!({"type": "tool_use", "input": {}}),
                json!({"type": "input_json_delta", "partial_json": text}),
            ),
            _ => return,
        };
        if state.block != Some(block) {
            if state.block.take().is_some() {
                self.stream_event(json!({"type": "content_block_stop", "index": 0}), parent);
            }
            state.block = Some(block);
            self.stream_event(
                json!({"type": "content_block_start", "index": 0, "content_block": start}),
                parent,
            );
        }
        if !piece.is_null() {
            self.stream_event(
                json!({"type": "content_block_delta", "index": 0, "delta": piece}),
                parent,
            );
        }
    }

    /// Ends a streamed answer's open block; whether an answer was being streamed.
    fn close_stream(&self, parent: Option<&str>) -> bool {
        let mut state = self.streaming();
        if state.block.take().is_some() {
            self.stream_event(json!({"type": "content_block_stop", "index": 0}), parent);
        }
        std::mem::take(&mut state.open)
    }

    fn assistant(
        &self,
        text: &str,
        calls: &[ToolCall],
        usage: Option<&Usage>,
        parent: Option<&str>,
    ) {
        let mut blocks: Vec<(Value, Option<String>)> = Vec::new();
        if !text.is_empty() {
            blocks.push((json!({"type": "text", "text": text}), None));
        }
        for call in calls {
            let input = arguments_value(&call.arguments);
            if let Ok(mut inputs) = self.inputs.lock() {
                inputs.insert(call.id.clone(), input.clone());
            }
            blocks.push((
                json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                Some(call.arguments.clone()),
            ));
        }
        if let (Some(u), Ok(mut last)) = (usage, self.last_usage.lock()) {
            *last = Some(*u);
        }
        let model = self.model();
        // Streamed: the block events went out as the pieces came. Otherwise (a replay,
        // a server that does not stream) they are made from the whole answer.
        let streamed = self.partial && self.close_stream(parent);
        if self.partial && !streamed {
            self.stream_event(
                json!({"type": "message_start", "message": {
                    "id": uuid(), "role": "assistant", "model": model, "content": []}}),
                parent,
            );
        }
        let usage = usage_value(usage.copied().unwrap_or_default());
        for (block, raw_arguments) in blocks {
            let is_tool = raw_arguments.is_some();
            if self.partial && !streamed {
                self.block_events(&block, raw_arguments.as_deref(), parent);
            }
            let mut v = self.envelope("assistant", parent);
            v["message"] = json!({
                "id": uuid(), "type": "message", "role": "assistant", "model": model,
                "content": [block],
                "stop_reason": if is_tool { json!("tool_use") } else { Value::Null },
                "usage": usage,
            });
            self.send(v);
        }
        if self.partial {
            let mut stop = self.envelope("stream_event", parent);
            stop["event"] = json!({"type": "message_stop"});
            self.send(stop);
        }
    }

    /// `content_block_start`, its delta, `content_block_stop`.
    fn block_events(&self, block: &Value, raw_arguments: Option<&str>, parent: Option<&str>) {
        let (start_block, delta) = match raw_arguments {
            Some(arguments) => {
                let mut start = block.clone();
                start["input"] = json!({});
                (
                    start,
                    json!({"type": "input_json_delta", "partial_json": arguments}),
                )
            }
            None => (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            ),
        };
        for event in [
            json!({"type": "content_block_start", "index": 0, "content_block": start_block}),
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
            json!({"type": "content_block_stop", "index": 0}),
        ] {
            let mut v = self.envelope("stream_event", parent);
            v["event"] = event;
            self.send(v);
        }
    }

    fn tool_result(&self, call: &CompletedCall, parent: Option<&str>) {
        let mut text = call.result.llm_text();
        if let Some(error) = &call.result.error
            && text.trim().is_empty()
        {
            text = error.message.clone();
        }
        let mut v = self.envelope("user", parent);
        v["message"] = json!({"role": "user", "content": [{
            "type": "tool_result",
            "tool_use_id": call.call_id,
            "is_error": call.state != CallState::Success,
            "content": text,
        }]});
        v["toolbelt"] = json!({
            "tool": call.name,
            "status": call.state.as_str(),
            "error_type": call.result.error.as_ref().map(|e| e.kind.to_string()),
            "duration_ms": millis(call.duration),
        });
        self.send(v);
    }

    /// The `result` closing one query; `elapsed` runs from the query to now.
    pub fn result(&self, outcome: &RunOutcome, elapsed: Duration) {
        // An answer cut off (interrupted mid-stream) still closes its message.
        if self.partial && self.close_stream(None) {
            self.stream_event(json!({"type": "message_stop"}), None);
        }
        let (subtype, error) = match &outcome.stop {
            StopReason::Answered | StopReason::PlanProposed => ("success", None),
            StopReason::MaxTurns(n) => (
                "error_max_turns",
                Some(json!({"type": "max_turns", "message": format!(
                    "reached the limit of {n} model turns (--max-session-turns) before the model answered")})),
            ),
            StopReason::Cancelled => (
                "error_during_execution",
                Some(json!({"type": "interrupted", "message": "the turn was interrupted"})),
            ),
            StopReason::ModelFailed(e) => (
                "error_during_execution",
                Some(json!({"type": "model_error", "message": e.to_string()})),
            ),
            StopReason::PromptBlocked(why) => (
                "error_during_execution",
                Some(json!({"type": "prompt_blocked", "message": format!(
                    "a UserPromptSubmit hook blocked the prompt: {why}")})),
            ),
            StopReason::HookStopped(why) => (
                "error_during_execution",
                Some(json!({"type": "hook_stopped", "message": format!(
                    "a hook stopped the agent: {why}")})),
            ),
            StopReason::PromptNotMade(why) => (
                "error_during_execution",
                Some(json!({"type": "prompt_failed", "message": why})),
            ),
            _ => (
                "error_during_execution",
                Some(json!({"type": "stopped", "message": "the run stopped"})),
            ),
        };
        let mut v = self.envelope("result", None);
        v["subtype"] = json!(subtype);
        v["is_error"] = json!(error.is_some());
        v["duration_ms"] = json!(elapsed.as_millis() as u64);
        v["duration_api_ms"] = json!(outcome.model_time.as_millis() as u64);
        v["num_turns"] = json!(outcome.turns);
        if error.is_none() {
            v["result"] = json!(outcome.answer);
        }
        v["usage"] = usage_value(outcome.usage);
        v["permission_denials"] = self.denials(&outcome.calls);
        if let Some(error) = error {
            // Claude's SDK reads every error result's `errors` (strings) and throws
            // without them; Qwen's reads `error`.
            v["errors"] = json!([error["message"]]);
            v["error"] = error;
        }
        v["toolbelt"] = json!({
            "model_ms": millis(outcome.model_time),
            "tools_ms": millis(outcome.tool_time),
            "tool_calls": outcome.calls.iter().map(|c| json!({
                "id": c.call_id, "name": c.name, "arguments": c.arguments,
                "description": c.description, "status": c.state.as_str(),
                "error": c.result.error, "duration_ms": millis(c.duration),
            })).collect::<Vec<_>>(),
            "todos": last_todos(&outcome.calls),
        });
        self.send(v);
    }

    /// The calls refused for want of permission (rules, the mode, the client's answer).
    fn denials(&self, calls: &[CompletedCall]) -> Value {
        calls
            .iter()
            .filter(|c| {
                c.result
                    .error
                    .as_ref()
                    .is_some_and(|e| e.kind == ErrorKind::ExecutionDenied)
            })
            .map(|c| {
                let input = match &c.arguments {
                    Value::Null => self.input_of(&c.call_id),
                    args => args.clone(),
                };
                json!({"tool_name": c.name, "tool_use_id": c.call_id, "tool_input": input})
            })
            .collect()
    }

    /// `-o json`: the kept messages as one array.
    pub fn finish(&self) {
        if self.format != OutputFormat::Json {
            return;
        }
        let kept = self
            .kept
            .lock()
            .map(|mut k| std::mem::take(&mut *k))
            .unwrap_or_default();
        let mut out = std::io::stdout().lock();
        let text = serde_json::to_string_pretty(&Value::Array(kept)).unwrap_or_default();
        check(writeln!(out, "{text}"));
        check(out.flush());
    }
}

/// A control response to request `id`: `Ok` is `success` with the value, `Err` is
/// `error` with the text.
pub fn control_response(id: &str, outcome: Result<Value, String>) -> Value {
    match outcome {
        Ok(response) => json!({"type": "control_response", "response": {
            "subtype": "success", "request_id": id, "response": response}}),
        Err(error) => json!({"type": "control_response", "response": {
            "subtype": "error", "request_id": id, "error": error}}),
    }
}

/// The task list as `todo_write` last set it (`null` when never set).
fn last_todos(calls: &[CompletedCall]) -> Value {
    calls
        .iter()
        .rev()
        .find_map(|c| match &c.result.return_display {
            Display::TodoList { todos } => Some(json!(todos)),
            _ => None,
        })
        .unwrap_or(Value::Null)
}

fn usage_value(usage: Usage) -> Value {
    json!({
        "input_tokens": usage.prompt_tokens,
        "output_tokens": usage.completion_tokens,
        // Counted in input_tokens too (servers that cache: Anthropic, OpenAI).
        "cache_read_input_tokens": usage.cache_read_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        // Counted in output_tokens too (reasoning models: Gemini, OpenAI).
        "reasoning_output_tokens": usage.reasoning_tokens,
        "total_tokens": usage.total_tokens,
    })
}

/// Arguments as JSON when they are, as text otherwise.
fn arguments_value(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0
}

/// A control message: always at once, whatever the format (the client waits for it).
pub fn write_control(v: &Value) {
    write_line(v);
}

/// One line on stdout, flushed; a closed pipe is not an error here.
fn write_line(v: &Value) {
    let mut out = std::io::stdout().lock();
    check(writeln!(out, "{v}"));
    check(out.flush());
}
