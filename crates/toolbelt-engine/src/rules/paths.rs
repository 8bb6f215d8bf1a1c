//! Path rules name *operations* on paths, not tools (as Qwen Code's and Claude Code's
//! `Read(...)`/`Edit(...)` rules do).
//!
//! A rule with a path specifier for any file-reading tool (`read_file`, `read_many_files`,
//! `grep_search`, `glob`, `list_directory`, or the aliases `Read`, `Grep`, `Glob`, `LS`)
//! is a rule on **reading** those paths, whichever tool reads them; one for a file-editing
//! tool (`edit`, `write_file`, `notebook_edit`, or `Edit`, `Write`, `replace`) is a rule on
//! **editing** them. Otherwise `read_file(//etc/**)` would stop `read_file` while
//! `grep_search` and `glob` still returned the same files.
//!
//! Editing a file also reads it (an edit must match its text; the diff shows the old
//! lines), so deny and ask rules on reading a path apply to editing it too; an allow rule
//! on reading never allows an edit.
//!
//! Two places apply these rules, and both are shared by every tool:
//! - the scheduler (and `tools call`) match a call's [`PermissionSubject`] paths through
//!   [`PermissionRules`], so a call that *names* a covered path is refused or asked;
//! - the [`PathPolicy`], carried by [`toolbelt_core::WorkspaceRoots`], refuses a denied path when
//!   a tool resolves it, and the shared walker of the tools crate leaves out every path
//!   a deny or ask rule covers for reading (a walk cannot stop to ask).
//!
//! Which tools read and which edit, the tools say themselves
//! ([`Tool::path_operation`](toolbelt_core::Tool::path_operation)); a rule learns it from the
//! [`RuleVocabulary`] it is parsed with, and the rules learn the called tool's from the
//! vocabulary they hold.
//!
//! A bare rule without a specifier (a `read_file` entry in `permissions.deny`) still
//! names one tool: it removes that tool, not the operation.
//!
//! [`PermissionSubject`]: toolbelt_core::PermissionSubject

use std::path::Path;
use std::sync::Arc;

use toolbelt_core::{PathOperation, PathPolicy, PathRules, Relocation};

use super::specifier::PathGlob;
use super::{Decision, PermissionRules, Rule, RuleBase, RuleList, RuleVocabulary, Verdict};

/// Whether a rule on `rule_op` in `list` speaks about `op`: its own, and for edits
/// also the deny and ask rules on reading.
fn answers_to(op: PathOperation, rule_op: PathOperation, list: RuleList) -> bool {
    op == rule_op
        || (op == PathOperation::Edit && rule_op == PathOperation::Read && list != RuleList::Allow)
}

impl Rule {
    /// The operations this rule's path specifier speaks about (empty for a rule without
    /// a specifier or naming no file tool).
    pub fn path_operations(&self) -> Vec<PathOperation> {
        if self.specifier.is_none() {
            return Vec::new();
        }
        self.operations.clone()
    }

    /// Whether this rule, found in `list`, speaks about `tool`: by name, or, for a file
    /// tool judged on paths, through the operation both stand for.
    pub(super) fn speaks_about(
        &self,
        tool: &str,
        list: RuleList,
        vocabulary: &RuleVocabulary,
    ) -> bool {
        if self.names(tool) {
            return true;
        }
        match vocabulary.operation(tool) {
            Some(op) => self
                .path_operations()
                .into_iter()
                .any(|rule_op| answers_to(op, rule_op, list)),
            None => false,
        }
    }
}

/// One path rule, compiled.
#[derive(Debug, Clone)]
struct PathRule {
    text: String,
    list: RuleList,
    operation: PathOperation,
    glob: PathGlob,
}

/// The path rules of a session, compiled once; tools reach them through the contract's
/// [`PathPolicy`] ([`PermissionRules::path_policy`]).
#[derive(Debug, Clone, Default)]
pub struct CompiledPathRules {
    rules: Arc<Vec<PathRule>>,
    /// The rules it was compiled from, to compile them again relocated.
    source: Option<Arc<PermissionRules>>,
}

impl CompiledPathRules {
    /// The path rules among `rules` (every list), anchored at their base. The anchors are
    /// resolved (symbolic links) so they compare with the resolved paths tools use.
    pub fn new(rules: &PermissionRules) -> CompiledPathRules {
        let real = |p: &Option<std::path::PathBuf>| {
            p.as_ref()
                .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
        };
        let base = RuleBase {
            project_root: real(&rules.base.project_root),
            cwd: real(&rules.base.cwd),
            home: real(&rules.base.home),
            relocated: rules.base.relocated.as_ref().map(|r| Relocation {
                from: r.from.canonicalize().unwrap_or_else(|_| r.from.clone()),
                to: r.to.canonicalize().unwrap_or_else(|_| r.to.clone()),
            }),
        };
        let mut compiled = Vec::new();
        for (list, entries) in [
            (RuleList::Deny, &rules.deny),
            (RuleList::Ask, &rules.ask),
            (RuleList::Allow, &rules.allow),
        ] {
            for rule in entries {
                let Some(spec) = &rule.specifier else {
                    continue;
                };
                let Some(glob) = PathGlob::compile(spec, &base) else {
                    continue;
                };
                for operation in rule.path_operations() {
                    compiled.push(PathRule {
                        text: rule.text.clone(),
                        list,
                        operation,
                        glob: glob.clone(),
                    });
                }
            }
        }
        CompiledPathRules {
            rules: Arc::new(compiled),
            source: Some(Arc::new(rules.clone())),
        }
    }

