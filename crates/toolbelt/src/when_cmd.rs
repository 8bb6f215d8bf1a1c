//! `toolbelt tools when EXPR [--context KEY=JSON ...]`: a when-clause evaluated against
//! the session's context keys, as a declared tool's `when` will be.
//!
//! Keys: `isLinux`, `isMac`, `isWindows`, `approvalMode`, `workspaceFolderCount`,
//! `gitRepository`, then every `--context` pair (which wins). A key nobody set is
//! `undefined`, as in VS Code.

use std::io::Write;

use serde_json::{Map, Value, json};
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
    let roots = session.env.roots.roots();
    // The mode the settings give; the agent's --approval-mode and --yolo are not flags
    // of `tools`, so `--context approvalMode=...` stands in for them.
    let approval = session
        .env
        .settings
        .tools
        .approval_mode
        .map(|m| m.0)
        .unwrap_or_default()
        .to_string();
    let git = roots
        .first()
        .is_some_and(|root| root.ancestors().any(|dir| dir.join(".git").exists()));
    let mut keys = Map::new();
    keys.insert("isLinux".into(), json!(cfg!(target_os = "linux")));
    keys.insert("isMac".into(), json!(cfg!(target_os = "macos")));
    keys.insert("isWindows".into(), json!(cfg!(windows)));
    keys.insert("approvalMode".into(), json!(approval));
    keys.insert("workspaceFolderCount".into(), json!(roots.len()));
    keys.insert("gitRepository".into(), json!(git));
    keys
}
