//! The headless agent's saved sessions: which one `--continue` or `--resume ID` picks up,
//! the listing `--resume` prints without an ID, and the new file each run writes.
//!
//! The format, loading and saving are `toolbelt_agent::transcript`'s; this module only
//! maps the flags onto it. A continued session is a new file naming its parent, under
//! its parent's ID when that is a UUID (the reasons are in the transcript module). Headless has no picker: `--resume` without an
//! ID lists the sessions, newest first, and exits.

use std::path::{Path, PathBuf};

use toolbelt_agent::transcript::{LoadedSession, SessionHeader, SessionStore, SessionWriter};
use toolbelt_model::Message;

use crate::cli::AgentArgs;

/// How many sessions the listing shows.
const LISTED: usize = 20;

/// What the flags ask for.
pub enum Choice<'a> {
    /// A new conversation.
    Fresh,
    Latest,
    Id(&'a str),
    /// `--resume` without an ID.
    List,
}

impl<'a> Choice<'a> {
    pub fn of(args: &'a AgentArgs) -> Self {
        match args.resume.as_deref() {
            Some("") => Choice::List,
            Some(id) => Choice::Id(id),
            None if args.continue_latest => Choice::Latest,
            None => Choice::Fresh,
        }
    }
}

/// The store of the project whose primary workspace root is `project`.
pub fn store(project: &Path) -> SessionStore {
    SessionStore::new(crate::session::sessions_dir(project))
}

/// The session to continue, its warnings printed; `None` for a fresh one.
pub fn load(store: &SessionStore, choice: &Choice<'_>) -> Result<Option<LoadedSession>, String> {
    let loaded = match choice {
        Choice::Fresh | Choice::List => return Ok(None),
        Choice::Latest => store.latest(),
        Choice::Id(id) => store.load(id),
    }
    .map_err(|e| e.to_string())?;
    for warning in &loaded.warnings {
        eprintln!("toolbelt: warning: {warning}");
    }
    Ok(Some(loaded))
}

/// `--session-id ID`: a name a session file may take, and not yet taken.
pub fn check_new_id(store: &SessionStore, id: &str) -> Result<(), String> {
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

/// The listing of `--resume`: one session a line, newest first, `ID  first prompt line`.
pub fn list(store: &SessionStore) -> Result<String, String> {
    let ids = store.ids().map_err(|e| e.to_string())?;
    if ids.is_empty() {
        return Err(format!(
            "no saved session for this project (in {})",
            store.dir().display()
        ));
    }
    let mut out = String::new();
    for id in ids.iter().take(LISTED) {
        let prompt = store
            .first_prompt(id)
            .unwrap_or_else(|| "(unreadable)".to_string());
        let prompt: String = prompt.chars().take(70).collect();
        out.push_str(&format!("{id}  {prompt}\n"));
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

/// Starts this run's file (named `id` when `--session-id` gave one), with the continued
/// conversation copied in first. A session that cannot be saved is a warning: the run
/// goes on unsaved.
pub fn start(
    store: &SessionStore,
    cwd: PathBuf,
    model: &str,
    continued: Option<&LoadedSession>,
    id: Option<&str>,
) -> Option<SessionWriter> {
    let history: &[Message] = continued.map_or(&[], |c| &c.messages);
    let mut header = match continued {
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
        Ok(writer) => Some(writer),
        Err(e) => {
            eprintln!("toolbelt: warning: this session is not saved: {e}");
            None
        }
    }
}
