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
//! the text; the rest stays the answer's text.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};

use crate::{FinishReason, ModelTurn, ToolCall};

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

/// Ids for the calls found, unique in the process (the text gives none).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Turns the `<tool_call>` blocks of a turn without calls into calls.
pub(super) fn extract(turn: &mut ModelTurn) {
    if !turn.tool_calls.is_empty() || !turn.text.contains(OPEN) {
        return;
    }
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
    if turn.finish_reason == FinishReason::Stop {
        turn.finish_reason = FinishReason::ToolCalls;
    }
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
        Ok((name, arguments)) => ToolCall {
            id: new_id(),
            name,
            arguments: Value::Object(arguments).to_string(),
        },
        Err(why) => ToolCall {
            id: new_id(),
            name: guess_name(inner).unwrap_or_else(|| "unreadable_tool_call".to_string()),
            // Not JSON on purpose: the scheduler answers with an error and runs nothing.
            arguments: format!(
                "(a <tool_call> in the answer text could not be read: {why}) {inner}"
            ),
        },
    }
}

fn hermes(inner: &str) -> Result<(String, Map<String, Value>), String> {
    let value: Value =
        serde_json::from_str(inner).map_err(|e| format!("its JSON is malformed ({e})"))?;
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
mod tests {
    use super::*;
    use serde_json::json;

    fn turn(text: &str) -> ModelTurn {
        let mut t = ModelTurn {
            text: text.into(),
            ..Default::default()
        };
        extract(&mut t);
        t
    }

    fn calls(t: &ModelTurn) -> Vec<(String, Value)> {
        t.tool_calls
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    serde_json::from_str(&c.arguments).unwrap_or(Value::Null),
                )
            })
            .collect()
    }

    #[test]
    fn hermes_blocks_several_per_answer_become_calls() {
        let t = turn(concat!(
            "Let me look.\n<tool_call>\n{\"name\": \"glob\", \"arguments\": {\"pattern\": \"*.rs\"}}\n</tool_call>\n",
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"/w/a\\\"}\"}\n</tool_call>\n",
            "<tool_call>{\"name\": \"list_directory\", \"parameters\": {\"path\": \"/w\"}}"
        ));
        assert_eq!(
            calls(&t),
            [
                ("glob".to_string(), json!({"pattern": "*.rs"})),
                ("read_file".to_string(), json!({"path": "/w/a"})),
                ("list_directory".to_string(), json!({"path": "/w"})),
            ]
        );
        assert_eq!(t.text, "Let me look.");
        assert_eq!(t.finish_reason, FinishReason::ToolCalls);
        let ids: std::collections::HashSet<_> = t.tool_calls.iter().map(|c| &c.id).collect();
        assert_eq!(ids.len(), 3, "ids are unique");
    }

    #[test]
    fn qwen_coder_blocks_become_calls_with_typed_parameters() {
        let t = turn(concat!(
            "<tool_call>\n<function=read_file>\n<parameter=path>\n/w/src/main.rs\n</parameter>\n",
            "<parameter=offset>\n10\n</parameter>\n</function>\n</tool_call>",
            "<tool_call>\n<function=write_file>\n<parameter=content>\nline 1\nline 2\n</parameter>\n</function>\n</tool_call>"
        ));
        assert_eq!(
            calls(&t),
            [
                (
                    "read_file".to_string(),
                    json!({"path": "/w/src/main.rs", "offset": 10})
                ),
                (
                    "write_file".to_string(),
                    json!({"content": "line 1\nline 2"})
                ),
            ]
        );
        assert_eq!(t.text, "");
    }

    #[test]
    fn a_malformed_block_is_a_call_whose_arguments_are_not_json() {
        let t = turn(concat!(
            "<tool_call>{\"name\": \"glob\", \"arguments\": {\"pattern\": }</tool_call>",
            "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"/w/a\"}}</tool_call>",
            "<tool_call>not even close</tool_call>"
        ));
        assert_eq!(t.tool_calls.len(), 3);
        assert_eq!(t.tool_calls[0].name, "glob");
        assert!(serde_json::from_str::<Value>(&t.tool_calls[0].arguments).is_err());
        assert!(
            t.tool_calls[0].arguments.contains("could not be read"),
            "{}",
            t.tool_calls[0].arguments
        );
        assert_eq!(
            calls(&t)[1],
            ("read_file".to_string(), json!({"path": "/w/a"}))
        );
        assert_eq!(t.tool_calls[2].name, "unreadable_tool_call");
        assert!(serde_json::from_str::<Value>(&t.tool_calls[2].arguments).is_err());
    }

    #[test]
    fn real_calls_and_plain_text_are_left_alone() {
        let plain = turn("The tag <tool_calls> is not it; neither is `tool_call`.");
        assert!(plain.tool_calls.is_empty());
        let mut with_calls = ModelTurn {
            text: "<tool_call>{\"name\": \"x\"}</tool_call>".into(),
            tool_calls: vec![ToolCall {
                id: "a".into(),
                name: "glob".into(),
                arguments: "{}".into(),
            }],
            ..Default::default()
        };
        extract(&mut with_calls);
        assert_eq!(with_calls.tool_calls.len(), 1);
        assert!(with_calls.text.contains("<tool_call>"));
    }
}
