//! A loopback OpenAI-compatible server that serves a replay script (the `--model-replay`
//! JSONL format) as streamed Chat Completions, for benchmarks that compare agents on the
//! same script.
//!
//! ```text
//! fake_openai SCRIPT.jsonl [--workspace DIR] [--port-file FILE] [--report FILE] [--lenient] [--anthropic]
//! ```
//!
//! `--anthropic` serves the script as Anthropic Messages instead (the base URL is then
//! the server's root, as `ANTHROPIC_BASE_URL` wants it).
//! Prints the base URL. `--lenient` answers requests without tools (other agents' side
//! requests) and requests past the end of the script with a short text instead of an
//! error. `--report FILE` is rewritten after every request with the request count and
//! the violations found. Runs until killed.

use std::path::PathBuf;
use std::time::Duration;

use toolbelt_model::fake_server::{Dialect, FakeOpenAi, Reply};
use toolbelt_model::parse_script;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let Some(script_path) = args.first() else {
        eprintln!(
            "usage: fake_openai SCRIPT.jsonl [--workspace DIR] [--port-file FILE] [--report FILE] [--lenient] [--anthropic]"
        );
        std::process::exit(2);
    };
    let workspace = value("--workspace").map(PathBuf::from);
    let text = match std::fs::read_to_string(script_path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("fake_openai: cannot read {script_path}: {e}");
            std::process::exit(2);
        }
    };
    let script = match parse_script(&text, workspace.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fake_openai: {script_path}: {e}");
            std::process::exit(2);
        }
    };
    let replies = script
        .iter()
        .enumerate()
        .map(|(i, t)| Reply::Stream {
            turn: t.to_model_turn(i + 1),
            // About one SSE event per write, as real servers send them.
            piece: 256,
        })
        .collect();
    let dialect = if args.iter().any(|a| a == "--anthropic") {
        Dialect::AnthropicMessages
    } else {
        Dialect::OpenAiChat
    };
    let server = match FakeOpenAi::start_speaking(dialect, "127.0.0.1:0", replies).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fake_openai: cannot listen: {e}");
            std::process::exit(1);
        }
    };
    if args.iter().any(|a| a == "--lenient") {
        server.set_fallback(Reply::text("Done."));
        server.set_side_reply(Reply::text(
            "{\"next_speaker\": \"user\", \"reasoning\": \"done\"}",
        ));
    }
    println!("{}", server.base_url());
    if let Some(port_file) = value("--port-file") {
        let _ = std::fs::write(port_file, server.base_url());
    }
    let report = value("--report");
    let mut seen = usize::MAX;
    loop {
        let n = server.request_count();
        if n != seen {
            seen = n;
            if let Some(path) = &report {
                let text = serde_json::json!({
                    "requests": n,
                    "unused_replies": server.unused(),
                    "violations": server.violations(),
                    "last_request": server.last_request().map(|r| r.body),
                });
                let _ = std::fs::write(path, text.to_string());
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
