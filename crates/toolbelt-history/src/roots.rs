//! Which directories a checkpoint covers (issue 45): the workspace roots, or, while the
//! session works in a git worktree it entered (`enter_worktree`, told through core's
//! `WorkDirSlot`), that worktree alone, as a session started with `--worktree` covers
//! only its worktree. A worktree lives under `.qwen/worktrees/<slug>` of the checkout,
//! which the checkout's walk leaves out (git ignores it there), so without this its
//! files were in no checkpoint; and a restore of work done in a worktree never writes
//! to the person's checkout, because the checkout is not in that checkpoint.
//!
//! A restore covers the roots its checkpoint recorded ([`Shared::pinned_roots`]), so
//! `toolbelt restore` from the checkout, or `/restore` after `exit_worktree`, puts the
//! worktree's files back. The index of a root set aside is kept, so going back to it
//! reads only what changed.

use std::path::{Path, PathBuf};

use crate::history::{RootIndex, Shared, State};
use crate::index::DirNode;
use crate::record::Record;

/// The root of the git worktree `dir` is in (`<checkout>/.qwen/worktrees/<slug>`), the
/// innermost one when worktrees are nested.
fn worktree_root(dir: &Path) -> Option<&Path> {
    dir.ancestors().find(|a| {
        let parent = a.parent();
        parent.and_then(Path::file_name) == Some("worktrees".as_ref())
            && parent.and_then(Path::parent).and_then(Path::file_name) == Some(".qwen".as_ref())
    })
}

impl Shared {
    /// A worktree root the session may cover: inside a workspace root (so the path
    /// rules apply) and a real directory now.
    fn usable_worktree(&self, dir: &Path) -> Option<PathBuf> {
        let root = worktree_root(dir)?;
        let inside = self
            .config
            .roots
            .roots()
            .iter()
            .any(|r| root.starts_with(r));
        let is_dir = std::fs::symlink_metadata(root).is_ok_and(|m| m.is_dir());
        (inside && is_dir).then(|| root.to_path_buf())
    }

    /// The roots checkpoints cover now: the worktree the session works in, else the
    /// workspace's.
    pub(crate) fn wanted_roots(&self) -> Vec<PathBuf> {
        match self.config.work_dir.get() {
            Some(dir) => match self.usable_worktree(&dir) {
                Some(root) => vec![root],
                None => self.workspace_roots(),
            },
            None => self.workspace_roots(),
        }
    }

    /// The workspace roots, each once, none inside another.
    pub(crate) fn workspace_roots(&self) -> Vec<PathBuf> {
        let all = self.config.roots.roots();
        all.iter()
            .filter(|r| !all.iter().any(|o| o != *r && r.starts_with(o)))
            .cloned()
            .collect()
    }

    /// The roots a restore of `record` works on: those it recorded that are workspace
    /// roots or worktrees still there; the others are the plan's missing roots.
    pub(crate) fn pinned_roots(&self, record: &Record) -> Vec<PathBuf> {
        let workspace = self.workspace_roots();
        let roots: Vec<PathBuf> = record
            .roots
            .iter()
            .map(|t| t.path.clone())
            .filter(|p| workspace.contains(p) || self.usable_worktree(p).as_ref() == Some(p))
            .collect();
        if roots.is_empty() {
            self.wanted_roots()
        } else {
            roots
        }
    }

    /// The directories no walk enters: the configured ones and every root's
    /// `.qwen/worktrees`, whose worktrees are checkpointed as roots of their own (git
    /// ignores them in the checkout, but the ignore rules may be off).
    pub(crate) fn excluded(&self, roots: &[RootIndex]) -> Vec<PathBuf> {
        let mut out = self.config.exclude.clone();
        out.extend(roots.iter().map(|r| r.path.join(".qwen").join("worktrees")));
        out
    }

    /// Makes `wanted` the indexed roots, setting aside the others' indexes in
    /// `state.parked`; true when the set changed (the caller walks every root again, by
    /// stat, and the watcher starts over).
    pub(crate) fn place_roots(&self, state: &mut State, wanted: &[PathBuf]) -> bool {
        if state.roots.iter().map(|r| &r.path).eq(wanted.iter()) {
            return false;
        }
        // Files read too close to their last change are read again at the next walk
        // (`recent`, by root number); they follow their root to its new number.
        let mut racy: Vec<(PathBuf, Vec<u8>)> = state
            .recent
            .drain()
            .filter_map(|(i, rel)| Some((state.roots.get(i)?.path.clone(), rel)))
            .collect();
        racy.append(&mut state.parked_recent);
        state.parked.append(&mut state.roots);
        for path in wanted {
            let index = match state.parked.iter().position(|r| &r.path == path) {
                Some(i) => state.parked.remove(i),
                None => RootIndex {
                    path: path.clone(),
                    tree: DirNode::new(0o755),
                    rules: None,
                    since_ns: None,
                },
            };
            state.roots.push(index);
        }
        for (path, rel) in racy {
            match state.roots.iter().position(|r| r.path == path) {
                Some(i) => {
                    state.recent.insert((i, rel));
                }
                None => state.parked_recent.push((path, rel)),
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worktree_root_is_the_folder_under_qwen_worktrees() {
        let cases = [
            ("/w/.qwen/worktrees/feat", Some("/w/.qwen/worktrees/feat")),
            (
                "/w/.qwen/worktrees/feat/src/a",
                Some("/w/.qwen/worktrees/feat"),
            ),
            (
                "/w/.qwen/worktrees/a/.qwen/worktrees/b/x",
                Some("/w/.qwen/worktrees/a/.qwen/worktrees/b"),
            ),
            ("/w/.qwen/worktrees", None),
            ("/w/src/worktrees/feat", None),
            ("/w", None),
        ];
        for (dir, want) in cases {
            assert_eq!(worktree_root(Path::new(dir)), want.map(Path::new), "{dir}");
        }
    }
}
