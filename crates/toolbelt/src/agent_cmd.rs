//! `toolbelt [PROMPT]`: the headless agent, a stand-in for `qwen "prompt"`.
//!
//! Assembly only: the prompt (flag, words, standard input), the session (settings, roots,
//! registry), the permission rules and approval mode, the model (a server, or a replay
//! script, perhaps recorded), the system prompt with context files; then the loop of
//! `toolbelt-agent` runs and `agent_output` prints. Nobody can be asked here, so the
//! scheduler gets no approver: calls that would ask are refused with a message that
//! tells the model why.
//!
//! Every run is saved as a session (`agent_sessions`, format in
//! `toolbelt_agent::transcript`); `--continue` and `--resume ID` start from a saved one.
//!
//! Ctrl-C once cancels the running tools and the model request (the run then ends with
//! what it has, exit 130); twice exits at once.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use toolbelt_agent::prompt::{PromptFacts, system_prompt};
use toolbelt_agent::{Agent, AgentEvent, EventSink, StopReason, ToolSource};
use toolbelt_agent::{at_paths, context_files};
use toolbelt_core::scheduler::{Approver, Permissions, SchedulerConfig};
use toolbelt_core::{BoxFuture, RuleList, ToolRegistry};
use toolbelt_model::{Model, OpenAiClient, OpenAiConfig, RecordingModel, ReplayModel, UserPart};

use crate::agent_output;
use crate::agent_sessions::{self, Choice};
use crate::agent_subagents;
use crate::cli::{
    AgentArgs, EXIT_INTERRUPTED, EXIT_OK, EXIT_TOOL_ERROR, EXIT_TURN_LIMIT, EXIT_USAGE, GlobalArgs,
    InputFormat, OutputFormat,
};
use crate::session::{self, Session, exclude};
use crate::stream_json::model_slot::ModelSlot;
use crate::stream_json::wire::{Emitter, InitInfo};

const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

pub async fn run(global: &GlobalArgs, args: AgentArgs) -> u8 {
    let started = Instant::now();
    if let Choice::List = Choice::of(&args) {
        return list_sessions(global);
    }
    if crate::interactive::wanted(&args) {
        return crate::interactive::run(global, args).await;
    }
    if args.input_format == InputFormat::StreamJson {
        return crate::stream_json::run(global, args, started).await;
    }
    let emitter: Arc<OnceLock<Arc<Emitter>>> = Arc::new(OnceLock::new());
    let format = args.output_format;
    let sink: EventSink = match format {
        OutputFormat::Text => {
            Arc::new(move |event: AgentEvent| agent_output::print_event(format, &event))
        }
        _ => {
            let emitter = emitter.clone();
            Arc::new(move |event: AgentEvent| {
                if let Some(e) = emitter.get() {
                    e.event(&event);
                }
            })
        }
    };
    let setup = Setup {
        read_prompt: true,
        sink,
        approver: None,
    };
    match prepare(global, &args, Session::load(global).map_err(|e| e.0), setup).await {
        Ok(prepared) => {
            if format != OutputFormat::Text {
                let _ = emitter.set(Arc::new(Emitter::new(
                    prepared.session_id.clone(),
                    &prepared.model_name,
                    format,
                    args.include_partial_messages,
                )));
            }
            execute(prepared, &args, started, emitter.get().cloned()).await
        }
        Err(message) => {
            eprintln!("toolbelt: {message}");
            EXIT_USAGE
        }
    }
}

/// `--resume` without an ID: the project's sessions, newest first.
fn list_sessions(global: &GlobalArgs) -> u8 {
    let listed = Session::load(global).map_err(|e| e.0).and_then(|session| {
        let project = project_of(&session)?;
        agent_sessions::list(&agent_sessions::store(&project))
    });
    match listed {
        Ok(text) => {
            print!("{text}");
            EXIT_OK
        }
        Err(message) => {
            eprintln!("toolbelt: {message}");
            EXIT_USAGE
        }
    }
}

/// The project a session belongs to: the primary workspace root (the current directory
/// unless the settings say otherwise).
pub(crate) fn project_of(session: &Session) -> Result<PathBuf, String> {
    match session.env.roots.primary() {
        Some(root) => Ok(root.to_path_buf()),
        None => {
            std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))
        }
    }
}

/// What differs between the ways the agent runs (a prompt, or a stream-JSON session).
pub struct Setup {
    /// Read the prompt from the arguments and standard input.
    pub read_prompt: bool,
    /// Where the agent's events go.
    pub sink: EventSink,
    /// Who is asked when a call needs approval (`None`: nobody, headless).
    pub approver: Option<Arc<dyn Approver>>,
}

