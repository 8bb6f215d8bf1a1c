//! Durable scheduled prompts: only when the person's settings allow them
//! (`experimental.cronDurable`, which an untrusted folder's settings cannot set) and
//! the person approved the task (`cron_create` with `durable` asks), the durable tasks
//! are saved to a file of the person's own (beside the project's saved sessions, never
//! in the workspace) after every change and read back at the next start. Each names the
//! session and project that made it, told when it fires. An entry without them was
//! saved by a build that did not ask, so it is not read back. What is read back is bounded (size, [`MAX_TASKS`]) and checked like a new
//! task: a bad entry is skipped with a warning. Next times are counted from the start
//! (no catch-up); the expiry counts from each task's creation, as before the restart.

use std::path::Path;

use chrono::{Local, TimeZone};
use serde::{Deserialize, Serialize};

use super::expr::CronExpr;
use super::tasks::{CronTask, MAX_TASKS, TaskOrigin};

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
    /// The session that made it.
    #[serde(default)]
    session: Option<String>,
    /// The project it was made in.
    #[serde(default)]
    project: Option<String>,
}

/// Writes the durable ones of `tasks` to `path` (atomically).
pub(super) fn save(path: &Path, tasks: &[CronTask]) -> std::io::Result<()> {
    let saved: Vec<Saved> = tasks
        .iter()
        .filter_map(|t| {
            let origin = t.durable.as_ref()?;
            Some(Saved {
                id: t.id.clone(),
                cron: t.cron.as_str().to_string(),
                prompt: t.prompt.clone(),
                recurring: t.recurring,
                created_ms: t.created.timestamp_millis(),
                session: Some(origin.session.clone()),
                project: Some(origin.project.clone()),
            })
        })
        .collect();
    // A session that never made a durable task leaves no file behind.
    if saved.is_empty() && !path.exists() {
        return Ok(());
    }
    let bytes = serde_json::to_vec_pretty(&saved).map_err(std::io::Error::other)?;
    if let Some(dir) = path.parent() {
        toolbelt_config::store_files::create_dir_all(dir)?;
    }
    toolbelt_config::store_files::write_atomic(path, &bytes)
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
        let origin = match (entry.session, entry.project) {
            (Some(session), Some(project)) => TaskOrigin { session, project },
            _ => {
                warnings.push(format!(
                    "scheduled task {} skipped: it names no session and project, so it was saved without the user's approval (by an older toolbelt)",
                    entry.id
                ));
                continue;
            }
        };
        match (valid_id, CronExpr::parse(&entry.cron), created) {
            (true, Ok(cron), Some(created)) if !entry.prompt.trim().is_empty() => {
                restored.push(Restored {
                    id: entry.id,
                    cron,
                    prompt: entry.prompt,
                    recurring: entry.recurring,
                    created,
                    origin,
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
    pub(super) origin: TaskOrigin,
}
