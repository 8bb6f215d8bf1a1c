//! Opening a session: settings, folder trust, workspace roots, protected configuration,
//! the tool environment and the registry; then the extensions (discovered, MCP and
//! declared tools). Every front end opens its session here, so they all see the same
//! tools under the same rules.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};
use toolbelt_config::ApprovalMode;
use toolbelt_config::{settings::Settings, settings::SettingsPaths};
use toolbelt_core::{ToolEnvironment, WorkspaceRoots};
use toolbelt_engine::hooks::HookRunner;
use toolbelt_engine::rules::RuleVocabulary;
use toolbelt_engine::scheduler::Permissions;
use toolbelt_engine::{
    registry::Origin, registry::ToolRegistry, rules::PermissionRules, rules::RuleList,
};
use toolbelt_hooks::HookEngine;
use toolbelt_mcp::McpServers;
use toolbelt_tools::skills::{SkillTool, Skills};

use crate::error::{ClauseError, FlagError};
use crate::options::{Policy, SessionOptions, Warn};
use crate::paths::{absolute, session_dir};
use crate::protect::{load_lsp, protect_configuration, protect_declared_commands};

/// An open session: what every front end needs to run tools.
pub struct Session {
    /// What every tool call sees: roots, settings, session directory, home.
    pub env: Arc<ToolEnvironment>,
    /// The tools.
    pub registry: ToolRegistry,
    /// The MCP servers; empty until [`Session::load_extensions`].
    pub mcp: McpServers,
    /// The permission rules of the settings, path rules anchored at the primary
    /// workspace directory and `$HOME`. Their path part is also in `env.roots`.
    pub rules: PermissionRules,
    /// The shell tool's background jobs (for `task_stop`).
    pub shell_jobs: Arc<toolbelt_tools::JobTable>,
    /// The skills of `.qwen/skills`, `.agents/skills` and `~/.qwen/skills`; the `skill`
    /// tool is registered when there is one.
    pub skills: Arc<Skills>,
    /// The language servers of `.lsp.json` (project, when trusted, and user); the `lsp`
    /// tool is registered when one is configured.
    pub lsp: Arc<toolbelt_lsp::Servers>,
    /// Why a `.lsp.json` gave no servers (a bad file, an untrusted folder), for `lsp list`.
    pub lsp_problems: Vec<String>,
    /// Every warning of the assembly (untrusted settings, discovery, manifests,
    /// registry): `mcp serve` sends them to its client.
    pub warnings: Vec<String>,
    /// The hooks of the settings (and of an SDK, once added); `None` without any.
    pub(crate) hooks: Option<HookEngine>,
    /// The declared tools that did not load, one line each naming file and entry; also
    /// in `warnings`. `tools lint` counts them as errors.
    pub load_errors: Vec<String>,
    /// How the session was opened (its MCP servers, its warning sink).
    pub(crate) options: SessionOptions,
    /// The directory it was opened in.
    pub(crate) dir: PathBuf,
    /// `--context KEY=JSON` pairs, over the session's own when-clause keys.
    context_overrides: Map<String, Value>,
    /// The session's worktrees (issue 45), shared with the worktree tools.
    pub(crate) worktrees: Arc<toolbelt_tools::worktree::SessionWorktrees>,
    /// A worktree made for this session now, announced to the hooks when the agent
    /// starts (the hooks then know the session).
    pub(crate) fresh_worktree: Option<toolbelt_tools::worktree::Worktree>,
    /// The directory the person started in, when a worktree took its place: its store
    /// keeps the saved sessions.
    pub(crate) home: Option<PathBuf>,
    /// Where the model works, said in its system prompt when that is a worktree.
    pub(crate) worktree_reminder: Option<String>,
}

/// Why a session could not be assembled: always the person's configuration.
#[derive(Debug)]
pub struct SetupError(pub String);

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SetupError {}

