//! The MCP crate's errors by cause: [`McpConfigError`] for a server entry or
//! `--mcp-config` that cannot be read, [`McpError`] for a server that cannot be
//! reached, listed or asked for a prompt. The texts are the ones the person reads.

use toolbelt_config::settings::SettingsTextError;

/// Why an `mcpServers` entry or a `--mcp-config` argument cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum McpConfigError {
    /// The entry names no way to reach the server.
    #[error("missing httpUrl (for Streamable HTTP), url (for SSE) and command (for stdio)")]
    NoTransport,
    /// The `--mcp-config` file cannot be read.
    #[error("cannot read the --mcp-config file {path}: {source}")]
    Unreadable {
        /// The path as given.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The text is not JSON (with comments).
    #[error("{origin}: {error}")]
    Syntax {
        /// The file, or "the --mcp-config JSON".
        origin: String,
        /// Where and why it does not parse.
        error: SettingsTextError,
    },
    /// The JSON is not a map of server entries.
    #[error("{origin}: not a map of MCP servers: {error}")]
    NotServers {
        /// The file, or "the --mcp-config JSON".
        origin: String,
        /// What serde said.
        error: serde_json::Error,
    },
}

/// Why an MCP server could not be connected, listed again or asked for a prompt.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The server did not start or answer the handshake and `tools/list` in time; why,
    /// with secrets redacted and where its log is.
    #[error("{0}")]
    Connect(String),
    /// No configured server has that alias.
    #[error("no MCP server named \"{0}\"")]
    UnknownServer(String),
    /// The server is down (it failed, or the connection was closed); why.
    #[error("{0}")]
    Unavailable(String),
    /// The wait was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// `tools/list` got no answer within `startupTimeout` (the time, as written).
    #[error("tools/list got no answer within {0} (startupTimeout)")]
    ListTimeout(String),
    /// `tools/list` (or the resource and prompt listings) failed; the server's answer.
    #[error("{0}")]
    List(String),
    /// A prompt command's arguments do not fit the prompt; what is wrong and its usage.
    #[error("{0}")]
    PromptArguments(String),
    /// `prompts/get` failed; the server's answer.
    #[error("{0}")]
    Prompt(String),
}

/// Why an OAuth login to an MCP server (`toolbelt mcp auth`), or a logout, did not work.
/// The texts are masked: they may quote what a server sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpAuthError {
    /// The server is not reached over HTTP (`httpUrl` or `url`).
    #[error("MCP server \"{0}\" is not an HTTP server (httpUrl or url): OAuth is for those")]
    NotHttp(String),
    /// `oauth.enabled` is false for the server.
    #[error("OAuth is turned off for MCP server \"{0}\" (oauth.enabled: false)")]
    Disabled(String),
    /// The server's or its authorization server's metadata could not be found or read.
    #[error("OAuth discovery failed: {0}")]
    Discovery(String),
    /// The metadata names an endpoint toolbelt will not use (see `oauth::policy`).
    #[error("refused: {0}")]
    Unsafe(String),
    /// A step of the login failed (registration, the redirect, the token exchange).
    #[error("{0}")]
    Flow(String),
    /// The browser did not come back within the time (as written).
    #[error("no login came back within {0}")]
    TimedOut(String),
    /// The token file cannot be written or removed.
    #[error("{0}")]
    Store(String),
}
