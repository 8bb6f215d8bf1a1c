//! What a tool call produces: content for the model, something to show a person, and,
//! when it failed, a typed error.
//!
//! A failed call is still a [`ToolResult`]: it goes back to the model, which can correct
//! itself. Only faults of the agent itself (no model, bad configuration) end a session, and
//! those are not represented here.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One item of content for the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Part {
    /// Plain text (UTF-8), the usual content of a result.
    Text {
        /// The text the model reads (the output policy may cut it).
        text: String,
    },
    /// Raw bytes with their MIME type (images, audio, PDF). Serialized as base64.
    InlineData {
        /// MIME type of `data`, e.g. `image/png`, `application/pdf`.
        mime_type: String,
        /// The raw bytes (not encoded; base64 only on the wire).
        #[serde(with = "base64_bytes")]
        data: Vec<u8>,
        /// Name to show for the data (usually the file name); `None` when there is none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        display_name: Option<String>,
    },
}

impl Part {
    /// A [`Part::Text`] holding `text`.
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text { text: text.into() }
    }

    /// The text of a [`Part::Text`]; `None` for inline data.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Part::Text { text } => Some(text),
            Part::InlineData { .. } => None,
        }
    }
}

mod base64_bytes {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

/// A file change, as shown to a person (and carried by edit confirmations).
///
/// The whole texts before and after (for a side-by-side view) are carried only for
/// files up to [`FileDiff::CONTENT_LIMIT`] bytes. Above it both are `None` and the
/// unified diff is the record of the change: a one-line edit of a 50 MB log should not
/// hold 100 MB in every confirmation, result and transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDiff {
    /// File name as shown to a person (usually the path relative to a workspace root).
    pub file_name: String,
    /// Absolute path of the changed file.
    pub file_path: PathBuf,
    /// Unified diff of the change.
    pub diff: String,
    /// The change creates the file.
    pub is_new_file: bool,
    /// The text before; `None` for a new file or a file over the limit.
    pub original_content: Option<String>,
    /// The text after; `None` for a file over the limit.
    pub new_content: Option<String>,
    /// Number of lines the diff adds.
    pub added_lines: usize,
    /// Number of lines the diff removes.
    pub removed_lines: usize,
}

impl FileDiff {
    /// Largest file (before or after the change) whose whole text is carried: 1 MiB,
    /// enough for any file a person reviews side by side. Above it `edit` streams the
    /// file (a 7 MB edit: 18 ms streamed, 64 ms with both texts in memory and copied
    /// into the confirmation).
    pub const CONTENT_LIMIT: usize = 1024 * 1024;
}

/// State of one entry of the `todo_write` task list. Serialized in `snake_case`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started yet.
    Pending,
    /// Being worked on (at most one at a time, by the tool's instructions).
    InProgress,
    /// Done.
    Completed,
}

/// One entry of the `todo_write` task list, as shown to a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// Identifier the model chose, unique within the list.
    pub id: String,
    /// What the task is, in the model's words.
    pub content: String,
    /// Where the task stands.
    pub status: TodoStatus,
}

/// What a person sees of a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Display {
    /// Markdown text (most results: the same text the model reads, or a summary).
    Markdown {
        /// The Markdown source.
        text: String,
    },
    /// A file change (`write_file`, `edit`), to show as a diff.
    FileDiff(FileDiff),
    /// The task list after `todo_write`.
    TodoList {
        /// Every task, in the model's order.
        todos: Vec<TodoItem>,
    },
    /// A plan proposed by `exit_plan_mode`.
    Plan {
        /// The plan, in Markdown.
        plan: String,
        /// `true` when the person approved it and plan mode ended; `false` when it was
        /// only recorded (headless, no one to approve).
        approved: bool,
    },
}

impl Display {
    /// A [`Display::Markdown`] holding `text`.
    pub fn markdown(text: impl Into<String>) -> Self {
        Display::Markdown { text: text.into() }
    }
}