/// What opening assembles before the registry: settings, roots and what they make
/// readable or protected.
struct Grounds {
    settings: Settings,
    roots: WorkspaceRoots,
    rules: PermissionRules,
    skills: Arc<Skills>,
    lsp: Arc<toolbelt_lsp::Servers>,
    lsp_problems: Vec<String>,
    hooks: Option<HookEngine>,
    warnings: Vec<String>,
}

impl Session {
    /// Opens the session whose primary directory is `dir` (its settings, its rules'
    /// anchor), with the built-in tools, the skills and the language servers. The
    /// discovered, MCP and declared tools join with [`Session::load_extensions`].
    pub fn open(dir: &Path, options: SessionOptions) -> Result<Session, SetupError> {
        let context_overrides = parse_context_pairs(&options.context)?;
        // Issue 45: a worktree takes the place of `dir` before anything is read from it.
        let attached = crate::worktree::attach(dir, &options.worktree, &options.warn)?;
        let dir = attached.dir.as_path();
        let grounds = Grounds::load(dir, &options)?;
        attached.prepare(&grounds.settings, &options.warn);
        // A store an earlier toolbelt made readable to others is narrowed before
        // anything is added to it (issue 40).
        let home = crate::paths::toolbelt_home();
        if let Err(e) = toolbelt_config::store_files::tighten(&home) {
            tracing::warn!("cannot narrow the modes of {}: {e}", home.display());
        }
        let session_dir = session_dir(dir);
        let mut roots = grounds.roots;
        make_readable(&mut roots, &grounds.skills, &session_dir);
        let settings = Arc::new(grounds.settings);
        let user_home = std::env::var_os("HOME").map(PathBuf::from);
        protect_declared_commands(&mut roots, &settings, &session_dir, user_home.clone());
        let mut env = ToolEnvironment::new(roots, settings, session_dir);
        env.user_home = user_home;
        env.toolbelt_home = Some(crate::paths::toolbelt_home());
        let env = Arc::new(env);
        let jobs = options.shell_jobs.clone();
        // Issue 45: the worktree tools only in a repository, after the stale sweep.
        let worktrees = crate::worktree::in_repository(dir).then(|| {
            crate::worktree::sweep(dir);
            attached.state.clone()
        });
        let (registry, shell_jobs) =
            builtin_registry(&env, &grounds.skills, &grounds.lsp, jobs, worktrees);
        let mut session = Session {
            env,
            registry,
            mcp: McpServers::empty(),
            rules: grounds.rules,
            shell_jobs,
            skills: grounds.skills,
            lsp: grounds.lsp,
            lsp_problems: grounds.lsp_problems,
            warnings: grounds.warnings,
            hooks: grounds.hooks,
            load_errors: Vec::new(),
            options,
            dir: dir.to_path_buf(),
            context_overrides,
            worktrees: attached.state,
            fresh_worktree: attached.fresh,
            home: attached.home,
            worktree_reminder: attached.reminder,
        };
        if let Some(hooks) = session.hooks() {
            session.worktrees.set_hooks(hooks);
        }
        for warning in session.registry.warnings() {
            tracing::warn!("{warning}");
            session.warnings.push(warning.clone());
        }
        session.apply_when(session.settings_mode());
        Ok(session)
    }

    /// Where this session's warnings go.
    pub fn warn(&self) -> &Warn {
        &self.options.warn
    }

    /// The session's hooks as its schedulers and agent hold them; `None` without any.
    pub fn hooks(&self) -> Option<Arc<dyn HookRunner>> {
        self.hooks
            .clone()
            .map(|engine| Arc::new(engine) as Arc<dyn HookRunner>)
    }

    /// The session's hook engine (to give it the session's id and transcript, or an
    /// SDK's callbacks); `None` without hooks.
    pub fn hook_engine(&self) -> Option<&HookEngine> {
        self.hooks.as_ref()
    }

