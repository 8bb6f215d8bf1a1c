//! A declared tool and its calls.
//!
//! A call is VS Code's two steps: `prepare` (a `prepare` command, if the binding has one,
//! prints the invocation and confirmation messages for this input) and then `execute`.
//! Command bindings always ask, as VS Code's generic confirmation for extension tools
//! does, unless the person listed the tool in `tools.allowed`. Delegating bindings
//! (`mcp`, `builtin`) build the target's own call, so its validation, workspace boundary,
//! confirmation (a diff, a command) and path rules all still apply. A tool from the
//! manifests of an untrusted folder asks at every call, also where its target would
//! not: its fixed arguments are the project's words, not the model's or the person's
//! (see `declared/untrusted.rs`).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolbelt_config::when;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ExecContext, Invocation, Kind, PermissionSubject, Tool,
    ToolEnvironment, ToolError, ToolResult,
};
use toolbelt_engine::registry::Registration;

use super::binding::Binding;
use super::manifest::{Scope, ToolEntry};
use super::output::command_result;
use super::template::{Escape, render};
use crate::discovered::{CommandSettings, project_root};
use toolbelt_process::run::{self, RunEnd, RunSpec};

/// `tools.prepareTimeout` when unset.
pub(crate) const DEFAULT_PREPARE_TIMEOUT: Duration = Duration::from_secs(5);
/// Cap on a prepare command's output: it prints two short messages.
const PREPARE_OUTPUT_LIMIT: usize = 64 * 1024;
/// Longest message a prepare command may set, in characters.
const MAX_PREPARE_MESSAGE_CHARS: usize = 4_000;
/// Longest `describe()` built from the arguments, in characters.
const MAX_DESCRIBE_CHARS: usize = 200;

/// What a declared tool runs, resolved at registration.
pub(crate) enum Resolved {
    Command {
        argv: Vec<String>,
    },
    /// The registered tool a `builtin` or `mcp` binding delegates to, with the fixed
    /// arguments.
    Delegate {
        target: Registration,
        fixed: serde_json::Map<String, Value>,
    },
}

pub(crate) struct DeclaredTool {
    entry: ToolEntry,
    resolved: Resolved,
    kind: Kind,
    env: Arc<ToolEnvironment>,
    commands: Arc<CommandSettings>,
    prepare_timeout: Duration,
    /// Declared in a workspace manifest of a folder the person has not trusted.
    untrusted: bool,
}

impl DeclaredTool {
    pub(crate) fn new(
        entry: ToolEntry,
        resolved: Resolved,
        env: Arc<ToolEnvironment>,
        commands: Arc<CommandSettings>,
    ) -> Self {
        let kind = match &resolved {
            Resolved::Command { .. } => entry.binding.kind.unwrap_or(Kind::Other),
            Resolved::Delegate { target, .. } => target.tool.kind(),
        };
        let prepare_timeout = env
            .settings
            .tools
            .prepare_timeout
            .and_then(|m| m.duration())
            .unwrap_or(DEFAULT_PREPARE_TIMEOUT);
        let untrusted = entry.scope == Scope::Workspace && env.settings.untrusted_project.is_some();
        DeclaredTool {
            entry,
            resolved,
            kind,
            env,
            commands,
            prepare_timeout,
            untrusted,
        }
    }

    fn allowed(&self) -> bool {
        self.commands
            .allowed
            .iter()
            .any(|a| a.trim() == self.entry.name)
    }
}

