//! `exit_worktree`: the model leaves the worktree `enter_worktree` put it in, keeping it
//! (the branch waits for the person to merge) or removing it with its branch.
//!
//! Removal passes the guards of [`crate::worktree::removal`]: only a worktree this
//! session made, no commit that exists nowhere else (no override), and no uncommitted
//! change unless `discard_changes` is set, which is asked of the person by this tool
//! itself, through the session's question slot, so neither yolo nor an allow rule can
//! answer it; with nobody to ask it is refused.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolbelt_core::{Answer, Question, QuestionOption};
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ErrorKind, ExecContext, Invocation, Kind, Tool,
    ToolEnvironment, ToolError, ToolResult,
};
use toolbelt_engine::hooks::HookEvent;

use crate::worktree::removal;
use crate::worktree::{SessionWorktrees, Worktree};

/// The `exit_worktree` tool.
pub struct ExitWorktree {
    env: Arc<ToolEnvironment>,
    state: Arc<SessionWorktrees>,
    schema: Value,
}

impl ExitWorktree {
    /// The tool's name.
    pub const NAME: &'static str = "exit_worktree";

    /// The tool over a session's environment and worktrees.
    pub fn new(env: Arc<ToolEnvironment>, state: Arc<SessionWorktrees>) -> Self {
        let schema = crate::params::schema_for::<Params>();
        ExitWorktree { env, state, schema }
    }
}

/// What to do with the worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Action {
    /// Leave it and its branch for the user.
    Keep,
    /// Delete it and its branch.
    Remove,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(
        description = "keep: leave the worktree and its branch for the user to merge. remove: delete the worktree and its branch (refused when its commits exist nowhere else)."
    )]
    action: Action,
    #[schemars(
        description = "With remove: discard uncommitted changes in the worktree. The user is always asked to confirm."
    )]
    discard_changes: Option<bool>,
}

impl Tool for ExitWorktree {
    fn name(&self) -> &str {
        Self::NAME
    }
    fn display_name(&self) -> &str {
        "ExitWorktree"
    }
    fn description(&self) -> &str {
        "Leaves the worktree entered with enter_worktree: shell commands run in the workspace again. \
         action keep leaves the worktree and its branch for the user; remove deletes both, and is refused for a \
         worktree another session made, for commits that exist on no other branch or remote, and for uncommitted \
         changes unless discard_changes is true (the user is then asked). Use it only when the user asks for worktrees."
    }
    fn kind(&self) -> Kind {
        Kind::Other
    }
    fn needs_confirmation(&self) -> bool {
        true
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        let discard = params.discard_changes.unwrap_or(false);
        if discard && params.action == Action::Keep {
            return Err(ToolError::invalid_params(
                "discard_changes goes with action remove only",
            ));
        }
        Ok(Box::new(ExitCall {
            env: self.env.clone(),
            state: self.state.clone(),
            action: params.action,
            discard,
        }))
    }
}

struct ExitCall {
    env: Arc<ToolEnvironment>,
    state: Arc<SessionWorktrees>,
    action: Action,
    discard: bool,
}

impl Invocation for ExitCall {
    fn describe(&self) -> String {
        let which = self
            .state
            .active()
            .map_or_else(|| "the worktree".to_string(), |w| w.slug);
        match self.action {
            Action::Keep => format!("Leave {which}, keeping it"),
            Action::Remove if self.discard => {
                format!("Remove {which} and its branch, discarding uncommitted changes")
            }
            Action::Remove => format!("Remove {which} and its branch"),
        }
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async move {
            (self.action == Action::Remove).then(|| ConfirmationDetails::Info {
                title: "Remove the worktree?".to_string(),
                prompt: self.describe(),
                urls: Vec::new(),
            })
        })
    }

    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            match self.run(&ctx).await {
                Ok(text) => ToolResult::text(text),
                Err((kind, why)) => ToolResult::err(kind, why),
            }
        })
    }
}

type Failure = (ErrorKind, String);

