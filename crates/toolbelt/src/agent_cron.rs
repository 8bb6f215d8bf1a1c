//! Scheduled prompts in the sessions that have idle time to fire them (issue 33): the
//! interactive agent and `--input-format stream-json`. A plain headless run ends with
//! its answer, so it is not offered the tools. The machinery is `toolbelt_tools::cron`.
//!
//! On by default, as in Qwen Code; `QWEN_CODE_DISABLE_CRON=1` (or `TOOLBELT_DISABLE_CRON=1`)
//! turns it off. `QWEN_CODE_CRON_MAX_AGE_DAYS` sets when recurring tasks expire (0:
//! never). The schedule lives in the process: nothing is written to disk.

use std::sync::Arc;

use toolbelt_core::{Origin, ToolRegistry};
use toolbelt_tools::cron::{CronTasks, CronTool, DEFAULT_MAX_AGE_DAYS, Fired, system_clock};

/// Registers `cron_create`, `cron_list` and `cron_delete` when scheduling is on;
/// returns the schedule the session fires from.
pub fn install(registry: &mut ToolRegistry) -> Option<Arc<CronTasks>> {
    let off = |name: &str| std::env::var(name).is_ok_and(|v| v == "1" || v == "true");
    if off("QWEN_CODE_DISABLE_CRON") || off("TOOLBELT_DISABLE_CRON") {
        return None;
    }
    let max_age = std::env::var("QWEN_CODE_CRON_MAX_AGE_DAYS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_MAX_AGE_DAYS);
    let tasks = CronTasks::new(system_clock(), max_age);
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

/// The prompt of a fired task as the turn's text: what the person scheduled, marked so
/// the model knows it was not typed just now.
pub fn prompt_of(fired: &Fired) -> String {
    format!(
        "[Scheduled task {}{}] {}",
        fired.id,
        if fired.last { ", last run" } else { "" },
        fired.prompt
    )
}
