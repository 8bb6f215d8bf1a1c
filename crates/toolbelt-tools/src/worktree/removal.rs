//! Removing a worktree, and the guards that keep work from being lost with it.
//!
//! `exit_worktree remove` and `toolbelt worktree remove` refuse a worktree another
//! session made, one with uncommitted changes unless the caller discards them (the
//! tool asks the person first), and one whose branch holds commits no other branch or
//! remote holds (no override: merge, push or branch them first). The sub-agent cleanup
//! removes only a worktree with no change at all, and the start-up sweep only an old
//! sub-agent worktree with nothing uncommitted and nothing unpushed; any git error keeps
//! the worktree.

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::git_cmd::git;
use super::{Worktree, WorktreeError, is_agent_slug, list};

/// What removing a worktree would throw away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Changes {
    /// Files changed, added or untracked in it.
    pub uncommitted: usize,
    /// Commits on its branch that no other branch and no remote holds.
    pub unique_commits: usize,
}

impl Changes {
    /// Nothing would be lost.
    pub fn is_empty(&self) -> bool {
        self.uncommitted == 0 && self.unique_commits == 0
    }
}

/// What a worktree holds that exists nowhere else.
pub fn changes(worktree: &Worktree) -> Result<Changes, WorktreeError> {
    let status = git(
        &worktree.path,
        &["status", "--porcelain=v1", "--untracked-files=all"],
    )?;
    let exclude = format!("--exclude={}", worktree.branch);
    let unique = git(
        &worktree.path,
        &[
            "rev-list",
            "--count",
            "HEAD",
            "--not",
            &exclude,
            "--branches",
            "--remotes",
        ],
    )?;
    Ok(Changes {
        uncommitted: status.lines().filter(|l| !l.trim().is_empty()).count(),
        unique_commits: unique.trim().parse().unwrap_or(usize::MAX),
    })
}

/// Why a removal was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// Another session made it.
    #[error(
        "the worktree {0:?} was not created by this session; it is left as it is (remove it with `toolbelt worktree remove {0}` or `git worktree remove`)"
    )]
    NotOurs(String),
    /// Uncommitted changes, and no leave to discard them.
    #[error(
        "the worktree {0:?} has {1} uncommitted file(s): commit them, or remove with discard_changes (the user is asked to confirm)"
    )]
    Uncommitted(String, usize),
    /// Commits held nowhere else.
    #[error(
        "the branch {0} holds {1} commit(s) that no other branch or remote holds: merge, push or branch them first (this cannot be overridden)"
    )]
    UniqueCommits(String, usize),
    /// git failed, so nothing was removed.
    #[error("{0}")]
    Git(#[from] WorktreeError),
}

/// Removes `worktree` and its branch after the guards: `own` says whether the caller
/// made it, `discard_changes` whether its uncommitted changes may go (the caller asked
/// the person). The answer is what was thrown away.
pub fn remove_guarded(
    worktree: &Worktree,
    own: bool,
    discard_changes: bool,
) -> Result<Changes, Refusal> {
    if !own {
        return Err(Refusal::NotOurs(worktree.slug.clone()));
    }
    let changes = changes(worktree)?;
    if changes.unique_commits > 0 {
        return Err(Refusal::UniqueCommits(
            worktree.branch.clone(),
            changes.unique_commits,
        ));
    }
    if changes.uncommitted > 0 && !discard_changes {
        return Err(Refusal::Uncommitted(
            worktree.slug.clone(),
            changes.uncommitted,
        ));
    }
    remove(worktree)?;
    Ok(changes)
}

/// Removes a worktree that holds no change at all (a sub-agent's that changed nothing);
/// `Ok(false)` when it holds one and was kept.
pub fn remove_if_unchanged(worktree: &Worktree) -> Result<bool, WorktreeError> {
    if !changes(worktree)?.is_empty() {
        return Ok(false);
    }
    remove(worktree)?;
    Ok(true)
}

/// Removes a worktree and its branch whatever they hold: for a person who chose so with
/// what would be lost in front of them (the interactive quit question).
pub fn remove_discarding(worktree: &Worktree) -> Result<(), WorktreeError> {
    remove(worktree)
}

/// `git worktree remove --force` and `git branch -D`: the guards were passed.
fn remove(worktree: &Worktree) -> Result<(), WorktreeError> {
    let path = worktree.path.to_string_lossy().into_owned();
    git(&worktree.repo, &["worktree", "remove", "--force", &path])?;
    if !worktree.branch.is_empty() {
        git(
            &worktree.repo,
            &["branch", "-D", "--quiet", &worktree.branch],
        )?;
    }
    Ok(())
}

/// How old a sub-agent's worktree must be before the start-up sweep removes it.
pub const STALE_AFTER: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// The start-up sweep: removes the sub-agent worktrees (`agent-<7 hex>`) of the
/// repository around `dir` whose folder was last changed more than `older_than` ago and
/// that hold no uncommitted change and no commit that no remote holds. Anything in
/// doubt (a git error, an unreadable time) is kept. The answer names what was removed.
pub fn sweep_stale(dir: &Path, older_than: Duration) -> Vec<Worktree> {
    let Ok(worktrees) = list(dir) else {
        return Vec::new();
    };
    let now = SystemTime::now();
    let mut removed = Vec::new();
    for worktree in worktrees {
        if !is_agent_slug(&worktree.slug) {
            continue;
        }
        let old = std::fs::metadata(&worktree.path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age > older_than);
        if old && holds_nothing_unpushed(&worktree) && remove(&worktree).is_ok() {
            removed.push(worktree);
        }
    }
    removed
}

/// No uncommitted change and no commit that no remote holds; `false` on any error.
fn holds_nothing_unpushed(worktree: &Worktree) -> bool {
    let clean = git(
        &worktree.path,
        &["status", "--porcelain=v1", "--untracked-files=all"],
    )
    .is_ok_and(|s| s.trim().is_empty());
    let pushed = git(
        &worktree.path,
        &["rev-list", "--count", "HEAD", "--not", "--remotes"],
    )
    .is_ok_and(|n| n.trim() == "0");
    clean && pushed
}
