//! Starting a server's transport and doing the handshake, and saying in one line why that
//! failed.
//!
//! Which revision: a stdio or Streamable HTTP server is probed with `server/discover`
//! (the 2026-07-28 revision, stateless: every later request carries the version and our
//! capabilities in its `_meta`); a server that does not know the method gets the
//! `initialize` handshake, and speaks whichever older revision it picks. Legacy SSE
//! servers (2024-11-05) and SDK servers get `initialize` straight away. rmcp does the
//! probe and the fallback ([`ClientLifecycleMode::Auto`]).
//!
//! rmcp's errors print the transport's Rust type and every wrapper
//! (`Send message error Transport [rmcp::transport::worker::WorkerTransport<...>] error:
//! Client error: ...`); a person needs the URL or command and the cause at the bottom of
//! the chain, so [`init_error_text`] walks the chain instead.

use std::collections::{BTreeMap, HashMap};
use std::error::Error;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};

use toolbelt_process::GroupCommand;
use toolbelt_process::log::{CappedLog, copy_to_log};

use crate::config::{ServerConfig, Transport};
use crate::events::ServerEvents;
use crate::sse::SseTransport;

pub(crate) type Client = RunningService<RoleClient, ServerEvents>;

/// Why a start failed.
pub(crate) enum StartError {
    /// The server answered 401: it wants an OAuth login (what to run).
    NeedsLogin(String),
    /// Anything else, why.
    Failed(String),
    /// The server answered `server/discover` that it speaks only revisions with the
    /// `initialize` handshake (as rmcp's servers restricted to them do): start again
    /// with that handshake.
    OlderRevisions,
}

impl From<String> for StartError {
    fn from(why: String) -> Self {
        StartError::Failed(why)
    }
}

/// Starts the transport of `config` and does the handshake. A stdio server's pid is
/// put in `starting_pid` as soon as it runs, so that a caller whose wait timed out can
/// kill it (see `McpConnection::kill_starting`).
pub(crate) async fn start(
    config: &ServerConfig,
    events: &ServerEvents,
    log_path: &Path,
    starting_pid: &Mutex<Option<u32>>,
) -> Result<Client, StartError> {
    match start_as(config, events, log_path, starting_pid, probe()).await {
        Err(StartError::OlderRevisions) => {
            // The probed process is dropped (rmcp ends it); its group goes too.
            let probed = starting_pid
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(pid) = probed {
                toolbelt_process::signal_group(pid, rustix::process::Signal::KILL);
            }
            let initialize = ClientLifecycleMode::Initialize;
            match start_as(config, events, log_path, starting_pid, initialize).await {
                Err(StartError::OlderRevisions) => Err(StartError::Failed(
                    "the server speaks no protocol revision toolbelt knows".into(),
                )),
                started => started,
            }
        }
        started => started,
    }
}

