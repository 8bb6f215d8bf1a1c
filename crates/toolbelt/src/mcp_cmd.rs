//! `toolbelt mcp list`: every configured MCP server, its status (with the reason when it
//! failed) and its tools. All servers connect at once, so the answer comes within the
//! slowest connect timeout, whatever the number of servers.

use std::io::Write;

use serde_json::json;
use toolbelt_mcp::ServerStatus;

use crate::cli::{EXIT_OK, EXIT_USAGE, GlobalArgs, McpCommand};
use crate::session::{Session, options};

pub async fn run(global: &GlobalArgs, command: McpCommand) -> u8 {
    let json = match command {
        McpCommand::List { json } => json,
        McpCommand::Serve(args) => return crate::serve_cmd::run(global, args).await,
    };
    let session = match Session::load(global) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("toolbelt: {}", e.0);
            return EXIT_USAGE;
        }
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
    let mut out = std::io::stdout().lock();
    if json {
        let value: Vec<_> = reports
            .iter()
            .map(|r| {
                let (status, reason) = match &r.status {
                    ServerStatus::Failed(why) => ("failed", Some(why.clone())),
                    other => (status_word(other), None),
                };
                json!({
                    "name": r.alias,
                    "transport": r.transport,
                    "target": r.target,
                    "status": status,
                    "reason": reason,
                    "tools": r.tools.iter().map(|(name, remote, description)| json!({
                        "name": name, "serverToolName": remote, "description": description
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| "[]".into());
        crate::pipes::check(writeln!(out, "{text}"));
    } else if reports.is_empty() {
        crate::pipes::check(writeln!(
            out,
            "No MCP servers configured (mcpServers in .qwen/settings.json, or --mcp-config)."
        ));
    } else {
        for r in &reports {
            crate::pipes::check(writeln!(
                out,
                "{} ({} {}): {}",
                r.alias, r.transport, r.target, r.status
            ));
            for (name, _, description) in &r.tools {
                let first = description.lines().next().unwrap_or_default();
                crate::pipes::check(writeln!(out, "  {name}  {first}"));
            }
        }
    }
    drop(out);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(3), servers.close()).await;
    EXIT_OK
}

fn status_word(status: &ServerStatus) -> &'static str {
    match status {
        ServerStatus::Connecting => "connecting",
        ServerStatus::Connected => "connected",
        _ => "failed",
    }
}