    /// Adds an SDK's callback hooks (stream-JSON `initialize.hooks`), making the engine
    /// if the settings gave none. Call before the agent is made, which takes
    /// [`Session::hooks`] as it is then. The answer is the warnings for entries skipped
    /// (events toolbelt does not raise); a bad entry is an error and adds nothing.
    pub fn add_hook_callbacks(
        &mut self,
        hooks: &Value,
        callbacks: Arc<dyn toolbelt_hooks::HookCallbacks>,
    ) -> Result<Vec<String>, toolbelt_hooks::ConfigErrors> {
        let engine = self.hooks.get_or_insert_with(|| {
            let session = toolbelt_hooks::SessionInfo {
                session_id: uuid::Uuid::new_v4().to_string(),
                transcript_path: None,
                cwd: self.dir.clone(),
            };
            let urls = self.env.settings.security.allowed_http_hook_urls.clone();
            HookEngine::new(toolbelt_hooks::HookConfig::default(), session, urls)
        });
        let added = engine.add_callbacks(hooks, callbacks);
        // An engine made here is the worktree announcements' too.
        let runner = Arc::new(engine.clone()) as Arc<dyn HookRunner>;
        self.worktrees.set_hooks(runner);
        added
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
    /// [`toolbelt_config::when::session_context`], then the `--context` pairs (which win).
    pub fn when_context(&self, mode: ApprovalMode) -> Map<String, Value> {
        let mut keys = toolbelt_config::when::session_context(
            &self.env.settings,
            self.env.roots.roots(),
            mode,
        );
        keys.extend(self.context_overrides.clone());
        keys
    }

    /// `toolbelt tools when EXPR`: the clause evaluated against this session's keys in
    /// the settings' approval mode; a clause that does not parse is an error of three
    /// lines, the last pointing at the place.
    pub fn when_verdict(&self, expr: &str) -> Result<bool, ClauseError> {
        let clause = toolbelt_config::when::parse(expr).map_err(|error| {
            let column = expr[..error.offset.min(expr.len())].chars().count();
            ClauseError {
                error,
                expr: expr.to_string(),
                column,
            }
        })?;
        Ok(clause.evaluate(&self.when_context(self.settings_mode())))
    }

    /// Evaluates every tool's `when` clause in approval mode `mode` (see
    /// [`ToolRegistry::apply_when`]).
    pub fn apply_when(&mut self, mode: ApprovalMode) {
        let context = self.when_context(mode);
        self.registry.apply_when(&context);
    }

    /// The scheduler's inputs under `policy`: the settings' rules with the policy's
    /// allow rules, and the approval mode. A rule that does not parse is an error, as in
    /// the settings: dropping it would run the session under other rules than the ones
    /// given. `flag` names the flag in that error.
    pub fn permissions(
        &self,
        policy: &Policy,
        flag: &str,
    ) -> Result<(Permissions, ApprovalMode), FlagError> {
        let mut permissions = Permissions::from_rules(self.rules.clone());
        for tool in &policy.allowed_tools {
            permissions.add(RuleList::Allow, tool);
        }
        if let Some(bad) = permissions.invalid().first() {
            return Err(FlagError::BadRule {
                flag: flag.to_string(),
                rule: bad.to_string(),
            });
        }
        let mode = approval_mode(
            policy.approval_mode.as_deref(),
            policy.yolo,
            &self.env.settings,
        )?;
        Ok((permissions, mode))
    }

    /// Warns, once, about rules that have no effect: entries that do not parse, and tool
    /// names that are neither a tool of this session (registered, or removed by the
    /// settings) nor a rule alias such as `Read` or `Bash`, naming the closest tool.
    /// Call after [`Session::load_extensions`], so MCP and discovered tools are known.
    pub fn warn_about_rules(&self, rules: &PermissionRules) {
        for entry in &rules.invalid {
            self.warn().say(&format!(
                "ignoring the permission rule `{entry}`: unbalanced parentheses"
            ));
        }
        for name in rules.unknown_tools(|name| self.registry.knows(name)) {
            let closest = self
                .registry
                .closest(&name, 1)
                .first()
                .map(|c| format!("; the closest tool is `{c}`"))
                .unwrap_or_default();
            self.warn().say(&format!(
                "a permission rule names `{name}`, which is no tool of this session{closest}; the rule has no effect"
            ));
        }
    }

    /// Runs the discovery command and, when `connect`, connects the MCP servers, side by
    /// side, and registers their tools, then the declared tools of the manifests. A
    /// failing command or server is a warning, never an error; only an unreadable
    /// `--mcp-config` is. Waits for every server: for listings and calls (`tools list`,
    /// `tools call`), whose answer is the servers' tools. (`mcp serve` connects its
    /// servers once for every session.)
    pub async fn load_extensions(&mut self, connect: bool) -> Result<(), SetupError> {
        let sdk = std::mem::take(&mut self.options.sdk_mcp_servers);
        let connecting = async {
            if connect {
                crate::mcp::connect(&self.env, &self.options.mcp, &[], sdk).await
            } else {
                Ok(McpServers::empty())
            }
        };
        let (discovery, mcp) = tokio::join!(toolbelt_tools::discover(&self.env), connecting);
        let declared = toolbelt_tools::load_declared(&self.env);
        self.add_extensions(discovery, mcp?, declared).await;
        Ok(())
    }

    /// [`Session::load_extensions`] for an agent session: the MCP servers start in the
    /// background and their tools join the agent's when they are up (see `mcp`); only
    /// the servers `prompt` needs (`/server:prompt`, `@server:uri`) are waited for.
    pub(crate) async fn load_extensions_starting(
        &mut self,
        prompt: &str,
    ) -> Result<(), SetupError> {
        let sdk = std::mem::take(&mut self.options.sdk_mcp_servers);
        // Declared tools bound to an MCP tool are registered at start, over that tool:
        // their servers are needed too.
        let declared = toolbelt_tools::load_declared(&self.env);
        let bound = declared.mcp_servers();
        let starting = crate::mcp::start(&self.env, &self.options.mcp, sdk, prompt, &bound);
        let (discovery, mcp) = tokio::join!(toolbelt_tools::discover(&self.env), starting);
        self.add_extensions(discovery, mcp?, declared).await;
        Ok(())
    }

    /// Registers the discovered tools, the tools of the servers that are up, and the
    /// declared tools.
    async fn add_extensions(
        &mut self,
        discovery: toolbelt_tools::Discovery,
        mcp: McpServers,
        declared: toolbelt_tools::LoadedManifests,
    ) {
        let warnings_before = self.registry.warnings().len();
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
        // Taken before registering: a server up after this is registered now or at the
        // agent's next request, never lost between the two.
        mcp.take_joined();
        mcp.register(&mut self.registry);
        // Servers such as server-everything announce a changed list right after the
        // handshake; take what has arrived so far.
        mcp.refresh_pending(&mut self.registry).await;
        self.mcp = mcp;
        self.register_declared(declared);
        for warning in &self.registry.warnings()[warnings_before..] {
            tracing::warn!("{warning}");
            self.warnings.push(warning.clone());
        }
    }

    /// Declared tools last: their `mcp` and `builtin` bindings name tools registered
    /// before them.
    fn register_declared(&mut self, declared: toolbelt_tools::LoadedManifests) {
        for warning in toolbelt_tools::register_declared(&mut self.registry, declared) {
            self.options.warn.say(&warning);
            self.warnings.push(warning.to_string());
            self.load_errors.push(warning);
        }
        self.registry.apply_settings(&self.env.settings);
        self.apply_when(self.settings_mode());
    }

    /// Stops the MCP servers (bounded: a server that ignores its closed stdin is killed).
    pub async fn close(&self) {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(3), self.mcp.close()).await;
    }
}

