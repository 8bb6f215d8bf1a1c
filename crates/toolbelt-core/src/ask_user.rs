//! Asking the person questions with choices (`ask_user_question`), through whatever
//! display the session has.
//!
//! Like [`crate::AskOnceSlot`], the capability is put into the session's
//! [`crate::ToolEnvironment`] after the environment is built: the interactive terminal
//! fills the [`QuestionSlot`] with its own [`AskUser`]; headless runs, `tools call` and
//! `mcp serve` leave it empty, and the tool is refused there.

use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

use crate::BoxFuture;

/// One question with its choices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The full question.
    pub question: String,
    /// A short label for it (at most 12 characters), for a tab or a chip.
    pub header: String,
    /// The choices, two to four.
    pub options: Vec<QuestionOption>,
    /// Whether several choices may be picked.
    pub multi_select: bool,
}

/// One choice of a [`Question`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionOption {
    /// What the person picks (a few words).
    pub label: String,
    /// What picking it means.
    pub description: String,
}

/// The person's answer to one question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The labels picked (one unless the question is multi-select).
    Chosen(Vec<String>),
    /// A free-text answer instead of the choices.
    Other(String),
}

/// Asks a person; implemented by a display (the terminal UI, a test).
pub trait AskUser: Send + Sync {
    /// One answer per question, in order, or why there is none (the person dismissed
    /// the questions). Must return promptly once `cancel` is cancelled.
    fn ask<'a>(
        &'a self,
        questions: &'a [Question],
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<Answer>, crate::EmbedderError>>;
}

/// Where the session's [`AskUser`] is put once a display exists. Empty headless.
#[derive(Clone, Default)]
pub struct QuestionSlot(Arc<OnceLock<Arc<dyn AskUser>>>);

impl QuestionSlot {
    /// Sets the asker; a second call is ignored.
    pub fn set(&self, ask: Arc<dyn AskUser>) {
        let _ = self.0.set(ask);
    }

    /// The asker, `None` when nobody can be asked.
    pub fn get(&self) -> Option<&Arc<dyn AskUser>> {
        self.0.get()
    }
}

impl std::fmt::Debug for QuestionSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "QuestionSlot(set)"
        } else {
            "QuestionSlot(empty)"
        })
    }
}
