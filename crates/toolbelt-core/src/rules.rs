//! Permission rules: `permissions.allow|ask|deny` entries such as `run_shell_command(git *)`,
//! `read_file(//abs/path/**)`, `web_fetch(domain:example.com)`, decided as
//! deny > ask > allow > the tool's own default.
//!
//! A rule is a tool name (or an alias such as `Bash`, `Read`, `Edit`, `WebFetch`) with an
//! optional specifier in parentheses. Without a specifier it covers every call of the
//! tool. With one, the specifier is matched against the call's [`PermissionSubject`]:
//! commands for shell calls, paths for file tools, the host for fetches, a literal
//! otherwise.
//!
//! This file holds the rule model, parsing, name matching and the decision order. The
//! matching of specifiers against subjects is in [`Rule::matches_subject`].

use crate::settings::Settings;
use crate::tool::PermissionSubject;

/// The answer of the rules for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Decision {
    /// No rule matched: the tool's own default and the approval mode decide.
    Default,
    Allow,
    Ask,
    Deny,
}

/// Which list a rule came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleList {
    Allow,
    Ask,
    Deny,
}

/// One parsed rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// As written, for messages.
    pub text: String,
    /// Canonical tool names the rule covers (an alias such as `Read` covers several).
    pub tools: Vec<String>,
    /// The part in parentheses, if any.
    pub specifier: Option<String>,
}

/// Aliases used in rules (Claude Code and Qwen Code spellings) and the tools they cover.
const ALIASES: &[(&str, &[&str])] = &[
    ("Bash", &["run_shell_command"]),
    ("Shell", &["run_shell_command"]),
    (
        "Read",
        &[
            "read_file",
            "read_many_files",
            "grep_search",
            "glob",
            "list_directory",
        ],
    ),
    ("Edit", &["edit", "write_file"]),
    ("Write", &["write_file"]),
    ("Grep", &["grep_search"]),
    ("Glob", &["glob"]),
    ("LS", &["list_directory"]),
    ("WebFetch", &["web_fetch"]),
    ("WebSearch", &["web_search"]),
    ("Agent", &["agent"]),
    ("Task", &["agent"]),
    ("replace", &["edit"]),
    ("search_file_content", &["grep_search"]),
    ("ls", &["list_directory"]),
    ("task", &["agent"]),
];

impl Rule {
    /// Parses `Name` or `Name(specifier)`. Unbalanced parentheses make no rule.
    /// The legacy `Bash(git:*)` is read as `Bash(git *)`.
    pub fn parse(text: &str) -> Option<Rule> {
        let trimmed = text.trim();
        let (name, specifier) = match trimmed.find('(') {
            None if trimmed.contains(')') => return None,
            None => (trimmed, None),
            Some(open) => {
                let inner = trimmed[open + 1..].strip_suffix(')')?;
                let inner = inner.trim();
                let inner = inner
                    .strip_suffix(":*")
                    .map(|p| format!("{p} *"))
                    .unwrap_or_else(|| inner.to_string());
                (trimmed[..open].trim(), Some(inner))
            }
        };
        if name.is_empty() {
            return None;
        }
        let tools = ALIASES
            .iter()
            .find(|(alias, _)| *alias == name)
            .map(|(_, tools)| tools.iter().map(|t| t.to_string()).collect())
            .unwrap_or_else(|| vec![name.to_string()]);
        let specifier = specifier.filter(|s| !s.is_empty() && s != "*");
        Some(Rule {
            text: trimmed.to_string(),
            tools,
            specifier,
        })
    }

    /// Whether the rule covers a call of `tool` with `subject`.
    pub fn matches(&self, tool: &str, subject: &PermissionSubject) -> bool {
        if !self.tools.iter().any(|t| t == tool) {
            return false;
        }
        match &self.specifier {
            None => true,
            Some(spec) => self.matches_subject(spec, subject),
        }
    }

    /// Whether the specifier matches the subject. A rule with a specifier never matches
    /// a call whose subject it cannot judge.
    fn matches_subject(&self, spec: &str, subject: &PermissionSubject) -> bool {
        match subject {
            PermissionSubject::Literal(value) => value == spec,
            // Commands, paths and domains are matched by their own grammars; until
            // those land a specifier matches only itself, literally.
            PermissionSubject::Commands(commands) => commands.iter().all(|c| c == spec),
            PermissionSubject::Domain(host) => host == spec.trim_start_matches("domain:"),
            PermissionSubject::Paths(_) | PermissionSubject::None => false,
        }
    }
}

/// All rules of a session.
#[derive(Debug, Clone, Default)]
pub struct PermissionRules {
    allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
    /// Entries that did not parse, for a warning.
    pub invalid: Vec<String>,
}

