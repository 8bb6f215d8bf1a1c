#![cfg_attr(test, allow(clippy::too_many_lines))]
//! The core of toolbelt: what a tool is, how tools are registered and found, how the
//! arguments a model sends are checked, how settings are read, and how much of a result
//! may go back to the model.
//!
//! # Brief overview
//!
//! A [`Tool`] is a *declaration*: a name, a description, a kind and a JSON Schema. Given
//! the JSON arguments of one call it *builds* an [`Invocation`], a validated call that can
//! describe itself, ask for confirmation and execute. The [`ToolRegistry`] owns every tool
//! as `Arc<dyn Tool>` under its model-facing name. [`validate`] checks arguments against the
//! schema (leniently, the way models are sloppy) before a tool sees them. [`when`] parses
//! and evaluates VS Code's when-clauses. [`Settings`]
//! merges the settings files; [`trust`] says which folders may use the settings they bring. [`OutputPolicy`] is the single place that decides how much
//! text goes back to the model; what is cut is spilled to a file.
//!
//! Nothing in this crate knows a wire format (OpenAI, MCP): those live in the crates that
//! speak them.

#![warn(missing_docs, unreachable_pub)]

pub mod ask_user;
pub mod checkpoint;
pub mod confirm;
pub mod editor;
pub mod front_matter;
pub mod hooks;
pub mod lint;
pub mod output;
pub mod project_file;
pub mod protected;
pub mod redact;
pub mod registry;
pub mod result;
pub mod rules;
pub mod scheduler;
pub mod server_asks;
pub mod settings;
pub mod store_files;
pub mod tool;
pub mod trust;
pub mod validate;
pub mod when;
pub mod workspace;

pub use ask_user::{Answer, AskUser, Question, QuestionOption, QuestionSlot};
pub use confirm::{ConfirmationDetails, ConfirmationOutcome};
pub use hooks::{
    HookAgent, HookDecision, HookEvent, HookFailure, HookMessage, HookOutcome, HookRequest,
    HookRunner,
};
pub use output::{LimitedText, OutputPolicy};
pub use protected::{ProtectedPaths, Protection};
pub use registry::{Origin, Registration, ToolRegistry, ToolSet};
pub use result::{
    Display, ErrorKind, FileDiff, Part, TodoItem, TodoStatus, ToolError, ToolResult, for_person,
};
pub use rules::{
    CommandPurpose, Decision, PermissionRules, Rule, RuleBase, RuleList, SYSTEM_BIN_DIRS, Verdict,
    is_mcp_server_rule,
};
pub use settings::{
    Settings, SettingsError, SettingsLayer, SettingsPaths, UntrustedWorkspace, WorkspaceTrust,
};
pub use tool::{
    AskOnce, AskOnceSlot, BoxFuture, Consent, ExecContext, Invocation, Kind, OutputSink,
    PermissionSubject, ShellCommand, Tool, ToolEnvironment, ToolFacts, WorkDirSlot,
};
pub use workspace::{PathError, WorkspaceRoots};
