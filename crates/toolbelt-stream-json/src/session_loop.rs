//! The session loop: `initialize`, the turns one at a time, the client's control
//! requests answered at once, also during a turn.

use std::collections::VecDeque;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolbelt_agent::{AgentEvent, EventSink, RunOutcome};
use toolbelt_config::ApprovalMode;
use toolbelt_mcp::sdk::SdkChannel;
use toolbelt_mcp::{ServerConfig, ServerStatus, Transport};
use toolbelt_model::UserPart;
use toolbelt_session::kit::lines::{LineError, read_line};
use toolbelt_session::{AgentOptions, Prepared, Session, SessionOptions, Setup};

use crate::approver::ClientApprover;
use crate::control::{ControlChannel, HookCallbackCarrier, SdkCarrier};
use crate::input::{self, Inbound, MAX_LINE_BYTES};
use crate::wire::{Emitter, InitInfo, OutputFormat, control_response, write_control};

/// How long a `can_use_tool` question waits when `initialize` names no time limit; then
/// the call is refused.
pub(crate) const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(120);

type Turn<'a> = Pin<Box<dyn Future<Output = RunOutcome> + Send + 'a>>;

/// What a stream-JSON session is opened with: the session's directory and options, the
/// agent's, and how messages are written (`Json` or `StreamJson`).
pub struct StreamOptions {
    /// The session's directory.
    pub dir: PathBuf,
    /// The session's options; `initialize`'s MCP servers join them.
    pub session: SessionOptions,
    /// The agent's options; `initialize`'s system prompts replace theirs.
    pub agent: AgentOptions,
    /// `Json` or `StreamJson`.
    pub format: OutputFormat,
    /// Also `stream_event` messages for each model answer.
    pub partial_messages: bool,
}

