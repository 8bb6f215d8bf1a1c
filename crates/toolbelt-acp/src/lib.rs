//! `toolbelt --acp`: the Agent Client Protocol, with which editors (Zed, JetBrains IDEs,
//! Neovim's CodeCompanion and avante, Emacs' agent-shell) drive a coding agent: JSON-RPC
//! 2.0, one message a line, on toolbelt's standard input and output.
//!
//! # Brief overview
//!
//! - The reader (this file) reads lines; answers to our own requests go straight to the
//!   `rpc::Peer` (so a permission question is answered while its turn waits), each
//!   request runs as a task of its own (a long prompt does not hold up `set_mode` or
//!   `session/cancel`), and a bad line is answered with a JSON-RPC error, after which
//!   reading goes on.
//! - `session/new`, `session/load` and `session/resume` open a session exactly as the
//!   other front ends do (`toolbelt_session::Session::agent`): the one scheduler with the
//!   session's rules, hooks, checkpoints and confinement (`live`). The editor is the
//!   approver (`permission`) and the agent's events become `session/update`s
//!   (`updates`).
//! - When the editor goes away (end of input), every turn is cancelled, its processes
//!   end, and each session's background agents, monitors and MCP servers are stopped
//!   before toolbelt exits.
//!
//! Protocol version 1. Sessions are toolbelt's saved sessions: `session/list` lists a
//! project's, `session/load` replays one as updates, `session/resume` continues one
//! without replaying.

#![warn(missing_docs, unreachable_pub)]

