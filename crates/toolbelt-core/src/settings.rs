//! Settings, in Qwen Code's `settings.json` format, from layered files.
//!
//! Layers, lowest to highest: built-in defaults, user (`~/.qwen/settings.json`), workspace
//! (`<project>/.qwen/settings.json`), system (`/etc/toolbelt/settings.json`, or the file
//! named by `TOOLBELT_SYSTEM_SETTINGS_PATH`). Objects merge key by key and a higher layer's
//! value replaces a lower one's, except: `permissions.allow|ask|deny` and `tools.exclude`
//! are the union of all layers, `context.includeDirectories` and `mcp.allowed|excluded`
//! concatenate, and `mcpServers` merges by server name (a server is taken whole from the
//! highest layer that defines it). These are Qwen Code's merge strategies.
//!
//! Comments (`//`, `/* */`, `#`) are tolerated. Strings may use `$VAR` and `${VAR}`;
//! unset variables are left as written. A malformed file is an error naming the file,
//! line and column; a known key with a value of the wrong type names the file and key;
//! unknown keys are ignored (reported at debug level), so newer files work with older
//! builds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

mod merge;

pub use merge::merge_layers;

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{path}: {message} at line {line} column {column}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: {key}: {message}")]
    Invalid {
        path: PathBuf,
        key: String,
        message: String,
    },
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
}

/// Which file a layer comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SettingsLayer {
    User,
    Workspace,
    System,
}

/// Where the settings files are.
#[derive(Debug, Clone, Default)]
pub struct SettingsPaths {
    pub user: Option<PathBuf>,
    pub workspace: Option<PathBuf>,
    pub system: Option<PathBuf>,
}

impl SettingsPaths {
    /// The standard places for a project at `project_dir`.
    pub fn standard(project_dir: &Path) -> Self {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let system = std::env::var_os("TOOLBELT_SYSTEM_SETTINGS_PATH")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/etc/toolbelt/settings.json"));
        let user = home.map(|h| h.join(".qwen/settings.json"));
        let workspace = project_dir.join(".qwen/settings.json");
        // In the home directory the workspace file is the user file: read it once.
        let workspace = if Some(&workspace) == user.as_ref() {
            None
        } else {
            Some(workspace)
        };
        SettingsPaths {
            user,
            workspace,
            system: Some(system),
        }
    }

    fn layers(&self) -> impl Iterator<Item = (SettingsLayer, &PathBuf)> {
        [
            (SettingsLayer::User, self.user.as_ref()),
            (SettingsLayer::Workspace, self.workspace.as_ref()),
            (SettingsLayer::System, self.system.as_ref()),
        ]
        .into_iter()
        .filter_map(|(layer, path)| path.map(|p| (layer, p)))
    }
}

