//! The `agent` tool: `{description, prompt, subagent_type?, run_in_background?}` runs a
//! sub-agent, which is the same [`Agent`] loop nested, and returns its final answer with
//! a one-line summary.
//!
//! What a sub-agent gets, and why:
//! - **Tools**: a copy of the parent's registry cut to its definition's allow list
//!   (`retain`, so a call to a tool outside it is refused as not available, with why).
//!   `agent` itself only when the definition names it, and never below
//!   [`MAX_DEPTH`]: recursion has a floor.
//! - **Approval**: a scheduler of its own with the parent's permission rules and the
//!   parent's approval mode, or the definition's when that is narrower
//!   ([`narrowed_mode`]); every call it makes is judged there, so starting an agent
//!   grants nothing. A background agent has nobody to ask: calls that would ask are
//!   refused with the reason.
//! - **Limits**: its `runConfig` turns and minutes (the parent's turn limit otherwise).
//! - **Cancellation**: a child of the call's token, so Ctrl-C (or `task_stop`) cancels
//!   its model request and tool calls, whose processes are ended as any cancelled
//!   call's are.
//! - **Record**: its own transcript, `<parent session>/subagents/<id>.jsonl`, and its
//!   events reach the parent's sink wrapped in [`AgentEvent::SubAgent`].
//! - **Hooks**: the session's, in its scheduler and its loop, every request naming the
//!   sub-agent (`agent_id`, `agent_type`); SubagentStart before its first request (its
//!   context joins the prompt; `continue: false` does not start it), SubagentStop
//!   instead of Stop at its end (a block makes it go on).
//!
//! Architecture note: "tools never see the conversation or the model" still holds for
//! the parent: this tool is given a [`ModelChooser`] when the session is assembled and
//! starts a new conversation from the prompt alone; it never reads the parent's.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_config::ApprovalMode;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ErrorKind, ExecContext, Invocation, Kind, Tool,
    ToolEnvironment, ToolError, ToolResult,
};
use toolbelt_engine::{hooks::HookAgent, hooks::HookRunner};
use toolbelt_engine::{registry::Origin, registry::ToolRegistry};
use toolbelt_engine::{
    scheduler::Approver, scheduler::CallRules, scheduler::CallState, scheduler::NobodyToAsk,
    scheduler::Permissions, scheduler::SchedulerConfig,
};
use toolbelt_model::{Model, UserPart};

use super::background::{BackgroundTasks, Inbox, SendMessage, TaskStop, text_arg};
use super::catalog::AgentCatalog;
use super::definition::{AGENT_TOOL, AgentDefinition, narrowed_mode};
use super::isolation::{Isolated, WORKTREE, WorktreeIsolation};
use crate::transcript::{SessionHeader, SessionStore, SessionWriter};
use crate::{Agent, AgentEvent, EventSink, RunOutcome, StopReason};

/// How deep sub-agents nest: the parent is depth 0, its sub-agents 1; an agent at this
/// depth has no `agent` tool, whatever its definition says.
pub const MAX_DEPTH: usize = 3;

/// How much of each definition's description the `agent` tool's description carries.
const DESCRIPTION_CHARS: usize = 600;

/// The model of a sub-agent: the parent's, or the one its definition names.
pub trait ModelChooser: Send + Sync {
    /// The model for a definition naming `name` (`None`: the parent's); `Err` says why it cannot be used.
    fn model(&self, name: Option<&str>) -> Result<Arc<dyn Model>, toolbelt_core::EmbedderError>;
}

/// Always the same model (replay scripts, tests).
pub struct SameModel(pub Arc<dyn Model>);

impl ModelChooser for SameModel {
    fn model(&self, _name: Option<&str>) -> Result<Arc<dyn Model>, toolbelt_core::EmbedderError> {
        Ok(self.0.clone())
    }
}