/// [`start`] with one way to begin the lifecycle for stdio and Streamable HTTP servers.
async fn start_as(
    config: &ServerConfig,
    events: &ServerEvents,
    log_path: &Path,
    starting_pid: &Mutex<Option<u32>>,
    lifecycle: ClientLifecycleMode,
) -> Result<Client, StartError> {
    let transport = &config.transport;
    let target = transport.target();
    let handshake = |e: ClientInitializeError| match &e {
        ClientInitializeError::NoCompatibleProtocolVersion {
            server_supported, ..
        } if !server_supported.is_empty()
            && server_supported.iter().all(ProtocolVersion::has_initialize) =>
        {
            StartError::OlderRevisions
        }
        _ => StartError::Failed(format!(
            "the MCP handshake with {target} failed: {}",
            init_error_text(&e)
        )),
    };
    match transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            if !cwd.is_dir() {
                return Err(
                    format!("the working directory {} does not exist", cwd.display()).into(),
                );
            }
            let stderr = open_log(log_path);
            // rmcp kills a dropped child from a spawned task; if the runtime ends
            // first, that task is dropped instead, and only kill_on_drop still kills
            // a server that ignores its closed stdin. Its own process group lets a
            // server that timed out be killed with whatever it started (`npx` → node).
            // The owner marker: if toolbelt dies without ending the server, the guardian
            // finds it (and what it started) by this.
            let owner = toolbelt_process::Owner::new();
            let mut cmd = GroupCommand::new(command, &owner);
            cmd.args(args).envs(env).current_dir(cwd);
            let (child, _) = TokioChildProcess::builder(cmd.into_tokio(true))
                .stderr(stderr)
                .spawn()
                .map_err(|e| format!("cannot start `{command}`: {e}"))?;
            if let Some(pid) = child.id() {
                owner.started(pid);
            }
            *starting_pid.lock().unwrap_or_else(PoisonError::into_inner) = child.id();
            Ok(events
                .clone()
                .serve_with_lifecycle(child, lifecycle)
                .await
                .map_err(handshake)?)
        }
        Transport::StreamableHttp { url, headers } => {
            start_http(config, url, headers, events, lifecycle, handshake).await
        }
        Transport::Sse { url, headers } => {
            let auth = crate::oauth::kept_tokens(config).await?.map(Arc::new);
            let transport = match SseTransport::connect(url, headers, auth).await {
                Ok(transport) => transport,
                Err(StartError::NeedsLogin(_)) if crate::oauth::applies(config) => {
                    return Err(needs_login(config));
                }
                Err(StartError::NeedsLogin(why) | StartError::Failed(why)) => {
                    return Err(StartError::Failed(why));
                }
                Err(StartError::OlderRevisions) => return Err(StartError::OlderRevisions),
            };
            Ok(events
                .clone()
                .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
                .await
                .map_err(handshake)?)
        }
        Transport::Sdk { server, channel } => {
            // The client of a stream-JSON session hosts these; they predate the probe.
            let transport = crate::sdk::SdkTransport::new(server, channel);
            Ok(events
                .clone()
                .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
                .await
                .map_err(handshake)?)
        }
    }
}

/// `server/discover` for the 2026-07-28 revision, else `initialize` offering 2025-11-25
/// (the server answers with the revision it speaks, older ones too).
fn probe() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    }
}

/// What a server that answered 401 wants, and what to run.
fn needs_login(config: &ServerConfig) -> StartError {
    StartError::NeedsLogin(format!(
        "the server asks for an OAuth login: run `toolbelt mcp auth {}`",
        config.alias
    ))
}

/// A Streamable HTTP server: the configured headers (a `Bearer` one as rmcp's own
/// token), and the kept OAuth tokens when OAuth applies (`oauth`). A 401 is
/// "needs login" when OAuth applies, else a failure.
async fn start_http(
    config: &ServerConfig,
    url: &str,
    headers: &BTreeMap<String, String>,
    events: &ServerEvents,
    lifecycle: ClientLifecycleMode,
    handshake: impl FnOnce(ClientInitializeError) -> StartError,
) -> Result<Client, StartError> {
    let mut settings = StreamableHttpClientTransportConfig::with_uri(url);
    let mut custom = HashMap::new();
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("authorization")
            && let Some(token) = value.strip_prefix("Bearer ")
        {
            settings = settings.auth_header(token.to_string());
            continue;
        }
        let (name, value) = header(name, value)?;
        custom.insert(name, value);
    }
    let http = same_origin_client()?;
    let settings = settings.custom_headers(custom);
    let started = match crate::oauth::authorized_client(config, http.clone()).await? {
        Some(client) => {
            let transport = StreamableHttpClientTransport::with_client(client, settings);
            events
                .clone()
                .serve_with_lifecycle(transport, lifecycle)
                .await
        }
        None => {
            let transport = StreamableHttpClientTransport::with_client(http, settings);
            events
                .clone()
                .serve_with_lifecycle(transport, lifecycle)
                .await
        }
    };
    started.map_err(|e| {
        if crate::oauth::applies(config) && crate::oauth::asks_for_login(&e) {
            needs_login(config)
        } else {
            handshake(e)
        }
    })
}

