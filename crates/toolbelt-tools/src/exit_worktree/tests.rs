//! Every guard of `exit_worktree remove`, with real git.

use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolbelt_core::{Answer, AskUser, Question};
use toolbelt_core::{BoxFuture, ErrorKind, ExecContext, Tool, ToolResult};

use super::ExitWorktree;
use crate::enter_worktree::tests::{enter, repo_fixture};
use crate::test_support::{Fixture, err_kind, git};
use crate::worktree::SessionWorktrees;

async fn exit(fx: &Fixture, state: &Arc<SessionWorktrees>, args: serde_json::Value) -> ToolResult {
    let tool = ExitWorktree::new(fx.env.clone(), state.clone());
    match tool.build(args) {
        Ok(call) => {
            call.execute(ExecContext::new(fx.env.clone()).approved())
                .await
        }
        Err(e) => ToolResult::error(e),
    }
}

/// A person who picks `label` to every question, and counts them.
struct Picks(&'static str, std::sync::atomic::AtomicUsize);

impl AskUser for Picks {
    fn ask<'a>(
        &'a self,
        questions: &'a [Question],
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<Answer>, toolbelt_core::EmbedderError>> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let answers = questions
            .iter()
            .map(|_| Answer::Chosen(vec![self.0.to_string()]))
            .collect();
        Box::pin(async move { Ok(answers) })
    }
}

fn feat(fx: &Fixture) -> std::path::PathBuf {
    fx.ws().join(".qwen/worktrees/feat")
}

#[tokio::test]
async fn keep_leaves_the_worktree_and_moves_the_shell_back() {
    let (fx, state) = repo_fixture();
    enter(&fx, &state, json!({"name": "feat"})).await;
    let r = exit(&fx, &state, json!({"action": "keep"})).await;
    assert!(r.error.is_none(), "{}", r.llm_text());
    assert!(feat(&fx).is_dir());
    assert_eq!(fx.env.work_dir.get(), None);
    let r = exit(&fx, &state, json!({"action": "keep"})).await;
    assert!(
        r.llm_text().contains("not in a worktree"),
        "{}",
        r.llm_text()
    );
}

#[tokio::test]
async fn remove_deletes_a_clean_worktree_and_its_branch() {
    let (fx, state) = repo_fixture();
    enter(&fx, &state, json!({"name": "feat"})).await;
    let r = exit(&fx, &state, json!({"action": "remove"})).await;
    assert!(r.error.is_none(), "{}", r.llm_text());
    assert!(!feat(&fx).exists());
    assert!(git(&fx.ws(), &["branch", "--list", "worktree-feat"]).is_empty());
    assert_eq!(fx.env.work_dir.get(), None);
}

#[tokio::test]
async fn remove_refuses_a_worktree_another_session_made() {
    let (fx, state) = repo_fixture();
    crate::worktree::create(
        &fx.ws(),
        &crate::worktree::NameRequest::Named("feat".into()),
    )
    .unwrap();
    enter(&fx, &state, json!({"name": "feat"})).await;
    let r = exit(&fx, &state, json!({"action": "remove"})).await;
    assert!(
        r.llm_text().contains("not created by this session"),
        "{}",
        r.llm_text()
    );
    assert!(feat(&fx).is_dir());
}

#[tokio::test]
async fn uncommitted_changes_are_discarded_only_when_the_person_agrees() {
    let (fx, state) = repo_fixture();
    enter(&fx, &state, json!({"name": "feat"})).await;
    std::fs::write(feat(&fx).join("draft.txt"), "x").unwrap();
    let r = exit(&fx, &state, json!({"action": "remove"})).await;
    assert!(
        r.llm_text().contains("1 uncommitted file"),
        "{}",
        r.llm_text()
    );
    // Nobody to ask (headless): refused, even though the call itself was approved.
    let r = exit(
        &fx,
        &state,
        json!({"action": "remove", "discard_changes": true}),
    )
    .await;
    assert_eq!(
        err_kind(&r),
        Some(ErrorKind::ExecutionDenied),
        "{}",
        r.llm_text()
    );
    assert!(feat(&fx).join("draft.txt").is_file());
    let keep = Arc::new(Picks("Keep", Default::default()));
    let mut env = (*fx.env).clone();
    env.ask_user = Default::default();
    env.ask_user.set(keep.clone());
    let asking = fx.with_env(env);
    let r = exit(
        &asking,
        &state,
        json!({"action": "remove", "discard_changes": true}),
    )
    .await;
    assert_eq!(
        err_kind(&r),
        Some(ErrorKind::ExecutionDenied),
        "{}",
        r.llm_text()
    );
    assert_eq!(keep.1.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(feat(&asking).join("draft.txt").is_file());
    let discard = Arc::new(Picks("Discard", Default::default()));
    let mut env = (*asking.env).clone();
    env.ask_user = Default::default();
    env.ask_user.set(discard.clone());
    let agreeing = asking.with_env(env);
    let r = exit(
        &agreeing,
        &state,
        json!({"action": "remove", "discard_changes": true}),
    )
    .await;
    assert!(r.error.is_none(), "{}", r.llm_text());
    assert!(
        r.llm_text().contains("discarding 1 uncommitted file"),
        "{}",
        r.llm_text()
    );
    assert!(!feat(&agreeing).exists());
}

#[tokio::test]
async fn commits_held_nowhere_else_are_never_removed_and_nobody_is_asked() {
    let (fx, state) = repo_fixture();
    enter(&fx, &state, json!({"name": "feat"})).await;
    let wt = feat(&fx);
    std::fs::write(wt.join("work.txt"), "x").unwrap();
    git(&wt, &["add", "work.txt"]);
    git(&wt, &["commit", "-q", "-m", "work"]);
    std::fs::write(wt.join("more.txt"), "y").unwrap();
    let picks = Arc::new(Picks("Discard", Default::default()));
    let mut env = (*fx.env).clone();
    env.ask_user = Default::default();
    env.ask_user.set(picks.clone());
    let fx = fx.with_env(env);
    let r = exit(
        &fx,
        &state,
        json!({"action": "remove", "discard_changes": true}),
    )
    .await;
    assert!(
        r.llm_text().contains("1 commit(s) that no other branch"),
        "{}",
        r.llm_text()
    );
    assert_eq!(picks.1.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert!(wt.join("work.txt").is_file());
    let r = exit(
        &fx,
        &state,
        json!({"action": "keep", "discard_changes": true}),
    )
    .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::InvalidToolParams));
}
