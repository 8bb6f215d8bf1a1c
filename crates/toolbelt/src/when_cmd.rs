//! `toolbelt tools when EXPR [--context KEY=JSON ...]`: a when-clause evaluated against
//! the session's context keys, as a declared tool's `when` will be.
//!
//! Keys: those of [`toolbelt_session::Session::when_context`]. A key nobody set is `undefined`, as in
//! VS Code.

use std::io::Write;

use toolbelt_core::when;

use crate::cli::{EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE};
use crate::session::Session;

pub fn run(session: &Session, expr: &str) -> u8 {
    let clause = match when::parse(expr) {
        Ok(clause) => clause,
        Err(e) => {
            eprintln!("toolbelt: when: {e}");
            eprintln!("  {expr}");
            eprintln!(
                "  {}^",
                " ".repeat(expr[..e.offset.min(expr.len())].chars().count())
            );
            return EXIT_USAGE;
        }
    };
    // The mode the settings give; the agent's --approval-mode and --yolo are not flags
    // of `tools`, so `--context approvalMode=...` stands in for them.
    let context = session.when_context(session.settings_mode());
    let verdict = clause.evaluate(&context);
    crate::pipes::check(writeln!(std::io::stdout().lock(), "{verdict}"));
    if verdict { EXIT_OK } else { EXIT_TOOL_ERROR }
}
