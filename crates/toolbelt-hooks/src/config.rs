//! Reading `hooks` from the settings files (and the SDKs' `initialize.hooks`) into
//! matcher groups of hooks.
//!
//! A bad entry is an error that names the file, the event and the index
//! (`~/.qwen/settings.json: hooks.PreToolUse[0].hooks[1]: "command" is missing`), and a
//! session with one does not start: a hook the person wrote to refuse something, dropped
//! because of a typo, would let through what it was written to stop. The same choice as
//! for a permission rule that does not parse.
//!
//! What Qwen Code or Claude Code know but toolbelt does not run (events such as
//! `PostToolBatch`, hook types such as `prompt`) is not an error: the files are shared
//! with those tools. It is skipped, warned about once, and listed by `toolbelt hooks
//! list` with the reason. A truly unknown event or type is an error (a misspelling).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use toolbelt_config::{settings::HookLayer, settings::Settings, settings::SettingsLayer};
use toolbelt_engine::hooks::HookEvent;

use crate::matcher::Matcher;

mod entry;
pub(crate) mod sdk;

/// A command hook's time limit when its settings give none (Qwen Code's and Claude
/// Code's).
pub(crate) const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// An http hook's time limit when its settings give none. Qwen Code waits 600 s; a
/// PreToolUse hook holds its call while it waits, so an unreachable endpoint would freeze
/// a call for ten minutes. One minute, as for commands; a hook that needs longer says so.
pub(crate) const HTTP_TIMEOUT: Duration = Duration::from_secs(60);
/// An SDK callback's time limit when `initialize` gives none.
pub(crate) const CALLBACK_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest time limit accepted; a longer one is cut to it (and no value can
/// overflow a `Duration`).
const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// Events of Qwen Code and Claude Code that toolbelt does not raise: their hooks are
/// skipped with a warning, not refused.
const OTHER_TOOLS_EVENTS: &[&str] = &[
    "PostToolBatch",
    "UserPromptExpansion",
    "SessionDelete",
    "MessageDisplay",
    "StopFailure",
    "PostCompact",
    "TodoCreated",
    "TodoCompleted",
    "InstructionsLoaded",
    "Setup",
    "ConfigChange",
    "TeammateIdle",
    "TaskCompleted",
    "Elicitation",
    "ElicitationResult",
    // The Claude Agent SDK's (0.3) further events.
    "TaskCreated",
    "PreModelSwitch",
    "PostModelSwitch",
    "CwdChanged",
    "FileChanged",
    "DirectoryAdded",
    "PreSkillShellCommand",
];

/// Hook types of Qwen Code and Claude Code that toolbelt does not run.
const OTHER_TOOLS_TYPES: &[&str] = &["prompt", "agent", "function", "mcp_tool"];

/// Where a hook comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOrigin {
    /// A settings file.
    File {
        /// The file.
        path: PathBuf,
        /// Its layer (Claude Code's project files are workspace files).
        layer: SettingsLayer,
        /// Whether it is Claude Code's.
        claude: bool,
    },
    /// An SDK's `initialize` request (stream-JSON), answered by [`crate::HookCallbacks`].
    Sdk,
}

impl std::fmt::Display for HookOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HookOrigin::File { path, .. } => write!(f, "{}", path.display()),
            HookOrigin::Sdk => f.write_str("the SDK's initialize request"),
        }
    }
}

/// A `command` hook.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CommandHook {
    /// The shell string, or the program when `args` is set.
    pub command: String,
    /// Arguments: the program runs without a shell.
    pub args: Option<Vec<String>>,
    /// The shell a shell string runs in (`bash` unless `shell` says `sh`).
    pub shell: &'static str,
    /// Variables added to the environment.
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
}

/// An `http` hook.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HttpHook {
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// The variables `${VAR}` may name in the URL and the headers.
    pub allowed_env_vars: Vec<String>,
    pub timeout: Duration,
}

/// How a hook runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Executor {
    Command(CommandHook),
    Http(HttpHook),
    /// An SDK callback, by its id. `block_on_failure`: Claude's `onFailure: "block"`
    /// (a failed callback refuses where hooks decide, instead of letting the action
    /// go ahead).
    Callback {
        id: String,
        timeout: Duration,
        block_on_failure: bool,
    },
}

