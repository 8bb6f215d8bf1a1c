//! `/restore`, `/rewind` and `/diff` (issue 34): parsing, and running them on the
//! session's [`History`] with the front end's approver to ask (the terminal's dialog).
//!
//! - `/restore` lists the checkpoints (ID, time, call, turn, files changed since);
//!   `/restore ID [--force] [PATH...]` shows what restoring would change, with the diff,
//!   asks, and restores (after a checkpoint of its own, so it can be undone).
//! - `/rewind` lists the turns of this session; `/rewind N [--force]` takes the files
//!   back to before turn N (as `/restore` would) and the conversation with them.
//! - `/diff` shows the working tree against git's `HEAD`, then what each turn of this
//!   session changed, shell commands included.

use crate::error::CommandError;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolbelt_agent::Agent;
use toolbelt_core::ConfirmationDetails;
use toolbelt_core::{ConfirmationOutcome, Kind};
use toolbelt_engine::{scheduler::ApprovalRequest, scheduler::Approver};
use toolbelt_history::{History, RestorePlan, render};

/// A parsed `/restore`, `/rewind` or `/diff`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UndoCommand {
    /// `/restore`: the checkpoints.
    List,
    /// `/restore ID [--force] [PATH...]`.
    Restore {
        /// The checkpoint's ID (or a unique start of it).
        id: String,
        /// Only these paths (relative to the session's directory, or absolute).
        paths: Vec<String>,
        /// Also overwrite files changed outside toolbelt.
        force: bool,
    },
    /// `/rewind`: the turns.
    Turns,
    /// `/rewind N [--force]`.
    Rewind {
        /// The turn to go back to before.
        turn: u32,
        /// Also overwrite files changed outside toolbelt.
        force: bool,
    },
    /// `/diff`.
    Diff,
}

/// Parses the arguments of `/restore`, `/rewind` or `/diff` (`name`).
pub fn parse(name: &str, args: &str) -> Result<UndoCommand, CommandError> {
    parse_words(name, args).map_err(CommandError::Usage)
}

fn parse_words(name: &str, args: &str) -> Result<UndoCommand, String> {
    let mut words: Vec<&str> = args.split_whitespace().collect();
    let force = words.contains(&"--force");
    words.retain(|w| *w != "--force");
    match name {
        "diff" if words.is_empty() && !force => Ok(UndoCommand::Diff),
        "diff" => Err("/diff takes no arguments".into()),
        "restore" => match words.split_first() {
            None if !force => Ok(UndoCommand::List),
            Some((id, paths)) => Ok(UndoCommand::Restore {
                id: (*id).to_string(),
                paths: paths.iter().map(|p| (*p).to_string()).collect(),
                force,
            }),
            None => Err("usage: /restore [ID [--force] [PATH...]]".into()),
        },
        _ => match words.as_slice() {
            [] if !force => Ok(UndoCommand::Turns),
            [n] => n
                .parse()
                .map(|turn| UndoCommand::Rewind { turn, force })
                .map_err(|_| "usage: /rewind [TURN [--force]]".to_string()),
            _ => Err("usage: /rewind [TURN [--force]]".into()),
        },
    }
}

/// What the commands work on: the session's checkpoints and its directory. Cheap to
/// clone.
#[derive(Clone)]
pub struct UndoKit {
    history: Option<History>,
    cwd: PathBuf,
}

impl UndoKit {
    /// The kit of a session's agent.
    pub fn new(prepared: &crate::Prepared) -> Self {
        UndoKit {
            history: prepared.history.clone(),
            cwd: prepared.cwd.clone(),
        }
    }

    /// Runs `command` (see [`run`]).
    pub async fn run(
        &self,
        command: UndoCommand,
        agent: Arc<Agent>,
        approver: Arc<dyn Approver>,
        say: &(dyn Fn(String) + Send + Sync),
    ) -> String {
        run(
            command,
            self.history.clone(),
            agent,
            approver,
            self.cwd.clone(),
            say,
        )
        .await
    }
}

/// What `rewind_files` answers (the Claude SDK's `RewindFilesResult`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RewindFiles {
    /// Whether the files are (or, for a dry run, can be) as they were.
    pub can_rewind: bool,
    /// Why not.
    pub error: Option<String>,
    /// The files the rewind changes (or changed).
    pub files_changed: Vec<String>,
    /// Lines the rewind adds back.
    pub insertions: usize,
    /// Lines it takes away.
    pub deletions: usize,
}

