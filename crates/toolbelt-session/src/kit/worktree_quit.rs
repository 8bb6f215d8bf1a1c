//! Quitting while the session works in a git worktree (issue 45): the person is asked
//! whether to keep it, remove it (the question says how many commits of its own and
//! uncommitted files would go with it), or not quit after all. Removing here is the
//! person's own choice made with the counts in front of them, so it discards them; the
//! model's `exit_worktree` has guards no answer overrides.

use toolbelt_core::ToolEnvironment;
use toolbelt_core::{Answer, Question, QuestionOption};
use toolbelt_tools::worktree::{self, Worktree, removal};

const KEEP: &str = "Keep";
const REMOVE: &str = "Remove";
const CANCEL: &str = "Cancel";

/// The question for the worktree the session works in, and what it is about.
pub struct QuitQuestion {
    /// What to show.
    pub question: Question,
    worktree: Worktree,
}

/// The question when the session's shell works in a worktree; `None` otherwise (quit
/// at once).
pub fn question(env: &ToolEnvironment) -> Option<QuitQuestion> {
    let slug = worktree::shown(env)?;
    let dir = env
        .work_dir
        .get()
        .or_else(|| env.roots.primary().map(std::path::Path::to_path_buf))?;
    let found = worktree::find(&dir, &slug).ok()?;
    let held = match removal::changes(&found) {
        Ok(c) => format!(
            "{} commit(s), {} uncommitted file(s)",
            c.unique_commits, c.uncommitted
        ),
        Err(_) => "what git could not count".to_string(),
    };
    let option = |label: &str, description: String| QuestionOption {
        label: label.to_string(),
        description,
    };
    let question = Question {
        question: format!(
            "This session works in the worktree {} ({}, branch {}). Keep it?",
            found.slug,
            found.path.display(),
            found.branch
        ),
        header: "Worktree".to_string(),
        options: vec![
            option(KEEP, "Quit and leave the worktree and its branch".into()),
            option(REMOVE, format!("Quit and remove both, losing {held}")),
            option(CANCEL, "Do not quit".into()),
        ],
        multi_select: false,
    };
    Some(QuitQuestion {
        question,
        worktree: found,
    })
}

impl QuitQuestion {
    /// Acts on the answer: `None` to stay (Cancel, or no answer), else quit with a line
    /// to show (what became of the worktree).
    pub fn answer(&self, answers: Result<Vec<Answer>, String>) -> Option<String> {
        let w = &self.worktree;
        match answers.ok()?.first()? {
            Answer::Chosen(picked) if picked.iter().any(|p| p == KEEP) => Some(format!(
                "Kept the worktree {} ({}, branch {}).",
                w.slug,
                w.path.display(),
                w.branch
            )),
            Answer::Chosen(picked) if picked.iter().any(|p| p == REMOVE) => {
                Some(match removal::remove_discarding(w) {
                    Ok(()) => format!(
                        "Removed the worktree {} and its branch {}.",
                        w.slug, w.branch
                    ),
                    Err(e) => format!("The worktree {} was kept: {e}", w.slug),
                })
            }
            _ => None,
        }
    }
}
