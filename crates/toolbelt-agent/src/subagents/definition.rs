//! One sub-agent definition: Qwen Code's Markdown file with YAML front matter.
//!
//! ```text
//! ---
//! name: reviewer                      # required
//! description: Reviews a diff         # required: when the parent should use it
//! tools: [read_file, grep_search, "mcp__github__*"]   # allow list, `*` globs
//! disallowedTools: [run_shell_command]
//! model: qwen3-coder                  # another model than the parent's
//! approvalMode: plan                  # may narrow the parent's mode, never widen it
//! runConfig: { max_turns: 10, max_time_minutes: 5 }
//! color: blue
//! background: false                   # run in the background by default
//! isolation: worktree                 # work in a git worktree of its own
//! ---
//! The system prompt.
//! ```
//!
//! The YAML goes through `serde-saphyr` into a map of spanned values, and each known key
//! is then checked here, so a problem names the file, the line and the key (a typed
//! struct would only say what failed, not which key). Unknown keys are ignored, as Qwen
//! Code ignores them; the legacy `modelConfig {model}` is still read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use serde_saphyr::Spanned;
use toolbelt_config::ApprovalMode;
use toolbelt_core::Kind;
use toolbelt_engine::rules::wildcard;

use toolbelt_config::front_matter;

/// Where a definition comes from; a higher level hides a lower one of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Shipped with toolbelt.
    BuiltIn,
    /// From the person's home (`~/.qwen/agents`).
    User,
    /// From the project (`.qwen/agents`).
    Project,
}

impl Level {
    /// The spelling listings use: `builtin`, `user`, `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::BuiltIn => "builtin",
            Level::User => "user",
            Level::Project => "project",
        }
    }
}

/// Which tools a sub-agent gets (before `disallowedTools` and the `agent` rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolAllow {
    /// Every tool of the parent except `agent`.
    All,
    /// Read-only kinds that write nothing at all: read, search, fetch (not `think`,
    /// whose `save_memory` and `todo_write` write files).
    ReadOnly,
    /// Tool names or display names; `*` matches any run of characters.
    Names(Vec<String>),
}

/// A parsed definition.
#[derive(Debug, Clone)]
pub struct AgentDefinition {
    /// The name the `agent` tool is called with (letters, digits, `-`, `_`).
    pub name: String,
    /// When to use this agent: the model reads it to choose.
    pub description: String,
    /// Which tools it gets.
    pub tools: ToolAllow,
    /// Tools taken away from those (`disallowedTools`).
    pub disallowed_tools: Vec<String>,
    /// The model to use; `None`: the parent's.
    pub model: Option<String>,
    /// An approval mode, which can only narrow the parent's.
    pub approval_mode: Option<ApprovalMode>,
    /// The turn limit (`runConfig.max_turns`).
    pub max_turns: Option<usize>,
    /// The time limit (`runConfig.max_time_minutes`).
    pub max_time: Option<Duration>,
    /// The color displays show it in.
    pub color: Option<String>,
    /// Whether it runs in the background by default.
    pub background: bool,
    /// Whether it works in a git worktree of its own (`isolation: worktree`).
    pub isolated: bool,
    /// The Markdown body.
    pub system_prompt: String,
    /// The level it was found at.
    pub level: Level,
    /// The file, for user and project definitions.
    pub path: Option<PathBuf>,
}

/// The name of the tool that starts sub-agents.
pub const AGENT_TOOL: &str = "agent";

impl AgentDefinition {
    /// Whether this agent may use a tool registered as `name` (display name
    /// `display`, kind `kind`). `agent` itself only when the allow list names it
    /// exactly: a glob such as `*` never grants recursion.
    pub fn allows(&self, name: &str, display: &str, kind: Kind) -> bool {
        if self.denies(name, display) {
            return false;
        }
        let listed = |patterns: &[String]| listed(patterns, name, display);
        if name == AGENT_TOOL {
            return matches!(&self.tools, ToolAllow::Names(n) if n.iter().any(|t| t == AGENT_TOOL));
        }
        match &self.tools {
            ToolAllow::All => true,
            ToolAllow::ReadOnly => matches!(kind, Kind::Read | Kind::Search | Kind::Fetch),
            ToolAllow::Names(names) => listed(names),
        }
    }

    /// Whether `disallowedTools` names the tool.
    pub fn denies(&self, name: &str, display: &str) -> bool {
        listed(&self.disallowed_tools, name, display)
    }

