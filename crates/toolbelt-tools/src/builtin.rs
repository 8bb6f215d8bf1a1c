//! The built-in tools as one list of declarations ([`BUILTINS`]): each tool's module
//! declares its name, the words permission rules use for it and how a session makes it
//! (its `BUILTIN` constant), and this list names each once. The registry's built-ins
//! (`builtin_tools`) and the rules' vocabulary (`rule_vocabulary`) are both read from
//! it, so adding a built-in tool is its module and one line here.

use std::sync::Arc;

use toolbelt_core::PathOperation;
use toolbelt_core::{Tool, ToolEnvironment};

/// One built-in tool as the session and the rules know it before any registry.
pub struct Builtin {
    /// The tool's name.
    pub name: &'static str,
    /// The words rules use for it besides its name (`Read`, `Bash`).
    pub rule_aliases: &'static [&'static str],
    /// What a path rule's specifier means for it (`Read(...)`: reading), if anything.
    pub path_operation: Option<PathOperation>,
    /// How a session makes it.
    pub make: Make,
}

/// How a session makes a built-in tool.
pub enum Make {
    /// From the session's environment; `None`: not offered in it (`web_search` without
    /// a search provider).
    Env(fn(&Arc<ToolEnvironment>) -> Option<Arc<dyn Tool>>),
    /// The shell, which the session makes itself: its job table is shared with
    /// `task_stop`, `monitor` and the connection that started a job.
    Shell,
}

/// Every built-in tool, in the order they are declared to the model.
pub const BUILTINS: &[Builtin] = &[
    crate::read_file::BUILTIN,
    crate::list_directory::BUILTIN,
    crate::read_many_files::BUILTIN,
    crate::write_file::BUILTIN,
    crate::edit::BUILTIN,
    crate::glob::BUILTIN,
    crate::grep_search::BUILTIN,
    crate::shell::BUILTIN,
    crate::web_fetch::BUILTIN,
    crate::web_search::BUILTIN,
    crate::save_memory::BUILTIN,
    crate::todo_write::BUILTIN,
    crate::exit_plan_mode::BUILTIN,
    crate::notebook_edit::BUILTIN,
    crate::ask_user_question::BUILTIN,
];

/// The built-in tools of a session in `env`, with `shell` as its shell.
pub(crate) fn make_all(
    env: &Arc<ToolEnvironment>,
    shell: Arc<crate::shell::RunShellCommand>,
) -> Vec<Arc<dyn Tool>> {
    make_from(BUILTINS, env, shell)
}

/// The tools `list` declares, made for a session in `env`.
fn make_from(
    list: &[Builtin],
    env: &Arc<ToolEnvironment>,
    shell: Arc<crate::shell::RunShellCommand>,
) -> Vec<Arc<dyn Tool>> {
    let mut shell = Some(shell);
    list.iter()
        .filter_map(|b| match &b.make {
            Make::Env(make) => make(env),
            Make::Shell => shell.take().map(|s| s as Arc<dyn Tool>),
        })
        .collect()
}

/// The words rules use for the tools `list` declares.
pub(crate) fn add_rule_words(
    list: &[Builtin],
    vocabulary: &mut toolbelt_engine::rules::RuleVocabulary,
) {
    for builtin in list {
        vocabulary.add(builtin.name, builtin.rule_aliases, builtin.path_operation);
    }
}

#[cfg(test)]
#[path = "builtin_tests.rs"]
mod tests;
