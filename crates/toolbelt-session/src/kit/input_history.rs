//! The prompts a person typed in this project, for Up/Down in the editor: kept in
//! `<toolbelt home>/sessions/<project>/input-history.json` (the same project key as
//! the saved sessions; not a `.jsonl` name, so the session store never lists it).
//!
//! Bounded ([`MAX_ENTRIES`] entries, each at most [`MAX_ENTRY_BYTES`]), multi-line
//! entries kept as typed, the file written whole through a temporary file and a rename,
//! readable by its owner only (prompts may quote secrets). A damaged file is a warning
//! and an empty history, never a failure of the session.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The most entries kept; the oldest go first.
pub const MAX_ENTRIES: usize = 1000;
/// Longer entries are not kept (a pasted file is not worth recalling).
pub const MAX_ENTRY_BYTES: usize = 64 * 1024;
/// The file's name inside the project's sessions directory.
pub const FILE_NAME: &str = "input-history.json";

#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    entries: Vec<String>,
}

/// The input history of one project.
#[derive(Debug)]
pub struct InputHistory {
    path: PathBuf,
    entries: Vec<String>,
}

impl InputHistory {
    /// The history of the project whose primary workspace root is `project`, and a
    /// warning when the file could not be read.
    pub fn open(project: &Path) -> (InputHistory, Option<String>) {
        InputHistory::open_at(crate::paths::sessions_dir(project).join(FILE_NAME))
    }

    /// The history kept in `path`.
    pub fn open_at(path: PathBuf) -> (InputHistory, Option<String>) {
        let (entries, warning) = match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<Stored>(&bytes) {
                Ok(stored) => (stored.entries, None),
                Err(e) => (
                    Vec::new(),
                    Some(format!(
                        "the input history {} is damaged ({e}); starting a new one",
                        path.display()
                    )),
                ),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Vec::new(), None),
            Err(e) => (
                Vec::new(),
                Some(format!(
                    "cannot read the input history {}: {e}",
                    path.display()
                )),
            ),
        };
        let mut history = InputHistory { path, entries };
        history.trim();
        (history, warning)
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Where the history is kept.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Adds `entry` (unless empty, too long or the same as the last one) and saves.
    /// The entry is in memory even when saving fails.
    pub fn push(&mut self, entry: &str) -> std::io::Result<()> {
        if entry.trim().is_empty()
            || entry.len() > MAX_ENTRY_BYTES
            || self.entries.last().is_some_and(|last| last == entry)
        {
            return Ok(());
        }
        self.entries.push(entry.to_string());
        self.trim();
        self.save()
    }

    fn trim(&mut self) {
        self.entries
            .retain(|e| !e.trim().is_empty() && e.len() <= MAX_ENTRY_BYTES);
        if self.entries.len() > MAX_ENTRIES {
            let extra = self.entries.len() - MAX_ENTRIES;
            self.entries.drain(..extra);
        }
    }

    fn save(&self) -> std::io::Result<()> {
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        toolbelt_config::store_files::create_dir_all(dir)?;
        let body = serde_json::to_vec(&Stored {
            entries: self.entries.clone(),
        })
        .map_err(std::io::Error::other)?;
        // `tempfile` creates the file readable by its owner only; the rename keeps that.
        let mut temp = tempfile::NamedTempFile::new_in(dir)?;
        temp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))?;
        temp.write_all(&body)?;
        temp.as_file().sync_all()?;
        temp.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }

    /// A cursor for Up/Down from the editor's current text.
    pub fn cursor(&self) -> HistoryCursor {
        HistoryCursor {
            position: None,
            draft: String::new(),
        }
    }
}

/// Walks the history from the newest entry back (Up) and forward again (Down); Down past
/// the newest entry gives back what was being typed before the first Up.
#[derive(Debug, Clone)]
pub struct HistoryCursor {
    /// Index of the entry shown; `None`: the draft.
    position: Option<usize>,
    draft: String,
}