impl Grounds {
    /// Settings (trust applied), roots with the path policy and protected configuration,
    /// rules, skills and language servers of the session at `cwd`.
    fn load(cwd: &Path, options: &SessionOptions) -> Result<Grounds, SetupError> {
        let mut paths = SettingsPaths::standard(cwd);
        if options.trust_workspace || trust_from_environment() {
            paths = paths.trusting_workspace();
        }
        if let Some(sources) = options.setting_sources {
            if !sources.user {
                paths.user = None;
            }
            if !sources.project {
                paths.workspace = None;
            }
        }
        let settings = Settings::load(&paths).map_err(|e| SetupError(e.to_string()))?;
        let mut warnings = Vec::new();
        if let Some(untrusted) = &settings.untrusted_workspace {
            options.warn.say(&untrusted.warning());
            warnings.push(untrusted.warning());
        }
        let mut dirs: Vec<PathBuf> = vec![cwd.to_path_buf()];
        dirs.extend(options.more_dirs.iter().cloned());
        dirs.extend(options.include_directories.iter().map(|d| absolute(cwd, d)));
        let from_settings = settings.context.include_directories.iter();
        dirs.extend(from_settings.map(|d| absolute(cwd, Path::new(d))));
        let mut roots = WorkspaceRoots::new(&dirs).map_err(|e| SetupError(e.to_string()))?;
        // Rules are parsed before the registry exists, with every built-in's words
        // (whatever the settings register), so `WebSearch` means `web_search` and
        // `Read(...)` covers `grep_search` whatever is configured.
        let mut rules = PermissionRules::from_settings(&settings, &rule_vocabulary());
        if let Some(root) = roots.primary() {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            rules = rules.with_base(root, home);
        }
        // Path rules name operations on paths: every file tool resolves and walks
        // through the roots, so they are applied there (see `rules/paths.rs`).
        roots = roots.with_path_policy(rules.path_policy());
        protect_configuration(&mut roots, &paths, &settings, cwd, &options.mcp.mcp_config);
        let hooks = crate::hooks::load(&settings, cwd, &mut roots, options, &mut warnings)?;
        // Skills are read once, here: a skill the model writes later grants nothing.
        // Project skills of an untrusted folder load without their allowed-tools.
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let trusted = settings.untrusted_project.is_none();
        let skills = Skills::load(roots.primary(), home.as_deref(), trusted);
        let skills = Arc::new(skills.with_plugins(&options.plugin_skills));
        for warning in skills.warnings() {
            options.warn.say(warning);
            warnings.push(warning.clone());
        }
        let said = warnings.len();
        let keep = options.lsp_servers.as_ref();
        let (lsp, lsp_problems) =
            load_lsp(&mut roots, home.as_deref(), &settings, keep, &mut warnings);
        for warning in &warnings[said..] {
            options.warn.say(warning);
        }
        Ok(Grounds {
            settings,
            roots,
            rules,
            skills,
            lsp,
            lsp_problems,
            hooks,
            warnings,
        })
    }
}

