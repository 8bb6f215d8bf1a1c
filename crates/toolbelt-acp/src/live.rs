//! One open ACP session: toolbelt's session with its agent (made by
//! `toolbelt_session`, as every front end's is: the one scheduler with the session's
//! rules, hooks, checkpoints and confinement), the updates it sends, the editor as its
//! approver, and its running turn.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{
    ConfigOptionUpdate, ContentBlock, ContentChunk, CurrentModeUpdate, Error as RpcError,
    McpServer, SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption,
    SessionMode, SessionModeState, SessionUpdate, StopReason as AcpStop, TextContent, ToolCall,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_agent::{EventSink, StopReason};
use toolbelt_config::ApprovalMode;
use toolbelt_model::{FinishReason, Message, UserPart};
use toolbelt_session::{
    AgentError, AgentOptions, Prepared, Resume, Session, SessionOptions, Setup,
};

use crate::permission::ClientApprover;
use crate::rpc::Peer;
use crate::updates::{self, Updates};

/// The approval modes, in the order an editor lists them.
const MODES: [(ApprovalMode, &str, &str); 4] = [
    (
        ApprovalMode::Default,
        "Default",
        "Ask before file changes, commands, fetches and untrusted MCP tools",
    ),
    (
        ApprovalMode::AutoEdit,
        "Auto-edit",
        "File changes run without asking; the rest as in Default",
    ),
    (
        ApprovalMode::Plan,
        "Plan",
        "Read-only until a plan is approved",
    ),
    (
        ApprovalMode::Yolo,
        "YOLO",
        "Everything runs without asking (ask and deny rules still hold)",
    ),
];

/// An open session.
pub(crate) struct Live {
    /// The id the editor knows it by.
    pub id: String,
    pub prepared: Prepared,
    pub updates: Arc<Updates>,
    /// The system prompt's parts (the context files change with `/memory`).
    system_prompt: Mutex<toolbelt_session::SystemPrompt>,
    /// The running turn's token, to cancel it.
    turn: Mutex<Option<CancellationToken>>,
    /// Held while a prompt runs: one turn at a time.
    busy: tokio::sync::Mutex<()>,
}

/// What the editor offers (`clientCapabilities`): its files, its terminals, the
/// elicitation modes it shows.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Offers {
    pub reads: bool,
    pub writes: bool,
    pub terminals: bool,
    pub elicit_form: bool,
    pub elicit_url: bool,
}

/// How a session is opened: fresh, or a saved one continued.
pub(crate) struct Opening {
    pub cwd: PathBuf,
    pub mcp_servers: Vec<McpServer>,
    pub resume: Resume,
    /// The id to answer under (a loaded session keeps the editor's).
    pub id: Option<String>,
}

impl Live {
    /// Opens a session in `opening.cwd` with the editor's MCP servers beside the
    /// configured ones.
    pub(crate) async fn open(
        peer: &Arc<Peer>,
        session: &SessionOptions,
        agent: &AgentOptions,
        opening: Opening,
        offers: Offers,
    ) -> Result<Live, RpcError> {
        if !opening.cwd.is_absolute() {
            return Err(invalid_params("\"cwd\" must be an absolute path"));
        }
        let mut session = session.clone();
        if !opening.mcp_servers.is_empty() {
            let config = json!({ "mcpServers": mcp_config(&opening.mcp_servers) });
            session.mcp.mcp_config.push(config.to_string());
        }
        let mut agent = agent.clone();
        agent.resume = opening.resume;
        let opened = Session::open(&opening.cwd, session)
            .map_err(|e| RpcError::internal_error().data(json!(e.0)))?;
        let updates = Arc::new(Updates::new(peer.clone(), opening.cwd.clone()));
        let _ = updates.editor_writes.set(offers.writes);
        let approver = Arc::new(ClientApprover::new(
            peer.clone(),
            updates.clone(),
            opened.project(),
        ));
        // What the session's MCP servers ask goes to the editor (`elicit`).
        opened
            .env
            .server_asks
            .set_asker(Arc::new(crate::elicit::EditorAsker {
                peer: peer.clone(),
                updates: updates.clone(),
                form: offers.elicit_form,
                url: offers.elicit_url,
            }));
        let to = updates.clone();
        let sink: EventSink = Arc::new(move |event| to.event(&event));
        let setup = Setup {
            read_prompt: None,
            sink,
            approver: Some(approver.clone()),
        };
        let prepared = opened.agent(agent, setup).await.map_err(agent_error)?;
        let id = opening.id.unwrap_or_else(|| prepared.session_id.clone());
        let _ = updates.session_id.set(id.clone());
        let env = prepared.agent.scheduler().env();
        if let (true, Ok(exe)) = (offers.terminals, std::env::current_exe()) {
            let dir = env.session_dir.join("acp-terminals");
            let _ = updates
                .terminals
                .set(crate::terminal::Terminals { dir, exe });
        }
        if offers.reads {
            let files = crate::client_fs::ClientFiles {
                peer: peer.clone(),
                session_id: id.clone(),
            };
            env.editor.set(Arc::new(files));
        }
        updates.set_registry(prepared.agent.registry());
        let vocabulary = prepared
            .agent
            .scheduler()
            .permissions()
            .rules()
            .vocabulary();
        let _ = approver.vocabulary.set(vocabulary.clone());
        let untrusted = prepared.settings.untrusted_project.is_some();
        let _ = approver.untrusted.set(untrusted);
        Ok(Live {
            id,
            system_prompt: Mutex::new(prepared.system_prompt.clone()),
            prepared,
            updates,
            turn: Mutex::new(None),
            busy: tokio::sync::Mutex::new(()),
        })
    }

