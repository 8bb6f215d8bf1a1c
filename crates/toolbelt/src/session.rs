//! Assembling a session: settings, workspace roots, the tool environment and the
//! registry. Shared by every subcommand so they all see the same tools.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};
use toolbelt_core::rules::PathPolicy;
use toolbelt_core::scheduler::ApprovalMode;
use toolbelt_core::{
    Origin, PermissionRules, Settings, SettingsPaths, ToolEnvironment, ToolRegistry, WorkspaceRoots,
};
use toolbelt_mcp::McpServers;
use toolbelt_tools::skills::{SkillTool, Skills};

use crate::cli::GlobalArgs;

pub struct Session {
    pub env: Arc<ToolEnvironment>,
    pub registry: ToolRegistry,
    /// The MCP servers; empty until [`Session::load_extensions`].
    pub mcp: McpServers,
    /// Servers that live in the client of a stream-JSON session (`sdkMcpServers`),
    /// connected with the others by [`Session::load_extensions`].
    pub sdk_mcp_servers: Vec<toolbelt_mcp::ServerConfig>,
    /// The permission rules of the settings, path rules anchored at the primary
    /// workspace directory and `$HOME`. Their path part is also in `env.roots`.
    pub rules: PermissionRules,
    /// `--context KEY=JSON` pairs, over the session's own when-clause keys.
    context_overrides: Map<String, Value>,
    /// The shell tool's background jobs (for `task_stop`).
    pub shell_jobs: Arc<toolbelt_tools::JobTable>,
    /// The skills of `.qwen/skills`, `.agents/skills` and `~/.qwen/skills` (see
    /// [`toolbelt_tools::skills`]); the `skill` tool is registered when there is one.
    pub skills: Arc<Skills>,
    /// The language servers of `.lsp.json` (project, when trusted, and user); the `lsp`
    /// tool is registered when one is configured.
    pub lsp: Arc<toolbelt_lsp::Servers>,
    /// Why a `.lsp.json` gave no servers (a bad file, an untrusted folder), for `lsp list`.
    pub lsp_problems: Vec<String>,
    /// Every warning of the assembly (untrusted settings, discovery, manifests,
    /// registry), also printed on stderr: `toolbelt mcp serve` sends them to its client.
    pub warnings: Vec<String>,
    /// The declared tools that did not load (a manifest entry that breaks a rule, a
    /// binding whose target is missing), one line each naming file and entry; also in
    /// `warnings`. `tools lint` counts them as errors.
    pub load_errors: Vec<String>,
}

/// Why a session could not be assembled: always the person's configuration.
#[derive(Debug)]
pub struct SetupError(pub String);

impl Session {
    pub fn load(global: &GlobalArgs) -> Result<Session, SetupError> {
        let cwd = std::env::current_dir()
            .map_err(|e| SetupError(format!("cannot read the current directory: {e}")))?;
        Session::load_in(global, &cwd, &[])
    }

    /// A session whose primary directory is `cwd` (its settings, its rules' anchor)
    /// and whose workspace also holds `more_dirs`, besides `--include-directories` and
    /// the settings' `context.includeDirectories`. `toolbelt mcp serve` opens one per
    /// set of client roots.
    pub fn load_in(
        global: &GlobalArgs,
        cwd: &Path,
        more_dirs: &[PathBuf],
    ) -> Result<Session, SetupError> {
        Session::load_keeping_jobs(global, cwd, more_dirs, None)
    }