impl Executor {
    /// `command`, `http` or `callback`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Executor::Command(_) => "command",
            Executor::Http(_) => "http",
            Executor::Callback { .. } => "callback",
        }
    }

    /// What it runs: the command line, the URL or the callback id.
    pub(crate) fn target(&self) -> String {
        match self {
            Executor::Command(c) => match &c.args {
                Some(args) => shlex::try_join(
                    std::iter::once(c.command.as_str()).chain(args.iter().map(String::as_str)),
                )
                .unwrap_or_else(|_| format!("{} {}", c.command, args.join(" "))),
                None => c.command.clone(),
            },
            Executor::Http(h) => h.url.clone(),
            Executor::Callback { id, .. } => id.clone(),
        }
    }

    /// Its time limit.
    pub(crate) fn timeout(&self) -> Duration {
        match self {
            Executor::Command(c) => c.timeout,
            Executor::Http(h) => h.timeout,
            Executor::Callback { timeout, .. } => *timeout,
        }
    }
}

/// One hook of a matcher group.
#[derive(Debug, Clone)]
pub(crate) struct Hook {
    /// Its `name`, if it has one.
    pub name: Option<String>,
    pub executor: Executor,
    /// How messages name it: its name (else what it runs, shortened) and its file.
    pub label: String,
}

/// One matcher group of one event: `{"matcher": ..., "sequential": ..., "hooks": [...]}`.
#[derive(Debug, Clone)]
pub(crate) struct HookGroup {
    pub event: HookEvent,
    pub matcher: Matcher,
    /// Run its hooks in order, each seeing the previous one's `updatedInput`.
    pub sequential: bool,
    pub hooks: Vec<Hook>,
    /// Where it is in its file: `hooks.PreToolUse[0]`.
    pub key: String,
}

/// A bad entry: the file, the key (`hooks.PreToolUse[0].hooks[1]`) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Where the entry is.
    pub origin: HookOrigin,
    /// The entry's key.
    pub key: String,
    /// What is wrong, and what is accepted.
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}", self.origin, self.key, self.message)
    }
}

impl std::error::Error for ConfigError {}

/// An entry Qwen Code or Claude Code would run and toolbelt does not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Where the entry is.
    pub origin: HookOrigin,
    /// The entry's key.
    pub key: String,
    /// Why it does not run here.
    pub why: String,
}

impl Skipped {
    /// One warning line.
    pub fn warning(&self) -> String {
        format!("{}: {}: skipped: {}", self.origin, self.key, self.why)
    }
}

/// What one file's `hooks` gave.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub groups: Vec<HookGroup>,
    pub errors: Vec<ConfigError>,
    pub skipped: Vec<Skipped>,
}

/// The hooks a session runs, from its settings.
#[derive(Debug, Clone, Default)]
pub struct HookConfig {
    pub(crate) groups: Vec<HookGroup>,
    /// Entries that do not run here (other tools' events and hook types).
    pub skipped: Vec<Skipped>,
}

/// Every bad entry of the settings' hooks (at least one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl std::fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lines: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        f.write_str(&lines.join("\n"))
    }
}

impl std::error::Error for ConfigErrors {}

impl HookConfig {
    /// The hooks of the settings' files that run here: every file's, in configuration
    /// order, except a workspace file's in an untrusted folder; none when
    /// `disableAllHooks` is set. Any bad entry is an error (all of them are named).
    pub fn from_settings(settings: &Settings) -> Result<HookConfig, ConfigErrors> {
        let mut config = HookConfig::default();
        if settings.disable_all_hooks {
            return Ok(config);
        }
        let mut errors = Vec::new();
        for layer in settings.hook_layers.iter().filter(|l| l.trusted) {
            let parsed = parse_layer(layer);
            config.groups.extend(parsed.groups);
            config.skipped.extend(parsed.skipped);
            errors.extend(parsed.errors);
        }
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(ConfigErrors(errors))
        }
    }

    /// Whether no hook runs.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The files the command hooks run, as far as their words name existing files
    /// (`"$QWEN_PROJECT_DIR/.qwen/hooks/check.sh"` names `<project>/.qwen/hooks/check.sh`):
    /// the session protects them, so a model cannot rewrite a hook on a general approval.
    pub fn command_files(&self, project_dir: &Path) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = Vec::new();
        for hook in self.groups.iter().flat_map(|g| &g.hooks) {
            let Executor::Command(command) = &hook.executor else {
                continue;
            };
            let words: Vec<String> = match &command.args {
                Some(args) => std::iter::once(command.command.clone())
                    .chain(args.iter().cloned())
                    .collect(),
                None => shlex::split(&command.command).unwrap_or_else(|| {
                    command
                        .command
                        .split_whitespace()
                        .map(str::to_string)
                        .collect()
                }),
            };
            for word in words {
                let word = with_project_dir(&word, project_dir);
                let path = project_dir.join(&word);
                if path.is_file() && !files.contains(&path) {
                    files.push(path);
                }
            }
        }
        files
    }
}

