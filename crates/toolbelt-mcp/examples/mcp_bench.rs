//! Calls per second through toolbelt's MCP client: connects one stdio server, then runs
//! `echo` N times one after another (each call waits for its answer, as a model turn's
//! non-parallel calls do) and prints the rate. Used by `bench/mcp.sh`.
//!
//! Usage: mcp_bench N TOOL ARGS_JSON -- COMMAND [ARGS...]

use std::sync::Arc;
use std::time::Instant;

use toolbelt_config::settings::McpServerSettings;
use toolbelt_config::settings::Settings;
use toolbelt_core::{ExecContext, ToolEnvironment, WorkspaceRoots};
use toolbelt_engine::registry::ToolRegistry;
use toolbelt_mcp::{McpServers, ServerConfig};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(split) = args.iter().position(|a| a == "--") else {
        eprintln!("usage: mcp_bench N TOOL ARGS_JSON -- COMMAND [ARGS...]");
        std::process::exit(2);
    };
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let tool = args.get(2).cloned().unwrap_or_else(|| "echo".into());
    let call_args: serde_json::Value = args
        .get(3)
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    let command = &args[split + 1..];
    let dir = std::env::temp_dir();
    let entry = McpServerSettings {
        command: command.first().cloned(),
        args: command.iter().skip(1).cloned().collect(),
        trust: true,
        ..Default::default()
    };
    let Ok(config) = ServerConfig::from_settings("bench", &entry, &dir) else {
        std::process::exit(2);
    };
    let servers =
        McpServers::connect_all(vec![config], Vec::new(), &dir.join("mcp-bench-logs")).await;
    let mut registry = ToolRegistry::new();
    servers.register(&mut registry);
    let Ok(roots) = WorkspaceRoots::new([&dir]) else {
        std::process::exit(2);
    };
    let env = Arc::new(ToolEnvironment::new(
        roots,
        Arc::new(Settings::default()),
        dir.clone(),
    ));
    let name = format!("mcp__bench__{tool}");
    let started = Instant::now();
    for _ in 0..n {
        let Ok((_, call)) = registry.build(&name, call_args.clone()) else {
            eprintln!("no tool {name}: {:?}", servers.reports());
            std::process::exit(1);
        };
        let result = call.execute(ExecContext::new(env.clone())).await;
        if result.is_error() {
            eprintln!("call failed: {}", result.llm_text());
            std::process::exit(1);
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!("{n} calls in {secs:.3} s: {:.0} calls/s", n as f64 / secs);
    servers.close().await;
}