    /// [`Session::load_in`] whose shell keeps `jobs`, the background jobs of an earlier
    /// session of the same workspace (`toolbelt mcp serve` opening its tools again).
    pub fn load_keeping_jobs(
        global: &GlobalArgs,
        cwd: &Path,
        more_dirs: &[PathBuf],
        jobs: Option<Arc<toolbelt_tools::JobTable>>,
    ) -> Result<Session, SetupError> {
        let cwd = cwd.to_path_buf();
        let mut paths = SettingsPaths::standard(&cwd);
        if global.trust_workspace || trust_from_environment() {
            paths = paths.trusting_workspace();
        }
        let settings = Settings::load(&paths).map_err(|e| SetupError(e.to_string()))?;
        let context_overrides = parse_context_pairs(&global.context)?;
        let mut warnings = Vec::new();
        if let Some(untrusted) = &settings.untrusted_workspace {
            eprintln!("toolbelt: warning: {}", untrusted.warning());
            warnings.push(untrusted.warning());
        }
        let mut dirs: Vec<PathBuf> = vec![cwd.clone()];
        dirs.extend(more_dirs.iter().cloned());
        dirs.extend(global.include_directories.iter().map(|d| absolute(&cwd, d)));
        dirs.extend(
            settings
                .context
                .include_directories
                .iter()
                .map(|d| absolute(&cwd, Path::new(d))),
        );
        let mut roots = WorkspaceRoots::new(&dirs).map_err(|e| SetupError(e.to_string()))?;
        let mut rules = PermissionRules::from_settings(&settings);
        if let Some(root) = roots.primary() {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            rules = rules.with_base(root, home);
        }
        // Path rules name operations on paths: every file tool resolves and walks
        // through the roots, so they are applied there (see `rules/paths.rs`).
        roots = roots.with_path_policy(PathPolicy::new(&rules));
        protect_configuration(&mut roots, &paths, &settings, &cwd, global);
        // Skills are read once, here: a skill the model writes later grants nothing.
        // Project skills of an untrusted folder load without their allowed-tools.
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let skills = Arc::new(Skills::load(
            roots.primary(),
            home.as_deref(),
            settings.untrusted_project.is_none(),
        ));
        for warning in skills.warnings() {
            eprintln!("toolbelt: warning: {warning}");
            warnings.push(warning.clone());
        }
        // User skills live outside the workspace; the model reads their files.
        for dir in skills.readable_dirs() {
            if let Err(e) = roots.add_readable(dir) {
                tracing::warn!("cannot read {}: {e}", dir.display());
            }
        }
        let (lsp, lsp_problems) =
            crate::lsp_cmd::load(&mut roots, home.as_deref(), &settings, &mut warnings);
        let session_dir = session_dir(&cwd);
        // Spilled output and job logs must be readable by the model; failing to create
        // the directory only costs that.
        if let Err(e) = roots.add_readable(&session_dir) {
            tracing::warn!("cannot create {}: {e}", session_dir.display());
        }
        // `mcp serve` connections' job logs: each connection reads its own folder, by
        // a name no other connection can list.
        let connection_logs = toolbelt_tools::connection_logs_dir(&session_dir);
        if let Err(e) = roots.add_readable_below(&connection_logs) {
            tracing::warn!("cannot create {}: {e}", connection_logs.display());
        }
        let settings = Arc::new(settings);
        let user_home = std::env::var_os("HOME").map(PathBuf::from);
        protect_declared_commands(&mut roots, &settings, &session_dir, user_home.clone());
        let mut env = ToolEnvironment::new(roots, settings, session_dir);
        env.user_home = user_home;
        let env = Arc::new(env);
        let mut registry = ToolRegistry::new();
        let mut shell = toolbelt_tools::RunShellCommand::new(env.clone());
        if let Some(jobs) = jobs {
            shell = shell.with_jobs(jobs);
        }
        let shell = Arc::new(shell);
        let shell_jobs = shell.jobs().clone();
        // With a language server configured, the edit tools report the errors a change
        // introduced (see `toolbelt_lsp::after_edit`).
        let check_edits = (!lsp.configs().is_empty())
            .then(|| toolbelt_lsp::wait_after_edit(&env))
            .flatten();
        for tool in toolbelt_tools::builtin_tools_with_shell(&env, shell) {
            let tool: Arc<dyn toolbelt_core::Tool> = match check_edits {
                Some(wait) if toolbelt_lsp::CHECKED_TOOLS.contains(&tool.name()) => Arc::new(
                    toolbelt_lsp::CheckedEdits::new(tool, env.clone(), lsp.clone(), wait),
                ),
                _ => tool,
            };
            registry.register(tool, Origin::BuiltIn);
        }
        // Only with a skill to offer: an empty `skill` tool would cost every request its
        // declaration and tell the model nothing.
        if !skills.is_empty() {
            registry.register(Arc::new(SkillTool::new(skills.clone())), Origin::BuiltIn);
        }
        // Only with a server to ask: the tool would answer nothing else.
        if !lsp.configs().is_empty() {
            let tool = toolbelt_lsp::LspTool::new(env.clone(), lsp.clone());
            registry.register(Arc::new(tool), Origin::BuiltIn);
        }
        registry.apply_settings(&env.settings);
        for warning in registry.warnings() {
            tracing::warn!("{warning}");
            warnings.push(warning.clone());
        }
        let mut session = Session {
            env,
            registry,
            mcp: McpServers::empty(),
            sdk_mcp_servers: Vec::new(),
            rules,
            shell_jobs,
            skills,
            lsp,
            lsp_problems,
            context_overrides,
            warnings,
            load_errors: Vec::new(),
        };
        session.apply_when(session.settings_mode());
        Ok(session)
    }

