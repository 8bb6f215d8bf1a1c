//! `toolbelt tools call NAME ARGS`: one call through the same [`Scheduler::run`](toolbelt_engine::scheduler::Scheduler::run) as the
//! agent, `mcp serve` and stream-json, so lookup, `when` clauses, validation, the
//! permission rules (a declared tool answers to the rules of the built-in it runs too),
//! protected configuration, confirmation and the output policy are decided in one place.
//!
//! What is particular to the command line is only who is asked and how the outcome is
//! told: a person on the terminal answers the question (`--yes` answers it for them);
//! with no terminal and no `--yes`, nobody can be asked and a call that needs approval
//! is refused. The exit code says where the call stopped: 2 before it could be judged
//! (unknown tool, bad arguments), 3 refused (a rule, a `when` clause, the person, nobody
//! to ask), 1 the tool failed, 130 interrupted.

use std::io::{IsTerminal, Read, Write};
use std::sync::Arc;

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolbelt_core::{ConfirmationOutcome, ErrorKind};
use toolbelt_engine::{
    scheduler::Approval, scheduler::ApprovalRequest, scheduler::Approver, scheduler::CallState,
    scheduler::CompletedCall, scheduler::NobodyToAsk, scheduler::SchedulerEvent,
    scheduler::ToolCallRequest, scheduler::TurnInfo,
};

use crate::cli::{EXIT_INTERRUPTED, EXIT_OK, EXIT_REFUSED, EXIT_TOOL_ERROR, EXIT_USAGE};
use crate::session::Session;

/// The call's id in the scheduler's events; there is only one.
const CALL_ID: &str = "cli-call";

