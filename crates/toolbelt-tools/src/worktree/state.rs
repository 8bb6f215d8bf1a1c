//! What a session knows of its worktrees, shared by `enter_worktree`, `exit_worktree`
//! and the session: the one it was started in (`--worktree`, or re-attached by
//! `--resume`), the one a tool entered, and the ones it made (the only ones
//! `exit_worktree remove` may remove), and the session's hooks, told of every worktree
//! made or removed (`WorktreeCreate`, `WorktreeRemove`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolbelt_engine::{hooks::HookEvent, hooks::HookRequest, hooks::HookRunner};

use super::Worktree;

/// A session's worktrees. One per session, behind an `Arc` both tools hold.
#[derive(Default)]
pub struct SessionWorktrees {
    started_in: Option<Worktree>,
    inner: Mutex<Inner>,
    hooks: OnceLock<Arc<dyn HookRunner>>,
}

impl std::fmt::Debug for SessionWorktrees {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionWorktrees")
            .field("started_in", &self.started_in)
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
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
            hooks: OnceLock::new(),
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

impl SessionWorktrees {
    /// The session's hooks, once they exist (a second call is ignored).
    pub fn set_hooks(&self, hooks: Arc<dyn HookRunner>) {
        let _ = self.hooks.set(hooks);
    }

    /// Runs the hooks of `event` (`WorktreeCreate` or `WorktreeRemove`) for `worktree`:
    /// they are told (`worktree_path`, `branch`, `name`, `repository`; the name is what
    /// matchers compare), and nothing they answer changes what was done.
    pub async fn announce(&self, event: HookEvent, worktree: &Worktree) {
        let Some(hooks) = self.hooks.get() else {
            return;
        };
        if !hooks.wants(event, Some(&worktree.slug), &[]) {
            return;
        }
        let mut request = HookRequest::new(event);
        request.target = Some(worktree.slug.clone());
        request.nobody_to_ask = true;
        let text = |p: &Path| Value::String(p.display().to_string());
        request
            .fields
            .insert("name".into(), Value::String(worktree.slug.clone()));
        request
            .fields
            .insert("worktree_path".into(), text(&worktree.path));
        request
            .fields
            .insert("branch".into(), Value::String(worktree.branch.clone()));
        request
            .fields
            .insert("repository".into(), text(&worktree.repo));
        let outcome = hooks.run(request, CancellationToken::new()).await;
        for message in outcome.messages(event) {
            tracing::info!("{message}");
        }
    }
}