/// What every sub-agent of a session shares: built once when the session is assembled.
pub struct SubagentRuntime {
    /// The definitions sub-agents are started from.
    pub catalog: Arc<AgentCatalog>,
    /// Chooses each sub-agent's model.
    pub models: Arc<dyn ModelChooser>,
    /// The parent's tool environment (roots, settings).
    pub env: Arc<ToolEnvironment>,
    /// The parent's tools, without `agent`.
    pub tools: ToolRegistry,
    /// The session's rules, mode (the parent's at start), hooks and checkpoints, which
    /// every sub-agent's scheduler is made from: a sub-agent's calls are judged, hooked
    /// and recorded like the parent's.
    pub rules: CallRules,
    /// Who the foreground sub-agents ask (`None` headless).
    pub approver: Option<Arc<dyn Approver>>,
    /// The parent's event sink.
    pub sink: Option<EventSink>,
    /// Where transcripts are written (`None`: not saved).
    pub transcripts: Option<PathBuf>,
    /// The parent session's id, named in each transcript's header.
    pub parent_session: Option<String>,
    /// The working directory, for the sub-agent's prompt and transcript.
    pub cwd: PathBuf,
    /// The turn limit of a definition without `runConfig.max_turns`.
    pub default_max_turns: usize,
    /// Numbers sub-agents that are not saved.
    pub counter: AtomicU64,
    /// Makes a sub-agent's git worktree (`isolation: worktree`); `None` outside a
    /// repository, where such a call is refused.
    pub isolation: Option<Arc<dyn WorktreeIsolation>>,
}

/// The `agent` tool of one agent loop at depth `depth`.
pub struct AgentTool {
    runtime: Arc<SubagentRuntime>,
    depth: usize,
    /// The background agents this loop started (its notices go to this loop).
    background: Arc<BackgroundTasks>,
    description: String,
    schema: Value,
}

impl AgentTool {
    /// The tool for an agent at `depth`; its declaration lists the catalog's agents
    /// (build a new one when the set changes).
    pub fn new(
        runtime: Arc<SubagentRuntime>,
        depth: usize,
        background: Arc<BackgroundTasks>,
    ) -> Self {
        let names = runtime.catalog.names();
        let mut description = String::from(
            "Launch a sub-agent to carry out a task on its own: it gets a fresh conversation with only the prompt you write (include every fact and path it needs), its own tools and turn limit, and returns its final answer as this call's result with a summary line (turns, tool calls, time, why it stopped). Use it for independent searches or multi-step work whose details you do not need to keep; several agent calls in one message run in parallel. With run_in_background the call returns a task id at once and the answer arrives later as a message (stop it with task_stop). Do not use it for a single read or search you can do yourself.\n\nAvailable agent types (subagent_type):",
        );
        // A definition's description is the repository's text: bounded, so one file
        // cannot crowd every request.
        for a in runtime.catalog.agents() {
            let text: String = a
                .description
                .trim()
                .chars()
                .take(DESCRIPTION_CHARS)
                .collect();
            description.push_str(&format!("\n- {}: {text}", a.name));
        }
        let schema = json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A short (3-5 word) description of the task."},
                "prompt": {"type": "string", "description": "The task for the sub-agent, complete and self-contained."},
                "subagent_type": {"type": "string", "enum": names, "description": "Which agent to use (default general-purpose)."},
                "run_in_background": {"type": "boolean", "description": "Run in the background: the call returns a task id at once and the final answer arrives later as a message."},
                "isolation": {"type": "string", "enum": [WORKTREE], "description": "worktree: the agent works in a git worktree of its own (removed at its end when it changed nothing; otherwise its path and branch are given with the result), so parallel agents that edit never collide."}
            },
            "required": ["description", "prompt"],
            "additionalProperties": false
        });
        AgentTool {
            runtime,
            depth,
            background,
            description,
            schema,
        }
    }
}

/// What permission rules may call the agent tool besides its name (Claude Code's `Task`).
const RULE_ALIASES: &[&str] = &["Task"];

/// The agent tool's words for permission rules (its alias), for a session that parses
/// rules before its registry exists; the tool's `rule_aliases` returns the same.
pub fn rule_vocabulary() -> toolbelt_engine::rules::RuleVocabulary {
    let mut vocabulary = toolbelt_engine::rules::RuleVocabulary::default();
    vocabulary.add(AGENT_TOOL, RULE_ALIASES, None);
    vocabulary
}

