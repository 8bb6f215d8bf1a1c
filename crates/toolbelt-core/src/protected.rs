//! Protected paths: the files that decide what the agent may do, or that run code, and
//! that a model must therefore not change on a general approval.
//!
//! A model that writes `.qwen/settings.json` (an allow rule, a `tools.discoveryCommand`,
//! an MCP server), a skill (its `allowed-tools` are granted without asking), a declared
//! tool manifest, a sub-agent definition or a git hook widens its own powers for the next
//! call or the next session. So a change to such a file is asked of the person even in
//! auto-edit mode or under an "always allow" answer (the scheduler applies this, see
//! `scheduler/protect.rs`); Codex CLI keeps `.git` and `.codex` read-only for the same
//! reason.
//!
//! Protected by name, wherever they are (any component, ASCII case-insensitively, since
//! a case-insensitive file system opens `.QWEN` as `.qwen`):
//! - `.qwen`: toolbelt's (and Qwen Code's) settings, tool manifests, skills, sub-agents;
//! - `.agents`: the skills several agents share;
//! - `.claude`: Claude Code's settings, whose `hooks` toolbelt runs too;
//! - `.git`: hooks and configuration, which name programs git runs.
//!
//! And what the repository's git configuration makes git run, wherever it is in the
//! project: the hooks directory (`core.hooksPath`: `.githooks`, `.husky`), and the files
//! `core.fsmonitor`, drivers (`diff.*.textconv`, `filter.*.clean`, `merge.*.driver`),
//! aliases and the other configured commands name (`protected/git.rs`).
//!
//! The session adds the places it knows from outside the workspace (the toolbelt home,
//! the system settings file, `tools.manifests` entries) and the files that commands run
//! without a question before each run (discovery and MCP server commands, the scripts
//! of declared tools' `command` and `prepare`) with [`ProtectedPaths::add`].
//!
//! Not protected: `QWEN.md`/`AGENTS.md` (context files: prompt text, no privilege) and
//! `.qwenignore`/`.gitignore` (they only hide files from the model's listings).

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

mod git;

/// Why a path is protected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protection {
    /// A few words for a question's title: `toolbelt settings`, `git hooks`.
    pub label: String,
    /// What the file can do, for the model's message: `permissions, commands and MCP
    /// servers that start`.
    pub why: String,
    /// The name an allow rule must spell out to cover the path (`.qwen`, `.git`, or the
    /// name of a configured file): a rule that only happens to match, such as
    /// `Edit(**)`, did not name it.
    pub marker: String,
}

/// The protected places of a session: the names of [`PROTECTED_NAMES`], plus the paths
/// the session added.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProtectedPaths {
    /// Resolved directories or files, each with its label and reason.
    extra: Vec<(PathBuf, String, String)>,
}

/// The directory names protected wherever they appear in a path.
pub const PROTECTED_NAMES: &[&str] = &[".qwen", ".agents", ".claude", ".git"];

impl ProtectedPaths {
    /// Protects `path` (a file, or a directory and everything under it) with a label
    /// and a reason. The path is resolved now (as far as it exists), so it is compared
    /// with the resolved paths of calls.
    pub fn add(&mut self, path: &Path, label: impl Into<String>, why: impl Into<String>) {
        let real = crate::resolve_best_effort(path);
        let entry = (real, label.into(), why.into());
        if !self.extra.contains(&entry) {
            self.extra.push(entry);
        }
    }

    /// Why `path` is protected, if it is. The path should be absolute and resolved (the
    /// [`crate::WorkspaceRoots`] method resolves it first).
    pub fn protection(&self, path: &Path) -> Option<Protection> {
        by_name(path)
            .or_else(|| {
                self.extra
                    .iter()
                    .find(|(p, ..)| path.starts_with(p))
                    .map(|(p, label, why)| Protection {
                        label: label.clone(),
                        why: why.clone(),
                        marker: p
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_else(|| p.display().to_string()),
                    })
            })
            .or_else(|| git::protection(path))
    }
}

/// The first component of `path` that is a protected name, and what lies under it.
fn by_name(path: &Path) -> Option<Protection> {
    let names: Vec<&OsStr> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let names = after_worktree(&names);
    let at = names.iter().position(|n| {
        PROTECTED_NAMES
            .iter()
            .any(|p| n.as_encoded_bytes().eq_ignore_ascii_case(p.as_bytes()))
    })?;
    let marker = names[at].to_string_lossy().into_owned();
    let next = names
        .get(at + 1)
        .map(|n| n.to_string_lossy().to_ascii_lowercase());
    let (label, why) = describe(&marker.to_ascii_lowercase(), next.as_deref());
    Some(Protection {
        label: label.to_string(),
        why: why.to_string(),
        marker,
    })
}

/// What lies under the last `.qwen/worktrees/<slug>/` of a path (all of it without one).
/// A worktree there is a checkout of its own (issue 45): its files are judged as the
/// same files in any checkout, so its `.qwen`, `.git` and hooks stay protected while its
/// sources do not inherit the protection of the `.qwen` it lives in. Nothing reads
/// configuration from `.qwen/worktrees` itself, which stays protected as `.qwen`.
fn after_worktree<'a, 'p>(names: &'a [&'p OsStr]) -> &'a [&'p OsStr] {
    let is = |n: &OsStr, p: &str| n.as_encoded_bytes().eq_ignore_ascii_case(p.as_bytes());
    let mut start = 0;
    let mut i = 0;
    while i + 2 < names.len() {
        if is(names[i], ".qwen") && is(names[i + 1], "worktrees") {
            start = i + 3;
            i += 3;
        } else {
            i += 1;
        }
    }
    &names[start..]
}