/// Why a stream-JSON session could not be assembled (already answered to
/// `initialize`).
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// A field of `initialize` is not what the protocol says (its name and why).
    #[error("{0}")]
    Initialize(String),
    /// The session could not be opened (settings, MCP configuration).
    #[error("{0}")]
    Setup(#[from] toolbelt_session::SetupError),
    /// The agent could not be made (flags, saved session, model).
    #[error(transparent)]
    Agent(#[from] toolbelt_session::AgentError),
}

/// Runs one stream-JSON session on stdin and stdout until stdin closes. An error is
/// why the session could not be assembled (already answered to `initialize`).
pub async fn run(options: StreamOptions) -> Result<(), StreamError> {
    let control = ControlChannel::new();
    let emitter: Arc<OnceLock<Arc<Emitter>>> = Arc::new(OnceLock::new());
    let (queue_tx, mut queue) = mpsc::unbounded_channel();
    let reader = tokio::spawn(read_input(
        BufReader::new(tokio::io::stdin()),
        control.clone(),
        queue_tx,
    ));
    let Some((init, first)) = first_message(&mut queue).await else {
        return Ok(());
    };
    let request = init.as_ref().map(|(_, r)| r.clone()).unwrap_or(Value::Null);
    let prepared = assemble(&options, &request, &control, &emitter).await;
    let prepared = match prepared {
        Ok(p) => p,
        Err(why) => {
            if let Some((id, _)) = &init {
                write_control(&control_response(id, Err(why.to_string())));
            }
            reader.abort();
            return Err(why);
        }
    };
    let out = Arc::new(Emitter::new(
        prepared.session_id.clone(),
        &prepared.model_name,
        options.format,
        options.partial_messages,
    ));
    let _ = emitter.set(out.clone());
    if let Some((id, _)) = &init {
        write_control(&control_response(id, Ok(initialized(&prepared, &request))));
    }
    let mut info = InitInfo::of(&prepared);
    // A client that named the mode in Claude's words reads them back.
    if let Some(claude) = (options.agent.policy.approval_mode.as_deref())
        .filter(|m| matches!(*m, "acceptEdits" | "bypassPermissions" | "dontAsk" | "auto"))
    {
        info.permission_mode = claude;
    }
    out.init(&info);
    let mut session = Loop {
        prepared: &prepared,
        out: &out,
        waiting: VecDeque::new(),
        cancel: None,
    };
    if let Some(first) = first {
        session.take(first);
    }
    session.run(&mut queue).await;
    prepared.agent.end_session("other").await;
    reader.abort();
    control.close();
    out.finish();
    let _ = tokio::time::timeout(Duration::from_secs(3), prepared.mcp.close()).await;
    Ok(())
}

/// An `initialize` request and its ID.
type Initialize = (String, Value);

/// The first message: `initialize`, or the first turn of a client that sends none;
/// `None` when the input ends first.
async fn first_message(
    queue: &mut mpsc::UnboundedReceiver<Incoming>,
) -> Option<(Option<Initialize>, Option<Inbound>)> {
    loop {
        match queue.recv().await {
            Some(Incoming::Message(Inbound::ControlRequest {
                request_id,
                subtype,
                request,
            })) if subtype == "initialize" => return Some((Some((request_id, request)), None)),
            Some(Incoming::Message(other)) => return Some((None, Some(other))),
            // Said on stderr; there is no session to tell yet.
            Some(Incoming::Bad { .. }) => {}
            None => return None,
        }
    }
}

/// The answer to `initialize`.
fn initialized(prepared: &Prepared, request: &Value) -> Value {
    json!({
        "subtype": "initialize",
        "session_id": prepared.session_id,
        "capabilities": {
            "can_handle_can_use_tool": true,
            "can_handle_hook_callback": true,
            "can_set_permission_mode": true,
            "can_set_model": true,
            "can_get_context_usage": true,
            "can_handle_mcp_message": true,
        },
        // Claude's SDK: `supportedCommands()` and `supportedModels()` read these,
        // and servers sent in `initialize` must be confirmed as loaded.
        "commands": crate::mcp_prompts::commands(&prepared.mcp),
        "models": [{
            "value": prepared.model_name,
            "displayName": prepared.model_name,
            "description": "the configured model",
        }],
        "mcp_servers_applied": request.get("mcpServers").is_some_and(Value::is_object),
        // What came in `initialize` rather than as flags was read (`initialize_fields`).
        "settings_applied": request.get("settings").is_some_and(|s| !s.is_null()),
        "managed_settings_applied": request.get("managedSettings").is_some_and(|s| !s.is_null()),
        "disallowed_tools_applied": request.get("disallowedTools").is_some_and(Value::is_array),
        "plugins_applied": request.get("plugins").is_some_and(Value::is_array),
        // Claude's SDK: hooks with `onFailure: "block"` need both (a failed callback
        // refuses where hooks decide).
        "hooks_applied": true,
        "hook_on_failure_supported": true,
    })
}

/// The session, from `initialize`'s servers and the options.
async fn assemble(
    options: &StreamOptions,
    init: &Value,
    control: &Arc<ControlChannel>,
    emitter: &Arc<OnceLock<Arc<Emitter>>>,
) -> Result<Prepared, StreamError> {
    let mut agent = options.agent.clone();
    let bad = StreamError::Initialize;
    if let Some(text) = prompt_text(init.get("systemPrompt")).map_err(bad)? {
        agent.system_prompt = Some(text);
    }
    if let Some(text) = prompt_text(init.get("appendSystemPrompt")).map_err(bad)? {
        agent.append_system_prompt = Some(text);
    }
    let mut session = options.session.clone();
    if let Some(servers) = init.get("mcpServers").filter(|s| s.is_object()) {
        let config = json!({ "mcpServers": servers }).to_string();
        session.mcp.mcp_config.push(config);
    }
    session.sdk_mcp_servers = sdk_servers(init.get("sdkMcpServers"), control).map_err(bad)?;
    initialize_fields(init, &mut session, &mut agent).map_err(bad)?;
    let mut session = Session::open(&options.dir, session)?;
    sdk_hooks(init, &mut session, control).map_err(bad)?;
    let timeout = init
        .get("timeout")
        .and_then(|t| t.get("canUseTool"))
        .and_then(Value::as_u64)
        .map_or(DEFAULT_APPROVAL_TIMEOUT, Duration::from_millis);
    let sink_to: Arc<OnceLock<Arc<Emitter>>> = emitter.clone();
    let sink: EventSink = Arc::new(move |event: AgentEvent| {
        if let Some(e) = sink_to.get() {
            e.event(&event);
        }
    });
    let approver = ClientApprover::new(control.clone(), emitter.clone(), timeout);
    session
        .env
        .server_asks
        .set_asker(Arc::new(crate::ClientServerAsker::new(
            control.clone(),
            timeout,
        )));
    let setup = Setup {
        read_prompt: None,
        sink,
        approver: Some(Arc::new(approver)),
    };
    Ok(session.agent(agent, setup).await?)
}

/// `initialize.hooks`: the SDK's callbacks join the session's hooks (an empty object
/// or list, or `null` as Qwen's SDK sends, adds none). They are the application's own
/// code, so folder trust does not apply; a bad entry fails `initialize` with its name.
fn sdk_hooks(
    init: &Value,
    session: &mut Session,
    control: &Arc<ControlChannel>,
) -> Result<(), String> {
    let hooks = match init.get("hooks") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(map)) if map.is_empty() => return Ok(()),
        Some(Value::Array(list)) if list.is_empty() => return Ok(()),
        Some(hooks @ (Value::Object(_) | Value::Array(_))) => hooks,
        Some(_) => return Err("initialize: \"hooks\" must be an object of events".to_string()),
    };
    let carrier = Arc::new(HookCallbackCarrier(control.clone()));
    let skipped = session
        .add_hook_callbacks(hooks, carrier)
        .map_err(|e| format!("initialize: {e}"))?;
    for warning in skipped {
        session.warn().say(&warning);
    }
    Ok(())
}

