//! Scheduled prompts: `cron_create {cron, prompt, recurring?}`, `cron_list {}` and
//! `cron_delete {id}` over a session's [`CronTasks`] (issue 33). The expressions are in
//! `expr.rs`, the schedule and its jitter and expiry in `tasks.rs`; firing is the
//! session's: it asks [`CronTasks::due`] when idle and runs each prompt as a turn.
//!
//! A task lives in the session unless made with `durable: true`, which only the
//! person's settings can allow (`experimental.cronDurable`) and which asks the person
//! every time, whatever the settings say: a durable prompt runs in later sessions that
//! never saw it being made (issue 41). With nobody to ask (headless) it is refused as
//! any call that asks is.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolbelt_core::{BoxFuture, ExecContext, Invocation, Kind, Tool, ToolError, ToolResult};

mod durable;
mod expr;
mod tasks;

pub use expr::{CronError, CronExpr};
pub use tasks::{
    Clock, CronTask, CronTasks, DEFAULT_MAX_AGE_DAYS, Fired, MAX_TASKS, TaskOrigin, id_fraction,
    system_clock,
};

/// Which of the three tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Create,
    List,
    Delete,
}

/// `cron_create`, `cron_list` or `cron_delete` on one schedule.
pub struct CronTool {
    which: Which,
    tasks: Arc<CronTasks>,
    schema: Value,
}

impl CronTool {
    /// The three tools over `tasks`.
    pub fn all(tasks: &Arc<CronTasks>) -> [CronTool; 3] {
        [Which::Create, Which::List, Which::Delete].map(|which| CronTool {
            which,
            tasks: tasks.clone(),
            schema: schema(which),
        })
    }
}

fn schema(which: Which) -> Value {
    match which {
        Which::Create => crate::params::schema_for::<CreateParams>(),
        Which::List => crate::params::schema_for::<ListParams>(),
        Which::Delete => crate::params::schema_for::<DeleteParams>(),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct CreateParams {
    #[schemars(
        description = "5-field cron expression in local time: minute hour day-of-month month day-of-week (`*/5 * * * *`, `0 9 * * 1-5`). Supports *, values, ranges, steps and lists; not L, W, ?, # or names."
    )]
    cron: String,
    #[schemars(description = "The prompt to run when it fires.")]
    prompt: String,
    #[schemars(
        description = "Fire on every match (default true; expires after 7 days) or once and then delete itself."
    )]
    recurring: Option<bool>,
    #[schemars(
        description = "Keep the task across sessions of this project (default false: it ends with this session). Only when the user's settings allow durable tasks; the user is asked to approve each one."
    )]
    durable: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ListParams {}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct DeleteParams {
    #[schemars(description = "The 8-character id cron_create gave.")]
    id: String,
}

impl Tool for CronTool {
    fn name(&self) -> &str {
        match self.which {
            Which::Create => "cron_create",
            Which::List => "cron_list",
            Which::Delete => "cron_delete",
        }
    }
    fn display_name(&self) -> &str {
        match self.which {
            Which::Create => "CronCreate",
            Which::List => "CronList",
            Which::Delete => "CronDelete",
        }
    }
    fn description(&self) -> &str {
        match self.which {
            Which::Create => {
                "Schedules a prompt to run in this session on a 5-field cron expression (local time): to poll a build or a deploy, or remind yourself later. It fires only between turns, when the session is idle, a little late for recurring tasks (up to 10% of the period, at most 15 minutes) and up to 90 s early for one-shot tasks at :00 or :30. Recurring tasks expire after 7 days. At most 50 tasks; nothing is kept after the session ends unless made `durable` (which the user approves)."
            }
            Which::List => {
                "Lists the scheduled prompts of this session: id, cron expression, recurring or once, next fire time and prompt."
            }
            Which::Delete => "Deletes a scheduled prompt by the id cron_create gave.",
        }
    }
    fn kind(&self) -> Kind {
        Kind::Other
    }
    fn needs_confirmation(&self) -> bool {
        // A durable task asks; without durable tasks nothing does.
        self.which == Which::Create && self.tasks.durable_allowed()
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let action = match self.which {
            Which::Create => {
                let p: CreateParams = crate::parse_params(args)?;
                let cron = CronExpr::parse(&p.cron)
                    .map_err(|e| ToolError::invalid_params(e.to_string()))?;
                if p.prompt.trim().is_empty() {
                    return Err(ToolError::invalid_params("The prompt is empty."));
                }
                let durable = p.durable.unwrap_or(false);
                if durable && !self.tasks.durable_allowed() {
                    return Err(ToolError::invalid_params(
                        "Durable tasks are off (the user's settings do not set experimental.cronDurable); schedule it without `durable`, for this session only.",
                    ));
                }
                Action::Create(Create {
                    cron: Box::new(cron),
                    prompt: p.prompt,
                    recurring: p.recurring.unwrap_or(true),
                    durable,
                })
            }
            Which::List => Action::List,
            Which::Delete => Action::Delete(crate::parse_params::<DeleteParams>(args)?.id),
        };
        Ok(Box::new(CronCall {
            tasks: self.tasks.clone(),
            action,
        }))
    }
}