/// Bytes one start of a server adds to its log at most. A log that reached it is
/// started afresh at the next start, so it never holds more than twice this: a server
/// that floods its standard error (a hostile one, or one in a crash loop) cannot fill
/// the disk.
pub(crate) const SERVER_LOG_CAP: u64 = 16 << 20;

/// The server's stderr, appended to its log through a capped copy
/// ([`toolbelt_process::log`]); the directory is the person's alone (0700), since a
/// server may log what it was given. Where the log or the copy cannot be made, the
/// output is dropped.
fn open_log(log_path: &Path) -> Stdio {
    if let Some(dir) = log_path.parent() {
        let _ = toolbelt_config::store_files::create_dir_all(dir);
    }
    let opened = toolbelt_config::store_files::open_options()
        .create(true)
        .append(true)
        .open(log_path);
    let Ok(file) = opened else {
        return Stdio::null();
    };
    if file.metadata().is_ok_and(|m| m.len() >= SERVER_LOG_CAP) {
        let _ = file.set_len(0);
    }
    let Ok((reader, writer)) = std::io::pipe() else {
        return Stdio::null();
    };
    match copy_to_log(reader, CappedLog::new(file, SERVER_LOG_CAP, None)) {
        Ok(_) => Stdio::from(writer),
        Err(_) => Stdio::null(),
    }
}

/// One configured header, checked. The error names the header, never its value.
pub(crate) fn header(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), String> {
    let name = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("header name {name:?} is not a valid HTTP header name"))?;
    let mut value = HeaderValue::from_str(value)
        .map_err(|_| format!("the value of header {name} is not a valid HTTP header value"))?;
    value.set_sensitive(true);
    Ok((name, value))
}

/// The configured headers as a map, checked.
pub(crate) fn header_map(
    headers: &BTreeMap<String, String>,
) -> Result<reqwest::header::HeaderMap, String> {
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        let (name, value) = header(name, value)?;
        map.insert(name, value);
    }
    Ok(map)
}

/// An HTTP client that follows redirects only within the origin it was sent to: a
/// server must not be able to send our configured headers (API keys) to another host
/// by answering with a redirect. reqwest drops `Authorization` and cookies on a
/// cross-host redirect, but not custom headers such as `X-Api-Key`.
pub(crate) fn same_origin_client() -> Result<reqwest::Client, String> {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().map(|u| u.origin());
        if attempt.previous().len() > 10 {
            attempt.error("too many redirects")
        } else if first.is_some_and(|origin| origin != attempt.url().origin()) {
            let to = toolbelt_config::redact::redact(attempt.url().as_str());
            attempt.error(format!(
                "the server redirected to another origin ({to}); refused, since the configured headers would go there"
            ))
        } else {
            attempt.follow()
        }
    });
    toolbelt_netguard::client_builder()
        .redirect(policy)
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {}", error_chain(&e)))
}

/// A handshake failure in one line: the cause, without rmcp's type dumps.
pub(crate) fn init_error_text(e: &ClientInitializeError) -> String {
    match e {
        ClientInitializeError::TransportError { error, context } => {
            format!("{} ({context})", error_chain(error.error.as_ref()))
        }
        ClientInitializeError::ConnectionClosed(_) => {
            "the server closed the connection before answering (it may have exited)".into()
        }
        ClientInitializeError::ExpectedInitResponse(_)
        | ClientInitializeError::ExpectedInitResult(_) => {
            "the server answered initialize with something else".into()
        }
        other => other.to_string(),
    }
}

/// Every message in an error's source chain, joined by `: `, leaving out a message
/// that only repeats the one after it (reqwest and hyper nest the same text).
pub(crate) fn error_chain(e: &(dyn Error + 'static)) -> String {
    let mut messages: Vec<String> = Vec::new();
    let mut current: Option<&(dyn Error + 'static)> = Some(e);
    while let Some(error) = current {
        let text = error.to_string();
        if !messages.iter().any(|m| m.contains(&text)) {
            messages.push(text);
        }
        current = error.source();
    }
    messages.join(": ")
}