mod client_fs;
mod commands;
mod elicit;
mod live;
mod permission;
mod prompt;
mod rpc;
mod terminal;
mod updates;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::{
    AgentCapabilities, AvailableCommandsUpdate, ClientCapabilities, CloseSessionRequest,
    Error as RpcError, Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, McpCapabilities, NewSessionRequest,
    PromptCapabilities, PromptRequest, PromptResponse, ResumeSessionRequest, SessionCapabilities,
    SessionCloseCapabilities, SessionConfigOptionValue, SessionInfo, SessionListCapabilities,
    SessionResumeCapabilities, SessionUpdate, SetSessionConfigOptionRequest, SetSessionModeRequest,
    Usage,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::BufReader;
use tokio::task::JoinSet;
use toolbelt_session::kit::lines::{LineError, read_line};
use toolbelt_session::{AgentOptions, Resume, SessionOptions};

pub use crate::terminal::follow as follow_terminal;

use crate::live::{Live, Offers, Opening};
use crate::rpc::{Incoming, MAX_LINE_BYTES, Peer};

/// What every session of an ACP connection is opened with (the command line's flags).
pub struct AcpOptions {
    /// The sessions' options; an editor's `mcpServers` join them per session.
    pub session: SessionOptions,
    /// The agents' options (model, rules, mode).
    pub agent: AgentOptions,
}

/// Serves ACP on standard input and output until the editor closes its end. Nothing
/// fails the connection as a whole: a bad request is answered with an error.
pub async fn run(options: AcpOptions) {
    let (peer, writer) = Peer::stdout();
    let server = Arc::new(Server {
        peer: Arc::new(peer),
        options,
        client: OnceLock::new(),
        sessions: Mutex::new(HashMap::new()),
        shutdown: tokio_util::sync::CancellationToken::new(),
    });
    let mut tasks = JoinSet::new();
    let mut stdin = BufReader::new(tokio::io::stdin());
    loop {
        let line = match read_line(&mut stdin, MAX_LINE_BYTES).await {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(LineError::TooLong) => {
                let why = format!("a line longer than {MAX_LINE_BYTES} bytes was skipped");
                server
                    .peer
                    .respond(Value::Null, Err(RpcError::parse_error().data(json!(why))));
                continue;
            }
            Err(LineError::Io(e)) => {
                tracing::warn!("cannot read standard input: {e}");
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match rpc::parse(&line) {
            Ok(Incoming::Response { id, outcome }) => server.peer.resolve(&id, outcome),
            Ok(Incoming::Notification { method, params }) => server.notified(&method, &params),
            Ok(Incoming::Request { id, method, params }) => {
                let server = server.clone();
                tasks.spawn(async move {
                    let outcome = server.call(&method, params).await;
                    let answered = outcome.as_ref().ok().cloned();
                    server.peer.respond(id, outcome);
                    if let Some(answer) = answered {
                        server.after(&method, &answer);
                    }
                });
            }
            Err(bad) => server.peer.respond(bad.id, Err(bad.error)),
        }
        // Finished requests are collected as they end, so the set stays small.
        while tasks.try_join_next().is_some() {}
    }
    // The editor is gone: turns end (also those of prompts still on their way in),
    // questions to it fail, the requests it sent before it went are answered (a session
    // it asked for is still made), then every session ends.
    server.shutdown.cancel();
    server.peer.close();
    let answered = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(LAST_ANSWERS, answered).await.is_err() {
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
    server.close_all().await;
    server.peer.finish();
    let _ = writer.await;
}

/// How long the requests an editor sent before it went away have to be answered.
const LAST_ANSWERS: std::time::Duration = std::time::Duration::from_secs(10);

/// The connection's state: the editor's capabilities and the open sessions.
struct Server {
    peer: Arc<Peer>,
    options: AcpOptions,
    client: OnceLock<ClientCapabilities>,
    sessions: Mutex<HashMap<String, Arc<Live>>>,
    /// Cancelled when the editor goes away: every turn's token is a child of it.
    shutdown: tokio_util::sync::CancellationToken,
}

impl Server {
    /// Answers one request.
    async fn call(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        match method {
            "initialize" => to_value(self.initialize(parse_params(params)?)),
            "authenticate" => Ok(json!({})),
            "session/new" => self.new_session(parse_params(params)?).await,
            "session/load" => self.load(parse_params(params)?).await,
            "session/resume" => self.resume(parse_params(params)?).await,
            "session/list" => self.list(parse_params(params)?),
            "session/close" => self.close(parse_params(params)?).await,
            "session/set_mode" => {
                let request: SetSessionModeRequest = parse_params(params)?;
                self.live(&request.session_id.0)?
                    .set_mode(&request.mode_id.0)?;
                Ok(json!({}))
            }
            "session/set_config_option" => self.set_config_option(parse_params(params)?),
            "session/prompt" => {
                let request: PromptRequest = parse_params(params)?;
                let live = self.live(&request.session_id.0)?;
                let (stop, usage) = live.prompt(request.prompt, &self.shutdown).await?;
                // The turn's tokens, when the model server counted them.
                let usage = usage.filter(|u| u.total_tokens > 0).map(|u| {
                    Usage::new(u.total_tokens, u.prompt_tokens, u.completion_tokens)
                        .cached_read_tokens(Some(u.cache_read_tokens).filter(|n| *n > 0))
                        .cached_write_tokens(Some(u.cache_write_tokens).filter(|n| *n > 0))
                });
                to_value(PromptResponse::new(stop).usage(usage))
            }
            _ => Err(RpcError::method_not_found().data(json!(method))),
        }
    }

    /// What follows an answer: a new or loaded session's slash commands.
    fn after(&self, method: &str, answer: &Value) {
        if !matches!(method, "session/new" | "session/load" | "session/resume") {
            return;
        }
        let id = answer
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_string);
        let live = id.and_then(|id| self.live(&id).ok());
        if let Some(live) = live {
            let commands = commands::available(&live);
            live.updates.send(SessionUpdate::AvailableCommandsUpdate(
                AvailableCommandsUpdate::new(commands),
            ));
        }
    }

    /// One notification; unknown ones are ignored, as JSON-RPC asks.
    fn notified(&self, method: &str, params: &Value) {
        if method == "session/cancel" {
            let id = params
                .get("sessionId")
                .and_then(Value::as_str)
                .unwrap_or("");
            if let Ok(live) = self.live(id) {
                live.cancel();
            }
        }
    }

    fn initialize(&self, request: InitializeRequest) -> InitializeResponse {
        let _ = self.client.set(request.client_capabilities);
        let version = if request.protocol_version < ProtocolVersion::V1 {
            request.protocol_version
        } else {
            ProtocolVersion::V1
        };
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
            .mcp_capabilities(McpCapabilities::new().http(true).sse(true))
            .session_capabilities(
                SessionCapabilities::new()
                    .list(SessionListCapabilities::new())
                    .resume(SessionResumeCapabilities::new())
                    .close(SessionCloseCapabilities::new()),
            );
        InitializeResponse::new(version)
            .agent_capabilities(capabilities)
            .agent_info(
                Implementation::new("toolbelt", env!("CARGO_PKG_VERSION")).title("toolbelt"),
            )
    }

    async fn open(&self, opening: Opening) -> Result<Arc<Live>, RpcError> {
        let offers = self.client.get().map(|c| Offers {
            reads: c.fs.read_text_file,
            writes: c.fs.write_text_file,
            terminals: c.terminal,
            elicit_form: c.elicitation.as_ref().is_some_and(|e| e.form.is_some()),
            elicit_url: c.elicitation.as_ref().is_some_and(|e| e.url.is_some()),
        });
        let live = Live::open(
            &self.peer,
            &self.options.session,
            &self.options.agent,
            opening,
            offers.unwrap_or_default(),
        )
        .await?;
        let live = Arc::new(live);
        let replaced = self
            .sessions
            .lock()
            .ok()
            .and_then(|mut s| s.insert(live.id.clone(), live.clone()));
        // The same session opened again: the earlier copy ends.
        if let Some(old) = replaced {
            old.close().await;
        }
        Ok(live)
    }

    fn opened(live: &Live) -> Value {
        json!({
            "sessionId": live.id,
            "modes": live.modes(),
            "configOptions": live.config_options(),
        })
    }

    async fn new_session(&self, request: NewSessionRequest) -> Result<Value, RpcError> {
        let live = self
            .open(Opening {
                cwd: request.cwd,
                mcp_servers: request.mcp_servers,
                resume: Resume::Fresh,
                id: None,
            })
            .await?;
        Ok(Self::opened(&live))
    }

    async fn load(&self, request: LoadSessionRequest) -> Result<Value, RpcError> {
        let id = request.session_id.0.to_string();
        let live = self
            .open(Opening {
                cwd: request.cwd,
                mcp_servers: request.mcp_servers,
                resume: Resume::Id(id.clone()),
                id: Some(id),
            })
            .await?;
        live.replay();
        Ok(Self::opened(&live))
    }

    async fn resume(&self, request: ResumeSessionRequest) -> Result<Value, RpcError> {
        let id = request.session_id.0.to_string();
        let live = self
            .open(Opening {
                cwd: request.cwd,
                mcp_servers: request.mcp_servers,
                resume: Resume::Id(id.clone()),
                id: Some(id),
            })
            .await?;
        Ok(Self::opened(&live))
    }

    async fn close(&self, request: CloseSessionRequest) -> Result<Value, RpcError> {
        let id = request.session_id.0.to_string();
        let live = self.sessions.lock().ok().and_then(|mut s| s.remove(&id));
        let live = live.ok_or_else(|| RpcError::session_not_found(id))?;
        live.close().await;
        Ok(json!({}))
    }

    /// The saved sessions of `cwd`'s project (the process's directory without one),
    /// newest first.
    fn list(&self, request: ListSessionsRequest) -> Result<Value, RpcError> {
        let cwd = match request.cwd {
            Some(cwd) => cwd,
            None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
        };
        let store = toolbelt_session::saved::store(&cwd);
        let ids = store.ids().unwrap_or_default();
        let sessions: Vec<SessionInfo> = ids
            .iter()
            .filter_map(|id| store.load(id).ok().map(|s| (id, s)))
            .map(|(id, saved)| {
                let title = saved.messages.iter().find_map(first_words);
                SessionInfo::new(id.clone(), saved.header.cwd.clone())
                    .title(title)
                    .updated_at(saved.header.started.clone())
            })
            .collect();
        to_value(ListSessionsResponse::new(sessions))
    }

    fn set_config_option(&self, request: SetSessionConfigOptionRequest) -> Result<Value, RpcError> {
        let live = self.live(&request.session_id.0)?;
        let value = match &request.value {
            SessionConfigOptionValue::ValueId { value } => value.0.to_string(),
            _ => {
                return Err(
                    RpcError::invalid_params().data(json!("a select option's value is an id"))
                );
            }
        };
        match &*request.config_id.0 {
            "mode" => live.set_mode(&value)?,
            "model" => live.set_model(&value)?,
            other => {
                return Err(RpcError::invalid_params().data(json!(format!("no option {other:?}"))));
            }
        }
        Ok(json!({ "configOptions": live.config_options() }))
    }

    fn live(&self, id: &str) -> Result<Arc<Live>, RpcError> {
        self.sessions
            .lock()
            .ok()
            .and_then(|s| s.get(id).cloned())
            .ok_or_else(|| RpcError::session_not_found(id.to_string()))
    }

    /// Ends every session (the editor went away).
    async fn close_all(&self) {
        let all: Vec<Arc<Live>> = self
            .sessions
            .lock()
            .map(|mut s| s.drain().map(|(_, l)| l).collect())
            .unwrap_or_default();
        for live in &all {
            live.cancel();
        }
        for live in all {
            live.close().await;
        }
    }
}

/// A saved session's first prompt, as its title.
fn first_words(message: &toolbelt_model::Message) -> Option<String> {
    let toolbelt_model::Message::User(parts) = message else {
        return None;
    };
    parts.iter().find_map(|p| match p {
        toolbelt_model::UserPart::Text(t) if !toolbelt_engine::hooks::is_context_block(t) => {
            Some(t.lines().next().unwrap_or("").chars().take(80).collect())
        }
        _ => None,
    })
}

fn parse_params<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params)
        .map_err(|e| RpcError::invalid_params().data(json!(e.to_string())))
}

fn to_value(value: impl serde::Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(RpcError::into_internal_error)
}
