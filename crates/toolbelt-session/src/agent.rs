//! A session's agent: the saved conversation it continues, the permission rules and
//! approval mode, the model (a server, or a replay script, perhaps recorded), the
//! sub-agents, and the system prompt with context files. Every front end that runs the
//! agent (headless, the terminal, stream-JSON) makes it here; they differ only in their
//! [`Setup`] (where events go, who is asked).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolbelt_agent::prompt::{PromptFacts, system_prompt};
use toolbelt_agent::subagents::BackgroundTasks;
use toolbelt_agent::transcript::{LoadedSession, SessionStore, SessionWriter};
use toolbelt_agent::{Agent, EventSink, context_files};
use toolbelt_config::ApprovalMode;
use toolbelt_config::settings::Settings;
use toolbelt_core::ToolEnvironment;
use toolbelt_engine::hooks::HookRunner;
use toolbelt_engine::{registry::ToolRegistry, rules::RuleList};
use toolbelt_engine::{
    scheduler::Approver, scheduler::CallRules, scheduler::Permissions, scheduler::SchedulerConfig,
};
use toolbelt_model::{Model, RecordingModel, ReplayModel};

use crate::dont_ask::DontAsk;
use crate::error::{AgentError, ModelSetupError};
use crate::mcp::McpToolSource;
use crate::model_slot::ModelSlot;
use crate::offer::ToolOffer;
use crate::options::{AgentOptions, Warn};
use crate::providers::{self, ModelChoice};
use crate::session::Session;
use crate::{saved, subagents};

/// The first prompt, read once the saved session is known and before the extensions
/// start (the headless agent reads its arguments and standard input).
pub type ReadPrompt = Box<dyn FnOnce() -> Result<String, toolbelt_core::EmbedderError> + Send>;

/// What differs between the front ends that run the agent.
pub struct Setup {
    /// Reads the first prompt; `None`: there is none yet.
    pub read_prompt: Option<ReadPrompt>,
    /// Where the agent's events go.
    pub sink: EventSink,
    /// Who is asked when a call needs approval (`None`: nobody, headless). In `dontAsk`
    /// mode it is not asked ([`DontAsk`]).
    pub approver: Option<Arc<dyn Approver>>,
}

/// A session's agent, ready to run.
pub struct Prepared {
    /// The agent (conversation, scheduler, tools).
    pub agent: Agent,
    /// The first prompt [`Setup::read_prompt`] read.
    pub prompt: String,
    /// The model's name at start.
    pub model_name: String,
    /// The ID of the file this run is saved to, else of `--session-id`, else a fresh one.
    pub session_id: String,
    /// Whether the run is saved under `session_id` (it is not when the sessions
    /// directory cannot be written).
    pub saved: bool,
    /// The session's directory.
    pub cwd: PathBuf,
    /// Kept alive for the run: dropping it stops the MCP servers.
    pub mcp: Arc<toolbelt_mcp::McpServers>,
    /// The sub-agents the `agent` tool offers.
    pub agents: Vec<String>,
    /// The skills' names.
    pub skills: Vec<String>,
    /// Background agents still running when the run ends are stopped.
    pub background: Arc<BackgroundTasks>,
    /// The session's monitors (issue 33): a front end ends those still running when
    /// a run is over.
    pub monitors: Arc<toolbelt_tools::MonitorTable>,
    /// Scheduled prompts, when [`AgentOptions::scheduled_prompts`]: the front end fires
    /// them between turns ([`crate::cron::due`]).
    pub cron: Option<Arc<toolbelt_tools::cron::CronTasks>>,
    /// The model, swappable (`set_model`).
    pub model: Arc<ModelSlot>,
    /// The session's settings.
    pub settings: Arc<Settings>,
    /// What the agent's system prompt is made of, to make it again.
    pub system_prompt: SystemPrompt,
    /// How the agent was made (a new model is built from them).
    pub options: AgentOptions,
    /// The session's hooks, for the agent's own events (the scheduler already holds
    /// them for the calls'); `None` without any.
    pub hooks: Option<Arc<dyn HookRunner>>,
    /// Claude's `dontAsk` mode: on when the policy's mode is `dontAsk`; a front end turns
    /// it off when the person chooses another mode.
    pub dont_ask: DontAsk,
    /// The session's file checkpoints (issue 34); `None` when the settings turn them
    /// off (`general.checkpointing.enabled: false`).
    pub history: Option<toolbelt_history::History>,
}

