//! Permission rules: `permissions.allow|ask|deny` entries such as `run_shell_command(git *)`,
//! `read_file(//abs/path/**)`, `web_fetch(domain:example.com)`, decided as
//! deny > ask > allow > the tool's own default.
//!
//! A rule is a tool name (or an alias such as `Bash`, `Read`, `Edit`) with an
//! optional specifier in parentheses. Without a specifier it covers every call of the
//! tool. With one, the specifier is matched against the call's [`PermissionSubject`]:
//! commands for shell calls, paths for file tools, the host for fetches, a literal
//! otherwise.
//!
//! Path rules of file tools name *operations* (reading, editing), not single tools:
//! `read_file(//etc/**)` also covers `grep_search`, `glob`, `read_many_files` and
//! `list_directory` (see `rules/paths.rs`, which also compiles them into the
//! [`PathPolicy`] that path resolution and walks apply).
//!
//! This file holds the rule model, parsing, name matching and the decision order. The
//! grammars of specifiers (command globs, path globs, domains) are in `rules/specifier.rs`.

use std::path::PathBuf;
use std::sync::Arc;

use toolbelt_config::settings::Settings;
use toolbelt_config::split_rule as split;
#[cfg(test)]
use toolbelt_core::ShellCommand;
use toolbelt_core::{PathOperation, PathPolicy, PermissionSubject, Relocation};

mod paths;
mod specifier;
mod vocabulary;

pub use paths::CompiledPathRules;
pub use specifier::{CommandPurpose, SYSTEM_BIN_DIRS, wildcard};
pub use vocabulary::RuleVocabulary;

/// The answer of the rules for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Decision {
    /// No rule matched: the tool's own default and the approval mode decide.
    Default,
    /// An allow rule matched (and no deny or ask rule): the call runs without asking (plan
    /// mode still refuses kinds that are not read-only).
    Allow,
    /// An ask rule matched (and no deny rule): a person is asked, whatever the approval mode.
    Ask,
    /// A deny rule matched (or the `tools.core` shell restriction): the call is refused.
    Deny,
}

/// Which list a rule came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleList {
    /// `permissions.allow`, `tools.allowed`, `--allowed-tools` and "always allow" answers.
    Allow,
    /// `permissions.ask`.
    Ask,
    /// `permissions.deny` and `tools.exclude`.
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
    /// The path operations of the tools it names (from the vocabulary it was parsed
    /// with), which its path specifier speaks about (see `rules/paths.rs`).
    operations: Vec<PathOperation>,
}

impl Rule {
    /// Parses `Name` or `Name(specifier)` with the words of `vocabulary`: an alias
    /// (`Read`) names the tools it stands for, and each named tool's path operation is
    /// recorded. Unbalanced parentheses make no rule. The legacy `Bash(git:*)` is read
    /// as `Bash(git *)`.
    pub fn parse(text: &str, vocabulary: &RuleVocabulary) -> Option<Rule> {
        let (name, specifier) = split(text)?;
        let tools: Vec<String> = vocabulary
            .tools_of(name)
            .map(<[String]>::to_vec)
            .unwrap_or_else(|| vec![name.to_string()]);
        let mut operations: Vec<PathOperation> = Vec::new();
        for op in tools.iter().filter_map(|t| vocabulary.operation(t)) {
            if !operations.contains(&op) {
                operations.push(op);
            }
        }
        Some(Rule {
            text: text.trim().to_string(),
            tools,
            specifier,
            operations,
        })
    }

    /// Whether `text` is a rule at all (`Name` or `Name(specifier)`, balanced
    /// parentheses), for callers that only validate what others will parse.
    pub fn is_well_formed(text: &str) -> bool {
        split(text).is_some()
    }

    /// Whether the rule, taken from `list`, covers a call of `tool` with `subject`. Path
    /// specifiers are resolved against the process's current directory and `$HOME`; use
    /// [`Rule::matches_in`] to give them a project root.
    pub fn matches(&self, list: RuleList, tool: &str, subject: &PermissionSubject) -> bool {
        self.matches_in(list, tool, subject, &RuleBase::from_process())
    }

    /// Whether the rule, taken from `list`, covers a call of `tool` with `subject`, with
    /// path specifiers resolved against `base`. The list matters for shell commands: an
    /// allow rule approves less than a deny rule refuses (see `rules/specifier.rs`).
    pub fn matches_in(
        &self,
        list: RuleList,
        tool: &str,
        subject: &PermissionSubject,
        base: &RuleBase,
    ) -> bool {
        let purpose = match list {
            RuleList::Allow => CommandPurpose::Approve,
            RuleList::Ask | RuleList::Deny => CommandPurpose::Restrict,
        };
        self.matches_for(purpose, tool, subject, base)
    }