/// The closed set of ways a tool call can fail. Serialized in `snake_case`, the names
/// Qwen Code uses, so transcripts and tests carry over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The arguments are malformed, fail the schema or name something the tool refuses.
    InvalidToolParams,
    /// No tool of that name (or old name) is registered; the message names the closest.
    ToolNotRegistered,
    /// The tool failed for a reason no narrower kind covers (including a panic in the tool).
    ExecutionFailed,
    /// The call was not run: refused by a permission rule, the approval mode, the person
    /// or a guard, or the tool is removed or disabled in this session.
    ExecutionDenied,
    /// The call was cancelled before it finished (Ctrl-C, the end of the turn).
    Cancelled,
    /// The call ran past its time limit and was stopped.
    Timeout,
    /// The file the call names does not exist.
    FileNotFound,
    /// Writing the file failed.
    FileWriteFailure,
    /// Reading the file (or resolving its path) failed.
    ReadContentFailure,
    /// `edit` with an empty `old_string` on a file that already exists.
    AttemptToCreateExistingFile,
    /// The file is larger than the tool reads.
    FileTooLarge,
    /// The operating system refused access (or the file is read-only).
    PermissionDenied,
    /// The disk (or quota) is full.
    NoSpaceLeft,
    /// A file was expected and the path is a directory.
    TargetIsDirectory,
    /// The path resolves outside every workspace root.
    PathNotInWorkspace,
    /// A directory was expected and the path is something else.
    PathIsNotADirectory,
    /// The path a search starts from does not exist.
    SearchPathNotFound,
    /// `edit` found no occurrence of `old_string`.
    EditNoOccurrenceFound,
    /// `edit` found a number of occurrences other than the one expected.
    EditExpectedOccurrenceMismatch,
    /// The edit would leave the file as it is.
    EditNoChange,
    /// `glob` failed (bad pattern, walking error).
    GlobExecutionError,
    /// `grep_search` failed (bad pattern, walking error).
    GrepExecutionError,
    /// `list_directory` failed.
    LsExecutionError,
    /// The shell command could not be run or failed in the shell tool itself.
    ShellExecuteError,
    /// An MCP server returned an error or could not be reached.
    McpToolError,
    /// A tool brought by `tools.discoveryCommand` failed when run through `tools.callCommand`.
    DiscoveredToolExecutionError,
    /// `web_fetch` failed (refused address, HTTP error, unreadable body).
    WebFetchError,
    /// `web_search` failed (no provider, provider error).
    WebSearchError,
    /// `save_memory` failed.
    MemoryToolExecutionError,
}

