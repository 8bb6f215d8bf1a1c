//! What a person is asked before a call runs, and what they can answer.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The details shown when a call needs approval. One variant per kind of question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ConfirmationDetails {
    /// A file change: the diff to approve.
    Edit {
        /// Heading of the question, e.g. `Confirm Edit`.
        title: String,
        /// File name as shown to a person (usually relative to a workspace root).
        file_name: String,
        /// Absolute path of the file that changes.
        file_path: PathBuf,
        /// Unified diff of the change.
        diff: String,
        /// The change creates the file.
        is_new_file: bool,
        /// The whole texts, `None` above [`crate::FileDiff::CONTENT_LIMIT`].
        original_content: Option<String>,
        /// The whole text after the change, `None` above [`crate::FileDiff::CONTENT_LIMIT`].
        new_content: Option<String>,
    },
    /// A shell command, with the root commands that still need approval.
    Exec {
        /// Heading of the question, e.g. `Confirm Shell Command`.
        title: String,
        /// The command that will run, as a person reads it.
        command: String,
        /// Root commands (program names) that need approval; "always allow" remembers
        /// these.
        root_commands: Vec<String>,
    },
    /// A call to a tool of an MCP server.
    Mcp {
        /// Heading of the question.
        title: String,
        /// Alias of the server in the settings (`mcpServers.<alias>`).
        server: String,
        /// The tool's name on the server (not the `mcp__` name the model uses).
        tool: String,
        /// Name to show for the tool.
        tool_display_name: String,
    },
    /// Anything else: a prompt and the URLs it touches.
    Info {
        /// Heading of the question.
        title: String,
        /// What the call will do, in words (usually the invocation's description).
        prompt: String,
        /// URLs the call will fetch or send data to; empty when none.
        urls: Vec<String>,
    },
    /// Leaving plan mode with this plan.
    Plan {
        /// Heading of the question.
        title: String,
        /// The plan, in Markdown.
        plan: String,
    },
}

impl ConfirmationDetails {
    /// The question's heading, whatever the variant.
    pub fn title(&self) -> &str {
        match self {
            ConfirmationDetails::Edit { title, .. }
            | ConfirmationDetails::Exec { title, .. }
            | ConfirmationDetails::Mcp { title, .. }
            | ConfirmationDetails::Info { title, .. }
            | ConfirmationDetails::Plan { title, .. } => title,
        }
    }

    /// The file the call changes, when it changes one: what the protected-path check
    /// judges (see [`crate::ProtectedPaths`]).
    pub fn changed_path(&self) -> Option<&Path> {
        match self {
            ConfirmationDetails::Edit { file_path, .. } => Some(file_path),
            _ => None,
        }
    }

    /// The question for a file change: the diff a person approves. `file_path` is the
    /// diff's own path.
    pub fn edit(title: String, diff: crate::FileDiff) -> Self {
        ConfirmationDetails::Edit {
            title,
            file_name: diff.file_name,
            file_path: diff.file_path,
            diff: diff.diff,
            is_new_file: diff.is_new_file,
            original_content: diff.original_content,
            new_content: diff.new_content,
        }
    }

    /// The generic question for a call whose tool gave no details of its own.
    pub fn generic(tool_display_name: &str, description: &str) -> Self {
        ConfirmationDetails::Info {
            title: format!("Confirm {tool_display_name}"),
            prompt: description.to_string(),
            urls: Vec::new(),
        }
    }

    /// A short text of the question for a terminal.
    pub fn summary(&self) -> String {
        match self {
            ConfirmationDetails::Edit { title, diff, .. } => format!("{title}\n{diff}"),
            ConfirmationDetails::Exec {
                title,
                command,
                root_commands,
            } => {
                format!(
                    "{title}\n  $ {command}\n  (root commands: {})",
                    root_commands.join(", ")
                )
            }
            ConfirmationDetails::Mcp {
                title,
                server,
                tool,
                ..
            } => {
                format!("{title}\n  MCP server `{server}`, tool `{tool}`")
            }
            ConfirmationDetails::Info {
                title,
                prompt,
                urls,
            } => {
                let mut s = format!("{title}\n  {prompt}");
                for url in urls {
                    s.push_str(&format!("\n  {url}"));
                }
                s
            }
            ConfirmationDetails::Plan { title, plan } => format!("{title}\n{plan}"),
        }
    }
}

/// A person's answer to a confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ConfirmationOutcome {
    /// Run this call only.
    ProceedOnce,
    /// Run, and do not ask again for this tool in this session.
    ProceedAlways,
    /// Run, and do not ask again for any tool of this MCP server in this session.
    ProceedAlwaysServer,
    /// Run, and do not ask again for these shell root commands in this session.
    ProceedAlwaysRootCommand,
    /// Edit the proposal before running it. No editor flow exists yet: the scheduler treats it
    /// like [`ConfirmationOutcome::Cancel`] and the call is not run.
    ModifyWithEditor,
    /// Do not run the call; the model is told the person refused it.
    Cancel,
}

impl ConfirmationOutcome {
    /// Whether the call runs: `false` for `Cancel` and `ModifyWithEditor`.
    pub fn proceeds(self) -> bool {
        !matches!(
            self,
            ConfirmationOutcome::Cancel | ConfirmationOutcome::ModifyWithEditor
        )
    }
}
