//! A binding: what a declared tool runs. Kept outside the VS Code entry (whose schema
//! allows no extra properties), under `"bindings"` in a toolbelt manifest or in the
//! `toolbelt.json` beside an extension's `package.json`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use toolbelt_core::Kind;
use toolbelt_core::describe_type;

use super::manifest::string_field;

/// What a call runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Target {
    /// A program and its arguments, no shell; the input object on stdin.
    Command { argv: Vec<String> },
    /// The registered MCP tool `mcp__{server}__{tool}` of that server.
    Mcp { server: String, tool: String },
    /// A built-in tool, with fixed arguments that win over the model's.
    Builtin {
        tool: String,
        arguments: Map<String, Value>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Binding {
    pub target: Target,
    /// The `kind` the binding names, if any.
    pub kind: Option<Kind>,
    /// A command run before describing and confirming a call.
    pub prepare: Option<Vec<String>>,
    pub invocation_message: Option<String>,
    pub confirmation_title: Option<String>,
    pub confirmation_message: Option<String>,
    /// The folder of the manifest that declared the tool (`TOOLBELT_MANIFEST_DIR`).
    pub manifest_dir: PathBuf,
}

const BINDING_PROPERTIES: &[&str] = &[
    "command",
    "mcp",
    "builtin",
    "arguments",
    "kind",
    "prepare",
    "invocationMessage",
    "confirmationMessages",
];

/// Reads one binding; `Err` is the rule broken. A relative program path with a `/`
/// (`./count.sh`, `bin/tool`) is resolved against `manifest_dir`; a bare name is looked
/// up in `PATH` when it runs.
pub(crate) fn parse_binding(raw: &Value, manifest_dir: &Path) -> Result<Binding, String> {
    let Some(map) = raw.as_object() else {
        return Err(format!(
            "a binding must be an object, not {}",
            describe_type(raw)
        ));
    };
    let target = parse_target(map, target_key(map)?, manifest_dir)?;
    let kind = kind_field(map)?;
    let prepare = match map.get("prepare") {
        None => None,
        some => Some(argv(some, "prepare", manifest_dir)?),
    };
    let invocation_message = string_field(map, "invocationMessage")?;
    let (confirmation_title, confirmation_message) = confirmation_messages(map)?;
    Ok(Binding {
        target,
        kind,
        prepare,
        invocation_message,
        confirmation_title,
        confirmation_message,
        manifest_dir: manifest_dir.to_path_buf(),
    })
}

/// Checks the binding's properties and returns which target it names: `command`,
/// `mcp` or `builtin`, exactly one.
fn target_key(map: &Map<String, Value>) -> Result<&'static str, String> {
    if let Some(key) = map
        .keys()
        .find(|k| !BINDING_PROPERTIES.contains(&k.as_str()))
    {
        return Err(format!(
            "unknown property \"{}\" (a binding has {})",
            key.chars().take(60).collect::<String>(),
            BINDING_PROPERTIES.join(", ")
        ));
    }
    let given: Vec<&'static str> = ["command", "mcp", "builtin"]
        .into_iter()
        .filter(|k| map.contains_key(*k))
        .collect();
    let [key] = given.as_slice() else {
        return Err(format!(
            "a binding needs exactly one of \"command\", \"mcp\" or \"builtin\" (found {})",
            if given.is_empty() {
                "none".to_string()
            } else {
                given.join(", ")
            }
        ));
    };
    if map.contains_key("arguments") && *key != "builtin" {
        return Err("\"arguments\" belongs to a \"builtin\" binding".to_string());
    }
    Ok(key)
}

/// The target named by `key` (from [`target_key`]).
fn parse_target(
    map: &Map<String, Value>,
    key: &str,
    manifest_dir: &Path,
) -> Result<Target, String> {
    match key {
        "command" => Ok(Target::Command {
            argv: argv(map.get("command"), "command", manifest_dir)?,
        }),
        "mcp" => {
            let text = map.get("mcp").and_then(Value::as_str).unwrap_or_default();
            match text.split_once('/') {
                Some((server, tool))
                    if !server.is_empty() && !tool.is_empty() && !tool.contains('/') =>
                {
                    Ok(Target::Mcp {
                        server: server.to_string(),
                        tool: tool.to_string(),
                    })
                }
                _ => Err("\"mcp\" must be \"server/tool\"".to_string()),
            }
        }
        _ => {
            let tool = match map.get("builtin") {
                Some(Value::String(t)) if !t.trim().is_empty() => t.trim().to_string(),
                _ => return Err("\"builtin\" must be a tool name".to_string()),
            };
            let arguments = match map.get("arguments") {
                None => Map::new(),
                Some(Value::Object(a)) => a.clone(),
                Some(other) => {
                    return Err(format!(
                        "\"arguments\" must be an object, not {}",
                        describe_type(other)
                    ));
                }
            };
            Ok(Target::Builtin { tool, arguments })
        }
    }
}

fn kind_field(map: &Map<String, Value>) -> Result<Option<Kind>, String> {
    match map.get("kind") {
        None => Ok(None),
        Some(Value::String(k)) => Ok(Some(parse_kind(k).ok_or_else(|| {
            format!(
                "unknown kind \"{}\" (read, edit, delete, move, search, execute, fetch, think or other)",
                k.chars().take(40).collect::<String>()
            )
        })?)),
        Some(other) => Err(format!(
            "\"kind\" must be a string, not {}",
            describe_type(other)
        )),
    }
}

/// `confirmationMessages`: its title and message.
fn confirmation_messages(
    map: &Map<String, Value>,
) -> Result<(Option<String>, Option<String>), String> {
    match map.get("confirmationMessages") {
        None => Ok((None, None)),
        Some(Value::Object(messages)) => Ok((
            string_field(messages, "title")?,
            string_field(messages, "message")?,
        )),
        Some(other) => Err(format!(
            "\"confirmationMessages\" must be {{\"title\": ..., \"message\": ...}}, not {}",
            describe_type(other)
        )),
    }
}

fn argv(raw: Option<&Value>, key: &str, manifest_dir: &Path) -> Result<Vec<String>, String> {
    let bad = || {
        format!(
            "\"{key}\" must be a non-empty array of strings, the program first (no shell: write [\"sh\", \"-c\", \"...\"] for one)"
        )
    };
    let Some(Value::Array(items)) = raw else {
        return Err(bad());
    };
    let mut argv: Vec<String> = items
        .iter()
        .map(|i| i.as_str().map(str::to_string))
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    if argv.first().is_none_or(|p| p.trim().is_empty()) {
        return Err(bad());
    }
    if argv.iter().any(|a| a.contains('\0')) {
        return Err(format!("\"{key}\": an argument contains a NUL byte"));
    }
    if let Some(program) = argv.first_mut()
        && program.contains('/')
        && Path::new(program.as_str()).is_relative()
    {
        *program = manifest_dir.join(program.as_str()).display().to_string();
    }
    Ok(argv)
}

fn parse_kind(text: &str) -> Option<Kind> {
    Some(match text {
        "read" => Kind::Read,
        "edit" => Kind::Edit,
        "delete" => Kind::Delete,
        "move" => Kind::Move,
        "search" => Kind::Search,
        "execute" => Kind::Execute,
        "fetch" => Kind::Fetch,
        "think" => Kind::Think,
        "other" => Kind::Other,
        _ => return None,
    })
}