/// What Claude's SDK sends in `initialize` rather than as flags when an application asks
/// it to (`settingsDelivery`, `disallowedToolsDelivery`, `managedSettingsDelivery`,
/// `pluginDelivery`: `'initialize'`): the same as the flags.
fn initialize_fields(
    init: &Value,
    session: &mut SessionOptions,
    agent: &mut AgentOptions,
) -> Result<(), String> {
    if let Some(tools) = init.get("disallowedTools") {
        let tools = tools
            .as_array()
            .and_then(|t| t.iter().map(|t| t.as_str().map(str::to_string)).collect())
            .ok_or("initialize: disallowedTools must be a list of tool names or rules")?;
        agent.disallowed_tools.extend::<Vec<String>>(tools);
    }
    for key in ["settings", "managedSettings"] {
        match init.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => agent.claude_settings.push(text.clone()),
            Some(settings @ Value::Object(_)) => agent.claude_settings.push(settings.to_string()),
            Some(_) => return Err(format!("initialize: {key} must be an object")),
        }
    }
    for plugin in init
        .get("plugins")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let path = plugin
            .get("path")
            .and_then(Value::as_str)
            .ok_or("initialize: a plugin needs a \"path\"")?;
        let skip_mcp = plugin.get("skipMcpDiscovery") == Some(&Value::Bool(true));
        crate::plugin::add_plugin(session, std::path::Path::new(path), !skip_mcp);
    }
    Ok(())
}

