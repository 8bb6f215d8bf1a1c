//! Which MCP servers to connect, and how: `mcpServers` from the settings, the extra
//! servers of `--mcp-config`, `mcp.serverCommand`, filtered by `mcp.allowed`,
//! `mcp.excluded` and `--allowed-mcp-server-names`.
//!
//! Transport priority is Qwen Code's: `httpUrl` (Streamable HTTP), then `url` (legacy
//! SSE), then `command` (stdio). A server entry that names none of them is reported as a
//! failed server with the reason, like any other failure: it never stops the others.

use crate::error::McpConfigError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use toolbelt_config::settings::McpServerSettings;
use toolbelt_config::settings::Settings;
use toolbelt_config::{redact, redact::Redactor};

/// Default time to start a server, finish the handshake and list its tools
/// (`startupTimeout`).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time one call to a server may take (`timeout`).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, PartialEq, Eq)]
/// How toolbelt reaches a server.
pub enum Transport {
    /// A child process speaking JSON-RPC on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to its environment.
        env: BTreeMap<String, String>,
        /// Already resolved against the project root.
        cwd: PathBuf,
    },
    /// Streamable HTTP (`httpUrl`).
    StreamableHttp {
        /// The endpoint.
        url: String,
        /// Headers sent with every request (credentials are redacted in messages).
        headers: BTreeMap<String, String>,
    },
    /// The 2024-11-05 HTTP+SSE transport.
    Sse {
        /// The event-stream URL.
        url: String,
        /// Headers sent with every request (credentials are redacted in messages).
        headers: BTreeMap<String, String>,
    },
    /// A server that lives in the client of a stream-JSON session (`sdkMcpServers`),
    /// reached through its control requests (see [`crate::sdk`]).
    Sdk {
        /// The server's name in the client.
        server: String,
        /// The channel the messages travel on, through the binary.
        channel: crate::sdk::SdkChannel,
    },
}

impl Transport {
    /// `stdio`, `http`, `sse` or `sdk`, for listings.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::StreamableHttp { .. } => "http",
            Transport::Sse { .. } => "sse",
            Transport::Sdk { .. } => "sdk",
        }
    }

    /// The command line or URL, for listings, with credentials masked.
    pub fn target(&self) -> String {
        let target = match self {
            Transport::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Transport::StreamableHttp { url, .. } | Transport::Sse { url, .. } => url.clone(),
            Transport::Sdk { server, .. } => format!("{server} (in the SDK client)"),
        };
        redact::redact(&target)
    }

    /// Registers the credentials this transport carries with `redactor`: header values,
    /// URL user-info and secret query parameters, secret-looking `env` values and the
    /// values of secret-looking flags.
    pub fn register_secrets(&self, redactor: &Redactor) {
        match self {
            Transport::Stdio { args, env, .. } => {
                redactor.add_arguments(args);
                for (name, value) in env {
                    redactor.add_named_value(name, value);
                }
            }
            Transport::StreamableHttp { url, headers } | Transport::Sse { url, headers } => {
                redactor.add_url(url);
                for value in headers.values() {
                    redactor.add_header_value(value);
                }
            }
            Transport::Sdk { .. } => {}
        }
    }
}

/// One server, ready to connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The entry's name in `mcpServers`, in tool names `mcp__<alias>__<tool>`.
    pub alias: String,
    /// How to reach it.
    pub transport: Transport,
    /// How long starting it, the handshake and the first listing may take
    /// (`startupTimeout`).
    pub startup_timeout: Duration,
    /// How long one call to it may take (`timeout`, or the older `callTimeout`).
    pub call_timeout: Duration,
    /// Calls run without confirmation; the server's annotations are believed.
    pub trust: bool,
    /// The server's annotations are believed (`readOnlyHint` tools run unasked, as
    /// reads); its other tools still ask.
    pub trust_annotations: bool,
    /// Whether its sampling requests reach the model (`sampling`; see
    /// [`toolbelt_config::settings::McpSampling`]).
    pub sampling: toolbelt_config::settings::McpSampling,
    /// Who answers its elicitation and sampling requests: the session's slot, empty
    /// (refusing) until the session says otherwise.
    pub asks: toolbelt_core::ServerAskSlot,
    /// Only these tools are offered (`includeTools`); all when `None`.
    pub include_tools: Option<Vec<String>>,
    /// These tools are never offered (`excludeTools`).
    pub exclude_tools: Vec<String>,
    /// The person's description of the server, for listings.
    pub description: Option<String>,
    /// The folders the server is told it works in (`roots/list`): the session's
    /// workspace roots; the project root until the session says otherwise.
    pub roots: Vec<PathBuf>,
    /// How toolbelt logs in when the server asks for OAuth (`oauth`; see `oauth`).
    pub oauth: crate::oauth::OAuthConfig,
}