impl PermissionRules {
    /// `permissions.allow` + `tools.allowed` are allow rules; `permissions.ask` ask rules;
    /// `permissions.deny` + `tools.exclude` deny rules.
    pub fn from_settings(settings: &Settings) -> Self {
        let mut rules = PermissionRules::default();
        for entry in settings
            .permissions
            .allow
            .iter()
            .chain(&settings.tools.allowed)
        {
            rules.add(RuleList::Allow, entry);
        }
        for entry in &settings.permissions.ask {
            rules.add(RuleList::Ask, entry);
        }
        for entry in settings
            .permissions
            .deny
            .iter()
            .chain(&settings.tools.exclude)
        {
            rules.add(RuleList::Deny, entry);
        }
        rules
    }

    /// Adds one rule (from a flag such as `--allowed-tools`, or an "always allow" answer).
    pub fn add(&mut self, list: RuleList, text: &str) {
        let Some(rule) = Rule::parse(text) else {
            self.invalid.push(text.to_string());
            return;
        };
        match list {
            RuleList::Allow => self.allow.push(rule),
            RuleList::Ask => self.ask.push(rule),
            RuleList::Deny => self.deny.push(rule),
        }
    }

    /// deny > ask > allow > default. For shell calls every simple command is judged on
    /// its own and the strictest answer wins; a command no rule covers makes the whole
    /// call `Default` unless another part is stricter.
    pub fn evaluate(&self, tool: &str, subject: &PermissionSubject) -> Decision {
        if let PermissionSubject::Commands(commands) = subject
            && commands.len() > 1
        {
            let per_part = commands
                .iter()
                .map(|c| self.evaluate_one(tool, &PermissionSubject::Commands(vec![c.clone()])));
            let parts: Vec<Decision> = per_part.collect();
            let strictest = parts.iter().copied().max().unwrap_or(Decision::Default);
            if strictest == Decision::Allow && parts.contains(&Decision::Default) {
                return Decision::Default;
            }
            return strictest;
        }
        self.evaluate_one(tool, subject)
    }

    fn evaluate_one(&self, tool: &str, subject: &PermissionSubject) -> Decision {
        if self.deny.iter().any(|r| r.matches(tool, subject)) {
            Decision::Deny
        } else if self.ask.iter().any(|r| r.matches(tool, subject)) {
            Decision::Ask
        } else if self.allow.iter().any(|r| r.matches(tool, subject)) {
            Decision::Allow
        } else {
            Decision::Default
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_names_aliases_and_specifiers() {
        let r = Rule::parse("Bash(git:*)").unwrap();
        assert_eq!(r.tools, ["run_shell_command"]);
        assert_eq!(r.specifier.as_deref(), Some("git *"));
        assert_eq!(Rule::parse("Read").unwrap().tools.len(), 5);
        assert_eq!(
            Rule::parse("edit(*)").unwrap().specifier,
            None,
            "(*) is the whole tool"
        );
        assert!(Rule::parse("Bash(git").is_none());
        assert!(Rule::parse("Bash)").is_none());
        assert!(Rule::parse("").is_none());
    }

    #[test]
    fn deny_beats_ask_beats_allow() {
        let s = Settings::from_value(json!({"permissions": {
            "allow": ["read_file", "glob", "edit"], "ask": ["glob", "edit"], "deny": ["edit"]
        }}))
        .unwrap();
        let rules = PermissionRules::from_settings(&s);
        let none = PermissionSubject::None;
        assert_eq!(rules.evaluate("read_file", &none), Decision::Allow);
        assert_eq!(rules.evaluate("glob", &none), Decision::Ask);
        assert_eq!(rules.evaluate("edit", &none), Decision::Deny);
        assert_eq!(rules.evaluate("write_file", &none), Decision::Default);
    }

    #[test]
    fn legacy_lists_feed_allow_and_deny() {
        let s = Settings::from_value(
            json!({"tools": {"allowed": ["Edit"], "exclude": ["write_file"]}}),
        )
        .unwrap();
        let rules = PermissionRules::from_settings(&s);
        assert_eq!(
            rules.evaluate("edit", &PermissionSubject::None),
            Decision::Allow
        );
        assert_eq!(
            rules.evaluate("write_file", &PermissionSubject::None),
            Decision::Deny
        );
    }

    #[test]
    fn literal_and_domain_specifiers() {
        let mut rules = PermissionRules::default();
        rules.add(RuleList::Allow, "agent(reviewer)");
        rules.add(RuleList::Deny, "WebFetch(domain:evil.example)");
        assert_eq!(
            rules.evaluate("agent", &PermissionSubject::Literal("reviewer".into())),
            Decision::Allow
        );
        assert_eq!(
            rules.evaluate("agent", &PermissionSubject::Literal("other".into())),
            Decision::Default
        );
        assert_eq!(
            rules.evaluate(
                "web_fetch",
                &PermissionSubject::Domain("evil.example".into())
            ),
            Decision::Deny
        );
    }

    #[test]
    fn invalid_entries_are_kept_for_a_warning() {
        let mut rules = PermissionRules::default();
        rules.add(RuleList::Allow, "Bash(oops");
        assert_eq!(rules.invalid, ["Bash(oops"]);
    }
}
