//! The typed view of every settings key toolbelt reads.
//!
//! Every key a component uses is a field here, with the type it must have, so one check at
//! load time covers them all: a wrong type or a value outside an enumeration is an error
//! that names the file, the key and what is accepted, never a silent default. (A value
//! that was ignored silently is how `tools.sandbox: "landlok"` used to run the shell
//! unsandboxed.) Keys that this build does not know are not fields and stay allowed:
//! Qwen Code's settings files hold many.
//!
//! Enumerations deserialize through `TryFrom<Value>` so their error message lists the
//! accepted values in the words a person writes in the file.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::ApprovalMode;

/// `tools`: which tools exist, how calls are approved and how much of their output the
/// model reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolsSettings {
    /// Allow-list of built-in tools; `None` means all.
    pub core: Option<Vec<String>>,
    /// Deny rules (`tools.exclude`); a bare tool name also removes the tool from the
    /// session, a `name(...)` entry only refuses the calls it matches.
    pub exclude: Vec<String>,
    /// Tools (or rules) that run without confirmation.
    pub allowed: Vec<String>,
    /// Approval mode when no flag sets one (`tools.approvalMode`); `None`: `default`.
    pub approval_mode: Option<ApprovalModeSetting>,
    /// Confinement of the shell tool (`tools.sandbox`); off by default.
    pub sandbox: Sandbox,
    /// The shell tool's settings (`tools.shell`).
    pub shell: ShellSettings,
    /// Command whose output (JSON function declarations) lists the project's own tools
    /// (`tools.discoveryCommand`); `None`: no discovered tools.
    pub discovery_command: Option<String>,
    /// Command that runs a discovered tool: given the tool name as its argument and the JSON
    /// arguments on stdin (`tools.callCommand`).
    pub call_command: Option<String>,
    /// Time limit of the discovery command (`tools.discoveryTimeout`, ms).
    pub discovery_timeout: Option<Millis>,
    /// Time limit of one discovered-tool call (`tools.callTimeout`, ms).
    pub call_timeout: Option<Millis>,
    /// Cap on each output stream of the discovery and call commands, in bytes.
    pub command_output_limit: Option<u64>,
    /// Discovered tools run without asking.
    pub trust_discovered_tools: bool,
    /// Most characters of a result the model reads (`tools.truncateToolOutputThreshold`;
    /// default 25 000, 0 or less: no limit); the rest is spilled to a file.
    pub truncate_tool_output_threshold: Option<i64>,
    /// Most lines of a result the model reads (`tools.truncateToolOutputLines`; default
    /// 1 000, 0 or less: no limit).
    pub truncate_tool_output_lines: Option<i64>,
    /// How `write_file` and `edit` treat files (`tools.files`).
    pub files: FileWriteSettings,
    /// `web_fetch`'s limits and the hosts it may reach (`tools.webFetch`).
    pub web_fetch: WebFetchSettings,
    /// Folders (or files) holding declared-tool manifests, beside `.qwen/tools/` and
    /// `~/.qwen/tools/` (`tools.manifests`). A folder may hold a VS Code extension's
    /// `package.json`. Loads commands, so an untrusted workspace file cannot set it.
    pub manifests: Vec<String>,
    /// Time limit of a declared tool's `prepare` command (`tools.prepareTimeout`, ms;
    /// default 5 s). Past it the generic confirmation is used.
    pub prepare_timeout: Option<Millis>,
    /// When tool declarations are deferred behind `tool_search` (`tools.search`).
    pub search: ToolSearchSettings,
}

/// `tools.search`: above either budget, tools that are not built in are deferred and the
/// model finds them with `tool_search`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolSearchSettings {
    /// `false` never defers, `true` always does (when any tool can be deferred); absent
    /// defers only above the budgets.
    pub enabled: Option<bool>,
    /// Most tools declared before deferring (default 60).
    pub max_tools: Option<u32>,
    /// Most bytes of declarations (names, descriptions, schemas as JSON) before
    /// deferring (default 40 KiB).
    pub max_schema_bytes: Option<u64>,
}

