//! `toolbelt tools when EXPR [--context KEY=JSON ...]`: a when-clause evaluated against
//! the session's context keys, as a declared tool's `when` will be.
//!
//! Keys: those of [`toolbelt_session::Session::when_context`]. A key nobody set is `undefined`, as in
//! VS Code.

use std::io::Write;

use crate::cli::{EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE};
use crate::session::Session;

/// The settings' approval mode; the agent's --approval-mode and --yolo are not flags
/// of `tools`, so `--context approvalMode=...` stands in for them.
pub fn run(session: &Session, expr: &str) -> u8 {
    match session.when_verdict(expr) {
        Ok(verdict) => {
            crate::pipes::check(writeln!(std::io::stdout().lock(), "{verdict}"));
            if verdict { EXIT_OK } else { EXIT_TOOL_ERROR }
        }
        Err(e) => {
            eprintln!("toolbelt: when: {e}");
            EXIT_USAGE
        }
    }
}
