//! Small tools of our own for the scheduler tests, and helpers to run a turn.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{Barrier, Notify};
use tokio_util::sync::CancellationToken;

use super::super::*;
use crate::registry::Origin;
use toolbelt_config::settings::Settings;
use toolbelt_core::ConfirmationDetails;
use toolbelt_core::WorkspaceRoots;
use toolbelt_core::{BoxFuture, ExecContext, Invocation, Kind, Tool, ToolEnvironment};
use toolbelt_core::{ErrorKind, Part, ToolError, ToolResult};

/// The name of the test tool that ends plan mode, as the built-in does.
pub(crate) const EXIT_PLAN_MODE: &str = "exit_plan_mode";

/// What a test tool does when executed.
#[derive(Clone)]
pub(crate) enum Behaviour {
    /// Returns `echo: <value>`.
    Echo,
    /// Waits at the barrier, then echoes.
    Barrier(Arc<Barrier>),
    /// Fails the test if another exclusive call runs at the same time.
    Exclusive(Arc<AtomicUsize>, Arc<AtomicUsize>),
    /// Appends `start:<value>` and `end:<value>` to the log around a yield.
    Log(Arc<std::sync::Mutex<Vec<String>>>),
    /// Waits for `wait` to be notified, then echoes; notifies `done` afterwards.
    Chain(Arc<Notify>, Arc<Notify>),
    /// Notifies that it started, waits for cancellation, returns a partial result.
    UntilCancelled(Arc<Notify>),
    /// Sends two chunks of live output, then echoes.
    Streams,
    /// Returns a text far over the output budget.
    Huge,
    Panics,
    /// Returns how the call came to run (`ctx.consent`).
    ReportsConsent,
}

pub(crate) struct TestTool {
    pub name: &'static str,
    pub kind: Kind,
    pub confirm: Option<ConfirmationDetails>,
    pub behaviour: Behaviour,
    /// What it says of itself ([`toolbelt_core::ToolFacts`]).
    pub facts: toolbelt_core::ToolFacts,
    schema: Value,
}

impl TestTool {
    pub(crate) fn new(name: &'static str, kind: Kind, behaviour: Behaviour) -> Self {
        TestTool {
            name,
            kind,
            confirm: natural_confirmation(kind, name),
            behaviour,
            facts: toolbelt_core::ToolFacts::default(),
            schema: json!({
                "type": "object",
                "properties": {"value": {"type": "string"}},
                "additionalProperties": false
            }),
        }
    }
}

/// The confirmation a real tool of this kind gives: none for read-only kinds except
/// fetch, a diff for file changes, a command for execution, an MCP question for others.
pub(crate) fn natural_confirmation(kind: Kind, name: &str) -> Option<ConfirmationDetails> {
    match kind {
        Kind::Read | Kind::Search | Kind::Think => None,
        Kind::Edit | Kind::Delete | Kind::Move => Some(ConfirmationDetails::Edit {
            title: format!("Confirm {name}"),
            file_name: "a.txt".into(),
            file_path: "/w/a.txt".into(),
            diff: "-a\n+b\n".into(),
            is_new_file: false,
            original_content: Some("a\n".into()),
            new_content: Some("b\n".into()),
        }),
        Kind::Execute => Some(ConfirmationDetails::Exec {
            title: "Confirm shell command".into(),
            command: "git status".into(),
            root_commands: vec!["git".into()],
        }),
        Kind::Fetch => Some(ConfirmationDetails::Info {
            title: "Confirm fetch".into(),
            prompt: "fetch".into(),
            urls: vec!["https://example.invalid/".into()],
        }),
        Kind::Other => Some(ConfirmationDetails::Mcp {
            title: "Confirm MCP tool".into(),
            server: "srv".into(),
            tool: name.into(),
            tool_display_name: name.into(),
        }),
    }
}

struct TestCall {
    value: String,
    confirm: Option<ConfirmationDetails>,
    behaviour: Behaviour,
}