    /// The approval mode the settings give (the agent's flags may change it).
    pub fn settings_mode(&self) -> ApprovalMode {
        self.env
            .settings
            .tools
            .approval_mode
            .map(|m| m.0)
            .unwrap_or_default()
    }

    /// The when-clause context keys of this session in approval mode `mode`: see
    /// [`toolbelt_core::when::session_context`], then the `--context` pairs (which win).
    pub fn when_context(&self, mode: ApprovalMode) -> Map<String, Value> {
        let mut keys =
            toolbelt_core::when::session_context(&self.env.settings, self.env.roots.roots(), mode);
        keys.extend(self.context_overrides.clone());
        keys
    }

    /// Evaluates every tool's `when` clause in approval mode `mode` (see
    /// [`ToolRegistry::apply_when`]).
    pub fn apply_when(&mut self, mode: ApprovalMode) {
        let context = self.when_context(mode);
        self.registry.apply_when(&context);
    }

    /// Warns, once, on stderr, about rules that have no effect: entries that do not
    /// parse, and tool names that are neither a tool of this session (registered, or
    /// removed by the settings) nor a rule alias such as `Read` or `Bash`, naming the
    /// closest tool. Call after [`Session::load_extensions`], so MCP and discovered
    /// tools are known.
    pub fn warn_about_rules(&self, rules: &PermissionRules) {
        for entry in &rules.invalid {
            eprintln!(
                "toolbelt: warning: ignoring the permission rule `{entry}`: unbalanced parentheses"
            );
        }
        for name in rules.unknown_tools(|name| self.registry.knows(name)) {
            let closest = self
                .registry
                .closest(&name, 1)
                .first()
                .map(|c| format!("; the closest tool is `{c}`"))
                .unwrap_or_default();
            eprintln!(
                "toolbelt: warning: a permission rule names `{name}`, which is no tool of this session{closest}; the rule has no effect"
            );
        }
    }

    /// Runs the discovery command and connects the MCP servers, side by side, and
    /// registers their tools, then the declared tools of the manifests. A failing command or server is a warning, never an error;
    /// only an unreadable `--mcp-config` is.
    pub async fn load_extensions(&mut self, global: &GlobalArgs) -> Result<(), SetupError> {
        self.load_extensions_with(global, true).await
    }

    /// [`Session::load_extensions`], connecting the MCP servers only when `connect`
    /// (`toolbelt mcp serve` connects them once for every session, with `--proxy-mcp`).
    pub async fn load_extensions_with(
        &mut self,
        global: &GlobalArgs,
        connect: bool,
    ) -> Result<(), SetupError> {
        let warnings_before = self.registry.warnings().len();
        let connecting = async {
            if connect {
                let sdk = std::mem::take(&mut self.sdk_mcp_servers);
                connect_mcp_servers(&self.env, global, &[], sdk).await
            } else {
                Ok(McpServers::empty())
            }
        };
        let (discovery, mcp) = tokio::join!(toolbelt_tools::discover(&self.env), connecting);
        let mcp = mcp?;
        for report in mcp.reports() {
            if let toolbelt_mcp::ServerStatus::Failed(why) = &report.status {
                tracing::warn!("MCP server \"{}\" is not available: {why}", report.alias);
            }
        }
        for warning in &discovery.warnings {
            tracing::warn!("{warning}");
            self.warnings.push(warning.to_string());
        }
        for tool in discovery.tools {
            self.registry.register(tool, Origin::Discovered);
        }
        mcp.register(&mut self.registry);
        // Servers such as server-everything announce a changed list right after the
        // handshake; take what has arrived so far.
        mcp.refresh_pending(&mut self.registry).await;
        // Declared tools last: their `mcp` and `builtin` bindings name tools registered
        // above.
        let declared = toolbelt_tools::load_declared(&self.env);
        for warning in toolbelt_tools::register_declared(&mut self.registry, declared) {
            eprintln!("toolbelt: warning: {warning}");
            self.warnings.push(warning.to_string());
            self.load_errors.push(warning);
        }
        self.mcp = mcp;
        self.registry.apply_settings(&self.env.settings);
        self.apply_when(self.settings_mode());
        for warning in &self.registry.warnings()[warnings_before..] {
            tracing::warn!("{warning}");
            self.warnings.push(warning.clone());
        }
        Ok(())
    }

