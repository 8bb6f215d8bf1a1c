//! Real-looking answers of each form, the near misses that must stay text, and a
//! property: no text makes the reading panic.

use super::*;
use proptest::prelude::*;
use serde_json::json;

/// The tools of the request the answers are to.
const TOOLS: &[&str] = &[
    "glob",
    "read_file",
    "list_directory",
    "shell",
    "grep_search",
];

fn turn(text: &str) -> ModelTurn {
    let mut t = ModelTurn {
        text: text.into(),
        ..Default::default()
    };
    extract(&mut t, TOOLS);
    t
}

fn call_of(name: &str, arguments: Value) -> (String, Value) {
    (name.to_string(), arguments)
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
    extract(&mut with_calls, TOOLS);
    assert_eq!(with_calls.tool_calls.len(), 1);
    assert!(with_calls.text.contains("<tool_call>"));
}

#[test]
fn mistral_json_arrays_become_calls() {
    let t = turn(concat!(
        "I'll look at the layout first.[TOOL_CALLS] [{\"name\": \"glob\", \"arguments\": {\"pattern\": \"**/*.rs\"}}, ",
        "{\"name\": \"read_file\", \"arguments\": {\"path\": \"/w/Cargo.toml\"}, \"id\": \"a1B2c3D4e\"}]</s>"
    ));
    assert_eq!(
        calls(&t),
        [
            call_of("glob", json!({"pattern": "**/*.rs"})),
            call_of("read_file", json!({"path": "/w/Cargo.toml"})),
        ]
    );
    assert_eq!(t.text, "I'll look at the layout first.");
    assert_eq!(t.finish_reason, FinishReason::ToolCalls);
}

#[test]
fn mistral_name_args_segments_become_calls() {
    let t = turn(concat!(
        "[TOOL_CALLS]shell[ARGS]{\"command\": \"cargo test; echo done\"}",
        "[TOOL_CALLS]list_directory[ARGS]{\"path\": \"/w\"}"
    ));
    assert_eq!(
        calls(&t),
        [
            call_of("shell", json!({"command": "cargo test; echo done"})),
            call_of("list_directory", json!({"path": "/w"})),
        ]
    );
    assert_eq!(t.text, "");
}

#[test]
fn a_broken_mistral_call_is_reported_not_run() {
    // Cut off by max_tokens mid-arguments.
    let t = turn("[TOOL_CALLS][{\"name\": \"glob\", \"arguments\": {\"pattern\": \"*.r");
    assert_eq!(t.tool_calls.len(), 1);
    assert_eq!(t.tool_calls[0].name, "glob");
    assert!(serde_json::from_str::<Value>(&t.tool_calls[0].arguments).is_err());
    assert!(
        t.tool_calls[0].arguments.contains("malformed"),
        "{}",
        t.tool_calls[0].arguments
    );
    let t = turn("[TOOL_CALLS]read_file[ARGS]{\"path\": ");
    assert_eq!(t.tool_calls.len(), 1);
    assert!(serde_json::from_str::<Value>(&t.tool_calls[0].arguments).is_err());
}

#[test]
fn llama_python_tag_calls_become_calls() {
    let t = turn(
        "<|python_tag|>{\"name\": \"grep_search\", \"parameters\": {\"pattern\": \"fn main\"}}<|eom_id|>",
    );
    assert_eq!(
        calls(&t),
        [call_of("grep_search", json!({"pattern": "fn main"}))]
    );
    assert_eq!(t.finish_reason, FinishReason::ToolCalls);
    let t = turn(concat!(
        "<|python_tag|>{\"name\": \"glob\", \"parameters\": {\"pattern\": \"*.toml\"}}; ",
        "{\"name\": \"read_file\", \"parameters\": {\"path\": \"/w/a; b\"}}"
    ));
    assert_eq!(
        calls(&t),
        [
            call_of("glob", json!({"pattern": "*.toml"})),
            call_of("read_file", json!({"path": "/w/a; b"})),
        ]
    );
    // A malformed one after the tag is reported to the model.
    let t = turn("<|python_tag|>{\"name\": \"glob\", \"parameters\": {\"pattern\": }}");
    assert_eq!(t.tool_calls.len(), 1);
    assert!(serde_json::from_str::<Value>(&t.tool_calls[0].arguments).is_err());
}

