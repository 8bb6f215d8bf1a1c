//! Settings, in Qwen Code's `settings.json` format, from layered files.
//!
//! Layers, lowest to highest: built-in defaults, user (`~/.qwen/settings.json`), workspace
//! (`<project>/.qwen/settings.json`), system (`/etc/toolbelt/settings.json`, or the file
//! named by `TOOLBELT_SYSTEM_SETTINGS_PATH`). Objects merge key by key and a higher layer's
//! value replaces a lower one's, except: `permissions.allow|ask|deny` and `tools.exclude`
//! are the union of all layers, `context.includeDirectories` and `mcp.allowed|excluded`
//! concatenate, and `mcpServers` (and `lsp.servers`) merge by server name (a server is
//! taken whole from the highest layer that defines it). These are Qwen Code's merge
//! strategies.
//!
//! Comments (`//`, `/* */`, `#`) are tolerated. Strings may use `$VAR` and `${VAR}`;
//! unset variables are left as written. A malformed file is an error naming the file,
//! line and column. Every key toolbelt reads is typed ([`types`]), and each file is checked
//! on its own, so a value of the wrong type or outside an enumeration is an error naming
//! the file, the key and the accepted values. Unknown keys are ignored (reported at debug
//! level), so newer files work with older builds.
//!
//! The workspace file comes with the project, so it is the one layer a stranger can
//! write. Unless the folder is trusted ([`crate::trust`], `security.folderTrust.enabled`
//! in the user or system file, on by default), the keys that run commands or widen access
//! are dropped from it before merging (the table in `settings/untrusted.rs`), and [`Settings::untrusted_workspace`]
//! says which.
//!
//! What a key that names files (`context.fileName`, `tools.manifests`) may name depends
//! on the file that wrote it: a project's names stay inside the project, trusted or not
//! (`settings/named_files.rs`). An untrusted folder's strings are not expanded.
//!
//! `hooks` do not merge: every file's hooks are kept whole, as written, with their file
//! ([`Settings::hook_layers`], `settings/hook_layers.rs`), with those of Claude Code's
//! settings files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

mod hook_layers;
mod merge;
mod named_files;
mod text;
pub mod types;
mod untrusted;

pub use hook_layers::HookLayer;

pub use merge::merge_layers;
pub use named_files::{ContextFileNamesByPlace, DEFAULT_CONTEXT_FILE_NAMES, NamedBy};
pub use text::{SettingsTextError, parse_settings_text};
pub(crate) use types::show_value;
// Apart from the list below: what MCP servers may ask (issue 46).
pub use types::McpSampling;
pub use types::{
    ApprovalModeSetting, CheckpointingSettings, ContextFileNames, ContextSettings, FileFiltering,
    FolderTrustSettings, GeneralSettings, GenerationConfig, LspServerSettings, LspSettings,
    LspSocket, LspTransport, McpOAuthSettings, McpServerSettings, McpSettings, Millis,
    ModelCapabilities, ModelProviderEntry, ModelSettings, PermissionSettings, SamplingParams,
    Sandbox, SecuritySettings, ShellEnvironmentSettings, ShellLimits, ShellSettings, ToolsSettings,
    WebFetchSettings, WebSearchKind, WebSearchProvider, WebSearchSettings, WorktreeSettings,
};

use crate::trust::{TrustError, TrustedFolders};

/// Why the settings could not be loaded; every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// A file is not valid JSON (comments aside).
    #[error("{path}: {message} at line {line} column {column}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Line of the error, from 1.
        line: usize,
        /// Column of the error, from 1.
        column: usize,
        /// The parser's message, without the position.
        message: String,
    },
    /// A key has a value of the wrong type or outside its enumeration, or the file is not
    /// a JSON object (`key` is then `(root)`).
    #[error("{path}: {key}: {message}")]
    Invalid {
        /// The file (for a problem of the merged settings, the highest layer read).
        path: PathBuf,
        /// The key, as a dotted path (`tools.sandbox`).
        key: String,
        /// What is wrong and what is accepted.
        message: String,
    },
    /// A file exists but could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        message: String,
    },
    /// The trusted-folders file could not be read.
    #[error(transparent)]
    Trust(#[from] TrustError),
}

/// Which file a layer comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SettingsLayer {
    /// `~/.qwen/settings.json`.
    User,
    /// `<project>/.qwen/settings.json`.
    Workspace,
    /// `/etc/toolbelt/settings.json` (or `TOOLBELT_SYSTEM_SETTINGS_PATH`), the highest layer.
    System,
}