    /// Stops the MCP servers (bounded: a server that ignores its closed stdin is killed).
    pub async fn close(&self) {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(3), self.mcp.close()).await;
    }
}

/// Connects every MCP server of the settings and of `--mcp-config`, filtered by
/// `--allowed-mcp-server-names`; stdio servers log to `<session dir>/mcp/<alias>.log`.
pub async fn connect_mcp(
    env: &ToolEnvironment,
    global: &GlobalArgs,
) -> Result<McpServers, SetupError> {
    connect_mcp_with_env(env, global, &[]).await
}

/// [`connect_mcp`], with `extra_env` set for every stdio server.
pub async fn connect_mcp_with_env(
    env: &ToolEnvironment,
    global: &GlobalArgs,
    extra_env: &[(&str, &str)],
) -> Result<McpServers, SetupError> {
    connect_mcp_servers(env, global, extra_env, Vec::new()).await
}

/// [`connect_mcp_with_env`], plus `more` servers configured elsewhere (the client's own,
/// in a stream-JSON session).
async fn connect_mcp_servers(
    env: &ToolEnvironment,
    global: &GlobalArgs,
    extra_env: &[(&str, &str)],
    more: Vec<toolbelt_mcp::ServerConfig>,
) -> Result<McpServers, SetupError> {
    let mut extra = toolbelt_mcp::ServerEntries::new();
    for arg in &global.mcp.mcp_config {
        extra.extend(toolbelt_mcp::parse_mcp_config(arg).map_err(SetupError)?);
    }
    let allowed = &global.mcp.allowed_mcp_server_names;
    let project_root = env
        .roots
        .primary()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let (mut servers, problems) = toolbelt_mcp::configured_servers(
        &env.settings,
        &extra,
        (!allowed.is_empty()).then_some(allowed.as_slice()),
        &project_root,
    );
    for server in &mut servers {
        if let toolbelt_mcp::Transport::Stdio { env, .. } = &mut server.transport {
            for (key, value) in extra_env {
                env.insert(key.to_string(), value.to_string());
            }
        }
    }
    servers.extend(more);
    let project = env.roots.primary().unwrap_or(Path::new("/"));
    Ok(McpServers::connect_all(servers, problems, &log_dir(project).join("mcp")).await)
}

/// The approval mode of `--approval-mode` / `--yolo`, else of the settings.
pub fn approval_mode(
    flag: Option<&str>,
    yolo: bool,
    settings: &toolbelt_core::Settings,
) -> Result<ApprovalMode, String> {
    if yolo {
        if flag.is_some_and(|m| m != "yolo") {
            return Err("--yolo and --approval-mode cannot be used together".to_string());
        }
        return Ok(ApprovalMode::Yolo);
    }
    match flag {
        // Claude Code's: nobody is asked (the caller leaves the approver out), so what
        // would ask is refused, as headless.
        Some("dontAsk") => Ok(ApprovalMode::Default),
        Some(m) => m.parse(),
        None => Ok(settings
            .tools
            .approval_mode
            .map(|m| m.0)
            .unwrap_or_default()),
    }
}

/// `--exclude-tools`: the tools are not offered at all.
pub fn exclude(registry: &mut ToolRegistry, excluded: &[String]) {
    if !excluded.is_empty() {
        registry.retain(
            |r| !excluded.iter().any(|e| e.trim() == r.name),
            "it is excluded by --exclude-tools",
        );
    }
}

/// `--context KEY=JSON` pairs; a value that is not JSON is a string.
fn parse_context_pairs(pairs: &[String]) -> Result<Map<String, Value>, SetupError> {
    let mut keys = Map::new();
    for pair in pairs {
        let Some((key, raw)) = pair.split_once('=').filter(|(k, _)| !k.trim().is_empty()) else {
            return Err(SetupError(format!(
                "--context {pair}: write KEY=JSON, such as debugState='\"running\"' or count=3"
            )));
        };
        let value = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
        keys.insert(key.trim().to_string(), value);
    }
    Ok(keys)
}

