//! Durable scheduled prompts: only when the person's settings ask for them
//! (`experimental.cronDurable`, which an untrusted folder's settings cannot set), the
//! schedule is saved to a file of the person's own (beside the project's saved
//! sessions, never in the workspace) after every change and read back at the next
//! start. What is read back is bounded (size, [`MAX_TASKS`]) and checked like a new
//! task: a bad entry is skipped with a warning. Next times are counted from the start
//! (no catch-up); the expiry counts from each task's creation, as before the restart.

use std::path::Path;

use chrono::{Local, TimeZone};
use serde::{Deserialize, Serialize};

use super::expr::CronExpr;
use super::tasks::{CronTask, MAX_TASKS};

/// The largest file read back.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// One task as saved.
#[derive(Debug, Serialize, Deserialize)]
struct Saved {
    id: String,
    cron: String,
    prompt: String,
    recurring: bool,
    /// Milliseconds since the epoch.
    created_ms: i64,
}

/// Writes `tasks` to `path` (atomically).
pub(super) fn save(path: &Path, tasks: &[CronTask]) -> std::io::Result<()> {
    let saved: Vec<Saved> = tasks
        .iter()
        .map(|t| Saved {
            id: t.id.clone(),
            cron: t.cron.as_str().to_string(),
            prompt: t.prompt.clone(),
            recurring: t.recurring,
            created_ms: t.created.timestamp_millis(),
        })
        .collect();
    let bytes = serde_json::to_vec_pretty(&saved).map_err(std::io::Error::other)?;
    if let Some(dir) = path.parent() {
        toolbelt_core::store_files::create_dir_all(dir)?;
    }
    toolbelt_core::store_files::write_atomic(path, &bytes)
}

/// The tasks saved at `path` as (id, expression, prompt, recurring, created), and a
/// warning per entry skipped. No file: none.
pub(super) fn load(path: &Path) -> (Vec<Restored>, Vec<String>) {
    let text = match std::fs::metadata(path) {
        Err(_) => return (Vec::new(), Vec::new()),
        Ok(m) if m.len() > MAX_FILE_BYTES => {
            return (
                Vec::new(),
                vec![format!(
                    "{} is over {MAX_FILE_BYTES} bytes; not read",
                    path.display()
                )],
            );
        }
        Ok(_) => match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                return (
                    Vec::new(),
                    vec![format!("cannot read {}: {e}", path.display())],
                );
            }
        },
    };
    let saved: Vec<Saved> = match serde_json::from_str(&text) {
        Ok(s) => s,
        Err(e) => return (Vec::new(), vec![format!("{}: {e}", path.display())]),
    };
    let mut warnings = Vec::new();
    let mut restored = Vec::new();
    for entry in saved.into_iter().take(MAX_TASKS) {
        let valid_id = entry.id.len() == 8 && entry.id.bytes().all(|b| b.is_ascii_hexdigit());
        let created = Local.timestamp_millis_opt(entry.created_ms).single();
        match (valid_id, CronExpr::parse(&entry.cron), created) {
            (true, Ok(cron), Some(created)) if !entry.prompt.trim().is_empty() => {
                restored.push(Restored {
                    id: entry.id,
                    cron,
                    prompt: entry.prompt,
                    recurring: entry.recurring,
                    created,
                });
            }
            (_, Err(e), _) => warnings.push(format!("scheduled task {} skipped: {e}", entry.id)),
            _ => warnings.push(format!("scheduled task {} skipped: malformed", entry.id)),
        }
    }
    (restored, warnings)
}

/// A task read back.
pub(super) struct Restored {
    pub(super) id: String,
    pub(super) cron: CronExpr,
    pub(super) prompt: String,
    pub(super) recurring: bool,
    pub(super) created: chrono::DateTime<Local>,
}
