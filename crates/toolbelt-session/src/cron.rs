//! Scheduled prompts in the sessions that have idle time to fire them (issue 33): the
//! interactive agent and stream-JSON (`AgentOptions::scheduled_prompts`). A plain
//! headless run ends with its answer, so it is not offered the tools. The machinery is
//! `toolbelt_tools::cron`.
//!
//! On by default, as in Qwen Code; `experimental.cron: false` in the settings or
//! `QWEN_CODE_DISABLE_CRON=1` (or `TOOLBELT_DISABLE_CRON=1`) turns it off.
//! `experimental.cronRecurringMaxAgeDays`, or `QWEN_CODE_CRON_MAX_AGE_DAYS` which wins,
//! sets when recurring tasks expire (0: never). The schedule lives in the process and
//! nothing is written to disk, unless the settings allow durable tasks
//! (`experimental.cronDurable: true`; an untrusted folder's settings cannot, see
//! `toolbelt_config::settings::untrusted`) and the person approves one (`cron_create`
//! with `durable` asks every time; `/loop` makes session tasks): durable tasks are kept
//! beside the project's saved sessions, outside the workspace, with the session and
//! project that made them, which the prompt names when it fires.

use std::path::Path;
use std::sync::Arc;

use toolbelt_core::ToolEnvironment;
use toolbelt_engine::{registry::Origin, registry::ToolRegistry};
use toolbelt_tools::cron::{
    CronTasks, CronTool, DEFAULT_MAX_AGE_DAYS, Fired, TaskOrigin, system_clock,
};

/// The durable schedule's file, in the project's sessions folder.
pub const DURABLE_FILE: &str = "scheduled-tasks.json";

/// Registers `cron_create`, `cron_list` and `cron_delete` when scheduling is on;
/// returns the schedule the session fires from.
pub(crate) fn install(
    registry: &mut ToolRegistry,
    env: &ToolEnvironment,
    sessions_dir: &Path,
    session_id: &str,
) -> Option<Arc<CronTasks>> {
    let settings = &env.settings;
    let off = |name: &str| std::env::var(name).is_ok_and(|v| v == "1" || v == "true");
    let setting = |key: &str| settings.raw.pointer(&format!("/experimental/{key}"));
    if off("QWEN_CODE_DISABLE_CRON")
        || off("TOOLBELT_DISABLE_CRON")
        || setting("cron") == Some(&serde_json::Value::Bool(false))
    {
        return None;
    }
    let max_age = std::env::var("QWEN_CODE_CRON_MAX_AGE_DAYS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .or_else(|| {
            setting("cronRecurringMaxAgeDays")
                .and_then(serde_json::Value::as_u64)
                .and_then(|d| u32::try_from(d).ok())
        })
        .unwrap_or(DEFAULT_MAX_AGE_DAYS);
    let tasks = CronTasks::new(system_clock(), max_age);
    if setting("cronDurable") == Some(&serde_json::Value::Bool(true)) {
        let origin = TaskOrigin {
            session: session_id.to_string(),
            project: env
                .roots
                .primary()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
        };
        for warning in tasks.make_durable(sessions_dir.join(DURABLE_FILE), origin) {
            tracing::warn!("{warning}");
        }
    }
    for tool in CronTool::all(&tasks) {
        registry.register(Arc::new(tool), Origin::BuiltIn);
    }
    Some(tasks)
}

/// Waits for the next prompts due (never resolves without a schedule). Await it only
/// while no turn runs.
pub async fn due(tasks: Option<&Arc<CronTasks>>) -> Vec<Fired> {
    match tasks {
        Some(tasks) => tasks.wait_due().await,
        None => std::future::pending().await,
    }
}

/// The prompt of a fired task as the turn's text: what was scheduled, marked so the
/// model knows it was not typed just now, and, for a durable task, where and when it
/// was made (it may come from another session).
pub fn prompt_of(fired: &Fired) -> String {
    format!(
        "[Scheduled task {}{}{}] {}",
        fired.id,
        if fired.last { ", last run" } else { "" },
        fired
            .origin
            .as_ref()
            .map(|o| format!("; {o}"))
            .unwrap_or_default(),
        fired.prompt
    )
}
