//! `toolbelt mcp list`: every configured MCP server, its status (with the reason when it
//! failed) and its tools. Unlike a session it waits for the servers, since their state
//! and tools are its answer; all connect at once, so the answer comes within the slowest
//! `startupTimeout`, whatever the number of servers. It starts each once: a failed
//! server is shown with its reason, not started again.

use std::io::Write;

use crate::cli::{EXIT_OK, EXIT_USAGE, GlobalArgs, McpCommand};
use crate::session::{Session, options};

pub async fn run(global: &GlobalArgs, command: McpCommand) -> u8 {
    let json = match command {
        McpCommand::List { json } => json,
        McpCommand::Serve(args) => return crate::serve_cmd::run(global, args).await,
    };
    let Some(session) = Session::load_or_say(global) else {
        return EXIT_USAGE;
    };
    let servers = match toolbelt_session::connect_mcp(
        &session.env,
        &options(global).mcp,
        &[],
        vec![],
    )
    .await
    {
        Ok(servers) => servers,
        Err(e) => {
            eprintln!("toolbelt: {}", e.0);
            return EXIT_USAGE;
        }
    };
    let reports = servers.reports();
    let text = if json {
        let value = toolbelt_session::listing::mcp_json(&reports);
        let text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| "[]".into());
        format!("{text}\n")
    } else {
        toolbelt_session::listing::mcp_text(&reports)
    };
    let mut out = std::io::stdout().lock();
    crate::pipes::check(write!(out, "{text}"));
    drop(out);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(3), servers.close()).await;
    EXIT_OK
}