/// The user skill folders, the session directory (spilled output, job logs) and `mcp
/// serve` connections' job logs become readable; failing to create a directory only
/// costs that.
fn make_readable(roots: &mut WorkspaceRoots, skills: &Skills, session_dir: &Path) {
    // User skills live outside the workspace; the model reads their files.
    for dir in skills.readable_dirs() {
        if let Err(e) = roots.add_readable(dir) {
            tracing::warn!("cannot read {}: {e}", dir.display());
        }
    }
    // Both are in toolbelt's store: created for the user alone.
    let private = toolbelt_config::store_files::create_dir_all;
    if let Err(e) = private(session_dir).and_then(|()| roots.add_readable(session_dir)) {
        tracing::warn!("cannot create {}: {e}", session_dir.display());
    }
    // Unasked commands' logs that a killed toolbelt could not remove go now.
    toolbelt_tools::sweep_unasked_logs(session_dir);
    // Each connection reads its own folder, by a name no other connection can list.
    let connection_logs = toolbelt_tools::connection_logs_dir(session_dir);
    if let Err(e) =
        private(&connection_logs).and_then(|()| roots.add_readable_below(&connection_logs))
    {
        tracing::warn!("cannot create {}: {e}", connection_logs.display());
    }
}

/// The built-in tools (the edit tools checked by a language server when one is
/// configured), `skill` with a skill to offer and `lsp` with a server to ask.
fn builtin_registry(
    env: &Arc<ToolEnvironment>,
    skills: &Arc<Skills>,
    lsp: &Arc<toolbelt_lsp::Servers>,
    jobs: Option<Arc<toolbelt_tools::JobTable>>,
    worktrees: Option<Arc<toolbelt_tools::worktree::SessionWorktrees>>,
) -> (ToolRegistry, Arc<toolbelt_tools::JobTable>) {
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
        .then(|| toolbelt_lsp::wait_after_edit(env))
        .flatten();
    for tool in toolbelt_tools::builtin_tools_with_shell(env, shell) {
        let tool: Arc<dyn toolbelt_core::Tool> = match check_edits {
            Some(wait) if tool.facts().edits_named_files => Arc::new(
                toolbelt_lsp::CheckedEdits::new(tool, env.clone(), lsp.clone(), wait),
            ),
            _ => tool,
        };
        registry.register(tool, Origin::BuiltIn);
    }
    // Only with a skill to offer: an empty `skill` tool would cost every request its
    // declaration and tell the model nothing.
    if !skills.is_empty() {
        let tool = SkillTool::new(skills.clone());
        registry.register(Arc::new(tool), Origin::BuiltIn);
    }
    // Only with a server to ask: the tool would answer nothing else.
    if !lsp.configs().is_empty() {
        let tool = toolbelt_lsp::LspTool::new(env.clone(), lsp.clone());
        registry.register(Arc::new(tool), Origin::BuiltIn);
    }
    if let Some(state) = worktrees {
        let enter = toolbelt_tools::EnterWorktree::new(env.clone(), state.clone());
        registry.register(Arc::new(enter), Origin::BuiltIn);
        let exit = toolbelt_tools::ExitWorktree::new(env.clone(), state);
        registry.register(Arc::new(exit), Origin::BuiltIn);
    }
    registry.apply_settings(&env.settings);
    (registry, shell_jobs)
}

