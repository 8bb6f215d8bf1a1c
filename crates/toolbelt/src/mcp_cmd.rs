//! `toolbelt mcp list`: every configured MCP server, its status (with the reason when it
//! failed) and its tools; `toolbelt mcp auth` and `logout`, an OAuth login to one server
//! and its undoing (the flow is `toolbelt_mcp::login`'s). Unlike a session it waits for the servers, since their state
//! and tools are its answer; all connect at once, so the answer comes within the slowest
//! `startupTimeout`, whatever the number of servers. It starts each once: a failed
//! server is shown with its reason, not started again.

use std::io::Write;

use crate::cli::{EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, GlobalArgs, McpCommand};
use crate::session::{Session, options};

pub async fn run(global: &GlobalArgs, command: McpCommand) -> u8 {
    let json = match command {
        McpCommand::List { json } => json,
        McpCommand::Serve(args) => return crate::serve_cmd::run(global, args).await,
        McpCommand::Auth {
            name,
            no_browser,
            timeout,
        } => return auth(global, &name, no_browser, timeout).await,
        McpCommand::Logout { name } => return logout(global, &name),
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

/// The configured server `name`, or why not (said on stderr).
fn server(global: &GlobalArgs, name: &str) -> Option<toolbelt_mcp::ServerConfig> {
    let session = Session::load_or_say(global)?;
    match toolbelt_session::mcp_server_named(&session.env, &options(global).mcp, name) {
        Ok(server) => Some(server),
        Err(e) => {
            eprintln!("toolbelt: {}", e.0);
            None
        }
    }
}

/// `toolbelt mcp auth NAME`: the URL goes to stdout on a line of its own (a script or
/// a person on another machine opens it), what happens to stderr.
async fn auth(global: &GlobalArgs, name: &str, no_browser: bool, timeout: u64) -> u8 {
    let Some(server) = server(global, name) else {
        return EXIT_USAGE;
    };
    let show = |url: &str| {
        eprintln!("Open this URL in a browser to log in to MCP server \"{name}\":");
        let mut out = std::io::stdout().lock();
        crate::pipes::check(writeln!(out, "{url}").and_then(|()| out.flush()));
        if !no_browser && let Err(e) = toolbelt_mcp::open_in_browser(url) {
            eprintln!("toolbelt: {e}; open the URL yourself");
        }
        eprintln!("Waiting for the browser to come back...");
    };
    let timeout = std::time::Duration::from_secs(timeout.max(1));
    match toolbelt_mcp::login(&server, timeout, show).await {
        Ok(path) => {
            eprintln!(
                "Logged in to MCP server \"{name}\"; the tokens are kept in {}",
                path.display()
            );
            EXIT_OK
        }
        Err(e) => {
            eprintln!(
                "toolbelt: {}",
                toolbelt_config::redact::redact(&e.to_string())
            );
            EXIT_TOOL_ERROR
        }
    }
}

/// `toolbelt mcp logout NAME`.
fn logout(global: &GlobalArgs, name: &str) -> u8 {
    let Some(server) = server(global, name) else {
        return EXIT_USAGE;
    };
    match toolbelt_mcp::logout(&server) {
        Ok(true) => {
            eprintln!("Logged out of MCP server \"{name}\": its tokens are removed");
            EXIT_OK
        }
        Ok(false) => {
            eprintln!("No tokens were kept for MCP server \"{name}\"");
            EXIT_OK
        }
        Err(e) => {
            eprintln!("toolbelt: {e}");
            EXIT_TOOL_ERROR
        }
    }
}
