#![cfg_attr(test, allow(clippy::too_many_lines))]
//! Hooks: the person's own commands, HTTP endpoints and SDK callbacks at every step of
//! a call and a session, configured as Qwen Code and Claude Code configure them, so a
//! person's settings and scripts work unchanged.
//!
//! # Brief overview
//!
//! toolbelt-core says *when* (the [`HookRunner`](toolbelt_engine::hooks::HookRunner)
//! contract: the scheduler and the agent ask it at each event and act on the combined
//! [`HookOutcome`](toolbelt_engine::hooks::HookOutcome)). This crate says *what runs and
//! what it means*:
//!
//! - [`HookConfig`] reads `hooks` from every settings file (toolbelt's layers and Claude
//!   Code's files, kept whole by `Settings::hook_layers`, concatenated in configuration
//!   order: project, user, system, Claude Code's). A workspace's hooks run only in a
//!   trusted folder; `disableAllHooks` in any file turns them all off. A bad entry is a
//!   [`ConfigError`] naming the file, the event and the index (`config.rs`).
//! - Matchers (`matcher.rs`): exact names and aliases first (Claude Code's `Bash`,
//!   `Edit|Write`), then an unanchored regular expression on the runtime name
//!   (`mcp__server__.*`), as Qwen Code's "Matcher Syntax" says.
//! - Executors (`exec.rs`): `command` through `toolbelt_process::run` (own process
//!   group, owner marker, everything ended at the time limit or on cancellation), `http`
//!   through the private-address guard of `toolbelt-netguard` with loopback open, and SDK
//!   callbacks through [`HookCallbacks`].
//! - The input every hook receives (`input.rs`), what its answer means for its event
//!   (`output.rs`), and how the answers of one event combine (`combine.rs`: deny over ask
//!   over allow, in configuration order; two different rewrites are a refusal).
//! - [`HookEngine`] runs them: the matching hooks of an event side by side (a
//!   `sequential` group in order), for one session ([`SessionInfo`]).
//! - [`HookListing`]: `toolbelt hooks list`.

#![warn(missing_docs, unreachable_pub)]

mod combine;
mod config;
mod engine;
mod exec;
mod input;
mod listing;
mod matcher;
mod output;

pub use config::{ConfigError, ConfigErrors, HookConfig, HookOrigin, Skipped};
pub use engine::HookEngine;
pub use exec::callback::HookCallbacks;
pub use input::SessionInfo;
pub use listing::{HookListing, ListedHook};
