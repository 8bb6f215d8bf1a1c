//! What the headless agent prints, in its three formats.
//!
//! - `text`: tool activity and intermediate model text on stderr as it happens, the
//!   final answer on stdout, so `toolbelt "..." > answer.md` keeps only the answer;
//! - `json`: one object on stdout at the end: the answer, every tool call with its
//!   outcome, the task list `todo_write` last set (`todos`), token usage and timings;
//! - `stream-json`: one JSON object per line on stdout as things happen (`init`,
//!   `assistant`, `tool`, `tool_result`), ending with the same `result` object as `json`.
//!
//! A sub-agent's events come as [`AgentEvent::SubAgent`]: in `stream-json` they are the
//! same lines with `agent_id` and `parent_call_id` added (the innermost agent's, for
//! sub-agents of sub-agents); in `text` its tool lines are indented under the call.
//!
//! Write errors (a closed pipe) are ignored: losing output must not crash the run.

use std::io::Write;
use std::time::Duration;

use serde_json::{Value, json};
use toolbelt_agent::{AgentEvent, RunOutcome, StopReason};
use toolbelt_core::Display;
use toolbelt_core::scheduler::{CompletedCall, SchedulerEvent};

use crate::cli::OutputFormat;

/// The first line of `init` in stream-json.
pub struct InitInfo<'a> {
    pub model: &'a str,
    pub tools: Vec<String>,
    pub approval_mode: &'a str,
    /// The saved session's ID, when it is saved.
    pub session_id: Option<&'a str>,
    pub cwd: &'a std::path::Path,
}

pub fn print_init(format: OutputFormat, info: &InitInfo<'_>) {
    if format == OutputFormat::StreamJson {
        line(&json!({
            "type": "system", "subtype": "init", "model": info.model, "tools": info.tools,
            "approval_mode": info.approval_mode, "cwd": info.cwd,
            "session_id": info.session_id,
        }));
    }
}

/// Prints one event as it happens.
pub fn print_event(format: OutputFormat, event: &AgentEvent) {
    match format {
        OutputFormat::Text => text_event(event),
        OutputFormat::StreamJson => {
            if let Some(v) = stream_event(event) {
                line(&v);
            }
        }
        OutputFormat::Json => {}
    }
}

fn text_event(event: &AgentEvent) {
    text_event_at(event, 0);
}

fn text_event_at(event: &AgentEvent, depth: usize) {
    if let AgentEvent::SubAgent { event, .. } = event {
        return text_event_at(event, depth + 1);
    }
    let mut err = std::io::stderr().lock();
    let indent = "  ".repeat(depth);
    match event {
        AgentEvent::Assistant {
            text, tool_calls, ..
        } if !tool_calls.is_empty() && !text.trim().is_empty() => {
            crate::pipes::check(writeln!(err, "{indent}{}", text.trim_end()));
        }
        AgentEvent::Tool(SchedulerEvent::Finished(call)) => {
            let mark = match call.state.as_str() {
                "success" => "✓",
                "cancelled" => "⊘",
                _ => "✗",
            };
            crate::pipes::check(write!(
                err,
                "{indent}{mark} {} {} ({})",
                call.name,
                call.description,
                millis(call.duration)
            ));
            match &call.result.error {
                Some(e) => {
                    let first = e.message.lines().next().unwrap_or("");
                    crate::pipes::check(writeln!(err, ": {}: {first}", e.kind));
                }
                None => {
                    crate::pipes::check(writeln!(err));
                }
            }
        }
        _ => {}
    }
}

