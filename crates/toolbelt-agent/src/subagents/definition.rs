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
use toolbelt_core::Kind;
use toolbelt_core::rules::wildcard;
use toolbelt_core::scheduler::ApprovalMode;

use toolbelt_core::front_matter;

/// Where a definition comes from; a higher level hides a lower one of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    BuiltIn,
    User,
    Project,
}

impl Level {
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
    pub name: String,
    pub description: String,
    pub tools: ToolAllow,
    pub disallowed_tools: Vec<String>,
    pub model: Option<String>,
    pub approval_mode: Option<ApprovalMode>,
    pub max_turns: Option<usize>,
    pub max_time: Option<Duration>,
    pub color: Option<String>,
    pub background: bool,
    /// The Markdown body.
    pub system_prompt: String,
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
pub struct DefinitionError {
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
pub fn parse(path: &Path, text: &str, level: Level) -> Result<AgentDefinition, DefinitionError> {
    let error = |line: usize, key: &str, message: String| DefinitionError {
        path: path.to_path_buf(),
        line,
        key: key.to_string(),
        message,
    };
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
    let line_of = |key: &str| {
        map.get(key).map_or(first, |v| {
            first + (v.referenced.line() as usize).saturating_sub(1)
        })
    };
    let bad = |key: &str, what: &str| error(line_of(key), key, what.to_string());
    let string = |key: &str| -> Result<Option<String>, DefinitionError> {
        match map.get(key).map(|v| &v.value) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(bad(key, "expected a string")),
        }
    };
    let list = |key: &str| -> Result<Option<Vec<String>>, DefinitionError> {
        match map.get(key).map(|v| &v.value) {
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
                .ok_or_else(|| bad(key, "expected a list of tool names (strings)")),
            Some(_) => Err(bad(key, "expected a list of tool names")),
        }
    };
    let name = string("name")?
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| bad("name", "required: the agent's name"))?;
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        || name.len() > 64
    {
        return Err(bad(
            "name",
            "use letters, digits, `-` and `_` only (at most 64)",
        ));
    }
    let description = string("description")?
        .filter(|d| !d.trim().is_empty())
        .ok_or_else(|| bad("description", "required: when to use this agent"))?;
    let tools = match list("tools")? {
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
    };
    let disallowed_tools = list("disallowedTools")?.unwrap_or_default();
    let model = match string("model")? {
        Some(m) => Some(m),
        None => match map.get("modelConfig").map(|v| &v.value) {
            Some(Value::Object(o)) => o.get("model").and_then(Value::as_str).map(str::to_string),
            _ => None,
        },
    }
    .filter(|m| !m.trim().is_empty() && m != "inherit");
    let approval_mode = match string("approvalMode")? {
        None => None,
        Some(m) => Some(m.parse::<ApprovalMode>().map_err(|_| {
            bad(
                "approvalMode",
                "expected one of plan, default, auto-edit, yolo",
            )
        })?),
    };
    let (mut max_turns, mut max_time) = (None, None);
    match map.get("runConfig").map(|v| &v.value) {
        None | Some(Value::Null) => {}
        Some(Value::Object(run)) => {
            let number = |key: &str| -> Result<Option<f64>, DefinitionError> {
                match run.get(key) {
                    None | Some(Value::Null) => Ok(None),
                    Some(v) => v
                        .as_f64()
                        .filter(|n| *n > 0.0 && n.is_finite())
                        .map(Some)
                        .ok_or_else(|| {
                            error(
                                line_of("runConfig"),
                                &format!("runConfig.{key}"),
                                "expected a positive number".into(),
                            )
                        }),
                }
            };
            max_turns = number("max_turns")?.map(|n| (n as usize).max(1));
            max_time = number("max_time_minutes")?.map(|m| Duration::from_secs_f64(m * 60.0));
        }
        Some(_) => {
            return Err(bad(
                "runConfig",
                "expected a mapping with max_turns and max_time_minutes",
            ));
        }
    }
    let color = string("color")?;
    let background = match map.get("background").map(|v| &v.value) {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(bad("background", "expected true or false")),
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
        system_prompt,
        level,
        path: Some(path.to_path_buf()),
    })
}

#[cfg(test)]
#[path = "definition_tests.rs"]
mod tests;