/// `tools.webFetch`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WebFetchSettings {
    /// Hosts and networks the private-address guard lets through: host names
    /// (`docs.internal`), addresses (`127.0.0.1`, `::1`) and CIDRs (`10.1.0.0/16`).
    /// Widens access, so an untrusted workspace file cannot set it.
    pub allow_hosts: Vec<String>,
    /// Turns the private-address guard off entirely (default false). Widens access.
    pub allow_private_addresses: bool,
    /// Bytes of body read at most (default 10 MiB); the connection is dropped there.
    pub max_bytes: Option<u64>,
    /// Time limit to connect, in ms (default 10 000).
    pub connect_timeout: Option<Millis>,
    /// Time limit of the whole request, redirects and body included, in ms (default 30 000).
    pub timeout: Option<Millis>,
    /// In the agent, ask the session's model once to answer the prompt from the page.
    pub summarize: bool,
}

/// `webSearch`: the search providers `web_search` may use.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WebSearchSettings {
    /// The configured providers, in order of preference.
    pub provider: Vec<WebSearchProvider>,
    /// The provider used when a call names none (its `type`); the first one otherwise.
    pub default: Option<String>,
}

/// One entry of `webSearch.provider`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebSearchProvider {
    /// `tavily`, `searxng` or `brave`.
    #[serde(rename = "type")]
    pub kind: WebSearchKind,
    /// The key (write `$TAVILY_API_KEY` to take it from the environment). SearXNG
    /// needs none.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Where the provider's API is; required for SearXNG (self-hosted), optional for the
    /// others (their public endpoint by default).
    #[serde(default)]
    pub base_url: Option<String>,
    /// Results asked for (default 5, at most 20).
    #[serde(default)]
    pub max_results: Option<u32>,
}

/// The search providers toolbelt speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebSearchKind {
    /// Tavily's search API (needs an API key).
    Tavily,
    /// A SearXNG instance (needs `baseUrl`, no key).
    Searxng,
    /// Brave Search's API (needs an API key).
    Brave,
}

impl WebSearchKind {
    /// The accepted spellings, for error messages.
    pub const ACCEPTED: &'static str = "\"tavily\", \"searxng\", \"brave\"";

    /// The lower-case name written in the settings.
    pub fn as_str(self) -> &'static str {
        match self {
            WebSearchKind::Tavily => "tavily",
            WebSearchKind::Searxng => "searxng",
            WebSearchKind::Brave => "brave",
        }
    }
}

impl<'de> Deserialize<'de> for WebSearchKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        match value
            .as_str()
            .map(|s| s.trim().to_ascii_lowercase())
            .as_deref()
        {
            Some("tavily") => Ok(WebSearchKind::Tavily),
            Some("searxng") => Ok(WebSearchKind::Searxng),
            Some("brave") => Ok(WebSearchKind::Brave),
            _ => Err(not_accepted(&value, WebSearchKind::ACCEPTED)),
        }
    }
}

/// `tools.files`: what writes may do beyond a file's own permissions.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FileWriteSettings {
    /// `tools.files.overwriteReadOnly`: replace files that have no write permission
    /// for this user (mode 0444, say). Off by default: such a file is refused.
    pub overwrite_read_only: bool,
}

/// `tools.shell`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ShellSettings {
    /// Background jobs are killed when the session ends (default true).
    pub kill_background_on_exit: bool,
    /// Run unsandboxed when Landlock is asked for but the kernel has none (default false).
    pub allow_unsandboxed: bool,
    /// Resource limits of the commands that run unasked (`tools.shell.limits`).
    pub limits: ShellLimits,
    /// `tools.shell.environment`: what of toolbelt's environment commands get.
    pub environment: ShellEnvironmentSettings,
    /// `tools.shell.processNamespace`: approved commands share one PID namespace that
    /// the kernel ends with toolbelt (default true). As a normal user it is made through
    /// a user namespace, where set-uid programs such as `sudo` lose their privilege;
    /// `false` (the person's settings only) runs approved commands without it.
    pub process_namespace: bool,
    /// `tools.shell.inputWaitMs`: a foreground command whose output ends in a prompt
    /// (`Password:`, `[y/N]`, `name:`) and stays so this long is ended: it waits for input
    /// it cannot get (default 5000; 0 never ends one early).
    pub input_wait_ms: u64,
    /// `tools.shell.readySettleMs`: a foreground command whose output settles this long
    /// on a "ready" line (`listening on`, `ready`, `watching`) moves to the background
    /// instead of running to its timeout (default 3000; 0 never moves one).
    pub ready_settle_ms: u64,
}