/// `TOOLBELT_TRUST_WORKSPACE=1` (or `true`): `--trust-workspace` for a whole environment,
/// such as a CI job that runs on its own repository.
fn trust_from_environment() -> bool {
    std::env::var("TOOLBELT_TRUST_WORKSPACE")
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

/// Protects what configures this session from outside the protected names (`.qwen`,
/// `.agents`, `.git`, see `toolbelt_core::protected`), for a workspace that holds them:
/// the toolbelt home (saved sessions a resume reads back), the system settings file, the
/// `tools.manifests` entries, the files the settings' commands run (discovery, tool
/// calls, MCP servers) and the `--mcp-config` files.
fn protect_configuration(
    roots: &mut WorkspaceRoots,
    paths: &SettingsPaths,
    settings: &Settings,
    cwd: &Path,
    global: &GlobalArgs,
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
    const MANIFEST: &str =
        "a tool manifest binds tools to commands that run when the tools are called";
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
    // Programs and scripts the settings run by themselves, with no question before each
    // run: a model that rewrote one would run its code at the next start (or, in
    // `mcp serve`, at the next settings change). A word of such a command that names a
    // file is protected (`sh tools/discover.sh` protects `tools/discover.sh`).
    const RUNS: &str =
        "the settings run it without asking (a discovery or tool-call command, an MCP server)";
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
    for arg in &global.mcp.mcp_config {
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

/// Protects the scripts the declared tools' `command` and `prepare` run (`sh
/// tools/prep.sh` protects `tools/prep.sh`): a declared tool's `prepare` runs before
/// its call is asked, so a model that rewrote one on a general approval (auto-edit)
/// would run its own code. The manifests are read here for their names only; the tools
/// register with the other extensions.
fn protect_declared_commands(
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

/// `$TOOLBELT_HOME` (default `~/.toolbelt`), or the system temp directory when there is
/// no home.
fn toolbelt_home() -> PathBuf {
    std::env::var_os("TOOLBELT_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".toolbelt")))
        .unwrap_or_else(|| std::env::temp_dir().join("toolbelt"))
}

/// One directory name per project: the path made readable (`home-me-src-app`), then a
/// hash of the exact path, so `/a/b-c` and `/a/b/c` never share a directory.
fn project_dir_name(project: &Path) -> String {
    use sha2::Digest;
    use std::os::unix::ffi::OsStrExt;
    let readable: String = project
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let readable: String = readable.trim_matches('-').chars().take(80).collect();
    let digest = sha2::Sha256::digest(project.as_os_str().as_bytes());
    let hash: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
    format!("{readable}-{hash}")
}

/// `<toolbelt home>/tmp/<project>`: spilled output and job logs, readable by the model.
fn session_dir(project: &Path) -> PathBuf {
    toolbelt_home().join("tmp").join(project_dir_name(project))
}

/// `<toolbelt home>/sessions/<project>`: the saved conversations (`--continue`,
/// `--resume`). Outside every directory the model's tools can read, like the logs: tool
/// output in them may hold secrets.
pub fn sessions_dir(project: &Path) -> PathBuf {
    toolbelt_home()
        .join("sessions")
        .join(project_dir_name(project))
}

/// `<toolbelt home>/logs/<project>`: MCP server logs. Outside every directory the
/// model's tools can read: a server's stderr may hold what it was given (tokens in a
/// URL, headers), and the model must not read it back.
fn log_dir(project: &Path) -> PathBuf {
    toolbelt_home().join("logs").join(project_dir_name(project))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projects_never_share_a_session_directory() {
        let a = session_dir(Path::new("/a/b-c"));
        let b = session_dir(Path::new("/a/b/c"));
        assert_ne!(a, b);
        assert!(a.ends_with(project_dir_name(Path::new("/a/b-c"))));
        assert!(project_dir_name(Path::new("/a/b-c")).starts_with("a-b-c-"));
        assert_ne!(log_dir(Path::new("/a/b-c")), a);
        assert!(!log_dir(Path::new("/a")).starts_with(session_dir(Path::new("/a"))));
    }
}
