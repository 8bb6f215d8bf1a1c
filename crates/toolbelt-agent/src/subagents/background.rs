//! Background sub-agents and the `task_stop` tool.
//!
//! `agent` with `run_in_background: true` answers at once with a task id and the
//! sub-agent runs on as a task of its own. When it ends, its notice (summary and final
//! answer) waits in [`BackgroundTasks`] until the agent loop that owns the table puts
//! it into the conversation as a user message, before its next model request; a loop
//! whose model has answered while tasks still run waits for the next notice rather than
//! ending (see `Agent::with_background`). Notices join the conversation only between
//! turns, after every tool call has its tool message, so the conversation stays well
//! formed.
//!
//! `task_stop {task_id}` cancels a background agent (its tool calls are cancelled and
//! their processes ended, as Ctrl-C would) or stops a background shell job started with
//! `is_background: true`, through [`ShellJobs`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ErrorKind, ExecContext, Invocation, Kind, Tool, ToolError,
    ToolResult,
};

/// How long `task_stop` waits for a stopped agent to hand in its last notice.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// The background agents of one agent loop.
#[derive(Default)]
pub struct BackgroundTasks {
    inner: Mutex<Inner>,
    next: AtomicU64,
    /// Bumped on every change, so waiters re-check.
    version: watch::Sender<u64>,
}

#[derive(Default)]
struct Inner {
    running: BTreeMap<String, Running>,
    /// Notices of finished tasks not yet given to the model.
    notices: Vec<String>,
}

struct Running {
    description: String,
    cancel: CancellationToken,
}

impl BackgroundTasks {
    pub fn new() -> Arc<Self> {
        Arc::new(BackgroundTasks::default())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn changed(&self) {
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Records a started task; returns its id (`agent_1`, `agent_2`, …).
    pub fn start(&self, description: &str, cancel: CancellationToken) -> String {
        let id = format!("agent_{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        self.lock().running.insert(
            id.clone(),
            Running {
                description: description.to_string(),
                cancel,
            },
        );
        self.changed();
        id
    }

    /// Records that task `id` ended, with the notice for the model.
    pub fn finish(&self, id: &str, notice: String) {
        {
            let mut inner = self.lock();
            inner.running.remove(id);
            inner.notices.push(notice);
        }
        self.changed();
    }

    /// The notices waiting for the model, oldest first; they are given only once.
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().notices)
    }

    /// Ids and descriptions of the tasks still running.
    pub fn running(&self) -> Vec<(String, String)> {
        self.lock()
            .running
            .iter()
            .map(|(id, r)| (id.clone(), r.description.clone()))
            .collect()
    }

    /// Whether a task runs or a notice waits.
    pub fn pending(&self) -> bool {
        let inner = self.lock();
        !inner.running.is_empty() || !inner.notices.is_empty()
    }

    /// Waits until a notice is waiting or nothing runs any more, or `cancel`.
    pub async fn wait_for_notice(&self, cancel: &CancellationToken) {
        let mut rx = self.version.subscribe();
        let ready = rx.wait_for(|_| {
            let inner = self.lock();
            !inner.notices.is_empty() || inner.running.is_empty()
        });
        tokio::select! {
            _ = ready => {}
            _ = cancel.cancelled() => {}
        }
    }

    /// Cancels task `id` and waits (bounded) until it has ended; `false` when no such
    /// task runs.
    pub async fn stop(&self, id: &str) -> bool {
        let Some(cancel) = self.lock().running.get(id).map(|r| r.cancel.clone()) else {
            return false;
        };
        cancel.cancel();
        let mut rx = self.version.subscribe();
        let gone = rx.wait_for(|_| !self.lock().running.contains_key(id));
        let _ = tokio::time::timeout(STOP_WAIT, gone).await;
        true
    }

    /// Cancels every task (the session ends) and waits, bounded, for them to end.
    pub async fn stop_all(&self) {
        let tokens: Vec<CancellationToken> = self
            .lock()
            .running
            .values()
            .map(|r| r.cancel.clone())
            .collect();
        if tokens.is_empty() {
            return;
        }
        for t in &tokens {
            t.cancel();
        }
        let mut rx = self.version.subscribe();
        let gone = rx.wait_for(|_| self.lock().running.is_empty());
        let _ = tokio::time::timeout(STOP_WAIT, gone).await;
    }
}

/// Background shell jobs, as `task_stop` sees them (the shell tool's job table, adapted
/// by whoever assembles the session).
pub trait ShellJobs: Send + Sync {
    /// Stops job `id`; `None` when there is no such job, else a line saying how it
    /// ended.
    fn stop<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Option<String>>;
}

/// `task_stop {task_id}`.
pub struct TaskStop {
    tasks: Arc<BackgroundTasks>,
    shell: Option<Arc<dyn ShellJobs>>,
    schema: Value,
}

impl TaskStop {
    pub fn new(tasks: Arc<BackgroundTasks>, shell: Option<Arc<dyn ShellJobs>>) -> Self {
        TaskStop {
            tasks,
            shell,
            schema: json!({
                "type": "object",
                "properties": {
                    "task_id": {"type": "string", "description": "The id of the background task: agent_N for a background agent, bg_N for a background shell job."}
                },
                "required": ["task_id"],
                "additionalProperties": false
            }),
        }
    }
}

impl Tool for TaskStop {
    fn name(&self) -> &str {
        "task_stop"
    }
    fn display_name(&self) -> &str {
        "TaskStop"
    }
    fn description(&self) -> &str {
        "Stops a background task: a sub-agent started with `agent` and run_in_background (task id agent_N; its tool calls are cancelled and their processes ended) or a shell command started with is_background (job id bg_N; its process group and whatever it left behind are ended). Use it when the task is no longer needed or has gone wrong."
    }
    // Stopping what the model itself started changes nothing in the workspace, so it
    // runs without confirmation and also in plan mode.
    fn kind(&self) -> Kind {
        Kind::Think
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let task_id = args
            .get("task_id")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| ToolError::invalid_params("task_id must be a non-empty string"))?
            .to_string();
        Ok(Box::new(StopCall {
            task_id,
            tasks: self.tasks.clone(),
            shell: self.shell.clone(),
        }))
    }
}

struct StopCall {
    task_id: String,
    tasks: Arc<BackgroundTasks>,
    shell: Option<Arc<dyn ShellJobs>>,
}

impl Invocation for StopCall {
    fn describe(&self) -> String {
        format!("Stop task {}", self.task_id)
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(std::future::ready(None))
    }
    fn execute(self: Box<Self>, _ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            if self.tasks.stop(&self.task_id).await {
                return ToolResult::text(format!(
                    "Background agent {} was stopped; its notice (with what it had found) comes as a message.",
                    self.task_id
                ));
            }
            if let Some(shell) = &self.shell
                && let Some(line) = shell.stop(&self.task_id).await
            {
                return ToolResult::text(line);
            }
            let running: Vec<String> = self
                .tasks
                .running()
                .into_iter()
                .map(|(id, d)| format!("{id} ({d})"))
                .collect();
            let known = if running.is_empty() {
                "No background agent is running.".to_string()
            } else {
                format!("Running background agents: {}.", running.join(", "))
            };
            ToolResult::error(ToolError::new(
                ErrorKind::InvalidToolParams,
                format!("No running task has the id \"{}\". {known}", self.task_id),
            ))
        })
    }
}
