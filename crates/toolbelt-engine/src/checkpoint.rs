//! The contract between the call path and the session's file checkpoints (issue 34,
//! undo).
//!
//! Core knows *when* the workspace must be recorded: just before an approved call runs
//! and just after it ran (the scheduler, `scheduler/run_call.rs`), and when a user turn
//! begins (the agent). *What* is recorded, where and how is the implementation's
//! business: `toolbelt-history` keeps a content-addressed store under the toolbelt home
//! and is the one the session installs. A session without checkpoints has none, and
//! the call path costs nothing more.
//!
//! The implementation decides which calls it covers from [`CheckpointCall::kind`] and
//! the tool's name (core names no tool): every kind that is not read-only, and the few
//! read-only kinds that still write a file (`save_memory` is `Think`).
//!
//! A checkpoint that fails never stops the call: the scheduler runs it and adds the
//! reason to its result, so the person (and the model) know that this change cannot be
//! undone from a checkpoint.

use std::path::PathBuf;

use toolbelt_core::{BoxFuture, Kind};

/// One call the checkpoints are asked about.
#[derive(Debug, Clone)]
pub struct CheckpointCall {
    /// The model's id of the call.
    pub call_id: String,
    /// The tool's registered name.
    pub tool: String,
    /// What the tool does (see [`Kind`]).
    pub kind: Kind,
    /// Whether the call may change files: its kind is not read-only, or the tool says
    /// it writes all the same ([`toolbelt_core::ToolFacts::writes_files`]).
    pub changes_files: bool,
    /// The paths the call says it changes (its permission subject), empty when it
    /// cannot say (a shell command, an MCP tool): a hint, never the whole truth.
    pub paths: Vec<PathBuf>,
    /// The tool changes no file but `paths` ([`toolbelt_core::ToolFacts::edits_named_files`]:
    /// the edit tools), so what it changed can be found without a walk.
    pub only_paths: bool,
}

/// A user turn starting: the agent says so before the prompt joins the conversation.
#[derive(Debug, Clone)]
pub struct TurnStart {
    /// How many messages the conversation held before this turn's prompt: where
    /// `/rewind` cuts it to go back to before the turn.
    pub history_len: usize,
    /// The text the person wrote (for listings).
    pub prompt: String,
}

/// Why no checkpoint was recorded before a call (the call runs anyway).
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The recorder failed (the workspace could not be read, the store written); its
    /// own error, which an embedder can downcast (toolbelt's is `HistoryError`).
    #[error(transparent)]
    Recorder(Box<dyn std::error::Error + Send + Sync>),
    /// The recording task stopped before it finished (it panicked or was cancelled).
    #[error("the checkpoint failed unexpectedly: {0}")]
    Interrupted(String),
}

/// The session's file checkpoints, as the call path and the agent see them.
pub trait Checkpoints: Send + Sync {
    /// Records the workspace before `call` runs, if the call is one the checkpoints
    /// cover. `Err` says why nothing could be recorded; the call runs anyway.
    fn before_call<'a>(
        &'a self,
        call: &'a CheckpointCall,
    ) -> BoxFuture<'a, Result<(), CheckpointError>>;

    /// Records what `call` left (so a later restore can tell a change the person made
    /// outside toolbelt from the call's own). Never fails: a problem is kept for the
    /// next checkpoint to report.
    fn after_call<'a>(&'a self, call: &'a CheckpointCall) -> BoxFuture<'a, ()>;

    /// A user turn begins; the checkpoints of its calls are recorded with it.
    fn begin_turn(&self, turn: TurnStart);
}

/// The note added to a call's result when no checkpoint could be taken before it.
pub fn unsaved_note(why: &str) -> String {
    format!(
        "[toolbelt: no checkpoint was taken before this call ({why}); /restore cannot undo what it changed]"
    )
}

/// Checkpoints for the calls of a nested loop (a sub-agent): its calls are recorded
/// like the parent's, but its runs are no user turns of the session.
pub struct CallsOnly(pub std::sync::Arc<dyn Checkpoints>);

impl Checkpoints for CallsOnly {
    fn before_call<'a>(
        &'a self,
        call: &'a CheckpointCall,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.0.before_call(call)
    }

    fn after_call<'a>(&'a self, call: &'a CheckpointCall) -> BoxFuture<'a, ()> {
        self.0.after_call(call)
    }

    fn begin_turn(&self, _turn: TurnStart) {}
}
