//! What the headless agent prints in `text` format: tool activity and intermediate
//! model text on stderr as it happens, the final answer on stdout, so
//! `toolbelt "..." > answer.md` keeps only the answer. The `json` and `stream-json`
//! formats are the SDK protocol's messages (`stream_json::wire`).
//!
//! A sub-agent's events come as [`AgentEvent::SubAgent`]: in `stream-json` they are the
//! same lines with `agent_id` and `parent_call_id` added (the innermost agent's, for
//! sub-agents of sub-agents); in `text` its tool lines are indented under the call.
//!
//! The lines are `toolbelt_agent::event_text`'s. Write errors (a closed pipe) are
//! ignored: losing output must not crash the run.

use std::io::Write;

use toolbelt_agent::{AgentEvent, RunOutcome, StopReason};

use crate::cli::OutputFormat;

/// Prints one event as it happens.
pub fn print_event(format: OutputFormat, event: &AgentEvent) {
    if format == OutputFormat::Text {
        text_event(event);
    }
}

fn text_event(event: &AgentEvent) {
    if let Some(line) = toolbelt_agent::event_text::line(event) {
        crate::pipes::check(writeln!(std::io::stderr().lock(), "{line}"));
    }
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
