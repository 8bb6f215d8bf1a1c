#![cfg_attr(test, allow(clippy::too_many_lines))]
//! `toolbelt`: the command line. Thin by design: it parses flags, opens a session
//! (`toolbelt_session`) and hands work to the library crates; it keeps the output
//! formats and the terminal UI.

use std::process::ExitCode;

use clap::Parser;

// First, so its print macros (a closed pipe ends quietly) shadow the standard ones in
// every module below.
#[macro_use]
mod pipes;

mod agent_cmd;
mod agent_output;
mod agents_cmd;
mod claude_flags;
mod claude_options;
mod cli;
#[cfg(debug_assertions)]
mod crash;
mod ending;
mod hooks_cmd;
mod interactive;
mod lsp_cmd;
mod mcp_cmd;
mod sandbox_cmd;
mod serve_cmd;
mod session;
mod skills_cmd;
mod tools_call;
mod tools_cmd;
mod trust_cmd;
mod when_cmd;

fn main() -> ExitCode {
    // The guardian is this binary run again; it must not parse flags, log, or start
    // anything of its own (see `toolbelt_process::guardian`).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|a| a == toolbelt_process::guardian::GUARDIAN_ARG)
    {
        return ExitCode::from(toolbelt_process::guardian::run(&args[2..]));
    }
    // Before anything can start a process or a signal can arrive.
    ending::start();
    ending::watch_termination();
    toolbelt_stream_json::on_closed_output(|| {
        ending::end_now(pipes::EXIT_BROKEN_PIPE);
    });
    #[cfg(debug_assertions)]
    if args.get(1).is_some_and(|a| a == crash::CRASH_ARG) {
        crash::run(&args[2..]);
    }
    let cli = cli::Cli::parse();
    pipes::init_tracing();
    let runtime = match runtime_builder(&cli).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("toolbelt: cannot start the async runtime: {e}");
            return ExitCode::from(cli::EXIT_TOOL_ERROR);
        }
    };
    let code = runtime.block_on(run(cli));
    // Tools may leave blocking reads behind after a cancel; do not wait for them.
    runtime.shutdown_background();
    // Through the one ending, so a signal arriving now cannot run a second cleanup and
    // exit beside this one.
    ending::end_now(ending::exit_code(code))
}

/// One thread for an MCP server over stdio: its work is a line in, a call, a line out,
/// and a second worker only adds wake-ups and hand-offs between cores (measured in
/// BENCHMARKS.md). Large file reads and commands still run on the blocking pool, side by
/// side. The thread watches its input briefly before it sleeps (`--busy-poll-us`, see
/// `toolbelt_mcp::serve::before_park`).
/// Everything else gets a worker per core.
fn runtime_builder(cli: &cli::Cli) -> tokio::runtime::Builder {
    match &cli.command {
        Some(cli::Command::Mcp {
            command: cli::McpCommand::Serve(args),
        }) if args.http.is_none() => {
            let mut builder = tokio::runtime::Builder::new_current_thread();
            let window = std::time::Duration::from_micros(args.busy_poll_us);
            if !window.is_zero() {
                builder.on_thread_park(move || toolbelt_mcp::serve::before_park(window));
            }
            builder
        }
        _ => tokio::runtime::Builder::new_multi_thread(),
    }
}

async fn run(cli: cli::Cli) -> u8 {
    match cli.command {
        Some(cli::Command::Tools { command }) => tools_cmd::run(&cli.global, command).await,
        Some(cli::Command::Mcp { command }) => mcp_cmd::run(&cli.global, command).await,
        Some(cli::Command::Agents { command }) => agents_cmd::run(&cli.global, command),
        Some(cli::Command::Skills { command }) => skills_cmd::run(&cli.global, command),
        Some(cli::Command::Hooks { command }) => hooks_cmd::run(&cli.global, command),
        Some(cli::Command::Lsp { command }) => lsp_cmd::run(&cli.global, command).await,
        Some(cli::Command::Trust { path, remove }) => trust_cmd::run(path.as_deref(), remove),
        Some(cli::Command::Restore(a)) => restore(&cli.global, a),
        Some(cli::Command::Worktree { command }) => worktree(command),
        Some(cli::Command::Sandbox { verify, command }) => {
            sandbox_cmd::run(&cli.global, verify, &command).await
        }
        Some(cli::Command::AcpTerminal { log, pid, start }) => {
            u8::try_from(toolbelt_acp::follow_terminal(&log, pid, start)).unwrap_or(1)
        }
        None => agent_cmd::run(&cli.global, cli.agent).await,
    }
}

/// `toolbelt restore` (`Session::restore_command`), a terminal to ask when there is one.
fn restore(global: &cli::GlobalArgs, a: cli::RestoreArgs) -> u8 {
    let session = match session::Session::load(global) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("toolbelt: {}", e.0);
            return cli::EXIT_USAGE;
        }
    };
    let request = toolbelt_session::RestoreRequest {
        list: a.list,
        id: a.id,
        yes: a.yes,
        force: a.force,
        paths: a.paths,
    };
    let ask = |q: &str| tools_call::ask(q, "[y]es / [n]o: ");
    let asker = tools_call::can_ask(false).then_some(&ask as &dyn Fn(&str) -> bool);
    let out = session.restore_command(&request, asker);
    print!("{}", out.stdout);
    eprint!("{}", out.stderr);
    out.code
}

/// `toolbelt worktree list|remove` (`toolbelt_session::worktree::command`).
fn worktree(command: cli::WorktreeCommand) -> u8 {
    use toolbelt_session::worktree::Action;
    let action = match command {
        cli::WorktreeCommand::List => Action::List,
        cli::WorktreeCommand::Remove {
            name,
            discard_changes,
        } => Action::Remove {
            name,
            discard_changes,
        },
    };
    let dir = std::env::current_dir().unwrap_or_default();
    let out = toolbelt_session::worktree::command(&dir, action);
    print!("{}", out.stdout);
    eprint!("{}", out.stderr);
    out.code
}