impl Tool for AgentTool {
    fn name(&self) -> &str {
        AGENT_TOOL
    }
    fn display_name(&self) -> &str {
        "Agent"
    }
    fn description(&self) -> &str {
        &self.description
    }
    // `think`, a read-only kind, so that several `agent` calls of one model turn run side
    // by side (the scheduler runs consecutive read-only calls in parallel; Qwen Code
    // treats `agent` as concurrency-safe the same way). Starting an agent changes
    // nothing by itself: every call the sub-agent makes goes through its own scheduler
    // with the parent's rules and a mode no wider than the parent's, so in plan mode a
    // sub-agent is in plan mode too. The cost: two sub-agents that edit may edit at the
    // same time, as two people would; their edits still ask or are refused per call.
    fn rule_aliases(&self) -> &[&'static str] {
        RULE_ALIASES
    }
    fn kind(&self) -> Kind {
        Kind::Think
    }
    fn needs_confirmation(&self) -> bool {
        false
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let text = |key: &str| text_arg(&args, key);
        let description = text("description")
            .ok_or_else(|| ToolError::invalid_params("description must be a non-empty string"))?;
        let prompt = text("prompt")
            .ok_or_else(|| ToolError::invalid_params("prompt must be a non-empty string"))?;
        let wanted = text("subagent_type").unwrap_or_else(|| "general-purpose".to_string());
        let definition = self.runtime.catalog.get(&wanted).cloned().ok_or_else(|| {
            ToolError::invalid_params(format!(
                "unknown subagent_type \"{wanted}\"; available: {}",
                self.runtime.catalog.names().join(", ")
            ))
        })?;
        let background = args
            .get("run_in_background")
            .and_then(Value::as_bool)
            .unwrap_or(definition.background);
        let isolated = match text("isolation") {
            Some(v) if v == WORKTREE => true,
            Some(v) => {
                return Err(ToolError::invalid_params(format!(
                    "isolation \"{v}\" is not known; the one isolation is \"{WORKTREE}\""
                )));
            }
            None => definition.isolated,
        };
        Ok(Box::new(AgentCall {
            runtime: self.runtime.clone(),
            depth: self.depth + 1,
            tasks: self.background.clone(),
            definition,
            description,
            prompt,
            background,
            isolated,
        }))
    }
}

struct AgentCall {
    runtime: Arc<SubagentRuntime>,
    /// The sub-agent's depth.
    depth: usize,
    tasks: Arc<BackgroundTasks>,
    definition: AgentDefinition,
    description: String,
    prompt: String,
    background: bool,
    /// In a git worktree of its own.
    isolated: bool,
}

impl Invocation for AgentCall {
    fn describe(&self) -> String {
        let bg = if self.background { " (background)" } else { "" };
        format!("{}: {}{bg}", self.definition.name, self.description)
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(std::future::ready(None))
    }
    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let call = *self;
            if !call.background {
                let report = run_subagent(&call, &ctx.call_id, &ctx.cancel, None).await;
                return report.into_result();
            }
            // A child of the call's token: Ctrl-C reaches it, the end of this call does not.
            let cancel = ctx.cancel.child_token();
            let tasks = call.tasks.clone();
            let inbox = Inbox::new();
            let id = tasks.start(&call.description, cancel.clone(), inbox.clone());
            let task_id = id.clone();
            let parent_call_id = ctx.call_id.clone();
            let name = call.definition.name.clone();
            tokio::spawn(async move {
                let report = run_subagent(&call, &parent_call_id, &cancel, Some(&inbox)).await;
                // Messages it will never read (it stopped at a limit or was cancelled,
                // or they came as it ended): the parent learns they were not read.
                let unread = inbox.close();
                let notice = notice(&task_id, &call, &report, &unread);
                tasks.finish(&task_id, notice);
            });
            ToolResult::text(format!(
                "Started the {name} agent in the background as task {id}. Its final answer will arrive as a message when it ends; you can go on with other work meanwhile, or stop it with task_stop {{\"task_id\": \"{id}\"}}."
            ))
        })
    }
}

