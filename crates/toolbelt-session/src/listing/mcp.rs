//! `toolbelt mcp list`: every configured MCP server, its transport, status (with the
//! reason when it failed), how many tools, resources, resource templates and prompts it
//! offers, and its tools.

use std::fmt::Write;

use serde_json::{Value, json};
use toolbelt_mcp::{ServerReport, ServerStatus};

/// The servers as a JSON array.
pub fn mcp_json(reports: &[ServerReport]) -> Value {
    let servers: Vec<_> = reports
        .iter()
        .map(|r| {
            let (status, reason) = match &r.status {
                ServerStatus::Failed(why) => ("failed", Some(why.clone())),
                ServerStatus::NeedsLogin(hint) => ("needs-login", Some(hint.clone())),
                // Why, and when the session starts it again.
                ServerStatus::Retrying { .. } => {
                    let text = r.status.to_string();
                    let reason = text.strip_prefix("failed: ").unwrap_or(&text).to_string();
                    ("failed", Some(reason))
                }
                other => (status_word(other), None),
            };
            json!({
                "name": r.alias,
                "transport": r.transport,
                "target": r.target,
                "status": status,
                "reason": reason,
                "auth": r.auth.as_str(),
                "protocol": r.protocol,
                "counts": {
                    "tools": r.tools.len(),
                    "resources": r.resources,
                    "resourceTemplates": r.resource_templates,
                    "prompts": r.prompts,
                },
                "tools": r.tools.iter().map(|(name, remote, description)| json!({
                    "name": name, "serverToolName": remote, "description": description
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    Value::Array(servers)
}

/// A server a line, each tool under it with the first line of its description.
pub fn mcp_text(reports: &[ServerReport]) -> String {
    if reports.is_empty() {
        return "No MCP servers configured (mcpServers in .qwen/settings.json, or --mcp-config).\n"
            .to_string();
    }
    let mut out = String::new();
    for r in reports {
        let _ = writeln!(
            out,
            "{} ({} {}): {}",
            r.alias, r.transport, r.target, r.status
        );
        if r.status == ServerStatus::Connected {
            let _ = writeln!(out, "  {}", counts(r));
        }
        for (name, _, description) in &r.tools {
            let first = description.lines().next().unwrap_or_default();
            let _ = writeln!(out, "  {name}  {first}");
        }
    }
    out
}

/// `3 tools, 7 resources (2 templates), 4 prompts`, `, auth: oauth` (or `header`)
/// when toolbelt sends credentials, and `, protocol 2025-11-25` (the revision spoken).
pub(crate) fn counts(r: &ServerReport) -> String {
    let auth = match r.auth {
        toolbelt_mcp::AuthState::None => String::new(),
        other => format!(", auth: {}", other.as_str()),
    };
    let protocol = match &r.protocol {
        Some(revision) => format!(", protocol {revision}"),
        None => String::new(),
    };
    format!(
        "{} tools, {} resources ({} templates), {} prompts{auth}{protocol}",
        r.tools.len(),
        r.resources,
        r.resource_templates,
        r.prompts
    )
}

fn status_word(status: &ServerStatus) -> &'static str {
    match status {
        ServerStatus::Connecting => "connecting",
        ServerStatus::Connected => "connected",
        _ => "failed",
    }
}