/// `$QWEN_PROJECT_DIR`, `$CLAUDE_PROJECT_DIR`, `$GEMINI_PROJECT_DIR` (with or without
/// braces) replaced with the project folder, as the hook's shell will.
fn with_project_dir(word: &str, project_dir: &Path) -> String {
    let dir = project_dir.to_string_lossy();
    let mut word = word.to_string();
    for name in [
        "QWEN_PROJECT_DIR",
        "CLAUDE_PROJECT_DIR",
        "GEMINI_PROJECT_DIR",
    ] {
        word = word
            .replace(&format!("${{{name}}}"), &dir)
            .replace(&format!("${name}"), &dir);
    }
    word
}

/// Reads one file's `hooks`.
pub(crate) fn parse_layer(layer: &HookLayer) -> Parsed {
    let origin = Arc::new(HookOrigin::File {
        path: layer.file.clone(),
        layer: layer.layer,
        claude: layer.claude,
    });
    parse_hooks(&layer.hooks, &origin, false)
}

/// Reads a `hooks` object. `sdk`: the SDKs' `initialize.hooks` shape, whose groups name
/// `hookCallbackIds` instead of `hooks`.
pub(crate) fn parse_hooks(hooks: &Value, origin: &Arc<HookOrigin>, sdk: bool) -> Parsed {
    let mut parsed = Parsed::default();
    let error = |key: String, message: String| ConfigError {
        origin: (**origin).clone(),
        key,
        message,
    };
    let Some(events) = hooks.as_object() else {
        parsed.errors.push(error(
            "hooks".into(),
            "must be an object of events, such as {\"PreToolUse\": [...]}".into(),
        ));
        return parsed;
    };
    for (name, groups) in events {
        let key = format!("hooks.{name}");
        let Some(event) = HookEvent::parse(name) else {
            if OTHER_TOOLS_EVENTS.contains(&name.as_str()) {
                parsed.skipped.push(Skipped {
                    origin: (**origin).clone(),
                    key,
                    why: format!("toolbelt does not raise the {name} event"),
                });
            } else {
                parsed.errors.push(error(key, unknown_event(name)));
            }
            continue;
        };
        let Some(groups) = groups.as_array() else {
            parsed
                .errors
                .push(error(key, "must be a list of matcher groups".into()));
            continue;
        };
        for (i, group) in groups.iter().enumerate() {
            let key = format!("{key}[{i}]");
            parse_group(event, group, key, origin, sdk, &mut parsed);
        }
    }
    parsed
}

/// The message for an event name that no tool knows, with the closest one.
fn unknown_event(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    let hint = HookEvent::ALL
        .iter()
        .map(|e| {
            (
                strsim::levenshtein(&e.as_str().to_ascii_lowercase(), &lower),
                e.as_str(),
            )
        })
        .min_by_key(|(distance, _)| *distance)
        .filter(|(distance, _)| *distance <= 3)
        .map(|(_, closest)| format!(" (did you mean {closest}?)"))
        .unwrap_or_default();
    let accepted: Vec<&str> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
    format!(
        "{} is no hook event{hint}; accepted: {}",
        quoted(name),
        accepted.join(", ")
    )
}

/// A string as JSON writes it, shortened.
pub(crate) fn quoted(text: &str) -> String {
    let shown: String = text.chars().take(80).collect();
    let shown = if shown.len() < text.len() {
        format!("{shown}...")
    } else {
        shown
    };
    Value::String(shown).to_string()
}