#[test]
fn a_bare_llama_call_as_the_whole_answer_becomes_a_call() {
    let t = turn("{\"name\": \"read_file\", \"parameters\": {\"path\": \"/w/src/main.rs\"}}");
    assert_eq!(
        calls(&t),
        [call_of("read_file", json!({"path": "/w/src/main.rs"}))]
    );
    assert_eq!(t.text, "");
    let t = turn(concat!(
        "\n{\"type\": \"function\", \"name\": \"shell\", \"parameters\": {\"command\": \"ls; pwd\"}};",
        " {\"name\": \"glob\", \"arguments\": {\"pattern\": \"*\"}}\n"
    ));
    assert_eq!(
        calls(&t),
        [
            call_of("shell", json!({"command": "ls; pwd"})),
            call_of("glob", json!({"pattern": "*"})),
        ]
    );
}

#[test]
fn json_that_is_only_mentioned_stays_text() {
    for text in [
        // Prose around the object.
        "The call looks like {\"name\": \"glob\", \"parameters\": {\"pattern\": \"*.rs\"}} in Llama's format.",
        // In a code fence.
        "```json\n{\"name\": \"glob\", \"parameters\": {\"pattern\": \"*.rs\"}}\n```",
        // Not a tool of the request.
        "{\"name\": \"Alice\", \"parameters\": {\"age\": 3}}",
        // Another key, or arguments that are not an object, or none.
        "{\"name\": \"glob\", \"parameters\": {\"pattern\": \"*\"}, \"note\": \"x\"}",
        "{\"name\": \"glob\", \"parameters\": \"*.rs\"}",
        "{\"name\": \"glob\"}",
        // One good object and a bad one.
        "{\"name\": \"glob\", \"parameters\": {}}; {\"name\": \"nope\", \"parameters\": {}}",
        // Malformed without a marker.
        "{\"name\": \"glob\", \"parameters\": {",
        // The markers in prose.
        "Mistral marks calls with the [TOOL_CALLS] token.",
        "The [TOOL_CALLS] [1, 2] list and <tool_calls> are not calls.",
        // Code for Llama's built-in interpreter.
        "<|python_tag|>brave_search.call(query=\"rust proptest\")<|eom_id|>",
        "{}",
        "",
    ] {
        let t = turn(text);
        assert!(
            t.tool_calls.is_empty(),
            "{text:?} became {:?}",
            t.tool_calls
        );
        assert_eq!(t.text, text);
        assert_eq!(t.finish_reason, FinishReason::Stop);
    }
    // With no tools in the request, a bare object is never a call.
    let mut t = ModelTurn {
        text: "{\"name\": \"glob\", \"parameters\": {}}".into(),
        ..Default::default()
    };
    extract(&mut t, &[]);
    assert!(t.tool_calls.is_empty());
}

/// Pieces of every form, so the property reaches the parsers, not just plain text.
fn piece() -> impl Strategy<Value = String> {
    let fixed = prop::sample::select(vec![
        "[TOOL_CALLS]",
        "[ARGS]",
        "<|python_tag|>",
        "<|eom_id|>",
        "<tool_call>",
        "</tool_call>",
        "<function=",
        "<parameter=",
        "{\"name\": \"glob\", \"parameters\": ",
        "{\"name\": ",
        "\"name\"",
        "[{",
        "}]",
        "; ",
        "{}",
    ]);
    prop_oneof![fixed.prop_map(str::to_string), ".{0,8}"]
}

proptest! {
    #[test]
    fn no_text_makes_the_reading_panic(pieces in prop::collection::vec(piece(), 0..12)) {
        let text = pieces.concat();
        let t = turn(&text);
        for c in &t.tool_calls {
            prop_assert!(!c.id.is_empty() && !c.name.is_empty());
        }
        if t.tool_calls.is_empty() {
            prop_assert_eq!(t.text, text);
        }
    }
}
