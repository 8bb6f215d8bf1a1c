#![allow(clippy::too_many_lines)]
//! The headless agent as a person runs it: the real binary in a temp workspace, with a
//! replay script or the fake OpenAI server on 127.0.0.1 (which checks every request).

// A test target: a failed unwrap is a failed test, with its location.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod basics;
mod declared;
mod hooks;
mod interactive;
mod mcp_interactive;
mod mcp_oauth;
mod monitor;
mod one_scheduler;
mod planning;
mod protected;
mod providers;
mod pty;
mod repository_reach;
mod resume;
mod sessions;
mod skills;
mod spelling;
mod store;
mod stream_input;
mod subagents;
mod support;
mod undo;
mod worktree;
mod worktree_session;