/// A session's system prompt and what it is made of, so it can be made again when
/// what it names changes: the approval mode (the interactive agent and the stream-json
/// loop remake it before each prompt) and the context files (`/memory refresh`,
/// `/memory add`).
#[derive(Clone)]
pub struct SystemPrompt {
    facts: PromptFacts,
    /// `--system-prompt`: used instead of toolbelt's own.
    own: Option<String>,
    /// `--append-system-prompt`.
    append: Option<String>,
    /// The context files' names (`context.fileName`) by where they may be read, and
    /// the home whose `.qwen` is looked in.
    names: toolbelt_config::settings::ContextFileNamesByPlace,
    home: Option<PathBuf>,
}

impl SystemPrompt {
    /// toolbelt's system prompt naming approval mode `mode`, or `--system-prompt`'s,
    /// with `--append-system-prompt` after it.
    pub fn text(&self, mode: ApprovalMode) -> String {
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

/// The saved conversation an agent continues and the file it writes.
struct Saving {
    store: SessionStore,
    continued: Option<LoadedSession>,
    /// The session's id, once [`Saving::start`] chose it (durable scheduled tasks name it).
    session_id: String,
}

/// The agent's rules and mode before the agent is made, the session's hooks, and
/// the tools it offers.
struct Ruled {
    permissions: Permissions,
    mode: ApprovalMode,
    hooks: Option<Arc<dyn HookRunner>>,
    offer: ToolOffer,
}

impl Ruled {
    /// The session's one description of its calls, once its checkpoints are open: every
    /// scheduler of the agent (its own, its sub-agents', `@` references, `/memory add`)
    /// is made from it.
    fn call_rules(
        self,
        checkpoints: Option<Arc<dyn toolbelt_engine::checkpoint::Checkpoints>>,
    ) -> (CallRules, ToolOffer) {
        let rules = CallRules::new(self.permissions, self.mode, self.hooks, checkpoints);
        (rules, self.offer)
    }
}

impl Saving {
    /// The saved session's folder and id, which sub-agents' transcripts name.
    fn transcripts(&self, log: Option<&SessionWriter>) -> Option<(PathBuf, String)> {
        log.map(|l| (self.store.dir().to_path_buf(), l.id().to_string()))
    }

    /// This run's file and its ID (else `--session-id`'s, else a fresh one).
    fn start(
        &mut self,
        cwd: &Path,
        model_name: &str,
        options: &AgentOptions,
        warn: &Warn,
    ) -> (Option<SessionWriter>, String) {
        let id = options.session_id.as_deref();
        let continued = self.continued.as_ref();
        let log = options.persist_session.then(|| {
            let run = saved::Run {
                cwd: cwd.to_path_buf(),
                model: model_name,
                continued,
                fork: options.fork_session,
                id,
            };
            saved::start(&self.store, run, warn)
        });
        let log = log.flatten();
        let session_id = match (&log, &options.session_id) {
            (Some(log), _) => log.id().to_string(),
            (None, Some(id)) => id.clone(),
            (None, None) => uuid::Uuid::new_v4().to_string(),
        };
        self.session_id.clone_from(&session_id);
        (log, session_id)
    }
}

/// The sub-agent definitions and their names, the broken ones said.
fn load_catalog(
    project: &Path,
    warn: &Warn,
) -> (toolbelt_agent::subagents::AgentCatalog, Vec<String>) {
    let catalog = subagents::catalog(project);
    let names = catalog.names();
    for warning in &catalog.warnings {
        warn.say(&format!("agent definition {warning}"));
    }
    (catalog, names)
}

impl Session {
    /// The project a session belongs to: the primary workspace root (the session's
    /// directory unless the settings say otherwise).
    pub fn project(&self) -> PathBuf {
        self.env
            .roots
            .primary()
            .map_or_else(|| self.dir.clone(), Path::to_path_buf)
    }

    /// Where the session's conversations are saved: the project the person started in,
    /// also when a worktree took its place (so `--resume ID` from there finds them).
    pub fn sessions_project(&self) -> PathBuf {
        self.home.clone().unwrap_or_else(|| self.project())
    }

    /// The worktree the session works in (started in or entered), if any.
    pub fn active_worktree(&self) -> Option<toolbelt_tools::worktree::Worktree> {
        self.worktrees.active()
    }

    /// Makes this session's agent: checks the saved session to continue (an unknown ID
    /// fails before any server starts), reads the first prompt, loads the extensions,
    /// then rules, model, sub-agents and system prompt.
    pub async fn agent(
        mut self,
        mut options: AgentOptions,
        setup: Setup,
    ) -> Result<Prepared, AgentError> {
        options.core_tools = core_names(&options.core_tools, self.rules.vocabulary());
        let store = saved::store(&self.sessions_project());
        let store_dir = store.dir().to_path_buf();
        if let Some(reminder) = self.worktree_reminder.take() {
            options.append_system_prompt = Some(match options.append_system_prompt.take() {
                Some(more) => format!("{more}\n\n{reminder}"),
                None => reminder,
            });
        }
        let continued =
            saved::load(&store, &options.resume, self.warn()).map_err(AgentError::Saved)?;
        if let Some(id) = &options.session_id {
            if continued.is_some() && !options.fork_session {
                return Err(AgentError::Flags(format!(
                    "--session-id {id} with --resume or --continue needs --fork-session (the continued session keeps its own ID otherwise)"
                )));
            }
            saved::check_new_id(&store, id).map_err(AgentError::Saved)?;
        }
        for ignored in &options.ignored {
            self.warn().say(&format!(
                "{} is accepted and ignored: {}",
                ignored.flag, ignored.why
            ));
        }
        let prompt = match setup.read_prompt {
            Some(read) => read().map_err(|e| AgentError::Prompt(e.into()))?,
            None => String::new(),
        };
        // Discovered and MCP tools join the built-ins; MCP servers start in the background
        // and may add or change theirs during the run (`McpToolSource`).
        self.load_extensions_starting(&prompt).await?;
        let ruled = self.rule_agent(&options).map_err(AgentError::Flags)?;
        let source = if continued.is_some() {
            "resume"
        } else {
            "startup"
        };
        let saving = Saving {
            store,
            continued,
            session_id: String::new(),
        };
        let fresh_worktree = self.fresh_worktree.take();
        let (worktrees, warn) = (self.worktrees.clone(), self.warn().clone());
        let dont_ask = DontAsk::new(options.policy.approval_mode.as_deref());
        let approver = setup.approver.map(|approver| dont_ask.wrap(approver));
        let mut prepared = self.make_agent(options, setup.sink, approver, ruled, saving)?;
        // Set up: the MCP servers the prompt did not need start now, beside the first
        // turn rather than competing with the setting up.
        prepared.mcp.launch();
        prepared.prompt = prompt;
        prepared.dont_ask = dont_ask;
        if prepared.saved {
            let id = &prepared.session_id;
            crate::worktree::write_sidecar(&store_dir, id, &worktrees, &warn);
        }
        if let Some(made) = fresh_worktree {
            let event = toolbelt_engine::hooks::HookEvent::WorktreeCreate;
            worktrees.announce(event, &made).await;
        }
        // SessionStart: what its hooks say goes with the first prompt.
        let cancel = tokio_util::sync::CancellationToken::new();
        prepared.agent.start_session(source, &cancel).await;
        Ok(prepared)
    }

    /// The tools the options offer and the rules they add; `when` clauses in the mode.
    fn rule_agent(&mut self, options: &AgentOptions) -> Result<Ruled, String> {
        let offer = ToolOffer::for_agent(&self.env.settings, options, self.rules.vocabulary());
        offer.apply(&mut self.registry);
        let mut permissions = Permissions::from_rules(self.rules.clone());
        for tool in &options.policy.allowed_tools {
            permissions.add(RuleList::Allow, tool);
        }
        for rule in &options.disallowed_tools {
            permissions.add(RuleList::Deny, rule);
        }
        for source in &options.claude_settings {
            let read = crate::claude_settings::read(source)?;
            for (list, rule) in &read.rules {
                permissions.add(*list, rule);
            }
            if !read.ignored_keys.is_empty() {
                self.warn().say(&format!(
                    "Claude settings: {} accepted and ignored (toolbelt reads their permissions)",
                    read.ignored_keys.join(", ")
                ));
            }
        }
        // A rule that does not parse is an error, as in the settings: dropping it would run
        // the session under other rules than the ones given.
        if let Some(bad) = permissions.invalid().first() {
            return Err(format!(
                "--allowed-tools/--disallowedTools: `{bad}` is not a permission rule (write `Tool` or `Tool(specifier)`, with balanced parentheses)"
            ));
        }
        self.warn_about_rules(permissions.rules());
        let policy = &options.policy;
        let mode = crate::session::approval_mode(
            policy.approval_mode.as_deref(),
            policy.yolo,
            &self.env.settings,
        )
        .map_err(|e| e.to_string())?;
        self.apply_when(mode);
        Ok(Ruled {
            permissions,
            mode,
            // The engine's state is shared by its clones: the session id and
            // transcript it is told in `make_agent` reach these copies too.
            hooks: self.hooks(),
            offer,
        })
    }

    /// The model, the saved file, the sub-agent tools, the system prompt and the agent.
    fn make_agent(
        self,
        options: AgentOptions,
        sink: EventSink,
        approver: Option<Arc<dyn Approver>>,
        ruled: Ruled,
        mut saving: Saving,
    ) -> Result<Prepared, AgentError> {
        let (project, cwd) = (self.project(), self.dir.clone());
        let (catalog, agents) = load_catalog(&project, self.warn());
        let Session {
            env,
            mut registry,
            mcp,
            shell_jobs,
            skills,
            hooks,
            worktrees,
            ..
        } = self;
        let mcp = Arc::new(mcp);
        let (model, model_name, server) =
            session_model(&options, &env, &cwd).map_err(AgentError::Model)?;
        let (log, session_id) = saving.start(&cwd, &model_name, &options, &self.options.warn);
        let hooks = told_the_session(hooks, &session_id, log.as_ref());
        let (history, checkpoints) = crate::undo::open(&env, &project, &session_id);
        let (rules, offer) = ruled.call_rules(checkpoints);
        let mode = rules.mode();
        // The sub-agent tools see the tools as they are now (without themselves).
        let parts = subagents::Parts {
            catalog,
            parent_model: model.clone(),
            server,
            env: env.clone(),
            rules: rules.clone(),
            sink: sink.clone(),
            session: saving.transcripts(log.as_ref()),
            cwd: cwd.clone(),
            max_turns: options.max_session_turns,
            shell_jobs: shell_jobs.clone(),
            isolation: crate::worktree::isolation(&env, &cwd, &worktrees),
        };
        let background = subagents::install(&mut registry, parts);
        let (monitors, cron) = scheduling(&mut registry, &env, &shell_jobs, &options, &saving);
        offer.apply(&mut registry);
        let system_prompt = make_system_prompt(&options, &env, &registry, &cwd, mode);
        let prompt_text = system_prompt.text(mode);
        registry.compile_builtin_schemas_in_background();
        let agent = Agent::new(
            model.clone(),
            Arc::new(registry),
            env.clone(),
            SchedulerConfig::new(rules).approver(approver),
            prompt_text,
            options.max_session_turns,
            Some(sink),
        );
        let saved = log.is_some();
        let agent = finish_agent(agent, &mcp, offer, saving.continued, log, &background)
            .with_events(Arc::new(crate::monitor::MonitorEvents(monitors.clone())));
        Ok(Prepared {
            agent,
            prompt: String::new(),
            model_name,
            session_id,
            saved,
            cwd,
            mcp,
            model,
            settings: env.settings.clone(),
            agents,
            skills: skills.all().iter().map(|s| s.name.clone()).collect(),
            background,
            monitors,
            cron,
            system_prompt,
            options,
            hooks,
            dont_ask: DontAsk::default(),
            history,
        })
    }
}

/// The session's hooks, told the conversation's id and file (hooks see them from its
/// first event).
fn told_the_session(
    hooks: Option<toolbelt_hooks::HookEngine>,
    session_id: &str,
    log: Option<&SessionWriter>,
) -> Option<Arc<dyn HookRunner>> {
    let engine = hooks?;
    engine.set_session(session_id, log.map(|l| l.path().to_path_buf()));
    Some(Arc::new(engine))
}

/// The session's model behind a [`ModelSlot`] (so `set_model` can swap it), which is
/// also the one tools ask (`web_fetch`'s summaries); its name at start and its
/// server's settings.
fn session_model(
    options: &AgentOptions,
    env: &ToolEnvironment,
    cwd: &Path,
) -> Result<(Arc<ModelSlot>, String, Option<ModelChoice>), String> {
    let (model, server) = build_model(options, &env.settings, cwd).map_err(|e| e.to_string())?;
    let model = Arc::new(ModelSlot::new(model));
    env.ask_once
        .set(Arc::new(toolbelt_agent::ModelAsker(model.clone())));
    // MCP servers' sampling requests, once approved (`server_asks`).
    env.server_asks
        .set_sampler(Arc::new(crate::sampling::ModelSampler(model.clone())));
    let name = model.name().to_string();
    Ok((model, name, server))
}

/// `monitor`, and the cron tools when the front end fires scheduled prompts (issue 33).
fn scheduling(
    registry: &mut ToolRegistry,
    env: &Arc<ToolEnvironment>,
    shell_jobs: &Arc<toolbelt_tools::JobTable>,
    options: &AgentOptions,
    saving: &Saving,
) -> (
    Arc<toolbelt_tools::MonitorTable>,
    Option<Arc<toolbelt_tools::cron::CronTasks>>,
) {
    let monitors = crate::monitor::install(registry, env, shell_jobs);
    let cron = options
        .scheduled_prompts
        .then(|| crate::cron::install(registry, env, saving.store.dir(), &saving.session_id))
        .flatten();
    (monitors, cron)
}

/// The agent with its tool source (the MCP servers), history, background agents and
/// session file.
fn finish_agent(
    agent: Agent,
    mcp: &Arc<toolbelt_mcp::McpServers>,
    offer: ToolOffer,
    continued: Option<LoadedSession>,
    log: Option<SessionWriter>,
    background: &Arc<BackgroundTasks>,
) -> Agent {
    let notes = crate::mcp::McpNotes::default();
    let agent = agent
        .with_tool_source(Arc::new(McpToolSource {
            mcp: mcp.clone(),
            offer,
            notes: notes.clone(),
        }))
        .with_events(Arc::new(notes))
        .with_events(Arc::new(crate::mcp::ResourceUpdates(mcp.clone())))
        .with_history(continued.map(|c| c.messages).unwrap_or_default())
        .with_background(background.clone());
    match log {
        Some(log) => agent.with_session_log(Arc::new(log)),
        None => agent,
    }
}

/// The system prompt's facts: workspace, tools, mode, context files.
fn make_system_prompt(
    options: &AgentOptions,
    env: &ToolEnvironment,
    registry: &ToolRegistry,
    cwd: &Path,
    mode: ApprovalMode,
) -> SystemPrompt {
    let names = context_files::file_names(&env.settings);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    SystemPrompt {
        facts: PromptFacts {
            workspace_dirs: env.roots.roots().to_vec(),
            cwd: cwd.to_path_buf(),
            approval_mode: mode.to_string(),
            tool_names: registry.all().map(|r| r.name.clone()).collect(),
            context_files: context_files::load(&names, home.as_deref(), cwd),
        },
        own: options.system_prompt.clone(),
        append: options
            .append_system_prompt
            .clone()
            .filter(|m| !m.trim().is_empty()),
        names,
        home,
    }
}

/// `--core-tools` with the aliases rules know (Claude's `Read`, `Bash`, ...) as the tools
/// they stand for.
fn core_names(core: &[String], vocabulary: &toolbelt_engine::rules::RuleVocabulary) -> Vec<String> {
    core.iter()
        .flat_map(|name| match vocabulary.tools_of(name.trim()) {
            Some(tools) => tools.to_vec(),
            None => vec![name.clone()],
        })
        .collect()
}

/// The replay script, or a server from options, environment and settings
/// (`providers.rs` chooses the provider and its wire format); perhaps recorded. Also
/// returns the choice, from which sub-agents and `set_model` choose other models.
pub fn build_model(
    options: &AgentOptions,
    settings: &Settings,
    cwd: &Path,
) -> Result<(Arc<dyn Model>, Option<ModelChoice>), ModelSetupError> {
    let mut server = None;
    let model: Box<dyn Model> = if let Some(path) = &options.model_replay {
        Box::new(ReplayModel::from_file(path, Some(cwd)).map_err(ModelSetupError::Replay)?)
    } else {
        let choice = providers::choose(options, settings)?;
        let model = choice.build()?;
        server = Some(choice);
        model
    };
    let model: Box<dyn Model> = match &options.record {
        Some(path) => Box::new(RecordingModel::new(model, path).map_err(ModelSetupError::Record)?),
        None => model,
    };
    Ok((Arc::from(model), server))
}
