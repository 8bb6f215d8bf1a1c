//! `toolbelt tools when EXPR [--context KEY=JSON ...]`: a when-clause evaluated against
//! the session's context keys, as a declared tool's `when` will be.
//!
//! Keys: those of [`when::session_context`] (platform, `approvalMode`,
//! `workspaceFolderCount`, `gitRepository`, `config.*`, opted-in `env.*`, settings
//! `context.keys`), then every `--context` pair (which wins). A key nobody set is
//! `undefined`, as in VS Code.

use std::io::Write;

use serde_json::{Map, Value};
use toolbelt_core::when;

use crate::cli::{EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE};
use crate::session::Session;

pub fn run(session: &Session, expr: &str, pairs: &[String]) -> u8 {
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
    let mut context = session_keys(session);
    for pair in pairs {
        let Some((key, raw)) = pair.split_once('=') else {
            eprintln!(
                "toolbelt: --context {pair}: write KEY=JSON, such as debugState='\"running\"' or count=3"
            );
            return EXIT_USAGE;
        };
        let value = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
        context.insert(key.trim().to_string(), value);
    }
    let verdict = clause.evaluate(&context);
    crate::pipes::check(writeln!(std::io::stdout().lock(), "{verdict}"));
    if verdict { EXIT_OK } else { EXIT_TOOL_ERROR }
}

fn session_keys(session: &Session) -> Map<String, Value> {
    // The mode the settings give; the agent's --approval-mode and --yolo are not flags
    // of `tools`, so `--context approvalMode=...` stands in for them.
    let mode = session
        .env
        .settings
        .tools
        .approval_mode
        .map(|m| m.0)
        .unwrap_or_default();
    when::session_context(&session.env.settings, session.env.roots.roots(), mode)
}