pub struct Prepared {
    pub agent: Agent,
    pub prompt: String,
    pub model_name: String,
    /// The ID of the file this run is saved to, else of `--session-id`, else a fresh one.
    pub session_id: String,
    /// Whether the run is saved under `session_id` (it is not when the sessions
    /// directory cannot be written).
    pub saved: bool,
    pub cwd: PathBuf,
    /// Kept alive for the run: dropping it stops the MCP servers.
    pub mcp: Arc<toolbelt_mcp::McpServers>,
    /// The sub-agents the `agent` tool offers and the skills (`system`/`init`).
    pub agents: Vec<String>,
    pub skills: Vec<String>,
    /// Background agents still running when the run ends are stopped.
    pub background: Arc<toolbelt_agent::subagents::BackgroundTasks>,
    /// Monitors still running when the run ends are ended (issue 33).
    pub monitors: Arc<toolbelt_tools::MonitorTable>,
    /// Scheduled prompts, fired when the session is idle (interactive, stream-json).
    pub cron: Option<Arc<toolbelt_tools::cron::CronTasks>>,
    /// The model, swappable (`set_model`).
    pub model: Arc<ModelSlot>,
    pub settings: Arc<toolbelt_core::Settings>,
    /// What the agent's system prompt is made of, to make it again.
    pub system_prompt: SystemPrompt,
}

/// A session's system prompt and what it is made of, so it can be made again when
/// what it names changes: the approval mode (the interactive agent and the stream-json
/// loop remake it before each prompt) and the context files (`/memory refresh`,
/// `/memory add`).
pub struct SystemPrompt {
    facts: PromptFacts,
    /// `--system-prompt`: used instead of toolbelt's own.
    own: Option<String>,
    /// `--append-system-prompt`.
    append: Option<String>,
    /// The context files' names (`context.fileName`), and the home they are also
    /// looked for in.
    names: Vec<String>,
    home: Option<PathBuf>,
}

impl SystemPrompt {
    /// toolbelt's system prompt naming approval mode `mode`, or `--system-prompt`'s,
    /// with `--append-system-prompt` after it.
    pub fn text(&self, mode: toolbelt_core::scheduler::ApprovalMode) -> String {
        let mut prompt = match &self.own {
            Some(own) => own.clone(),
            None => {
                let mut facts = self.facts.clone();
                facts.approval_mode = mode.to_string();
                system_prompt(&facts)
            }
        };
        if let Some(more) = &self.append {
            prompt.push_str("\n\n");
            prompt.push_str(more);
        }
        prompt
    }

    /// The context files in the prompt, as last loaded.
    pub fn context_files(&self) -> &[context_files::ContextFile] {
        &self.facts.context_files
    }

    /// Reads the context files again from disk.
    pub fn reload_context_files(&mut self) {
        self.facts.context_files =
            context_files::load(&self.names, self.home.as_deref(), &self.facts.cwd);
    }
}

/// The MCP servers as the agent's [`ToolSource`]: a server's announced change, or a call
/// to a tool named after a server but not (yet) registered, lists that server's tools
/// again; the settings' filters and `--exclude-tools` apply to the new list as they did
/// at start-up.
struct McpToolSource {
    mcp: Arc<toolbelt_mcp::McpServers>,
    settings: Arc<toolbelt_core::Settings>,
    excluded: Vec<String>,
}

impl ToolSource for McpToolSource {
    fn refresh<'a>(
        &'a self,
        current: &'a ToolRegistry,
        unknown: &'a [String],
    ) -> BoxFuture<'a, Option<ToolRegistry>> {
        Box::pin(async move {
            let mut aliases = self.mcp.take_changed().await;
            for name in unknown {
                if let Some(alias) = self.mcp.server_of_tool_name(name)
                    && !aliases.iter().any(|a| a == alias)
                {
                    aliases.push(alias.to_string());
                }
            }
            if aliases.is_empty() {
                return None;
            }
            let mut next = current.clone();
            for alias in &aliases {
                match self.mcp.refresh(alias, &mut next).await {
                    Ok(()) => tracing::info!("MCP server \"{alias}\": tools listed again"),
                    Err(why) => {
                        tracing::warn!("MCP server \"{alias}\": cannot refresh its tools: {why}")
                    }
                }
            }
            next.apply_settings(&self.settings);
            exclude(&mut next, &self.excluded);
            Some(next)
        })
    }
}