impl ServerConfig {
    /// Reads one `mcpServers` entry; relative `cwd` is taken from `project_root`.
    pub fn from_settings(
        alias: &str,
        entry: &McpServerSettings,
        project_root: &Path,
    ) -> Result<ServerConfig, McpConfigError> {
        let transport = if let Some(url) = entry.http_url.as_ref().filter(|u| !u.is_empty()) {
            Transport::StreamableHttp {
                url: url.clone(),
                headers: entry.headers.clone(),
            }
        } else if let Some(url) = entry.url.as_ref().filter(|u| !u.is_empty()) {
            Transport::Sse {
                url: url.clone(),
                headers: entry.headers.clone(),
            }
        } else if let Some(command) = entry.command.as_ref().filter(|c| !c.trim().is_empty()) {
            let cwd = match &entry.cwd {
                Some(dir) if Path::new(dir).is_absolute() => PathBuf::from(dir),
                Some(dir) => project_root.join(dir),
                None => project_root.to_path_buf(),
            };
            Transport::Stdio {
                command: command.clone(),
                args: entry.args.clone(),
                env: entry.env.clone(),
                cwd,
            }
        } else {
            return Err(McpConfigError::NoTransport);
        };
        let millis = |v: Option<u64>, default: Duration| {
            v.filter(|ms| *ms > 0)
                .map(Duration::from_millis)
                .unwrap_or(default)
        };
        Ok(ServerConfig {
            alias: alias.to_string(),
            transport,
            startup_timeout: millis(entry.startup_timeout, DEFAULT_STARTUP_TIMEOUT),
            // Qwen Code's `timeout` is the call timeout; `callTimeout` is toolbelt's older
            // name for it, still read. (toolbelt once read `timeout` as the connect
            // timeout: that is `startupTimeout` now.)
            call_timeout: millis(
                entry.timeout.filter(|ms| *ms > 0).or(entry.call_timeout),
                DEFAULT_CALL_TIMEOUT,
            ),
            trust: entry.trust,
            trust_annotations: entry.trust_annotations,
            sampling: entry.sampling,
            asks: Default::default(),
            include_tools: entry.include_tools.clone(),
            exclude_tools: entry.exclude_tools.clone(),
            description: entry.description.clone(),
            roots: vec![project_root.to_path_buf()],
            oauth: crate::oauth::OAuthConfig::from_settings(&entry.oauth),
        })
    }

    /// Whether the server's tool annotations (`readOnlyHint`) may decide that a call
    /// needs no confirmation: only when the person said so in their settings.
    pub fn believes_annotations(&self) -> bool {
        self.trust || self.trust_annotations
    }

    /// Whether this entry starts toolbelt's own `toolbelt mcp serve` (a stdio command
    /// named `toolbelt`, or the running binary `own_exe`, with `mcp serve` among its
    /// arguments): the client configuration README shows for Qwen Code, which toolbelt
    /// reads too. Connected, it would offer every tool of the session a second time.
    pub fn is_toolbelt_serve(&self, own_exe: Option<&Path>) -> bool {
        let Transport::Stdio { command, args, .. } = &self.transport else {
            return false;
        };
        if !args.windows(2).any(|w| w[0] == "mcp" && w[1] == "serve") {
            return false;
        }
        let path = Path::new(command);
        if path.file_name().is_some_and(|n| n == "toolbelt") {
            return true;
        }
        let found = if command.contains('/') {
            Some(path.to_path_buf())
        } else {
            std::env::var_os("PATH").and_then(|dirs| {
                std::env::split_paths(&dirs)
                    .map(|d| d.join(command))
                    .find(|p| p.is_file())
            })
        };
        let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        matches!((found, own_exe), (Some(f), Some(exe)) if same(&f, exe))
    }

