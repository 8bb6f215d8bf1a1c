//! The listings of `toolbelt agents list`, `skills list`, `lsp list`, `mcp list` and
//! `tools list`: text a line per fact, or JSON, built from what the session loaded. (`hooks list` is
//! `toolbelt_hooks::HookListing`, read by [`crate::hook_listing`].)

mod agents;
mod lsp;
mod mcp;
mod skills;
mod tools;

pub use agents::{agents_json, agents_text};
pub use lsp::{LspRow, lsp_json, lsp_rows, lsp_text};
pub(crate) use mcp::counts as mcp_counts;
pub use mcp::{mcp_json, mcp_text};
pub use skills::{skills_json, skills_text};
pub use tools::tools_text;