    fn matches_for(
        &self,
        purpose: CommandPurpose,
        tool: &str,
        subject: &PermissionSubject,
        base: &RuleBase,
    ) -> bool {
        if !self.names(tool) {
            return false;
        }
        match &self.specifier {
            None => true,
            Some(spec) => matches_subject(spec, subject, base, purpose),
        }
    }

    /// Like [`Rule::matches_in`] for a rule found in `list`, with path rules read as
    /// operations: `read_file(//x)` also covers a `glob` call whose paths it matches, and
    /// deny and ask rules on reading also cover edits (see `rules/paths.rs`).
    fn covers(
        &self,
        tool: &str,
        subject: &PermissionSubject,
        base: &RuleBase,
        list: RuleList,
        purpose: CommandPurpose,
        vocabulary: &RuleVocabulary,
    ) -> bool {
        if !self.speaks_about(tool, list, vocabulary) {
            return false;
        }
        let by_name = self.names(tool);
        match &self.specifier {
            None => by_name,
            Some(_) if !by_name && !matches!(subject, PermissionSubject::Paths(_)) => false,
            Some(spec) => matches_subject(spec, subject, base, purpose),
        }
    }
}

impl Rule {
    /// Whether the rule names `tool`: by its name (or an alias), or, for a rule that
    /// names an MCP server (`mcp__github`), every tool of that server
    /// (`mcp__github__create_issue`), as Qwen Code and Claude Code read it.
    fn names(&self, tool: &str) -> bool {
        self.tools
            .iter()
            .any(|t| t == tool || mcp_server_rule_covers(t, tool))
    }
}

/// Whether `name` is a server-wide MCP rule name (`mcp__<server>`, no `__<tool>` part).
pub fn is_mcp_server_rule(name: &str) -> bool {
    name.strip_prefix("mcp__")
        .is_some_and(|server| !server.is_empty() && !server.contains("__"))
}

fn mcp_server_rule_covers(rule_name: &str, tool: &str) -> bool {
    is_mcp_server_rule(rule_name)
        && tool
            .strip_prefix(rule_name)
            .and_then(|rest| rest.strip_prefix("__"))
            .is_some_and(|rest| !rest.is_empty())
}

/// Whether a specifier matches the subject, by the subject's kind: a command glob for
/// shell commands, a path glob for paths, a host for fetches, equality otherwise. A rule
/// with a specifier never matches a call whose subject it cannot judge; a subject with
/// several commands or paths matches only when every one does (the engine judges them one
/// by one, see [`PermissionRules::evaluate`]).
fn matches_subject(
    spec: &str,
    subject: &PermissionSubject,
    base: &RuleBase,
    purpose: CommandPurpose,
) -> bool {
    match subject {
        PermissionSubject::Literal(value) => value == spec,
        PermissionSubject::Commands(commands) => {
            !commands.is_empty()
                && commands
                    .iter()
                    .all(|c| specifier::shell_command_matches(spec, c, purpose))
        }
        PermissionSubject::Paths(paths) => {
            !paths.is_empty() && paths.iter().all(|p| specifier::path_matches(spec, p, base))
        }
        PermissionSubject::Domain(host) => specifier::domain_matches(spec, host),
        PermissionSubject::None => false,
        // A subject of a kind the contract gains later, before the rules learn it: deny
        // and ask rules cover it and no allow rule approves it, the strictest answer (as
        // for a command the shell tool could not read).
        _ => purpose == CommandPurpose::Restrict,
    }
}

/// Where relative path specifiers are anchored: `/x` is under the project root, `./x`
/// and `x` under the current directory, `~/x` under the home directory.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RuleBase {
    /// What `/x` is anchored under; `None`: the specifier cannot match.
    pub project_root: Option<PathBuf>,
    /// What `./x` and `x` are anchored under; `None`: the specifier cannot match.
    pub cwd: Option<PathBuf>,
    /// What `~/x` is anchored under; `None`: the specifier cannot match.
    pub home: Option<PathBuf>,
    /// A checkout whose files are also at another place (a sub-agent's git worktree):
    /// a path specifier that names a place in it names the same place there too.
    pub relocated: Option<Relocation>,
}

impl RuleBase {
    /// The process's current directory (as project root and cwd) and `$HOME`.
    pub fn from_process() -> Self {
        let cwd = std::env::current_dir().ok();
        RuleBase {
            project_root: cwd.clone(),
            cwd,
            home: std::env::var_os("HOME").map(PathBuf::from),
            relocated: None,
        }
    }
}

