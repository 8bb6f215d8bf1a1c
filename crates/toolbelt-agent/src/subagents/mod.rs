//! Sub-agents: Qwen Code's `.qwen/agents` definitions, the `agent` tool that runs one
//! as a nested [`crate::Agent`] loop, background agents, `task_stop` and `send_message`.
//!
//! # Brief overview
//!
//! - `definition` parses one Markdown file (YAML front matter through `serde-saphyr`,
//!   split and read by
//!   [`toolbelt_config::front_matter`]) and holds the two rules a definition cannot bend: which
//!   tools it may have ([`AgentDefinition::allows`]) and that its approval mode only
//!   narrows the parent's ([`narrowed_mode`]).
//! - `catalog` loads the levels (project over user over built-ins); a broken file is
//!   a warning naming file, line and key.
//! - `agent_tool` is the `agent` tool and the run of one sub-agent.
//! - `background` holds the background agents of a loop, their notices for the
//!   model and their inboxes, `task_stop` and `send_message`.
//! - `isolation` runs a sub-agent in a git worktree of its own, made by the session.

mod agent_tool;
mod background;
mod catalog;
mod definition;
mod isolation;

pub(crate) use agent_tool::escape_closing;
pub use agent_tool::{
    AgentTool, MAX_DEPTH, ModelChooser, SameModel, SubagentRuntime, rule_vocabulary,
};
pub use background::{BackgroundTasks, Inbox, SendMessage, Sent, ShellJobs, TaskStop};
pub use catalog::{AgentCatalog, AgentDirs};
pub use definition::{AGENT_TOOL, AgentDefinition, Level, ToolAllow, narrowed_mode};
pub use isolation::{Isolated, WorktreeIsolation};
