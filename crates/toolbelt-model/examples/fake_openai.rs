//! A loopback OpenAI-compatible server that serves a replay script (the `--model-replay`
//! JSONL format) as streamed Chat Completions, for benchmarks that compare agents on the
//! same script.
//!
//! ```text
//! fake_openai SCRIPT.jsonl [--workspace DIR] [--port-file FILE] [--report FILE] [--lenient]
//!             [--anthropic | --gemini | --responses]
//! ```
//!
//! `--anthropic` serves the script as Anthropic Messages instead (the base URL is then
//! the server's root, as `ANTHROPIC_BASE_URL` wants it), `--gemini` as the Gemini API
//! (for `GOOGLE_GEMINI_BASE_URL`), `--responses` as OpenAI Responses (for
//! `OPENAI_BASE_URL` with `--provider openai-responses`); `--lenient` is for chat
//! completions only.
//! Prints the base URL. `--lenient` answers requests without tools (other agents' side
//! requests) and requests past the end of the script with a short text instead of an
//! error. `--report FILE` is rewritten after every request with the request count and
//! the violations found. Runs until killed.

use std::path::PathBuf;
use std::time::Duration;

use toolbelt_model::fake_gemini::{FakeGemini, GeminiReply};
use toolbelt_model::fake_responses::{FakeResponses, ResponsesReply};
use toolbelt_model::fake_server::{Dialect, FakeOpenAi, Reply};
use toolbelt_model::{ModelTurn, parse_script};

/// Bytes per write, every format alike: about one SSE event, as real servers send them.
const PIECE: usize = 256;

/// The server, in the format asked for.
enum Fake {
    Chat(FakeOpenAi),
    Gemini(FakeGemini),
    Responses(FakeResponses),
}

impl Fake {
    async fn start(args: &[String], turns: Vec<ModelTurn>) -> std::io::Result<Fake> {
        let has = |flag: &str| args.iter().any(|a| a == flag);
        if has("--gemini") {
            let replies = turns.into_iter().map(GeminiReply::Turn).collect();
            let server = FakeGemini::start(replies).await?;
            server.set_piece(PIECE);
            return Ok(Fake::Gemini(server));
        }
        if has("--responses") {
            let replies = turns.into_iter().map(ResponsesReply::Turn).collect();
            let server = FakeResponses::start(replies).await?;
            server.set_piece(PIECE);
            return Ok(Fake::Responses(server));
        }
        let dialect = if has("--anthropic") {
            Dialect::AnthropicMessages
        } else {
            Dialect::OpenAiChat
        };
        let replies = turns
            .into_iter()
            .map(|turn| Reply::Stream { turn, piece: PIECE })
            .collect();
        let server = FakeOpenAi::start_speaking(dialect, "127.0.0.1:0", replies).await?;
        if has("--lenient") {
            server.set_fallback(Reply::text("Done."));
            server.set_side_reply(Reply::text(
                "{\"next_speaker\": \"user\", \"reasoning\": \"done\"}",
            ));
        }
        Ok(Fake::Chat(server))
    }

    fn base_url(&self) -> String {
        match self {
            Fake::Chat(s) => s.base_url(),
            Fake::Gemini(s) => s.base_url(),
            Fake::Responses(s) => s.base_url(),
        }
    }

    /// Requests so far, replies left, violations, the last request's body.
    fn report(&self) -> (usize, usize, Vec<String>, Option<serde_json::Value>) {
        match self {
            Fake::Chat(s) => (
                s.request_count(),
                s.unused(),
                s.violations(),
                s.last_request().map(|r| r.body),
            ),
            Fake::Gemini(s) => {
                let requests = s.requests();
                let last = requests.last().map(|r| r.body.clone());
                (requests.len(), s.unused(), s.violations(), last)
            }
            Fake::Responses(s) => {
                let requests = s.requests();
                let last = requests.last().map(|r| r.body.clone());
                (requests.len(), s.unused(), s.violations(), last)
            }
        }
    }
}

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
            "usage: fake_openai SCRIPT.jsonl [--workspace DIR] [--port-file FILE] [--report FILE] [--lenient] [--anthropic | --gemini | --responses]"
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
    let turns = script
        .iter()
        .enumerate()
        .map(|(i, t)| t.to_model_turn(i + 1))
        .collect();
    let server = match Fake::start(&args, turns).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fake_openai: cannot listen: {e}");
            std::process::exit(1);
        }
    };
    println!("{}", server.base_url());
    if let Some(port_file) = value("--port-file") {
        let _ = std::fs::write(port_file, server.base_url());
    }
    let report = value("--report");
    let mut seen = usize::MAX;
    loop {
        let (n, unused, violations, last) = server.report();
        if n != seen {
            seen = n;
            if let Some(path) = &report {
                let text = serde_json::json!({
                    "requests": n,
                    "unused_replies": unused,
                    "violations": violations,
                    "last_request": last,
                });
                let _ = std::fs::write(path, text.to_string());
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
