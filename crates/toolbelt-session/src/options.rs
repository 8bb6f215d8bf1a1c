//! What a front end tells [`Session::open`](crate::Session::open) and
//! [`Session::agent`](crate::Session::agent): plain data, so the binary's flags map onto
//! it and an embedder builds it without a command-line parser.

use std::path::PathBuf;
use std::sync::Arc;

use toolbelt_mcp::ServerConfig;
use toolbelt_tools::JobTable;

/// How to open a session, besides its directory.
#[derive(Clone, Default)]
pub struct SessionOptions {
    /// More workspace directories (`--include-directories`), relative to the session's
    /// directory.
    pub include_directories: Vec<PathBuf>,
    /// More workspace directories from elsewhere (`mcp serve`: the client's other roots).
    pub more_dirs: Vec<PathBuf>,
    /// Trust the folder's `.qwen/settings.json` for this session (`--trust-workspace`;
    /// `TOOLBELT_TRUST_WORKSPACE=1` does the same).
    pub trust_workspace: bool,
    /// `--context KEY=JSON` pairs, over the session's own when-clause keys.
    pub context: Vec<String>,
    /// Which MCP servers to connect, besides the settings' own.
    pub mcp: McpOptions,
    /// The shell's background jobs of an earlier session of the same workspace, kept
    /// (`mcp serve` opening its tools again).
    pub shell_jobs: Option<Arc<JobTable>>,
    /// The language servers of an earlier session of the same workspace, kept when the
    /// configuration read now is the same (`mcp serve` opening its tools again).
    pub lsp_servers: Option<Arc<toolbelt_lsp::Servers>>,
    /// MCP servers that live in the client of a stream-JSON session (`sdkMcpServers`).
    pub sdk_mcp_servers: Vec<ServerConfig>,
    /// Which of the person's settings files are read (Claude's `--setting-sources`);
    /// `None`: both. The system file always is.
    pub setting_sources: Option<SettingSources>,
    /// More skill folders, each holding skill folders as `~/.qwen/skills` does (Claude
    /// Code plugins' `skills/`): the person's own, read after the others.
    pub plugin_skills: Vec<PathBuf>,
    /// `--worktree` and the worktree of a resumed session (issue 45).
    pub worktree: crate::worktree::WorktreeOptions,
    /// Where warnings go as they happen (they are also kept in `Session::warnings`).
    pub warn: Warn,
}

/// The MCP servers of a session besides the settings' `mcpServers`.
#[derive(Debug, Clone, Default)]
pub struct McpOptions {
    /// `--mcp-config`: a JSON file or inline JSON each.
    pub mcp_config: Vec<String>,
    /// `--allowed-mcp-server-names`: connect only these (empty: all).
    pub allowed_mcp_server_names: Vec<String>,
    /// Claude's `--strict-mcp-config`: the settings' `mcpServers` are left out; only
    /// `mcp_config`'s (and a stream-JSON client's) servers connect.
    pub strict: bool,
}

/// Which of the person's settings files a session reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingSources {
    /// `~/.qwen/settings.json`.
    pub user: bool,
    /// The project's `.qwen/settings.json`.
    pub project: bool,
}

/// Where a session's warnings go as they happen: a line each, without the
/// `toolbelt: warning: ` prefix. The default writes them on stderr with that prefix.
#[derive(Clone)]
pub struct Warn(Arc<dyn Fn(&str) + Send + Sync>);

impl Warn {
    /// Warnings handed to `f`.
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Warn(Arc::new(f))
    }

    /// Says one warning.
    pub fn say(&self, text: &str) {
        (self.0)(text);
    }
}

impl Default for Warn {
    fn default() -> Self {
        Warn::new(|text| {
            use std::io::Write;
            // A warning that cannot be shown is no reason to stop.
            let _ = writeln!(std::io::stderr().lock(), "toolbelt: warning: {text}");
        })
    }
}