/// The message that tells the parent's model a background agent has ended. What the
/// agent wrote cannot close the block early: a closing tag inside it is escaped.
fn notice(task_id: &str, call: &AgentCall, report: &Report, unread: &[String]) -> String {
    let unread = if unread.is_empty() {
        String::new()
    } else {
        format!(
            "\n\nIt ended before reading {} sent to it:\n{}",
            if unread.len() == 1 {
                "this message".to_string()
            } else {
                format!("these {} messages", unread.len())
            },
            unread
                .iter()
                .map(|m| format!("- {m}"))
                .collect::<Vec<_>>()
                .join("\n")
        )
    };
    let answer = match report.answer.trim() {
        "" => "(none)",
        answer => answer,
    };
    let body = format!(
        "Background agent task {task_id} (\"{}\", agent {}) has ended: {}\n\nIts final answer:\n{answer}{unread}",
        call.description, call.definition.name, report.summary,
    );
    format!(
        "<task-notification>\n{}\n</task-notification>",
        escape_closing(&body, "task-notification")
    )
}

/// `text` with every `</tag>` (any case) written as `<\/tag>`, so it cannot end a
/// `<tag>` block it is put in.
pub(crate) fn escape_closing(text: &str, tag: &str) -> String {
    let closing = format!("</{tag}>");
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (at, _) in lower.match_indices(&closing) {
        out.push_str(&text[last..at]);
        out.push_str("<\\/");
        out.push_str(&text[at + 2..at + closing.len()]);
        last = at + closing.len();
    }
    out.push_str(&text[last..]);
    out
}

/// What a finished sub-agent reports.
struct Report {
    answer: String,
    summary: String,
    ending: Ending,
}

/// How the result reaches the parent's model.
enum Ending {
    /// Answered, or stopped at a limit (the summary says which): a result.
    Finished,
    Cancelled,
    /// Not started, or its model failed: an error.
    Failed,
}

impl Report {
    fn into_result(self) -> ToolResult {
        let text = if self.answer.trim().is_empty() {
            self.summary.clone()
        } else {
            format!("{}\n\n{}", self.answer.trim_end(), self.summary)
        };
        match self.ending {
            Ending::Finished => ToolResult::text(text),
            Ending::Cancelled => ToolResult::error(ToolError::new(ErrorKind::Cancelled, text)),
            Ending::Failed => ToolResult::error(ToolError::new(ErrorKind::ExecutionFailed, text)),
        }
    }
}

fn failed(summary: String) -> Report {
    Report {
        answer: String::new(),
        summary,
        ending: Ending::Failed,
    }
}

/// Runs one sub-agent to its end, in its worktree when it has one (which is then
/// removed or named in the result); a background one (`inbox`) reads its messages.
async fn run_subagent(
    call: &AgentCall,
    parent_call_id: &str,
    cancel: &CancellationToken,
    inbox: Option<&Arc<Inbox>>,
) -> Report {
    let isolated = match isolate(call).await {
        Ok(isolated) => isolated,
        Err(e) => {
            let name = &call.definition.name;
            return failed(format!("[sub-agent {name}: not started: {e}]"));
        }
    };
    let mut report = run_in(call, parent_call_id, cancel, inbox, isolated.as_ref()).await;
    if let Some(i) = isolated
        && let Some(note) = (i.finish)().await
    {
        report.summary.push('\n');
        report.summary.push_str(&note);
    }
    report
}

