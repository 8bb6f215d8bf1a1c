//! What tools know of path rules: which operation a file tool performs, and the
//! session's [`PathPolicy`] that every path resolution and walk applies.
//!
//! The rules themselves (their syntax, globs and the decision order) are the engine's
//! (`toolbelt_engine::rules`); the contract sees them only through [`PathRules`], so a
//! tool asks "may I read this path?" without knowing how a rule is written.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a file tool does to the paths it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathOperation {
    /// Reading contents or listing names.
    Read,
    /// Creating, replacing or changing a file.
    Edit,
}

impl PathOperation {
    /// "reading" / "editing", for messages.
    pub fn gerund(self) -> &'static str {
        match self {
            PathOperation::Read => "reading",
            PathOperation::Edit => "editing",
        }
    }
}

/// A checkout and a git worktree of it (issue 45): the rules of the checkout apply to
/// the worktree's same places, so a sub-agent working there is bound as it would be in
/// the checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relocation {
    /// The checkout's top directory.
    pub from: PathBuf,
    /// The worktree's.
    pub to: PathBuf,
}

impl Relocation {
    /// `path` moved from the checkout into the worktree, when it is in the checkout.
    pub fn moved(&self, path: &Path) -> Option<PathBuf> {
        let rest = path.strip_prefix(&self.from).ok()?;
        Some(if rest.as_os_str().is_empty() {
            self.to.clone()
        } else {
            self.to.join(rest)
        })
    }
}

/// A session's compiled path rules, as tools consult them. Paths are resolved (symbolic
/// links followed) before they are asked about.
pub trait PathRules: Send + Sync + fmt::Debug {
    /// Whether there are no path rules (then nothing is refused and nothing is checked).
    fn is_empty(&self) -> bool;
    /// The same rules, also naming in `relocation`'s worktree the places they name in its
    /// checkout: a sub-agent's.
    fn relocated(&self, relocation: Relocation) -> PathPolicy;
    /// The deny rule that forbids `operation` on `path`, if any.
    fn denying_rule(&self, operation: PathOperation, path: &Path) -> Option<String>;
    /// What the deny rules on reading name, for a sandbox that hides it from commands:
    /// per rule its longest literal leading path, and whether that is all the rule names.
    fn denied_reads(&self) -> Vec<(PathBuf, bool)>;
    /// Whether a deny rule forbids reading `path`.
    fn denies_reading(&self, path: &Path) -> bool;
    /// A text that differs whenever these rules may withhold other paths from a walk.
    fn walk_fingerprint(&self) -> String;
    /// Whether a walk must leave `path` out: a deny or ask rule covers reading it.
    fn withholds_from_walk(&self, path: &Path) -> bool;
}

/// The path rules of a session, applied wherever a tool resolves or walks paths. Cheap
/// to clone (shared). Empty by default: no path is refused.
#[derive(Debug, Clone, Default)]
pub struct PathPolicy(Option<Arc<dyn PathRules>>);

impl PathPolicy {
    /// A policy of `rules`.
    pub fn new(rules: Arc<dyn PathRules>) -> PathPolicy {
        PathPolicy(Some(rules))
    }

    /// Whether there are no path rules.
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|r| r.is_empty())
    }

    /// See [`PathRules::relocated`].
    pub fn relocated(&self, relocation: Relocation) -> PathPolicy {
        match &self.0 {
            Some(rules) => rules.relocated(relocation),
            None => self.clone(),
        }
    }

    /// See [`PathRules::denying_rule`].
    pub fn denying_rule(&self, operation: PathOperation, path: &Path) -> Option<String> {
        self.0.as_ref()?.denying_rule(operation, path)
    }

    /// See [`PathRules::denied_reads`].
    pub fn denied_reads(&self) -> Vec<(PathBuf, bool)> {
        self.0
            .as_ref()
            .map(|r| r.denied_reads())
            .unwrap_or_default()
    }

    /// See [`PathRules::denies_reading`].
    pub fn denies_reading(&self, path: &Path) -> bool {
        self.0.as_ref().is_some_and(|r| r.denies_reading(path))
    }

    /// See [`PathRules::walk_fingerprint`].
    pub fn walk_fingerprint(&self) -> String {
        self.0
            .as_ref()
            .map(|r| r.walk_fingerprint())
            .unwrap_or_default()
    }

    /// See [`PathRules::withholds_from_walk`].
    pub fn withholds_from_walk(&self, path: &Path) -> bool {
        self.0.as_ref().is_some_and(|r| r.withholds_from_walk(path))
    }
}

/// Two policies are equal when they hold the same rules anchored at the same places
/// (for `WorkspaceRoots: Eq`).
impl PartialEq for PathPolicy {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) if Arc::ptr_eq(a, b) => true,
            _ => self.walk_fingerprint() == other.walk_fingerprint(),
        }
    }
}

impl Eq for PathPolicy {}