fn parse_group(
    event: HookEvent,
    group: &Value,
    key: String,
    origin: &Arc<HookOrigin>,
    sdk: bool,
    parsed: &mut Parsed,
) {
    let mut fail = |key: String, message: &str| {
        parsed.errors.push(ConfigError {
            origin: (**origin).clone(),
            key,
            message: message.to_string(),
        });
    };
    let Some(group_map) = group.as_object() else {
        let shape = if sdk { "hookCallbackIds" } else { "hooks" };
        fail(
            key,
            &format!("must be an object with \"matcher\" and \"{shape}\""),
        );
        return;
    };
    let fields: entry::GroupFields = match entry::read(group) {
        Ok(fields) => fields,
        Err((field, message)) => return fail(format!("{key}.{field}"), &message),
    };
    let matcher = match Matcher::parse(fields.matcher.as_deref().unwrap_or_default()) {
        Ok(m) => m,
        Err(message) => return fail(format!("{key}.matcher"), &message),
    };
    let sequential = fields.sequential.unwrap_or(false);
    let hooks = if sdk {
        sdk::callback_hooks(group_map, &key, origin)
    } else {
        settings_hooks(group_map, &key, origin, parsed)
    };
    let hooks = match hooks {
        Ok(hooks) => hooks,
        Err(errors) => {
            parsed.errors.extend(errors);
            return;
        }
    };
    if !hooks.is_empty() {
        parsed.groups.push(HookGroup {
            event,
            matcher,
            sequential,
            hooks,
            key,
        });
    }
}

/// The `hooks` list of a settings group.
fn settings_hooks(
    group: &Map<String, Value>,
    key: &str,
    origin: &Arc<HookOrigin>,
    parsed: &mut Parsed,
) -> Result<Vec<Hook>, Vec<ConfigError>> {
    let error = |key: String, message: String| ConfigError {
        origin: (**origin).clone(),
        key,
        message,
    };
    let list = match group.get("hooks") {
        None | Some(Value::Null) => {
            return Err(vec![error(key.to_string(), "\"hooks\" is missing".into())]);
        }
        Some(Value::Array(list)) => list,
        Some(_) => {
            return Err(vec![error(
                format!("{key}.hooks"),
                "must be a list of hooks".into(),
            )]);
        }
    };
    let mut hooks = Vec::new();
    let mut errors = Vec::new();
    for (j, entry) in list.iter().enumerate() {
        let key = format!("{key}.hooks[{j}]");
        match entry::parse_hook(entry) {
            Ok(Some((name, executor))) => {
                let label = label(name.as_deref(), &executor, origin);
                hooks.push(Hook {
                    name,
                    executor,
                    label,
                });
            }
            Ok(None) => {
                let kind = entry
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                parsed.skipped.push(Skipped {
                    origin: (**origin).clone(),
                    key,
                    why: format!("toolbelt does not run \"{kind}\" hooks (only command and http)"),
                });
            }
            Err(message) => errors.push(error(key, message)),
        }
    }
    if errors.is_empty() {
        Ok(hooks)
    } else {
        Err(errors)
    }
}

/// A `timeout` in seconds; with `millis_rule` (command hooks, Qwen Code's rule) a value
/// of 1000 or more is milliseconds. Anything else than a positive number gives `default`.
pub(crate) fn timeout_of(value: Option<&Value>, default: Duration, millis_rule: bool) -> Duration {
    let Some(n) = value
        .and_then(Value::as_f64)
        .filter(|n| n.is_finite() && *n > 0.0)
    else {
        if value.is_some_and(|v| !v.is_null()) {
            tracing::debug!("hook timeout {value:?} is not a positive number; {default:?} applies");
        }
        return default;
    };
    let seconds = if millis_rule && n >= 1000.0 {
        n / 1000.0
    } else {
        n
    };
    Duration::try_from_secs_f64(seconds)
        .unwrap_or(MAX_TIMEOUT)
        .min(MAX_TIMEOUT)
}

/// How messages name a hook: its `name`, else what it runs (shortened), with its file.
fn label(name: Option<&str>, executor: &Executor, origin: &HookOrigin) -> String {
    let what = match name {
        Some(name) => name.to_string(),
        None => {
            let target = executor.target();
            let short: String = target.chars().take(60).collect();
            if short.len() < target.len() {
                format!("`{short}...`")
            } else {
                format!("`{short}`")
            }
        }
    };
    format!("{what} ({origin})")
}
