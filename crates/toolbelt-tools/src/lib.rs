#![cfg_attr(test, allow(clippy::too_many_lines))]
#![warn(missing_docs, unreachable_pub)]
//! The built-in tools of toolbelt, one per file, and what they share.
//!
//! # Brief overview
//!
//! Each tool is a small struct implementing [`toolbelt_core::Tool`]: it holds the
//! session's [`ToolEnvironment`] (workspace roots, output policy, settings) and builds
//! an invocation per call. Arguments are typed (`serde`) and deserialized in `build`, after
//! the registry has checked them against the tool's JSON Schema. Paths go through
//! [`toolbelt_core::WorkspaceRoots::resolve`]; text for the model goes through the
//! output policy.
//!
//! [`builtin_tools`] lists them all; [`register_builtins`] puts them in a registry.

use std::sync::Arc;

use toolbelt_core::{Tool, ToolEnvironment, ToolError};
use toolbelt_engine::{registry::Origin, registry::ToolRegistry};

// The modules are the crate's own: an embedder gets the tools through [`builtin_tools`] /
// [`register_builtins`], the tool types re-exported below, and [`discover`] for the
// project's own tools. Process handling, the walker and the write path are internals
// that may change without notice.
mod ask_user_question;
mod atomic_write;
pub mod builtin;
pub mod completion;
mod editor_buffers;
// Issue 33: `cron_create`, `cron_list`, `cron_delete`.
pub mod cron;
mod declared;
mod diff;
mod discovered;
mod edit;
mod enter_worktree;
mod exit_plan_mode;
mod exit_worktree;
mod file_change;
mod file_type;
mod glob;
mod grep_search;
mod list_directory;
mod listed_name;
// Issue 33: `monitor`, output lines as events between turns.
mod monitor;
mod notebook_edit;
mod params;
mod pattern;
mod read_file;
mod read_many_files;
mod rule_words;
mod save_memory;
mod shell;
pub mod skills;
mod text_file;
mod todo_write;
mod walk;
mod web_fetch;
mod web_search;
pub mod workspace_rules;
pub mod worktree;
mod write_file;

pub use ask_user_question::AskUserQuestion;
pub use declared::{LoadedManifests, load_declared, register_declared};
pub use discovered::{CommandLineError, DiscoveredTool, Discovery, discover, split_command};
pub use edit::Edit;
pub use enter_worktree::EnterWorktree;
pub use exit_plan_mode::ExitPlanMode;
pub use exit_worktree::ExitWorktree;
pub use glob::Glob;
pub use grep_search::GrepSearch;
pub use list_directory::ListDirectory;
pub use monitor::{Monitor, MonitorTable};
pub use notebook_edit::NotebookEdit;
pub use read_file::ReadFile;
pub use read_many_files::ReadManyFiles;
pub use rule_words::rule_vocabulary;
pub use save_memory::SaveMemory;
pub use shell::background::{Job, JobStatus, JobTable, connection_logs_dir};
pub use shell::sandbox::hidden::CREDENTIAL_FILES;
pub use shell::sandbox::{ConfineError, SandboxSupport};
pub use shell::{RunShellCommand, sweep_unasked_logs};
pub use todo_write::TodoWrite;
pub use walk::{
    DIRECTORY_RULE_FILES, WalkedEntry, cores, walk_rule_files, walk_workspace,
    walk_workspace_parallel,
};
pub use web_fetch::{WebFetch, html_to_markdown};
pub use web_search::{
    DEFAULT_MAX_RESULTS, MAX_RESULTS_CAP, SearchError, SearchHit, SearchProvider, SearchResults,
    WebSearch, web_search_unavailable_reason,
};
pub use write_file::WriteFile;

#[cfg(test)]
mod path_rules_tests;
#[cfg(test)]
mod protected_tests;
#[cfg(test)]
mod schema_tests;
#[cfg(test)]
mod test_support;

#[cfg(test)]
mod bounds_tests;
#[cfg(test)]
mod core_names_tests;
#[cfg(test)]
mod lint_tests;
#[cfg(test)]
mod write_permissions_tests;

/// The unified diff from `old` to `new` as confirmations show it (`--- name\tCurrent`,
/// `+++ name\tProposed`), with the counts of added and removed lines: for a caller
/// outside the tools that shows a change before making it (a restore of checkpoints).
pub fn unified_diff(name: &str, old: &str, new: &str) -> (String, usize, usize) {
    diff::unified(name, old, new)
}

/// Every built-in tool for a session. `web_search` is among them only when a provider
/// is configured (see [`web_search_unavailable_reason`]).
pub fn builtin_tools(env: &Arc<ToolEnvironment>) -> Vec<Arc<dyn Tool>> {
    builtin_tools_with_shell(env, Arc::new(shell::RunShellCommand::new(env.clone())))
}

/// [`builtin_tools`] around a given shell tool, whose background job table the caller
/// keeps (for `task_stop`).
pub fn builtin_tools_with_shell(
    env: &Arc<ToolEnvironment>,
    shell: Arc<shell::RunShellCommand>,
) -> Vec<Arc<dyn Tool>> {
    builtin::make_all(env, shell)
}

/// Registers every built-in tool.
pub fn register_builtins(registry: &mut ToolRegistry, env: &Arc<ToolEnvironment>) {
    for tool in builtin_tools(env) {
        registry.register(tool, Origin::BuiltIn);
    }
}

/// Deserializes validated arguments into a tool's typed parameters. The schema has
/// already been checked, so an error here means the schema and the type disagree; it is
/// still reported to the model rather than panicking.
pub fn parse_params<T: serde::de::DeserializeOwned>(
    args: serde_json::Value,
) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|e| ToolError::invalid_params(format!("invalid arguments: {e}")))
}
