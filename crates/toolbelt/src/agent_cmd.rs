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
use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use toolbelt_agent::prompt::{PromptFacts, system_prompt};
use toolbelt_agent::{Agent, AgentEvent, EventSink, StopReason, ToolSource};
use toolbelt_agent::{at_paths, context_files};
use toolbelt_core::scheduler::{ApprovalMode, Permissions, SchedulerConfig};
use toolbelt_core::{BoxFuture, RuleList, ToolRegistry};
use toolbelt_model::{Model, OpenAiClient, OpenAiConfig, RecordingModel, ReplayModel, UserPart};

use crate::agent_output::{self, InitInfo};
use crate::agent_sessions::{self, Choice};
use crate::cli::{
    AgentArgs, EXIT_INTERRUPTED, EXIT_OK, EXIT_TOOL_ERROR, EXIT_TURN_LIMIT, EXIT_USAGE, GlobalArgs,
};
use crate::session::{self, Session, exclude};

const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

pub async fn run(global: &GlobalArgs, args: AgentArgs) -> u8 {
    let started = Instant::now();
    if let Choice::List = Choice::of(&args) {
        return list_sessions(global);
    }
    if crate::interactive::wanted(&args) {
        return crate::interactive::run(global, args).await;
    }
    match prepare(global, &args, None).await {
        Ok(prepared) => execute(prepared, &args, started).await,
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

pub(crate) struct Prepared {
    pub agent: Agent,
    /// The agent's model, for requests of the UI's own (`/compress`).
    pub model: Arc<dyn Model>,
    pub prompt: String,
    pub model_name: String,
    /// The ID of the file this run is saved to, if it is saved.
    pub session_id: Option<String>,
    pub tools: Vec<String>,
    pub mode: ApprovalMode,
    pub cwd: PathBuf,
    /// Kept alive for the run: dropping it stops the MCP servers.
    pub mcp: Arc<toolbelt_mcp::McpServers>,
}

/// What the interactive terminal plugs into the same assembly: someone to ask, and its
/// own consumer of the events. The prompt is then optional (`-i`, or none at all).
pub(crate) struct Interactive {
    pub approver: Arc<dyn toolbelt_core::scheduler::Approver>,
    pub sink: EventSink,
    /// Where a streaming model's text goes as it arrives.
    pub text_stream: toolbelt_model::TextStream,
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

pub(crate) async fn prepare(
    global: &GlobalArgs,
    args: &AgentArgs,
    interactive: Option<Interactive>,
) -> Result<Prepared, String> {
    let mut session = Session::load(global).map_err(|e| e.0)?;
    // The saved session first: an unknown ID fails before any server starts.
    let store = agent_sessions::store(&project_of(&session)?);
    let continued = agent_sessions::load(&store, &Choice::of(args))?;
    let prompt = match &interactive {
        None => read_prompt(args)?,
        Some(_) => args.prompt_interactive.clone().unwrap_or_default(),
    };
    // Discovered and MCP tools join the built-ins; MCP servers may change theirs during
    // the run (`McpToolSource`).
    session.load_extensions(global).await.map_err(|e| e.0)?;
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    exclude(&mut session.registry, &args.policy.exclude_tools);
    let mut permissions = Permissions::from_rules(session.rules.clone());
    for tool in &args.policy.allowed_tools {
        permissions.add(RuleList::Allow, tool);
    }
    session.warn_about_rules(permissions.rules());
    let mode = session::approval_mode(
        args.policy.approval_mode.as_deref(),
        args.policy.yolo,
        &session.env.settings,
    )?;
    session.apply_when(mode);
    let Session {
        env, registry, mcp, ..
    } = session;
    let mcp = Arc::new(mcp);
    let stream = interactive.as_ref().map(|i| i.text_stream.clone());
    let model = build_model(args, &env.settings, &cwd, stream)?;
    let model_name = model.name().to_string();
    let log = agent_sessions::start(&store, cwd.clone(), &model_name, continued.as_ref());
    let session_id = log.as_ref().map(|l| l.id().to_string());
    env.ask_once
        .set(Arc::new(toolbelt_agent::ModelAsker(model.clone())));
    let tools: Vec<String> = registry.all().map(|r| r.name.clone()).collect();
    let names = context_files::file_names(&env.settings);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let facts = PromptFacts {
        workspace_dirs: env.roots.roots().to_vec(),
        cwd: cwd.clone(),
        approval_mode: mode.to_string(),
        tool_names: tools.clone(),
        context_files: context_files::load(&names, home.as_deref(), &cwd),
    };
    let env_settings = env.settings.clone();
    let format = args.output_format;
    let (approver, sink) = match interactive {
        Some(ui) => (Some(ui.approver), ui.sink),
        None => {
            let sink: EventSink =
                Arc::new(move |event: AgentEvent| agent_output::print_event(format, &event));
            (None, sink)
        }
    };
    let config = SchedulerConfig {
        mode,
        permissions,
        approver,
        ..Default::default()
    };
    let agent = Agent::new(
        model.clone(),
        Arc::new(registry),
        env,
        config,
        system_prompt(&facts),
        args.max_session_turns,
        Some(sink),
    )
    .with_tool_source(Arc::new(McpToolSource {
        mcp: mcp.clone(),
        settings: env_settings,
        excluded: args.policy.exclude_tools.clone(),
    }))
    .with_history(continued.map(|c| c.messages).unwrap_or_default());
    let agent = match log {
        Some(log) => agent.with_session_log(Arc::new(log)),
        None => agent,
    };
    Ok(Prepared {
        agent,
        model,
        prompt,
        model_name,
        session_id,
        tools,
        mode,
        cwd,
        mcp,
    })
}

async fn execute(p: Prepared, args: &AgentArgs, started: Instant) -> u8 {
    let format = args.output_format;
    agent_output::print_init(
        format,
        &InitInfo {
            model: &p.model_name,
            tools: p.tools.clone(),
            approval_mode: p.mode.as_str(),
            session_id: p.session_id.as_deref(),
            cwd: &p.cwd,
        },
    );
    let cancel = CancellationToken::new();
    let interrupts = watch_interrupts(cancel.clone());
    let (prompt, warnings) = at_paths::inline(
        &p.prompt,
        &p.agent.registry(),
        p.agent.scheduler().env(),
        &p.cwd,
    )
    .await;
    for warning in warnings {
        eprintln!("toolbelt: {warning}");
    }
    // `#references` count only in what the person wrote, not in inlined files.
    let outcome = p
        .agent
        .run_with_references(vec![UserPart::Text(prompt)], &p.prompt, &cancel)
        .await;
    interrupts.abort();
    agent_output::print_result(
        format,
        &outcome,
        &p.model_name,
        p.session_id.as_deref(),
        started.elapsed(),
    );
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
fn build_model(
    args: &AgentArgs,
    settings: &toolbelt_core::Settings,
    cwd: &std::path::Path,
    text_stream: Option<toolbelt_model::TextStream>,
) -> Result<Arc<dyn Model>, String> {
    let env_var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let takes_images = settings.model.vision;
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
        let base_url = args
            .openai_base_url
            .clone()
            .or_else(|| env_var("OPENAI_BASE_URL"))
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        let mut config = OpenAiConfig::new(base_url, name);
        config.api_key = args
            .openai_api_key
            .clone()
            .or_else(|| env_var("OPENAI_API_KEY"));
        config.takes_images = takes_images;
        config.text_stream = text_stream;
        Box::new(OpenAiClient::new(config).map_err(|e| e.to_string())?)
    };
    let model: Box<dyn Model> = match &args.record {
        Some(path) => Box::new(RecordingModel::new(model, path).map_err(|e| e.to_string())?),
        None => model,
    };
    Ok(Arc::from(model))
}

/// Ctrl-C once cancels `cancel`; twice exits. The handler is registered before this
/// returns, so an interrupt during the first request is never lost to the default action.
#[cfg(unix)]
fn watch_interrupts(cancel: CancellationToken) -> tokio::task::JoinHandle<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupts = match signal(SignalKind::interrupt()) {
        Ok(s) => s,
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
