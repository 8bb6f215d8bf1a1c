//! The listings of `toolbelt agents list`, `skills list` and `lsp list`: text a line per
//! fact, or one JSON object, built from what the session loaded.

mod agents;
mod lsp;
mod skills;

pub use agents::{agents_json, agents_text};
pub use lsp::{LspRow, lsp_json, lsp_rows};
pub use skills::{skills_json, skills_text};