/// Runs `name` with the argument text `args` (`-` reads it from standard input) and
/// prints the result; returns the exit code.
pub(crate) async fn call(
    session: &Session,
    name: &str,
    args: Option<&str>,
    yes: bool,
    json: bool,
) -> u8 {
    let args_from_stdin = args == Some("-");
    let arguments = match args {
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
    let (events, mut watch) = mpsc::unbounded_channel();
    // The person runs one call by hand: the session's rules, mode and hooks, and their
    // own answer (or `--yes`) for what asks.
    let scheduler = session.one_call_scheduler(
        approver(yes, can_ask(args_from_stdin)),
        events,
        NobodyToAsk {
            why: "there is no terminal to ask on".into(),
            how: "Pass --yes to approve it, or allow it with a permission rule (`{tool}` in permissions.allow).".into(),
        },
    );
    let request = ToolCallRequest {
        call_id: CALL_ID.into(),
        name: name.to_string(),
        arguments,
    };
    let cancel = CancellationToken::new();
    let mut interrupts = listen_for_interrupts();
    let run = scheduler.run(
        &session.registry,
        vec![request],
        TurnInfo::default(),
        &cancel,
    );
    let mut run = std::pin::pin!(run);
    let mut interrupted = false;
    let mut started = false;
    // Live output (a command's, MCP progress) goes to stderr; stdout keeps only the
    // result. When both are the same terminal the result shows the output, so echoing
    // it live too would print it twice: the live copy is for a result that goes
    // elsewhere (a pipe, a file) while a person watches.
    let echo_output = !(std::io::stdout().is_terminal() && std::io::stderr().is_terminal());
    let completed = loop {
        tokio::select! {
            biased;
            Some(event) = watch.recv() => {
                started |= show(session, &event, echo_output);
            }
            mut done = &mut run => break done.pop(),
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
    // Events sent before the result (the last output) are shown before it.
    while let Ok(event) = watch.try_recv() {
        started |= show(session, &event, echo_output);
    }
    let Some(completed) = completed else {
        eprintln!("toolbelt: {name}: the scheduler returned no result");
        return EXIT_TOOL_ERROR;
    };
    outcome(name, &completed, started, interrupted, json)
}

/// Shows one scheduler event on stderr; true when it says the tool started running.
fn show(session: &Session, event: &SchedulerEvent, echo_output: bool) -> bool {
    match event {
        SchedulerEvent::Validated {
            tool, description, ..
        } => {
            let display = session
                .registry
                .get(tool)
                .map_or(tool.as_str(), |r| r.tool.display_name());
            eprintln!("{display}: {description}");
            false
        }
        SchedulerEvent::Output { chunk, .. } => {
            if echo_output {
                eprint!("{chunk}");
            }
            false
        }
        SchedulerEvent::Started { .. } => true,
        _ => false,
    }
}

/// Prints the finished call and returns the exit code for where it stopped.
fn outcome(name: &str, call: &CompletedCall, started: bool, interrupted: bool, json: bool) -> u8 {
    if interrupted {
        crate::tools_cmd::print_result(&call.result, json);
        return EXIT_INTERRUPTED;
    }
    match (&call.result.error, started) {
        (None, _) => {
            crate::tools_cmd::print_result(&call.result, json);
            EXIT_OK
        }
        // It ran and failed: the tool's error is the result.
        (Some(_), true) => {
            crate::tools_cmd::print_result(&call.result, json);
            EXIT_TOOL_ERROR
        }
        // Refused before running: a rule, a `when` clause, plan mode, the person, or
        // nobody to ask.
        (Some(error), false)
            if error.kind == ErrorKind::ExecutionDenied || call.state == CallState::Cancelled =>
        {
            let message = toolbelt_core::for_person(&error.message);
            eprintln!("toolbelt: refused: {name}: {message}");
            EXIT_REFUSED
        }
        // Never judged: an unknown tool or arguments that do not fit its schema.
        (Some(error), false) => {
            eprintln!("toolbelt: {name}: {}", error.message);
            EXIT_USAGE
        }
    }
}

/// Who answers a call that asks: `--yes` for the person, the person on the terminal,
/// or nobody.
fn approver(yes: bool, can_ask: bool) -> Option<Arc<dyn Approver>> {
    if yes {
        Some(Arc::new(TerminalApprover { yes: true }))
    } else if can_ask {
        Some(Arc::new(TerminalApprover { yes: false }))
    } else {
        None
    }
}

/// Asks on the terminal (stderr for the question, stdin for the answer), or answers
/// "yes" for a person who passed `--yes`.
struct TerminalApprover {
    yes: bool,
}

impl Approver for TerminalApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> futures::future::BoxFuture<'a, Approval> {
        let yes = self.yes;
        let summary = request.details.summary();
        Box::pin(async move {
            if yes {
                return ConfirmationOutcome::ProceedOnce.into();
            }
            // Reading a line blocks; the call has nothing else to do meanwhile.
            // "Always" is offered as in the agent's dialog; one call has no later calls
            // for it to cover, so it means yes.
            let approved = tokio::task::spawn_blocking(move || {
                ask(&summary, "Allow this call? [y]es / [n]o / [a]lways: ")
            })
            .await
            .unwrap_or(false);
            if approved {
                ConfirmationOutcome::ProceedOnce.into()
            } else {
                Approval::deny("")
            }
        })
    }
}

/// Whether a person can be asked: both ends are a terminal, and standard input was not
/// already used for the arguments.
pub fn can_ask(args_from_stdin: bool) -> bool {
    !args_from_stdin && std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Asks `summary` on the terminal with `choices`; yes (or always) is true.
pub fn ask(summary: &str, choices: &str) -> bool {
    let mut err = std::io::stderr().lock();
    crate::pipes::check(writeln!(err, "{summary}"));
    crate::pipes::check(write!(err, "{choices}"));
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

/// Takes over SIGINT before anything runs: a Ctrl-C from here on cancels the call
/// (exit 130) instead of killing the process with a half-done tool.
fn listen_for_interrupts() -> Option<Signal> {
    match signal(SignalKind::interrupt()) {
        Ok(stream) => {
            crate::ending::take_interrupts();
            Some(stream)
        }
        Err(e) => {
            tracing::warn!("cannot listen for Ctrl-C: {e}");
            None
        }
    }
}

/// The next SIGINT; never, when the listener could not be installed.
async fn next_interrupt(stream: &mut Option<Signal>) -> Option<()> {
    match stream {
        Some(stream) => stream.recv().await,
        None => std::future::pending().await,
    }
}
