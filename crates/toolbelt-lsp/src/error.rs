//! [`LspError`]: why a language server could not be had or a document not sent to it,
//! by cause (an embedder can tell a server that would not start from one that died and
//! is not restarted). The texts are the ones the `lsp` tool answers with.

use std::path::PathBuf;

/// Why [`crate::Servers::client`], [`crate::LspClient::start`],
/// [`crate::LspClient::request`] or [`crate::LspClient::sync_document`] failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LspError {
    /// The server's process or socket could not be opened; what the system said.
    #[error("{0}")]
    Launch(String),
    /// The server started but did not answer `initialize` (in time, or with an error).
    #[error("the language server `{name}` did not start: {why}")]
    Handshake {
        /// The server's name in the configuration.
        name: String,
        /// What went wrong.
        why: String,
    },
    /// The workspace root is not an absolute directory.
    #[error("{} is not an absolute directory", .0.display())]
    NotADirectory(PathBuf),
    /// A document path is not absolute.
    #[error("{} is not an absolute path", .0.display())]
    NotAbsolute(PathBuf),
    /// The servers were stopped because the configuration changed.
    #[error("the language server `{0}` was stopped: the configuration changed; call again")]
    Stopped(String),
    /// The server died and `restartOnCrash` is off.
    #[error("{why}; it is not restarted (`restartOnCrash` is off in {})", config.display())]
    NotRestarted {
        /// How it died.
        why: String,
        /// The configuration file that says so.
        config: PathBuf,
    },
    /// The server is not running (it died, or its input closed); how it ended.
    #[error("{0}")]
    Gone(String),
    /// The server answered the request with an error; its message.
    #[error("{0}")]
    Answer(String),
    /// No answer within the time limit.
    #[error("the language server `{name}` did not answer `{method}` within {ms} ms")]
    Timeout {
        /// The server's name in the configuration.
        name: String,
        /// The request's method.
        method: String,
        /// The limit, in milliseconds.
        ms: u128,
    },
    /// The server died again after `maxRestarts` restarts.
    #[error("{why}; it was restarted {restarts} times already (`maxRestarts`)")]
    RestartsUsed {
        /// How it died.
        why: String,
        /// How often it was restarted.
        restarts: u32,
    },
}