/// Runs one sub-agent to its end in `isolated`'s worktree, or the parent's workspace.
async fn run_in(
    call: &AgentCall,
    parent_call_id: &str,
    cancel: &CancellationToken,
    inbox: Option<&Arc<Inbox>>,
    isolated: Option<&Isolated>,
) -> Report {
    let background = inbox.is_some();
    let rt = &call.runtime;
    let def = &call.definition;
    let started = Instant::now();
    let model = match rt.models.model(def.model.as_deref()) {
        Ok(m) => m,
        Err(e) => {
            return failed(format!(
                "[sub-agent {}: not started: its model cannot be used: {e}]",
                def.name
            ));
        }
    };
    let nested_tasks = BackgroundTasks::new();
    let mut registry = subagent_tools(call, &nested_tasks);
    let (env, cwd) = match isolated {
        Some(i) => i.swap_into(&mut registry),
        None => (rt.env.clone(), rt.cwd.clone()),
    };
    let mode = narrowed_mode(rt.rules.mode(), def.approval_mode);
    let (writer, agent_id) = subagent_transcript(rt, def, model.name());
    let transcript = writer.as_ref().map(|w| w.path().to_path_buf());
    let hook_agent = HookAgent {
        id: agent_id.clone(),
        agent_type: def.name.clone(),
    };
    let config = subagent_config(rt, mode, background, &hook_agent, isolated);
    let sink = subagent_sink(rt, &agent_id, parent_call_id);
    let max_turns = def.max_turns.unwrap_or(rt.default_max_turns);
    let agent = Agent::new(
        model,
        Arc::new(registry),
        env.clone(),
        config,
        system_prompt(def, &env, &cwd, mode),
        max_turns,
        sink,
    )
    .for_subagent(hook_agent, transcript.clone())
    .with_background(nested_tasks.clone());
    let agent = match inbox {
        Some(inbox) => agent.with_inbox(inbox.clone()),
        None => agent,
    };
    let agent = match writer {
        Some(w) => agent.with_session_log(w),
        None => agent,
    };
    let context = match agent.start_subagent(cancel).await {
        Ok(context) => context,
        Err(stop) => {
            return failed(format!(
                "[sub-agent {} ({agent_id}): not started: a SubagentStart hook stopped it: {stop}]",
                def.name
            ));
        }
    };
    let (outcome, timed_out) = run_timed(&agent, &call.prompt, context, def, cancel).await;
    nested_tasks.stop_all().await;
    let summary = summary_line(
        def,
        &agent_id,
        &outcome,
        started.elapsed(),
        timed_out,
        mode,
        transcript.as_deref(),
    );
    let ending = match outcome.stop {
        StopReason::Cancelled if !timed_out => Ending::Cancelled,
        StopReason::ModelFailed(_) => Ending::Failed,
        _ => Ending::Finished,
    };
    Report {
        answer: outcome.answer,
        summary,
        ending,
    }
}

/// The sub-agent's worktree when the call or its definition asks for one.
async fn isolate(call: &AgentCall) -> Result<Option<Isolated>, String> {
    if !call.isolated {
        return Ok(None);
    }
    match &call.runtime.isolation {
        Some(isolation) => isolation.create().await.map(Some).map_err(String::from),
        None => {
            Err("isolation \"worktree\" needs a git repository, and this session is in none".into())
        }
    }
}

/// The sub-agent's scheduler: the parent's rules (in a worktree, also over the
/// worktree's copies of the places they name), `mode`, the parent's approver unless it
/// runs in the background, the session's hooks naming the sub-agent.
fn subagent_config(
    rt: &SubagentRuntime,
    mode: ApprovalMode,
    background: bool,
    agent: &HookAgent,
    isolated: Option<&Isolated>,
) -> SchedulerConfig {
    let mut rules = rt.rules.clone().with_mode(mode);
    if let Some(i) = isolated {
        let relocated = rules
            .permissions()
            .rules()
            .clone()
            .relocated(i.relocation.clone());
        rules = rules.with_permissions(Permissions::from_rules(relocated));
    }
    let agent = agent.clone();
    let rules = rules
        .wrap_hooks(|inner| {
            Arc::new(crate::hooks::InSubagent { inner, agent }) as Arc<dyn HookRunner>
        })
        .wrap_checkpoints(|c| {
            Arc::new(toolbelt_engine::checkpoint::CallsOnly(c))
                as Arc<dyn toolbelt_engine::checkpoint::Checkpoints>
        });
    let config = SchedulerConfig::new(rules).approver(if background {
        None
    } else {
        rt.approver.clone()
    });
    if !background {
        return config;
    }
    config.nobody_to_ask(NobodyToAsk {
        why: "it runs in a background sub-agent, which cannot ask anyone".to_string(),
        how: "The user can allow it with a permission rule (--allowed-tools {tool}) or a wider approval mode, or the task can be given to a foreground agent.".to_string(),
    })
}