impl Tool for TestTool {
    fn name(&self) -> &str {
        self.name
    }
    fn display_name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "A test tool."
    }
    fn kind(&self) -> Kind {
        self.kind
    }
    fn ends_plan_mode(&self) -> bool {
        self.name == EXIT_PLAN_MODE
    }
    fn facts(&self) -> toolbelt_core::ToolFacts {
        self.facts
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let value = args
            .get("value")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if value == "bad" {
            return Err(ToolError::invalid_params("value must not be 'bad'"));
        }
        Ok(Box::new(TestCall {
            value,
            confirm: self.confirm.clone(),
            behaviour: self.behaviour.clone(),
        }))
    }
}

impl Invocation for TestCall {
    fn describe(&self) -> String {
        format!("test {}", self.value)
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async move { self.confirm.clone() })
    }
    fn permission_subject(&self) -> toolbelt_core::PermissionSubject {
        toolbelt_core::PermissionSubject::Literal(self.value.clone())
    }
    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let echo = format!("echo: {}", self.value);
            match self.behaviour {
                Behaviour::Echo => ToolResult::text(echo),
                Behaviour::Barrier(b) => {
                    b.wait().await;
                    ToolResult::text(echo)
                }
                Behaviour::Exclusive(running, max) => {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    max.fetch_max(now, Ordering::SeqCst);
                    for _ in 0..5 {
                        tokio::task::yield_now().await;
                    }
                    running.fetch_sub(1, Ordering::SeqCst);
                    ToolResult::text(echo)
                }
                Behaviour::Log(log) => {
                    log.lock().unwrap().push(format!("start:{}", self.value));
                    for _ in 0..5 {
                        tokio::task::yield_now().await;
                    }
                    log.lock().unwrap().push(format!("end:{}", self.value));
                    ToolResult::text(echo)
                }
                Behaviour::Chain(wait, done) => {
                    wait.notified().await;
                    done.notify_one();
                    ToolResult::text(echo)
                }
                Behaviour::UntilCancelled(started) => {
                    started.notify_one();
                    ctx.cancel.cancelled().await;
                    let mut r =
                        ToolResult::err(ErrorKind::Cancelled, "cancelled after step 1 of 3");
                    r.llm_content.insert(0, Part::text("partial: step 1 done"));
                    r
                }
                Behaviour::Streams => {
                    ctx.output.emit("one");
                    ctx.output.emit("two");
                    ToolResult::text(echo)
                }
                Behaviour::Huge => ToolResult::text("x\n".repeat(5_000)),
                Behaviour::Panics => panic!("test tool panics"),
                Behaviour::ReportsConsent => ToolResult::text(format!("{:?}", ctx.consent)),
            }
        })
    }
}

/// A session environment in a temp dir, with a small output budget.
pub(crate) fn env(dir: &tempfile::TempDir) -> Arc<ToolEnvironment> {
    let roots = WorkspaceRoots::new([dir.path()]).unwrap();
    let mut env = ToolEnvironment::new(roots, Arc::new(Settings::default()), dir.path().join("s"));
    env.output.max_lines = 100;
    Arc::new(env)
}

pub(crate) fn registry(tools: Vec<TestTool>) -> ToolRegistry {
    let mut r = ToolRegistry::new();
    for t in tools {
        r.register(Arc::new(t), Origin::BuiltIn);
    }
    r
}

pub(crate) fn call(id: &str, name: &str, value: &str) -> ToolCallRequest {
    ToolCallRequest::new(id, name, &json!({ "value": value }))
}

/// Runs one turn with a timeout that turns a hang into a failure.
pub(crate) async fn run(
    scheduler: &Scheduler,
    registry: &ToolRegistry,
    calls: Vec<ToolCallRequest>,
) -> Vec<CompletedCall> {
    run_with(
        scheduler,
        registry,
        calls,
        TurnInfo::default(),
        &CancellationToken::new(),
    )
    .await
}

pub(crate) async fn run_with(
    scheduler: &Scheduler,
    registry: &ToolRegistry,
    calls: Vec<ToolCallRequest>,
    turn: TurnInfo,
    cancel: &CancellationToken,
) -> Vec<CompletedCall> {
    tokio::time::timeout(
        Duration::from_secs(20),
        scheduler.run(registry, calls, turn, cancel),
    )
    .await
    .expect("the scheduler hung")
}