/// `sdkMcpServers`: `{"name": {"type": "sdk", "name": "name"}}`, each an MCP server in
/// the client. The client wrote them and runs them in its own process, so they are
/// trusted as the person's own tools are (no question before a call).
fn sdk_servers(
    declared: Option<&Value>,
    control: &Arc<ControlChannel>,
) -> Result<Vec<ServerConfig>, String> {
    let Some(declared) = declared.filter(|d| !d.is_null()) else {
        return Ok(Vec::new());
    };
    // Qwen's SDK sends an object of entries, Claude's a list of names.
    let named: Vec<(String, String)> = match declared {
        Value::Object(map) => map
            .iter()
            .map(|(alias, entry)| {
                let name = entry.get("name").and_then(Value::as_str).unwrap_or(alias);
                (alias.clone(), name.to_string())
            })
            .collect(),
        Value::Array(names) => names
            .iter()
            .map(|n| {
                n.as_str()
                    .map(|n| (n.to_string(), n.to_string()))
                    .ok_or("initialize: \"sdkMcpServers\" lists names (strings)")
            })
            .collect::<Result<_, _>>()?,
        _ => {
            return Err(
                "initialize: \"sdkMcpServers\" must be an object or a list of names".to_string(),
            );
        }
    };
    let channel = SdkChannel(Arc::new(SdkCarrier(control.clone())));
    let mut servers = Vec::new();
    for (alias, name) in named {
        if alias.trim().is_empty() || name.trim().is_empty() {
            return Err("initialize: an SDK MCP server needs a name".to_string());
        }
        servers.push(ServerConfig {
            alias,
            transport: Transport::Sdk {
                server: name,
                channel: channel.clone(),
            },
            startup_timeout: toolbelt_mcp::DEFAULT_STARTUP_TIMEOUT,
            call_timeout: toolbelt_mcp::DEFAULT_CALL_TIMEOUT,
            trust: true,
            trust_annotations: true,
            // The session's slot is set with the other servers'.
            sampling: Default::default(),
            asks: Default::default(),
            include_tools: None,
            exclude_tools: Vec::new(),
            description: None,
            // The session's roots are set with the other servers'.
            roots: Vec::new(),
            oauth: Default::default(),
        });
    }
    Ok(servers)
}

/// The turns and the client's requests of one session.
struct Loop<'a> {
    prepared: &'a Prepared,
    out: &'a Arc<Emitter>,
    /// User messages that arrived during a turn.
    waiting: VecDeque<(Vec<UserPart>, String, Option<String>)>,
    /// The running turn's token.
    cancel: Option<CancellationToken>,
}

impl<'a> Loop<'a> {
    async fn run(&mut self, queue: &mut mpsc::UnboundedReceiver<Incoming>) {
        let mut input_open = true;
        let mut turn: Option<(Turn<'a>, Instant)> = None;
        loop {
            if turn.is_none() {
                if let Some((parts, written, uuid)) = self.waiting.pop_front() {
                    if let (Some(uuid), Some(history)) = (uuid, &self.prepared.history) {
                        history.set_next_turn_id(uuid);
                    }
                    turn = Some((self.start(parts, written), Instant::now()));
                } else if !input_open {
                    return;
                }
            }
            tokio::select! {
                message = queue.recv(), if input_open => match message {
                    Some(Incoming::Message(message)) => self.take(message),
                    Some(Incoming::Bad { line, why }) => self.out.input_error(line, &why),
                    None => input_open = false,
                },
                outcome = running(&mut turn) => {
                    let started = turn.take().map_or_else(Instant::now, |(_, s)| s);
                    self.cancel = None;
                    self.out.result(&outcome, started.elapsed());
                }
                // Issue 33: scheduled prompts fire only between turns, as turns of their own.
                fired = toolbelt_session::cron::due(self.prepared.cron.as_ref()), if turn.is_none() && input_open => {
                    for task in fired {
                        let text = toolbelt_session::cron::prompt_of(&task);
                        self.waiting.push_back((vec![UserPart::Text(text.clone())], text, None));
                    }
                }
            }
        }
    }

    fn start(&mut self, parts: Vec<UserPart>, written: String) -> Turn<'a> {
        let cancel = CancellationToken::new();
        self.cancel = Some(cancel.clone());
        let agent = &self.prepared.agent;
        // The approval mode the system prompt names may have changed since the last
        // turn (set_permission_mode, an approved plan).
        agent.set_system_prompt(self.prepared.system_prompt.text(agent.scheduler().mode()));
        let prepared = self.prepared;
        Box::pin(async move {
            match crate::mcp_prompts::expand(prepared, parts).await {
                Ok(parts) => agent.run_with_references(parts, &written, &cancel).await,
                Err(outcome) => outcome,
            }
        })
    }

