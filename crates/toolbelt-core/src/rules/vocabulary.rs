//! The words permission rules use for tools, as the tools say them: aliases (`Read`
//! names every tool that reads) and the path operation each file tool performs. Built by
//! [`ToolRegistry::rule_vocabulary`](crate::ToolRegistry::rule_vocabulary) from the
//! registered built-ins (`Tool::rule_aliases`, `Tool::path_operation`), so core need not
//! list tools by name.

use std::collections::BTreeMap;

use super::PathOperation;

/// Rule aliases and path operations of a session's built-in tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleVocabulary {
    /// Alias → the tools it names, in registration order.
    aliases: BTreeMap<String, Vec<String>>,
    /// Tool → what it does to its paths.
    operations: BTreeMap<String, PathOperation>,
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
}
