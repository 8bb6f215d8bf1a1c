//! Tools a project brings with a command: `tools.discoveryCommand` lists them,
//! `tools.callCommand NAME` runs one with the JSON arguments on stdin.
//!
//! The protocol is Qwen Code's; what differs is robustness. Both commands run
//! without a shell (split into words the way a shell splits them; shell syntax such as
//! `;`, `|` or `$(...)` is an error that says to write `sh -c '...'` for a shell) in the
//! project root, in their own process group, with a time limit
//! (`tools.discoveryTimeout`, default 30 s; `tools.callTimeout`, default 10 min; both in
//! milliseconds) and a cap on each output stream (`tools.commandOutputLimit`, default
//! 10 MB). A cancelled call kills the whole group. Exit code 0 is success even when the
//! command wrote to stderr (Qwen Code counted that as a failure): the stderr text comes
//! back as a note. Any other end is a `discovered_tool_execution_error` that carries
//! stdout, stderr, the exit code and the signal.
//!
//! Discovery never fails the session: bad output becomes a warning that says what was
//! wrong, and every declaration that can be read still becomes a tool.
//!
//! Discovered tools run project code, so they ask for confirmation unless
//! `tools.trustDiscoveredTools` is true or their name is in `tools.allowed`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use toolbelt_core::describe_type;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, Display, ErrorKind, ExecContext, Invocation, Kind, Part, Tool,
    ToolEnvironment, ToolError, ToolResult,
};

mod command_line;

pub use command_line::{CommandLineError, split_command};

use toolbelt_process::run::{self, RunEnd, RunOutput, RunSpec};

pub(crate) const DEFAULT_DISCOVERY_TIMEOUT: Duration = Duration::from_secs(30);
pub(crate) const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(600);
/// Qwen Code's cap on each stream of the discovery command.
pub(crate) const DEFAULT_OUTPUT_LIMIT: usize = 10 * 1024 * 1024;

/// The limits and commands, read once from the settings.
#[derive(Debug, Clone)]
pub struct CommandSettings {
    pub discovery_command: Option<String>,
    pub call_command: Option<String>,
    pub discovery_timeout: Duration,
    pub call_timeout: Duration,
    pub output_limit: usize,
    /// `tools.trustDiscoveredTools`: run without asking.
    pub trusted: bool,
    /// `tools.allowed`: names that run without asking.
    pub allowed: Vec<String>,
}

impl CommandSettings {
    pub fn from_env(env: &ToolEnvironment) -> Self {
        let s = &env.settings;
        CommandSettings {
            discovery_command: s
                .tools
                .discovery_command
                .clone()
                .filter(|c| !c.trim().is_empty()),
            call_command: s
                .tools
                .call_command
                .clone()
                .filter(|c| !c.trim().is_empty()),
            discovery_timeout: (s.tools.discovery_timeout.and_then(|m| m.duration()))
                .unwrap_or(DEFAULT_DISCOVERY_TIMEOUT),
            call_timeout: (s.tools.call_timeout.and_then(|m| m.duration()))
                .unwrap_or(DEFAULT_CALL_TIMEOUT),
            output_limit: (s.tools.command_output_limit.filter(|n| *n > 0))
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(DEFAULT_OUTPUT_LIMIT),
            trusted: s.tools.trust_discovered_tools,
            allowed: s.tools.allowed.clone(),
        }
    }
}

/// What discovery produced: the tools, and what was wrong with the output.
#[derive(Default)]
pub struct Discovery {
    /// The tools found, ready to register.
    pub tools: Vec<Arc<dyn Tool>>,
    /// What went wrong, one line each; the other tools still load.
    pub warnings: Vec<String>,
}