enum Action {
    Create(Create),
    List,
    Delete(String),
}

struct Create {
    cron: Box<CronExpr>,
    prompt: String,
    recurring: bool,
    durable: bool,
}

struct CronCall {
    tasks: Arc<CronTasks>,
    action: Action,
}

impl Invocation for CronCall {
    fn describe(&self) -> String {
        match &self.action {
            Action::Create(c) => format!(
                "{} {}{}",
                c.cron.as_str(),
                c.prompt,
                if c.durable { " (durable)" } else { "" }
            ),
            Action::List => "scheduled tasks".to_string(),
            Action::Delete(id) => id.clone(),
        }
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<toolbelt_core::ConfirmationDetails>> {
        // Scheduling for this session is allowed, as in Qwen Code: what a prompt does
        // when it fires is judged then, call by call. A durable task fires in sessions
        // that never saw it made, so the person says yes to it here.
        let question = match &self.action {
            Action::Create(c) if c.durable => Some(toolbelt_core::ConfirmationDetails::Info {
                title: "Keep a scheduled prompt across sessions?".to_string(),
                prompt: format!(
                    "Run this prompt on `{}` in this and later sessions of this project, until it is deleted{}: {}",
                    c.cron.as_str(),
                    if c.recurring {
                        " or expires"
                    } else {
                        " or has run once"
                    },
                    c.prompt
                ),
                urls: Vec::new(),
            }),
            _ => None,
        };
        Box::pin(async move { question })
    }
    fn execute(self: Box<Self>, _ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move { self.run() })
    }
}

impl CronCall {
    fn run(self) -> ToolResult {
        match self.action {
            Action::Create(Create {
                cron,
                prompt,
                recurring,
                durable,
            }) => match self.tasks.create(*cron, &prompt, recurring, durable) {
                Ok(task) => ToolResult::text(format!(
                    "Scheduled task {} ({}, {}); it fires next at {}, when the session is idle.",
                    task.id,
                    task.cron.as_str(),
                    if recurring {
                        "recurring, expires after 7 days"
                    } else {
                        "once"
                    },
                    task.next_fire.format("%Y-%m-%d %H:%M:%S %Z")
                )),
                Err(e) => ToolResult::error(ToolError::invalid_params(e.to_string())),
            },
            Action::List => ToolResult::text(list_text(&self.tasks.list())),
            Action::Delete(id) => {
                if self.tasks.delete(&id) {
                    ToolResult::text(format!("Deleted scheduled task {id}."))
                } else {
                    ToolResult::error(ToolError::invalid_params(format!(
                        "No scheduled task has the id \"{id}\"; cron_list shows them."
                    )))
                }
            }
        }
    }
}

/// The listing `cron_list` and `/loop list` show.
pub fn list_text(tasks: &[CronTask]) -> String {
    if tasks.is_empty() {
        return "No scheduled tasks.".to_string();
    }
    tasks
        .iter()
        .map(|t| {
            format!(
                "{}  {}  {}  next {}  {}",
                t.id,
                t.cron.as_str(),
                if t.recurring { "recurring" } else { "once" },
                t.next_fire.format("%Y-%m-%d %H:%M:%S"),
                t.prompt.replace('\n', " ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests;
