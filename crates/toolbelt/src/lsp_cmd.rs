//! `toolbelt lsp list [--json]`: the language servers the `lsp` tool would ask, which
//! extensions each covers, its state, and why one would not run (its program is not
//! found, its file is bad, the folder is not trusted). The session reads `.lsp.json`
//! and protects what it runs (`toolbelt_session`).

use std::path::{Path, PathBuf};

use serde_json::json;
use toolbelt_lsp::{ServerConfig, ServerState};

use crate::cli::{EXIT_OK, EXIT_USAGE, GlobalArgs, LspCommand};
use crate::session::Session;

pub async fn run(global: &GlobalArgs, command: LspCommand) -> u8 {
    let session = match Session::load(global) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("toolbelt: {}", e.0);
            return EXIT_USAGE;
        }
    };
    match command {
        LspCommand::List { json } => list(&session, json).await,
    }
}

/// Where `command` would be found: itself when it names a path, else the first `PATH`
/// entry that holds it.
fn find_program(command: &str, cwd: &Path) -> Option<PathBuf> {
    if command.contains('/') {
        let path = cwd.join(command);
        return path.is_file().then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|p| p.is_file())
}

fn state_text(config: &ServerConfig, state: &ServerState, program: Option<&Path>) -> String {
    match (state, program) {
        (ServerState::Running, _) => "running".into(),
        (ServerState::Failed(why), _) => format!("failed: {why}"),
        (ServerState::NotStarted, None) => format!(
            "will not start: `{}` is not found (not a file, not on PATH)",
            config.command
        ),
        (ServerState::NotStarted, Some(_)) => "not started (starts on first use)".into(),
    }
}

async fn list(session: &Session, as_json: bool) -> u8 {
    let root = session.lsp.root().to_path_buf();
    let states = session.lsp.states().await;
    let rows: Vec<_> = states
        .iter()
        .map(|(config, state)| {
            let program = find_program(&config.command, &root);
            let state = state_text(config, state, program.as_deref());
            (config, program, state)
        })
        .collect();
    if as_json {
        let servers: Vec<_> = rows
            .iter()
            .map(|(c, program, state)| {
                json!({
                    "name": c.name,
                    "file": c.source,
                    "command": c.command,
                    "args": c.args,
                    "program": program,
                    "extensions": c.extension_to_language,
                    "state": state,
                })
            })
            .collect();
        let out = json!({"servers": servers, "problems": session.lsp_problems});
        println!(
            "{}",
            serde_json::to_string_pretty(&out).unwrap_or_else(|_| out.to_string())
        );
        return EXIT_OK;
    }
    if rows.is_empty() {
        println!(
            "No language servers. Configure them in .lsp.json (project, trusted folders only) or ~/.qwen/.lsp.json."
        );
    }
    for (c, _, state) in &rows {
        let extensions: Vec<&str> = c.extension_to_language.keys().map(String::as_str).collect();
        println!(
            "{} ({})  {}",
            c.name,
            extensions.join(" "),
            c.source.display()
        );
        println!("  command: {} {}", c.command, c.args.join(" "));
        println!("  {state}");
    }
    for problem in &session.lsp_problems {
        println!("note: {problem}");
    }
    EXIT_OK
}