impl Default for ShellSettings {
    fn default() -> Self {
        ShellSettings {
            kill_background_on_exit: true,
            allow_unsandboxed: false,
            limits: ShellLimits::default(),
            environment: ShellEnvironmentSettings::default(),
            process_namespace: true,
            input_wait_ms: 5000,
            ready_settle_ms: 3000,
        }
    }
}

/// `tools.shell.limits`: what one command that runs unasked may take (`setrlimit` in
/// the command before it starts; an untrusted workspace may only lower them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ShellLimits {
    /// Address space of each process, in MiB (`RLIMIT_AS`).
    pub address_space_mb: u64,
    /// CPU time of each process, in seconds (`RLIMIT_CPU`).
    pub cpu_seconds: u64,
    /// Largest file a process may write, in MiB (`RLIMIT_FSIZE`).
    pub file_size_mb: u64,
    /// Processes and threads the command may start beyond the tasks the machine runs
    /// when it starts (`RLIMIT_NPROC` counts per user, and never for root).
    pub processes: u64,
}

impl ShellLimits {
    /// 4 GiB of address space, 5 minutes of CPU, 1 GiB files, 512 more tasks.
    pub const DEFAULT: ShellLimits = ShellLimits {
        address_space_mb: 4096,
        cpu_seconds: 300,
        file_size_mb: 1024,
        processes: 512,
    };
}

impl Default for ShellLimits {
    fn default() -> Self {
        ShellLimits::DEFAULT
    }
}

/// `tools.shell.environment`: variables whose names look like secrets (`*KEY*`,
/// `*TOKEN*`, ...) are left out of the model's commands unless named here.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ShellEnvironmentSettings {
    /// Names (or `*` globs, case-insensitive) of such variables commands still get.
    pub passthrough: Vec<String>,
}

/// `tools.sandbox`: the shell's confinement. Qwen Code's `true` means "the platform's
/// sandbox"; here that is Landlock, the only one. Container sandboxes (`"docker"`,
/// `"podman"`) are not available and are an error rather than a silent "none".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sandbox {
    /// No confinement: the shell runs with the user's rights.
    #[default]
    Off,
    /// Landlock: a command may write only inside the workspace roots and the temporary
    /// directory; reading is not restricted.
    Landlock,
}

impl Sandbox {
    /// The accepted spellings, for error messages.
    pub const ACCEPTED: &'static str = "\"landlock\", true (Landlock), false";
}

impl<'de> Deserialize<'de> for Sandbox {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        match &value {
            Value::Bool(false) | Value::Null => Ok(Sandbox::Off),
            Value::Bool(true) => Ok(Sandbox::Landlock),
            Value::String(s) if s.trim().eq_ignore_ascii_case("landlock") => Ok(Sandbox::Landlock),
            other => Err(not_accepted(other, Sandbox::ACCEPTED)),
        }
    }
}

/// `tools.approvalMode`, with the spellings the flag accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApprovalModeSetting(pub ApprovalMode);

impl<'de> Deserialize<'de> for ApprovalModeSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        value
            .as_str()
            .and_then(|s| s.parse().ok())
            .map(ApprovalModeSetting)
            .ok_or_else(|| not_accepted(&value, "\"plan\", \"default\", \"auto-edit\", \"yolo\""))
    }
}

/// A duration in milliseconds, written as a non-negative integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Millis(pub u64);

impl Millis {
    /// The duration, or `None` for 0 (which means "the default" in Qwen Code's files).
    pub fn duration(self) -> Option<Duration> {
        (self.0 > 0).then(|| Duration::from_millis(self.0))
    }
}

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        value
            .as_u64()
            .map(Millis)
            .ok_or_else(|| not_accepted(&value, "a whole number of milliseconds (0 or more)"))
    }
}

