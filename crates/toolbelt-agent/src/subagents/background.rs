//! Background sub-agents and the `task_stop` and `send_message` tools.
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
//!
//! `send_message {task_id, message}` puts a message in a running background agent's
//! [`Inbox`]; its loop reads the inbox between turns, as the parent reads notices, and
//! does not end while a message waits unread. Its inbox closes as it ends, in one step
//! with the check that nothing waits, so a message is either read or refused with "has
//! ended": never accepted and dropped. Messages that arrive after it stopped reading
//! for another reason (turn or time limit, cancellation) are listed in its notice.

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
    /// Ids of the tasks that have ended, so a message to one is told apart from a
    /// message to an id that never was.
    ended: std::collections::BTreeSet<String>,
}

struct Running {
    description: String,
    cancel: CancellationToken,
    inbox: Arc<Inbox>,
}

/// What became of a message given to [`BackgroundTasks::send`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// In the agent's inbox: it reads it before its next model request.
    Queued,
    /// The agent has ended (or is ending and reads nothing more): not delivered.
    Ended,
    /// No background agent of this loop has that id.
    Unknown,
}

/// The messages for one background agent from the loop that started it, read by the
/// agent's own loop between turns (see `Agent::with_inbox`).
#[derive(Default)]
pub struct Inbox {
    state: Mutex<InboxState>,
    /// Bumped on every message, so a waiting loop wakes.
    version: watch::Sender<u64>,
}

#[derive(Default)]
struct InboxState {
    messages: Vec<String>,
    /// The agent reads nothing more: new messages are refused.
    closed: bool,
}

impl Inbox {
    /// An empty inbox.
    pub fn new() -> Arc<Self> {
        Arc::new(Inbox::default())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, InboxState> {
        match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Queues `message`; `false` when the inbox is closed.
    pub fn push(&self, message: String) -> bool {
        {
            let mut state = self.lock();
            if state.closed {
                return false;
            }
            state.messages.push(message);
        }
        self.version.send_modify(|v| *v = v.wrapping_add(1));
        true
    }

    /// The messages waiting, oldest first; each is given once.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().messages)
    }

    /// Whether a message waits.
    pub fn has_messages(&self) -> bool {
        !self.lock().messages.is_empty()
    }

    /// Closes the inbox if no message waits, and says whether it did: `false` means a
    /// message came in and must be read before the agent may end.
    pub fn close_if_empty(&self) -> bool {
        let mut state = self.lock();
        if state.messages.is_empty() {
            state.closed = true;
        }
        state.closed
    }

    /// Closes the inbox; returns the messages nobody read.
    pub fn close(&self) -> Vec<String> {
        let mut state = self.lock();
        state.closed = true;
        std::mem::take(&mut state.messages)
    }

    /// Waits until a message waits.
    pub async fn wait(&self) {
        let mut rx = self.version.subscribe();
        let _ = rx.wait_for(|_| self.has_messages()).await;
    }
}

impl BackgroundTasks {
    /// An empty table.
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