    /// `excludeTools` wins over `includeTools`; entries may be written `name(...)`.
    pub fn offers_tool(&self, name: &str) -> bool {
        let matches = |entry: &String| {
            let entry = entry.trim();
            entry == name
                || entry
                    .strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('('))
        };
        if self.exclude_tools.iter().any(matches) {
            return false;
        }
        match &self.include_tools {
            Some(include) => include.iter().any(matches),
            None => true,
        }
    }
}

/// A server that could not even be configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The entry's name in `mcpServers`.
    pub alias: String,
    /// Why it could not be read.
    pub reason: String,
}

/// Every server to connect, in alias order, and the entries that are wrong.
///
/// `extra` (from `--mcp-config`) replaces settings entries of the same alias.
/// `allowed_names` (from `--allowed-mcp-server-names`) and `mcp.allowed` keep only the
/// servers they name; `mcp.excluded` removes servers.
pub fn configured_servers(
    settings: &Settings,
    extra: &BTreeMap<String, McpServerSettings>,
    allowed_names: Option<&[String]>,
    project_root: &Path,
) -> (Vec<ServerConfig>, Vec<ConfigProblem>) {
    let mut entries = settings.mcp_servers.clone();
    if let Some(command) = settings
        .mcp
        .server_command
        .as_ref()
        .filter(|c| !c.trim().is_empty())
    {
        match shlex::split(command).filter(|argv| !argv.is_empty()) {
            Some(argv) => {
                entries
                    .entry("mcp".to_string())
                    .or_insert(McpServerSettings {
                        command: Some(argv[0].clone()),
                        args: argv[1..].to_vec(),
                        ..Default::default()
                    });
            }
            None => {
                return (
                    Vec::new(),
                    vec![ConfigProblem {
                        alias: "mcp".into(),
                        reason: format!("mcp.serverCommand `{command}` has unbalanced quotes"),
                    }],
                );
            }
        }
    }
    for (alias, entry) in extra {
        entries.insert(alias.clone(), entry.clone());
    }
    let mut servers = Vec::new();
    let mut problems = Vec::new();
    for (alias, entry) in &entries {
        let listed = |list: &[String]| list.iter().any(|n| n.trim() == alias);
        if allowed_names.is_some_and(|names| !names.is_empty() && !listed(names))
            || settings
                .mcp
                .allowed
                .as_deref()
                .is_some_and(|names| !listed(names))
            || listed(&settings.mcp.excluded)
        {
            continue;
        }
        match ServerConfig::from_settings(alias, entry, project_root) {
            Ok(server) => servers.push(server),
            Err(reason) => problems.push(ConfigProblem {
                alias: alias.clone(),
                reason: reason.to_string(),
            }),
        }
    }
    (servers, problems)
}

/// `--mcp-config FILE|JSON`: a file path or inline JSON, holding either
/// `{"mcpServers": {...}}` or the server map itself.
pub fn parse_mcp_config(arg: &str) -> Result<BTreeMap<String, McpServerSettings>, McpConfigError> {
    let trimmed = arg.trim();
    let (text, origin) = if trimmed.starts_with('{') {
        (trimmed.to_string(), "the --mcp-config JSON".to_string())
    } else {
        let text =
            std::fs::read_to_string(trimmed).map_err(|source| McpConfigError::Unreadable {
                path: trimmed.to_string(),
                source,
            })?;
        (text, trimmed.to_string())
    };
    let value: Value =
        toolbelt_config::settings::parse_settings_text(text.as_bytes()).map_err(|error| {
            McpConfigError::Syntax {
                origin: origin.clone(),
                error,
            }
        })?;
    let servers = match value.get("mcpServers") {
        Some(inner) => inner.clone(),
        None => value,
    };
    serde_json::from_value(servers).map_err(|error| McpConfigError::NotServers { origin, error })
}

#[cfg(test)]
mod tests;