/// `permissions`: rules written `tool` or `tool(specifier)`, the strictest match wins
/// (deny over ask over allow).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PermissionSettings {
    /// Rules that let a matching call run without asking (`permissions.allow`).
    pub allow: Vec<String>,
    /// Rules that always ask before a matching call, whatever the approval mode
    /// (`permissions.ask`).
    pub ask: Vec<String>,
    /// Rules that refuse a matching call (`permissions.deny`); a bare tool name removes the
    /// tool from the session.
    pub deny: Vec<String>,
}

/// `context`: what the session reads for context beyond the prompt.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContextSettings {
    /// More workspace roots (`context.includeDirectories`), relative to the working directory.
    pub include_directories: Vec<String>,
    /// The context file names (`QWEN.md`, `AGENTS.md` when absent).
    pub file_name: Option<ContextFileNames>,
    /// Which files listing and search tools leave out (`context.fileFiltering`).
    pub file_filtering: FileFiltering,
    /// Extra when-clause context keys and their values (`context.keys`).
    pub keys: BTreeMap<String, Value>,
    /// Environment variables offered to when-clauses as `env.<NAME>` (`context.envKeys`);
    /// no variable is visible unless listed.
    pub env_keys: Vec<String>,
}

/// `context.fileName`: one name or a list. Each must be a plain file name: the loader
/// joins it to every directory it searches, and a path (`/etc/shadow`, `../../x`) would
/// put a file from anywhere into the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFileNames(pub Vec<String>);

impl<'de> Deserialize<'de> for ContextFileNames {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const ACCEPTED: &str = "a file name or a list of file names (no directories)";
        let value = Value::deserialize(d)?;
        let items: Vec<&Value> = match &value {
            Value::Array(items) => items.iter().collect(),
            one => vec![one],
        };
        let mut names = Vec::new();
        for item in items {
            match item.as_str() {
                Some(s) if s.trim().is_empty() => {}
                Some(s) if s.contains('/') || s == ".." || s == "." || s.contains('\0') => {
                    return Err(not_accepted(item, ACCEPTED));
                }
                Some(s) => names.push(s.to_string()),
                None => return Err(not_accepted(item, ACCEPTED)),
            }
        }
        Ok(ContextFileNames(names))
    }
}

/// `context.fileFiltering`: which ignore files the walkers obey.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FileFiltering {
    /// Obey `.gitignore`, `.git/info/exclude` and the global excludes file (default true).
    pub respect_git_ignore: bool,
    /// Obey `.qwenignore` (default true).
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

/// `mcpServers.<alias>.sampling`: who lets a server's sampling request reach the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpSampling {
    /// The person approves each request; refused where nobody can be asked.
    #[default]
    Ask,
    /// Answered unasked, headless runs included.
    Allow,
    /// Always refused.
    Deny,
}

/// One entry of `mcpServers`: how to reach the server and how far to trust it. The
/// transport is `httpUrl` if set, else `url`, else `command`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct McpServerSettings {
    /// Program to start for a stdio server.
    pub command: Option<String>,
    /// Arguments of `command`.
    pub args: Vec<String>,
    /// Environment variables set for `command` (values may use `$VAR`).
    pub env: BTreeMap<String, String>,
    /// Working directory of `command`, relative to the project root; default the project root.
    pub cwd: Option<String>,
    /// Legacy SSE endpoint.
    pub url: Option<String>,
    /// Streamable HTTP endpoint.
    pub http_url: Option<String>,
    /// HTTP headers sent with every request (values may use `$VAR`).
    pub headers: BTreeMap<String, String>,
    /// Time limit of one call to the server in milliseconds (Qwen Code's `timeout`;
    /// default 10 minutes).
    pub timeout: Option<u64>,
    /// The older name of `timeout` (toolbelt's own key); `timeout` wins when both are set.
    pub call_timeout: Option<u64>,
    /// Time limit of starting the server, its `initialize` handshake and its first
    /// listing, in milliseconds (`startupTimeout`; default 30 s).
    pub startup_timeout: Option<u64>,
    /// Calls of this server's tools run without confirmation (also believes its annotations).
    pub trust: bool,
    /// Believe the server's tool annotations: a tool it marks `readOnlyHint` runs
    /// without confirmation, as a read. Without this (or `trust`) annotations only
    /// inform the display, as the MCP specification says of untrusted servers.
    pub trust_annotations: bool,
    /// Whether the server's sampling requests (`sampling/createMessage`) reach the
    /// session's model: `ask` (default: the person approves each), `allow` (also in
    /// headless runs, unasked) or `deny`. A workspace file of an untrusted folder
    /// cannot set it (its `mcpServers` are ignored whole).
    pub sampling: McpSampling,
    /// Only these tools of the server are registered; `None`: all. Entries may be `name(...)`.
    pub include_tools: Option<Vec<String>>,
    /// These tools of the server are not registered; wins over `include_tools`.
    pub exclude_tools: Vec<String>,
    /// What the server is for, shown in listings.
    pub description: Option<String>,
    /// How toolbelt logs in to an HTTP server that asks for OAuth (`oauth`); tokens
    /// are never kept here, but in toolbelt's store.
    pub oauth: McpOAuthSettings,
}