    /// The approval modes, the current one marked.
    pub(crate) fn modes(&self) -> SessionModeState {
        let current = self.prepared.agent.scheduler().mode();
        let available = MODES
            .iter()
            .map(|(mode, name, about)| SessionMode::new(mode.as_str(), *name).description(*about))
            .collect();
        SessionModeState::new(current.as_str(), available)
    }

    /// The model and the approval mode as configuration options.
    pub(crate) fn config_options(&self) -> Vec<SessionConfigOption> {
        let mode = self.prepared.agent.scheduler().mode();
        let modes: Vec<SessionConfigSelectOption> = MODES
            .iter()
            .map(|(m, name, about)| {
                SessionConfigSelectOption::new(m.as_str(), *name).description(*about)
            })
            .collect();
        let model = self.prepared.model.current_name();
        // The session's model, then the settings' `modelProviders` (as `/model` lists them).
        let mut models = vec![SessionConfigSelectOption::new(model.clone(), model.clone())];
        for (provider, entries) in &self.prepared.settings.model_providers {
            for entry in entries.iter().filter(|e| e.id != model) {
                let name = entry.name.clone().unwrap_or_else(|| entry.id.clone());
                let option = SessionConfigSelectOption::new(entry.id.clone(), name)
                    .description(format!("provider {provider}"));
                models.push(option);
            }
        }
        vec![
            SessionConfigOption::select("mode", "Approval mode", mode.as_str(), modes)
                .category(SessionConfigOptionCategory::Mode),
            SessionConfigOption::select("model", "Model", model, models)
                .category(SessionConfigOptionCategory::Model),
        ]
    }

    /// Changes the approval mode and tells the editor.
    pub(crate) fn set_mode(&self, mode: &str) -> Result<(), RpcError> {
        let mode: ApprovalMode = mode.parse().map_err(|e: String| invalid_params(&e))?;
        self.prepared.agent.scheduler().set_mode(mode);
        self.prepared.dont_ask.set(false);
        self.mode_changed();
        Ok(())
    }

