//! A tool of your own beside the built-ins, driven by the agent loop.
//!
//! `count_words {path}` counts the words of a workspace file: its declaration (name,
//! description, JSON Schema), validation (the schema, then its own checks), a
//! confirmation (it asks before reading a file over 1 MiB), and execution that stops when
//! the call is cancelled. The model is the replay model, so this runs offline:
//!
//! ```sh
//! cargo run --example custom_tool
//! ```

use std::path::PathBuf;
use std::sync::Arc;
use toolbelt_engine::{scheduler::CallRules, scheduler::Permissions};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_agent::Agent;
use toolbelt_config::ApprovalMode;
use toolbelt_config::settings::Settings;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ConfirmationOutcome, Display, ErrorKind, ExecContext,
    Invocation, Kind, PermissionSubject, Tool, ToolEnvironment, ToolError, ToolResult,
    WorkspaceRoots,
};
use toolbelt_engine::{registry::Origin, registry::ToolRegistry};
use toolbelt_engine::{
    scheduler::Approval, scheduler::ApprovalRequest, scheduler::Approver,
    scheduler::SchedulerConfig,
};
use toolbelt_model::{ReplayModel, UserPart, parse_script};

/// The tool: a declaration that builds one invocation per call.
struct CountWords {
    env: Arc<ToolEnvironment>,
    schema: Value,
}

impl CountWords {
    fn new(env: Arc<ToolEnvironment>) -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file to count, absolute or relative to the workspace."}
            },
            "required": ["path"],
            "additionalProperties": false
        });
        CountWords { env, schema }
    }
}

impl Tool for CountWords {
    fn name(&self) -> &str {
        "count_words"
    }
    fn display_name(&self) -> &str {
        "CountWords"
    }
    fn description(&self) -> &str {
        "Counts the words, lines and bytes of one text file in the workspace. Use it to size a \
         file before reading it; it does not read binary files or directories."
    }
    fn kind(&self) -> Kind {
        Kind::Read
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    /// The arguments already passed the schema; the tool checks what a schema cannot.
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let given = args["path"].as_str().unwrap_or_default().trim();
        if given.is_empty() {
            return Err(ToolError::invalid_params("path is empty: name a file"));
        }
        let root = self.env.roots.roots().first().cloned().unwrap_or_default();
        let joined = root.join(given);
        // The workspace boundary: `..` and symbolic links are resolved before the check.
        let path = self.env.roots.resolve_readable(&joined.to_string_lossy())?;
        Ok(Box::new(CountCall { path }))
    }
}

/// One validated call.
struct CountCall {
    path: PathBuf,
}

impl Invocation for CountCall {
    fn describe(&self) -> String {
        format!("Count the words of {}", self.path.display())
    }
    fn permission_subject(&self) -> PermissionSubject {
        PermissionSubject::Paths(vec![self.path.clone()])
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async move {
            let size = std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0);
            (size > 1024 * 1024).then(|| ConfirmationDetails::Info {
                title: format!("Read all {size} bytes of {}?", self.path.display()),
                prompt: "count_words reads the whole file".to_string(),
                urls: Vec::new(),
            })
        })
    }
    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let path = self.path.clone();
            let work = tokio::task::spawn_blocking(move || std::fs::read(&path));
            let bytes = tokio::select! {
                read = work => match read {
                    Ok(Ok(bytes)) => bytes,
                    Ok(Err(e)) => return ToolResult::err(ErrorKind::ReadContentFailure, format!("{}: {e}", self.path.display())),
                    Err(e) => return ToolResult::err(ErrorKind::ExecutionFailed, e.to_string()),
                },
                _ = ctx.cancel.cancelled() => return ToolResult::err(ErrorKind::Cancelled, "cancelled before the file was read"),
            };
            let text = String::from_utf8_lossy(&bytes);
            let summary = format!(
                "{}: {} words, {} lines, {} bytes",
                self.path.display(),
                text.split_whitespace().count(),
                text.lines().count(),
                bytes.len()
            );
            ToolResult::with_display(summary.clone(), Display::markdown(summary))
        })
    }
}

/// Says what it is asked and approves once (a real program asks its user).
struct SayYes;

impl Approver for SayYes {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        println!("asked: {}", request.details.title());
        Box::pin(async { ConfirmationOutcome::ProceedOnce.into() })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let workspace = dir.path().canonicalize()?;
    std::fs::write(workspace.join("notes.txt"), "one two three\nfour five\n")?;

    let roots = WorkspaceRoots::new([workspace.clone()])?;
    let env = Arc::new(ToolEnvironment::new(
        roots,
        Arc::new(Settings::default()),
        workspace.join(".session"),
    ));
    let mut registry = ToolRegistry::default();
    toolbelt_tools::register_builtins(&mut registry, &env);
    let name = registry.register(Arc::new(CountWords::new(env.clone())), Origin::Declared);
    println!(
        "registered {name} beside {} built-in tools",
        registry.len() - 1
    );

    // What the model will say: call the tool, then answer from its result.
    let script = parse_script(
        r#"{"tool_calls": [{"id": "c1", "name": "count_words", "arguments": {"path": "notes.txt"}}]}
{"text": "notes.txt has 5 words."}"#,
        Some(&workspace),
    )?;
    let model = Arc::new(ReplayModel::new(&script, "replay"));
    let config = SchedulerConfig::new(CallRules::new(
        Permissions::new(&toolbelt_engine::rules::RuleVocabulary::default()),
        ApprovalMode::Default,
        None,
        None,
    ))
    .approver(Some(Arc::new(SayYes)));
    let agent = Agent::new(
        model,
        Arc::new(registry),
        env,
        config,
        "You are a helpful coding agent.".to_string(),
        10,
        None,
    );
    let outcome = agent
        .run(
            vec![UserPart::Text("How many words are in notes.txt?".into())],
            &CancellationToken::new(),
        )
        .await;
    for call in &outcome.calls {
        println!("{} -> {}", call.description, call.result.llm_text());
    }
    println!("answer: {}", outcome.answer);
    Ok(())
}