/// `mcpServers.<name>.oauth`: the OAuth client toolbelt is to the server's authorization
/// server. Everything is optional: without a `clientId` toolbelt registers itself
/// (dynamic client registration) or uses `clientMetadataUrl` where the server takes one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct McpOAuthSettings {
    /// `false` turns OAuth off for the server (a 401 is then a failure, not a login to
    /// do); default on.
    pub enabled: Option<bool>,
    /// A client id registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// The secret of that client, for a confidential one (values may use `$VAR`).
    pub client_secret: Option<String>,
    /// The HTTPS URL of a client ID metadata document, used as the client id where the
    /// authorization server supports them.
    pub client_metadata_url: Option<String>,
    /// The scopes to ask for; default what the server names in its challenge or metadata.
    pub scopes: Option<Vec<String>>,
    /// The loopback port the login's redirect comes back to (a pre-registered client
    /// may need a fixed one); default any free port.
    pub redirect_port: Option<u16>,
    /// The server and its authorization server may be on private addresses (a company
    /// network): by default OAuth requests go only to public addresses, or to loopback
    /// ones for a server on this machine.
    pub allow_private_addresses: bool,
}

/// `mcp`: settings about MCP servers as a whole.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct McpSettings {
    /// A command line started as an extra stdio server under the alias `mcp` (split like a
    /// shell would; an `mcpServers.mcp` entry wins).
    pub server_command: Option<String>,
    /// Only the servers of these aliases are connected (`mcp.allowed`); `None`: all.
    pub allowed: Option<Vec<String>>,
    /// Servers of these aliases are not connected (`mcp.excluded`).
    pub excluded: Vec<String>,
    /// The first turn waits for every server, each at most its `startupTimeout`
    /// (`mcp.waitAtStart`, default false: servers come up in the background and their
    /// tools join when ready). For one-shot runs whose first request needs a server's
    /// tools.
    pub wait_at_start: bool,
}

/// `lsp`: the language servers the settings define, and what the edit tools ask them.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LspSettings {
    /// An edit to a file that a running language server covers reports the errors it
    /// introduced (`lsp.diagnosticsAfterEdit`, default true).
    pub diagnostics_after_edit: bool,
    /// How long such an edit waits for the server's diagnostics (`lsp.diagnosticsWaitMs`;
    /// default 3000; 0 takes only what the server already published).
    pub diagnostics_wait_ms: Option<Millis>,
    /// Servers in `.lsp.json`'s layout, a language name per key (`lsp.servers`); each is
    /// taken whole from the highest layer that defines it. Starts programs, so an
    /// untrusted workspace file cannot set it.
    pub servers: BTreeMap<String, LspServerSettings>,
}

impl Default for LspSettings {
    fn default() -> Self {
        LspSettings {
            diagnostics_after_edit: true,
            diagnostics_wait_ms: None,
            servers: BTreeMap::new(),
        }
    }
}