/// The merged settings: the raw JSON (for keys read by one component only) and a typed
/// view of the keys the core uses.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    #[serde(skip)]
    pub raw: Value,
    /// The files that were read, lowest layer first.
    #[serde(skip)]
    pub sources: Vec<PathBuf>,
    /// `(name, value)` of every environment variable that `$VAR`/`${VAR}` expanded, for
    /// [`crate::redact`]: see [`Settings::expanded_variables`].
    #[serde(skip)]
    expanded: Vec<(String, String)>,
    pub tools: ToolsSettings,
    pub permissions: PermissionSettings,
    pub context: ContextSettings,
    pub mcp_servers: BTreeMap<String, McpServerSettings>,
    pub mcp: McpSettings,
    pub model: ModelSettings,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolsSettings {
    /// Allow-list of built-in tools; `None` means all.
    pub core: Option<Vec<String>>,
    pub exclude: Vec<String>,
    /// Tools (or rules) that run without confirmation.
    pub allowed: Vec<String>,
    pub approval_mode: Option<String>,
    /// `"landlock"`, `true`/`false`, or absent.
    pub sandbox: Option<Value>,
    pub discovery_command: Option<String>,
    pub call_command: Option<String>,
    pub truncate_tool_output_threshold: Option<i64>,
    pub truncate_tool_output_lines: Option<i64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PermissionSettings {
    pub allow: Vec<String>,
    pub ask: Vec<String>,
    pub deny: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContextSettings {
    pub include_directories: Vec<String>,
    /// A file name or a list of them (`QWEN.md`, `AGENTS.md` when absent).
    pub file_name: Option<Value>,
    pub file_filtering: FileFiltering,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FileFiltering {
    pub respect_git_ignore: bool,
    pub respect_qwen_ignore: bool,
}

impl Default for FileFiltering {
    fn default() -> Self {
        FileFiltering {
            respect_git_ignore: true,
            respect_qwen_ignore: true,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct McpServerSettings {
    pub command: Option<String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    /// Legacy SSE endpoint.
    pub url: Option<String>,
    /// Streamable HTTP endpoint.
    pub http_url: Option<String>,
    pub headers: BTreeMap<String, String>,
    /// Connect timeout in milliseconds.
    pub timeout: Option<u64>,
    /// Time limit of one tool call in milliseconds (toolbelt's own key).
    pub call_timeout: Option<u64>,
    /// Calls run without confirmation (and the server's annotations are believed).
    pub trust: bool,
    /// Believe the server's tool annotations: a tool it marks `readOnlyHint` runs
    /// without confirmation, as a read. Without this (or `trust`) annotations only
    /// inform the display, as the MCP specification says of untrusted servers.
    pub trust_annotations: bool,
    pub include_tools: Option<Vec<String>>,
    pub exclude_tools: Vec<String>,
    pub description: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct McpSettings {
    pub server_command: Option<String>,
    pub allowed: Option<Vec<String>>,
    pub excluded: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ModelSettings {
    pub name: Option<String>,
}

/// The top-level keys this build knows; others are reported at debug level.
const KNOWN_TOP_LEVEL: &[&str] = &[
    "tools",
    "permissions",
    "context",
    "mcpServers",
    "mcp",
    "model",
    "general",
    "ui",
    "security",
    "privacy",
    "telemetry",
    "advanced",
    "ide",
    "env",
    "hooks",
    "output",
    "modelProviders",
    "$schema",
];

impl Settings {
    /// Reads and merges the files in `paths`; files that do not exist are skipped.
    pub fn load(paths: &SettingsPaths) -> Result<Settings, SettingsError> {
        let mut layers = Vec::new();
        let mut sources = Vec::new();
        let mut expanded = Vec::new();
        for (_layer, path) in paths.layers() {
            if let Some(value) = read_layer(path, &mut expanded)? {
                layers.push(value);
                sources.push(path.clone());
            }
        }
        let mut settings =
            Settings::from_value(merge_layers(layers)).map_err(|(key, message)| {
                SettingsError::Invalid {
                    path: sources.last().cloned().unwrap_or_default(),
                    key,
                    message,
                }
            })?;
        settings.sources = sources;
        settings.expanded = expanded;
        Ok(settings)
    }

    /// `(name, value)` of every environment variable the files expanded, so that the
    /// values (tokens in headers, passwords in URLs) can be masked wherever they could
    /// be printed.
    pub fn expanded_variables(&self) -> &[(String, String)] {
        &self.expanded
    }

    /// Settings from one JSON value (already merged), after legacy keys are normalised.
    /// The error names the offending key.
    pub fn from_value(raw: Value) -> Result<Settings, (String, String)> {
        let raw = normalize_legacy(raw);
        let mut settings: Settings = match serde_json::from_value(raw.clone()) {
            Ok(s) => s,
            Err(e) => return Err(locate_type_error(&raw, &e.to_string())),
        };
        settings.raw = raw;
        Ok(settings)
    }

    /// A raw value by JSON pointer (`/tools/sandbox`), for keys owned by one component.
    pub fn get(&self, pointer: &str) -> Option<&Value> {
        self.raw.pointer(pointer)
    }
}

/// Parses one file: comments stripped (positions kept), environment variables expanded,
/// the typed view checked so a wrong type is blamed on this file.
fn read_layer(
    path: &Path,
    expanded: &mut Vec<(String, String)>,
) -> Result<Option<Value>, SettingsError> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(SettingsError::Io {
                path: path.to_path_buf(),
                message: e.to_string(),
            });
        }
    };
    let value = parse_settings_text(&text).map_err(|e| SettingsError::Parse {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e
            .to_string()
            .split(" at line ")
            .next()
            .unwrap_or_default()
            .to_string(),
    })?;
    if !value.is_object() {
        return Err(SettingsError::Invalid {
            path: path.to_path_buf(),
            key: "(root)".into(),
            message: "settings must be a JSON object".into(),
        });
    }
    let value = expand_env(value, expanded);
    if let Err((key, message)) = Settings::from_value(value.clone()) {
        return Err(SettingsError::Invalid {
            path: path.to_path_buf(),
            key,
            message,
        });
    }
    if let Some(map) = value.as_object() {
        for key in map
            .keys()
            .filter(|k| !KNOWN_TOP_LEVEL.contains(&k.as_str()))
        {
            tracing::debug!("{}: unknown settings key '{key}' ignored", path.display());
        }
    }
    Ok(Some(value))
}

/// JSON with comments to a value. An empty file is an empty object.
pub fn parse_settings_text(text: &[u8]) -> Result<Value, serde_json::Error> {
    let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_reader(json_comments::StripComments::new(text))
}

/// `$VAR` and `${VAR}` in every string; unset variables stay as written. Each variable
/// used is added to `used`.
fn expand_env(value: Value, used: &mut Vec<(String, String)>) -> Value {
    match value {
        Value::String(s) if s.contains('$') => {
            let expanded = shellexpand::env_with_context_no_errors(&s, |name| {
                let value = std::env::var(name).ok()?;
                if !used.iter().any(|(n, v)| n == name && *v == value) {
                    used.push((name.to_string(), value.clone()));
                }
                Some(value)
            });
            Value::String(expanded.into_owned())
        }
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| expand_env(v, used)).collect())
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, expand_env(v, used)))
                .collect(),
        ),
        other => other,
    }
}