    fn mode_changed(&self) {
        let mode = self.prepared.agent.scheduler().mode();
        self.updates
            .send(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                mode.as_str(),
            )));
        self.options_changed();
    }

    /// Tells the editor the options' values (the mode and the model are options too).
    pub(crate) fn options_changed(&self) {
        let options = self.config_options();
        self.updates
            .send(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
                options,
            )));
    }

    /// Uses model `name` from the next request on.
    pub(crate) fn set_model(&self, name: &str) -> Result<(), RpcError> {
        if name.trim().is_empty() {
            return Err(invalid_params("the model's name is empty"));
        }
        let p = &self.prepared;
        let mut options = p.options.clone();
        options.model = Some(name.to_string());
        let (model, _) = toolbelt_session::build_model(&options, &p.settings, &p.cwd)
            .map_err(|e| invalid_params(&e.to_string()))?;
        p.model.replace(model);
        Ok(())
    }

    /// Runs one prompt to its end; `session/cancel` ends it with `cancelled`.
    pub(crate) async fn prompt(
        &self,
        blocks: Vec<agent_client_protocol_schema::v1::ContentBlock>,
        shutdown: &CancellationToken,
    ) -> Result<(AcpStop, Option<toolbelt_model::Usage>), RpcError> {
        let Ok(_turn) = self.busy.try_lock() else {
            return Err(RpcError::invalid_request().data(json!(
                "a prompt of this session is still running; wait for its answer or cancel it"
            )));
        };
        let cancel = shutdown.child_token();
        if let Ok(mut turn) = self.turn.lock() {
            *turn = Some(cancel.clone());
        }
        let p = &self.prepared;
        let mode = p.agent.scheduler().mode();
        let outcome = self.run_turn(blocks, &cancel).await;
        if let Ok(mut turn) = self.turn.lock() {
            *turn = None;
        }
        // The turn's terminals are released before it is answered.
        self.updates.settle_terminals().await;
        if p.agent.scheduler().mode() != mode {
            self.mode_changed();
        }
        let outcome = outcome?;
        if cancel.is_cancelled() {
            return Ok((AcpStop::Cancelled, outcome.map(|(_, usage)| usage)));
        }
        match outcome {
            Some((stop, usage)) => {
                let finish = self.updates.last_finish.lock().ok().and_then(|f| f.clone());
                Ok((self.stop_reason(stop, finish)?, Some(usage)))
            }
            None => Ok((AcpStop::EndTurn, None)),
        }
    }

    /// The turn itself: a slash command's answer (`None`), or the agent's run.
    async fn run_turn(
        &self,
        blocks: Vec<ContentBlock>,
        cancel: &CancellationToken,
    ) -> Result<Option<(StopReason, toolbelt_model::Usage)>, RpcError> {
        if let [ContentBlock::Text(typed)] = blocks.as_slice()
            && crate::commands::run(self, &typed.text, cancel).await
        {
            return Ok(None);
        }
        let p = &self.prepared;
        let message = crate::prompt::user_message(p, blocks).await;
        let message = message.map_err(|e| invalid_params(&e))?;
        if let Ok(mut last) = self.updates.last_finish.lock() {
            *last = None;
        }
        let mode = p.agent.scheduler().mode();
        if let Ok(prompt) = self.system_prompt.lock() {
            p.agent.set_system_prompt(prompt.text(mode));
        }
        self.updates.set_registry(p.agent.registry());
        let outcome = p
            .agent
            .run_with_references(message.parts, &message.written, cancel)
            .await;
        Ok(Some((outcome.stop, outcome.usage)))
    }

    fn stop_reason(
        &self,
        stop: StopReason,
        finish: Option<FinishReason>,
    ) -> Result<AcpStop, RpcError> {
        Ok(match stop {
            StopReason::Cancelled => AcpStop::Cancelled,
            StopReason::MaxTurns(_) => AcpStop::MaxTurnRequests,
            StopReason::PromptBlocked(why) => {
                self.updates
                    .say(&format!("A hook blocked the prompt: {why}"));
                AcpStop::Refusal
            }
            StopReason::PromptNotMade(why) => return Err(invalid_params(&why)),
            StopReason::ModelFailed(e) => {
                return Err(RpcError::internal_error().data(json!(e.to_string())));
            }
            StopReason::HookStopped(why) => {
                self.updates
                    .say(&format!("\nA hook stopped the run: {why}"));
                AcpStop::EndTurn
            }
            _ => match finish {
                Some(FinishReason::Length) => AcpStop::MaxTokens,
                Some(FinishReason::ContentFilter) => AcpStop::Refusal,
                _ => AcpStop::EndTurn,
            },
        })
    }

    /// The context files in the system prompt.
    pub(crate) fn context_files(&self) -> Vec<toolbelt_agent::context_files::ContextFile> {
        self.system_prompt
            .lock()
            .map(|p| p.context_files().to_vec())
            .unwrap_or_default()
    }

    /// Reads the context files again; the next prompt's system prompt has them.
    pub(crate) fn reload_context_files(&self) {
        if let Ok(mut prompt) = self.system_prompt.lock() {
            prompt.reload_context_files();
        }
    }

    /// Cancels the running turn: its tools and their processes end, each call still gets
    /// its result, and the prompt answers `cancelled`.
    pub(crate) fn cancel(&self) {
        if let Some(cancel) = self.turn.lock().ok().and_then(|t| t.clone()) {
            cancel.cancel();
        }
    }

    /// Cancels the turn, waits for it, and ends what the session started.
    pub(crate) async fn close(&self) {
        self.cancel();
        let _turn_over = self.busy.lock().await;
        self.updates.settle_terminals().await;
        let p = &self.prepared;
        p.background.stop_all().await;
        for (id, command) in p.monitors.stop_all().await {
            tracing::info!("monitor {id} (`{command}`) ended with its session");
        }
        p.agent.end_session("other").await;
        let wait = std::time::Duration::from_secs(3);
        let _ = tokio::time::timeout(wait, p.mcp.close()).await;
    }

    /// The conversation so far, sent again as updates (`session/load`).
    pub(crate) fn replay(&self) {
        let history = self.prepared.agent.history();
        for message in &history {
            match message {
                Message::User(parts) => {
                    for part in parts {
                        if let UserPart::Text(text) = part
                            && !toolbelt_engine::hooks::is_context_block(text)
                        {
                            let block = ContentBlock::Text(TextContent::new(text.clone()));
                            self.updates
                                .send(SessionUpdate::UserMessageChunk(ContentChunk::new(block)));
                        }
                    }
                }
                Message::Assistant {
                    text, tool_calls, ..
                } => {
                    self.updates.say(text);
                    for call in tool_calls {
                        let input: Value =
                            serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
                        let kind = self.updates.kind_of(&call.name);
                        let shown = ToolCall::new(call.id.clone(), call.name.clone())
                            .kind(kind)
                            .status(ToolCallStatus::Completed)
                            .locations(updates::locations(&input, &self.prepared.cwd))
                            .raw_input(input);
                        self.updates.send(SessionUpdate::ToolCall(shown));
                    }
                }
                Message::Tool {
                    call_id,
                    text,
                    is_error,
                    ..
                } => {
                    // The call was shown completed; its saved outcome decides.
                    let mut fields =
                        ToolCallUpdateFields::new().content(vec![updates::text_content(text)]);
                    if *is_error {
                        fields = fields.status(ToolCallStatus::Failed);
                    }
                    self.updates
                        .send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                            call_id.clone(),
                            fields,
                        )));
                }
                Message::System(_) => {}
            }
        }
    }
}