/// The tools `--disallowedTools` names bare (no specifier), aliases such as `Bash`
/// resolved: they are not offered at all (Claude Code's meaning); every entry is also a
/// deny rule, so a call by any name is refused.
fn disallowed_names(rules: &[String]) -> Vec<String> {
    rules
        .iter()
        .filter_map(|r| toolbelt_core::rules::Rule::parse(r))
        .filter(|r| r.specifier.is_none())
        .flat_map(|r| r.tools)
        .collect()
}

/// Assembles the agent of `session` (loaded by the caller, perhaps with SDK MCP
/// servers added).
pub async fn prepare(
    global: &GlobalArgs,
    args: &AgentArgs,
    session: Result<Session, String>,
    setup: Setup,
) -> Result<Prepared, String> {
    let mut session = session?;
    // The saved session first: an unknown ID fails before any server starts.
    let store = agent_sessions::store(&project_of(&session)?);
    let continued = agent_sessions::load(&store, &Choice::of(args))?;
    if let Some(id) = &args.session_id {
        agent_sessions::check_new_id(&store, id)?;
    }
    let prompt = if setup.read_prompt {
        read_prompt(args)?
    } else {
        // The terminal UI's first prompt (`-i`), if any; stream-json reads its own.
        args.prompt_interactive.clone().unwrap_or_default()
    };
    // Discovered and MCP tools join the built-ins; MCP servers may change theirs during
    // the run (`McpToolSource`).
    session.load_extensions(global).await.map_err(|e| e.0)?;
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    core_tools(
        &mut session.registry,
        &session.env.settings,
        &args.core_tools,
    );
    exclude(&mut session.registry, &args.policy.exclude_tools);
    exclude(
        &mut session.registry,
        &disallowed_names(&args.claude.disallowed_tools),
    );
    let mut permissions = Permissions::from_rules(session.rules.clone());
    for tool in &args.policy.allowed_tools {
        permissions.add(RuleList::Allow, tool);
    }
    for rule in &args.claude.disallowed_tools {
        permissions.add(RuleList::Deny, rule);
    }
    // A rule that does not parse is an error, as in the settings: dropping it would run
    // the session under other rules than the ones given.
    if let Some(bad) = permissions.invalid().first() {
        return Err(format!(
            "--allowed-tools/--disallowedTools: `{bad}` is not a permission rule (write `Tool` or `Tool(specifier)`, with balanced parentheses)"
        ));
    }
    session.warn_about_rules(permissions.rules());
    let mode = session::approval_mode(
        args.policy.approval_mode.as_deref(),
        args.policy.yolo,
        &session.env.settings,
    )?;
    session.apply_when(mode);
    let project = project_of(&session)?;
    let Session {
        env,
        mut registry,
        mcp,
        shell_jobs,
        skills,
        ..
    } = session;
    let mcp = Arc::new(mcp);
    let (model, server) = build_model(args, &env.settings, &cwd)?;
    let model = Arc::new(ModelSlot::new(model));
    let model_name = model.name().to_string();
    let log = agent_sessions::start(
        &store,
        cwd.clone(),
        &model_name,
        continued.as_ref(),
        args.session_id.as_deref(),
    );
    let session_id = match (&log, &args.session_id) {
        (Some(log), _) => log.id().to_string(),
        (None, Some(id)) => id.clone(),
        (None, None) => crate::stream_json::wire::uuid(),
    };
    env.ask_once
        .set(Arc::new(toolbelt_agent::ModelAsker(model.clone())));
    // `agent`, `task_stop` and `send_message` see the tools as they are now (without
    // themselves); the settings' lists and --exclude-tools apply to them as to every
    // other tool.
    let catalog = agent_subagents::catalog(&project);
    let agents = catalog.names();
    let skills = skills.all().iter().map(|s| s.name.clone()).collect();
    for warning in &catalog.warnings {
        eprintln!("toolbelt: warning: agent definition {warning}");
    }
    let background = agent_subagents::install(
        &mut registry,
        agent_subagents::Parts {
            catalog,
            models: agent_subagents::Models {
                parent: model.clone(),
                server,
            },
            env: env.clone(),
            permissions: permissions.clone(),
            mode,
            sink: setup.sink.clone(),
            session: log
                .as_ref()
                .map(|l| (store.dir().to_path_buf(), l.id().to_string())),
            cwd: cwd.clone(),
            max_turns: args.max_session_turns,
            shell_jobs: shell_jobs.clone(),
        },
    );
    let monitors = crate::agent_monitor::install(&mut registry, &env, &shell_jobs);
    let idle_turns =
        args.input_format == InputFormat::StreamJson || crate::interactive::wanted(args);
    let cron = idle_turns
        .then(|| crate::agent_cron::install(&mut registry, &env.settings, store.dir()))
        .flatten();
    registry.apply_settings(&env.settings);
    core_tools(&mut registry, &env.settings, &args.core_tools);
    exclude(&mut registry, &args.policy.exclude_tools);
    let tools: Vec<String> = registry.all().map(|r| r.name.clone()).collect();
    let names = context_files::file_names(&env.settings);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let system_prompt = SystemPrompt {
        facts: PromptFacts {
            workspace_dirs: env.roots.roots().to_vec(),
            cwd: cwd.clone(),
            approval_mode: mode.to_string(),
            tool_names: tools.clone(),
            context_files: context_files::load(&names, home.as_deref(), &cwd),
        },
        own: args.system_prompt.clone(),
        append: args
            .append_system_prompt
            .clone()
            .filter(|m| !m.trim().is_empty()),
        names,
        home,
    };
    let env_settings = env.settings.clone();
    let config = SchedulerConfig {
        mode,
        permissions,
        approver: setup.approver,
        ..Default::default()
    };
    let agent = Agent::new(
        model.clone(),
        Arc::new(registry),
        env,
        config,
        system_prompt.text(mode),
        args.max_session_turns,
        Some(setup.sink),
    )
    .with_tool_source(Arc::new(McpToolSource {
        mcp: mcp.clone(),
        settings: env_settings.clone(),
        excluded: args.policy.exclude_tools.clone(),
    }))
    .with_history(continued.map(|c| c.messages).unwrap_or_default())
    .with_background(background.clone())
    .with_events(Arc::new(crate::agent_monitor::MonitorEvents(
        monitors.clone(),
    )));
    let saved = log.is_some();
    let agent = match log {
        Some(log) => agent.with_session_log(Arc::new(log)),
        None => agent,
    };
    Ok(Prepared {
        agent,
        prompt,
        model_name,
        session_id,
        saved,
        cwd,
        mcp,
        model,
        settings: env_settings,
        agents,
        skills,
        background,
        monitors,
        cron,
        system_prompt,
    })
}

