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

/// Why no model could be made ([`crate::build_model`], [`crate::ModelChoice`]).
#[derive(Debug, thiserror::Error)]
pub enum ModelSetupError {
    /// The provider is neither built in nor mapped in `providerProtocol`.
    #[error(
        "unknown model provider '{provider}' (from {origin}): use openai, anthropic, gemini, \
         vertex-ai or openai-responses, or map it in the settings with \
         \"providerProtocol\": {{\"{provider}\": \"openai\"}} (or another of those)"
    )]
    UnknownProvider {
        /// The provider named.
        provider: String,
        /// Where it was named (a flag, a variable, the settings).
        origin: String,
    },
    /// No flag, variable or setting names a model.
    #[error(
        "no model: pass -m/--model, set {0}, or set model.name in the settings (or use --model-replay FILE to run offline)"
    )]
    NoModel(&'static str),
    /// The key, token or project the provider needs is not set; what is missing.
    #[error("{0}")]
    Credentials(String),
    /// The provider's client cannot be made with these settings (a bad header, a bad
    /// `MAX_THINKING_TOKENS`); the provider, model, server and why.
    #[error("{0}")]
    Client(String),
    /// The `--model-replay` script cannot be read or parsed.
    #[error(transparent)]
    Replay(toolbelt_model::ModelError),
    /// The `--record` file cannot be written.
    #[error(transparent)]
    Record(toolbelt_model::ModelError),
}

/// Why `/model NAME` did not switch the model.
#[derive(Debug, thiserror::Error)]
pub enum SwitchError {
    /// Not one model name.
    #[error("/model takes one model name, not {0:?}")]
    BadName(String),
    /// The model named cannot be made.
    #[error(transparent)]
    Model(#[from] ModelSetupError),
}

/// A flag or setting that says how the session's calls are approved and does not hold.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    /// `--yolo` with another `--approval-mode`.
    #[error("--yolo and --approval-mode cannot be used together")]
    YoloWithMode,
    /// An approval mode that does not exist; the parser's message.
    #[error("{0}")]
    ApprovalMode(String),
    /// An allow rule (`--allowed-tools`) that does not parse.
    #[error(
        "{flag}: `{rule}` is not a permission rule (write `Tool` or `Tool(specifier)`, with balanced parentheses)"
    )]
    BadRule {
        /// The flag that gave it.
        flag: String,
        /// The rule as given.
        rule: String,
    },
}

/// A when-clause (`toolbelt tools when EXPR`) that does not parse: the parser's error,
/// the clause, and a caret under the place.
#[derive(Debug, thiserror::Error)]
#[error("{error}\n  {expr}\n  {}^", " ".repeat(*column))]
pub struct ClauseError {
    /// The parser's error.
    pub error: toolbelt_config::when::WhenError,
    /// The clause as given.
    pub expr: String,
    /// The column (in characters) the error points at.
    pub column: usize,
}

/// Why `toolbelt trust` could not change the trusted folders.
#[derive(Debug, thiserror::Error)]
pub enum TrustChangeError {
    /// No folder was given and the current directory cannot be read.
    #[error("cannot read the current directory: {0}")]
    CurrentDir(#[source] std::io::Error),
    /// The folder is a file.
    #[error("{} is not a directory", .0.display())]
    NotADirectory(std::path::PathBuf),
    /// The folder cannot be resolved (it does not exist).
    #[error("{}: {source}", path.display())]
    Unreadable {
        /// The folder as given.
        path: std::path::PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// Without `HOME` there is no trusted-folders file.
    #[error("HOME is not set, so there is no trusted-folders file to write")]
    NoHome,
    /// The trusted-folders file cannot be read or written.
    #[error(transparent)]
    File(#[from] toolbelt_config::trust::TrustError),
}

/// Why `--resume` without an ID has nothing to list.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// The session store cannot be read.
    #[error(transparent)]
    Store(#[from] toolbelt_agent::transcript::TranscriptError),
    /// No session was saved for this project.
    #[error("no saved session for this project (in {})", .0.display())]
    NoneSaved(std::path::PathBuf),
}

/// A slash command typed wrong; the text says what is wrong or how to type it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// No such command (the text names the closest one).
    #[error("{0}")]
    Unknown(String),
    /// The command's arguments do not fit it; the usage or what is wrong.
    #[error("{0}")]
    Usage(String),
}

/// Why `/memory add` saved nothing.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The `save_memory` call failed (refused, or the file could not be written).
    #[error("{0}")]
    Tool(String),
    /// The scheduler answered no result.
    #[error("no result")]
    NoResult,
}

/// Why [`crate::ServeWorkspaces::start`] could not start serving.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The first session could not be opened (settings, MCP configuration).
    #[error("{0}")]
    Setup(#[from] SetupError),
    /// The policy's approval mode does not hold.
    #[error(transparent)]
    Flags(#[from] FlagError),
}
