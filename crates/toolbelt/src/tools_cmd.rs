//! `toolbelt tools list`, `toolbelt tools lint` and `toolbelt tools call`.

use std::io::Write;

use toolbelt_core::{Display, ToolResult};

use crate::cli::{EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, GlobalArgs, ToolsCommand};
use crate::session::Session;

pub async fn run(global: &GlobalArgs, command: ToolsCommand) -> u8 {
    let Some(mut session) = Session::load_or_say(global) else {
        return EXIT_USAGE;
    };
    if let ToolsCommand::When { expr } = &command {
        return crate::when_cmd::run(&session, expr);
    }
    if let Err(e) = session.load_extensions(global).await {
        eprintln!("toolbelt: {}", e.0);
        return EXIT_USAGE;
    }
    session.warn_about_rules(&session.rules);
    let ran_nothing = matches!(
        command,
        ToolsCommand::List { .. } | ToolsCommand::Lint { .. }
    );
    let code = match command {
        ToolsCommand::List { json } => list(&session, json),
        ToolsCommand::Lint { json } => lint(&session, json),
        ToolsCommand::When { .. } => EXIT_USAGE,
        ToolsCommand::Call {
            name,
            args,
            yes,
            json,
        } => crate::tools_call::call(&session, &name, args.as_deref(), yes, json).await,
    };
    session.close().await;
    if ran_nothing {
        // No tool ran, so no tool has anything to end: the process exits without
        // freeing the registry (with hundreds of declared tools, a tenth of the run).
        std::mem::forget(std::mem::take(&mut session.registry));
    }
    code
}

fn lint(session: &Session, json: bool) -> u8 {
    use toolbelt_engine::{lint::Finding, lint::Severity, lint::lint_registry};
    // What did not load is an error too: a manifest entry skipped at load would
    // otherwise vanish from the count ("0 errors" with tools missing).
    let mut findings: Vec<Finding> = session
        .load_errors
        .iter()
        .map(|line| {
            let (file, message) = line.split_once(": ").unwrap_or(("manifest", line));
            Finding {
                tool: file.to_string(),
                severity: Severity::Error,
                rule: "not-loaded",
                message: message.to_string(),
            }
        })
        .collect();
    findings.extend(lint_registry(&session.registry));
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    let mut out = std::io::stdout().lock();
    if json {
        let text = serde_json::to_string_pretty(&findings).unwrap_or_else(|_| "[]".into());
        crate::pipes::check(writeln!(out, "{text}"));
    } else {
        for f in &findings {
            let level = match f.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            crate::pipes::check(writeln!(
                out,
                "{level}[{}] {}: {}",
                f.rule, f.tool, f.message
            ));
        }
        crate::pipes::check(writeln!(
            out,
            "{} tools checked: {errors} errors, {} warnings",
            session.registry.len(),
            findings.len() - errors
        ));
    }
    if errors > 0 { EXIT_TOOL_ERROR } else { EXIT_OK }
}

fn list(session: &Session, json: bool) -> u8 {
    let mut out = std::io::stdout().lock();
    if json {
        let decls = session.registry.function_declarations();
        let text = serde_json::to_string_pretty(&decls).unwrap_or_else(|_| "[]".into());
        crate::pipes::check(writeln!(out, "{text}"));
        return EXIT_OK;
    }
    let text = toolbelt_session::listing::tools_text(&session.registry, &session.env.settings);
    crate::pipes::check(write!(out, "{text}"));
    EXIT_OK
}

pub(crate) fn print_result(result: &ToolResult, json: bool) {
    if json {
        match serde_json::to_string_pretty(result) {
            Ok(text) => println!("{text}"),
            Err(e) => eprintln!("toolbelt: cannot print the result as JSON: {e}"),
        }
        return;
    }
    if let Some(error) = &result.error {
        eprintln!("Error [{}]: {}", error.kind, error.message);
        return;
    }
    let mut out = std::io::stdout().lock();
    crate::pipes::check(match &result.return_display {
        Display::Markdown { text } => writeln!(out, "{text}"),
        Display::FileDiff(diff) => write!(out, "{}", diff.diff),
        Display::TodoList { todos } => {
            for t in todos {
                crate::pipes::check(writeln!(out, "[{:?}] {} {}", t.status, t.id, t.content));
            }
            Ok(())
        }
        Display::Plan { plan, .. } => writeln!(out, "{plan}"),
        _ => writeln!(out, "{}", result.llm_text()),
    });
}
