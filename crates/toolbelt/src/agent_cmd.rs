//! `toolbelt [PROMPT]`: the headless agent, a stand-in for `qwen "prompt"`.
//!
//! The session and its agent are `toolbelt_session`'s (`Session::agent`); here are the
//! prompt (flag, words, standard input) and the output. Nobody can be asked here, so the
//! scheduler gets no approver: calls that would ask are refused with a message that
//! tells the model why.
//!
//! Every run that got a model's answer is saved as a session (`toolbelt_session::saved`); `--continue` and
//! `--resume ID` start from a saved one, `--resume` alone lists them (headless has no
//! picker).
//!
//! Ctrl-C once cancels the running tools and the model request (the run then ends with
//! what it has, exit 130); twice exits at once.

use std::io::{IsTerminal, Read};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use toolbelt_agent::{AgentEvent, EventSink, StopReason, at_paths};
use toolbelt_session::{AgentError, Prepared, Setup, saved};
use toolbelt_stream_json::{Emitter, InitInfo};

use crate::agent_output;
use crate::cli::{
    AgentArgs, EXIT_INTERRUPTED, EXIT_OK, EXIT_TOOL_ERROR, EXIT_TURN_LIMIT, EXIT_USAGE, GlobalArgs,
    InputFormat, OutputFormat,
};
use crate::session::{Session, agent_options, agent_session};

pub async fn run(global: &GlobalArgs, args: AgentArgs) -> u8 {
    let started = Instant::now();
    if args.resume.as_deref() == Some("") {
        return list_sessions(global);
    }
    if args.acp {
        return acp(global, &args).await;
    }
    if crate::interactive::wanted(&args) {
        return crate::interactive::run(global, args).await;
    }
    if args.input_format == InputFormat::StreamJson {
        return stream_json(global, args).await;
    }
    let emitter: Arc<OnceLock<Arc<Emitter>>> = Arc::new(OnceLock::new());
    let format = args.output_format;
    let sink: EventSink = match format {
        OutputFormat::Text => {
            Arc::new(move |event: AgentEvent| agent_output::print_event(format, &event))
        }
        _ => {
            let emitter = emitter.clone();
            Arc::new(move |event: AgentEvent| {
                if let Some(e) = emitter.get() {
                    e.event(&event);
                }
            })
        }
    };
    let read_args = args.clone();
    let setup = Setup {
        read_prompt: Some(Box::new(move || {
            read_prompt(&read_args).map_err(Into::into)
        })),
        sink,
        approver: None,
    };
    let prepared = match Session::load_with(agent_session(global, &args)) {
        Ok(session) => session.0.agent(agent_options(&args), setup).await,
        Err(e) => Err(AgentError::Setup(e)),
    };
    match prepared {
        Ok(mut prepared) => {
            // `/<server>:<prompt> name=value`: the MCP prompt's messages are the prompt.
            if let Some(expanded) = prepared.mcp.run_prompt_command(&prepared.prompt).await {
                match expanded {
                    Ok(text) => prepared.prompt = text,
                    Err(why) => {
                        eprintln!("toolbelt: {why}");
                        let wait = std::time::Duration::from_secs(3);
                        let _ = tokio::time::timeout(wait, prepared.mcp.close()).await;
                        return EXIT_USAGE;
                    }
                }
            }
            if format != OutputFormat::Text {
                let _ = emitter.set(Arc::new(Emitter::new(
                    prepared.session_id.clone(),
                    &prepared.model_name,
                    stream_format(format),
                    args.include_partial_messages,
                )));
            }
            execute(prepared, &args, started, emitter.get().cloned()).await
        }
        Err(e) => {
            eprintln!("toolbelt: {e}");
            crate::cli::setup_failure(&e)
        }
    }
}

/// `--acp`: the Agent Client Protocol for editors (`toolbelt_acp`).
async fn acp(global: &GlobalArgs, args: &AgentArgs) -> u8 {
    // The editor sends the prompts; one given here would be silently dropped.
    if args.prompt.is_some() || !args.words.is_empty() || args.prompt_interactive.is_some() {
        eprintln!("toolbelt: --acp takes its prompts from the editor; give no prompt");
        return EXIT_USAGE;
    }
    if args.input_format == InputFormat::StreamJson {
        eprintln!("toolbelt: --acp and --input-format stream-json are two protocols; choose one");
        return EXIT_USAGE;
    }
    let options = toolbelt_acp::AcpOptions {
        session: agent_session(global, args),
        agent: agent_options(args),
    };
    toolbelt_acp::run(options).await;
    EXIT_OK
}

