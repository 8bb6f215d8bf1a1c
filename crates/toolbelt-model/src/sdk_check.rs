//! Runs the official Python SDKs (`google-genai`, `openai`) against the fake servers, so
//! the fakes cannot drift from the real wire formats. `scripts/setup.sh` installs the SDKs,
//! pinned by `tests/fixtures/sdk/requirements.txt`, into `.cache/llm-sdks`; the scripts that
//! drive them are beside the requirements.

use std::path::{Path, PathBuf};

use serde_json::Value;

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

/// Runs `script` with `base_url`; its stdout's JSON lines. Panics with its stderr when it
/// fails.
pub(crate) async fn run(python: &Path, script: &str, base_url: &str) -> Vec<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sdk")
        .join(script);
    let mut command = std::process::Command::new(python);
    command.arg(&script).arg(base_url);
    // The SDKs read keys and endpoints from the environment; the test gives them its own.
    for var in [
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GOOGLE_GENAI_USE_VERTEXAI",
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