/// All rules of a session, with the vocabulary they were parsed with (and rules added
/// later are parsed with). There is no default: rules made without the tools' words
/// would let `Read(//secret/**)` miss `grep_search`.
#[derive(Debug, Clone)]
pub struct PermissionRules {
    vocabulary: Arc<RuleVocabulary>,
    allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
    /// The older `tools.core` shell restriction: when it names shell commands
    /// (`run_shell_command(git)`), a command none of them covers is denied.
    core_commands: Vec<Rule>,
    base: RuleBase,
    /// Entries that did not parse, for a warning.
    pub invalid: Vec<String>,
}

/// A decision and the rule that made it, for messages ("denied by `Bash(rm *)`").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// What the rules say.
    pub decision: Decision,
    /// The rule as written; `None` for [`Decision::Default`].
    pub rule: Option<String>,
}

impl PermissionRules {
    /// `permissions.allow` + `tools.allowed` are allow rules; `permissions.ask` ask rules;
    /// `permissions.deny` + `tools.exclude` deny rules. `tools.core` entries with a shell
    /// specifier restrict the shell to those commands (the older Gemini CLI meaning,
    /// which Qwen Code's documentation still gives). Paths are anchored at the process's
    /// current directory until [`PermissionRules::with_base`] says otherwise.
    pub fn from_settings(settings: &Settings, vocabulary: &RuleVocabulary) -> Self {
        let mut rules = PermissionRules::new(vocabulary);
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
        if let Some(core) = &settings.tools.core {
            let shell: Vec<Rule> = core
                .iter()
                .filter_map(|e| Rule::parse(e, vocabulary))
                .filter(|r| r.tools.iter().any(|t| vocabulary.runs_commands(t)))
                .collect();
            // A bare shell tool (`run_shell_command`) in the list lifts the restriction.
            if shell.iter().all(|r| r.specifier.is_some()) {
                rules.core_commands = shell;
            }
        }
        rules
    }

    /// No rules yet, parsed with `vocabulary` when added; paths anchored at the
    /// process's current directory until [`PermissionRules::with_base`] says otherwise.
    pub fn new(vocabulary: &RuleVocabulary) -> Self {
        PermissionRules {
            vocabulary: Arc::new(vocabulary.clone()),
            allow: Vec::new(),
            ask: Vec::new(),
            deny: Vec::new(),
            core_commands: Vec::new(),
            base: RuleBase::from_process(),
            invalid: Vec::new(),
        }
    }

    /// The tools' words these rules are parsed with.
    pub fn vocabulary(&self) -> &RuleVocabulary {
        &self.vocabulary
    }

    /// Anchors path specifiers: `/x` under `project_root`, `./x` and `x` under
    /// `project_root` too (the session's working directory), `~/x` under `home`.
    pub fn with_base(mut self, project_root: impl Into<PathBuf>, home: Option<PathBuf>) -> Self {
        let root = project_root.into();
        self.base = RuleBase {
            project_root: Some(root.clone()),
            cwd: Some(root),
            home,
            relocated: self.base.relocated.take(),
        };
        self
    }

    /// The same rules, whose path specifiers that name places in `relocation`'s
    /// checkout also name the same places in its worktree (a sub-agent's, issue 45).
    pub fn relocated(mut self, relocation: Relocation) -> Self {
        self.base.relocated = Some(relocation);
        self
    }

    /// The path rules among these, compiled, as the contract's [`PathPolicy`] that
    /// [`toolbelt_core::WorkspaceRoots`] carries to every tool.
    pub fn path_policy(&self) -> PathPolicy {
        PathPolicy::new(Arc::new(CompiledPathRules::new(self)))
    }