    /// deny > ask > allow > default for `operation` on the resolved `path`.
    pub fn verdict(&self, operation: PathOperation, path: &Path) -> Verdict {
        for (list, decision) in [
            (RuleList::Deny, Decision::Deny),
            (RuleList::Ask, Decision::Ask),
            (RuleList::Allow, Decision::Allow),
        ] {
            let found = self.rules.iter().find(|r| {
                r.list == list && answers_to(operation, r.operation, list) && r.glob.is_match(path)
            });
            if let Some(rule) = found {
                return Verdict {
                    decision,
                    rule: Some(rule.text.clone()),
                };
            }
        }
        Verdict {
            decision: Decision::Default,
            rule: None,
        }
    }
}

impl PathRules for CompiledPathRules {
    /// The same rules, also naming in `relocation`'s worktree the places they name in
    /// its checkout ([`PermissionRules::relocated`]): a sub-agent's (issue 45).
    fn relocated(&self, relocation: Relocation) -> PathPolicy {
        match &self.source {
            Some(rules) => (**rules).clone().relocated(relocation).path_policy(),
            None => PathPolicy::new(Arc::new(self.clone())),
        }
    }

    /// Whether there are no path rules (then nothing is refused and nothing is checked).
    fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The deny rule that forbids `operation` on `path`, if any.
    fn denying_rule(&self, operation: PathOperation, path: &Path) -> Option<String> {
        let verdict = self.verdict(operation, path);
        (verdict.decision == Decision::Deny)
            .then_some(verdict.rule)
            .flatten()
    }

    /// What the deny rules on reading name, for a sandbox that hides it from commands:
    /// per rule its longest literal leading path, and whether that is all the rule
    /// names (`~/.ssh/**` and `~/.ssh` give `~/.ssh`; `.env` gives the working directory,
    /// not exact, as `.env` matches at any depth beneath it). [`PathRules::denies_reading`]
    /// tells which paths beneath an inexact one the rules name.
    fn denied_reads(&self) -> Vec<(std::path::PathBuf, bool)> {
        let mut out: Vec<(std::path::PathBuf, bool)> = Vec::new();
        for rule in self.rules.iter() {
            if rule.list == RuleList::Deny && rule.operation == PathOperation::Read {
                for (literal, exact) in rule.glob.literals() {
                    let entry = (literal.to_path_buf(), exact);
                    if !out.contains(&entry) {
                        out.push(entry);
                    }
                }
            }
        }
        out
    }

    /// Whether a deny rule forbids reading `path` (resolved).
    fn denies_reading(&self, path: &Path) -> bool {
        self.rules.iter().any(|r| {
            r.list == RuleList::Deny && r.operation == PathOperation::Read && r.glob.is_match(path)
        })
    }

    /// A text that differs whenever this policy may withhold other paths from a walk:
    /// each rule's text, list and operation and where it is anchored. A cache of walks
    /// (the checkpoints' index) keeps it to know when its listings still hold.
    fn walk_fingerprint(&self) -> String {
        let mut out = String::new();
        for rule in self.rules.iter() {
            out.push_str(&format!(
                "{:?} {:?} {:?} {}\n",
                rule.text,
                rule.list,
                rule.operation,
                rule.glob.anchors()
            ));
        }
        out
    }

