//! Claude Code's flags that its Agent SDK passes (read from the SDK's `sdk.mjs`, which
//! builds them from `query()`'s options) and that toolbelt has no word of its own for:
//! every one is accepted, so no option an application sets makes the query fail. The
//! others are aliases of toolbelt's own flags in `cli.rs` (`--permission-mode`,
//! `--allowedTools`, `--max-turns`, `--add-dir`, `--resume`, `--continue`,
//! `--session-id`). This file is the flags as data only (the doc tests read it too);
//! what they do to a session is `claude_options.rs`.

use std::path::PathBuf;

use clap::Args;

/// Claude Code's flags without a toolbelt word of their own (hidden from `--help`
/// except `--disallowedTools`, `--fork-session` and `--no-session-persistence`, which
/// a person uses too; docs/sdk-and-stream-json.md names every one).
#[derive(Debug, Clone, Default, Args)]
pub struct ClaudeArgs {
    /// Tools (or rules such as `Bash(rm *)`) that never run: a deny rule each, and a tool
    /// named bare is not offered at all (comma-separated or repeated).
    #[arg(long = "disallowedTools", value_delimiter = ',', value_name = "TOOLS")]
    pub disallowed_tools: Vec<String>,
    /// Claude Code's permission prompt tool; `stdio` (the SDK's `canUseTool`) is how
    /// toolbelt asks a stream-JSON client. Another (an MCP tool) is not supported.
    #[arg(long, hide = true, value_name = "TOOL")]
    pub permission_prompt_tool: Option<String>,
    /// Accepted (Claude Code's SDK always passes it).
    #[arg(long, hide = true)]
    pub verbose: bool,
    /// Accepted: toolbelt reads `initialize` before anything else anyway.
    #[arg(long, hide = true)]
    pub await_initialize: bool,
    /// Accepted: `--permission-mode bypassPermissions` needs no second flag here.
    #[arg(long, hide = true)]
    pub allow_dangerously_skip_permissions: bool,
    /// With --resume/--continue: continue under a new session ID (or --session-id's),
    /// leaving the resumed session as it was.
    #[arg(long)]
    pub fork_session: bool,
    /// Save nothing of this run (it cannot be resumed).
    #[arg(long)]
    pub no_session_persistence: bool,
    /// Which of the person's settings files are read: `user` (`~/.qwen/settings.json`),
    /// `project` (`.qwen/settings.json`); `local` names no file of toolbelt's. Empty:
    /// neither. The system file always is.
    #[arg(long, hide = true, value_name = "SOURCES")]
    pub setting_sources: Option<String>,
    /// Only the MCP servers of `--mcp-config` (and the SDK's), not the settings'.
    #[arg(long, hide = true)]
    pub strict_mcp_config: bool,
    /// The built-in tools offered, in Claude's names or toolbelt's (comma-separated);
    /// `default`: all of them; empty: none.
    #[arg(long, hide = true, value_name = "TOOLS")]
    pub tools: Option<String>,
    /// A Claude Code plugin: its `skills/` and its `.mcp.json` servers join the session.
    #[arg(long, hide = true, value_name = "DIR")]
    pub plugin_dir: Vec<PathBuf>,
    /// A Claude Code plugin whose MCP servers stay out (its skills join).
    #[arg(long, hide = true, value_name = "DIR")]
    pub plugin_dir_no_mcp: Vec<PathBuf>,
    /// Claude Code settings (JSON, or a file): their permission rules apply.
    #[arg(long, hide = true, value_name = "FILE|JSON")]
    pub settings: Option<String>,
    /// Claude Code managed settings (JSON): their permission rules apply.
    #[arg(long, hide = true, value_name = "JSON")]
    pub managed_settings: Option<String>,
    /// The managed settings come in `initialize` (`managedSettings`).
    #[arg(long, hide = true)]
    pub managed_settings_in_initialize: bool,
    /// Fields that come in `initialize` rather than as flags (`settings`,
    /// `disallowedTools`); toolbelt reads them there whenever they come.
    #[arg(long, hide = true, value_name = "FIELDS")]
    pub initialize_fields: Option<String>,
    /// Hook events in the output: toolbelt runs no hooks, so there are none.
    #[arg(long, hide = true)]
    pub include_hook_events: bool,
    /// Claude's extended thinking: accepted, not honoured. This flag and the hidden ones
    /// below it are said in a warning and in the `init` message, each with why
    /// (`crate::claude_options::IGNORED`).
    #[arg(long, hide = true, value_name = "MODE")]
    pub thinking: Option<String>,
    /// Claude's thinking budget in tokens: accepted, not honoured.
    #[arg(long, hide = true, value_name = "N")]
    pub max_thinking_tokens: Option<String>,
    /// How Claude shows its thinking: accepted, not honoured.
    #[arg(long, hide = true, value_name = "DISPLAY")]
    pub thinking_display: Option<String>,
    /// The model's reasoning effort: accepted, not honoured.
    #[arg(long, hide = true, value_name = "LEVEL")]
    pub effort: Option<String>,
    /// A cost budget in dollars: accepted, not honoured (`--max-turns` limits a run).
    #[arg(long, hide = true, value_name = "USD")]
    pub max_budget_usd: Option<String>,
    /// A token budget for the task: accepted, not honoured.
    #[arg(long, hide = true, value_name = "TOKENS")]
    pub task_budget: Option<String>,
    /// Claude's main agent by name: accepted, not honoured (sub-agents are the `agent` tool's).
    #[arg(long, hide = true, value_name = "NAME")]
    pub agent: Option<String>,
    /// Anthropic API betas: accepted, not honoured.
    #[arg(long, hide = true, value_name = "BETAS")]
    pub betas: Option<String>,
    /// A JSON Schema for the final answer: accepted, not honoured.
    #[arg(long, hide = true, value_name = "SCHEMA")]
    pub json_schema: Option<String>,
    /// A model to fall back on: accepted, not honoured (the same model is retried).
    #[arg(long, hide = true, value_name = "MODEL")]
    pub fallback_model: Option<String>,
    /// Claude's debug output, with an optional filter: accepted, not honoured (`TOOLBELT_LOG`).
    #[arg(long, hide = true, value_name = "FILTER", num_args = 0..=1, default_missing_value = "")]
    pub debug: Option<String>,
    /// A file for Claude's debug output: accepted, not honoured (`TOOLBELT_LOG`).
    #[arg(long, hide = true, value_name = "FILE")]
    pub debug_file: Option<String>,
    /// Claude's debug output on stderr: accepted, not honoured (`TOOLBELT_LOG`).
    #[arg(long, hide = true)]
    pub debug_to_stderr: bool,
    /// How Claude prompts for permission: accepted, not honoured (the SDK's `canUseTool` asks).
    #[arg(long, hide = true, value_name = "MODE")]
    pub permission_prompts: Option<String>,
    /// Claude's channels: accepted, not honoured.
    #[arg(long, hide = true, value_name = "CHANNEL")]
    pub channels: Vec<String>,
    /// Mirror the transcript: accepted, not honoured (transcripts are saved under toolbelt's home).
    #[arg(long, hide = true)]
    pub session_mirror: bool,
    /// Where Claude reads project settings: accepted, not honoured (the session's directory).
    #[arg(long, hide = true, value_name = "DIR")]
    pub project_config_root: Option<String>,
    /// Resume at a given message: accepted, not honoured (a resumed session continues from its end).
    #[arg(long, hide = true, value_name = "MESSAGE")]
    pub resume_session_at: Option<String>,
    /// Drop the last turn on resume: accepted, not honoured.
    #[arg(long, hide = true, value_name = "VALUE")]
    pub resume_drops_turn: Option<String>,
    /// A label for the run: accepted, not honoured.
    #[arg(long, hide = true, value_name = "NAME")]
    pub workload: Option<String>,
}
