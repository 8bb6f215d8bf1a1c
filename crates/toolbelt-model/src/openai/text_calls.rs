//! Tool calls a server left in the answer text.
//!
//! Local servers (vLLM without a tool parser, Ollama, llama.cpp, LM Studio) often return
//! a model's calls as the text its chat template taught it instead of in `tool_calls`.
//! Two forms are read, inside `<tool_call>` … `</tool_call>` (several per answer; the
//! closing tag may be missing at the very end, where it is often the stop word):
//!
//! - Hermes (NousResearch, Qwen 2.5, Qwen3): a JSON object `{"name": …, "arguments": {…}}`
//!   (`parameters` is taken for `arguments`, and arguments given as a JSON string too);
//! - Qwen3-Coder: `<function=NAME>` with `<parameter=KEY>value</parameter>` lines, each
//!   value JSON when it parses as JSON, else the text.
//!
//! A block that is neither becomes a call whose arguments are not JSON, so the scheduler
//! answers it with an error the model reads and nothing runs. The blocks are removed from
//! the text; the rest stays the answer's text. Without a `<tool_call>` tag, Mistral's and
//! Llama 3.x's JSON forms are read (`text_calls/json_forms.rs`, with its guards against
//! JSON that is only mentioned).

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};

use crate::{FinishReason, ModelTurn, ToolCall};

mod json_forms;

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

/// Ids for the calls found, unique in the process (the text gives none).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Turns the calls in the text of a turn without calls into calls; `tools` are the
/// request's tool names (a bare JSON answer is a call only when it names one).
pub(super) fn extract(turn: &mut ModelTurn, tools: &[&str]) {
    if !turn.tool_calls.is_empty() {
        return;
    }
    if turn.text.contains(OPEN) {
        tagged(turn);
    } else if let Some((text, calls)) = json_forms::read(&turn.text, tools) {
        turn.text = text;
        turn.tool_calls = calls;
    } else {
        return;
    }
    if turn.finish_reason == FinishReason::Stop {
        turn.finish_reason = FinishReason::ToolCalls;
    }
}

/// The `<tool_call>` blocks.
fn tagged(turn: &mut ModelTurn) {
    let mut rest = String::new();
    let mut text = turn.text.as_str();
    while let Some(start) = text.find(OPEN) {
        rest.push_str(&text[..start]);
        let after = &text[start + OPEN.len()..];
        let (inner, next) = match after.find(CLOSE) {
            Some(end) => (&after[..end], &after[end + CLOSE.len()..]),
            None => (after, ""),
        };
        turn.tool_calls.push(read_call(inner.trim()));
        text = next;
    }
    rest.push_str(text);
    turn.text = rest.trim().to_string();
}

fn new_id() -> String {
    format!("call_text_{}", NEXT_ID.fetch_add(1, Ordering::Relaxed))
}

fn read_call(inner: &str) -> ToolCall {
    let parsed = if inner.starts_with("<function=") {
        qwen_coder(inner)
    } else {
        hermes(inner)
    };
    match parsed {
        Ok((name, arguments)) => call(name, arguments),
        Err(why) => failed_call(inner, &why),
    }
}

/// A call read from the text.
fn call(name: String, arguments: Map<String, Value>) -> ToolCall {
    ToolCall {
        id: new_id(),
        name,
        arguments: Value::Object(arguments).to_string(),
    }
}

/// A call that could not be read: its arguments are not JSON on purpose, so the
/// scheduler answers the model with an error and runs nothing.
fn failed_call(text: &str, why: &str) -> ToolCall {
    ToolCall {
        id: new_id(),
        name: guess_name(text).unwrap_or_else(|| "unreadable_tool_call".to_string()),
        arguments: format!("(a tool call in the answer text could not be read: {why}) {text}"),
    }
}

fn hermes(inner: &str) -> Result<(String, Map<String, Value>), String> {
    let value: Value =
        serde_json::from_str(inner).map_err(|e| format!("its JSON is malformed ({e})"))?;
    name_and_arguments(&value)
}

/// `name` and `arguments` (or `parameters`; an object, or a string holding one).
fn name_and_arguments(value: &Value) -> Result<(String, Map<String, Value>), String> {
    let name = value
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or("it names no tool (\"name\")")?;
    let arguments = match value.get("arguments").or_else(|| value.get("parameters")) {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => m,
            _ => return Err("its \"arguments\" string is not a JSON object".to_string()),
        },
        Some(_) => return Err("its \"arguments\" is not a JSON object".to_string()),
    };
    Ok((name.to_string(), arguments))
}

fn qwen_coder(inner: &str) -> Result<(String, Map<String, Value>), String> {
    let body = inner.strip_prefix("<function=").unwrap_or(inner);
    let (name, mut body) = body
        .split_once('>')
        .ok_or("its <function=…> tag is not closed")?;
    let name = name.trim();
    if name.is_empty() {
        return Err("its <function=…> names no tool".to_string());
    }
    if !body.contains("</function>") {
        return Err("it has no </function>".to_string());
    }
    let mut arguments = Map::new();
    while let Some(start) = body.find("<parameter=") {
        let after = &body[start + "<parameter=".len()..];
        let (key, value_and_rest) = after
            .split_once('>')
            .ok_or("a <parameter=…> tag is not closed")?;
        let end = value_and_rest
            .find("</parameter>")
            .ok_or_else(|| format!("parameter '{key}' has no </parameter>"))?;
        let raw = value_and_rest[..end]
            .strip_prefix('\n')
            .unwrap_or(&value_and_rest[..end]);
        let raw = raw.strip_suffix('\n').unwrap_or(raw);
        let value = serde_json::from_str::<Value>(raw.trim())
            .ok()
            .filter(|v| !v.is_string())
            .unwrap_or_else(|| Value::String(raw.to_string()));
        arguments.insert(key.trim().to_string(), value);
        body = &value_and_rest[end + "</parameter>".len()..];
    }
    Ok((name.to_string(), arguments))
}

/// The tool a malformed block meant, when its text still says.
fn guess_name(inner: &str) -> Option<String> {
    if let Some(rest) = inner.strip_prefix("<function=") {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            .collect();
        return (!name.is_empty()).then_some(name);
    }
    let at = inner.find("\"name\"")?;
    let after = inner[at + 6..].trim_start().strip_prefix(':')?.trim_start();
    let name: String = after
        .strip_prefix('"')?
        .chars()
        .take_while(|c| *c != '"')
        .collect();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests;
