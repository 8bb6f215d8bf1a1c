//! `monitor`: runs a command in the background and turns each line of its output into an
//! event the model reads between turns (a log tail, a test watcher, a deploy).
//!
//! A monitor *is* a background shell job: the call is built by the shell tool itself
//! (with `is_background`), so the same spawning, permission rules, confirmation,
//! sandbox and ending apply, and a rule for `run_shell_command` covers `monitor` too
//! ([`Tool::rule_target`]). Its id is the job's (`bg_N`), so `task_stop` ends it and the
//! end of the session ends it like any job. What is added: [`follow`] reads the job's
//! log as it grows, and [`MonitorTable`] paces the lines into events (a token bucket:
//! 5 at once, then 1 a second; the rest dropped and counted), bounds what waits, and
//! says how each monitor ended (exit, `max_events`, `idle_timeout_ms`, `task_stop`).
//! Whoever runs the turns (the agent loop) takes the events with [`MonitorTable::take`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, Display, ErrorKind, ExecContext, Invocation, Kind,
    PermissionSubject, Tool, ToolEnvironment, ToolError, ToolResult,
};

mod bucket;
mod follow;
mod table;

use follow::Limits;
use table::MAX_MONITORS;
pub use table::MonitorTable;
#[cfg(test)]
use table::{MAX_LINE_CHARS, MAX_QUEUED};

use crate::shell::RunShellCommand;
use crate::shell::background::JobTable;

/// Lines after which a monitor ends unless the call says otherwise (Qwen Code's).
pub(crate) const DEFAULT_MAX_EVENTS: u64 = 1000;
/// The most lines a call may ask for.
pub(crate) const MAX_EVENTS: u64 = 10_000;
/// Quiet time after which a monitor ends unless the call says otherwise (Qwen Code's).
pub(crate) const DEFAULT_IDLE_TIMEOUT_MS: u64 = 300_000;
/// The longest quiet time a call may ask for.
pub(crate) const MAX_IDLE_TIMEOUT_MS: u64 = 600_000;

/// The `monitor` tool.
pub struct Monitor {
    shell: RunShellCommand,
    table: Arc<MonitorTable>,
    schema: Value,
}

impl Monitor {
    /// A monitor tool whose jobs go to `jobs` (the shell tool's table, so `task_stop`
    /// and the session's end reach them) and whose events go to `table`.
    pub fn new(env: Arc<ToolEnvironment>, jobs: Arc<JobTable>, table: Arc<MonitorTable>) -> Self {
        Monitor {
            shell: RunShellCommand::new(env).with_jobs(jobs),
            table,
            schema: crate::params::schema_for::<Params>(),
        }
    }

    /// The same tool judging sandbox support by `support` (tests).
    pub fn with_sandbox_support(mut self, support: crate::SandboxSupport) -> Self {
        self.shell = self.shell.with_sandbox_support(support);
        self
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Params {
    #[schemars(
        description = "Bash command whose output to watch (`tail -f app.log`, a test watcher, a deploy). Each line it prints becomes an event you receive between turns."
    )]
    command: String,
    #[schemars(
        description = "Brief description of what is watched, shown to the person approving it."
    )]
    description: Option<String>,
    #[schemars(
        range(min = 1, max = MAX_EVENTS),
        description = "Lines after which the monitor is ended (default 1000, at most 10000)."
    )]
    max_events: Option<u64>,
    #[schemars(
        range(min = 1, max = MAX_IDLE_TIMEOUT_MS),
        description = "The monitor is ended after this long without output (default 300000, at most 600000)."
    )]
    idle_timeout_ms: Option<u64>,
    #[schemars(
        description = "Absolute path of the directory to run in; must be inside the workspace. Defaults to the first workspace directory."
    )]
    directory: Option<String>,
}

/// The tool's name, also in the rule vocabulary (`rule_words.rs`).
pub(crate) const NAME: &str = "monitor";