impl Tool for DeclaredTool {
    fn name(&self) -> &str {
        &self.entry.name
    }
    fn display_name(&self) -> &str {
        &self.entry.display_name
    }
    fn description(&self) -> &str {
        &self.entry.model_description
    }
    fn kind(&self) -> Kind {
        self.kind
    }
    fn parameter_schema(&self) -> &Value {
        &self.entry.schema
    }
    fn needs_confirmation(&self) -> bool {
        if self.untrusted {
            return true;
        }
        match &self.resolved {
            Resolved::Command { .. } => !self.allowed(),
            Resolved::Delegate { target, .. } => target.tool.needs_confirmation(),
        }
    }
    fn when_clause(&self) -> Option<&when::Expr> {
        self.entry.when.as_ref()
    }
    fn reference_name(&self) -> Option<&str> {
        if self.entry.can_be_referenced {
            self.entry.tool_reference_name.as_deref()
        } else {
            None
        }
    }
    fn rule_target(&self) -> Option<&str> {
        match &self.resolved {
            Resolved::Command { .. } => None,
            Resolved::Delegate { target, .. } => Some(&target.name),
        }
    }

    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let messages = Messages::from_templates(&self.entry.binding, &args);
        let common = Common {
            name: self.entry.name.clone(),
            display_name: self.entry.display_name.clone(),
            binding: self.entry.binding.clone(),
            args,
            messages,
            prepare_timeout: self.prepare_timeout,
            cwd: project_root(&self.env),
            output_limit: self.commands.output_limit,
        };
        match &self.resolved {
            Resolved::Command { argv } => Ok(Box::new(CommandCall {
                common,
                argv: argv.clone(),
                allowed: self.allowed(),
                timeout: self.commands.call_timeout,
            })),
            Resolved::Delegate { target, fixed } => {
                let mut merged = common.args.as_object().cloned().unwrap_or_default();
                for (key, value) in fixed {
                    merged.insert(key.clone(), value.clone());
                }
                let inner = target.build(Value::Object(merged))?;
                Ok(Box::new(DelegateCall {
                    common,
                    inner,
                    untrusted: self.untrusted,
                }))
            }
        }
    }
}

/// The messages of one call: from the templates, then from the prepare command.
#[derive(Debug, Clone, Default)]
struct Messages {
    invocation: Option<String>,
    title: Option<String>,
    message: Option<String>,
}

impl Messages {
    fn from_templates(binding: &Binding, args: &Value) -> Self {
        Messages {
            invocation: (binding.invocation_message.as_deref())
                .map(|t| render(t, args, Escape::Plain)),
            title: (binding.confirmation_title.as_deref()).map(|t| render(t, args, Escape::Plain)),
            message: (binding.confirmation_message.as_deref())
                .map(|t| render(t, args, Escape::Markdown)),
        }
    }
}

/// What both kinds of call share.
struct Common {
    name: String,
    display_name: String,
    binding: Binding,
    args: Value,
    messages: Messages,
    prepare_timeout: Duration,
    cwd: PathBuf,
    output_limit: usize,
}

impl Common {
    fn describe(&self) -> String {
        if let Some(message) = &self.messages.invocation {
            return message.clone();
        }
        let args = self.args.to_string();
        let mut text = format!("{} {args}", self.display_name);
        if text.chars().count() > MAX_DESCRIBE_CHARS {
            text = text.chars().take(MAX_DESCRIBE_CHARS - 1).collect();
            text.push('…');
        }
        text
    }

    fn manifest_env(&self) -> Vec<(String, OsString)> {
        vec![(
            "TOOLBELT_MANIFEST_DIR".to_string(),
            self.binding.manifest_dir.clone().into_os_string(),
        )]
    }

    /// Runs the prepare command and takes the messages it prints. Any failure keeps the
    /// template messages (and, without them, the generic confirmation).
    async fn prepare(&mut self, cancel: &CancellationToken) {
        let Some(argv) = self.binding.prepare.clone() else {
            return;
        };
        let input = serde_json::to_vec(&self.args).unwrap_or_else(|_| b"{}".to_vec());
        let output = run::run(RunSpec {
            argv: &argv,
            cwd: &self.cwd,
            stdin: Some(input),
            timeout: self.prepare_timeout,
            output_cap: PREPARE_OUTPUT_LIMIT.min(self.output_limit),
            cancel: cancel.clone(),
            env: self.manifest_env(),
        })
        .await;
        if output.end != RunEnd::Exited(0) {
            tracing::warn!(
                tool = %self.name,
                "prepare command failed ({}); using the static messages",
                crate::discovered::describe_end(&output.end)
            );
            return;
        }
        let text = output.stdout_text();
        let prepared: Value = match serde_json::from_str(text.trim()) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                tracing::warn!(
                    tool = %self.name,
                    "prepare command did not print a JSON object; using the static messages"
                );
                return;
            }
        };
        let message = |v: Option<&Value>| {
            v.and_then(Value::as_str).map(|s| {
                s.chars()
                    .take(MAX_PREPARE_MESSAGE_CHARS)
                    .collect::<String>()
            })
        };
        // The message is Markdown and may span lines; the invocation message and the
        // title are one line each.
        let one_line = |v: Option<&Value>| {
            message(v).map(|s| s.chars().filter(|c| !c.is_control()).collect::<String>())
        };
        if let Some(invocation) = one_line(prepared.get("invocationMessage")) {
            self.messages.invocation = Some(invocation);
        }
        if let Some(confirmation) = prepared.get("confirmationMessages") {
            if let Some(title) = one_line(confirmation.get("title")) {
                self.messages.title = Some(title);
            }
            if let Some(text) = message(confirmation.get("message")) {
                self.messages.message = Some(text);
            }
        }
    }
}

