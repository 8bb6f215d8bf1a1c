//! What an interactive front end needs that is not drawing: slash commands and their
//! texts, the per-project input history, `#reference` completion and the session's
//! statistics. No terminal code here (the binary's UI draws; these are tested alone).
//!
//! The reusable parts live in the libraries: the "always allow" rule writer
//! (`toolbelt_tools::workspace_rules`), `@path` completion (`toolbelt_tools::completion`),
//! `ask_user_question` (`toolbelt_core::AskUser`) and `/compress`
//! (`toolbelt_agent::compress`). `KIT_API.md` at the root lists the API.

pub mod completion;
pub mod input_history;
// Issue 44: the stream-JSON and ACP front ends' input.
pub mod lines;
// Issue 33: `/loop`.
pub mod loop_cmd;
// Issue 43: `/model`.
pub mod model_switch;
// Issue 46: what MCP servers ask (elicitation, sampling) in the question dialog.
pub mod server_asks;
pub mod slash;
pub mod stats;
// Issue 34: `/restore`, `/rewind`, `/diff`.
pub mod undo;
// Issue 45: keep or remove the session's worktree when quitting.
pub mod worktree_quit;