/// Runs `tools.discoveryCommand` in the project root (the first workspace directory) and
/// turns its output into tools. No command configured: no tools, no warnings.
pub async fn discover(env: &Arc<ToolEnvironment>) -> Discovery {
    let settings = Arc::new(CommandSettings::from_env(env));
    let Some(command) = settings.discovery_command.clone() else {
        return Discovery::default();
    };
    let mut discovery = Discovery::default();
    let argv = match split_command(&command) {
        Ok(argv) => argv,
        Err(why) => {
            discovery
                .warnings
                .push(format!("tools.discoveryCommand `{command}`: {why}"));
            return discovery;
        }
    };
    let output = run::run(RunSpec {
        argv: &argv,
        cwd: &project_root(env),
        stdin: None,
        timeout: settings.discovery_timeout,
        output_cap: settings.output_limit,
        cancel: Default::default(),
        env: Vec::new(),
    })
    .await;
    if output.end != RunEnd::Exited(0) {
        discovery.warnings.push(format!(
            "tools.discoveryCommand `{command}` failed ({}); no discovered tools were loaded.{}",
            describe_end(&output.end),
            stderr_hint(&output)
        ));
        return discovery;
    }
    let parsed = parse_declarations(&output.stdout);
    discovery.warnings.extend(
        parsed
            .warnings
            .into_iter()
            .map(|w| format!("tools.discoveryCommand `{command}`: {w}")),
    );
    for decl in parsed.declarations {
        discovery.tools.push(Arc::new(DiscoveredTool::new(
            decl,
            env.clone(),
            settings.clone(),
        )));
    }
    discovery
}

pub(crate) fn project_root(env: &ToolEnvironment) -> PathBuf {
    env.roots
        .primary()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// One declaration read from the discovery output.
#[derive(Debug, Clone, PartialEq)]
pub struct Declaration {
    pub name: String,
    pub description: String,
    pub schema: Value,
}

#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub declarations: Vec<Declaration>,
    pub warnings: Vec<String>,
}

/// Reads every accepted shape: a JSON array of bare declarations (`parameters` or
/// `parametersJsonSchema`) and of `functionDeclarations` / `function_declarations`
/// wrappers, mixed freely. What cannot be read is a warning; the rest still loads.
pub(crate) fn parse_declarations(stdout: &[u8]) -> Parsed {
    let mut parsed = Parsed::default();
    let text = String::from_utf8_lossy(stdout);
    let value: Value = match serde_json::from_str(text.trim()) {
        Ok(v) => v,
        Err(e) => {
            parsed.warnings.push(format!(
                "the output is not JSON ({e}); it starts with: {}",
                excerpt(&text, 80)
            ));
            return parsed;
        }
    };
    let items = match value {
        Value::Array(items) => items,
        // A single wrapper object is what a hand-written script often prints.
        Value::Object(map) if is_wrapper(&map) => vec![Value::Object(map)],
        other => {
            parsed.warnings.push(format!(
                "the output must be a JSON array of function declarations, not {}",
                describe_type(&other)
            ));
            return parsed;
        }
    };
    for (i, item) in items.into_iter().enumerate() {
        let Value::Object(map) = item else {
            parsed.warnings.push(format!(
                "item {i} is {}, not a function declaration object; skipped",
                describe_type(&item)
            ));
            continue;
        };
        if is_wrapper(&map) {
            let list = map
                .get("functionDeclarations")
                .or_else(|| map.get("function_declarations"));
            match list {
                Some(Value::Array(decls)) => {
                    for (j, decl) in decls.iter().enumerate() {
                        read_declaration(decl, &format!("item {i}, declaration {j}"), &mut parsed);
                    }
                }
                _ => parsed.warnings.push(format!(
                    "item {i}: functionDeclarations must be an array; skipped"
                )),
            }
        } else {
            read_declaration(&Value::Object(map), &format!("item {i}"), &mut parsed);
        }
    }
    parsed
}

fn is_wrapper(map: &Map<String, Value>) -> bool {
    map.contains_key("functionDeclarations") || map.contains_key("function_declarations")
}