    /// Anchors `./x` and `x` under `cwd` when it differs from the project root.
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.base.cwd = Some(cwd.into());
        self
    }

    /// Adds one rule (from a flag such as `--allowed-tools`, or an "always allow" answer).
    pub fn add(&mut self, list: RuleList, text: &str) {
        let Some(rule) = Rule::parse(text, &self.vocabulary) else {
            self.invalid.push(text.to_string());
            return;
        };
        match list {
            RuleList::Allow => self.allow.push(rule),
            RuleList::Ask => self.ask.push(rule),
            RuleList::Deny => self.deny.push(rule),
        }
    }

    /// deny > ask > allow > default. For shell calls every simple command (and for file
    /// calls every path) is judged on its own and the strictest answer wins; a part no
    /// rule covers makes the whole call `Default` unless another part is stricter.
    pub fn evaluate(&self, tool: &str, subject: &PermissionSubject) -> Decision {
        self.verdict(tool, subject).decision
    }

    /// Like [`PermissionRules::evaluate`], with the rule that decided.
    pub fn verdict(&self, tool: &str, subject: &PermissionSubject) -> Verdict {
        let parts: Vec<PermissionSubject> = match subject {
            PermissionSubject::Commands(c) if c.len() > 1 => c
                .iter()
                .map(|c| PermissionSubject::Commands(vec![c.clone()]))
                .collect(),
            PermissionSubject::Paths(p) if p.len() > 1 => p
                .iter()
                .map(|p| PermissionSubject::Paths(vec![p.clone()]))
                .collect(),
            _ => return self.verdict_one(tool, subject),
        };
        let verdicts: Vec<Verdict> = parts.iter().map(|p| self.verdict_one(tool, p)).collect();
        let mut strictest = Verdict {
            decision: Decision::Default,
            rule: None,
        };
        for v in &verdicts {
            if v.decision > strictest.decision {
                strictest = v.clone();
            }
        }
        if strictest.decision == Decision::Allow
            && verdicts.iter().any(|v| v.decision == Decision::Default)
        {
            return Verdict {
                decision: Decision::Default,
                rule: None,
            };
        }
        strictest
    }

    fn verdict_one(&self, tool: &str, subject: &PermissionSubject) -> Verdict {
        let found = |rules: &[Rule], list: RuleList, purpose: CommandPurpose| {
            rules
                .iter()
                .find(|r| r.covers(tool, subject, &self.base, list, purpose, &self.vocabulary))
                .map(|r| r.text.clone())
        };
        if let Some(rule) = found(&self.deny, RuleList::Deny, CommandPurpose::Restrict) {
            return Verdict {
                decision: Decision::Deny,
                rule: Some(rule),
            };
        }
        if !self.core_commands.is_empty()
            && self.vocabulary.runs_commands(tool)
            && matches!(subject, PermissionSubject::Commands(_))
            && found(&self.core_commands, RuleList::Allow, CommandPurpose::Limit).is_none()
        {
            let names: Vec<&str> = self.core_commands.iter().map(|r| r.text.as_str()).collect();
            return Verdict {
                decision: Decision::Deny,
                rule: Some(format!("tools.core ({})", names.join(", "))),
            };
        }
        for (rules, list, decision, purpose) in [
            (
                &self.ask,
                RuleList::Ask,
                Decision::Ask,
                CommandPurpose::Restrict,
            ),
            (
                &self.allow,
                RuleList::Allow,
                Decision::Allow,
                CommandPurpose::Approve,
            ),
        ] {
            if let Some(rule) = found(rules, list, purpose) {
                return Verdict {
                    decision,
                    rule: Some(rule),
                };
            }
        }
        Verdict {
            decision: Decision::Default,
            rule: None,
        }
    }
}

impl PermissionRules {
    /// The allow rules with a specifier that cover a call of `tool` with `subject` (every
    /// path of it), in the order written. Protected configuration is approved only by
    /// such a rule (see `scheduler/protect.rs`): a bare `edit` allows edits in general,
    /// not a change to the settings that grant it.
    pub fn specific_allow_rules(&self, tool: &str, subject: &PermissionSubject) -> Vec<&Rule> {
        self.allow
            .iter()
            .filter(|r| {
                r.specifier.is_some()
                    && r.covers(
                        tool,
                        subject,
                        &self.base,
                        RuleList::Allow,
                        CommandPurpose::Approve,
                        &self.vocabulary,
                    )
            })
            .collect()
    }

    /// When a shell command of `subject` cannot be read ([`toolbelt_core::ShellCommand::unreadable`]),
    /// a sentence saying why every deny and ask rule of the shell covers it, for the
    /// refusal message.
    pub fn unreadable_note(&self, subject: &PermissionSubject) -> Option<String> {
        let PermissionSubject::Commands(commands) = subject else {
            return None;
        };
        commands.iter().find_map(|c| {
            c.unreadable.as_ref().map(|why| {
                format!(
                    "The rule covers `{}` because {why}: a command whose program cannot be read from its text is covered by every deny and ask rule. Name the program plainly if it is allowed.",
                    c.text
                )
            })
        })
    }

    /// The tool names, as written, of rules that name neither an alias (`Read`, `Bash`,
    /// ...) nor a tool `known` accepts, once each in the order written: such
    /// a rule has no effect, and is usually a misspelling worth a warning.
    pub fn unknown_tools(&self, known: impl Fn(&str) -> bool) -> Vec<String> {
        let mut unknown: Vec<String> = Vec::new();
        for rule in self
            .allow
            .iter()
            .chain(&self.ask)
            .chain(&self.deny)
            .chain(&self.core_commands)
        {
            let name = crate::registry::rule_tool_name(&rule.text);
            let is_alias = self.vocabulary.tools_of(name).is_some();
            // A server-wide MCP rule names a server, which the registry cannot judge
            // (the server may still be starting).
            if !is_alias
                && !is_mcp_server_rule(name)
                && !known(name)
                && !unknown.iter().any(|u| u == name)
            {
                unknown.push(name.to_string());
            }
        }
        unknown
    }
}

#[cfg(test)]
pub(crate) mod tests;
