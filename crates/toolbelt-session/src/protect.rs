//! What configures a session is protected configuration: a model that rewrote it would
//! change the rules it runs under, or run its own code at the next start. The names
//! `.qwen`, `.agents` and `.git` are protected by `toolbelt_core::ProtectedPaths`; this module
//! adds the files a session's settings and flags name.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolbelt_config::{settings::Settings, settings::SettingsPaths};
use toolbelt_core::{ToolEnvironment, WorkspaceRoots};

use crate::paths::{absolute, toolbelt_home};

const MANIFEST: &str = "a tool manifest binds tools to commands that run when the tools are called";
const RUNS: &str =
    "the settings run it without asking (a discovery or tool-call command, an MCP server)";

/// Protects, for a workspace that holds them: the toolbelt home (saved sessions a resume
/// reads back), the system settings file, the `tools.manifests` entries, the files the
/// settings' commands run (discovery, tool calls, MCP servers) and the `--mcp-config`
/// files.
pub(crate) fn protect_configuration(
    roots: &mut WorkspaceRoots,
    paths: &SettingsPaths,
    settings: &Settings,
    cwd: &Path,
    mcp_config: &[String],
) {
    // Unless the home holds the workspace itself: then it would protect every file.
    let home = toolbelt_home();
    let real_home = home.canonicalize().unwrap_or_else(|_| home.clone());
    if !roots.roots().iter().any(|r| r.starts_with(&real_home)) {
        roots.protect(
            &home,
            "toolbelt's own files",
            "saved sessions, logs and output that a resumed session reads back",
        );
    }
    if let Some(system) = &paths.system {
        roots.protect(
            system,
            "toolbelt settings",
            "they hold the permission rules, commands toolbelt runs and MCP servers it starts",
        );
    }
    for entry in &settings.tools.manifests {
        let path = absolute(cwd, Path::new(entry));
        // A `package.json` takes its bindings from the `toolbelt.json` beside it.
        if path.file_name().is_some_and(|n| n == "package.json")
            && let Some(dir) = path.parent()
        {
            roots.protect(&dir.join("toolbelt.json"), "declared tools", MANIFEST);
        }
        roots.protect(&path, "declared tools", MANIFEST);
    }
    protect_commands(roots, settings, cwd);
    for arg in mcp_config {
        let arg = arg.trim();
        // Inline JSON is no file; a file is read relative to the process's directory.
        if !arg.starts_with('{')
            && let Ok(file) = std::fs::canonicalize(arg)
        {
            roots.protect(
                &file,
                "MCP configuration",
                "it names MCP servers that toolbelt starts",
            );
        }
    }
}

/// Programs and scripts the settings run by themselves, with no question before each
/// run: a model that rewrote one would run its code at the next start (or, in
/// `mcp serve`, at the next settings change). A word of such a command that names a
/// file is protected (`sh tools/discover.sh` protects `tools/discover.sh`).
fn protect_commands(roots: &mut WorkspaceRoots, settings: &Settings, cwd: &Path) {
    let mut commands: Vec<(Vec<String>, PathBuf)> = [
        &settings.tools.discovery_command,
        &settings.tools.call_command,
    ]
    .into_iter()
    .flatten()
    .filter_map(|command| toolbelt_tools::split_command(command).ok())
    .map(|words| (words, cwd.to_path_buf()))
    .collect();
    for server in settings.mcp_servers.values() {
        if let Some(command) = &server.command {
            let dir = server
                .cwd
                .as_deref()
                .map_or_else(|| cwd.to_path_buf(), |d| absolute(cwd, Path::new(d)));
            let words = std::iter::once(command).chain(&server.args).cloned();
            commands.push((words.collect(), dir));
        }
    }
    for (words, dir) in commands {
        for word in words {
            let path = absolute(&dir, Path::new(&word));
            if path.is_file() {
                roots.protect(&path, "a command the settings run", RUNS);
            }
        }
    }
}

/// Protects the scripts the declared tools' `command` and `prepare` run (`sh
/// tools/prep.sh` protects `tools/prep.sh`): a declared tool's `prepare` runs before
/// its call is asked, so a model that rewrote one on a general approval (auto-edit)
/// would run its own code. The manifests are read here for their names only; the tools
/// register with the other extensions.
pub(crate) fn protect_declared_commands(
    roots: &mut WorkspaceRoots,
    settings: &Arc<Settings>,
    dir: &Path,
    user_home: Option<PathBuf>,
) {
    // The user's manifests (`~/.qwen/tools`) name scripts too: the home must be set.
    let mut env = ToolEnvironment::new(roots.clone(), settings.clone(), dir.to_path_buf());
    env.user_home = user_home;
    let env = Arc::new(env);
    for file in toolbelt_tools::load_declared(&env).command_files() {
        roots.protect(
            &file,
            "a script a declared tool runs",
            "a declared tool's command or prepare runs it when the tool is called",
        );
    }
}

/// Reads `.lsp.json` (the project's only in a trusted folder, then the user's) and the
/// settings' `lsp.servers`, and protects the project's file and the programs they name.
/// Returns the servers (`keep` when it serves the same configuration) and why a file
/// gave none.
pub(crate) fn load_lsp(
    roots: &mut WorkspaceRoots,
    home: Option<&Path>,
    settings: &Settings,
    keep: Option<&Arc<toolbelt_lsp::Servers>>,
    warnings: &mut Vec<String>,
) -> (Arc<toolbelt_lsp::Servers>, Vec<String>) {
    let Some(root) = roots.primary().map(Path::to_path_buf) else {
        let none = toolbelt_lsp::Servers::new(Vec::new(), PathBuf::from("/"));
        return (Arc::new(none), Vec::new());
    };
    let trusted = settings.untrusted_project.is_none();
    let config = toolbelt_lsp::LspConfig::load(Some(&root), home, trusted, settings);
    const LSP_RUNS: &str = "it names language servers that toolbelt starts without asking";
    roots.protect(
        &root.join(".lsp.json"),
        "language server configuration",
        LSP_RUNS,
    );
    for server in &config.servers {
        for file in toolbelt_lsp::command_files(server, &root) {
            roots.protect(&file, "a language server", LSP_RUNS);
        }
    }
    let mut problems = Vec::new();
    for error in &config.errors {
        let warning = format!("ignoring {error}");
        warnings.push(warning.clone());
        problems.push(warning);
    }
    if let Some(file) = &config.ignored_untrusted {
        let note = format!(
            "{} is not read: the folder is not trusted (`toolbelt trust` trusts it), and its servers would run without asking",
            file.display()
        );
        tracing::info!("{note}");
        problems.push(note);
    }
    // The same configuration keeps the running servers (an `mcp serve` reopening).
    if let Some(kept) = keep
        && kept.matches(&config.servers, &root)
    {
        return (kept.clone(), problems);
    }
    let servers = toolbelt_lsp::Servers::new(config.servers, root);
    (Arc::new(servers), problems)
}