fn read_declaration(decl: &Value, at: &str, parsed: &mut Parsed) {
    let Some(map) = decl.as_object() else {
        parsed.warnings.push(format!(
            "{at} is {}, not an object; skipped",
            describe_type(decl)
        ));
        return;
    };
    let name = match map.get("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n.trim().to_string(),
        _ => {
            parsed
                .warnings
                .push(format!("{at} has no \"name\" string; skipped"));
            return;
        }
    };
    let description = map
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let schema = match map
        .get("parametersJsonSchema")
        .or_else(|| map.get("parameters"))
    {
        None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
        Some(Value::Object(schema)) => {
            let mut schema = Value::Object(schema.clone());
            lowercase_types(&mut schema);
            if schema.get("type").is_none() {
                schema["type"] = json!("object");
            }
            schema
        }
        Some(other) => {
            parsed.warnings.push(format!(
                "{at} (\"{name}\"): the parameters must be a JSON Schema object, not {}; the tool takes no arguments",
                describe_type(other)
            ));
            json!({"type": "object", "properties": {}})
        }
    };
    parsed.declarations.push(Declaration {
        name,
        description,
        schema,
    });
}

/// Gemini-style schemas spell types in capitals (`"OBJECT"`, `"STRING"`); JSON Schema
/// needs lower case.
fn lowercase_types(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match (key.as_str(), value) {
                    ("type", Value::String(t)) => *t = t.to_ascii_lowercase(),
                    (_, v) => lowercase_types(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(lowercase_types),
        _ => {}
    }
}

fn excerpt(text: &str, max: usize) -> String {
    let one_line: String = text
        .trim()
        .chars()
        .take(max)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!("{one_line:?}")
}

pub(crate) fn describe_end(end: &RunEnd) -> String {
    match end {
        RunEnd::Exited(code) => format!("exit code {code}"),
        RunEnd::Signaled(signal) => format!("killed by {}", run::signal_name(*signal)),
        RunEnd::TimedOut(limit) => {
            format!("no answer within {} ms; it was killed", limit.as_millis())
        }
        RunEnd::Cancelled => "cancelled".into(),
        RunEnd::OutputTooLarge(cap) => format!("output over the {cap}-byte limit; it was killed"),
        RunEnd::SpawnFailed(why) => why.clone(),
    }
}

fn stderr_hint(output: &RunOutput) -> String {
    let stderr = output.stderr_text();
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!(" stderr: {}", excerpt(&stderr, 200))
    }
}

/// A tool declared by the discovery command.
pub struct DiscoveredTool {
    decl: Declaration,
    description: String,
    env: Arc<ToolEnvironment>,
    settings: Arc<CommandSettings>,
}

impl DiscoveredTool {
    /// A tool as the discovery command described it, called through the call command.
    pub fn new(
        decl: Declaration,
        env: Arc<ToolEnvironment>,
        settings: Arc<CommandSettings>,
    ) -> Self {
        let call = settings
            .call_command
            .as_deref()
            .unwrap_or("(tools.callCommand is not set)");
        let description = format!(
            "{}\n\nThis tool was discovered from the project's tools.discoveryCommand. When called, it runs `{call} {}` in the project root with the arguments as JSON on standard input; its standard output is the result.",
            decl.description.trim_end(),
            decl.name
        );
        DiscoveredTool {
            decl,
            description,
            env,
            settings,
        }
    }

    fn trusted(&self) -> bool {
        self.settings.trusted
            || self
                .settings
                .allowed
                .iter()
                .any(|a| a.trim() == self.decl.name)
    }
}