/// `--input-format stream-json`: the SDK protocol (`toolbelt_stream_json`).
async fn stream_json(global: &GlobalArgs, args: AgentArgs) -> u8 {
    if args.output_format == OutputFormat::Text {
        eprintln!(
            "toolbelt: --input-format stream-json needs --output-format stream-json (or json)"
        );
        return EXIT_USAGE;
    }
    let dir = match std::env::current_dir() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("toolbelt: cannot read the current directory: {e}");
            return EXIT_USAGE;
        }
    };
    let options = toolbelt_stream_json::StreamOptions {
        dir,
        session: agent_session(global, &args),
        agent: agent_options(&args),
        format: stream_format(args.output_format),
        partial_messages: args.include_partial_messages,
    };
    match toolbelt_stream_json::run(options).await {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("toolbelt: {e}");
            crate::cli::stream_failure(&e)
        }
    }
}

fn stream_format(format: OutputFormat) -> toolbelt_stream_json::OutputFormat {
    match format {
        OutputFormat::Text => toolbelt_stream_json::OutputFormat::Text,
        OutputFormat::Json => toolbelt_stream_json::OutputFormat::Json,
        OutputFormat::StreamJson => toolbelt_stream_json::OutputFormat::StreamJson,
    }
}

/// `--resume` without an ID: the project's sessions, newest first.
fn list_sessions(global: &GlobalArgs) -> u8 {
    let session = match Session::load(global) {
        Ok(session) => session,
        Err(e) => {
            eprintln!("toolbelt: {e}");
            return EXIT_USAGE;
        }
    };
    match saved::list(&saved::store(&session.project())) {
        Ok(text) => {
            print!("{text}");
            EXIT_OK
        }
        Err(e) => {
            eprintln!("toolbelt: {e}");
            crate::cli::list_failure(&e)
        }
    }
}

async fn execute(
    p: Prepared,
    args: &AgentArgs,
    started: Instant,
    emitter: Option<Arc<Emitter>>,
) -> u8 {
    if let Some(emitter) = &emitter {
        emitter.init(&InitInfo::of(&p));
    }
    let cancel = CancellationToken::new();
    let interrupts = watch_interrupts(cancel.clone());
    let mut inlined = at_paths::inline(
        &p.prompt,
        &p.agent.registry(),
        p.agent.scheduler(),
        &p.cwd,
        &p.mcp.aliases(),
    )
    .await;
    for warning in std::mem::take(&mut inlined.warnings) {
        eprintln!("toolbelt: {warning}");
    }
    // `#references` count only in what the person wrote, not in inlined files.
    let parts = inlined.parts(p.agent.takes_images());
    let outcome = p.agent.run_with_references(parts, &p.prompt, &cancel).await;
    p.background.stop_all().await;
    // Issue 33: monitors still running when the run stopped early are ended, and named.
    for (id, command) in p.monitors.stop_all().await {
        eprintln!("toolbelt: monitor {id} (`{command}`) was still running and has been ended");
    }
    p.agent.end_session("other").await;
    interrupts.abort();
    crate::ending::give_back_interrupts();
    match &emitter {
        Some(emitter) => {
            emitter.result(&outcome, started.elapsed());
            emitter.finish();
        }
        None => agent_output::print_result(args.output_format, &outcome),
    }
    let _ = tokio::time::timeout(std::time::Duration::from_secs(3), p.mcp.close()).await;
    match outcome.stop {
        StopReason::Answered | StopReason::PlanProposed => EXIT_OK,
        StopReason::MaxTurns(_) => EXIT_TURN_LIMIT,
        StopReason::Cancelled => EXIT_INTERRUPTED,
        _ => EXIT_TOOL_ERROR,
    }
}

/// `-p` and the positional words, then standard input when it is piped.
fn read_prompt(args: &AgentArgs) -> Result<String, String> {
    let mut parts: Vec<String> = Vec::new();
    if let Some(p) = &args.prompt {
        parts.push(p.clone());
    }
    if !args.words.is_empty() {
        parts.push(args.words.join(" "));
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let mut piped = String::new();
        stdin
            .lock()
            .read_to_string(&mut piped)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        if !piped.trim().is_empty() {
            parts.push(piped.trim_end().to_string());
        }
    }
    let prompt = parts.join("\n\n");
    if prompt.trim().is_empty() {
        return Err(
            "no prompt: give one as arguments, with -p, or on standard input; `toolbelt --help` shows more"
                .to_string(),
        );
    }
    Ok(prompt)
}

/// Ctrl-C once cancels `cancel`; twice exits. The handler is registered before this
/// returns, so an interrupt during the first request is never lost to the default action.
fn watch_interrupts(cancel: CancellationToken) -> tokio::task::JoinHandle<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupts = match signal(SignalKind::interrupt()) {
        Ok(s) => {
            crate::ending::take_interrupts();
            s
        }
        Err(e) => {
            tracing::warn!("cannot watch for Ctrl-C: {e}");
            return tokio::spawn(async {});
        }
    };
    tokio::spawn(async move {
        if interrupts.recv().await.is_some() {
            eprintln!("toolbelt: interrupted; cancelling (Ctrl-C again to quit at once)");
            cancel.cancel();
        }
        if interrupts.recv().await.is_some() {
            eprintln!("toolbelt: interrupted again; ending every process it started");
            tokio::task::block_in_place(|| crate::ending::end_now(EXIT_INTERRUPTED));
        }
    })
}