fn invalid_params(why: &str) -> RpcError {
    RpcError::invalid_params().data(json!(why))
}

/// Why a session could not be opened, as the editor is told: no model (a missing key)
/// asks for authentication, an unknown saved session is not found.
fn agent_error(e: AgentError) -> RpcError {
    match e {
        AgentError::Model(why) => RpcError::auth_required().data(json!(why)),
        AgentError::Saved(why) => RpcError::resource_not_found(None).data(json!(why)),
        other => RpcError::internal_error().data(json!(other.to_string())),
    }
}

/// The editor's MCP servers in the settings' shape (`mcpServers`): stdio servers with
/// `command`/`args`/`env`, HTTP ones as `httpUrl`, SSE ones as `url`, with headers.
fn mcp_config(servers: &[McpServer]) -> serde_json::Map<String, Value> {
    let mut config = serde_json::Map::new();
    for server in servers {
        let (name, entry) = match server {
            McpServer::Stdio(s) => {
                let env: serde_json::Map<String, Value> = s
                    .env
                    .iter()
                    .map(|v| (v.name.clone(), json!(v.value)))
                    .collect();
                (
                    s.name.clone(),
                    json!({"command": s.command, "args": s.args, "env": env}),
                )
            }
            McpServer::Http(s) => (
                s.name.clone(),
                json!({"httpUrl": s.url, "headers": headers(&s.headers)}),
            ),
            McpServer::Sse(s) => (
                s.name.clone(),
                json!({"url": s.url, "headers": headers(&s.headers)}),
            ),
            _ => continue,
        };
        config.insert(name, entry);
    }
    config
}

fn headers(
    list: &[agent_client_protocol_schema::v1::HttpHeader],
) -> serde_json::Map<String, Value> {
    list.iter()
        .map(|h| (h.name.clone(), json!(h.value)))
        .collect()
}