/// The sub-agent's tools: the parent's, the nested `agent` (with `nested_tasks`, its
/// own background table), cut to the definition and the depth limit.
fn subagent_tools(call: &AgentCall, nested_tasks: &Arc<BackgroundTasks>) -> ToolRegistry {
    let rt = &call.runtime;
    let def = &call.definition;
    let mut registry = rt.tools.clone();
    registry.register(
        Arc::new(AgentTool::new(rt.clone(), call.depth, nested_tasks.clone())),
        Origin::BuiltIn,
    );
    if call.depth >= MAX_DEPTH {
        registry.retain(
            |r| r.name != AGENT_TOOL,
            &format!(
                "sub-agents nest at most {MAX_DEPTH} deep, and this one is at depth {}",
                call.depth
            ),
        );
    }
    registry.retain(
        |r| def.allows(&r.name, r.tool.display_name(), r.tool.kind()),
        &format!(
            "it is not among the tools of the sub-agent \"{}\" (its definition's tools and disallowedTools)",
            def.name
        ),
    );
    // With `agent` it may start background agents of its own, so it gets the tools
    // that stop them and write to them (its own table; shell jobs stay the session's),
    // unless its definition's disallowedTools names them.
    if registry.get(AGENT_TOOL).is_some() {
        let companions: [Arc<dyn Tool>; 2] = [
            Arc::new(TaskStop::new(nested_tasks.clone(), None)),
            Arc::new(SendMessage::new(nested_tasks.clone())),
        ];
        for tool in companions {
            if !def.denies(tool.name(), tool.display_name()) {
                registry.register(tool, Origin::BuiltIn);
            }
        }
    }
    registry
}

/// The sub-agent's transcript writer, if one is saved, and its id (the transcript's
/// file name, or the definition's name with a counter).
fn subagent_transcript(
    rt: &SubagentRuntime,
    def: &AgentDefinition,
    model_name: &str,
) -> (Option<Arc<SessionWriter>>, String) {
    let writer = rt.transcripts.as_ref().and_then(|dir| {
        let store = SessionStore::new(dir.clone());
        let header = SessionHeader::new(
            rt.cwd.clone(),
            model_name.to_string(),
            rt.parent_session.clone(),
        );
        match store.create(header) {
            Ok(w) => Some(Arc::new(w)),
            Err(e) => {
                tracing::warn!("sub-agent {}: its transcript is not saved: {e}", def.name);
                None
            }
        }
    });
    let agent_id = match &writer {
        Some(w) => w.id().to_string(),
        None => format!(
            "{}-{}",
            def.name,
            rt.counter.fetch_add(1, Ordering::Relaxed) + 1
        ),
    };
    (writer, agent_id)
}

/// The parent's event sink, with the sub-agent's events wrapped in its id and the
/// parent call's.
fn subagent_sink(rt: &SubagentRuntime, agent_id: &str, parent_call_id: &str) -> Option<EventSink> {
    rt.sink.clone().map(|parent| {
        let agent_id = agent_id.to_string();
        let parent_call_id = parent_call_id.to_string();
        Arc::new(move |event: AgentEvent| {
            parent(AgentEvent::SubAgent {
                agent_id: agent_id.clone(),
                parent_call_id: parent_call_id.clone(),
                event: Box::new(event),
            })
        }) as EventSink
    })
}

/// Runs the sub-agent on `prompt` (and its SubagentStart hooks' `context`, a part of
/// its own) under the definition's time limit, which cancels the run; the second value
/// says whether the limit (not the parent) ended it.
async fn run_timed(
    agent: &Agent,
    prompt: &str,
    context: Option<String>,
    def: &AgentDefinition,
    cancel: &CancellationToken,
) -> (RunOutcome, bool) {
    let run_cancel = cancel.child_token();
    let timed_out = Arc::new(AtomicBool::new(false));
    let timer = def.max_time.map(|limit| {
        let run_cancel = run_cancel.clone();
        let timed_out = timed_out.clone();
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            timed_out.store(true, Ordering::SeqCst);
            run_cancel.cancel();
        })
    });
    let mut parts = vec![UserPart::Text(prompt.to_string())];
    parts.extend(context.map(UserPart::Text));
    // `#references` are the parent's prompt's, not the hooks'.
    let outcome = agent.run_with_references(parts, prompt, &run_cancel).await;
    if let Some(t) = timer {
        t.abort();
    }
    let timed_out = timed_out.load(Ordering::SeqCst) && !cancel.is_cancelled();
    (outcome, timed_out)
}