impl UndoKit {
    /// `rewind_files`: the files back to their state before the turn whose message had
    /// ID `turn_id` (a stream-JSON client's `uuid`); with `dry_run`, only what would
    /// change. Files changed outside toolbelt since are kept, and left out of the list.
    pub fn rewind_files(&self, turn_id: &str, dry_run: bool) -> RewindFiles {
        let refuse = |error: String| RewindFiles {
            error: Some(error),
            ..RewindFiles::default()
        };
        let Some(history) = &self.history else {
            return refuse("checkpoints are off (general.checkpointing.enabled: false)".into());
        };
        let Some(mark) = history.turns().into_iter().find(|t| t.id == turn_id) else {
            return refuse(format!("no user message {turn_id} in this session"));
        };
        let Some(target) = history.turn_checkpoint(&mark) else {
            return RewindFiles {
                can_rewind: true,
                ..RewindFiles::default()
            };
        };
        let plan = match history.plan_record(target, &[]) {
            Ok(plan) => plan,
            Err(e) => return refuse(e.to_string()),
        };
        let (insertions, deletions) = history.line_counts(&plan);
        let files_changed: Vec<String> = plan
            .changes
            .iter()
            .filter(|c| {
                !c.outside
                    && c.then
                        .is_none_or(|l| l.kind != toolbelt_history::EntryKind::Dir)
            })
            .filter(|c| {
                c.now
                    .is_none_or(|l| l.kind != toolbelt_history::EntryKind::Dir)
            })
            .map(|c| c.path().display().to_string())
            .collect();
        let result = RewindFiles {
            can_rewind: true,
            error: None,
            files_changed,
            insertions,
            deletions,
        };
        if dry_run || plan.is_empty() {
            return result;
        }
        match history.apply(&plan, false) {
            Ok(applied) if applied.failed.is_empty() || !applied.restored.is_empty() => result,
            Ok(applied) => refuse(applied.failed.join("; ")),
            Err(e) => refuse(e.to_string()),
        }
    }
}

/// Runs `command`. `say` shows text as it comes (a plan before the question); the
/// answer is the last text. Asks through `approver` before changing anything.
pub async fn run(
    command: UndoCommand,
    history: Option<History>,
    agent: Arc<Agent>,
    approver: Arc<dyn Approver>,
    cwd: PathBuf,
    say: &(dyn Fn(String) + Send + Sync),
) -> String {
    let Some(history) = history else {
        return "Checkpoints are off (general.checkpointing.enabled is false in the settings): there is nothing to restore.".into();
    };
    let blocking = |f: Box<dyn FnOnce() -> String + Send>| async move {
        tokio::task::spawn_blocking(f)
            .await
            .unwrap_or_else(|e| format!("failed: {e}"))
    };
    match command {
        UndoCommand::List => {
            let h = history.clone();
            blocking(Box::new(move || match h.list() {
                Ok((listed, damaged)) => format!(
                    "{}Restore one with /restore ID (only some files: /restore ID PATH...).",
                    render::list_text(&listed, &damaged)
                ),
                Err(e) => format!("Cannot list the checkpoints: {e}"),
            }))
            .await
        }
        UndoCommand::Turns => turns_text(&history),
        UndoCommand::Diff => {
            let git = git_diff(&cwd).await;
            let h = history.clone();
            let turns = blocking(Box::new(move || h.turns_text())).await;
            format!("{git}\nWhat each turn of this session changed:\n{turns}")
        }
        UndoCommand::Restore { id, paths, force } => {
            let only: Vec<PathBuf> = paths.iter().map(|p| cwd.join(p)).collect();
            let h = history.clone();
            let plan = tokio::task::spawn_blocking(move || h.plan(&id, &only)).await;
            match plan {
                Ok(Ok(plan)) => confirm_and_apply(&history, plan, force, &*approver, say).await,
                Ok(Err(e)) => e.to_string(),
                Err(e) => format!("failed: {e}"),
            }
        }
        UndoCommand::Rewind { turn, force } => {
            rewind(&history, &agent, turn, force, &*approver, say).await
        }
    }
}

fn turns_text(history: &History) -> String {
    let turns = history.turns();
    if turns.is_empty() {
        return "No turns in this session yet.".into();
    }
    let mut s = String::from(
        "Turns of this session (/rewind N takes the files and the conversation back to before turn N):\n",
    );
    for t in turns {
        let line = t
            .prompt
            .trim()
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(70)
            .collect::<String>();
        s.push_str(&format!(
            "  {:>3}  {}  {line}\n",
            t.number,
            render::when(t.started_ms)
        ));
    }
    s
}