/// One language server, as `.lsp.json` (Qwen Code's and Claude Code's layout) and
/// `lsp.servers` write it. The types are checked here; what the values must say
/// together (a command for stdio, a loopback host in a project's file) is checked where
/// the servers are read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LspServerSettings {
    /// The program to start (on `PATH`, or a path); optional for a socket server that
    /// already listens.
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to its environment.
    pub env: BTreeMap<String, String>,
    /// File extension to LSP language id (`".py": "python"`).
    pub extension_to_language: BTreeMap<String, String>,
    /// Sent as `initializationOptions` in `initialize`.
    pub initialization_options: Option<Value>,
    /// Sent with `workspace/didChangeConfiguration`, and the answer to
    /// `workspace/configuration`.
    pub settings: Option<Value>,
    /// The folder the server works on, inside the project.
    pub workspace_folder: Option<String>,
    /// How long the start (and `initialize`) may take, in ms (default 10 000).
    pub startup_timeout: Option<Millis>,
    /// How long `shutdown` may take before the server is killed, in ms (default 5 000).
    pub shutdown_timeout: Option<Millis>,
    /// How long one request may take, in ms (a toolbelt key; default 30 000).
    pub request_timeout: Option<Millis>,
    /// Start a crashed server again on the next call (default false).
    pub restart_on_crash: bool,
    /// How many times (default 3).
    pub max_restarts: Option<u32>,
    /// How toolbelt talks to it: `"stdio"` (default), `"tcp"` or `"socket"`.
    pub transport: LspTransport,
    /// Where a `tcp` or `socket` server listens: `{"host", "port"}` or `{"path"}`.
    pub socket: Option<LspSocket>,
}

/// `transport` of a language server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LspTransport {
    /// The server's stdin and stdout.
    #[default]
    Stdio,
    /// A TCP connection to `socket.host`:`socket.port`.
    Tcp,
    /// A Unix socket at `socket.path`.
    Socket,
}

impl LspTransport {
    /// The accepted spellings, for error messages.
    pub const ACCEPTED: &'static str = "\"stdio\", \"tcp\", \"socket\"";
}

impl<'de> Deserialize<'de> for LspTransport {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        match value
            .as_str()
            .map(|s| s.trim().to_ascii_lowercase())
            .as_deref()
        {
            Some("stdio") => Ok(LspTransport::Stdio),
            Some("tcp") => Ok(LspTransport::Tcp),
            Some("socket") => Ok(LspTransport::Socket),
            _ => Err(not_accepted(&value, LspTransport::ACCEPTED)),
        }
    }
}

/// `socket` of a language server: a TCP address or a Unix socket's path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct LspSocket {
    /// The TCP host (default `127.0.0.1`).
    pub host: Option<String>,
    /// The TCP port.
    pub port: Option<u16>,
    /// The Unix socket's path (relative to the project).
    pub path: Option<String>,
}

/// `model`: the model the agent talks to.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ModelSettings {
    /// Model name sent to the API (`model.name`); the `-m` flag and `OPENAI_MODEL` win.
    pub name: Option<String>,
    /// The model takes images (`read_file` of an image sends it as an image).
    pub vision: bool,
    /// `model.toolCallsInText`: read the tool calls a chat-completions server left in the
    /// answer text (Hermes, Qwen, Mistral and Llama 3.x forms) as calls. Default true.
    pub tool_calls_in_text: Option<bool>,
}

/// One model of `modelProviders.<provider>` (Qwen Code's shape): which model, where,
/// with which key and limits.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ModelProviderEntry {
    /// The model name sent to the API (required).
    pub id: String,
    /// A display name.
    pub name: Option<String>,
    /// The variable holding the key (default per provider, e.g. `ANTHROPIC_API_KEY`).
    pub env_key: Option<String>,
    /// The server; the provider's default when absent.
    pub base_url: Option<String>,
    /// `capabilities.vision`: the model takes images.
    pub capabilities: ModelCapabilities,
    /// Limits, retries, sampling, headers.
    pub generation_config: GenerationConfig,
}

/// `capabilities` of a model entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ModelCapabilities {
    /// It takes images.
    pub vision: Option<bool>,
}

