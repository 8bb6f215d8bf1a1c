//! What the tests of the wire formats share: a driver that plays the agent through a
//! scripted session, and a runner of the official Python SDKs (`google-genai`, `openai`)
//! against the fake servers, so the fakes cannot drift from the real wire formats. `scripts/setup.sh` installs the SDKs,
//! pinned by `tests/fixtures/sdk/requirements.txt`, into `.cache/llm-sdks`; the scripts that
//! drive them are beside the requirements.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{Message, Model, ModelRequest, ModelTurn, ToolCall, ToolImage};

/// A tool's result as the agent would give it: an error for a file called missing.
pub(crate) fn result_of(call: &ToolCall) -> String {
    if call.arguments.contains("missing.rs") {
        "Error: missing.rs does not exist".into()
    } else {
        format!("output of {}", call.name)
    }
}

/// The image the tests of tool images return (a PNG signature), and its base64.
pub(crate) const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";
pub(crate) const PNG_BASE64: &str = "iVBORw0KGgo=";

/// `request` with `turn` and its first two calls' results, as the agent gives them: the
/// first failed though its text does not say so (the flag must), the second succeeded
/// though its text starts as an error's would, and returned [`PNG`].
pub(crate) fn answer_with_error_and_image(request: &mut ModelRequest, turn: &ModelTurn) {
    request.messages.push(Message::Assistant {
        text: turn.text.clone(),
        tool_calls: turn.tool_calls.clone(),
        reasoning: turn.reasoning.clone(),
    });
    for (n, c) in turn.tool_calls.iter().enumerate() {
        request.messages.push(Message::Tool {
            call_id: c.id.clone(),
            text: if n == 0 {
                "no such directory"
            } else {
                "Error: printed by the program"
            }
            .into(),
            is_error: n == 0,
            images: if n == 1 {
                vec![ToolImage {
                    mime_type: "image/png".into(),
                    data: PNG.to_vec(),
                }]
            } else {
                Vec::new()
            },
        });
    }
}

/// Drives `model` as the agent does (each answer, with its opaque parts, then a result
/// per call) until an answer without calls; the answers.
pub(crate) async fn drive(model: &dyn Model, request: &mut ModelRequest) -> Vec<ModelTurn> {
    let mut turns = Vec::new();
    loop {
        let cancel = CancellationToken::new();
        let answer = model.complete(request, &cancel);
        let turn = tokio::time::timeout(std::time::Duration::from_secs(30), answer)
            .await
            .expect("the client hung")
            .unwrap_or_else(|e| panic!("turn {}: {e}", turns.len() + 1));
        request.messages.push(Message::Assistant {
            text: turn.text.clone(),
            tool_calls: turn.tool_calls.clone(),
            reasoning: turn.reasoning.clone(),
        });
        for c in &turn.tool_calls {
            let text = result_of(c);
            request.messages.push(Message::Tool {
                call_id: c.id.clone(),
                is_error: text.starts_with("Error: "),
                text,
                images: Vec::new(),
            });
        }
        let done = turn.tool_calls.is_empty();
        turns.push(turn);
        if done {
            return turns;
        }
    }
}

/// The virtualenv's Python, or `None` (the test skips) when it is missing outside CI;
/// under CI a missing SDK fails the test.
pub(crate) fn python(sdk: &str) -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.cache/llm-sdks/bin/python");
    if python.exists() {
        return Some(python);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is missing and CI must run this test with the {sdk} SDK; scripts/setup.sh installs it",
        python.display()
    );
    eprintln!(
        "skipped: {} is missing (scripts/setup.sh installs the {sdk} SDK there)",
        python.display()
    );
    None
}

/// Runs `script` with `args`; its stdout's JSON lines. Panics with its stderr when it
/// fails.
pub(crate) async fn run(python: &Path, script: &str, args: &[&str]) -> Vec<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sdk")
        .join(script);
    let mut command = std::process::Command::new(python);
    command.arg(&script).args(args);
    // The SDKs read keys and endpoints from the environment; the test gives them its own.
    // Nor a proxy: the fake listens on loopback.
    for var in [
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        command.env_remove(var);
    }
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("the SDK runner panicked")
        .expect("cannot start the SDK's Python");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{} failed ({}):\n{}\nstdout:\n{stdout}",
        script.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}
