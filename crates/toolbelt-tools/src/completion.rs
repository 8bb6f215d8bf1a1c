//! Completion for `@path` in the interactive editor: the workspace's files as the file
//! tools see them (the one walker: ignore files, `.git` left out, links not followed,
//! paths the read rules withhold left out), listed once and ranked per keystroke.
//!
//! Listing is the slow part, so [`PathIndex::build`] runs once (the UI runs it off the
//! input thread and rebuilds when it is older than it likes) and stops at
//! [`MAX_PATHS`]; ranking a prefix against the list is a single pass with no allocation
//! per path that does not match, a few milliseconds for the full list.

use std::path::Path;
use std::time::Instant;

use toolbelt_core::ToolEnvironment;

use crate::walk::{self, IgnoreRules, Withheld};

/// The most paths indexed; a larger tree is cut (and [`PathIndex::truncated`] says so).
pub const MAX_PATHS: usize = 100_000;

/// The workspace's paths, relative to their root (directories end with `/`); paths in
/// a second root are absolute.
#[derive(Debug, Clone)]
pub struct PathIndex {
    paths: Vec<String>,
    /// The same paths with ASCII letters folded, so a keystroke allocates nothing per path.
    folded: Vec<String>,
    truncated: bool,
    built_at: Instant,
}

impl PathIndex {
    /// Walks every workspace root of `env` with the session's ignore settings and path
    /// rules.
    pub fn build(env: &ToolEnvironment) -> PathIndex {
        let rules = IgnoreRules::from_settings(&env.settings);
        let withheld = Withheld::new(&env.roots);
        let mut paths = Vec::new();
        let mut truncated = false;
        let primary = env.roots.primary().map(Path::to_path_buf);
        'roots: for root in env.roots.roots() {
            let relative_to = (Some(root.as_path()) == primary.as_deref()).then_some(root);
            for entry in walk::walker(root, rules, &withheld).build().flatten() {
                if entry.depth() == 0 {
                    continue;
                }
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                if !is_dir && !walk::is_regular_file(&entry) {
                    continue;
                }
                let shown = match relative_to {
                    Some(base) => entry.path().strip_prefix(base).unwrap_or(entry.path()),
                    None => entry.path(),
                };
                let Some(text) = shown.to_str() else {
                    continue; // not UTF-8: cannot be typed after `@`
                };
                if paths.len() == MAX_PATHS {
                    truncated = true;
                    break 'roots;
                }
                paths.push(if is_dir {
                    format!("{text}/")
                } else {
                    text.to_string()
                });
            }
        }
        paths.sort_unstable();
        PathIndex {
            folded: paths.iter().map(|p| p.to_ascii_lowercase()).collect(),
            paths,
            truncated,
            built_at: Instant::now(),
        }
    }

    /// An index of the given paths (for tests and embedders with a list of their own).
    pub fn from_paths(mut paths: Vec<String>) -> PathIndex {
        paths.sort_unstable();
        PathIndex {
            folded: paths.iter().map(|p| p.to_ascii_lowercase()).collect(),
            paths,
            truncated: false,
            built_at: Instant::now(),
        }
    }

    /// Every path indexed, sorted.
    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    /// Whether the tree had more than [`MAX_PATHS`] paths.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// How old the list is (the UI rebuilds it after a while, or after a write).
    pub fn age(&self) -> std::time::Duration {
        self.built_at.elapsed()
    }

    /// Up to `limit` paths for the text typed after `@`, best first: the path starts
    /// with it, then its file name does, then it contains it, then its characters
    /// appear in order (closer together ranks higher). Case matters only when
    /// `typed` has an upper-case letter. Shorter paths first within a tier.
    pub fn complete(&self, typed: &str, limit: usize) -> Vec<String> {
        let smart_case = typed.chars().any(char::is_uppercase);
        let folded_typed = typed.to_ascii_lowercase();
        let mut scored: Vec<(u32, usize, &str)> = self
            .paths
            .iter()
            .zip(&self.folded)
            .filter_map(|(p, f)| {
                let s = if smart_case {
                    score_exact(p, typed)
                } else {
                    score_exact(f, &folded_typed)
                };
                s.map(|s| (s, p.len(), p.as_str()))
            })
            .collect();
        let limit = limit.min(scored.len());
        if limit == 0 {
            return Vec::new();
        }
        scored.select_nth_unstable(limit - 1);
        scored.truncate(limit);
        scored.sort_unstable();
        scored.into_iter().map(|(_, _, p)| p.to_string()).collect()
    }
}

/// How well `candidate` matches `typed` (lower is better), `None` when it does not.
/// Case matters only when `typed` has an upper-case letter. Shared by `@path` and the
/// UI's other completions (`#tool`).
pub fn score(candidate: &str, typed: &str) -> Option<u32> {
    if typed.chars().any(char::is_uppercase) {
        score_exact(candidate, typed)
    } else {
        score_exact(&candidate.to_ascii_lowercase(), typed)
    }
}

/// [`score`] with case already settled by the caller (both sides folded, or neither).
fn score_exact(candidate: &str, typed: &str) -> Option<u32> {
    if typed.is_empty() || candidate.starts_with(typed) {
        return Some(0);
    }
    let name_start = candidate
        .trim_end_matches('/')
        .rfind('/')
        .map(|i| i + 1)
        .unwrap_or(0);
    if candidate[name_start..].starts_with(typed) {
        return Some(1);
    }
    if candidate.contains(typed) {
        return Some(2);
    }
    // Subsequence: each typed byte in order; the gaps between them cost.
    let mut gaps = 0u32;
    let mut hay = candidate.bytes();
    for t in typed.bytes() {
        let mut skipped = 0u32;
        loop {
            match hay.next() {
                Some(c) if c == t => break,
                Some(_) => skipped += 1,
                None => return None,
            }
        }
        gaps = gaps.saturating_add(skipped.min(20));
    }
    Some(3 + gaps)
}

#[cfg(test)]
mod tests;
