//! Sub-agents in a session's agent: loading the definitions, and registering the
//! `agent`, `task_stop` and `send_message` tools with what they need from the session (the model, the
//! rules, the event sink, the transcript folder, the shell's background jobs).
//!
//! The machinery is `toolbelt_agent::subagents`; this module only assembles it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolbelt_agent::EventSink;
use toolbelt_agent::subagents::{
    AgentCatalog, AgentDirs, AgentTool, BackgroundTasks, ModelChooser, SendMessage, ShellJobs,
    SubagentRuntime, TaskStop,
};
use toolbelt_core::{BoxFuture, ToolEnvironment};
use toolbelt_engine::scheduler::CallRules;
use toolbelt_engine::{registry::Origin, registry::ToolRegistry};
use toolbelt_model::Model;

use crate::providers::ModelChoice;
use toolbelt_tools::{JobStatus, JobTable};

/// The sub-agent definitions of the project at `project`, of the person and built in.
pub fn catalog(project: &Path) -> AgentCatalog {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    AgentCatalog::load(&AgentDirs::standard(project, home.as_deref()))
}

/// The model a definition names (on the parent's server, or on the provider whose
/// `modelProviders` entry it is); the parent's model otherwise
/// (and always with a replay script, which has one conversation to give).
pub(crate) struct Models {
    pub(crate) parent: Arc<dyn Model>,
    /// The parent's provider and server; `None` for a replay script.
    pub(crate) server: Option<ModelChoice>,
}

impl ModelChooser for Models {
    fn model(&self, name: Option<&str>) -> Result<Arc<dyn Model>, toolbelt_core::EmbedderError> {
        let (Some(name), Some(server)) = (name, &self.server) else {
            return Ok(self.parent.clone());
        };
        if name == self.parent.name() {
            return Ok(self.parent.clone());
        }
        let model = server.for_model(name).and_then(|c| c.build());
        Ok(Arc::from(model.map_err(|e| e.to_string())?))
    }
}

/// The shell tool's job table as `task_stop` sees it.
pub(crate) struct ShellJobTable(pub(crate) Arc<JobTable>);

impl ShellJobs for ShellJobTable {
    fn stop<'a>(&'a self, id: &'a str, caller: &'a str) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let job = self.0.stop_for(id, caller).await?;
            Some(match job.status {
                JobStatus::Stopped => format!(
                    "Background job {id} (`{}`) was stopped; its output is in {}.",
                    job.command,
                    job.log_path.display()
                ),
                JobStatus::Exited { code, signal } => format!(
                    "Background job {id} (`{}`) had already ended (exit code {}, signal {}); anything it left running was ended. Its output is in {}.",
                    job.command,
                    code.map_or("none".into(), |c| c.to_string()),
                    signal.map_or("none".into(), |s| s.to_string()),
                    job.log_path.display()
                ),
                JobStatus::Running => format!("Background job {id} could not be stopped."),
            })
        })
    }
}

/// What the tools need from the session.
pub(crate) struct Parts {
    pub(crate) catalog: AgentCatalog,
    /// The parent's model, and its server's settings (`None` for a replay script):
    /// see [`Models`].
    pub(crate) parent_model: Arc<dyn Model>,
    pub(crate) server: Option<ModelChoice>,
    pub(crate) env: Arc<ToolEnvironment>,
    /// The session's rules, mode, hooks and checkpoints.
    pub(crate) rules: CallRules,
    pub(crate) sink: EventSink,
    /// The session's transcript folder and id, when it is saved.
    pub(crate) session: Option<(PathBuf, String)>,
    pub(crate) cwd: PathBuf,
    pub(crate) max_turns: usize,
    pub(crate) shell_jobs: Arc<JobTable>,
    /// Sub-agents' worktrees (issue 45); `None` outside a repository.
    pub(crate) isolation: Option<Arc<dyn toolbelt_agent::subagents::WorktreeIsolation>>,
}

/// Registers `agent`, `task_stop` and `send_message`; returns the table of background agents, which the
/// parent loop takes (`Agent::with_background`).
pub(crate) fn install(registry: &mut ToolRegistry, parts: Parts) -> Arc<BackgroundTasks> {
    let (transcripts, parent_session) = match parts.session {
        Some((dir, id)) => (Some(dir.join(&id).join("subagents")), Some(id)),
        None => (None, None),
    };
    let runtime = Arc::new(SubagentRuntime {
        catalog: Arc::new(parts.catalog),
        models: Arc::new(Models {
            parent: parts.parent_model,
            server: parts.server,
        }),
        env: parts.env,
        tools: registry.clone(),
        rules: parts.rules,
        approver: None,
        sink: Some(parts.sink),
        transcripts,
        parent_session,
        cwd: parts.cwd,
        default_max_turns: parts.max_turns,
        counter: Default::default(),
        isolation: parts.isolation,
    });
    let background = BackgroundTasks::new();
    registry.register(
        Arc::new(AgentTool::new(runtime, 0, background.clone())),
        Origin::BuiltIn,
    );
    registry.register(
        Arc::new(TaskStop::new(
            background.clone(),
            Some(Arc::new(ShellJobTable(parts.shell_jobs))),
        )),
        Origin::BuiltIn,
    );
    registry.register(
        Arc::new(SendMessage::new(background.clone())),
        Origin::BuiltIn,
    );
    background
}