    /// The allow list as words, for listings.
    pub fn tools_text(&self) -> Vec<String> {
        match &self.tools {
            ToolAllow::All => vec!["* (all but agent)".to_string()],
            ToolAllow::ReadOnly => vec!["read-only tools (read, search, fetch)".to_string()],
            ToolAllow::Names(n) => n.clone(),
        }
    }
}

/// Whether one of `patterns` matches the tool's name or display name.
fn listed(patterns: &[String], name: &str, display: &str) -> bool {
    patterns
        .iter()
        .any(|p| wildcard(p, name) || (!display.is_empty() && wildcard(p, display)))
}

/// The mode a sub-agent runs in: the parent's, or the definition's when that is
/// narrower (plan < default < auto-edit < yolo). A definition never widens it.
pub fn narrowed_mode(parent: ApprovalMode, wanted: Option<ApprovalMode>) -> ApprovalMode {
    let rank = |m: ApprovalMode| match m {
        ApprovalMode::Plan => 0,
        ApprovalMode::Default => 1,
        ApprovalMode::AutoEdit => 2,
        ApprovalMode::Yolo => 3,
    };
    match wanted {
        Some(w) if rank(w) < rank(parent) => w,
        _ => parent,
    }
}

/// A definition file that could not be loaded: `file:line: key: problem`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DefinitionError {
    pub path: PathBuf,
    pub line: usize,
    /// The key at fault; empty for problems of the file as a whole.
    pub key: String,
    pub message: String,
}

impl std::fmt::Display for DefinitionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: ", self.path.display(), self.line)?;
        if !self.key.is_empty() {
            write!(f, "key `{}`: ", self.key)?;
        }
        f.write_str(&self.message)
    }
}

/// Parses one definition file's text.
pub(super) fn parse(
    path: &Path,
    text: &str,
    level: Level,
) -> Result<AgentDefinition, DefinitionError> {
    let error =
        |line: usize, key: &str, message: String| definition_error(path, line, key, message);
    // The shared reader: the same split, and the same size, depth and alias budgets as
    // skills, so a hostile definition cannot blow up the YAML parser.
    let split = front_matter::split(text).map_err(|e| error(e.line.unwrap_or(1), "", e.message))?;
    let Some(yaml) = split.yaml else {
        return Err(error(
            1,
            "",
            "no YAML front matter: the file must start with a `---` line".into(),
        ));
    };
    let first = split.yaml_line;
    let map: BTreeMap<String, Spanned<Value>> =
        front_matter::parse_yaml(yaml, first).map_err(|e| {
            error(
                e.line.unwrap_or(first),
                e.key.as_deref().unwrap_or(""),
                format!("invalid YAML: {}", e.message),
            )
        })?;
    let fields = Fields { path, map, first };
    let name = fields.name()?;
    let description = fields
        .string("description")?
        .filter(|d| !d.trim().is_empty())
        .ok_or_else(|| fields.bad("description", "required: when to use this agent"))?;
    let tools = fields.tools()?;
    let disallowed_tools = fields.list("disallowedTools")?.unwrap_or_default();
    let model = fields.model()?;
    let approval_mode = fields.approval_mode()?;
    let (max_turns, max_time) = fields.run_config()?;
    let color = fields.string("color")?;
    let background = match fields.value("background") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(fields.bad("background", "expected true or false")),
    };
    let isolated = match fields.value("isolation") {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) if s == super::isolation::WORKTREE => true,
        Some(_) => return Err(fields.bad("isolation", "the one isolation is `worktree`")),
    };
    let system_prompt = split.body.trim().to_string();
    if system_prompt.is_empty() {
        return Err(error(
            split.body_line,
            "",
            "the body (the agent's system prompt) is empty".into(),
        ));
    }
    Ok(AgentDefinition {
        name,
        description,
        tools,
        disallowed_tools,
        model,
        approval_mode,
        max_turns,
        max_time,
        color,
        background,
        isolated,
        system_prompt,
        level,
        path: Some(path.to_path_buf()),
    })
}

fn definition_error(path: &Path, line: usize, key: &str, message: String) -> DefinitionError {
    DefinitionError {
        path: path.to_path_buf(),
        line,
        key: key.to_string(),
        message,
    }
}

