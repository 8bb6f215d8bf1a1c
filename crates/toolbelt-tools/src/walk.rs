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

use std::path::{Path, PathBuf};

use ignore::WalkBuilder;
use toolbelt_core::settings::Settings;
use toolbelt_core::{ToolError, WorkspaceRoots};

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
/// metacharacter, and never includes the last component (it names files). `.` and empty
/// components are dropped; `..` is kept in the prefix, where [`glob_start`] resolves it
/// like any path (so `../*` is outside the workspace rather than matching nothing).
pub fn literal_prefix(pattern: &str) -> (String, String) {
    let parts: Vec<&str> = pattern.split('/').collect();
    let mut prefix = Vec::new();
    let mut taken = 0;
    for part in &parts[..parts.len().saturating_sub(1)] {
        if part.contains(['*', '?', '[', ']', '{', '}', '\\']) {
            break;
        }
        taken += 1;
        if !part.is_empty() && *part != "." {
            prefix.push(*part);
        }
    }
    let rest = parts[taken..].join("/");
    (prefix.join("/"), rest)
}

/// Where the walk for a glob starts, and the part of the pattern matched below it.
///
/// The pattern is relative to `base` unless it is absolute. Its literal leading
/// directories are resolved like any path the model gives, through
/// [`WorkspaceRoots::resolve_readable`]: `..` and symbolic links are resolved *before*
/// containment is checked. This is what keeps a walk inside the roots: the walker never
/// follows a link it meets, but it does enter the directory it is started on, so
/// `etc_link/pass*` (with `etc_link` → `/etc`) must fail here, with the same
/// "outside the workspace" error as `read_file` gives. A `..` after the first wildcard
/// could only be matched by leaving the walked tree; it is refused.
pub fn glob_start(
    roots: &WorkspaceRoots,
    base: &Path,
    pattern: &str,
) -> Result<(PathBuf, String), ToolError> {
    let (absolute, relative) = match pattern.strip_prefix('/') {
        Some(rest) => (true, rest),
        None => (false, pattern),
    };
    let (prefix, rest) = literal_prefix(relative);
    if rest.split('/').any(|part| part == "..") {
        return Err(ToolError::invalid_params(format!(
            "'..' may only come before the first wildcard of a pattern, not in '{rest}'."
        )));
    }
    let joined = if absolute {
        PathBuf::from(format!("/{prefix}"))
    } else {
        base.join(&prefix)
    };
    let Some(joined) = joined.to_str() else {
        return Err(ToolError::invalid_params(
            "the pattern's directory is not valid UTF-8.",
        ));
    };
    let start = roots.resolve_readable(joined)?;
    Ok((start, rest))
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
            ("../x/*.rs", ("../x", "*.rs")),
            ("./src//*.rs", ("src", "*.rs")),
            ("a/../b*/c", ("a/..", "b*/c")),
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
