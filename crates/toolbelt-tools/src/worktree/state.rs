//! What a session knows of its worktrees, shared by `enter_worktree`, `exit_worktree`
//! and the session: the one it was started in (`--worktree`, or re-attached by
//! `--resume`), the one a tool entered, and the ones it made (the only ones
//! `exit_worktree remove` may remove).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::Worktree;

/// A session's worktrees. One per session, behind an `Arc` both tools hold.
#[derive(Debug, Default)]
pub struct SessionWorktrees {
    started_in: Option<Worktree>,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entered: Option<Worktree>,
    own: Vec<PathBuf>,
}

impl SessionWorktrees {
    /// A session in its own checkout, or started in `started_in` (which it made, or
    /// made in an earlier run it resumes: `own` says which).
    pub fn new(started_in: Option<Worktree>, own: bool) -> Self {
        let mut inner = Inner::default();
        if let (Some(w), true) = (&started_in, own) {
            inner.own.push(w.path.clone());
        }
        SessionWorktrees {
            started_in,
            inner: Mutex::new(inner),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The worktree the session was started in.
    pub fn started_in(&self) -> Option<&Worktree> {
        self.started_in.as_ref()
    }

    /// The worktree a tool entered, if any.
    pub fn entered(&self) -> Option<Worktree> {
        self.lock().entered.clone()
    }

    /// The worktree the session works in now: the entered one, else the starting one.
    pub fn active(&self) -> Option<Worktree> {
        self.entered().or_else(|| self.started_in.clone())
    }

    /// Records entering `worktree`; `made` when this session created it.
    pub fn enter(&self, worktree: Worktree, made: bool) {
        let mut inner = self.lock();
        if made {
            inner.own.push(worktree.path.clone());
        }
        inner.entered = Some(worktree);
    }

    /// Records leaving the entered worktree.
    pub fn leave(&self) -> Option<Worktree> {
        self.lock().entered.take()
    }

    /// Whether this session made the worktree at `path`.
    pub fn made(&self, path: &Path) -> bool {
        self.lock().own.iter().any(|p| p == path)
    }
}
