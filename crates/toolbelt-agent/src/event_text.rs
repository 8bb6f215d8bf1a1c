//! An agent's events as the lines a headless run shows on standard error: tool activity
//! (`✓ read_file Read README.md (3 ms)`, a failure's kind and first line), the model's
//! text between calls, and what hooks said; a sub-agent's lines indented under the
//! call that started it. The text is built here and written by the front end.

use std::time::Duration;

use toolbelt_engine::scheduler::SchedulerEvent;

use crate::AgentEvent;

/// The line `event` shows, indented by its sub-agent depth; `None` for events that show
/// nothing in text.
pub fn line(event: &AgentEvent) -> Option<String> {
    line_at(event, 0)
}

fn line_at(event: &AgentEvent, depth: usize) -> Option<String> {
    if let AgentEvent::SubAgent { event, .. } = event {
        return line_at(event, depth + 1);
    }
    let indent = "  ".repeat(depth);
    if let Some(message) = event.hook_message() {
        return Some(format!("{indent}{message}"));
    }
    match event {
        AgentEvent::Assistant {
            text, tool_calls, ..
        } if !tool_calls.is_empty() && !text.trim().is_empty() => {
            Some(format!("{indent}{}", text.trim_end()))
        }
        AgentEvent::Tool(SchedulerEvent::Finished(call)) => {
            let mark = match call.state.as_str() {
                "success" => "✓",
                "cancelled" => "⊘",
                _ => "✗",
            };
            let error = call.result.error.as_ref().map_or(String::new(), |e| {
                format!(": {}: {}", e.kind, e.message.lines().next().unwrap_or(""))
            });
            Some(format!(
                "{indent}{mark} {} {} ({}){error}",
                call.name,
                call.description,
                millis(call.duration)
            ))
        }
        _ => None,
    }
}

fn millis(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}
