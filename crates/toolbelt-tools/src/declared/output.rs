//! A command binding's output as a tool result.
//!
//! Plain stdout is the text. A JSON object with a `content` array is VS Code's
//! `LanguageModelToolResult`: text parts, and data parts (base64) of which images go to
//! the model as images, JSON and text as text, anything else as a short note. Empty
//! stdout with exit 0 is VS Code's "the tool returned nothing", which it treats as a
//! cancellation.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use toolbelt_core::{ErrorKind, Part, ToolResult};

use crate::discovered::{describe_end, success_with_stderr};
use toolbelt_process::run::{RunEnd, RunOutput, signal_name};

pub(crate) fn command_result(name: &str, output: RunOutput) -> ToolResult {
    let stdout = output.stdout_text();
    let stderr = output.stderr_text();
    if output.end != RunEnd::Exited(0) {
        return failure(name, &output.end, &stdout, &stderr);
    }
    if stdout.trim().is_empty() {
        return ToolResult::err(
            ErrorKind::Cancelled,
            format!(
                "Declared tool \"{name}\" returned nothing (empty output); as in VS Code, a tool that returns nothing counts as cancelled."
            ),
        );
    }
    let (parts, display) = match content_parts(&stdout) {
        Some(parsed) => parsed,
        None => (vec![Part::text(stdout.clone())], stdout),
    };
    success_with_stderr(parts, display, &stderr)
}

fn failure(name: &str, end: &RunEnd, stdout: &str, stderr: &str) -> ToolResult {
    let (code, why) = match end {
        RunEnd::Exited(code) => (code.to_string(), format!("exited with code {code}")),
        RunEnd::Signaled(signal) => (
            "(none)".to_string(),
            format!("killed by {}", signal_name(*signal)),
        ),
        other => ("(none)".to_string(), describe_end(other)),
    };
    let kind = match end {
        RunEnd::Cancelled => ErrorKind::Cancelled,
        RunEnd::TimedOut(_) => ErrorKind::Timeout,
        _ => ErrorKind::ExecutionFailed,
    };
    ToolResult::err(
        kind,
        format!(
            "Declared tool \"{name}\" failed: {why}.\nStdout: {}\nStderr: {}\nExit Code: {code}",
            or_empty(stdout),
            or_empty(stderr)
        ),
    )
}

fn or_empty(text: &str) -> &str {
    if text.trim().is_empty() {
        "(empty)"
    } else {
        text.trim_end()
    }
}

/// VS Code's result parts, or `None` when stdout is not a `{"content": [...]}` object
/// (then it is plain text).
fn content_parts(stdout: &str) -> Option<(Vec<Part>, String)> {
    let value: Value = serde_json::from_str(stdout.trim()).ok()?;
    let items = value.get("content")?.as_array()?;
    let mut parts = Vec::new();
    let mut display = Vec::new();
    for item in items {
        match item.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(text) = item.get("value").and_then(Value::as_str) {
                    parts.push(Part::text(text));
                    display.push(text.to_string());
                }
            }
            Some("data") => {
                let mime = item
                    .get("mimeType")
                    .and_then(Value::as_str)
                    .unwrap_or("application/octet-stream")
                    .trim()
                    .to_ascii_lowercase();
                let encoded = item.get("data").and_then(Value::as_str).unwrap_or_default();
                let Ok(data) = STANDARD.decode(encoded.trim()) else {
                    let note =
                        format!("[a {mime} data part that is not valid base64 was left out]");
                    display.push(note.clone());
                    parts.push(Part::text(note));
                    continue;
                };
                if mime.starts_with("image/") {
                    display.push(format!("[image: {mime}, {} bytes]", data.len()));
                    parts.push(Part::InlineData {
                        mime_type: mime,
                        data,
                        display_name: None,
                    });
                } else if is_textual(&mime) {
                    let text = String::from_utf8_lossy(&data).into_owned();
                    display.push(text.clone());
                    parts.push(Part::text(text));
                } else {
                    let note = format!("[a {mime} data part of {} bytes, not shown]", data.len());
                    display.push(note.clone());
                    parts.push(Part::text(note));
                }
            }
            // Unknown part types (prompt-tsx, future ones) are ignored, as VS Code's
            // `unknown` in the content array allows.
            _ => {}
        }
    }
    if parts.is_empty() {
        parts.push(Part::text("(the tool returned no content)"));
    }
    Some((parts, display.join("\n\n")))
}

fn is_textual(mime: &str) -> bool {
    let essence = mime.split(';').next().unwrap_or(mime).trim();
    essence == "application/json" || essence.ends_with("+json") || essence.starts_with("text/")
}