/// Shows the plan, asks, restores.
async fn confirm_and_apply(
    history: &History,
    plan: RestorePlan,
    force: bool,
    approver: &dyn Approver,
    say: &(dyn Fn(String) + Send + Sync),
) -> String {
    let text = render::plan_text(history, &plan);
    if plan.is_empty() {
        return text;
    }
    say(text.clone());
    let request = ApprovalRequest {
        call_id: format!("restore-{}", plan.target.id),
        tool: "restore".into(),
        kind: Kind::Edit,
        description: format!("Restore checkpoint {}", plan.target.id),
        details: ConfirmationDetails::Edit {
            title: format!("Restore checkpoint {}?", plan.target.id),
            file_name: format!("{} path(s)", plan.changes.len()),
            file_path: plan.changes.first().map(|c| c.path()).unwrap_or_default(),
            diff: text,
            is_new_file: false,
            original_content: None,
            new_content: None,
        },
        may_always_allow: false,
    };
    let answer = approver.approve(&request).await;
    if answer.outcome == ConfirmationOutcome::Cancel {
        return "Nothing was restored.".into();
    }
    let h = history.clone();
    match tokio::task::spawn_blocking(move || h.apply(&plan, force)).await {
        Ok(Ok(applied)) => render::applied_text(&applied, "/restore"),
        Ok(Err(e)) => format!("Nothing was restored: {e}"),
        Err(e) => format!("failed: {e}"),
    }
}

/// `/rewind N`: the files back to before turn N (when toolbelt changed any since), then
/// the conversation.
async fn rewind(
    history: &History,
    agent: &Agent,
    turn: u32,
    force: bool,
    approver: &dyn Approver,
    say: &(dyn Fn(String) + Send + Sync),
) -> String {
    let Some(mark) = history.turns().into_iter().find(|t| t.number == turn) else {
        return format!("No turn {turn} in this session; /rewind lists them.");
    };
    let h = history.clone();
    let m = mark.clone();
    let target = tokio::task::spawn_blocking(move || h.turn_checkpoint(&m))
        .await
        .ok()
        .flatten();
    let mut out = String::new();
    if let Some(target) = target {
        let h = history.clone();
        let plan = match tokio::task::spawn_blocking(move || h.plan_record(target, &[])).await {
            Ok(Ok(plan)) => plan,
            Ok(Err(e)) => return format!("Not rewound: {e}"),
            Err(e) => return format!("failed: {e}"),
        };
        if !plan.is_empty() {
            let done = confirm_and_apply(history, plan, force, approver, say).await;
            if done.starts_with("Nothing was restored") {
                return format!("{done} The conversation was not rewound either.");
            }
            out.push_str(&done);
        }
    }
    let mut messages = agent.history();
    messages.truncate(mark.history_len);
    agent.replace_history(messages);
    history.forget_turns_from(turn);
    out.push_str(&format!(
        "The conversation is back to before turn {turn} (\"{}\").",
        mark.prompt.trim().lines().next().unwrap_or("")
    ));
    out
}

/// `git diff HEAD` of the project (what git tracks; untracked files are not in it).
/// Run with what a repository's configuration could make it run turned off (external
/// diff programs, text conversions, the file-system monitor).
async fn git_diff(cwd: &Path) -> String {
    let owner = toolbelt_process::Owner::new();
    let mut cmd = toolbelt_process::GroupCommand::new("git", &owner);
    cmd.args([
        "-c",
        "core.fsmonitor=false",
        "--no-pager",
        "diff",
        "--no-ext-diff",
        "--no-textconv",
        "--no-color",
        "--stat",
        "--patch",
        "HEAD",
    ])
    .current_dir(cwd)
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let child = match cmd.spawn(true) {
        Ok(child) => child,
        Err(e) => return format!("git diff HEAD: cannot run git: {e}\n"),
    };
    if let Some(pid) = child.id() {
        owner.started(pid);
    }
    let limit = std::time::Duration::from_secs(20);
    match tokio::time::timeout(limit, child.wait_with_output()).await {
        Ok(Ok(out)) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            if text.trim().is_empty() {
                "The working tree is as git's HEAD has it.\n".into()
            } else {
                format!("The working tree against git's HEAD:\n{text}")
            }
        }
        Ok(Ok(out)) => {
            format!(
                "git diff HEAD: {}",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .next()
                    .unwrap_or("failed")
            ) + "\n"
        }
        Ok(Err(e)) => format!("git diff HEAD: {e}\n"),
        Err(_) => "git diff HEAD: took too long\n".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commands_parse() {
        assert_eq!(parse("restore", ""), Ok(UndoCommand::List));
        assert_eq!(
            parse("restore", "abc123 --force src/a.rs"),
            Ok(UndoCommand::Restore {
                id: "abc123".into(),
                paths: vec!["src/a.rs".into()],
                force: true
            })
        );
        assert_eq!(parse("rewind", ""), Ok(UndoCommand::Turns));
        assert_eq!(
            parse("rewind", "2"),
            Ok(UndoCommand::Rewind {
                turn: 2,
                force: false
            })
        );
        assert!(parse("rewind", "two").is_err());
        assert_eq!(parse("diff", ""), Ok(UndoCommand::Diff));
        assert!(parse("diff", "x").is_err());
    }
}