/// Moves the older spellings to their current place when the current one is absent:
/// `toolDiscoveryCommand`, `tools.toolDiscoveryCommand` → `tools.discoveryCommand`;
/// likewise for the call command; `mcpServerCommand` → `mcp.serverCommand`;
/// `coreTools`/`excludeTools`/`allowedTools` → `tools.core|exclude|allowed`.
fn normalize_legacy(mut raw: Value) -> Value {
    let Some(root) = raw.as_object_mut() else {
        return raw;
    };
    let moves: &[(&[&str], &str, &str)] = &[
        (&["toolDiscoveryCommand"], "tools", "discoveryCommand"),
        (&["toolCallCommand"], "tools", "callCommand"),
        (&["coreTools"], "tools", "core"),
        (&["excludeTools"], "tools", "exclude"),
        (&["allowedTools"], "tools", "allowed"),
        (&["mcpServerCommand"], "mcp", "serverCommand"),
    ];
    for (old_keys, section, new_key) in moves {
        for old in *old_keys {
            if let Some(v) = root.remove(*old) {
                let entry = root
                    .entry(section.to_string())
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(obj) = entry.as_object_mut() {
                    obj.entry(new_key.to_string()).or_insert(v);
                }
            }
        }
    }
    if let Some(tools) = root.get_mut("tools").and_then(Value::as_object_mut) {
        for (old, new) in [
            ("toolDiscoveryCommand", "discoveryCommand"),
            ("toolCallCommand", "callCommand"),
        ] {
            if let Some(v) = tools.remove(old) {
                tools.entry(new.to_string()).or_insert(v);
            }
        }
    }
    raw
}

/// serde's message names the expected type but not the key path; find the path by
/// deserializing each known section alone.
fn locate_type_error(raw: &Value, message: &str) -> (String, String) {
    fn check<T: for<'de> Deserialize<'de>>(raw: &Value, key: &str) -> Option<(String, String)> {
        let v = raw.get(key)?;
        let err = serde_json::from_value::<T>(v.clone()).err()?;
        if let Some(map) = v.as_object() {
            for (sub, subv) in map {
                let mut probe = Map::new();
                probe.insert(sub.clone(), subv.clone());
                if serde_json::from_value::<T>(Value::Object(probe)).is_err() {
                    return Some((format!("{key}.{sub}"), err.to_string()));
                }
            }
        }
        Some((key.to_string(), err.to_string()))
    }
    check::<ToolsSettings>(raw, "tools")
        .or_else(|| check::<PermissionSettings>(raw, "permissions"))
        .or_else(|| check::<ContextSettings>(raw, "context"))
        .or_else(|| check::<BTreeMap<String, McpServerSettings>>(raw, "mcpServers"))
        .or_else(|| check::<McpSettings>(raw, "mcp"))
        .or_else(|| check::<ModelSettings>(raw, "model"))
        .unwrap_or_else(|| ("(root)".to_string(), message.to_string()))
}

#[cfg(test)]
mod tests;