    /// One message from the client (not a response to us: those never get here).
    fn take(&mut self, message: Inbound) {
        match message {
            Inbound::User {
                parts,
                written,
                uuid,
            } => self.waiting.push_back((parts, written, uuid)),
            Inbound::ControlRequest {
                request_id,
                subtype,
                ..
            } if subtype == "supported_commands" => {
                // The client asks what it can run: the prompts of servers still starting
                // count, so the answer waits for them (each at most its startupTimeout)
                // without holding up the turn or other requests.
                let mcp = self.prepared.mcp.clone();
                tokio::spawn(async move {
                    mcp.wait_started(&mcp.aliases()).await;
                    let answer = json!({
                        "subtype": "supported_commands",
                        "commands": crate::mcp_prompts::commands(&mcp),
                    });
                    write_control(&control_response(&request_id, Ok(answer)));
                });
            }
            Inbound::ControlRequest {
                request_id,
                subtype,
                request,
            } => {
                let answer = self.control(&subtype, &request);
                write_control(&control_response(&request_id, answer));
            }
            _ => {}
        }
    }

    /// `rewind_files`: the files back to before the turn of a user message (its `uuid`).
    fn rewind_files(&self, request: &Value) -> Result<Value, String> {
        let id = request
            .get("user_message_id")
            .and_then(Value::as_str)
            .ok_or("rewind_files needs \"user_message_id\"")?;
        let dry_run = request
            .get("dry_run")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let kit = toolbelt_session::kit::undo::UndoKit::new(self.prepared);
        let r = kit.rewind_files(id, dry_run);
        let mut answer = json!({
            "canRewind": r.can_rewind, "filesChanged": r.files_changed,
            "insertions": r.insertions, "deletions": r.deletions,
        });
        if let Some(error) = r.error {
            answer["error"] = json!(error);
        }
        Ok(answer)
    }

    /// Answers one control request of the client.
    fn control(&mut self, subtype: &str, request: &Value) -> Result<Value, String> {
        let scheduler = self.prepared.agent.scheduler();
        match subtype {
            "interrupt" => {
                if let Some(cancel) = &self.cancel {
                    cancel.cancel();
                }
                Ok(json!({"subtype": "interrupt"}))
            }
            "set_permission_mode" => {
                let mode = request
                    .get("mode")
                    .and_then(Value::as_str)
                    .ok_or("set_permission_mode needs a \"mode\"")?;
                let dont_ask = mode == "dontAsk";
                // Claude's `auto` (a model classifier approves) is the default mode here:
                // toolbelt's own classifier runs read-only commands unasked.
                let parsed: ApprovalMode = if dont_ask || mode == "auto" {
                    ApprovalMode::Default
                } else {
                    mode.parse()?
                };
                scheduler.set_mode(parsed);
                self.prepared.dont_ask.set(dont_ask);
                // The name the client used: Claude's SDK accepts only its own.
                Ok(json!({"status": "updated", "mode": mode}))
            }
            "set_model" => {
                let name = request
                    .get("model")
                    .and_then(Value::as_str)
                    .filter(|m| !m.trim().is_empty())
                    .ok_or("set_model needs a \"model\"")?;
                let mut options = self.prepared.options.clone();
                options.model = Some(name.to_string());
                let (model, _) = toolbelt_session::build_model(
                    &options,
                    &self.prepared.settings,
                    &self.prepared.cwd,
                )
                .map_err(|e| e.to_string())?;
                self.prepared.model.replace(model);
                self.out.set_model(name);
                Ok(json!({"subtype": "set_model", "model": name}))
            }
            // Claude's name and shape: `mcpServers`, a list of `{name, status}`.
            "mcp_status" => {
                let servers: Vec<Value> = self
                    .prepared
                    .mcp
                    .reports()
                    .into_iter()
                    .map(|r| claude_server(r.alias, &r.status))
                    .collect();
                Ok(json!({"subtype": "mcp_status", "mcpServers": servers}))
            }
            "mcp_server_status" => {
                let status: serde_json::Map<String, Value> = self
                    .prepared
                    .mcp
                    .reports()
                    .into_iter()
                    .map(|r| (r.alias, json!(r.status.to_string())))
                    .collect();
                Ok(json!({"subtype": "mcp_server_status", "status": status}))
            }
            // Answered in `take`, once the servers still starting are up.
            "supported_commands" => Err("supported_commands is answered apart".to_string()),
            "get_context_usage" => {
                let usage = self.out.last_usage().unwrap_or_default();
                Ok(json!({
                    "subtype": "get_context_usage",
                    "modelName": self.out.model(),
                    "totalTokens": usage.prompt_tokens + usage.completion_tokens,
                    "isEstimated": false,
                }))
            }
            "initialize" => Err("the session is already initialized".to_string()),
            // Issue 34: the Claude SDK's `rewindFiles(userMessageId, {dryRun})`.
            "rewind_files" => self.rewind_files(request),
            other => Err(format!("Unknown control request subtype: {other}")),
        }
    }
}

