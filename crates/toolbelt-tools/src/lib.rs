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

use toolbelt_core::{Origin, Tool, ToolEnvironment, ToolError, ToolRegistry};

pub mod atomic_write;
pub mod diff;
pub mod discovered;
pub mod edit;
pub mod file_change;
pub mod file_type;
pub mod glob;
pub mod grep_search;
pub mod list_directory;
pub mod read_file;
pub mod read_many_files;
pub mod shell;
pub mod text_file;
pub mod walk;
pub mod write_file;

#[cfg(test)]
mod path_rules_tests;
#[cfg(test)]
mod test_support;

/// Every built-in tool for a session.
pub fn builtin_tools(env: &Arc<ToolEnvironment>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(read_file::ReadFile::new(env.clone())),
        Arc::new(list_directory::ListDirectory::new(env.clone())),
        Arc::new(read_many_files::ReadManyFiles::new(env.clone())),
        Arc::new(write_file::WriteFile::new(env.clone())),
        Arc::new(edit::Edit::new(env.clone())),
        Arc::new(glob::Glob::new(env.clone())),
        Arc::new(grep_search::GrepSearch::new(env.clone())),
        Arc::new(shell::RunShellCommand::new(env.clone())),
    ]
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
