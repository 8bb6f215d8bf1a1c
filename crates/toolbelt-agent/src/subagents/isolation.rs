//! A sub-agent in a git worktree of its own (`isolation: "worktree"` in the `agent`
//! call or `isolation: worktree` in its definition; issue 45), so parallel sub-agents
//! that edit the same files never see each other's changes.
//!
//! This crate knows no git: the session gives a [`WorktreeIsolation`] that makes the
//! worktree and the built-in tools over a workspace rooted in it, with the session's
//! permission and path rules also naming the worktree's copies of the places they name
//! in the checkout (`Relocation`). The sub-agent's
//! registry then holds those tools in place of the parent's built-ins of the same names
//! (MCP, discovered and declared tools stay the parent's: they run in their own
//! processes and toolbelt cannot move them). When the sub-agent ends, the isolation's
//! `finish` removes a worktree that holds no change, or keeps it and gives the line
//! appended to the sub-agent's result.

use std::path::PathBuf;
use std::sync::Arc;

use toolbelt_core::{BoxFuture, Tool, ToolEnvironment};
use toolbelt_engine::{registry::Origin, registry::ToolRegistry};

/// Makes a sub-agent's worktree; implemented by the session.
pub trait WorktreeIsolation: Send + Sync {
    /// A new worktree and the tools that work in it, or why there is none.
    fn create(&self) -> BoxFuture<'_, Result<Isolated, toolbelt_core::EmbedderError>>;
}

/// A sub-agent's worktree, while it runs.
pub struct Isolated {
    /// The environment rooted in the worktree.
    pub env: Arc<ToolEnvironment>,
    /// The built-in tools over `env`.
    pub tools: Vec<Arc<dyn Tool>>,
    /// The worktree's directory (the sub-agent's working directory).
    pub cwd: PathBuf,
    /// The session's checkout and the worktree: the session's permission rules name
    /// in the worktree the places they name in the checkout (the built-ins' path rules
    /// in `env` already do).
    pub relocation: toolbelt_core::Relocation,
    /// Tools the sub-agent loses: those that act on the session's own worktree
    /// (`enter_worktree`, `exit_worktree`), which would move the parent's shell.
    pub withheld: Vec<String>,
    /// Called once the sub-agent ended: `None` when the worktree was removed (it held
    /// no change), or the line to append to the result (`[worktree preserved: ...]`).
    pub finish: Box<dyn FnOnce() -> BoxFuture<'static, Option<String>> + Send + Sync>,
}

impl Isolated {
    /// Puts the worktree's tools in place of the built-ins of the same names that
    /// `registry` holds (a built-in the sub-agent may not use stays out); the answer
    /// is the environment and directory the sub-agent works in.
    pub(crate) fn swap_into(&self, registry: &mut ToolRegistry) -> (Arc<ToolEnvironment>, PathBuf) {
        for tool in &self.tools {
            let name = tool.name().to_string();
            let held = registry
                .get(&name)
                .is_some_and(|r| r.origin == Origin::BuiltIn);
            if held {
                registry.retain(|r| r.name != name, "replaced by the worktree's");
                registry.register(tool.clone(), Origin::BuiltIn);
            }
        }
        registry.retain(
            |r| !self.withheld.contains(&r.name),
            "a sub-agent in a worktree of its own stays in it",
        );
        (self.env.clone(), self.cwd.clone())
    }
}

/// The value of `isolation` an `agent` call or a definition may give.
pub(crate) const WORKTREE: &str = "worktree";
