#![cfg_attr(test, allow(clippy::too_many_lines))]
//! `--input-format stream-json`: the headless protocol of Qwen Code's and Claude Code's
//! SDKs, in and out. The client (`@qwen-code/sdk` starts toolbelt with
//! `--input-format stream-json --output-format stream-json --channel=SDK`) writes one
//! JSON object per line on our stdin and reads ours on stdout.
//!
//! # Brief overview
//!
//! - A reader task parses stdin line by line (`input.rs`). Answers to our own requests
//!   go straight to the [`ControlChannel`] (so they arrive even while the
//!   session is being assembled or a turn waits for one); user messages and the client's
//!   control requests go to the session loop, in order. A bad line is an error on stderr
//!   and a `system`/`input_error` message; the next line is read as if nothing happened.
//! - The first message may be `initialize`: its `mcpServers` join the configured ones,
//!   its `sdkMcpServers` become MCP servers reached through `mcp_message` requests
//!   ([`toolbelt_mcp::sdk`]), and the session is assembled only then.
//! - The loop runs one turn at a time: a user message arriving during a turn waits for
//!   it. Control requests are answered at once, also during a turn: `interrupt` cancels
//!   the turn (tools are cancelled, each call still gets its one result, and the turn
//!   ends with an `error_during_execution` result). When stdin closes, the waiting
//!   turns still run, then toolbelt exits 0.
//! - A call that needs approval is a `can_use_tool` request ([`ClientApprover`]); what
//!   an MCP server asks (elicitation, sampling) is an `elicitation` or `mcp_sampling`
//!   request ([`ClientServerAsker`]).
//! - `initialize.hooks` (Claude's shape or Qwen's) become callback hooks of the session's
//!   hooks engine, each run a `hook_callback` request ([`HookCallbackCarrier`]).
//! - Messages are written by [`Emitter`].

//!
//! The session is opened by `toolbelt-session` like every other front end's; this crate
//! adds only the protocol, so a Rust SDK host can use the same types ([`Inbound`],
//! [`parse_line`], [`control_response`]) and the same loop ([`run`]).

#![warn(missing_docs, unreachable_pub)]

mod approver;
mod control;
mod input;
mod mcp_prompts;
mod out;
mod plugin;
mod server_asks;
mod session_loop;
mod wire;

pub use approver::ClientApprover;
pub use control::{ControlChannel, ControlError, HookCallbackCarrier, SdkCarrier};
pub use input::{Inbound, InputError, MAX_LINE_BYTES, parse_line};
pub use out::on_closed_output;
pub use plugin::add_plugin;
pub use server_asks::ClientServerAsker;
pub use session_loop::{StreamError, StreamOptions, run};
pub use wire::{Emitter, InitInfo, OutputFormat, control_response, uuid, write_control};
