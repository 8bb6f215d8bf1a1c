//! The words permission rules use for the built-in tools, known before any registry is
//! built: a session compiles its path rules into the roots' path policy first, and a
//! `WebSearch` deny rule must mean `web_search` even when no search provider is
//! configured and the tool is not registered. Each entry is the tool module's own
//! constants, which its `Tool` methods also return (one source); a test holds this to
//! what a registry of every built-in says.

use toolbelt_core::rules::RuleVocabulary;

use crate::{
    edit, glob, grep_search, list_directory, notebook_edit, read_file, read_many_files, shell,
    skills, todo_write, web_fetch, web_search, write_file,
};

/// Aliases, path operations and the command runner of every built-in tool of this crate
/// (the skill tool included), whatever the settings register.
pub fn rule_vocabulary() -> RuleVocabulary {
    let mut vocabulary = RuleVocabulary::default();
    let entries = [
        (
            read_file::NAME,
            read_file::RULE_ALIASES,
            read_file::PATH_OPERATION,
        ),
        (
            list_directory::NAME,
            list_directory::RULE_ALIASES,
            list_directory::PATH_OPERATION,
        ),
        (
            read_many_files::NAME,
            read_many_files::RULE_ALIASES,
            read_many_files::PATH_OPERATION,
        ),
        (
            write_file::NAME,
            write_file::RULE_ALIASES,
            write_file::PATH_OPERATION,
        ),
        (edit::NAME, edit::RULE_ALIASES, edit::PATH_OPERATION),
        (glob::NAME, glob::RULE_ALIASES, glob::PATH_OPERATION),
        (
            grep_search::NAME,
            grep_search::RULE_ALIASES,
            grep_search::PATH_OPERATION,
        ),
        (shell::NAME, shell::RULE_ALIASES, None),
        (web_fetch::NAME, web_fetch::RULE_ALIASES, None),
        (web_search::NAME, web_search::RULE_ALIASES, None),
        (todo_write::NAME, todo_write::RULE_ALIASES, None),
        (
            notebook_edit::NAME,
            notebook_edit::RULE_ALIASES,
            notebook_edit::PATH_OPERATION,
        ),
        (skills::tool::NAME, skills::tool::RULE_ALIASES, None),
    ];
    for (name, aliases, operation) in entries {
        vocabulary.add(name, aliases, operation);
    }
    // The built-ins of `Kind::Execute` that run commands themselves (what a registry
    // reads): the shell. `monitor` runs its command as a shell job and answers to the
    // shell's rules (`tools.core` included) through `rule_target`.
    vocabulary.add_command_runner(shell::NAME);
    vocabulary
}
