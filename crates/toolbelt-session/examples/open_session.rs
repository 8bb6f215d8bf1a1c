//! Opens a session exactly as the `toolbelt` binary does (settings with folder trust,
//! workspace roots, protected configuration, skills, language servers, built-in,
//! discovered, MCP and declared tools) and runs one tool call through
//! `Scheduler::run`, with nobody to ask: a call that would ask is refused.
//!
//! `cargo run -p toolbelt-session --example open_session -- DIR TOOL 'JSON' [MODE]`,
//! such as `... -- /tmp/w write_file '{"file_path": "/tmp/w/a.txt", "content": "hi"}'
//! auto-edit`.

use std::path::Path;
use toolbelt_engine::scheduler::CallRules;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolbelt_engine::{
    scheduler::CompletedCall, scheduler::NobodyToAsk, scheduler::Scheduler,
    scheduler::SchedulerConfig, scheduler::ToolCallRequest, scheduler::TurnInfo,
};
use toolbelt_session::{Policy, Session, SessionOptions};

/// Runs `name(arguments)` in the session of `dir` under approval mode `mode` (`None`:
/// the settings'), and returns the call's one result.
pub async fn run(
    dir: &Path,
    name: &str,
    arguments: &Value,
    mode: Option<&str>,
) -> Result<CompletedCall, String> {
    let mut session = Session::open(dir, SessionOptions::default()).map_err(|e| e.0)?;
    session.load_extensions(true).await.map_err(|e| e.0)?;
    let policy = Policy {
        approval_mode: mode.map(str::to_string),
        ..Policy::default()
    };
    let (permissions, mode) = session
        .permissions(&policy, "--approval-mode")
        .map_err(|e| e.to_string())?;
    session.apply_when(mode);
    let scheduler = Scheduler::new(
        session.env.clone(),
        SchedulerConfig::new(CallRules::new(permissions, mode, None, None))
            .approver(None)
            .nobody_to_ask(NobodyToAsk {
                why: "this example asks nobody".to_string(),
                how: "pass another approval mode".to_string(),
            }),
    );
    let call = ToolCallRequest::new("call-1", name, arguments);
    let cancel = CancellationToken::new();
    let mut done = scheduler
        .run(&session.registry, vec![call], TurnInfo::default(), &cancel)
        .await;
    session.close().await;
    done.pop()
        .ok_or_else(|| "the scheduler gave no result".to_string())
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, name, json, rest @ ..] = args.as_slice() else {
        eprintln!("usage: open_session DIR TOOL JSON [MODE]");
        return std::process::ExitCode::from(2);
    };
    let arguments: Value = match serde_json::from_str(json) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("open_session: the arguments are not JSON: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    match run(
        Path::new(dir),
        name,
        &arguments,
        rest.first().map(String::as_str),
    )
    .await
    {
        Ok(done) => {
            println!("{:?}: {}", done.state, done.result.llm_text());
            std::process::ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("open_session: {why}");
            std::process::ExitCode::from(2)
        }
    }
}
