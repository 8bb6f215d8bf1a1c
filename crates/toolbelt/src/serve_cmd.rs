//! `toolbelt mcp serve`: toolbelt's tools for any MCP client, over stdio or Streamable
//! HTTP. The workspaces (a session per set of client roots, `--proxy-mcp`, the watched
//! configuration) are `toolbelt_session::ServeWorkspaces`; `toolbelt_mcp::serve` speaks
//! MCP. Here: the flags and the transport.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolbelt_mcp::serve::ServeOptions;
use toolbelt_mcp::serve::http::{self, HttpOptions};
use toolbelt_session::ServeWorkspaces;

use crate::cli::{EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, GlobalArgs, ServeArgs};

/// How a person allows what `mcp serve` refused.
const HOW_TO_ALLOW: &str = "The user can allow it by starting `toolbelt mcp serve` with --approval-mode auto-edit (edits) or --approval-mode yolo (everything), with --allowed-tools {tool}, or with a permissions.allow rule in .qwen/settings.json; or by using an MCP client that supports elicitation.";

pub async fn run(global: &GlobalArgs, args: ServeArgs) -> u8 {
    match serve(global, args).await {
        Ok(()) => EXIT_OK,
        Err((code, message)) => {
            eprintln!("toolbelt: {message}");
            code
        }
    }
}

async fn serve(global: &GlobalArgs, args: ServeArgs) -> Result<(), (u8, String)> {
    let usage = |m: String| (EXIT_USAGE, m);
    let cwd = std::env::current_dir()
        .map_err(|e| usage(format!("cannot read the current directory: {e}")))?;
    let http = args
        .http
        .as_deref()
        .map(|addr| http_options(addr, &args))
        .transpose()
        .map_err(usage)?;
    let options = crate::session::options(global);
    let policy = crate::session::policy(&args.policy);
    let workspaces = ServeWorkspaces::start(&cwd, options, policy, args.proxy_mcp)
        .await
        .map_err(|e| usage(e.to_string()))?;
    let options = Arc::new(ServeOptions::new(args.stateless, HOW_TO_ALLOW));
    let stop = CancellationToken::new();
    match http {
        None => {
            // Typed into a terminal, a silent stdio server looks hung: say what it is.
            if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                eprintln!(
                    "toolbelt: MCP server on standard input and output, for an MCP client to start (see `toolbelt mcp serve --help`); waiting for JSON-RPC messages; Ctrl-C ends it"
                );
            }
            toolbelt_mcp::serve::serve_stdio(workspaces, options, stop)
                .await
                .map_err(|e| (EXIT_TOOL_ERROR, e.to_string()))
        }
        Some(http) => {
            let open_to_local_users = http.token.is_none();
            let served = http::serve(http, workspaces, options, stop, |addr: SocketAddr| {
                eprintln!(
                    "toolbelt: MCP over Streamable HTTP at http://{addr}{}",
                    http::ENDPOINT
                );
                if open_to_local_users {
                    eprintln!(
                        "toolbelt: note: without --auth-token-env, every process and user of this machine can connect"
                    );
                }
            });
            served.await.map_err(|e| (EXIT_USAGE, e.to_string()))
        }
    }
}

/// `--http ADDR:PORT` and the token of `--auth-token-env`.
fn http_options(addr: &str, args: &ServeArgs) -> Result<HttpOptions, String> {
    let addr: SocketAddr = addr
        .parse()
        .map_err(|e| format!("--http {addr}: {e} (write ADDR:PORT, such as 127.0.0.1:8765)"))?;
    let token = match &args.auth_token_env {
        None => None,
        Some(name) => match std::env::var(name) {
            Ok(token) if !token.trim().is_empty() => {
                // Never in a log line, an error or a message to a client.
                toolbelt_config::redact::global().add_secret(token.trim());
                Some(token.trim().to_string())
            }
            _ => {
                return Err(format!(
                    "--auth-token-env {name}: the environment variable {name} is not set or empty"
                ));
            }
        },
    };
    Ok(HttpOptions {
        addr,
        token,
        stateless: args.stateless,
    })
}