    /// Whether a walk must leave `path` out: a deny or ask rule covers reading it.
    fn withholds_from_walk(&self, path: &Path) -> bool {
        !self.is_empty() && self.verdict(PathOperation::Read, path).decision >= Decision::Ask
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn policy(list: RuleList, rules: &[&str]) -> CompiledPathRules {
        let mut all =
            crate::rules::tests::empty_rules().with_base("/proj", Some("/home/me".into()));
        for r in rules {
            all.add(list, r);
        }
        CompiledPathRules::new(&all)
    }

    #[test]
    fn a_read_rule_of_any_read_tool_is_a_rule_on_reading() {
        for rule in [
            "read_file(//secret/**)",
            "glob(//secret/**)",
            "grep_search(//secret/**)",
            "Read(//secret/**)",
            "LS(//secret/**)",
        ] {
            let p = policy(RuleList::Deny, &[rule]);
            let v = p.verdict(PathOperation::Read, Path::new("/secret/a.txt"));
            assert_eq!(v.decision, Decision::Deny, "{rule}");
            assert_eq!(v.rule.as_deref(), Some(rule));
            assert_eq!(
                p.verdict(PathOperation::Read, Path::new("/public/a.txt"))
                    .decision,
                Decision::Default
            );
        }
    }

    #[test]
    fn edit_rules_cover_every_edit_tool_and_read_denials_cover_edits() {
        let p = policy(RuleList::Deny, &["write_file(/locked/**)"]);
        assert_eq!(
            p.verdict(PathOperation::Edit, Path::new("/proj/locked/x"))
                .decision,
            Decision::Deny
        );
        assert_eq!(
            p.verdict(PathOperation::Read, Path::new("/proj/locked/x"))
                .decision,
            Decision::Default,
            "an edit rule does not forbid reading"
        );
        let p = policy(RuleList::Deny, &["read_file(~/.ssh/**)"]);
        assert_eq!(
            p.verdict(PathOperation::Edit, Path::new("/home/me/.ssh/id"))
                .decision,
            Decision::Deny,
            "an edit reads the file too"
        );
        let p = policy(RuleList::Allow, &["Read(/src/**)"]);
        assert_eq!(
            p.verdict(PathOperation::Edit, Path::new("/proj/src/a.rs"))
                .decision,
            Decision::Default,
            "allowing reads never allows edits"
        );
    }

    #[test]
    fn walks_leave_out_denied_and_asked_paths() {
        let mut all = crate::rules::tests::empty_rules().with_base("/proj", None);
        all.add(RuleList::Deny, "read_file(/a)");
        all.add(RuleList::Ask, "read_file(/b)");
        all.add(RuleList::Allow, "read_file(/c)");
        let p = CompiledPathRules::new(&all);
        assert!(p.withholds_from_walk(Path::new("/proj/a")));
        assert!(p.withholds_from_walk(Path::new("/proj/b/inner.txt")));
        assert!(!p.withholds_from_walk(Path::new("/proj/c")));
        assert!(!CompiledPathRules::default().withholds_from_walk(Path::new("/proj/a")));
    }

    #[test]
    fn a_relocated_policy_refuses_and_hides_the_worktrees_copies_too() {
        let p = policy(RuleList::Deny, &["Read(/secret.txt)", "Edit(src/**)"]);
        let wt = Path::new("/proj/.qwen/worktrees/agent-1234567");
        assert_eq!(
            p.denying_rule(PathOperation::Read, &wt.join("secret.txt")),
            None
        );
        let moved = p.relocated(Relocation {
            from: "/proj".into(),
            to: wt.to_path_buf(),
        });
        for (op, path) in [
            (PathOperation::Read, wt.join("secret.txt")),
            (PathOperation::Edit, wt.join("src/a.rs")),
            (PathOperation::Read, PathBuf::from("/proj/secret.txt")),
        ] {
            assert!(moved.denying_rule(op, &path).is_some(), "{path:?}");
        }
        assert_eq!(
            moved.denying_rule(PathOperation::Edit, &wt.join("README.md")),
            None
        );
        // The read-only sandbox hides both copies.
        assert_eq!(
            moved.denied_reads(),
            [
                (PathBuf::from("/proj/secret.txt"), true),
                (wt.join("secret.txt"), true)
            ]
        );
    }

    #[test]
    fn denied_reads_name_the_literal_part_of_each_deny_rule_on_reading() {
        let mut all =
            crate::rules::tests::empty_rules().with_base("/proj", Some("/home/me".into()));
        for rule in [
            "Read(~/.ssh/**)",
            "read_file(//etc/shadow)",
            "Read(.env)",
            "Read(/conf/*.key)",
            "Edit(//locked)",
        ] {
            all.add(RuleList::Deny, rule);
        }
        all.add(RuleList::Ask, "Read(//asked)");
        let p = CompiledPathRules::new(&all);
        let reads = p.denied_reads();
        let expected = [
            ("/home/me/.ssh", true),
            ("/etc/shadow", true),
            ("/proj", false),
            ("/proj/conf", false),
        ];
        assert_eq!(
            reads,
            expected
                .iter()
                .map(|(p, e)| (std::path::PathBuf::from(p), *e))
                .collect::<Vec<_>>()
        );
        assert!(p.denies_reading(Path::new("/proj/sub/.env")));
        assert!(p.denies_reading(Path::new("/proj/conf/a.key")));
        assert!(!p.denies_reading(Path::new("/proj/conf/a.txt")));
        assert!(!p.denies_reading(Path::new("/locked")));
    }

    #[test]
    fn rules_of_other_tools_are_not_path_operations() {
        let p = policy(
            RuleList::Deny,
            &["run_shell_command(rm *)", "read_file", "mcp__x__read(/a)"],
        );
        assert!(p.is_empty());
    }
}
