//! `toolbelt tools list`, `toolbelt tools lint` and `toolbelt tools call`.

use std::io::{IsTerminal, Read, Write};

use serde_json::Value;
use tokio::signal::unix::{Signal, SignalKind, signal};
use toolbelt_core::validate::parse_arguments;
use toolbelt_core::{
    ConfirmationDetails, Consent, Decision, Display, ErrorKind, ExecContext, ToolResult,
};

use crate::cli::{
    EXIT_INTERRUPTED, EXIT_OK, EXIT_REFUSED, EXIT_TOOL_ERROR, EXIT_USAGE, GlobalArgs, ToolsCommand,
};
use crate::session::Session;

pub async fn run(global: &GlobalArgs, command: ToolsCommand) -> u8 {
    let mut session = match Session::load(global) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("toolbelt: {}", e.0);
            return EXIT_USAGE;
        }
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
        } => call(&session, &name, args.as_deref(), yes, json).await,
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
    use toolbelt_core::lint::{Finding, Severity, lint_registry};
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
    let rows: Vec<[String; 5]> = session
        .registry
        .all()
        .map(|r| {
            let first_line = r
                .tool
                .description()
                .lines()
                .next()
                .unwrap_or("")
                .to_string();
            let first_sentence = first_line
                .split(". ")
                .next()
                .unwrap_or("")
                .trim_end_matches('.')
                .to_string();
            let confirm = if r.tool.needs_confirmation() {
                "yes"
            } else {
                "no"
            };
            let reference = r
                .tool
                .reference_name()
                .map(|n| format!("#{n}"))
                .unwrap_or_else(|| "-".into());
            let description = match r.tool.when_clause() {
                Some(clause) if session.registry.is_disabled(&r.name) => {
                    format!("[off: when {}] {first_sentence}", clause.serialize())
                }
                _ => first_sentence,
            };
            [
                r.name.clone(),
                r.tool.kind().as_str().to_string(),
                confirm.to_string(),
                reference,
                description,
            ]
        })
        .collect();
    let header = [
        "NAME".to_string(),
        "KIND".into(),
        "CONFIRM".into(),
        "REFERENCE".into(),
        "DESCRIPTION".into(),
    ];
    let widths: Vec<usize> = (0..4)
        .map(|i| {
            rows.iter()
                .chain([&header])
                .map(|r| r[i].len())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in [&header].into_iter().chain(rows.iter()) {
        crate::pipes::check(writeln!(
            out,
            "{:w0$}  {:w1$}  {:w2$}  {:w3$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            row[4],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        ));
    }
    let sets = session.registry.tool_sets();
    if !sets.is_empty() {
        crate::pipes::check(writeln!(out, "\nTool sets:"));
        for set in sets {
            crate::pipes::check(writeln!(
                out,
                "  #{}  {} ({})",
                set.name,
                set.description,
                set.tools.join(", ")
            ));
        }
    }
    if session.registry.get("web_search").is_none()
        && let Some(why) = toolbelt_tools::web_search_unavailable_reason(&session.env.settings)
    {
        crate::pipes::check(writeln!(
            out,
            "\nnote: web_search is not registered: {why} (webSearch.provider: tavily, searxng or brave)."
        ));
    }
    crate::pipes::check(writeln!(
        out,
        "\nnote: the agent adds agent, task_stop and send_message (sub-agents need its model; `toolbelt agents list`), skill when there are skills (`toolbelt skills list`) and tool_search when tools are deferred."
    ));
    EXIT_OK
}

async fn call(session: &Session, name: &str, args: Option<&str>, yes: bool, json: bool) -> u8 {
    let args_from_stdin = args == Some("-");
    let raw = match args {
        Some("-") => {
            let mut text = String::new();
            if let Err(e) = std::io::stdin().read_to_string(&mut text) {
                eprintln!("toolbelt: cannot read the arguments from standard input: {e}");
                return EXIT_USAGE;
            }
            text
        }
        Some(text) => text.to_string(),
        None => String::new(),
    };
    let args: Value = match parse_arguments(&raw) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("toolbelt: {name}: {}", e.message);
            return EXIT_USAGE;
        }
    };
    let (registration, invocation) = match session.registry.build(name, args) {
        Ok(built) => built,
        // A tool the settings removed (`deny: ["read_file"]`), or a path a rule denies:
        // refused like any denial, not a usage error.
        Err(e) if e.kind == ErrorKind::ExecutionDenied => {
            eprintln!("toolbelt: refused: {name}: {}", e.message);
            return EXIT_REFUSED;
        }
        Err(e) => {
            eprintln!("toolbelt: {name}: {}", e.message);
            return EXIT_USAGE;
        }
    };
    // Take over SIGINT before anything is shown: a Ctrl-C from here on cancels the
    // call (exit 130) instead of killing the process with a half-done tool.
    let mut interrupts = match signal(SignalKind::interrupt()) {
        Ok(stream) => {
            crate::ending::take_interrupts();
            Some(stream)
        }
        Err(e) => {
            tracing::warn!("cannot listen for Ctrl-C: {e}");
            None
        }
    };
    eprintln!(
        "{}: {}",
        registration.tool.display_name(),
        invocation.describe()
    );

    // The permission rules of the settings come first: a deny rule refuses the call, an
    // allow rule runs it without a question, an ask rule asks even when the tool would
    // not. Without a matching rule the tool's own confirmation decides.
    let rules = &session.rules;
    let verdict = rules.verdict(&registration.name, &invocation.permission_subject());
    let rule = verdict.rule.as_deref().unwrap_or("");
    let mut consent = Consent::Unasked;
    let details = match verdict.decision {
        Decision::Deny => {
            let note = rules
                .unreadable_note(&invocation.permission_subject())
                .map(|n| format!(" {n}"))
                .unwrap_or_default();
            eprintln!(
                "toolbelt: refused: this call is denied by the permission rule `{rule}` in the settings.{note}"
            );
            return EXIT_REFUSED;
        }
        Decision::Allow => {
            // An allow rule approves what asks; a call that would not ask stays unasked.
            if invocation.confirmation().await.is_some() {
                consent = Consent::Approved;
            }
            None
        }
        Decision::Ask => Some(invocation.confirmation().await.unwrap_or_else(|| {
            ConfirmationDetails::generic(registration.tool.display_name(), &invocation.describe())
        })),
        _ => invocation.confirmation().await,
    };
    if let Some(details) = details {
        let approved = if yes {
            true
        } else if can_ask(args_from_stdin) {
            ask(&details)
        } else {
            let why = if verdict.decision == Decision::Ask {
                format!("the permission rule `{rule}` asks for it")
            } else {
                format!("this call needs confirmation ({})", details.title())
            };
            eprintln!(
                "toolbelt: refused: {why} and there is no terminal to ask on; pass --yes to approve it."
            );
            return EXIT_REFUSED;
        };
        if !approved {
            eprintln!("toolbelt: refused by the user.");
            return EXIT_REFUSED;
        }
        consent = Consent::Approved;
    }

    let mut ctx = ExecContext::new(session.env.clone());
    ctx.consent = consent;
    // Live output (a command's, MCP progress) goes to stderr; stdout keeps only the
    // result. When both are the same terminal the result shows the output, so echoing
    // it live too would print it twice: the live copy is for a result that goes
    // elsewhere (a pipe, a file) while a person watches.
    let same_terminal = std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
    if registration.tool.can_update_output() && !same_terminal {
        ctx.output = toolbelt_core::OutputSink::new(|chunk| eprint!("{chunk}"));
    }
    let cancel = ctx.cancel.clone();
    let mut execution = std::pin::pin!(invocation.execute(ctx));
    let mut interrupted = false;
    let result: ToolResult = loop {
        tokio::select! {
            result = &mut execution => break result,
            Some(()) = next_interrupt(&mut interrupts) => {
                if interrupted {
                    eprintln!("toolbelt: interrupted again; ending every process it started");
                    tokio::task::block_in_place(|| crate::ending::end_now(EXIT_INTERRUPTED));
                }
                eprintln!("toolbelt: interrupted; cancelling the running tool (Ctrl-C again to quit at once)");
                interrupted = true;
                cancel.cancel();
            }
        }
    };
    let result = session
        .env
        .output
        .limit_result(result, registration.name.as_str());
    print_result(&result, json);
    if interrupted {
        EXIT_INTERRUPTED
    } else if result.is_error() {
        EXIT_TOOL_ERROR
    } else {
        EXIT_OK
    }
}

/// The next SIGINT; never, when the listener could not be installed.
async fn next_interrupt(stream: &mut Option<Signal>) -> Option<()> {
    match stream {
        Some(stream) => stream.recv().await,
        None => std::future::pending().await,
    }
}

/// Whether a person can be asked: both ends are a terminal, and standard input was not
/// already used for the arguments.
fn can_ask(args_from_stdin: bool) -> bool {
    !args_from_stdin && std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

fn ask(details: &ConfirmationDetails) -> bool {
    let mut err = std::io::stderr().lock();
    crate::pipes::check(writeln!(err, "{}", details.summary()));
    crate::pipes::check(write!(err, "Allow this call? [y]es / [n]o / [a]lways: "));
    crate::pipes::check(err.flush());
    let mut answer = String::new();
    if std::io::stdin().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes" | "a" | "always"
    )
}

fn print_result(result: &ToolResult, json: bool) {
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