impl Tool for DiscoveredTool {
    fn name(&self) -> &str {
        &self.decl.name
    }
    fn display_name(&self) -> &str {
        &self.decl.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn kind(&self) -> Kind {
        Kind::Execute
    }
    fn parameter_schema(&self) -> &Value {
        &self.decl.schema
    }
    fn needs_confirmation(&self) -> bool {
        !self.trusted()
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let Some(call) = self.settings.call_command.clone() else {
            return Err(ToolError::new(
                ErrorKind::DiscoveredToolExecutionError,
                format!(
                    "Tool \"{}\" cannot run: tools.callCommand is not set in the settings.",
                    self.decl.name
                ),
            ));
        };
        let mut argv = split_command(&call).map_err(|why| {
            ToolError::new(
                ErrorKind::DiscoveredToolExecutionError,
                format!("tools.callCommand `{call}`: {why}"),
            )
        })?;
        argv.push(self.decl.name.clone());
        Ok(Box::new(DiscoveredCall {
            name: self.decl.name.clone(),
            argv,
            args,
            trusted: self.trusted(),
            cwd: project_root(&self.env),
            settings: self.settings.clone(),
        }))
    }
}

struct DiscoveredCall {
    name: String,
    argv: Vec<String>,
    args: Value,
    trusted: bool,
    cwd: PathBuf,
    settings: Arc<CommandSettings>,
}

impl Invocation for DiscoveredCall {
    fn describe(&self) -> String {
        format!("Run discovered tool {} with {}", self.name, self.args)
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async move {
            if self.trusted {
                return None;
            }
            Some(ConfirmationDetails::Exec {
                title: format!("Run discovered tool {}", self.name),
                command: format!("{} <<< '{}'", self.argv.join(" "), self.args),
                root_commands: vec![self.name.clone()],
            })
        })
    }

    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let input = serde_json::to_vec(&self.args).unwrap_or_else(|_| b"{}".to_vec());
            let output = run::run(RunSpec {
                argv: &self.argv,
                cwd: &self.cwd,
                stdin: Some(input),
                timeout: self.settings.call_timeout,
                output_cap: self.settings.output_limit,
                cancel: ctx.cancel.clone(),
                env: Vec::new(),
            })
            .await;
            call_result(&self.name, output)
        })
    }
}

/// A command's successful result: `parts` and `display`, with what it wrote to stderr
/// added to both as a note (exit 0 is success even with stderr output).
pub(crate) fn success_with_stderr(
    mut parts: Vec<Part>,
    mut display: String,
    stderr: &str,
) -> ToolResult {
    if !stderr.trim().is_empty() {
        let note = format!(
            "Note: the tool also wrote to stderr:\n{}",
            stderr.trim_end()
        );
        display.push_str(&format!("\n\n{note}"));
        parts.push(Part::text(note));
    }
    ToolResult {
        llm_content: parts,
        return_display: Display::markdown(display),
        error: None,
    }
}

/// Exit 0: stdout is the result, stderr a note. Anything else: Qwen Code's error shape.
fn call_result(name: &str, output: RunOutput) -> ToolResult {
    let stdout = output.stdout_text();
    let stderr = output.stderr_text();
    if output.end == RunEnd::Exited(0) {
        return success_with_stderr(vec![Part::text(stdout.clone())], stdout, &stderr);
    }
    let (code, signal, why) = match &output.end {
        RunEnd::Exited(code) => (
            code.to_string(),
            "(none)".to_string(),
            format!("exited with code {code}"),
        ),
        RunEnd::Signaled(signal) => (
            "(none)".into(),
            run::signal_name(*signal),
            format!("killed by {}", run::signal_name(*signal)),
        ),
        other => ("(none)".into(), "SIGKILL".into(), describe_end(other)),
    };
    let kind = match output.end {
        RunEnd::Cancelled => ErrorKind::Cancelled,
        RunEnd::TimedOut(_) => ErrorKind::Timeout,
        _ => ErrorKind::DiscoveredToolExecutionError,
    };
    let message = format!(
        "Discovered tool \"{name}\" failed: {why}.\nStdout: {}\nStderr: {}\nExit Code: {code}\nSignal: {signal}",
        or_empty(&stdout),
        or_empty(&stderr)
    );
    ToolResult::err(kind, message)
}

fn or_empty(text: &str) -> &str {
    if text.trim().is_empty() {
        "(empty)"
    } else {
        text.trim_end()
    }
}

#[cfg(test)]
mod tests;