/// Where the settings files are, and how the workspace file is trusted.
#[derive(Debug, Clone)]
pub struct SettingsPaths {
    /// The user file; `None` without a home directory.
    pub user: Option<PathBuf>,
    /// The workspace file; `None` when it would be the user file (the project is home).
    pub workspace: Option<PathBuf>,
    /// The system file, the highest layer; `None` to read none.
    pub system: Option<PathBuf>,
    /// Whether the workspace file may use the restricted keys.
    pub trust: WorkspaceTrust,
    /// Claude Code's settings files whose `hooks` (and nothing else) are read, with the
    /// layer each belongs to (see [`HookLayer`]).
    pub claude_hooks: Vec<(SettingsLayer, PathBuf)>,
}

/// Whether the workspace file may use the keys that run commands or widen access.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkspaceTrust {
    /// The person said so for this run (`--trust-workspace`, `TOOLBELT_TRUST_WORKSPACE=1`).
    Trusted,
    /// Trusted when folder trust is off (`security.folderTrust.enabled: false` in the
    /// user or system file), or when the trusted-folders file trusts `project`. No file
    /// (`None`) trusts nothing.
    FromFolders {
        /// The project folder whose trust is looked up.
        project: PathBuf,
        /// The trusted-folders file (`~/.qwen/trustedFolders.json`); `None`: no folder is trusted.
        trusted_folders: Option<PathBuf>,
    },
}

/// The workspace keys that were ignored because the folder is not trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UntrustedWorkspace {
    /// The workspace settings file.
    pub file: PathBuf,
    /// The project folder that would need trust.
    pub project: PathBuf,
    /// The ignored keys, as written in a settings file (`tools.discoveryCommand`).
    pub ignored: Vec<String>,
}

impl UntrustedWorkspace {
    /// One warning: what was ignored, and how to trust the folder.
    pub fn warning(&self) -> String {
        format!(
            "{}: this folder is not trusted, so these workspace settings were ignored: {}. \
             To use them, trust the folder with `toolbelt trust {}` (or, for one run, pass \
             --trust-workspace or set TOOLBELT_TRUST_WORKSPACE=1).",
            self.file.display(),
            self.ignored.join(", "),
            shell_quoted(&self.project),
        )
    }
}

