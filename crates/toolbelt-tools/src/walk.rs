//! One way to walk the workspace, shared by every listing and search tool.
//!
//! Ignore rules are applied *while* walking (the `ignore` crate), so an ignored
//! directory such as `node_modules` is never entered. Qwen Code filtered afterwards and
//! paid for every file under it (its issue #6121). The rules:
//!
//! - `.gitignore` files, `.git/info/exclude` and the global excludes file
//!   (`core.excludesFile`), when `respect_git_ignore` is on. They apply even outside a
//!   git repository: a `.gitignore` says what the person does not want looked at.
//! - `.qwenignore` files (same syntax), when `respect_qwen_ignore` is on.
//! - The `.git` directory itself is never walked.
//!
//! Hidden files are walked (models ask for `.github/**`), symbolic links are not
//! followed (a link out of the workspace would leak it), and only regular files are
//! reported as files: FIFOs and devices would block or never end.

use std::path::Path;

use ignore::WalkBuilder;
use toolbelt_core::settings::Settings;

/// The custom ignore file Qwen Code reads besides `.gitignore`.
pub const QWEN_IGNORE: &str = ".qwenignore";

/// Which ignore files apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IgnoreRules {
    pub respect_git_ignore: bool,
    pub respect_qwen_ignore: bool,
}

impl Default for IgnoreRules {
    fn default() -> Self {
        IgnoreRules {
            respect_git_ignore: true,
            respect_qwen_ignore: true,
        }
    }
}

impl IgnoreRules {
    /// `context.fileFiltering.respectGitIgnore` / `respectQwenIgnore`.
    pub fn from_settings(settings: &Settings) -> Self {
        let f = &settings.context.file_filtering;
        IgnoreRules {
            respect_git_ignore: f.respect_git_ignore,
            respect_qwen_ignore: f.respect_qwen_ignore,
        }
    }

    /// These rules with a call's own overrides applied.
    pub fn with(self, git: Option<bool>, qwen: Option<bool>) -> Self {
        IgnoreRules {
            respect_git_ignore: git.unwrap_or(self.respect_git_ignore),
            respect_qwen_ignore: qwen.unwrap_or(self.respect_qwen_ignore),
        }
    }
}

/// A walker over `root` configured with `rules`. Callers add depth limits or
/// parallelism on the returned builder.
pub fn walker(root: &Path, rules: IgnoreRules) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .standard_filters(false)
        .hidden(false)
        .parents(true)
        .follow_links(false)
        .git_ignore(rules.respect_git_ignore)
        .git_exclude(rules.respect_git_ignore)
        .git_global(rules.respect_git_ignore)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git");
    if rules.respect_qwen_ignore {
        builder.add_custom_ignore_filename(QWEN_IGNORE);
    }
    builder
}

/// Threads for a parallel walk: one per core, as ripgrep does.
pub fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .min(12)
}

/// Whether a walked entry is a regular file (not a link, FIFO, socket or device).
pub fn is_regular_file(entry: &ignore::DirEntry) -> bool {
    entry.file_type().is_some_and(|t| t.is_file())
}

/// The literal leading directories of a glob (`src/app/**/*.rs` → `src/app`), so a walk
/// can start there instead of at the root. Stops at the first component with a glob
/// metacharacter, and never includes the last component (it names files).
pub fn literal_prefix(pattern: &str) -> (String, String) {
    let parts: Vec<&str> = pattern.split('/').collect();
    let mut prefix = Vec::new();
    for part in &parts[..parts.len().saturating_sub(1)] {
        let meta = part.contains(['*', '?', '[', ']', '{', '}', '\\']);
        if part.is_empty() || *part == "." || *part == ".." || meta {
            break;
        }
        prefix.push(*part);
    }
    let rest = parts[prefix.len()..].join("/");
    (prefix.join("/"), rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_prefix_splits_at_the_first_glob_component() {
        let cases = [
            ("src/app/**/*.rs", ("src/app", "**/*.rs")),
            ("**/*.rs", ("", "**/*.rs")),
            ("*.rs", ("", "*.rs")),
            ("src/main.rs", ("src", "main.rs")),
            ("a/b*/c.rs", ("a", "b*/c.rs")),
            ("../x/*.rs", ("", "../x/*.rs")),
            ("src/{a,b}/x.rs", ("src", "{a,b}/x.rs")),
        ];
        for (pattern, (prefix, rest)) in cases {
            assert_eq!(
                literal_prefix(pattern),
                (prefix.to_string(), rest.to_string()),
                "{pattern}"
            );
        }
    }
}
