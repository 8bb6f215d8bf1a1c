//! What the settings file of an untrusted folder may not do.
//!
//! A cloned repository brings its own `.qwen/settings.json`. Until the person trusts the
//! folder, that file must not run commands (`tools.discoveryCommand`, `tools.callCommand`,
//! MCP servers: a stdio server is a command, and even an HTTP one could be sent workspace
//! data; language servers in `lsp.servers`), make calls run without asking (allow rules,
//! `tools.allowed`, a permissive approval mode, trust flags), weaken the shell's
//! confinement, widen the roots (`context.includeDirectories`) or show environment
//! variables to `when` clauses (`context.envKeys`). Everything else (deny
//! and ask rules, exclusions, output limits, file filtering) only narrows or is harmless,
//! and still applies. Hooks (`hooks`) run commands at every step of a call, and
//! `disableAllHooks` would switch off the person's own hooks: both wait for trust too.
//!
//! The list is data, in one place: a new key that runs a command or widens access belongs
//! here. Each entry names the key as a person writes it, and says which values are still
//! fine (a workspace may turn the sandbox *on*).

use serde_json::{Map, Value};

/// When a workspace value of a key is ignored.
#[derive(Clone, Copy)]
enum Refuse {
    /// Any value that says something (not `null`, `false`, `""`, `[]` or `{}`).
    AnyValue,
    /// Values for which the function returns false.
    Unless(fn(&Value) -> bool),
}

const RESTRICTED: &[(&str, Refuse)] = &[
    // Runs commands.
    ("tools.discoveryCommand", Refuse::AnyValue),
    ("tools.callCommand", Refuse::AnyValue),
    ("mcpServers", Refuse::AnyValue),
    ("mcp.serverCommand", Refuse::AnyValue),
    // Starts language servers (or connects to one).
    ("lsp.servers", Refuse::AnyValue),
    // Names folders whose manifests bind tools to commands.
    ("tools.manifests", Refuse::AnyValue),
    // Lets calls run without asking.
    ("permissions.allow", Refuse::AnyValue),
    ("tools.allowed", Refuse::AnyValue),
    // Replaces the person's own list (a bare `run_shell_command` lifts a restriction).
    ("tools.core", Refuse::AnyValue),
    ("tools.approvalMode", Refuse::Unless(is_plan_or_default)),
    ("tools.trustDiscoveredTools", Refuse::AnyValue),
    // Weakens the shell's confinement.
    ("tools.sandbox", Refuse::Unless(turns_sandbox_on)),
    ("tools.shell.allowUnsandboxed", Refuse::AnyValue),
    ("tools.shell.killBackgroundOnExit", Refuse::Unless(is_true)),
    ("tools.shell.processNamespace", Refuse::Unless(is_true)),
    // Raises what an unasked command may take (a lower limit is fine).
    (
        "tools.shell.limits.addressSpaceMb",
        Refuse::Unless(|v| at_most(v, LIMITS.address_space_mb)),
    ),
    (
        "tools.shell.limits.cpuSeconds",
        Refuse::Unless(|v| at_most(v, LIMITS.cpu_seconds)),
    ),
    (
        "tools.shell.limits.fileSizeMb",
        Refuse::Unless(|v| at_most(v, LIMITS.file_size_mb)),
    ),
    (
        "tools.shell.limits.processes",
        Refuse::Unless(|v| at_most(v, LIMITS.processes)),
    ),
    // Hands the person's secrets (API keys, tokens) to the model's commands.
    ("tools.shell.environment", Refuse::AnyValue),
    // Lets writes replace files without write permission.
    ("tools.files.overwriteReadOnly", Refuse::AnyValue),
    // Sends the person's model key (`envKey` names any variable) to a server the file
    // names.
    ("modelProviders", Refuse::AnyValue),
    ("providerProtocol", Refuse::AnyValue),
    // Widens the roots.
    ("context.includeDirectories", Refuse::AnyValue),
    // Shows environment variables to `when` clauses, which the project's own manifests
    // can use as an oracle (a clause per character, read back from the offered tools).
    // A trusted folder may list them (see `settings/named_files.rs`).
    ("context.envKeys", Refuse::AnyValue),
    // Opens private addresses to web_fetch.
    ("tools.webFetch.allowHosts", Refuse::AnyValue),
    ("tools.webFetch.allowPrivateAddresses", Refuse::AnyValue),
    // Sends queries (and, through `$VAR`, keys) to a server the file names.
    ("webSearch", Refuse::AnyValue),
    // Keeps prompts that run in later sessions (issue 33: durable scheduled tasks).
    ("experimental.cronDurable", Refuse::AnyValue),
    // Switches off or narrows the undo of what calls change (issue 34), or shortens
    // how long it is kept.
    ("general.checkpointing", Refuse::AnyValue),
    ("general.cleanupPeriodDays", Refuse::AnyValue),
    // The folder cannot switch off the check that guards it.
    ("security.folderTrust", Refuse::AnyValue),
    // Runs commands at every step of a call (and sends data to URLs); turning all hooks
    // off would switch off the person's own checks.
    ("hooks", Refuse::AnyValue),
    ("disableAllHooks", Refuse::AnyValue),
];

/// Removes the restricted keys from one workspace layer (legacy spellings already moved
/// to their current place) and returns their names, in the order of [`RESTRICTED`].
pub(crate) fn strip_restricted(layer: &mut Value) -> Vec<String> {
    let mut ignored = Vec::new();
    for (key, refuse) in RESTRICTED {
        let Some((parent, last)) = parent_of(layer, key) else {
            continue;
        };
        let Some(value) = parent.get(last) else {
            continue;
        };
        let refused = match refuse {
            Refuse::AnyValue => says_something(value),
            Refuse::Unless(fine) => !fine(value),
        };
        if refused {
            parent.remove(last);
            ignored.push((*key).to_string());
        }
    }
    ignored
}

/// The object that holds the last segment of a dotted key, and that segment.
fn parent_of<'a>(
    layer: &'a mut Value,
    key: &'a str,
) -> Option<(&'a mut Map<String, Value>, &'a str)> {
    let mut segments: Vec<&str> = key.split('.').collect();
    let last = segments.pop()?;
    let mut node = layer;
    for segment in segments {
        node = node.get_mut(segment)?;
    }
    Some((node.as_object_mut()?, last))
}

fn says_something(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => false,
        Value::String(s) => !s.trim().is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
        Value::Bool(true) | Value::Number(_) => true,
    }
}

fn is_plan_or_default(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| matches!(s.trim().to_ascii_lowercase().as_str(), "plan" | "default"))
}

fn turns_sandbox_on(value: &Value) -> bool {
    value == &Value::Bool(true)
        || value
            .as_str()
            .is_some_and(|s| s.trim().eq_ignore_ascii_case("landlock"))
}

/// The default limits, the most a workspace may set (it cannot see the person's own).
const LIMITS: super::ShellLimits = super::ShellLimits::DEFAULT;

fn at_most(value: &Value, most: u64) -> bool {
    value.as_u64().is_some_and(|v| v <= most)
}

fn is_true(value: &Value) -> bool {
    value == &Value::Bool(true)
}