/// A path as a person can paste it into a shell.
fn shell_quoted(path: &Path) -> String {
    let text = path.to_string_lossy();
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%".contains(c))
    {
        text.into_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

impl SettingsPaths {
    /// The standard places for a project at `project_dir`, trusted through
    /// `~/.qwen/trustedFolders.json`.
    pub fn standard(project_dir: &Path) -> Self {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let system = std::env::var_os("TOOLBELT_SYSTEM_SETTINGS_PATH")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/etc/toolbelt/settings.json"));
        let user = home.as_ref().map(|h| h.join(".qwen/settings.json"));
        let workspace = project_dir.join(".qwen/settings.json");
        // In the home directory the workspace file is the user file: read it once, as the
        // person's own. (Compared resolved, so a link to home is home too.)
        let same_as_user = user.as_ref().is_some_and(|u| {
            u == &workspace
                || matches!(
                    (std::fs::canonicalize(u), std::fs::canonicalize(&workspace)),
                    (Ok(a), Ok(b)) if a == b
                )
        });
        let workspace = (!same_as_user).then_some(workspace);
        SettingsPaths {
            user,
            workspace,
            system: Some(system),
            trust: WorkspaceTrust::FromFolders {
                project: project_dir.to_path_buf(),
                trusted_folders: TrustedFolders::user_file(),
            },
            claude_hooks: hook_layers::claude_files(project_dir, home.as_deref()),
        }
    }

    /// These paths with the workspace trusted for this run.
    pub fn trusting_workspace(mut self) -> Self {
        self.trust = WorkspaceTrust::Trusted;
        self
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

/// The merged settings: a typed view of every key toolbelt reads (see [`types`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    /// The files that were read, lowest layer first.
    #[serde(skip)]
    pub sources: Vec<PathBuf>,
    /// Set when the workspace file was read in an untrusted folder and some of its keys
    /// were ignored; the binary prints [`UntrustedWorkspace::warning`] once.
    #[serde(skip)]
    pub untrusted_workspace: Option<UntrustedWorkspace>,
    /// `(name, value)` of every environment variable that `$VAR`/`${VAR}` expanded, for
    /// [`crate::redact`]: see [`Settings::expanded_variables`].
    #[serde(skip)]
    expanded: Vec<(String, String)>,
    /// The project folder when the workspace is not trusted (whether or not its settings
    /// file asked for anything): workspace tool manifests then load without their
    /// `command` bindings. `None` when trusted or when no trust applies.
    #[serde(skip)]
    pub untrusted_project: Option<PathBuf>,
    /// The merged settings as JSON (after the untrusted keys were removed), for the
    /// `config.<path>` keys of when-clauses.
    #[serde(skip)]
    pub raw: Value,
    /// Every file's `hooks`, as written, in configuration order (project, user, system,
    /// then Claude Code's files): hooks concatenate rather than merge.
    #[serde(skip)]
    pub hook_layers: Vec<HookLayer>,
    /// `disableAllHooks`: true when any file says so (a workspace file only in a trusted
    /// folder), not only the highest layer: turning hooks off anywhere turns them off.
    pub disable_all_hooks: bool,
    /// The file whose `disableAllHooks: true` turned the hooks off.
    #[serde(skip)]
    pub hooks_disabled_by: Option<PathBuf>,
    /// `tools`.
    pub tools: ToolsSettings,
    /// `permissions`.
    pub permissions: PermissionSettings,
    /// `context`.
    pub context: ContextSettings,
    /// `mcpServers`: each server by its alias.
    pub mcp_servers: BTreeMap<String, McpServerSettings>,
    /// `mcp`.
    pub mcp: McpSettings,
    /// `model`.
    pub model: ModelSettings,
    /// `modelProviders`: provider id → its models (Qwen Code's shape).
    pub model_providers: BTreeMap<String, Vec<ModelProviderEntry>>,
    /// `providerProtocol`: a custom provider id → the protocol it speaks (`openai`,
    /// `anthropic`, `gemini`, `openai-responses`).
    pub provider_protocol: BTreeMap<String, String>,
    /// `security`.
    pub security: SecuritySettings,
    /// `webSearch`.
    pub web_search: WebSearchSettings,
    /// `lsp`.
    pub lsp: LspSettings,
    /// Each layer read, after the untrusted keys were removed, for [`Settings::origin`].
    #[serde(skip)]
    layers: Vec<(SettingsLayer, PathBuf, Value)>,
    /// `general`.
    pub general: GeneralSettings,
    /// `worktree`.
    pub worktree: WorktreeSettings,
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
    "webSearch",
    "privacy",
    "telemetry",
    "advanced",
    "ide",
    "env",
    "hooks",
    "disableAllHooks",
    "output",
    "modelProviders",
    "providerProtocol",
    "lsp",
    "worktree",
    "$schema",
];

impl Settings {
    /// Reads and merges the files in `paths`; files that do not exist are skipped. In an
    /// untrusted folder the workspace file loses the keys that run commands or widen
    /// access ([`Settings::untrusted_workspace`] names them).
    pub fn load(paths: &SettingsPaths) -> Result<Settings, SettingsError> {
        let mut layers: Vec<(SettingsLayer, PathBuf, Value)> = Vec::new();
        let mut hooks = Vec::new();
        let mut expanded = Vec::new();
        for (layer, path) in paths.layers() {
            if let Some((value, raw_hooks)) = read_layer(layer, path)? {
                if let Some(raw_hooks) = raw_hooks {
                    hooks.push((layer, path.clone(), raw_hooks));
                }
                layers.push((layer, path.clone(), value));
            }
        }
        let mut untrusted_workspace = None;
        let trusted = workspace_trusted(paths, &layers)?;
        // `$VAR` is expanded only in the files the person answers for: an untrusted
        // folder's `{"x": "$OPENAI_API_KEY"}` would otherwise be read back by its
        // manifests' `when` clauses (`config.x`), a character at a time.
        for (layer, _, value) in &mut layers {
            if trusted || *layer != SettingsLayer::Workspace {
                *value = expand_env(std::mem::take(value), &mut expanded);
            }
        }
        if !trusted
            && let Some((_, file, value)) = layers
                .iter_mut()
                .find(|(layer, ..)| *layer == SettingsLayer::Workspace)
        {
            let ignored = untrusted::strip_restricted(value);
            if !ignored.is_empty() {
                let project = match &paths.trust {
                    WorkspaceTrust::FromFolders { project, .. } => project.clone(),
                    WorkspaceTrust::Trusted => PathBuf::new(),
                };
                untrusted_workspace = Some(UntrustedWorkspace {
                    file: file.clone(),
                    project,
                    ignored,
                });
            }
        }
        // Each layer alone, so a bad value is blamed on its own file.
        for (_, path, value) in &layers {
            check_layer(path, value)?;
        }
        let hook_layers = hook_layers::collect(paths, hooks, trusted, &mut untrusted_workspace)?;
        let hooks_disabled_by = hook_layers::disabled_by(&layers);
        let allowed_http_hook_urls = hook_layers::allowed_http_hook_urls(&layers);
        let sources: Vec<PathBuf> = layers.iter().map(|(_, p, _)| p.clone()).collect();
        let merged = merge_layers(layers.iter().map(|(_, _, v)| v.clone()).collect());
        let mut settings = Settings::from_value(merged.clone()).map_err(|(key, message)| {
            SettingsError::Invalid {
                path: sources.last().cloned().unwrap_or_default(),
                key,
                message,
            }
        })?;
        settings.sources = sources;
        settings.untrusted_workspace = untrusted_workspace;
        settings.hook_layers = hook_layers;
        settings.disable_all_hooks = hooks_disabled_by.is_some();
        settings.hooks_disabled_by = hooks_disabled_by;
        settings.security.allowed_http_hook_urls = allowed_http_hook_urls;
        settings.expanded = expanded;
        settings.raw = merged;
        settings.layers = layers;
        if !trusted && let WorkspaceTrust::FromFolders { project, .. } = &paths.trust {
            settings.untrusted_project = Some(project.clone());
        }
        Ok(settings)
    }

    /// The file that gives the key at `path` (`["lsp", "servers", "python"]`) its
    /// value, with its layer: the highest layer that sets it. `None` when no file does
    /// (a default), or for settings that were not read from files.
    pub fn origin(&self, path: &[&str]) -> Option<(SettingsLayer, &Path)> {
        self.layers.iter().rev().find_map(|(layer, file, value)| {
            let mut node = value;
            for key in path {
                node = node.get(key)?;
            }
            Some((*layer, file.as_path()))
        })
    }

    /// `(name, value)` of every environment variable the files expanded, so that the
    /// values (tokens in headers, passwords in URLs) can be masked wherever they could
    /// be printed.
    pub fn expanded_variables(&self) -> &[(String, String)] {
        &self.expanded
    }

    /// Settings from one JSON value (already merged), after legacy keys are normalised.
    /// The error names the offending key (`tools.shell.killBackgroundOnExit`) and says
    /// what it accepts.
    pub fn from_value(raw: Value) -> Result<Settings, (String, String)> {
        let raw = normalize_legacy(raw);
        serde_path_to_error::deserialize(&raw).map_err(|e| {
            let key = e.path().to_string();
            let key = if key == "." {
                "(root)".to_string()
            } else {
                key
            };
            (key, describe_error(&e.into_inner().to_string()))
        })
    }
}

/// Whether the workspace layer is trusted: by the person for this run, because folder
/// trust is off in the *user or system* file (the workspace cannot switch it off), or by
/// the trusted-folders file.
fn workspace_trusted(
    paths: &SettingsPaths,
    layers: &[(SettingsLayer, PathBuf, Value)],
) -> Result<bool, SettingsError> {
    let (project, file) = match &paths.trust {
        WorkspaceTrust::Trusted => return Ok(true),
        WorkspaceTrust::FromFolders {
            project,
            trusted_folders,
        } => (project, trusted_folders),
    };
    let own: Vec<Value> = layers
        .iter()
        .filter(|(layer, ..)| *layer != SettingsLayer::Workspace)
        .map(|(_, _, v)| v.clone())
        .collect();
    let enabled = merge_layers(own)
        .pointer("/security/folderTrust/enabled")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    if !enabled {
        return Ok(true);
    }
    let Some(file) = file else {
        return Ok(false);
    };
    let folders = TrustedFolders::load(file)?;
    Ok(folders.decide(project).is_some_and(|d| d.trusted))
}

/// The typed check of one file.
fn check_layer(path: &Path, value: &Value) -> Result<(), SettingsError> {
    let settings =
        Settings::from_value(value.clone()).map_err(|(key, message)| SettingsError::Invalid {
            path: path.to_path_buf(),
            key,
            message,
        })?;
    check_rules(path, &settings)
}

/// Every permission rule of one file parses. A rule that does not would be dropped, and
/// a dropped deny or ask rule lets through what the person meant to stop, so it is an
/// error that names the rule and the file, never a warning.
fn check_rules(path: &Path, settings: &Settings) -> Result<(), SettingsError> {
    let lists: [(&str, &[String]); 6] = [
        ("permissions.allow", &settings.permissions.allow),
        ("permissions.ask", &settings.permissions.ask),
        ("permissions.deny", &settings.permissions.deny),
        ("tools.allowed", &settings.tools.allowed),
        ("tools.exclude", &settings.tools.exclude),
        ("tools.core", settings.tools.core.as_deref().unwrap_or(&[])),
    ];
    for (key, rules) in lists {
        if let Some((i, rule)) = rules
            .iter()
            .enumerate()
            .find(|(_, r)| !crate::is_well_formed_rule(r))
        {
            let shown: String = rule.chars().take(200).collect();
            let cut = if shown.len() < rule.len() { "…" } else { "" };
            return Err(SettingsError::Invalid {
                path: path.to_path_buf(),
                key: format!("{key}[{i}]"),
                message: format!(
                    "`{shown}{cut}` is not a permission rule (write `Tool` or `Tool(specifier)`, with balanced parentheses, in at most {} bytes); it was not applied, so nothing was run",
                    crate::MAX_RULE_BYTES
                ),
            });
        }
    }
    Ok(())
}

/// serde's wording, in the words of a settings file: `invalid type: string "no",
/// expected a boolean` becomes `"no" is not accepted; accepted values: true, false`.
fn describe_error(message: &str) -> String {
    let Some(rest) = message.strip_prefix("invalid type: ") else {
        return message.to_string();
    };
    let Some((found, expected)) = rest.split_once(", expected ") else {
        return message.to_string();
    };
    let found = found
        .strip_prefix("string ")
        .or_else(|| found.strip_prefix("integer "))
        .or_else(|| found.strip_prefix("floating point "))
        .or_else(|| found.strip_prefix("boolean "))
        .unwrap_or(found);
    let accepted = match expected {
        "a boolean" => "true, false",
        "a string" => "a string",
        "a sequence" => "a list",
        "u64" => "a whole number (0 or more)",
        "i64" => "a whole number",
        "a map" | "struct ToolsSettings" | "struct ShellSettings" | "struct McpServerSettings" => {
            "an object"
        }
        other if other.starts_with("struct ") => "an object",
        other => other,
    };
    format!("{found} is not accepted; accepted values: {accepted}")
}

/// The most a settings file may hold; real ones hold a few KiB.
const MAX_SETTINGS_BYTES: u64 = 4 * 1024 * 1024;

/// The bytes of one settings file, `None` when there is none. A workspace's file (its
/// `.qwen/settings.json`, `.claude/settings.json`) comes from the repository, which
/// may be hostile: it is read through [`crate::project_file::read_in_project`], so a
/// link out of the project (`-> ~/.ssh/id_rsa`), a device (`-> /dev/zero`) or a FIFO
/// is an error naming the file, never read, never waited on. The person's own files
/// are read through [`crate::project_file::read_own`] (links followed, the same limits).
pub(crate) fn read_settings_file(
    layer: SettingsLayer,
    path: &Path,
) -> Result<Option<Vec<u8>>, SettingsError> {
    // A dangling link counts as no file, as it always has.
    if !path.try_exists().unwrap_or(true) {
        return Ok(None);
    }
    let project = path.parent().and_then(Path::parent);
    let read = match (layer, project) {
        (SettingsLayer::Workspace, Some(project)) => {
            crate::project_file::read_in_project(path, project, MAX_SETTINGS_BYTES)
        }
        _ => crate::project_file::read_own(path, MAX_SETTINGS_BYTES),
    };
    read.map(Some).map_err(|e| SettingsError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Parses one file: comments stripped (positions kept), legacy spellings moved to their
/// current place (so the trust filter sees every spelling); environment variables are
/// expanded later, once trust is known. With the value comes its `hooks` as written
/// (see [`HookLayer`]).
fn read_layer(
    layer: SettingsLayer,
    path: &Path,
) -> Result<Option<(Value, Option<Value>)>, SettingsError> {
    let Some(text) = read_settings_file(layer, path)? else {
        return Ok(None);
    };
    let value = parse_settings_text(&text).map_err(|e| SettingsError::Parse {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.message().to_string(),
    })?;
    if !value.is_object() {
        return Err(SettingsError::Invalid {
            path: path.to_path_buf(),
            key: "(root)".into(),
            message: "settings must be a JSON object".into(),
        });
    }
    let raw_hooks = hook_layers::raw_hooks(&value);
    let value = normalize_legacy(value);
    if let Some(map) = value.as_object() {
        for key in map
            .keys()
            .filter(|k| !KNOWN_TOP_LEVEL.contains(&k.as_str()))
        {
            tracing::debug!("{}: unknown settings key '{key}' ignored", path.display());
        }
    }
    Ok(Some((value, raw_hooks)))
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

#[cfg(test)]
mod check_tests;
#[cfg(test)]
mod hook_layers_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod trust_tests;
