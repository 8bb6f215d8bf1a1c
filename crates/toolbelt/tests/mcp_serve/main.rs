#![allow(clippy::too_many_lines)]
//! `toolbelt mcp serve` driven by real clients: rmcp's client over stdio and Streamable
//! HTTP, and raw JSON-RPC lines and HTTP requests for what a well-behaved client never
//! sends. The Python SDK and the Inspector CLI are in `mcp_serve_interop.rs`.

// A test target: a failed unwrap is a failed test, with its location.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod confirm;
mod ending;
mod follow;
mod hooks;
mod http;
mod latency;
mod stdio;
mod support;
mod wire;
