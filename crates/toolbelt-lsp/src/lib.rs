#![cfg_attr(test, allow(clippy::too_many_lines))]
//! The `lsp` tool: code intelligence (definitions, references, hover, symbols, call
//! hierarchy, diagnostics, code actions) from the language servers a project or the user
//! configures in `.lsp.json`.
//!
//! `config` reads the files and the settings, `transport` starts a server or connects
//! to it, `client` runs one server (framing, requests, readiness),
//! `servers` starts them on first use and shares them, `tool` is the declaration and its
//! argument checks, `operations` the requests and `format` the text of the answers;
//! `position` converts the tool's 1-based character columns to LSP's UTF-16 ones;
//! `after_edit` adds the errors an edit introduced to the edit tools' results;
//! `indexing` keeps a server still indexing from giving an empty first answer.

#![warn(missing_docs, unreachable_pub)]

mod after_edit;
mod client;
mod config;
mod error;
mod format;
mod framing;
mod indexing;
mod operations;
mod position;
mod servers;
mod tool;
mod transport;

pub use after_edit::{CheckedEdits, wait_after_edit};
pub use client::LspClient;
pub use config::{
    ConfigError, ConfigOwner, LspConfig, ServerConfig, Transport, command_files,
    parse as parse_lsp_json,
};
pub use error::LspError;
pub use servers::{ServerState, Servers};
pub use tool::LspTool;