/// The running turn's outcome; never ready without one.
async fn running(turn: &mut Option<(Turn<'_>, Instant)>) -> RunOutcome {
    match turn {
        Some((future, _)) => future.await,
        None => std::future::pending().await,
    }
}

/// What the reader hands the session loop, in the order read.
enum Incoming {
    Message(Inbound),
    /// Line `line` could not be used (already said on stderr); the loop tells the
    /// client with a `system`/`input_error` message.
    Bad {
        line: usize,
        why: String,
    },
}

/// Reads stdin until it closes. Answers to our requests go to `control`; the rest to
/// `queue`. A bad line is reported and skipped.
async fn read_input(
    mut stdin: impl AsyncBufRead + Unpin,
    control: Arc<ControlChannel>,
    queue: mpsc::UnboundedSender<Incoming>,
) {
    let mut number = 0usize;
    loop {
        number += 1;
        let parsed = match read_line(&mut stdin, MAX_LINE_BYTES).await {
            Ok(Some(line)) => input::parse_line(&line).map_err(|e| e.to_string()),
            Ok(None) => break,
            Err(LineError::TooLong) => Err(format!("longer than {MAX_LINE_BYTES} bytes")),
            Err(LineError::Io(e)) => {
                tracing::warn!("cannot read standard input: {e}");
                break;
            }
        };
        let incoming = match parsed {
            Ok(Some(Inbound::ControlResponse {
                request_id,
                outcome,
            })) => {
                control.resolve(&request_id, outcome);
                continue;
            }
            Ok(Some(Inbound::ControlCancel { request_id })) => {
                tracing::debug!("the client withdrew its request {request_id:?}");
                continue;
            }
            Ok(Some(Inbound::Ignored(_))) | Ok(None) => continue,
            Ok(Some(message)) => Incoming::Message(message),
            Err(why) => {
                crate::out::say(&format!("stream-json input line {number} skipped: {why}"));
                Incoming::Bad { line: number, why }
            }
        };
        if queue.send(incoming).is_err() {
            break;
        }
    }
    control.close();
}

/// `systemPrompt` / `appendSystemPrompt` of `initialize`: a string or a list of strings
/// (Claude's SDK sends a list), joined by blank lines; empty is none (Claude's SDK sends
/// `[""]` when the application set no prompt, and toolbelt keeps its own then).
fn prompt_text(value: Option<&Value>) -> Result<Option<String>, String> {
    let parts: Vec<&str> = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().ok_or("initialize: a system prompt is text"))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("initialize: a system prompt is text or a list of texts".into()),
    };
    let text = parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    Ok((!text.is_empty()).then_some(text))
}

/// A server in Claude's `mcp_status` shape (`connected`, `pending`, `needs-auth`,
/// `failed` + `error`).
fn claude_server(name: String, status: &ServerStatus) -> Value {
    match status {
        ServerStatus::Connected => json!({"name": name, "status": "connected"}),
        ServerStatus::Connecting => json!({"name": name, "status": "pending"}),
        ServerStatus::Failed(why) => json!({"name": name, "status": "failed", "error": why}),
        ServerStatus::NeedsLogin(hint) => {
            json!({"name": name, "status": "needs-auth", "error": hint})
        }
        other => json!({"name": name, "status": "failed", "error": other.to_string()}),
    }
}
