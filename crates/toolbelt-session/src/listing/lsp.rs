//! `toolbelt lsp list`: each configured language server, the program it would run and
//! its state, with why one would not run.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolbelt_lsp::{ServerConfig, ServerState, Servers};

/// One configured server as listed.
pub struct LspRow {
    /// Its configuration.
    pub config: ServerConfig,
    /// The program its command names, where it was found.
    pub program: Option<PathBuf>,
    /// Its state in words (`running`, `failed: ...`, `will not start: ...`).
    pub state: String,
}

/// The servers of `servers`, in order.
pub async fn lsp_rows(servers: &Servers) -> Vec<LspRow> {
    let root = servers.root().to_path_buf();
    let states = servers.states().await;
    states
        .into_iter()
        .map(|(config, state)| {
            let program = config
                .command
                .as_deref()
                .and_then(|c| find_program(c, &root));
            let state = state_text(config, &state, program.as_deref());
            LspRow {
                config: config.clone(),
                program,
                state,
            }
        })
        .collect()
}

/// The rows and the files that gave no servers, as one JSON object.
pub fn lsp_json(rows: &[LspRow], problems: &[String]) -> Value {
    let servers: Vec<_> = rows
        .iter()
        .map(|r| {
            let c = &r.config;
            json!({
                "name": c.name,
                "file": c.source,
                "command": c.command,
                "args": c.args,
                "runs": c.describe(),
                "program": r.program,
                "extensions": c.extension_to_language,
                "state": r.state,
            })
        })
        .collect();
    json!({"servers": servers, "problems": problems})
}

/// The rows and the files that gave no servers, for a person: a server per three
/// lines (name and extensions with its file, its command, its state), then the notes.
pub fn lsp_text(rows: &[LspRow], problems: &[String]) -> String {
    let mut out = String::new();
    if rows.is_empty() {
        out.push_str(
            "No language servers. Configure them in .lsp.json (project, trusted folders only), ~/.qwen/.lsp.json or settings `lsp.servers`.\n",
        );
    }
    for row in rows {
        let c = &row.config;
        let extensions: Vec<&str> = c.extension_to_language.keys().map(String::as_str).collect();
        out.push_str(&format!(
            "{} ({})  {}\n",
            c.name,
            extensions.join(" "),
            c.source.display()
        ));
        out.push_str(&format!("  runs: {}\n", c.describe()));
        out.push_str(&format!("  {}\n", row.state));
    }
    for problem in problems {
        out.push_str(&format!("note: {problem}\n"));
    }
    out
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
    match (state, &config.command, program) {
        (ServerState::Running, ..) => "running".into(),
        (ServerState::Failed(why), ..) => format!("failed: {why}"),
        (ServerState::NotStarted, Some(command), None) => {
            format!("will not start: `{command}` is not found (not a file, not on PATH)")
        }
        (ServerState::NotStarted, None, _) => "not connected (connects on first use)".into(),
        (ServerState::NotStarted, Some(_), Some(_)) => "not started (starts on first use)".into(),
    }
}