/// The approval mode of `--approval-mode` / `--yolo`, else of the settings.
pub fn approval_mode(
    flag: Option<&str>,
    yolo: bool,
    settings: &Settings,
) -> Result<ApprovalMode, FlagError> {
    if yolo {
        if flag.is_some_and(|m| m != "yolo") {
            return Err(FlagError::YoloWithMode);
        }
        return Ok(ApprovalMode::Yolo);
    }
    match flag {
        // Claude Code's: nobody is asked (`DontAsk`), so what would ask is refused, as
        // headless. Claude's `auto` (a model classifier approves) is the default mode
        // here: toolbelt's own classifier already runs read-only commands unasked.
        Some("dontAsk" | "auto") => Ok(ApprovalMode::Default),
        Some(m) => m.parse().map_err(FlagError::ApprovalMode),
        None => Ok(settings
            .tools
            .approval_mode
            .map(|m| m.0)
            .unwrap_or_default()),
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
pub(crate) fn trust_from_environment() -> bool {
    std::env::var("TOOLBELT_TRUST_WORKSPACE")
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

/// The words permission rules use for every built-in tool a session may register: the
/// tools crate's (the skill tool included), the agent tool's and the MCP resource tools'. Known before any
/// registry, so it cannot depend on the settings; a test holds it equal to what a full
/// session registry says (`ToolRegistry::rule_vocabulary`).
pub fn rule_vocabulary() -> RuleVocabulary {
    let mut vocabulary = toolbelt_tools::rule_vocabulary();
    vocabulary.merge(&toolbelt_agent::subagents::rule_vocabulary());
    vocabulary.merge(&toolbelt_mcp::rule_vocabulary());
    vocabulary
}