/// What runs without asking and which tools are offered: the same for the agent and
/// `mcp serve`.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// `--approval-mode` (Qwen's names, or Claude's `acceptEdits`, `bypassPermissions`,
    /// `dontAsk`); `None`: the settings' `tools.approvalMode`.
    pub approval_mode: Option<String>,
    /// `--yolo`.
    pub yolo: bool,
    /// Tools or rules that run without asking (allow rules).
    pub allowed_tools: Vec<String>,
    /// Tools not offered at all.
    pub exclude_tools: Vec<String>,
}

/// Which saved conversation an agent starts from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Resume {
    /// A new conversation.
    #[default]
    Fresh,
    /// The project's latest (`--continue`).
    Latest,
    /// The one with this ID (`--resume ID`).
    Id(String),
}

/// How to make a session's agent: model, rules, prompt, saved conversation.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Model name (`-m`; else `OPENAI_MODEL`, else the settings' `model.name`).
    pub model: Option<String>,
    /// The model provider (`--provider`, `--auth-type`): `openai`, `anthropic`,
    /// `gemini`, `vertex-ai`, `openai-responses` or an id of `modelProviders`
    /// (`providers.rs`).
    pub provider: Option<String>,
    /// API key (else `OPENAI_API_KEY`).
    pub openai_api_key: Option<String>,
    /// Base URL up to the version (else `OPENAI_BASE_URL`, else OpenAI's).
    pub openai_base_url: Option<String>,
    /// Answer model requests from this JSONL script instead of a server.
    pub model_replay: Option<PathBuf>,
    /// Write the model's turns to this JSONL file.
    pub record: Option<PathBuf>,
    /// Approval mode, allow rules, excluded tools.
    pub policy: Policy,
    /// Claude's `--disallowedTools`: deny rules; a tool named bare is not offered.
    pub disallowed_tools: Vec<String>,
    /// `--core-tools`: the settings' `tools.core` for this session.
    pub core_tools: Vec<String>,
    /// A system prompt in place of toolbelt's own.
    pub system_prompt: Option<String>,
    /// Text added to the end of the system prompt.
    pub append_system_prompt: Option<String>,
    /// Most model turns in a run.
    pub max_session_turns: usize,
    /// Which saved conversation to continue.
    pub resume: Resume,
    /// The ID of this run's saved session (a new one).
    pub session_id: Option<String>,
    /// Offer `cron_create`/`cron_list`/`cron_delete` (issue 33): for front ends that
    /// fire scheduled prompts when idle (the terminal, stream-JSON), not a run that
    /// ends with its answer.
    pub scheduled_prompts: bool,
    /// Claude's `--fork-session`: the conversation of `resume` continues under a new ID,
    /// and the session it came from stays as it was.
    pub fork_session: bool,
    /// Save the run (Claude's `--no-session-persistence` turns it off): nothing is
    /// written, and the run cannot be resumed.
    pub persist_session: bool,
    /// Claude Code settings handed to the session (`--settings`, `--managed-settings`, an
    /// SDK's `initialize`): a JSON object, or a file holding one. Their `permissions`
    /// (allow, deny and ask rules) join the session's rules; their other keys are
    /// ignored with a warning.
    pub claude_settings: Vec<String>,
    /// Flags accepted and not honoured (Claude's `--max-budget-usd`, ...), each with why:
    /// said as warnings when the agent is made, and listed by front ends that report
    /// their session (stream-JSON's `init`).
    pub ignored: Vec<IgnoredFlag>,
}

/// A flag a session accepts (a client sends it) and does not honour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredFlag {
    /// The flag, as given (`--max-budget-usd`).
    pub flag: String,
    /// Why it has no effect, as a clause (`toolbelt does not track cost`).
    pub why: String,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            model: None,
            provider: None,
            openai_api_key: None,
            openai_base_url: None,
            model_replay: None,
            record: None,
            policy: Policy::default(),
            disallowed_tools: Vec::new(),
            core_tools: Vec::new(),
            system_prompt: None,
            append_system_prompt: None,
            max_session_turns: 100,
            resume: Resume::Fresh,
            session_id: None,
            scheduled_prompts: false,
            fork_session: false,
            persist_session: true,
            claude_settings: Vec::new(),
            ignored: Vec::new(),
        }
    }
}