/// `--core-tools` is `tools.core` for this run: the same allow-list of built-ins
/// (`agent`, `task_stop` and `send_message` included: they too are toolbelt's own).
fn core_tools(registry: &mut ToolRegistry, settings: &toolbelt_core::Settings, core: &[String]) {
    if !core.is_empty() {
        let mut settings = settings.clone();
        settings.tools.core = Some(core.to_vec());
        registry.apply_settings(&settings);
    }
}

/// The `system`/`init` facts of a prepared session.
pub fn init_info(p: &Prepared) -> InitInfo<'_> {
    InitInfo {
        cwd: &p.cwd,
        tools: p.agent.registry().all().map(|r| r.name.clone()).collect(),
        mcp_servers: p
            .mcp
            .reports()
            .into_iter()
            .map(|r| {
                let status = match r.status {
                    toolbelt_mcp::ServerStatus::Connected => "connected".to_string(),
                    toolbelt_mcp::ServerStatus::Connecting => "pending".to_string(),
                    _ => "failed".to_string(),
                };
                (r.alias, status)
            })
            .collect(),
        permission_mode: p.agent.scheduler().mode().as_str(),
        agents: p.agents.clone(),
        skills: p.skills.clone(),
    }
}

async fn execute(
    p: Prepared,
    args: &AgentArgs,
    started: Instant,
    emitter: Option<Arc<Emitter>>,
) -> u8 {
    let format = args.output_format;
    if let Some(emitter) = &emitter {
        emitter.init(&init_info(&p));
    }
    let cancel = CancellationToken::new();
    let interrupts = watch_interrupts(cancel.clone());
    let (prompt, warnings) =
        at_paths::inline(&p.prompt, &p.agent.registry(), p.agent.scheduler(), &p.cwd).await;
    for warning in warnings {
        eprintln!("toolbelt: {warning}");
    }
    // `#references` count only in what the person wrote, not in inlined files.
    let outcome = p
        .agent
        .run_with_references(vec![UserPart::Text(prompt)], &p.prompt, &cancel)
        .await;
    p.background.stop_all().await;
    crate::agent_monitor::end(&p.monitors).await;
    interrupts.abort();
    crate::ending::give_back_interrupts();
    match &emitter {
        Some(emitter) => {
            emitter.result(&outcome, started.elapsed());
            emitter.finish();
        }
        None => agent_output::print_result(format, &outcome),
    }
    let _ = tokio::time::timeout(std::time::Duration::from_secs(3), p.mcp.close()).await;
    match outcome.stop {
        StopReason::Answered | StopReason::PlanProposed => EXIT_OK,
        StopReason::MaxTurns(_) => EXIT_TURN_LIMIT,
        StopReason::Cancelled => EXIT_INTERRUPTED,
        _ => EXIT_TOOL_ERROR,
    }
}