/// The label and reason for what lies under a protected directory (`next`: the
/// component after it, lowercased).
fn describe(dir: &str, next: Option<&str>) -> (&'static str, &'static str) {
    const SKILLS: (&str, &str) = (
        "skills",
        "a skill's allowed-tools are granted without asking when it is used",
    );
    match (dir, next) {
        (".qwen", Some("settings.json")) => (
            "toolbelt settings",
            "they hold the permission rules, commands toolbelt runs and MCP servers it starts",
        ),
        (".qwen", Some("tools")) => (
            "declared tools",
            "a tool manifest binds tools to commands that run when the tools are called",
        ),
        (".qwen" | ".agents", Some("skills")) => SKILLS,
        (".qwen", Some("agents")) => (
            "sub-agent definitions",
            "they set a sub-agent's tools and instructions",
        ),
        (".qwen" | ".claude", Some("hooks")) => (
            "hook scripts",
            "hooks run them at every step of a call, without asking",
        ),
        (".claude", _) => (
            "Claude Code configuration",
            "toolbelt runs the hooks of Claude Code's settings files in this folder",
        ),
        (".qwen", _) => (
            "toolbelt configuration",
            "toolbelt reads its settings, tools, skills and sub-agents from this folder",
        ),
        (".agents", _) => (
            "agent configuration",
            "agents read their skills and configuration from this folder",
        ),
        (_, Some("hooks")) => ("git hooks", "git runs them as programs"),
        (_, Some("config")) => (
            "git configuration",
            "it can name programs that git runs (hooks path, editors, filters, aliases)",
        ),
        _ => (
            "git repository data",
            "git reads its hooks and configuration from here and runs the programs they name",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(path: &str) -> Option<String> {
        ProtectedPaths::default()
            .protection(Path::new(path))
            .map(|p| p.label)
    }

    #[test]
    fn a_worktree_under_qwen_is_judged_as_a_checkout_of_its_own() {
        assert_eq!(label("/w/.qwen/worktrees/feat/src/a.rs"), None);
        assert_eq!(label("/w/.QWEN/Worktrees/feat/README.md"), None);
        assert_eq!(
            label("/w/.qwen/worktrees/feat/.qwen/settings.json").as_deref(),
            Some("toolbelt settings")
        );
        assert_eq!(
            label("/w/.qwen/worktrees/feat/.git").as_deref(),
            Some("git repository data")
        );
        assert_eq!(
            label("/w/.qwen/worktrees").as_deref(),
            Some("toolbelt configuration")
        );
        assert_eq!(
            label("/w/.qwen/settings.json").as_deref(),
            Some("toolbelt settings")
        );
    }

    #[test]
    fn the_agent_and_git_folders_are_protected_by_name_in_any_case() {
        assert_eq!(
            label("/w/.qwen/settings.json").as_deref(),
            Some("toolbelt settings")
        );
        assert_eq!(
            label("/w/.QWEN/Settings.json").as_deref(),
            Some("toolbelt settings")
        );
        assert_eq!(
            label("/w/.qwen/tools/a.json").as_deref(),
            Some("declared tools")
        );
        assert_eq!(
            label("/w/.qwen/skills/x/SKILL.md").as_deref(),
            Some("skills")
        );
        assert_eq!(
            label("/w/.agents/skills/x/SKILL.md").as_deref(),
            Some("skills")
        );
        assert_eq!(
            label("/w/.qwen/agents/r.md").as_deref(),
            Some("sub-agent definitions")
        );
        assert_eq!(
            label("/w/.git/hooks/pre-commit").as_deref(),
            Some("git hooks")
        );
        assert_eq!(
            label("/w/.Git/config").as_deref(),
            Some("git configuration")
        );
        assert_eq!(label("/w/.git").as_deref(), Some("git repository data"));
        assert_eq!(
            label("/w/.qwen/hooks/check.sh").as_deref(),
            Some("hook scripts")
        );
        assert_eq!(
            label("/w/.claude/settings.local.json").as_deref(),
            Some("Claude Code configuration")
        );
        assert_eq!(
            label("/w/.Claude/hooks/x.py").as_deref(),
            Some("hook scripts")
        );
        assert_eq!(
            label("/w/sub/.qwen/other").as_deref(),
            Some("toolbelt configuration")
        );
    }

    #[test]
    fn ordinary_files_and_look_alikes_are_not() {
        for path in [
            "/w/src/main.rs",
            "/w/QWEN.md",
            "/w/AGENTS.md",
            "/w/.qwenignore",
            "/w/.gitignore",
            "/w/.github/workflows/ci.yml",
            "/w/my.qwen/x",
            "/w/.git2/hooks",
            "/w/.claudeignore",
        ] {
            assert_eq!(label(path), None, "{path}");
        }
    }

    #[test]
    fn an_added_path_covers_what_is_under_it_and_names_itself() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("tbhome");
        let mut protected = ProtectedPaths::default();
        protected.add(&home, "toolbelt's own files", "saved sessions");
        let real = dir.path().canonicalize().unwrap().join("tbhome/sessions/x");
        let p = protected.protection(&real).unwrap();
        assert_eq!(p.label, "toolbelt's own files");
        assert_eq!(p.marker, "tbhome");
        assert!(
            protected
                .protection(&dir.path().canonicalize().unwrap().join("tbhome2"))
                .is_none()
        );
    }
}