/// The front matter of one definition file, read key by key with errors that name
/// the file, the line and the key.
struct Fields<'a> {
    path: &'a Path,
    map: BTreeMap<String, Spanned<Value>>,
    /// The line the YAML starts on.
    first: usize,
}

impl Fields<'_> {
    fn value(&self, key: &str) -> Option<&Value> {
        self.map.get(key).map(|v| &v.value)
    }

    fn line_of(&self, key: &str) -> usize {
        self.map.get(key).map_or(self.first, |v| {
            self.first + (v.referenced.line() as usize).saturating_sub(1)
        })
    }

    fn bad(&self, key: &str, what: &str) -> DefinitionError {
        definition_error(self.path, self.line_of(key), key, what.to_string())
    }

    fn string(&self, key: &str) -> Result<Option<String>, DefinitionError> {
        match self.value(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.bad(key, "expected a string")),
        }
    }

    fn list(&self, key: &str) -> Result<Option<Vec<String>>, DefinitionError> {
        match self.value(key) {
            None | Some(Value::Null) => Ok(None),
            // Qwen Code also takes a comma-separated string.
            Some(Value::String(s)) => Ok(Some(
                s.split(',')
                    .map(|t| t.trim().to_string())
                    .filter(|t| !t.is_empty())
                    .collect(),
            )),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| i.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .map(Some)
                .ok_or_else(|| self.bad(key, "expected a list of tool names (strings)")),
            Some(_) => Err(self.bad(key, "expected a list of tool names")),
        }
    }

    fn name(&self) -> Result<String, DefinitionError> {
        let name = self
            .string("name")?
            .filter(|n| !n.trim().is_empty())
            .ok_or_else(|| self.bad("name", "required: the agent's name"))?;
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            || name.len() > 64
        {
            return Err(self.bad("name", "use letters, digits, `-` and `_` only (at most 64)"));
        }
        Ok(name)
    }

    fn tools(&self) -> Result<ToolAllow, DefinitionError> {
        Ok(match self.list("tools")? {
            None => ToolAllow::All,
            Some(names) if names.iter().any(|n| n == "*") => {
                let mut names = names;
                names.retain(|n| n != "*");
                if names.is_empty() {
                    ToolAllow::All
                } else {
                    names.push("*".into());
                    ToolAllow::Names(names)
                }
            }
            Some(names) => ToolAllow::Names(names),
        })
    }

    fn model(&self) -> Result<Option<String>, DefinitionError> {
        Ok(match self.string("model")? {
            Some(m) => Some(m),
            None => match self.value("modelConfig") {
                Some(Value::Object(o)) => {
                    o.get("model").and_then(Value::as_str).map(str::to_string)
                }
                _ => None,
            },
        }
        .filter(|m| !m.trim().is_empty() && m != "inherit"))
    }

    fn approval_mode(&self) -> Result<Option<ApprovalMode>, DefinitionError> {
        match self.string("approvalMode")? {
            None => Ok(None),
            Some(m) => Ok(Some(m.parse::<ApprovalMode>().map_err(|_| {
                self.bad(
                    "approvalMode",
                    "expected one of plan, default, auto-edit, yolo",
                )
            })?)),
        }
    }

    /// `runConfig`: the turn and time limits.
    fn run_config(&self) -> Result<(Option<usize>, Option<Duration>), DefinitionError> {
        let run = match self.value("runConfig") {
            None | Some(Value::Null) => return Ok((None, None)),
            Some(Value::Object(run)) => run,
            Some(_) => {
                return Err(self.bad(
                    "runConfig",
                    "expected a mapping with max_turns and max_time_minutes",
                ));
            }
        };
        let number = |key: &str| -> Result<Option<f64>, DefinitionError> {
            match run.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v
                    .as_f64()
                    .filter(|n| *n > 0.0 && n.is_finite())
                    .map(Some)
                    .ok_or_else(|| {
                        definition_error(
                            self.path,
                            self.line_of("runConfig"),
                            &format!("runConfig.{key}"),
                            "expected a positive number".into(),
                        )
                    }),
            }
        };
        let max_turns = number("max_turns")?.map(|n| (n as usize).max(1));
        let max_time = number("max_time_minutes")?.map(|m| Duration::from_secs_f64(m * 60.0));
        Ok((max_turns, max_time))
    }
}

#[cfg(test)]
#[path = "definition_tests.rs"]
mod tests;
