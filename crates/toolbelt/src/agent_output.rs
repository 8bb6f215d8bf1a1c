//! What the headless agent prints in `text` format: tool activity and intermediate
//! model text on stderr as it happens, the final answer on stdout, so
//! `toolbelt "..." > answer.md` keeps only the answer. The `json` and `stream-json`
//! formats are the SDK protocol's messages (`stream_json::wire`).
//!
//! A sub-agent's events come as [`AgentEvent::SubAgent`]: in `stream-json` they are the
//! same lines with `agent_id` and `parent_call_id` added (the innermost agent's, for
//! sub-agents of sub-agents); in `text` its tool lines are indented under the call.
//!
//! Write errors (a closed pipe) are ignored: losing output must not crash the run.

use std::io::Write;
use std::time::Duration;

use toolbelt_agent::{AgentEvent, RunOutcome, StopReason};
use toolbelt_core::scheduler::SchedulerEvent;

use crate::cli::OutputFormat;

/// Prints one event as it happens.
pub fn print_event(format: OutputFormat, event: &AgentEvent) {
    if format == OutputFormat::Text {
        text_event(event);
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
    if let Some(message) = event.hook_message() {
        return crate::pipes::check(writeln!(err, "{indent}{message}"));
    }
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

fn millis(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

/// The final output: the answer on stdout, an error on stderr.
pub fn print_result(format: OutputFormat, outcome: &RunOutcome) {
    if format != OutputFormat::Text {
        return;
    }
    let error = outcome.stop.error_text();
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