struct CommandCall {
    common: Common,
    argv: Vec<String>,
    allowed: bool,
    timeout: Duration,
}

impl Invocation for CommandCall {
    fn describe(&self) -> String {
        self.common.describe()
    }

    fn prepare<'a>(&'a mut self, cancel: &'a CancellationToken) -> BoxFuture<'a, ()> {
        Box::pin(self.common.prepare(cancel))
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async move {
            if self.allowed {
                return None;
            }
            let messages = &self.common.messages;
            Some(ConfirmationDetails::Info {
                title: (messages.title.clone())
                    .unwrap_or_else(|| format!("Confirm {}", self.common.display_name)),
                prompt: (messages.message.clone()).unwrap_or_else(|| self.common.describe()),
                urls: Vec::new(),
            })
        })
    }

    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let input = serde_json::to_vec(&self.common.args).unwrap_or_else(|_| b"{}".to_vec());
            let output = run::run(RunSpec {
                argv: &self.argv,
                cwd: &self.common.cwd,
                stdin: Some(input),
                timeout: self.timeout,
                output_cap: self.common.output_limit,
                cancel: ctx.cancel.clone(),
                env: self.common.manifest_env(),
            })
            .await;
            command_result(&self.common.name, output)
        })
    }
}

struct DelegateCall {
    common: Common,
    inner: Box<dyn Invocation>,
    /// Asks even when `inner` would not (see [`DeclaredTool::untrusted`]).
    untrusted: bool,
}

impl Invocation for DelegateCall {
    fn describe(&self) -> String {
        // An untrusted folder's words for the call are not shown as what it does.
        if self.untrusted {
            return self.inner.describe();
        }
        self.common.describe()
    }

    fn locations(&self) -> Vec<PathBuf> {
        self.inner.locations()
    }

    fn permission_subject(&self) -> PermissionSubject {
        self.inner.permission_subject()
    }

    fn prepare<'a>(&'a mut self, cancel: &'a CancellationToken) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.common.prepare(cancel).await;
            self.inner.prepare(cancel).await;
        })
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async move {
            let Some(mut details) = self.inner.confirmation().await else {
                // The question shows what really runs (the target's own description),
                // never the manifest's words for it.
                return self.untrusted.then(|| ConfirmationDetails::Info {
                    title: format!(
                        "Confirm {} (declared by an untrusted folder)",
                        self.common.display_name
                    ),
                    prompt: format!(
                        "A tool manifest of a folder you have not trusted declares this tool; it runs: {}",
                        self.inner.describe()
                    ),
                    urls: Vec::new(),
                });
            };
            if let Some(title) = &self.common.messages.title
                && !self.untrusted
            {
                set_title(&mut details, title.clone());
            }
            Some(details)
        })
    }

    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        self.inner.execute(ctx)
    }
}

fn set_title(details: &mut ConfirmationDetails, new: String) {
    match details {
        ConfirmationDetails::Edit { title, .. }
        | ConfirmationDetails::Exec { title, .. }
        | ConfirmationDetails::Mcp { title, .. }
        | ConfirmationDetails::Info { title, .. }
        | ConfirmationDetails::Plan { title, .. } => *title = new,
        // A kind of question added later keeps its own title.
        _ => {}
    }
}