fn stream_event(event: &AgentEvent) -> Option<Value> {
    Some(match event {
        AgentEvent::SubAgent {
            agent_id,
            parent_call_id,
            event,
        } => {
            let mut v = stream_event(event)?;
            // The innermost sub-agent's ids win: set only when the inner event has none.
            if v.get("agent_id").is_none() {
                v["agent_id"] = json!(agent_id);
                v["parent_call_id"] = json!(parent_call_id);
            }
            v
        }
        AgentEvent::Assistant {
            turn,
            text,
            tool_calls,
            finish_reason,
            usage,
        } => json!({
            "type": "assistant", "turn": turn, "text": text,
            "tool_calls": tool_calls.iter().map(|c| json!({
                "id": c.id, "name": c.name, "arguments": arguments_value(&c.arguments)
            })).collect::<Vec<_>>(),
            "finish_reason": finish_reason, "usage": usage,
        }),
        AgentEvent::Tool(SchedulerEvent::Finished(call)) => {
            let mut v = call_json(call);
            v["type"] = json!("tool_result");
            v["output"] = json!(call.result.llm_text());
            match &call.result.return_display {
                Display::TodoList { todos } => v["todos"] = json!(todos),
                Display::Plan { plan, approved } => {
                    v["plan"] = json!({"plan": plan, "approved": approved})
                }
                _ => {}
            }
            v
        }
        AgentEvent::Tool(SchedulerEvent::Validated {
            call_id,
            tool,
            description,
        }) => {
            json!({"type": "tool", "event": "validated", "call_id": call_id, "tool": tool, "description": description})
        }
        AgentEvent::Tool(SchedulerEvent::AwaitingApproval { call_id, tool, .. }) => {
            json!({"type": "tool", "event": "awaiting_approval", "call_id": call_id, "tool": tool})
        }
        AgentEvent::Tool(SchedulerEvent::Scheduled { call_id }) => {
            json!({"type": "tool", "event": "scheduled", "call_id": call_id})
        }
        AgentEvent::Tool(SchedulerEvent::Started { call_id, tool, .. }) => {
            json!({"type": "tool", "event": "started", "call_id": call_id, "tool": tool})
        }
        AgentEvent::Tool(SchedulerEvent::Output { call_id, chunk }) => {
            json!({"type": "tool", "event": "output", "call_id": call_id, "chunk": chunk})
        }
        _ => return None,
    })
}

/// Arguments as JSON when they are, as text otherwise.
fn arguments_value(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

fn call_json(call: &CompletedCall) -> Value {
    json!({
        "call_id": call.call_id,
        "name": call.name,
        "arguments": call.arguments,
        "description": call.description,
        "status": call.state,
        "error": call.result.error,
        "duration_ms": call.duration.as_secs_f64() * 1000.0,
    })
}

/// The session's task list as `todo_write` last set it (`null` when never set).
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

fn millis(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

/// The stop reason as a word, and the error text if any.
pub fn stop_words(stop: &StopReason) -> (&'static str, Option<String>) {
    match stop {
        StopReason::Answered => ("answered", None),
        StopReason::MaxTurns(n) => (
            "max_turns",
            Some(format!(
                "reached the limit of {n} model turns (--max-session-turns) before the model answered"
            )),
        ),
        StopReason::Cancelled => ("cancelled", Some("interrupted".to_string())),
        StopReason::ModelFailed(e) => ("model_error", Some(e.to_string())),
        StopReason::PlanProposed => ("plan_proposed", None),
        _ => ("stopped", None),
    }
}

/// The final output.
pub fn print_result(
    format: OutputFormat,
    outcome: &RunOutcome,
    model: &str,
    session_id: Option<&str>,
    total: Duration,
) {
    let (stop, error) = stop_words(&outcome.stop);
    match format {
        OutputFormat::Text => {
            if !outcome.answer.is_empty()
                && matches!(
                    outcome.stop,
                    StopReason::Answered | StopReason::PlanProposed
                )
            {
                let mut out = std::io::stdout().lock();
                crate::pipes::check(writeln!(out, "{}", outcome.answer.trim_end()));
            }
            if let Some(error) = error {
                eprintln!("toolbelt: {error}");
            }
        }
        OutputFormat::Json | OutputFormat::StreamJson => {
            let mut v = json!({
                "answer": outcome.answer,
                "stop_reason": stop,
                "error": error,
                "model": model,
                "session_id": session_id,
                "turns": outcome.turns,
                "tool_calls": outcome.calls.iter().map(call_json).collect::<Vec<_>>(),
                "todos": last_todos(&outcome.calls),
                "usage": outcome.usage,
                "timings": {
                    "total_ms": total.as_secs_f64() * 1000.0,
                    "model_ms": outcome.model_time.as_secs_f64() * 1000.0,
                    "tools_ms": outcome.tool_time.as_secs_f64() * 1000.0,
                },
            });
            if format == OutputFormat::StreamJson {
                v["type"] = json!("result");
                line(&v);
            } else {
                let mut out = std::io::stdout().lock();
                let text = serde_json::to_string_pretty(&v).unwrap_or_default();
                crate::pipes::check(writeln!(out, "{text}"));
            }
        }
    }
}

fn line(v: &Value) {
    let mut out = std::io::stdout().lock();
    crate::pipes::check(writeln!(out, "{v}"));
    crate::pipes::check(out.flush());
}