    /// Records a started task, which reads `inbox`; returns its id (`agent_1`,
    /// `agent_2`, …).
    pub fn start(&self, description: &str, cancel: CancellationToken, inbox: Arc<Inbox>) -> String {
        let id = format!("agent_{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        self.lock().running.insert(
            id.clone(),
            Running {
                description: description.to_string(),
                cancel,
                inbox,
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
            inner.ended.insert(id.to_string());
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

    /// Gives `message` to the running task `id`.
    pub fn send(&self, id: &str, message: String) -> Sent {
        let inner = self.lock();
        match inner.running.get(id) {
            Some(task) if task.inbox.push(message) => Sent::Queued,
            Some(_) => Sent::Ended,
            None if inner.ended.contains(id) => Sent::Ended,
            None => Sent::Unknown,
        }
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
    /// Stops job `id` for the call `caller`; `None` when there is no such job (or it
    /// is another connection's, see `toolbelt_tools::JobTable::stop_for`), else a line
    /// saying how it ended.
    fn stop<'a>(&'a self, id: &'a str, caller: &'a str) -> BoxFuture<'a, Option<String>>;
}

/// `task_stop {task_id}`.
pub struct TaskStop {
    tasks: Arc<BackgroundTasks>,
    shell: Option<Arc<dyn ShellJobs>>,
    description: &'static str,
    schema: Value,
}

impl TaskStop {
    /// Stops background agents of `tasks` and the jobs of `shell`.
    pub fn new(tasks: Arc<BackgroundTasks>, shell: Option<Arc<dyn ShellJobs>>) -> Self {
        TaskStop::with_description(
            tasks,
            shell,
            "Stops a background task: a sub-agent started with `agent` and run_in_background (task id agent_N; its tool calls are cancelled and their processes ended) or a shell command started with is_background or a monitor (job id bg_N; its process group and whatever it left behind are ended). Use it when the task is no longer needed or has gone wrong.",
        )
    }

    /// Stops background shell jobs only, where there are no agents (`toolbelt mcp
    /// serve`): the description speaks of jobs alone.
    pub fn shell_jobs(shell: Arc<dyn ShellJobs>) -> Self {
        TaskStop::with_description(
            BackgroundTasks::new(),
            Some(shell),
            "Stops a shell command started with is_background (job id bg_N, as run_shell_command answered): its process group and whatever it left behind are ended. Use it when the command is no longer needed or has gone wrong.",
        )
    }

    fn with_description(
        tasks: Arc<BackgroundTasks>,
        shell: Option<Arc<dyn ShellJobs>>,
        description: &'static str,
    ) -> Self {
        TaskStop {
            tasks,
            shell,
            description,
            schema: json!({
                "type": "object",
                "properties": {
                    "task_id": {"type": "string", "description": "The id of the background task: agent_N for a background agent, bg_N for a background shell job or a monitor."}
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
        self.description
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
        let task_id = text_arg(&args, "task_id")
            .ok_or_else(|| ToolError::invalid_params("task_id must be a non-empty string"))?;
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
    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            if self.tasks.stop(&self.task_id).await {
                return ToolResult::text(format!(
                    "Background agent {} was stopped; its notice (with what it had found) comes as a message.",
                    self.task_id
                ));
            }
            if let Some(shell) = &self.shell
                && let Some(line) = shell.stop(&self.task_id, &ctx.call_id).await
            {
                return ToolResult::text(line);
            }
            ToolResult::error(ToolError::new(
                ErrorKind::InvalidToolParams,
                format!(
                    "No running task has the id \"{}\". {}",
                    self.task_id,
                    running_agents(&self.tasks)
                ),
            ))
        })
    }
}

/// The argument `key`, trimmed, when it is a string with something in it.
pub(crate) fn text_arg(args: &Value, key: &str) -> Option<String> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// "Running background agents: agent_1 (description), …." or that none runs.
fn running_agents(tasks: &BackgroundTasks) -> String {
    let running: Vec<String> = tasks
        .running()
        .into_iter()
        .map(|(id, d)| format!("{id} ({d})"))
        .collect();
    if running.is_empty() {
        "No background agent is running.".to_string()
    } else {
        format!("Running background agents: {}.", running.join(", "))
    }
}

/// `send_message {task_id, message}`: a message to a running background agent.
pub struct SendMessage {
    tasks: Arc<BackgroundTasks>,
    schema: Value,
}

impl SendMessage {
    /// The `send_message` tool over `tasks`.
    pub fn new(tasks: Arc<BackgroundTasks>) -> Self {
        SendMessage {
            tasks,
            schema: json!({
                "type": "object",
                "properties": {
                    "task_id": {"type": "string", "description": "The id of the background agent (agent_N), as the agent call that started it answered."},
                    "message": {"type": "string", "description": "What to tell it: a correction, a new detail, a narrower or wider task. Write it as you would to a colleague who cannot see your conversation."}
                },
                "required": ["task_id", "message"],
                "additionalProperties": false
            }),
        }
    }
}

impl Tool for SendMessage {
    fn name(&self) -> &str {
        "send_message"
    }
    fn display_name(&self) -> &str {
        "SendMessage"
    }
    fn description(&self) -> &str {
        "Sends a message to a background agent that is still running (task id agent_N from the agent call with run_in_background): it reads the message before its next step, and its final answer still arrives as a message when it ends. Use it to correct, narrow or extend its task without stopping it. A message to an agent that has ended is not delivered, and the call says so."
    }
    // A message to an agent the model itself started changes nothing in the workspace:
    // what the agent then does is judged by its own rules and approval mode.
    fn kind(&self) -> Kind {
        Kind::Think
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let text = |key: &str| {
            text_arg(&args, key).ok_or_else(|| {
                ToolError::invalid_params(format!("{key} must be a non-empty string"))
            })
        };
        Ok(Box::new(MessageCall {
            task_id: text("task_id")?,
            message: text("message")?,
            tasks: self.tasks.clone(),
        }))
    }
}

struct MessageCall {
    task_id: String,
    message: String,
    tasks: Arc<BackgroundTasks>,
}

impl Invocation for MessageCall {
    fn describe(&self) -> String {
        format!("Message to task {}", self.task_id)
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(std::future::ready(None))
    }
    fn execute(self: Box<Self>, _ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let id = &self.task_id;
            match self.tasks.send(id, self.message.clone()) {
                Sent::Queued => ToolResult::text(format!(
                    "The message was queued for background agent {id}: it reads it before its next step. Its final answer arrives as a message when it ends."
                )),
                Sent::Ended => ToolResult::error(ToolError::new(
                    ErrorKind::ExecutionFailed,
                    format!(
                        "Background agent {id} has ended, so the message was not delivered; its notice (with its final answer) comes or has come as a message. Start a new agent if the work must go on."
                    ),
                )),
                Sent::Unknown => ToolResult::error(ToolError::new(
                    ErrorKind::InvalidToolParams,
                    format!(
                        "No background agent has the id \"{id}\" (send_message reaches background agents, agent_N, not shell jobs). {}",
                        running_agents(&self.tasks)
                    ),
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_goes_to_a_running_agent_and_is_refused_once_it_ended() {
        let tasks = BackgroundTasks::new();
        assert_eq!(tasks.send("agent_1", "hi".into()), Sent::Unknown);
        let inbox = Inbox::new();
        let id = tasks.start("work", CancellationToken::new(), inbox.clone());
        assert_eq!(tasks.send(&id, "first".into()), Sent::Queued);
        assert_eq!(tasks.send(&id, "second".into()), Sent::Queued);
        assert_eq!(inbox.take(), ["first", "second"]);
        assert!(inbox.take().is_empty(), "a message is given once");
        tasks.finish(&id, "ended".into());
        assert_eq!(tasks.send(&id, "late".into()), Sent::Ended);
        assert_eq!(tasks.send("agent_2", "never".into()), Sent::Unknown);
    }

    #[test]
    fn the_inbox_closes_only_when_nothing_waits_and_then_refuses() {
        let tasks = BackgroundTasks::new();
        let inbox = Inbox::new();
        let id = tasks.start("work", CancellationToken::new(), inbox.clone());
        assert_eq!(tasks.send(&id, "wait".into()), Sent::Queued);
        // A message waits: the agent may not end yet.
        assert!(!inbox.close_if_empty());
        assert_eq!(inbox.take(), ["wait"]);
        assert!(inbox.close_if_empty());
        // Still in the table (its notice is not written yet), but reading nothing more.
        assert_eq!(tasks.running().len(), 1);
        assert_eq!(tasks.send(&id, "too late".into()), Sent::Ended);
        assert!(inbox.take().is_empty());
    }

    #[test]
    fn closing_hands_back_what_nobody_read() {
        let inbox = Inbox::new();
        assert!(inbox.push("one".into()));
        assert!(inbox.push("two".into()));
        assert_eq!(inbox.close(), ["one", "two"]);
        assert!(!inbox.push("three".into()));
        assert!(inbox.close().is_empty());
    }

    #[tokio::test]
    async fn a_waiting_loop_wakes_when_a_message_comes() {
        let inbox = Inbox::new();
        let waiter = tokio::spawn({
            let inbox = inbox.clone();
            async move { inbox.wait().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        assert!(inbox.push("wake".into()));
        tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("the waiter woke")
            .unwrap();
        // A message already waiting: no wait at all.
        inbox.wait().await;
    }
}
