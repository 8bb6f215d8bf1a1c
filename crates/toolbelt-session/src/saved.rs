//! An agent's saved sessions: which one `--continue` or `--resume ID` picks up, the
//! listing `--resume` prints without an ID, and the new file each run writes.
//!
//! The format, loading and saving are `toolbelt_agent::transcript`'s; this module only
//! maps the flags onto it. A continued session is a new file naming its parent, under
//! its parent's ID when that is a UUID (the reasons are in the transcript module).

use std::path::{Path, PathBuf};

use toolbelt_agent::transcript::{LoadedSession, SessionHeader, SessionStore, SessionWriter};
use toolbelt_model::Message;

use crate::options::{Resume, Warn};

/// How many sessions the listing shows.
const LISTED: usize = 20;

/// The saved sessions of `project`.
pub fn store(project: &Path) -> SessionStore {
    SessionStore::new(crate::paths::sessions_dir(project))
}

/// The session to continue, its warnings printed; `None` for a fresh one.
pub(crate) fn load(
    store: &SessionStore,
    choice: &Resume,
    warn: &Warn,
) -> Result<Option<LoadedSession>, String> {
    let loaded = match choice {
        Resume::Fresh => return Ok(None),
        Resume::Latest => store.latest(),
        Resume::Id(id) => store.load(id),
    }
    .map_err(|e| e.to_string())?;
    for warning in &loaded.warnings {
        warn.say(&warning.to_string());
    }
    Ok(Some(loaded))
}

/// `--session-id ID`: a name a session file may take, and not yet taken.
pub(crate) fn check_new_id(store: &SessionStore, id: &str) -> Result<(), String> {
    if !toolbelt_agent::transcript::is_uuid(id) {
        return Err(format!(
            "--session-id {id:?}: a session ID is a UUID (such as 0b6c5f1e-8f0a-4c51-9d1e-2a7f3c9b4d10)"
        ));
    }
    if store
        .ids()
        .unwrap_or_default()
        .iter()
        .any(|saved| saved == id)
    {
        return Err(format!(
            "--session-id {id}: that session is already saved; continue it with --resume {id}"
        ));
    }
    Ok(())
}

/// The listing of `--resume`: one session a line, newest first: `ID  started  N prompts
/// first prompt → last prompt`. A continuation keeps its session's ID, so the line
/// shows the newest file: how far the conversation went, not only how it began.
pub fn list(store: &SessionStore) -> Result<String, crate::ListError> {
    let ids = store.ids()?;
    if ids.is_empty() {
        return Err(crate::ListError::NoneSaved(store.dir().to_path_buf()));
    }
    let mut out = String::new();
    for id in ids.iter().take(LISTED) {
        out.push_str(&listing_line(store, id));
        out.push('\n');
    }
    if ids.len() > LISTED {
        out.push_str(&format!(
            "... and {} older, in {}\n",
            ids.len() - LISTED,
            store.dir().display()
        ));
    }
    Ok(out)
}

/// One session of the listing.
fn listing_line(store: &SessionStore, id: &str) -> String {
    let Ok(session) = store.load(id) else {
        return format!("{id}  (unreadable)");
    };
    let prompts: Vec<String> = session
        .messages
        .iter()
        .filter_map(|m| match m {
            toolbelt_model::Message::User(parts) => parts.iter().find_map(|p| match p {
                toolbelt_model::UserPart::Text(t)
                    if !toolbelt_engine::hooks::is_context_block(t) =>
                {
                    Some(t.clone())
                }
                _ => None,
            }),
            _ => None,
        })
        .collect();
    let short = |text: &str| -> String {
        let line = text.lines().next().unwrap_or("").trim();
        let cut: String = line.chars().take(40).collect();
        if cut.chars().count() < line.chars().count() {
            format!("{cut}…")
        } else {
            cut
        }
    };
    // `2026-11-25T14:02:31.123Z` as `2026-11-25 14:02`.
    let started: String = session
        .header
        .started
        .chars()
        .take(16)
        .collect::<String>()
        .replace('T', " ");
    let first = session
        .first_prompt
        .as_deref()
        .map(short)
        .unwrap_or_default();
    let count = prompts.len();
    let mut line = format!(
        "{id}  {started}  {count} prompt{}  {first}",
        if count == 1 { "" } else { "s" }
    );
    if let Some(last) = prompts.last().map(|p| short(p))
        && count > 1
        && last != first
    {
        line.push_str(&format!(" → {last}"));
    }
    line
}

/// What a run saves to: where it runs, its model, the conversation it continues (under
/// the same ID, or a new one for a fork), and `--session-id`'s ID.
pub(crate) struct Run<'a> {
    pub(crate) cwd: PathBuf,
    pub(crate) model: &'a str,
    pub(crate) continued: Option<&'a LoadedSession>,
    /// The continued conversation goes on under a new ID (`--fork-session`).
    pub(crate) fork: bool,
    pub(crate) id: Option<&'a str>,
}

/// Starts this run's file (named `id` when `--session-id` gave one), with the continued
/// conversation copied in first. A session that cannot be saved is a warning: the run
/// goes on unsaved.
pub(crate) fn start(store: &SessionStore, run: Run<'_>, warn: &Warn) -> Option<SessionWriter> {
    let Run {
        cwd,
        model,
        continued,
        fork,
        id,
    } = run;
    let history: &[Message] = continued.map_or(&[], |c| &c.messages);
    let mut header = match continued {
        // A fork records where it came from and starts a file of its own.
        Some(c) if fork => SessionHeader::new(cwd, model.to_string(), Some(c.header.id.clone())),
        Some(c) => SessionHeader::continuing(cwd, model.to_string(), &c.header),
        None => SessionHeader::new(cwd, model.to_string(), None),
    };
    let created = match id {
        Some(id) => {
            header.id = id.to_string();
            store.create_named(header)
        }
        None => store.create(header),
    };
    let started = created.and_then(|writer| {
        for message in history {
            if let Err(e) = writer.append(message) {
                // A half-copied history must not become the latest session.
                let _ = std::fs::remove_file(writer.path());
                return Err(e);
            }
        }
        Ok(writer)
    });
    match started {
        Ok(writer) => {
            // A run that never reaches a model leaves no session to resume.
            writer.discard_unless_answered();
            Some(writer)
        }
        Err(e) => {
            warn.say(&format!("this session is not saved: {e}"));
            None
        }
    }
}