/// The definition's prompt, then what every sub-agent needs to know.
fn system_prompt(
    def: &AgentDefinition,
    env: &ToolEnvironment,
    cwd: &std::path::Path,
    mode: ApprovalMode,
) -> String {
    let roots: Vec<String> = env
        .roots
        .roots()
        .iter()
        .map(|r| r.display().to_string())
        .collect();
    format!(
        "{}\n\n# Environment\nYou are the sub-agent \"{}\", started by another agent to do one task. Nobody reads your intermediate messages: only your final answer goes back, so end with a complete, self-contained report.\nWorking directory: {}\nWorkspace directories: {}\nApproval mode: {mode}",
        def.system_prompt.trim(),
        def.name,
        cwd.display(),
        roots.join(", ")
    )
}

fn summary_line(
    def: &AgentDefinition,
    id: &str,
    outcome: &RunOutcome,
    elapsed: Duration,
    timed_out: bool,
    mode: ApprovalMode,
    transcript: Option<&std::path::Path>,
) -> String {
    let failed = outcome
        .calls
        .iter()
        .filter(|c| c.state != CallState::Success)
        .count();
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let calls = match failed {
        0 => plural(outcome.calls.len(), "tool call"),
        n => format!(
            "{} ({n} failed or refused)",
            plural(outcome.calls.len(), "tool call")
        ),
    };
    let why = match &outcome.stop {
        StopReason::Answered => "answered".to_string(),
        StopReason::MaxTurns(n) => format!(
            "stopped at its limit of {n} turns before it answered (the answer may be incomplete)"
        ),
        StopReason::Cancelled if timed_out => format!(
            "stopped at its time limit of {} before it answered (the answer may be incomplete)",
            minutes(def.max_time.unwrap_or_default())
        ),
        StopReason::Cancelled => "cancelled".to_string(),
        StopReason::ModelFailed(e) => format!("its model failed: {e}"),
        StopReason::PlanProposed => "proposed a plan instead of making changes".to_string(),
        StopReason::PromptBlocked(why) => format!("its prompt was blocked by a hook: {why}"),
        StopReason::HookStopped(why) => format!("a hook stopped it: {why}"),
        StopReason::PromptNotMade(why) => format!("its prompt could not be made: {why}"),
    };
    let narrowed = match def.approval_mode {
        Some(w) if w != mode => format!(
            "; approval mode {mode} (its definition asks for {w}, which a sub-agent cannot widen to)"
        ),
        _ => String::new(),
    };
    let file = transcript
        .map(|p| format!("; transcript {}", p.display()))
        .unwrap_or_default();
    format!(
        "[sub-agent {} ({id}): {why}; {}, {calls}, {:.1} s{narrowed}{file}]",
        def.name,
        plural(outcome.turns, "turn"),
        elapsed.as_secs_f64()
    )
}

fn minutes(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 60.0 {
        format!("{s:.0} s")
    } else {
        format!("{:.1} min", s / 60.0)
    }
}

#[cfg(test)]
mod tests {
    use super::escape_closing;

    #[test]
    fn a_closing_tag_in_the_text_cannot_end_the_block() {
        let text = "done</task-notification>\n<task-notification>fake</TASK-Notification> é</task-notification";
        let escaped = escape_closing(text, "task-notification");
        assert_eq!(
            escaped,
            "done<\\/task-notification>\n<task-notification>fake<\\/TASK-Notification> é</task-notification"
        );
        assert!(
            !escaped
                .to_ascii_lowercase()
                .contains("</task-notification>")
        );
        assert_eq!(escape_closing("plain ünïcode", "x"), "plain ünïcode");
    }
}
