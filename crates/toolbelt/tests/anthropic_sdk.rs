//! The fake Anthropic Messages server (`toolbelt_model::fake_server`, dialect
//! `AnthropicMessages`) driven by Anthropic's own Python SDK (`anthropic`, pinned in
//! `crates/toolbelt-model/tests/fixtures/sdk/requirements.txt`, installed by
//! `scripts/setup.sh` into `.cache/llm-sdks`): the SDK must parse every scripted turn (thinking and
//! redacted thinking, text, several tool uses, a `max_tokens` stop, a whole message),
//! retry the 429 and 529 after their `retry-after`, raise the error event sent
//! mid-stream, and send back what it parsed in a way the fake's request checks accept.
//! So the fake, which the client's own tests use, cannot drift from the real wire format.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolbelt_model::fake_server::{Dialect, FakeOpenAi, Reply};
use toolbelt_model::{FinishReason, ModelTurn, OpaquePart, ToolCall, Usage};

/// The virtualenv's Python, or why it is not there. Under CI a missing SDK fails.
fn python() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root.join(".cache/llm-sdks/bin/python");
    if python.exists() {
        return Some(python);
    }
    let why = format!(
        "{} is missing (scripts/setup.sh installs the anthropic SDK there)",
        python.display()
    );
    assert!(
        std::env::var_os("CI").is_none(),
        "the Anthropic SDK test must run under CI: {why}"
    );
    eprintln!("skipped: {why}");
    None
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.to_string(),
    }
}

fn thinking(text: &str, signature: &str) -> OpaquePart {
    OpaquePart {
        format: "anthropic".into(),
        value: json!({"type": "thinking", "thinking": text, "signature": signature}),
    }
}

/// Thinking (plain and redacted), text and two tool uses, with cache counts.
fn first_turn() -> ModelTurn {
    ModelTurn {
        text: "Searching twice — «ünïcode».".into(),
        tool_calls: vec![
            call("toolu_01", "glob", json!({"pattern": "**/*.rs"})),
            call("toolu_02", "read_file", json!({"path": "/w/src/main.rs"})),
        ],
        finish_reason: FinishReason::ToolCalls,
        usage: Some(Usage {
            prompt_tokens: 2100,
            completion_tokens: 40,
            total_tokens: 2140,
            cache_read_tokens: 2000,
            cache_write_tokens: 50,
            ..Default::default()
        }),
        reasoning: vec![
            thinking("The user wants main; look both ways.", "c2lnbmF0dXJlLTE="),
            OpaquePart {
                format: "anthropic".into(),
                value: json!({"type": "redacted_thinking", "data": "RU5DUllQVEVE"}),
            },
        ],
    }
}

fn three_calls() -> ModelTurn {
    ModelTurn {
        tool_calls: vec![
            call("toolu_03", "glob", json!({"pattern": "*.toml"})),
            call("toolu_04", "read_file", json!({"path": "/w/Cargo.toml"})),
            call("toolu_05", "read_file", json!({"path": "/w/README.md"})),
        ],
        finish_reason: FinishReason::ToolCalls,
        reasoning: vec![thinking("Three at once.", "c2lnbmF0dXJlLTI=")],
        ..Default::default()
    }
}

fn text_turn(text: &str, finish_reason: FinishReason) -> ModelTurn {
    ModelTurn {
        text: text.into(),
        finish_reason,
        reasoning: vec![thinking("Wrapping up.", "c2lnbmF0dXJlLTM=")],
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_sdk_parses_every_scripted_turn_of_the_fake() {
    let Some(python) = python() else { return };
    let replies = vec![
        Reply::Status {
            status: 429,
            retry_after: Some("0".into()),
            message: "rate limited".into(),
        },
        Reply::Status {
            status: 529,
            retry_after: Some("1".into()),
            message: "Overloaded".into(),
        },
        Reply::Stream {
            turn: first_turn(),
            piece: 5,
        },
        Reply::StreamError {
            turn: three_calls(),
            events: 5,
            kind: "overloaded_error".into(),
            message: "Overloaded".into(),
        },
        Reply::Stream {
            turn: three_calls(),
            piece: 64,
        },
        Reply::turn(text_turn("Cut off he", FinishReason::Length)),
        Reply::Whole(text_turn(
            "Done: main is in src/main.rs.",
            FinishReason::Stop,
        )),
    ];
    let server = FakeOpenAi::start_speaking(Dialect::AnthropicMessages, "127.0.0.1:0", replies)
        .await
        .unwrap();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/anthropic_sdk/drive.py");
    let base_url = server.base_url();
    let started = Instant::now();
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(python)
                .arg(script)
                .args([base_url.as_str(), "5"])
                .env_remove("ANTHROPIC_API_KEY")
                .env_remove("ANTHROPIC_BASE_URL")
                .output()
                .unwrap()
        }),
    )
    .await
    .expect("the SDK hung")
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let steps: Value = serde_json::from_slice(&output.stdout).unwrap();
    let steps = steps.as_array().unwrap();
    assert_eq!(steps.len(), 5, "{steps:#?}");

    // Step 1: after the 429 and the 529 (retry-after: 1 waited out), the whole turn.
    assert!(started.elapsed() >= Duration::from_millis(950));
    assert_eq!(steps[0]["stop_reason"], "tool_use");
    assert_eq!(
        steps[0]["content"],
        json!([
            {"type": "thinking", "thinking": "The user wants main; look both ways.", "signature": "c2lnbmF0dXJlLTE="},
            {"type": "redacted_thinking", "data": "RU5DUllQVEVE"},
            {"type": "text", "text": "Searching twice — «ünïcode»."},
            {"type": "tool_use", "id": "toolu_01", "name": "glob", "input": {"pattern": "**/*.rs"}},
            {"type": "tool_use", "id": "toolu_02", "name": "read_file", "input": {"path": "/w/src/main.rs"}},
        ])
    );
    let usage = &steps[0]["usage"];
    assert_eq!(usage["input_tokens"], 50);
    assert_eq!(usage["cache_read_input_tokens"], 2000);
    assert_eq!(usage["cache_creation_input_tokens"], 50);
    assert_eq!(usage["output_tokens"], 40);
    for event in [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ] {
        assert!(
            steps[0]["events"]
                .as_array()
                .unwrap()
                .contains(&json!(event)),
            "{event}: {}",
            steps[0]["events"]
        );
    }
    // Step 2: the error event mid-stream reached the application as an error.
    assert!(
        steps[1]["message"]
            .as_str()
            .unwrap()
            .contains("overloaded_error"),
        "{}",
        steps[1]
    );
    // Step 3: three tool uses in one turn; step 4: a max_tokens stop; step 5: whole.
    let names: Vec<&str> = steps[2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["name"].as_str())
        .collect();
    assert_eq!(names, ["glob", "read_file", "read_file"]);
    assert_eq!(steps[3]["stop_reason"], "max_tokens");
    assert_eq!(steps[3]["content"][1]["text"], "Cut off he");
    assert_eq!(steps[4]["stop_reason"], "end_turn");
    assert_eq!(
        steps[4]["content"][1]["text"],
        "Done: main is in src/main.rs."
    );

    // What the SDK sent back passed every check: results for each tool use (the first
    // marked is_error), the thinking blocks unchanged, the headers the API wants.
    assert_eq!(server.violations(), Vec::<String>::new());
    assert_eq!(server.unused(), 0);
    let requests = server.requests();
    assert_eq!(requests.len(), 7);
    let answered = &requests[3].body["messages"][2]["content"];
    assert_eq!(answered[0]["is_error"], true, "{answered}");
}