/// `-p` and the positional words, then standard input when it is piped.
fn read_prompt(args: &AgentArgs) -> Result<String, String> {
    let mut parts: Vec<String> = Vec::new();
    if let Some(p) = &args.prompt {
        parts.push(p.clone());
    }
    if !args.words.is_empty() {
        parts.push(args.words.join(" "));
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let mut piped = String::new();
        stdin
            .lock()
            .read_to_string(&mut piped)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        if !piped.trim().is_empty() {
            parts.push(piped.trim_end().to_string());
        }
    }
    let prompt = parts.join("\n\n");
    if prompt.trim().is_empty() {
        return Err(
            "no prompt: give one as arguments, with -p, or on standard input; `toolbelt --help` shows more"
                .to_string(),
        );
    }
    Ok(prompt)
}

/// `--yolo`, `--approval-mode`, settings `tools.approvalMode`, then `default`.
/// The replay script, or a server from flags, environment and settings; perhaps
/// recorded.
pub fn build_model(
    args: &AgentArgs,
    settings: &toolbelt_core::Settings,
    cwd: &std::path::Path,
) -> Result<(Arc<dyn Model>, Option<OpenAiConfig>), String> {
    let env_var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let takes_images = settings.model.vision;
    let mut server = None;
    let model: Box<dyn Model> = if let Some(path) = &args.model_replay {
        Box::new(ReplayModel::from_file(path, Some(cwd)).map_err(|e| e.to_string())?)
    } else {
        let name = args
            .model
            .clone()
            .or_else(|| env_var("OPENAI_MODEL"))
            .or_else(|| settings.model.name.clone())
            .ok_or_else(|| {
                "no model: pass -m/--model, set OPENAI_MODEL, or set model.name in the settings (or use --model-replay FILE to run offline)".to_string()
            })?;
        let (base_url, origin) = match (&args.openai_base_url, env_var("OPENAI_BASE_URL")) {
            (Some(url), _) => (url.clone(), "--openai-base-url"),
            (None, Some(url)) => (url, "OPENAI_BASE_URL (or --openai-base-url)"),
            (None, None) => (
                DEFAULT_BASE_URL.to_string(),
                "the default (set OPENAI_BASE_URL or --openai-base-url)",
            ),
        };
        let mut config = OpenAiConfig::new(base_url, name);
        config.base_url_origin = Some(origin.to_string());
        config.api_key = args
            .openai_api_key
            .clone()
            .or_else(|| env_var("OPENAI_API_KEY"));
        config.takes_images = takes_images;
        server = Some(config.clone());
        Box::new(OpenAiClient::new(config).map_err(|e| e.to_string())?)
    };
    let model: Box<dyn Model> = match &args.record {
        Some(path) => Box::new(RecordingModel::new(model, path).map_err(|e| e.to_string())?),
        None => model,
    };
    Ok((Arc::from(model), server))
}

/// Ctrl-C once cancels `cancel`; twice exits. The handler is registered before this
/// returns, so an interrupt during the first request is never lost to the default action.
#[cfg(unix)]
fn watch_interrupts(cancel: CancellationToken) -> tokio::task::JoinHandle<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupts = match signal(SignalKind::interrupt()) {
        Ok(s) => {
            crate::ending::take_interrupts();
            s
        }
        Err(e) => {
            tracing::warn!("cannot watch for Ctrl-C: {e}");
            return tokio::spawn(async {});
        }
    };
    tokio::spawn(async move {
        if interrupts.recv().await.is_some() {
            eprintln!("toolbelt: interrupted; cancelling (Ctrl-C again to quit at once)");
            cancel.cancel();
        }
        if interrupts.recv().await.is_some() {
            eprintln!("toolbelt: interrupted again; ending every process it started");
            tokio::task::block_in_place(|| crate::ending::end_now(EXIT_INTERRUPTED));
        }
    })
}

#[cfg(not(unix))]
fn watch_interrupts(cancel: CancellationToken) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("toolbelt: interrupted; cancelling (Ctrl-C again to quit at once)");
            cancel.cancel();
        }
        if tokio::signal::ctrl_c().await.is_ok() {
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
    })
}