/// `generationConfig` of a model entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GenerationConfig {
    /// Milliseconds a request, or a silence mid-stream, may last.
    pub timeout: Option<u64>,
    /// Attempts after the first.
    pub max_retries: Option<u32>,
    /// The first wait between attempts, in milliseconds.
    pub retry_initial_delay_ms: Option<u64>,
    /// The longest wait between attempts, in milliseconds.
    pub retry_max_delay_ms: Option<u64>,
    /// Anthropic: mark the system prompt and tools for prompt caching (default true).
    pub enable_cache_control: Option<bool>,
    /// The model's context window in tokens.
    pub context_window_size: Option<u64>,
    /// More headers for every request.
    pub custom_headers: BTreeMap<String, String>,
    /// Sampling parameters (snake_case keys, as Qwen Code writes them).
    pub sampling_params: SamplingParams,
}

/// `samplingParams` of a model entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SamplingParams {
    /// `temperature`.
    pub temperature: Option<f64>,
    /// `top_p`.
    pub top_p: Option<f64>,
    /// `top_k`.
    pub top_k: Option<u32>,
    /// `max_tokens`.
    pub max_tokens: Option<u32>,
    /// `presence_penalty`.
    pub presence_penalty: Option<f64>,
    /// `frequency_penalty`.
    pub frequency_penalty: Option<f64>,
}

/// `general`: what toolbelt keeps of a session.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GeneralSettings {
    /// How many days checkpoints are kept (`general.cleanupPeriodDays`, default 30).
    pub cleanup_period_days: Option<u32>,
    /// `general.checkpointing`.
    pub checkpointing: CheckpointingSettings,
}

/// `worktree`: what a new git worktree gets (issue 45).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WorktreeSettings {
    /// Directories of the main checkout linked into every new worktree (`node_modules`):
    /// relative paths without `..`; others are refused when the worktree is made.
    pub symlink_directories: Vec<String>,
}

/// `general.checkpointing`: the file checkpoints taken before each call that may change
/// files (issue 34).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CheckpointingSettings {
    /// Whether checkpoints are taken (default true; the key Qwen Code inherited from
    /// Gemini CLI).
    pub enabled: bool,
    /// Files larger than this many bytes are left out of checkpoints (default 10 MiB).
    pub max_file_size: Option<u64>,
    /// More files than this in the workspace and checkpoints stop for the session
    /// (default 100,000).
    pub max_files: Option<u64>,
}

impl Default for CheckpointingSettings {
    fn default() -> Self {
        CheckpointingSettings {
            enabled: true,
            max_file_size: None,
            max_files: None,
        }
    }
}

/// `security`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SecuritySettings {
    /// `security.folderTrust`.
    pub folder_trust: FolderTrustSettings,
    /// `security.allowedHttpHookUrls`: the URLs an `http` hook may be sent to, as patterns
    /// where `*` matches any run of characters. `None`: any URL passes this check (the
    /// private-address guard still applies). A workspace's list counts only when neither
    /// the user nor the system file sets one, so a repository can narrow where its hooks
    /// send data but never replace the person's list.
    pub allowed_http_hook_urls: Option<Vec<String>>,
}

/// `security.folderTrust`: on by default here (Qwen Code's default is off).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FolderTrustSettings {
    /// Whether folder trust applies: when on, a workspace settings file of a folder the person
    /// has not trusted loses the keys listed in `settings/untrusted.rs` (default true).
    pub enabled: bool,
}

impl Default for FolderTrustSettings {
    fn default() -> Self {
        FolderTrustSettings { enabled: true }
    }
}

/// The error of a value outside what a key accepts, in the file's own words:
/// `"landlok" is not accepted; accepted values: "landlock", true (Landlock), false`.
fn not_accepted<E: serde::de::Error>(value: &Value, accepted: &str) -> E {
    E::custom(format!(
        "{} is not accepted; accepted values: {accepted}",
        show_value(value)
    ))
}

/// A value as written in JSON, shortened.
pub(crate) fn show_value(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        let head: String = text.chars().take(57).collect();
        format!("{head}...")
    } else {
        text
    }
}