impl Tool for Monitor {
    fn name(&self) -> &str {
        NAME
    }
    fn display_name(&self) -> &str {
        "Monitor"
    }
    fn description(&self) -> &str {
        "Runs a command in the background and delivers each line of its output to you as an event between turns, \
         in order: use it to watch a log (`tail -f`), a test watcher, a build or a deploy instead of polling. \
         Events are paced (5 at once, then 1 a second; lines over the rate are dropped and the count is said). \
         The monitor ends when the command exits, after max_events lines, after idle_timeout_ms without output, \
         with task_stop and its id, or when the session ends; its whole output is also in a log file. \
         At most 16 monitors run at once. The command is checked and confirmed like run_shell_command."
    }
    fn kind(&self) -> Kind {
        Kind::Execute
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn rule_target(&self) -> Option<&str> {
        // The shell's rules hold for the commands a monitor runs.
        Some("run_shell_command")
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        let max_events = params.max_events.unwrap_or(DEFAULT_MAX_EVENTS);
        if !(1..=MAX_EVENTS).contains(&max_events) {
            return Err(ToolError::invalid_params(format!(
                "max_events must be between 1 and {MAX_EVENTS}, not {max_events}."
            )));
        }
        let idle = params.idle_timeout_ms.unwrap_or(DEFAULT_IDLE_TIMEOUT_MS);
        if !(1..=MAX_IDLE_TIMEOUT_MS).contains(&idle) {
            return Err(ToolError::invalid_params(format!(
                "idle_timeout_ms must be between 1 and {MAX_IDLE_TIMEOUT_MS}, not {idle}."
            )));
        }
        let mut shell_args = json!({"command": params.command, "is_background": true});
        if let Some(d) = &params.description {
            shell_args["description"] = json!(d);
        }
        if let Some(d) = &params.directory {
            shell_args["directory"] = json!(d);
        }
        let job = self.shell.build(shell_args)?;
        Ok(Box::new(MonitorCall {
            job,
            table: self.table.clone(),
            command: params.command.trim().to_string(),
            limits: Limits {
                max_events,
                idle: Duration::from_millis(idle),
            },
        }))
    }
}

struct MonitorCall {
    /// The shell's own call, in the background.
    job: Box<dyn Invocation>,
    table: Arc<MonitorTable>,
    command: String,
    limits: Limits,
}

impl Invocation for MonitorCall {
    fn describe(&self) -> String {
        let text = self.job.describe();
        let text = text.strip_suffix(" [background]").unwrap_or(&text);
        format!("{text} [monitor]")
    }
    fn locations(&self) -> Vec<std::path::PathBuf> {
        self.job.locations()
    }
    fn permission_subject(&self) -> PermissionSubject {
        self.job.permission_subject()
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        self.job.confirmation()
    }
    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move { self.run(ctx).await })
    }
}

impl MonitorCall {
    async fn run(self, ctx: ExecContext) -> ToolResult {
        let Some(slot) = self.table.reserve() else {
            return ToolResult::err(
                ErrorKind::ExecutionDenied,
                format!(
                    "{MAX_MONITORS} monitors already run; end one with task_stop before starting another."
                ),
            );
        };
        let Some(jobs) = self.table.jobs() else {
            return ToolResult::err(ErrorKind::ShellExecuteError, "The session is ending.");
        };
        let caller = ctx.call_id.clone();
        let before: Vec<String> = jobs.jobs().into_iter().map(|j| j.id).collect();
        let started = self.job.execute(ctx).await;
        if started.is_error() {
            return started;
        }
        // The job this call started: the new one with this call's id.
        let Some(job) = jobs
            .jobs()
            .into_iter()
            .find(|j| j.started_by == caller && !before.contains(&j.id))
        else {
            return ToolResult::err(
                ErrorKind::ShellExecuteError,
                "The monitor's command started but its job was not found.",
            );
        };
        self.table
            .started(slot, &job.id, &self.command, Instant::now());
        tokio::spawn(follow::follow(
            self.table.clone(),
            job.id.clone(),
            job.log_path.clone(),
            self.limits,
        ));
        let text = format!(
            "Monitor {id} started.\nCommand: {command}\nPID: {pid}\nOutput file: {log}\n\
             Each line the command prints reaches you as an event between turns, tagged [{id}] (at most 5 at once, \
             then 1 a second; lines over that rate are dropped and counted). It ends when the command exits, after \
             {max} lines, after {idle} ms without output, or with task_stop {{\"task_id\": \"{id}\"}}.",
            id = job.id,
            command = self.command,
            pid = job.pid,
            log = job.log_path.display(),
            max = self.limits.max_events,
            idle = self.limits.idle.as_millis(),
        );
        ToolResult::with_display(
            text,
            Display::markdown(format!(
                "Monitoring `{}` as {} (PID {}).",
                self.command, job.id, job.pid
            )),
        )
    }
}

#[cfg(test)]
mod tests;