impl HistoryCursor {
    /// The next older entry (`current` is kept as the draft on the first step), or
    /// `None` at the oldest.
    pub fn older<'h>(&mut self, history: &'h InputHistory, current: &str) -> Option<&'h str> {
        let entries = history.entries();
        let next = match self.position {
            None if entries.is_empty() => return None,
            None => {
                self.draft = current.to_string();
                entries.len() - 1
            }
            Some(0) => return None,
            Some(i) => i - 1,
        };
        self.position = Some(next);
        entries.get(next).map(String::as_str)
    }

    /// The next newer entry, the draft after the newest, or `None` when already at the
    /// draft.
    pub fn newer<'s>(&'s mut self, history: &'s InputHistory) -> Option<&'s str> {
        let i = self.position?;
        if i + 1 < history.entries().len() {
            self.position = Some(i + 1);
            history.entries().get(i + 1).map(String::as_str)
        } else {
            self.position = None;
            Some(self.draft.as_str())
        }
    }

    /// Back to the draft (after the entry was sent or edited).
    pub fn reset(&mut self) {
        self.position = None;
        self.draft.clear();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn entries_survive_a_restart_multi_line_and_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions/p/input-history.json");
        let (mut h, warning) = InputHistory::open_at(path.clone());
        assert!(warning.is_none() && h.entries().is_empty());
        h.push("first").unwrap();
        h.push("a prompt\nover two lines\n").unwrap();
        h.push("a prompt\nover two lines\n").unwrap();
        h.push("   ").unwrap();
        let (again, warning) = InputHistory::open_at(path.clone());
        assert!(warning.is_none());
        assert_eq!(again.entries(), ["first", "a prompt\nover two lines\n"]);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
    }

    #[test]
    fn the_history_is_bounded_oldest_first_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.json");
        let (mut h, _) = InputHistory::open_at(path.clone());
        for i in 0..MAX_ENTRIES + 5 {
            h.entries.push(format!("p{i}"));
        }
        h.push("last").unwrap();
        let (h, _) = InputHistory::open_at(path);
        assert_eq!(h.entries().len(), MAX_ENTRIES);
        assert_eq!(h.entries()[0], "p6");
        assert_eq!(h.entries().last().unwrap(), "last");
        let (mut h2, _) = InputHistory::open_at(dir.path().join("big.json"));
        h2.push(&"x".repeat(MAX_ENTRY_BYTES + 1)).unwrap();
        assert!(h2.entries().is_empty());
    }

    #[test]
    fn a_damaged_file_is_a_warning_and_an_empty_history() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.json");
        std::fs::write(&path, b"{\"entries\": [\"ok\", 3").unwrap();
        let (mut h, warning) = InputHistory::open_at(path.clone());
        let warning = warning.unwrap();
        assert!(warning.contains("damaged"), "{warning}");
        assert!(h.entries().is_empty());
        h.push("new").unwrap();
        assert_eq!(InputHistory::open_at(path).0.entries(), ["new"]);
        // A directory where the file should be: a warning too, and saving fails cleanly.
        let (mut h, warning) = InputHistory::open_at(dir.path().to_path_buf());
        assert!(warning.is_some());
        assert!(h.push("x").is_err());
        assert_eq!(h.entries(), ["x"]);
    }

    #[test]
    fn up_and_down_walk_the_entries_and_return_to_the_draft() {
        let dir = tempfile::tempdir().unwrap();
        let (mut h, _) = InputHistory::open_at(dir.path().join("h.json"));
        for e in ["one", "two", "three"] {
            h.push(e).unwrap();
        }
        let mut c = h.cursor();
        assert_eq!(c.older(&h, "typing"), Some("three"));
        assert_eq!(c.older(&h, "three"), Some("two"));
        assert_eq!(c.older(&h, "two"), Some("one"));
        assert_eq!(c.older(&h, "one"), None);
        assert_eq!(c.newer(&h), Some("two"));
        assert_eq!(c.newer(&h), Some("three"));
        assert_eq!(c.newer(&h), Some("typing"));
        assert_eq!(c.newer(&h), None);
        let (empty, _) = InputHistory::open_at(dir.path().join("none.json"));
        assert_eq!(empty.cursor().older(&empty, "x"), None);
    }
}
