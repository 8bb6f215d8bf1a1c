//! Why a session's agent could not be made, by cause, so an embedder can match it and
//! the binary choose its exit code; each cause keeps the one-line text the person reads.

use crate::session::SetupError;

/// Why [`crate::Session::agent`] failed. The text of each is what the person reads.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The session could not be assembled from the settings and flags (an unreadable
    /// `--mcp-config`, a broken settings file).
    #[error("{0}")]
    Setup(#[from] SetupError),
    /// The flags contradict each other or do not parse (`--session-id` with `--resume`
    /// and no `--fork-session`, a permission rule with unbalanced parentheses, an
    /// approval mode that does not exist, a Claude settings file that cannot be read).
    #[error("{0}")]
    Flags(String),
    /// The saved conversation to continue is not there or cannot be read, or the ID
    /// asked for a new one is taken.
    #[error("{0}")]
    Saved(String),
    /// The first prompt could not be read (standard input, a file).
    #[error("{0}")]
    Prompt(String),
    /// No model could be made: no provider, key or URL, an unknown protocol, a replay
    /// script that cannot be read, a recording that cannot be written.
    #[error("{0}")]
    Model(String),
}
