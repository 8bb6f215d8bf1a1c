//! The JSON forms of tool calls in text, written by models whose chat templates have no
//! `<tool_call>` tag:
//!
//! - Mistral: `[TOOL_CALLS]` then a JSON array of `{"name": …, "arguments": {…}}`, or
//!   (newer tokenizers) `[TOOL_CALLS]NAME[ARGS]{…}`, repeated for several calls;
//! - Llama 3.x: `<|python_tag|>` then `{"name": …, "parameters": {…}}` (several joined
//!   by `;`), or that object alone as the whole answer.
//!
//! The two markers are special tokens a model writes only to call, so what follows them
//! is read as calls and a malformed one is reported to the model. The bare object has
//! no marker: it is a call only when it is the whole answer, has no key but `name`,
//! `parameters` (or `arguments`) and `type: "function"`, and names a tool of the
//! request. Anything else (JSON in prose, in a code fence, or naming no tool offered)
//! stays the answer's text.

use serde_json::Value;

use super::{call, failed_call};
use crate::ToolCall;

const MISTRAL: &str = "[TOOL_CALLS]";
const MISTRAL_ARGS: &str = "[ARGS]";
const LLAMA: &str = "<|python_tag|>";
/// Llama's end-of-message tokens, which a server may leave after a call.
const LLAMA_ENDS: &[&str] = &["<|eom_id|>", "<|eot_id|>"];

/// The calls of `text` in one of these forms and the text left; `None` when it holds none.
pub(super) fn read(text: &str, tools: &[&str]) -> Option<(String, Vec<ToolCall>)> {
    if let Some(at) = text.find(MISTRAL) {
        let calls = mistral(&text[at + MISTRAL.len()..])?;
        return Some((text[..at].trim().to_string(), calls));
    }
    if let Some(at) = text.find(LLAMA) {
        let mut rest = text[at + LLAMA.len()..].trim();
        while let Some(end) = LLAMA_ENDS.iter().find_map(|e| rest.strip_suffix(e)) {
            rest = end.trim_end();
        }
        if !rest.starts_with('{') {
            // Code for Llama's built-in interpreter, which toolbelt does not have.
            return None;
        }
        return Some((text[..at].trim().to_string(), objects(rest)));
    }
    bare(text.trim(), tools).map(|calls| (String::new(), calls))
}

/// After `[TOOL_CALLS]`: a JSON array, or `NAME[ARGS]{…}` segments.
fn mistral(rest: &str) -> Option<Vec<ToolCall>> {
    let rest = rest.trim_start();
    if let Some(inside) = rest.strip_prefix('[') {
        // `[TOOL_CALLS] [1, 2]` in prose is not a list of calls; a list that opens with
        // an object is, even when it breaks off later.
        if !inside.trim_start().starts_with('{') {
            return None;
        }
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        return Some(match values.next() {
            Some(Ok(Value::Array(items))) if !items.is_empty() => {
                items.iter().map(call_of).collect()
            }
            Some(Ok(_)) => vec![failed_call(rest, "it is not a JSON array of calls")],
            Some(Err(e)) => vec![failed_call(rest, &format!("its JSON is malformed ({e})"))],
            None => vec![failed_call(rest, "it is empty")],
        });
    }
    let first = rest.split(MISTRAL).next().unwrap_or("");
    let (name, _) = first.split_once(MISTRAL_ARGS)?;
    if !is_name(name) {
        return None;
    }
    Some(
        rest.split(MISTRAL)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(mistral_segment)
            .collect(),
    )
}

/// `NAME[ARGS]{…}`.
fn mistral_segment(segment: &str) -> ToolCall {
    let Some((name, arguments)) = segment.split_once(MISTRAL_ARGS) else {
        return failed_call(segment, "it has no [ARGS]");
    };
    match serde_json::from_str::<Value>(arguments.trim()) {
        Ok(Value::Object(m)) if is_name(name) => call(name.to_string(), m),
        Ok(Value::Object(_)) => failed_call(segment, "its tool name is not a name"),
        Ok(_) => failed_call(segment, "its arguments are not a JSON object"),
        Err(e) => failed_call(segment, &format!("its arguments are malformed JSON ({e})")),
    }
}

/// JSON objects joined by `;` (Llama's parallel calls); one that does not parse ends
/// the list as a malformed call.
fn objects(text: &str) -> Vec<ToolCall> {
    let mut calls = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        match values.next() {
            Some(Ok(value)) => {
                calls.push(call_of(&value));
                rest = rest[values.byte_offset()..].trim_start();
                rest = rest.strip_prefix(';').unwrap_or(rest).trim_start();
            }
            Some(Err(e)) => {
                calls.push(failed_call(rest, &format!("its JSON is malformed ({e})")));
                break;
            }
            None => break,
        }
    }
    calls
}

/// The whole answer as Llama's calls, or `None` when any part of it is not one.
fn bare(text: &str, tools: &[&str]) -> Option<Vec<ToolCall>> {
    if !text.starts_with('{') || !text.ends_with('}') {
        return None;
    }
    let mut calls = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let value = values.next()?.ok()?;
        if !is_bare_call(&value, tools) {
            return None;
        }
        calls.push(call_of(&value));
        rest = rest[values.byte_offset()..].trim_start();
        if !rest.is_empty() {
            rest = rest.strip_prefix(';')?.trim_start();
        }
    }
    Some(calls)
}

/// One `{"name": …, "parameters": {…}}` naming a tool of the request, nothing more.
fn is_bare_call(value: &Value, tools: &[&str]) -> bool {
    let Value::Object(m) = value else {
        return false;
    };
    let name_ok = m
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(|n| tools.contains(&n));
    let arguments = m.get("parameters").or_else(|| m.get("arguments"));
    let keys_ok = m.iter().all(|(k, v)| match k.as_str() {
        "name" | "parameters" | "arguments" => true,
        "type" => v == "function",
        _ => false,
    });
    name_ok && keys_ok && matches!(arguments, Some(Value::Object(_)))
}

/// A call from one JSON value of the list (`arguments` or `parameters`).
fn call_of(value: &Value) -> ToolCall {
    match super::name_and_arguments(value) {
        Ok((name, arguments)) => call(name, arguments),
        Err(why) => failed_call(&value.to_string(), &why),
    }
}

/// A tool name as the templates write one.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}
