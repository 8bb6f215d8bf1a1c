//! `enter_worktree` in a real repository: the worktree is made, the shell moves into it.

use std::sync::Arc;

use serde_json::json;
use toolbelt_core::{ExecContext, Tool, ToolResult};

use super::EnterWorktree;
use crate::test_support::{Fixture, err_kind, fixture, git, git_repo};
use crate::worktree::SessionWorktrees;

pub(crate) fn repo_fixture() -> (Fixture, Arc<SessionWorktrees>) {
    let fx = fixture();
    git_repo(&fx.ws());
    (fx, Arc::new(SessionWorktrees::default()))
}

pub(crate) async fn enter(
    fx: &Fixture,
    state: &Arc<SessionWorktrees>,
    args: serde_json::Value,
) -> ToolResult {
    let tool = EnterWorktree::new(fx.env.clone(), state.clone());
    match tool.build(args) {
        Ok(call) => call.execute(ExecContext::new(fx.env.clone())).await,
        Err(e) => ToolResult::error(e),
    }
}

#[tokio::test]
async fn entering_makes_the_worktree_and_moves_the_shell_into_it() {
    let (fx, state) = repo_fixture();
    let result = enter(&fx, &state, json!({"name": "feat"})).await;
    assert!(result.error.is_none(), "{}", result.llm_text());
    let path = fx.ws().join(".qwen/worktrees/feat");
    assert!(
        result.llm_text().contains("branch worktree-feat"),
        "{}",
        result.llm_text()
    );
    assert_eq!(git(&path, &["branch", "--show-current"]), "worktree-feat");
    assert_eq!(fx.env.work_dir.get(), Some(path.clone()));
    assert!(state.made(&path));
    // The shell's default directory is the worktree now.
    let call = fx
        .build("run_shell_command", json!({"command": "pwd"}))
        .unwrap();
    let out = call
        .execute(ExecContext::new(fx.env.clone()).approved())
        .await;
    assert!(
        out.llm_text().contains(&path.display().to_string()),
        "{}",
        out.llm_text()
    );
    // A second one while in the first is refused.
    let again = enter(&fx, &state, json!({})).await;
    assert!(
        again
            .llm_text()
            .contains("already works in the worktree feat")
    );
}

#[tokio::test]
async fn bad_names_and_places_without_a_repository_are_clear_errors() {
    let (fx, state) = repo_fixture();
    for bad in ["../escape", "/abs", "a/b", ".."] {
        let r = enter(&fx, &state, json!({"name": bad})).await;
        assert_eq!(
            err_kind(&r),
            Some(toolbelt_core::ErrorKind::InvalidToolParams),
            "{bad}"
        );
    }
    assert!(!fx.ws().join(".qwen").exists());
    let plain = fixture();
    let r = enter(&plain, &state, json!({"name": "x"})).await;
    assert!(
        r.llm_text().contains("not in a git repository"),
        "{}",
        r.llm_text()
    );
}

#[tokio::test]
async fn an_existing_worktree_is_entered_and_is_not_the_sessions_own() {
    let (fx, state) = repo_fixture();
    let other = crate::worktree::create(
        &fx.ws(),
        &crate::worktree::NameRequest::Named("theirs".into()),
    )
    .unwrap();
    let r = enter(&fx, &state, json!({"name": "theirs"})).await;
    assert!(
        r.llm_text().contains("Entered the existing worktree"),
        "{}",
        r.llm_text()
    );
    assert!(!state.made(&other.path));
}
