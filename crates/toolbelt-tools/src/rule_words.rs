//! The words permission rules use for the built-in tools, known before any registry is
//! built: a session compiles its path rules into the roots' path policy first, and a
//! `WebSearch` deny rule must mean `web_search` even when no search provider is
//! configured and the tool is not registered. The entries are the built-ins'
//! declarations ([`crate::builtin::BUILTINS`]), whose constants their `Tool` methods also
//! return (one source); a test holds this to what a registry of every built-in says.

use toolbelt_engine::rules::RuleVocabulary;

use crate::{shell, skills};

/// Aliases, path operations and the command runner of every built-in tool of this crate
/// (the skill tool included), whatever the settings register.
pub fn rule_vocabulary() -> RuleVocabulary {
    let mut vocabulary = RuleVocabulary::default();
    crate::builtin::add_rule_words(crate::builtin::BUILTINS, &mut vocabulary);
    // The skill tool, which the session registers when there is a skill to offer.
    vocabulary.add(skills::tool::NAME, skills::tool::RULE_ALIASES, None);
    // The built-ins of `Kind::Execute` that run commands themselves (what a registry
    // reads): the shell. `monitor` runs its command as a shell job and answers to the
    // shell's rules (`tools.core` included) through `rule_target`.
    vocabulary.add_command_runner(shell::NAME);
    vocabulary
}
