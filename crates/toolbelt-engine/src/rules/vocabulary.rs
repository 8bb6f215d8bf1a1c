//! The words permission rules use for tools, as the tools say them: aliases (`Read`
//! names every tool that reads), the path operation each file tool performs, and which
//! tools run shell commands (for the `tools.core` restriction). Core lists no tool by
//! name: a vocabulary is built by
//! [`ToolRegistry::rule_vocabulary`](crate::registry::ToolRegistry::rule_vocabulary) from the
//! registered built-ins (`Tool::rule_aliases`, `Tool::path_operation`, `Kind::Execute`),
//! or by the tools crate from the same constants before a registry exists, and every
//! rule is parsed against one ([`Rule::parse`](super::Rule::parse),
//! [`PermissionRules::from_settings`](super::PermissionRules::from_settings)).

use std::collections::{BTreeMap, BTreeSet};

use super::PathOperation;

/// Rule aliases, path operations and command runners of a session's built-in tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleVocabulary {
    /// Alias → the tools it names, in registration order.
    aliases: BTreeMap<String, Vec<String>>,
    /// Tool → what it does to its paths.
    operations: BTreeMap<String, PathOperation>,
    /// Tools whose calls are shell commands, restricted by `tools.core`.
    command_runners: BTreeSet<String>,
}

impl RuleVocabulary {
    /// Records what the tool `name` says about itself.
    pub fn add(&mut self, name: &str, aliases: &[&str], operation: Option<PathOperation>) {
        for alias in aliases {
            let tools = self.aliases.entry((*alias).to_string()).or_default();
            if !tools.iter().any(|t| t == name) {
                tools.push(name.to_string());
            }
        }
        if let Some(op) = operation {
            self.operations.insert(name.to_string(), op);
        }
    }

    /// Records that the tool `name` runs shell commands, so the `tools.core` shell
    /// restriction applies to it.
    pub fn add_command_runner(&mut self, name: &str) {
        self.command_runners.insert(name.to_string());
    }

    /// Adds every word of `other` (the agent tool's to the tools crate's, say).
    pub fn merge(&mut self, other: &RuleVocabulary) {
        for (alias, tools) in &other.aliases {
            for tool in tools {
                self.add(tool, &[alias.as_str()], None);
            }
        }
        self.operations
            .extend(other.operations.iter().map(|(t, op)| (t.clone(), *op)));
        self.command_runners
            .extend(other.command_runners.iter().cloned());
    }

    /// The tools `alias` names, if it is an alias.
    pub fn tools_of(&self, alias: &str) -> Option<&[String]> {
        self.aliases.get(alias).map(Vec::as_slice)
    }

    /// Every alias, in order.
    pub fn aliases(&self) -> impl Iterator<Item = &str> {
        self.aliases.keys().map(String::as_str)
    }

    /// What `tool` does to the paths it is given, if it is a file tool.
    pub fn operation(&self, tool: &str) -> Option<PathOperation> {
        self.operations.get(tool).copied()
    }

    /// Whether `tool` runs shell commands (the `tools.core` restriction applies to it).
    pub fn runs_commands(&self, tool: &str) -> bool {
        self.command_runners.contains(tool)
    }
}