impl ExitCall {
    async fn run(&self, ctx: &ExecContext) -> Result<String, Failure> {
        let failed = |why: String| (ErrorKind::ExecutionFailed, why);
        let Some(w) = self.state.entered() else {
            return match (self.state.started_in(), self.action) {
                (Some(w), Action::Keep) => Ok(format!(
                    "This session was started in the worktree {} ({}, branch {}) and keeps working there.",
                    w.slug,
                    w.path.display(),
                    w.branch
                )),
                (Some(w), Action::Remove) => Err(failed(format!(
                    "this session was started in the worktree {} and works in it until it ends; the user can remove it \
                     afterwards with `toolbelt worktree remove {}`",
                    w.slug, w.slug
                ))),
                (None, _) => Err(failed(
                    "this session is not in a worktree (enter one with enter_worktree)".to_string(),
                )),
            };
        };
        if self.action == Action::Keep {
            self.leave();
            let changes = blocking(w.clone(), |w| {
                removal::changes(&w).map_err(|e| e.to_string())
            })
            .await
            .unwrap_or_default();
            return Ok(format!(
                "Left the worktree {} and kept it at {} (branch {}: {} commit(s) of its own, {} uncommitted file(s)). \
                 Shell commands run in the workspace again.",
                w.slug,
                w.path.display(),
                w.branch,
                changes.unique_commits,
                changes.uncommitted
            ));
        }
        let own = self.state.made(&w.path);
        if self.discard && own {
            // Asked only when the removal would otherwise go ahead: never a question
            // whose "yes" is then refused for commits held nowhere else.
            let changes = blocking(w.clone(), |w| {
                removal::changes(&w).map_err(|e| e.to_string())
            })
            .await
            .map_err(failed)?;
            if changes.unique_commits == 0 && changes.uncommitted > 0 {
                self.confirm_discard(&w, ctx).await?;
            }
        }
        let discard = self.discard;
        let removed = blocking(w.clone(), move |w| {
            removal::remove_guarded(&w, own, discard).map_err(|e| e.to_string())
        })
        .await
        .map_err(failed)?;
        self.leave();
        self.state.announce(HookEvent::WorktreeRemove, &w).await;
        Ok(format!(
            "Removed the worktree {} and its branch {}{}. Shell commands run in the workspace again.",
            w.slug,
            w.branch,
            if removed.uncommitted > 0 {
                format!(", discarding {} uncommitted file(s)", removed.uncommitted)
            } else {
                String::new()
            }
        ))
    }

    fn leave(&self) {
        self.state.leave();
        self.env.work_dir.set(None);
    }

    /// Asks the person before uncommitted work is thrown away; refused with nobody to ask.
    async fn confirm_discard(&self, w: &Worktree, ctx: &ExecContext) -> Result<(), Failure> {
        let Some(asker) = ctx.env.ask_user.get().cloned() else {
            return Err((
                ErrorKind::ExecutionDenied,
                "discard_changes needs the user's confirmation and nobody can be asked in this session; \
                 commit the changes, or keep the worktree"
                    .to_string(),
            ));
        };
        let question = Question {
            question: format!(
                "Discard the uncommitted changes in the worktree {} ({}) and remove it?",
                w.slug,
                w.path.display()
            ),
            header: "Worktree".to_string(),
            options: vec![
                QuestionOption {
                    label: "Discard".to_string(),
                    description: "Remove the worktree and its uncommitted changes".to_string(),
                },
                QuestionOption {
                    label: "Keep".to_string(),
                    description: "Leave the worktree as it is".to_string(),
                },
            ],
            multi_select: false,
        };
        let answers = tokio::select! {
            answers = asker.ask(std::slice::from_ref(&question), &ctx.cancel) => answers,
            () = ctx.cancel.cancelled() => Err("cancelled".into()),
        };
        match answers.as_deref() {
            Ok([Answer::Chosen(picked)]) if picked.iter().any(|p| p == "Discard") => Ok(()),
            _ => Err((
                ErrorKind::ExecutionDenied,
                "the user did not agree to discard the uncommitted changes; the worktree was kept"
                    .to_string(),
            )),
        }
    }
}

/// Runs git work off the async threads.
async fn blocking<T: Send + 'static>(
    w: Worktree,
    f: impl FnOnce(Worktree) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(move || f(w))
        .await
        .map_err(|e| format!("failed: {e}"))?
}

#[cfg(test)]
mod tests;
