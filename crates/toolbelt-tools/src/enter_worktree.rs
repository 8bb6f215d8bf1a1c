//! `enter_worktree`: the model moves the session's work into a git worktree of its own
//! (issue 45), so wide edits never touch the person's checkout until they merge the
//! branch. The worktree is made under `.qwen/worktrees` (inside the workspace, so the
//! file tools reach it), and the shell's default directory moves into it
//! ([`toolbelt_core::WorkDirSlot`]). A name that is already a worktree is entered
//! without being made, and is not this session's to remove.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ErrorKind, ExecContext, Invocation, Kind, Tool,
    ToolEnvironment, ToolError, ToolResult,
};
use toolbelt_engine::hooks::HookEvent;

use crate::worktree::{self, NameRequest, SessionWorktrees, Worktree, WorktreeError};

/// The `enter_worktree` tool.
pub struct EnterWorktree {
    env: Arc<ToolEnvironment>,
    state: Arc<SessionWorktrees>,
    schema: Value,
}

impl EnterWorktree {
    /// The tool's name.
    pub const NAME: &'static str = "enter_worktree";

    /// The tool over a session's environment and worktrees.
    pub fn new(env: Arc<ToolEnvironment>, state: Arc<SessionWorktrees>) -> Self {
        let schema = crate::params::schema_for::<Params>();
        EnterWorktree { env, state, schema }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(
        description = "Name of the worktree: letters, digits, '.', '_' and '-', at most 64. Omit it for a generated name. An existing worktree of that name is entered as it is."
    )]
    name: Option<String>,
}

impl Tool for EnterWorktree {
    fn name(&self) -> &str {
        Self::NAME
    }
    fn display_name(&self) -> &str {
        "EnterWorktree"
    }
    fn description(&self) -> &str {
        "Creates a git worktree of the repository under .qwen/worktrees/<name> on a new branch worktree-<name> \
         (from the current branch) and moves your work into it: shell commands run there, and you give file tools \
         paths inside it. Use it only when the user asks for a worktree. End with exit_worktree."
    }
    fn kind(&self) -> Kind {
        Kind::Other
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        let request = NameRequest::parse(params.name.as_deref().unwrap_or(""))
            .map_err(|e| ToolError::invalid_params(e.to_string()))?;
        if let NameRequest::PullRequest(_) = request {
            return Err(ToolError::invalid_params(
                "enter_worktree takes a name, not a pull request",
            ));
        }
        Ok(Box::new(EnterCall {
            env: self.env.clone(),
            state: self.state.clone(),
            request,
        }))
    }
}

struct EnterCall {
    env: Arc<ToolEnvironment>,
    state: Arc<SessionWorktrees>,
    request: NameRequest,
}

impl Invocation for EnterCall {
    fn describe(&self) -> String {
        match &self.request {
            NameRequest::Named(name) => format!("Enter the worktree {name}"),
            _ => "Enter a new worktree".to_string(),
        }
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }

    fn execute(self: Box<Self>, _ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let env = self.env.clone();
            let state = self.state.clone();
            let request = self.request;
            let blocking_state = state.clone();
            let entered =
                tokio::task::spawn_blocking(move || enter(&env, &blocking_state, &request)).await;
            match entered {
                Ok(Ok((text, made))) => {
                    if let Some(w) = made {
                        state.announce(HookEvent::WorktreeCreate, &w).await;
                    }
                    ToolResult::text(text)
                }
                Ok(Err(why)) => ToolResult::err(ErrorKind::ExecutionFailed, why),
                Err(e) => ToolResult::err(ErrorKind::ExecutionFailed, format!("failed: {e}")),
            }
        })
    }
}

/// Enters (making it first when there is none of that name) and says where the work
/// is; the worktree too when it was made now.
fn enter(
    env: &ToolEnvironment,
    state: &SessionWorktrees,
    request: &NameRequest,
) -> Result<(String, Option<Worktree>), String> {
    if let Some(w) = state.active() {
        return Err(format!(
            "this session already works in the worktree {} ({}, branch {}): call exit_worktree first",
            w.slug,
            w.path.display(),
            w.branch
        ));
    }
    let primary = env
        .roots
        .primary()
        .ok_or("there is no workspace directory")?
        .to_path_buf();
    let existing = match request {
        NameRequest::Named(name) => match worktree::find(&primary, name) {
            Ok(w) => Some(w),
            Err(WorktreeError::NotFound(_)) => None,
            Err(e) => return Err(e.to_string()),
        },
        _ => None,
    };
    let repo = worktree::main_root(&primary).map_err(|e| e.to_string())?;
    if !env.roots.contains(&repo.join(worktree::WORKTREES_DIR)) {
        return Err(format!(
            "the repository {} is not inside the workspace, so its worktrees would be out of reach of the file tools; \
             start toolbelt at the repository's root (or with --worktree)",
            repo.display()
        ));
    }
    let made = existing.is_none();
    let mut skipped = Vec::new();
    let w: Worktree = match existing {
        Some(w) => w,
        None => {
            let w = worktree::create(&primary, request).map_err(|e| e.to_string())?;
            let links = &env.settings.worktree.symlink_directories;
            skipped = worktree::populate::populate(&w, links);
            w
        }
    };
    env.work_dir.set(Some(worktree::same_place(&w, &primary)));
    state.enter(w.clone(), made);
    let how = if made {
        "Created"
    } else {
        "Entered the existing"
    };
    let skipped = if skipped.is_empty() {
        String::new()
    } else {
        format!("\nSkipped while preparing it:\n{}", skipped.join("\n"))
    };
    let text = format!(
        "{how} worktree {} at {} on branch {}. Shell commands now run there; give file tools paths under {}. \
         The user's checkout is untouched. When done, commit and call exit_worktree (action keep or remove).{skipped}",
        w.slug,
        w.path.display(),
        w.branch,
        w.path.display()
    );
    Ok((text, made.then_some(w)))
}

#[cfg(test)]
pub(crate) mod tests;
