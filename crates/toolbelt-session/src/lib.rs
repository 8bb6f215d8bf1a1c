#![cfg_attr(test, allow(clippy::too_many_lines))]
//! Assembling a toolbelt session, the same way for every front end: the headless agent,
//! the terminal, stream-JSON, `mcp serve`, `tools call`, sub-agents, and an embedder.
//!
//! # Brief overview
//!
//! [`Session::open`] takes a directory and [`SessionOptions`] and assembles: layered
//! settings with folder trust (an untrusted folder's command keys stripped), the
//! workspace roots with the path policy of the permission rules, the protected
//! configuration (`.qwen`, `.agents`, `.git`, and what the settings and flags name: the
//! toolbelt home, manifests, the programs the settings run, `--mcp-config` files,
//! `.lsp.json`, the scripts declared tools run), the skills, the language servers and
//! the registry of built-in tools, and the hooks ([`Session::hooks`], from
//! `toolbelt-hooks`). [`Session::load_extensions`] adds discovered, MCP and declared
//! tools. [`Session::permissions`] gives the scheduler's rules and mode for a
//! [`Policy`].
//!
//! [`Session::agent`] makes the session's agent ([`Prepared`]): the saved conversation
//! ([`saved`]), the model ([`build_model`], behind a [`ModelSlot`]), the sub-agent tools,
//! the [`SystemPrompt`], and the MCP servers as the agent's tool source.
//! [`ServeWorkspaces`] is `mcp serve`'s: a session per set of client roots, opened
//! again when a file that defines the tools changes.
//!
//! [`kit`] holds what an interactive front end needs besides drawing (slash commands,
//! input history, `#reference` completion, statistics); [`sandbox`] reports and proves
//! what the kernel enforces on the session's shell commands.
//!
//! Nothing here prints: warnings go to [`SessionOptions::warn`] as they happen and are
//! kept in [`Session::warnings`].

#![warn(missing_docs, unreachable_pub)]

mod agent;
mod claude_settings;
mod dont_ask;
mod error;
// Issue 33: scheduled prompts and monitors.
pub mod cron;
mod hooks;
pub mod kit;
pub mod listing;
mod mcp;
mod model_slot;
mod monitor;
mod offer;
mod offered;
mod options;
mod paths;
mod protect;
mod providers;
mod sampling;
pub mod sandbox;
pub mod saved;
mod serve;
mod session;
mod subagents;
mod trust;
// Issue 34: file checkpoints, `toolbelt restore`.
mod undo;
// Issue 45: git worktrees.
pub mod worktree;

pub use agent::{Prepared, ReadPrompt, Setup, SystemPrompt, build_model};
pub use dont_ask::{DONT_ASK_REFUSAL, DontAsk};
pub use error::{
    AgentError, ClauseError, CommandError, FlagError, ListError, MemoryError, ModelSetupError,
    ServeError, SwitchError, TrustChangeError,
};
pub use hooks::hook_listing;
pub use mcp::connect as connect_mcp;
pub use mcp::server_named as mcp_server_named;
pub use model_slot::ModelSlot;
pub use options::{
    AgentOptions, IgnoredFlag, McpOptions, Policy, Resume, SessionOptions, SettingSources, Warn,
};
pub use paths::{sessions_dir, toolbelt_home};
pub use providers::{ModelChoice, Protocol};
pub use serve::ServeWorkspaces;
pub use session::{Session, SetupError, approval_mode, rule_vocabulary};
pub use subagents::catalog as agent_catalog;
pub use trust::change_trust;
pub use undo::{CommandOutput, RestoreRequest};
pub use worktree::WorktreeOptions;