impl ErrorKind {
    /// The `snake_case` name, as serialized and as Qwen Code spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidToolParams => "invalid_tool_params",
            ErrorKind::ToolNotRegistered => "tool_not_registered",
            ErrorKind::ExecutionFailed => "execution_failed",
            ErrorKind::ExecutionDenied => "execution_denied",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Timeout => "timeout",
            ErrorKind::FileNotFound => "file_not_found",
            ErrorKind::FileWriteFailure => "file_write_failure",
            ErrorKind::ReadContentFailure => "read_content_failure",
            ErrorKind::AttemptToCreateExistingFile => "attempt_to_create_existing_file",
            ErrorKind::FileTooLarge => "file_too_large",
            ErrorKind::PermissionDenied => "permission_denied",
            ErrorKind::NoSpaceLeft => "no_space_left",
            ErrorKind::TargetIsDirectory => "target_is_directory",
            ErrorKind::PathNotInWorkspace => "path_not_in_workspace",
            ErrorKind::PathIsNotADirectory => "path_is_not_a_directory",
            ErrorKind::SearchPathNotFound => "search_path_not_found",
            ErrorKind::EditNoOccurrenceFound => "edit_no_occurrence_found",
            ErrorKind::EditExpectedOccurrenceMismatch => "edit_expected_occurrence_mismatch",
            ErrorKind::EditNoChange => "edit_no_change",
            ErrorKind::GlobExecutionError => "glob_execution_error",
            ErrorKind::GrepExecutionError => "grep_execution_error",
            ErrorKind::LsExecutionError => "ls_execution_error",
            ErrorKind::ShellExecuteError => "shell_execute_error",
            ErrorKind::McpToolError => "mcp_tool_error",
            ErrorKind::DiscoveredToolExecutionError => "discovered_tool_execution_error",
            ErrorKind::WebFetchError => "web_fetch_error",
            ErrorKind::WebSearchError => "web_search_error",
            ErrorKind::MemoryToolExecutionError => "memory_tool_execution_error",
        }
    }

    /// Maps an I/O error to the closest kind, with `fallback` for the rest.
    pub fn from_io(err: &std::io::Error, fallback: ErrorKind) -> ErrorKind {
        use std::io::ErrorKind as Io;
        match err.kind() {
            Io::NotFound => ErrorKind::FileNotFound,
            Io::PermissionDenied => ErrorKind::PermissionDenied,
            Io::IsADirectory => ErrorKind::TargetIsDirectory,
            Io::NotADirectory => ErrorKind::PathIsNotADirectory,
            Io::StorageFull => ErrorKind::NoSpaceLeft,
            _ => fallback,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the model is told in a refusal or a note, and what a person reads instead where
/// the person is the one who called (`toolbelt tools call`, `toolbelt sandbox -- CMD`):
/// advice meant for the model (do not retry, ask the user) dropped or said to the person.
/// The refusals are worded with these phrases, so the table stays exact.
const FOR_THE_MODEL: &[(&str, &str)] = &[
    (
        "Do not retry it; continue without it if you can, or tell the user what you need. ",
        "",
    ),
    (
        " It was not run; do not retry it unchanged.",
        " It was not run.",
    ),
    (
        "; ask the user to approve it to run it unconfined (retrying it in another form will not help).",
        "; approved, it runs unconfined.",
    ),
    (
        "If it needs to write or connect, ask the user to approve it to run it unconfined.",
        "If it needs to write or connect, approved it runs unconfined.",
    ),
    (
        "this command ran without the user's approval,",
        "this command ran unasked,",
    ),
    ("the user's approval", "approval"),
    ("The user can allow it", "Allow it"),
];

/// `text` (written for the model) as the person who made the call should read it.
pub fn for_person(text: &str) -> String {
    FOR_THE_MODEL
        .iter()
        .fold(text.to_string(), |t, (model, person)| {
            t.replace(model, person)
        })
}

/// A failed call: what kind of failure, and a message the model can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// What kind of failure; serialized as `type`.
    #[serde(rename = "type")]
    pub kind: ErrorKind,
    /// What went wrong and, where it helps, what to do instead; the model reads it.
    pub message: String,
}

impl ToolError {
    /// A failure of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ToolError {
            kind,
            message: message.into(),
        }
    }

    /// An [`ErrorKind::InvalidToolParams`] failure.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        ToolError::new(ErrorKind::InvalidToolParams, message)
    }
}

/// The outcome of one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// What the model reads (text, and inline data for models that take it).
    pub llm_content: Vec<Part>,
    /// What a person sees.
    pub return_display: Display,
    /// The failure, `None` for a success; a failed call still has content for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
}

impl ToolResult {
    /// A success whose model text and display are the same text.
    pub fn text(text: impl Into<String>) -> Self {
        let text = text.into();
        ToolResult {
            return_display: Display::markdown(text.clone()),
            llm_content: vec![Part::text(text)],
            error: None,
        }
    }

    /// A success with `llm_text` for the model and a separate `display` for a person.
    pub fn with_display(llm_text: impl Into<String>, display: Display) -> Self {
        ToolResult {
            llm_content: vec![Part::text(llm_text)],
            return_display: display,
            error: None,
        }
    }

    /// A failure: the model reads `Error: <message>`, a person sees the same.
    pub fn error(error: ToolError) -> Self {
        let text = format!("Error: {}", error.message);
        ToolResult {
            llm_content: vec![Part::text(text.clone())],
            return_display: Display::markdown(text),
            error: Some(error),
        }
    }

    /// Shorthand for [`ToolResult::error`] with a new [`ToolError`].
    pub fn err(kind: ErrorKind, message: impl Into<String>) -> Self {
        ToolResult::error(ToolError::new(kind, message))
    }

    /// Whether the call failed (`error` is set).
    pub fn is_error(&self) -> bool {
        self.error.is_some()
    }

    /// All text parts joined with newlines: what a text-only model reads.
    pub fn llm_text(&self) -> String {
        let texts: Vec<&str> = self.llm_content.iter().filter_map(Part::as_text).collect();
        texts.join("\n")
    }
}

impl From<ToolError> for ToolResult {
    fn from(error: ToolError) -> Self {
        ToolResult::error(error)
    }
}
