//! `toolbelt` on a terminal: the interactive agent, a person in the loop.
//!
//! # Brief overview
//!
//! The agent is assembled exactly as the headless one (`Session::agent`: the same
//! flags, settings, model client, tools and saved sessions), with two things plugged in:
//! a [`dialog::UiApprover`] as the scheduler's [`Approver`](toolbelt_engine::scheduler::Approver)
//! and an event sink. Both only send [`UiMessage`]s to one channel; this module's loop is
//! the only owner of the terminal and of the UI state.
//!
//! The loop waits (`tokio::select!`) on three things: terminal events (keys, paste,
//! resize) from crossterm's event stream, UI messages, and, only while a request runs, a
//! one-second tick that advances the elapsed times. Idle, nothing wakes it: no polling.
//! After each wake-up it drains every message already queued, then draws once, so a
//! fast stream costs one frame per batch, not per token.
//!
//! The terminal is never taken over: the UI is a ratatui inline viewport at the bottom
//! of the normal screen, and everything finished (the prompt, answers, tool calls with
//! their diffs) is pushed above it with `insert_before`, into the terminal's own
//! scroll-back, where it stays after the program ends. ratatui draws only the cells that
//! changed between frames, so nothing flickers.
//!
//! Architecture Invariant: the UI lives in the binary crate only; the core and the agent
//! know nothing of terminals.

use std::collections::VecDeque;
use std::io::{IsTerminal, Stdout};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use futures::StreamExt;
use ratatui::backend::CrosstermBackend;
use ratatui::style::Color;
use ratatui::text::Line;
use ratatui::widgets::Widget;
use ratatui::{Terminal, TerminalOptions, Viewport};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use toolbelt_agent::{Agent, AgentEvent, EventSink, RunOutcome, StopReason, at_paths};
use toolbelt_config::ApprovalMode;
use toolbelt_engine::{
    scheduler::ApprovalRequest, scheduler::CallState, scheduler::SchedulerEvent,
};
use toolbelt_model::StreamDelta;

use toolbelt_tools::workspace_rules;

use crate::cli::{AgentArgs, EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, GlobalArgs};
use crate::session::{Session, agent_options, agent_session};
use toolbelt_session::kit::completion::reference_candidates;
use toolbelt_session::kit::input_history::InputHistory;
use toolbelt_session::kit::loop_cmd;
use toolbelt_session::kit::slash::{self, SlashCommand};
use toolbelt_session::kit::stats::SessionStats;
use toolbelt_session::{AgentError, Prepared, Setup, SystemPrompt};
use toolbelt_tools::completion::PathIndex;

pub mod dialog;
pub mod editor;
pub mod markdown;
pub mod questions;
pub mod view;

use dialog::{Answer, Dialog, DialogKey, UiApprover};
use editor::{Edit, Editor};
use questions::{QuestionsDialog, QuestionsKey, UiAsker};
use view::LiveCall;

/// Two Ctrl-C within this time quit.
const DOUBLE_PRESS: Duration = Duration::from_secs(2);
/// The status line's notice while a cancelled request winds down.
const CANCELLING: &str = "cancelling…";
/// Most rows the live viewport takes.
const VIEWPORT_MAX: u16 = 24;

/// What reaches the UI loop from the agent's side.
// Each message is moved once through the channel; boxing the event would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum UiMessage {
    Agent(AgentEvent),
    Approve(Box<ApprovalRequest>, oneshot::Sender<Answer>),
    /// `ask_user_question`: the model's questions, and where the answers go.
    Ask(
        Vec<toolbelt_core::Question>,
        oneshot::Sender<questions::Answers>,
    ),
    /// The workspace's file list for `@path` completion, built off the UI thread.
    Paths(PathIndex),
    /// Completions of a prompt command's argument (the text before the cursor they
    /// were asked for), from its MCP server.
    PromptCompletions(String, Vec<String>),
    /// `/compress` finished: the new history, or why not.
    Compressed(Result<toolbelt_agent::compress::Compressed, String>),
    /// A warning to show (an `@path` that could not be read).
    Notice(String),
    /// `/memory add` saved a fact (the tool's message): the context files are read again.
    MemoryAdded(String),
    /// The request finished.
    Done(RunOutcome),
    /// Quit, after the worktree question was answered (what became of it).
    Quit(String),
}

/// Interactive when asked (`-i`), or when there is no prompt and both ends are a
/// terminal.
pub fn wanted(args: &AgentArgs) -> bool {
    if args.prompt_interactive.is_some() {
        return true;
    }
    args.prompt.is_none()
        && args.words.is_empty()
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
}

pub async fn run(global: &GlobalArgs, args: AgentArgs) -> u8 {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        eprintln!("toolbelt: -i needs a terminal; give the prompt as arguments to run headless");
        return EXIT_USAGE;
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let sink_tx = tx.clone();
    let sink: EventSink = Arc::new(move |event| {
        let _ = sink_tx.send(UiMessage::Agent(event));
    });
    let first = args.prompt_interactive.clone().unwrap_or_default();
    let setup = Setup {
        read_prompt: Some(Box::new(move || Ok(first))),
        sink,
        approver: Some(Arc::new(UiApprover { to_ui: tx.clone() })),
    };
    let prepared = match Session::load_with(agent_session(global, &args)) {
        Ok(session) => session.0.agent(agent_options(&args), setup).await,
        Err(e) => Err(AgentError::Setup(e)),
    };
    let prepared = match prepared {
        Ok(p) => p,
        Err(e) => {
            eprintln!("toolbelt: {e}");
            return crate::cli::setup_failure(&e);
        }
    };
    let mut terminal = match start_terminal() {
        Ok(t) => t,
        Err(e) => {
            stop_terminal();
            eprintln!("toolbelt: cannot use the terminal: {e}");
            return EXIT_TOOL_ERROR;
        }
    };
    let session_id = prepared.saved.then(|| prepared.session_id.clone());
    let mcp = prepared.mcp.clone();
    let mut app = App::new(prepared, tx);
    let result = app.run(&mut terminal, rx).await;
    // A request still running is cancelled and awaited (bounded), so its processes end
    // and every call's result is saved.
    if let Some(running) = app.running.take() {
        running.cancel.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(5), running.task).await;
    }
    if let Some(notice) = app.idle_notice.take() {
        let _ = tokio::time::timeout(Duration::from_secs(5), notice).await;
    }
    app.agent.end_session("prompt_input_exit").await;
    let _ = app.flush(&mut terminal);
    // The live viewport (input box, status line) is erased from its first row down and
    // the cursor left there, for the shell's prompt. Not `Terminal::clear`: it asks the
    // terminal where the cursor is (`ESC [6n`), and a reply that arrives after raw mode
    // is off is echoed and read by the person's shell as typed input.
    let top = terminal.get_frame().area();
    drop(terminal);
    let _ = crossterm::execute!(
        std::io::stdout(),
        crossterm::cursor::MoveTo(0, top.y),
        crossterm::terminal::Clear(crossterm::terminal::ClearType::FromCursorDown)
    );
    stop_terminal();
    crate::ending::first_on_ending(None);
    let _ = tokio::time::timeout(Duration::from_secs(3), mcp.close()).await;
    if let Err(e) = result {
        eprintln!("toolbelt: the terminal failed: {e}");
        return EXIT_TOOL_ERROR;
    }
    if let Some(id) = session_id {
        println!("Session saved: resume it with `toolbelt --resume {id}` (or --continue).");
    }
    EXIT_OK
}

type Term = Terminal<CrosstermBackend<Stdout>>;

fn start_terminal() -> std::io::Result<Term> {
    // A signal from outside (`kill -INT`, a closed terminal's HUP) ends the run through
    // `ending`; the terminal must be put back first.
    crate::ending::first_on_ending(Some(stop_terminal));
    crossterm::terminal::enable_raw_mode()?;
    crossterm::execute!(std::io::stdout(), crossterm::event::EnableBracketedPaste)?;
    // A panic must not leave the terminal raw.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        stop_terminal();
        previous(info);
    }));
    let rows = crossterm::terminal::size().map(|(_, r)| r).unwrap_or(24);
    let height = rows.saturating_sub(1).clamp(6, VIEWPORT_MAX);
    Terminal::with_options(
        CrosstermBackend::new(std::io::stdout()),
        TerminalOptions {
            viewport: Viewport::Inline(height),
        },
    )
}

fn stop_terminal() {
    let _ = crossterm::execute!(
        std::io::stdout(),
        crossterm::event::DisableBracketedPaste,
        crossterm::cursor::Show
    );
    let _ = crossterm::terminal::disable_raw_mode();
}

struct Running {
    cancel: CancellationToken,
    since: Instant,
    task: tokio::task::JoinHandle<()>,
}

struct App {
    agent: Arc<Agent>,
    /// What the agent's system prompt is made of: made again before each prompt (the
    /// approval mode may have changed) and when the context files are reloaded.
    system_prompt: SystemPrompt,
    questions: Option<QuestionsDialog>,
    /// `/compress` is asking the model (its text is not an answer to show).
    compressing: Option<CancellationToken>,
    mcp: Arc<toolbelt_mcp::McpServers>,
    history: InputHistory,
    stats: SessionStats,
    paths: Option<PathIndex>,
    model_name: String,
    cwd: PathBuf,
    to_ui: mpsc::UnboundedSender<UiMessage>,
    editor: Editor,
    calls: Vec<LiveCall>,
    dialogs: VecDeque<Dialog>,
    running: Option<Running>,
    /// Lines waiting to go to the scroll-back.
    pending: Vec<Line<'static>>,
    notice: Option<String>,
    ctrl_c: Option<Instant>,
    tokens: u64,
    completions: Vec<String>,
    completion_selected: usize,
    /// The streamed answer not yet in the scroll-back (its finished blocks are).
    streaming: String,
    /// Whether this turn's answer came as a stream.
    streamed: bool,
    quit: bool,
    /// Scheduled prompts, `/loop` and monitors' events: run when idle (issue 33).
    idle_prompts: loop_cmd::IdlePrompts,
    /// `--approval-mode dontAsk` until another mode is chosen.
    dont_ask: toolbelt_session::DontAsk,
    /// `/restore`, `/rewind`, `/diff` (issue 34).
    undo: toolbelt_session::kit::undo::UndoKit,
    /// The last idle notification's hooks, awaited before SessionEnd's (which comes last).
    idle_notice: Option<tokio::task::JoinHandle<()>>,
    models: toolbelt_session::kit::model_switch::ModelSwitch,
}

impl App {
    fn new(p: Prepared, to_ui: mpsc::UnboundedSender<UiMessage>) -> Self {
        let asker = Arc::new(UiAsker {
            to_ui: to_ui.clone(),
        });
        let env = p.agent.scheduler().env();
        env.ask_user.set(asker.clone());
        // What MCP servers ask (elicitation, sampling) goes through the same dialog.
        (env.server_asks).set_asker(Arc::new(toolbelt_session::kit::server_asks::DialogAsker(
            asker,
        )));
        let env = p.agent.scheduler().env().clone();
        let project = env.roots.primary().unwrap_or(&p.cwd).to_path_buf();
        let (history, warning) = InputHistory::open(&project);
        let index_tx = to_ui.clone();
        tokio::task::spawn_blocking(move || {
            let _ = index_tx.send(UiMessage::Paths(PathIndex::build(&env)));
        });
        let mut editor = Editor::default();
        editor.set_history(history.entries().to_vec());
        let undo = toolbelt_session::kit::undo::UndoKit::new(&p);
        let models = toolbelt_session::kit::model_switch::ModelSwitch::new(&p);
        let mut app = App {
            agent: Arc::new(p.agent),
            system_prompt: p.system_prompt,
            questions: None,
            compressing: None,
            mcp: p.mcp,
            history,
            stats: SessionStats::default(),
            paths: None,
            model_name: p.model_name,
            cwd: p.cwd,
            to_ui,
            editor,
            calls: Vec::new(),
            dialogs: VecDeque::new(),
            running: None,
            pending: Vec::new(),
            notice: None,
            ctrl_c: None,
            tokens: 0,
            completions: Vec::new(),
            completion_selected: 0,
            streaming: String::new(),
            streamed: false,
            quit: false,
            idle_prompts: loop_cmd::IdlePrompts::new(p.cron, p.monitors),
            dont_ask: p.dont_ask,
            undo,
            idle_notice: None,
            models,
        };
        // The prompt comes back while monitors run; their events are turns when idle.
        app.agent.set_wait_for_events(false);
        let id = if p.saved {
            format!(" · session {}", p.session_id)
        } else {
            String::new()
        };
        app.pending.extend(view::note(
            &format!(
                "toolbelt · {} · {}{id}\nEnter sends · Alt+Enter new line · Esc cancels · Ctrl-C twice quits · /help",
                app.model_name,
                app.cwd.display()
            ),
            Color::DarkGray,
        ));
        if let Some(warning) = warning {
            app.emit(view::note(&warning, Color::Yellow));
        }
        app.show_resumed();
        if !p.prompt.trim().is_empty() {
            app.submit(p.prompt);
        }
        app
    }

    async fn run(
        &mut self,
        terminal: &mut Term,
        mut rx: mpsc::UnboundedReceiver<UiMessage>,
    ) -> std::io::Result<()> {
        let mut events = EventStream::new();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        self.flush(terminal)?;
        self.draw(terminal)?;
        while !self.quit {
            let mut redraw = true;
            tokio::select! {
                event = events.next() => match event {
                    Some(Ok(event)) => redraw = self.on_terminal(event),
                    Some(Err(e)) => return Err(e),
                    None => self.quit = true,
                },
                Some(message) = rx.recv() => self.on_message(message),
                _ = tick.tick(), if self.running.is_some() => {}
                () = self.idle_prompts.wait(), if self.idle() => {}
            }
            if self.idle()
                && let Some(prompt) = self.idle_prompts.next_prompt()
            {
                self.submit(prompt);
            }
            while let Ok(message) = rx.try_recv() {
                self.on_message(message);
                redraw = true;
            }
            while self.dialogs.front().is_some_and(Dialog::abandoned) {
                self.dialogs.pop_front();
            }
            if self
                .questions
                .as_ref()
                .is_some_and(QuestionsDialog::abandoned)
            {
                self.questions = None;
            }
            if redraw {
                self.flush(terminal)?;
                self.draw(terminal)?;
            }
        }
        Ok(())
    }

    fn draw(&self, terminal: &mut Term) -> std::io::Result<()> {
        terminal.draw(|frame| {
            let mode = self.agent.scheduler().mode();
            let live = view::Live {
                calls: &self.calls,
                thinking: self.running.as_ref().map(|r| r.since),
                streaming: &self.streaming,
                input: self.editor.text(),
                cursor: self.editor.cursor_position(),
                completions: &self.completions,
                completion_selected: self.completion_selected,
                mode,
                model: &self.model_name,
                notice: self.notice.as_deref(),
                tokens: self.tokens,
                worktree: toolbelt_tools::worktree::shown(self.agent.scheduler().env()),
            };
            let area = frame.area();
            let above_status = ratatui::layout::Rect {
                height: area.height.saturating_sub(1),
                ..area
            };
            let status = ratatui::layout::Rect {
                y: area.bottom().saturating_sub(1),
                height: 1.min(area.height),
                ..area
            };
            if let Some(questions) = &self.questions {
                questions.render(frame, above_status);
                frame.render_widget(
                    ratatui::widgets::Paragraph::new(view::status_line(&live)),
                    status,
                );
                return;
            }
            match self.dialogs.front() {
                Some(dialog) => {
                    let area = frame.area();
                    let dialog_area = ratatui::layout::Rect {
                        height: area.height.saturating_sub(1),
                        ..area
                    };
                    dialog.render(frame, dialog_area);
                    let status = ratatui::layout::Rect {
                        y: area.bottom().saturating_sub(1),
                        height: 1.min(area.height),
                        ..area
                    };
                    frame.render_widget(
                        ratatui::widgets::Paragraph::new(view::status_line(&live)),
                        status,
                    );
                }
                None => view::render(frame, &live),
            }
        })?;
        Ok(())
    }

    /// Pushes the finished lines into the scroll-back, above the viewport.
    fn flush(&mut self, terminal: &mut Term) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let width = terminal.size()?.width.max(1);
        let lines = std::mem::take(&mut self.pending);
        // In pieces, so one huge answer never needs a buffer taller than u16 rows.
        let mut rest = lines.as_slice();
        while !rest.is_empty() {
            let (chunk, tail) = rest.split_at(rest.len().min(500));
            rest = tail;
            let paragraph = view::paragraph(chunk.to_vec());
            let height = u16::try_from(paragraph.line_count(width)).unwrap_or(u16::MAX);
            terminal.insert_before(height, |buf| paragraph.render(buf.area, buf))?;
        }
        Ok(())
    }

    fn emit(&mut self, lines: Vec<Line<'static>>) {
        self.pending.extend(lines);
    }

    fn on_message(&mut self, message: UiMessage) {
        match message {
            UiMessage::Agent(event) => {
                self.stats.observe(&event);
                self.on_agent(event);
            }
            UiMessage::Paths(index) => {
                // Keys typed before the list was ready get their completions now.
                self.paths = Some(index);
                self.update_completions();
            }
            UiMessage::PromptCompletions(typed, completions) => {
                // Only if the person has not typed on since.
                if self.editor.before_cursor() == typed {
                    self.completions = completions.into_iter().take(5).collect();
                    self.completion_selected = 0;
                }
            }
            UiMessage::Approve(request, reply) => {
                let dialog = Dialog::new(*request, reply);
                let untrusted = self
                    .agent
                    .scheduler()
                    .env()
                    .settings
                    .untrusted_project
                    .is_some();
                self.dialogs.push_back(if untrusted {
                    dialog.in_untrusted_folder()
                } else {
                    dialog
                });
            }
            UiMessage::Ask(questions, reply) => {
                self.questions = Some(QuestionsDialog::new(questions, reply));
            }
            UiMessage::Compressed(result) => {
                self.compressing = None;
                match result {
                    Ok(c) => {
                        self.emit(view::note(
                            &format!(
                                "Compressed the conversation: {} messages ({} characters) became {} ({} characters).",
                                c.before_messages, c.before_chars, c.after_messages, c.after_chars
                            ),
                            Color::Green,
                        ));
                    }
                    Err(e) => self.emit(view::note(&e, Color::Red)),
                }
            }
            UiMessage::Notice(text) => self.emit(view::note(&text, Color::Yellow)),
            UiMessage::MemoryAdded(text) => {
                self.reload_memory();
                self.emit(view::note(&text, Color::Green));
            }
            UiMessage::Done(outcome) => self.finished(outcome),
            UiMessage::Quit(note) => {
                self.emit(view::note(&note, Color::Yellow));
                self.quit = true;
            }
        }
    }

    /// Moves the streamed text up to its last blank line outside a code block into the
    /// scroll-back: those blocks will not change, and the live area stays small.
    fn commit_finished_blocks(&mut self) {
        let mut in_fence = false;
        let mut cut = None;
        let mut offset = 0;
        for line in self.streaming.split_inclusive('\n') {
            if line.trim_start().starts_with("```") {
                in_fence = !in_fence;
            }
            offset += line.len();
            if !in_fence && line.trim().is_empty() && line.ends_with('\n') {
                cut = Some(offset);
            }
        }
        if let Some(cut) = cut {
            let done: String = self.streaming.drain(..cut).collect();
            if !done.trim().is_empty() {
                self.emit(markdown::render(&done));
                self.emit(vec![Line::default()]);
            }
        }
    }

    fn call(&mut self, call_id: &str) -> Option<&mut LiveCall> {
        self.calls.iter_mut().find(|c| c.call_id == call_id)
    }

    fn on_agent(&mut self, event: AgentEvent) {
        if let Some(m) = event.hook_message() {
            let color = if m.failure { Color::Red } else { Color::Yellow };
            return self.emit(view::note(&m.to_string(), color));
        }
        match event {
            AgentEvent::Assistant { text, usage, .. } => {
                if let Some(u) = usage {
                    self.tokens += u.total_tokens;
                }
                // A streamed answer's finished blocks are in the scroll-back already.
                let rest = if self.streamed {
                    std::mem::take(&mut self.streaming)
                } else {
                    text
                };
                self.streamed = false;
                if !rest.trim().is_empty() {
                    self.emit(view::answer_lines(&rest));
                }
            }
            AgentEvent::Tool(event) => self.on_tool(event),
            // The answer as it streams (a sub-agent's comes wrapped, and is not shown).
            AgentEvent::Delta(StreamDelta::Text(text)) => {
                self.streamed = true;
                self.streaming.push_str(&text);
                self.commit_finished_blocks();
            }
            AgentEvent::Delta(StreamDelta::Restart) => {
                self.streaming.clear();
                self.streamed = false;
            }
            _ => {}
        }
    }

    fn on_tool(&mut self, event: SchedulerEvent) {
        match event {
            SchedulerEvent::Validated {
                call_id,
                tool,
                description,
            } => self.calls.push(LiveCall {
                call_id,
                tool,
                description,
                state: CallState::Validating,
                since: Instant::now(),
                output: VecDeque::new(),
            }),
            SchedulerEvent::AwaitingApproval { call_id, .. } => {
                if let Some(c) = self.call(&call_id) {
                    c.state = CallState::AwaitingApproval;
                }
            }
            SchedulerEvent::Scheduled { call_id } => {
                if let Some(c) = self.call(&call_id) {
                    c.state = CallState::Scheduled;
                }
            }
            SchedulerEvent::Started {
                call_id,
                description,
                ..
            } => {
                if let Some(c) = self.call(&call_id) {
                    c.state = CallState::Executing;
                    c.since = Instant::now();
                    c.description = description;
                }
            }
            SchedulerEvent::Output { call_id, chunk } => {
                if let Some(c) = self.call(&call_id) {
                    c.push_output(&chunk);
                }
            }
            SchedulerEvent::Finished(call) => {
                self.calls.retain(|c| c.call_id != call.call_id);
                self.emit(view::finished_lines(&call));
            }
            _ => {}
        }
    }

    fn finished(&mut self, outcome: RunOutcome) {
        let agent = self.agent.clone();
        self.idle_notice = Some(tokio::spawn(async move { agent.notify_idle().await }));
        if let Some(running) = self.running.take() {
            self.stats
                .add_run(running.since.elapsed(), outcome.model_time);
        }
        self.calls.clear();
        if !self.streaming.trim().is_empty() {
            let rest = std::mem::take(&mut self.streaming);
            self.emit(view::answer_lines(&rest));
        }
        self.streaming.clear();
        self.streamed = false;
        self.dialogs.clear();
        if self.notice.as_deref() == Some(CANCELLING) {
            self.notice = None;
        }
        match &outcome.stop {
            StopReason::Cancelled => self.emit(view::note("⊘ Request cancelled.", Color::Yellow)),
            StopReason::ModelFailed(e) => {
                self.emit(view::note(&format!("✗ The model failed: {e}"), Color::Red))
            }
            StopReason::MaxTurns(n) => self.emit(view::note(
                &format!("The request reached the limit of {n} model turns."),
                Color::Yellow,
            )),
            _ => {}
        }
    }

    /// Sends what the person wrote: a slash command, or a prompt to the agent.
    fn submit(&mut self, text: String) {
        if text.trim().is_empty() {
            return;
        }
        if let Err(e) = self.history.push(&text) {
            self.emit(view::note(
                &format!("the input history is not saved: {e}"),
                Color::Yellow,
            ));
        }
        if let Some(note) = self.idle_prompts.command(&text) {
            self.emit(view::user_lines(&text));
            self.emit(view::note(&note, Color::Gray));
            return;
        }
        let prompt_command = self.mcp.is_prompt_command(&text);
        if !prompt_command && let Some(command) = slash::parse(&text) {
            self.emit(view::user_lines(&text));
            match command {
                Ok(command) => self.slash(command),
                Err(message) => self.emit(view::note(&message.to_string(), Color::Red)),
            }
            return;
        }
        if self.running.is_some() || self.compressing.is_some() {
            self.notice = Some("a request is running: wait, or Esc to cancel it".into());
            return;
        }
        self.emit(view::user_lines(&text));
        self.remake_system_prompt();
        let cancel = CancellationToken::new();
        let agent = self.agent.clone();
        let tx = self.to_ui.clone();
        let cwd = self.cwd.clone();
        let token = cancel.clone();
        let mcp = self.mcp.clone();
        let task = tokio::spawn(async move {
            // The servers the prompt names may still be starting: `/<server>:<prompt>`
            // (what the MCP prompt returns is the prompt) and `@<server>:<uri>` (read once
            // it is up). Esc ends either wait; the run then ends as cancelled.
            let ready = async {
                let text = match mcp.run_prompt_command(&text).await {
                    None => text.clone(),
                    Some(Ok(expanded)) => expanded,
                    Some(Err(why)) => return Err(why.to_string()),
                };
                mcp.wait_for_prompt(&text).await;
                agent.sync_tools().await;
                Ok(text)
            };
            let text = tokio::select! {
                ready = ready => match ready {
                    Ok(text) => text,
                    Err(why) => {
                        let _ = tx.send(UiMessage::Notice(why.clone()));
                        let _ = tx.send(UiMessage::Done(RunOutcome::prompt_not_made(why)));
                        return;
                    }
                },
                () = token.cancelled() => {
                    let parts = vec![toolbelt_model::UserPart::Text(text.clone())];
                    let outcome = agent.run_with_references(parts, &text, &token).await;
                    let _ = tx.send(UiMessage::Done(outcome));
                    return;
                }
            };
            let servers = mcp.aliases();
            let mut inlined =
                at_paths::inline(&text, &agent.registry(), agent.scheduler(), &cwd, &servers).await;
            for warning in std::mem::take(&mut inlined.warnings) {
                let _ = tx.send(UiMessage::Notice(warning));
            }
            let parts = inlined.parts(agent.takes_images());
            let outcome = agent.run_with_references(parts, &text, &token).await;
            let _ = tx.send(UiMessage::Done(outcome));
        });
        self.running = Some(Running {
            cancel,
            since: Instant::now(),
            task,
        });
    }

    /// No request, no `/compress`: a scheduled prompt or monitors' events may run.
    fn idle(&self) -> bool {
        self.running.is_none() && self.compressing.is_none()
    }

    /// `/model [NAME]`: the configured models, or a switch to one.
    fn model_command(&mut self, name: Option<String>) {
        let Some(name) = name else {
            return self.emit(view::note(&self.models.list(&self.model_name), Color::Gray));
        };
        match self.models.switch(&name) {
            Ok(text) => {
                self.model_name = name;
                self.emit(view::note(&text, Color::Gray));
            }
            Err(e) => self.emit(view::note(&format!("/model: {e}"), Color::Red)),
        }
    }

    /// `/mcp auth NAME`: the login runs on its own (the prompt stays usable); the URL
    /// and the outcome are notices, and the server's tools join once it is up.
    fn mcp_login(&mut self, name: String) {
        let (tx, mcp) = (self.to_ui.clone(), self.mcp.clone());
        tokio::spawn(async move {
            let say = |text: String| drop(tx.send(UiMessage::Notice(text)));
            let show = |url: &str| {
                say(format!(
                    "Open this URL to log in to MCP server \"{name}\":\n{url}"
                ));
                if let Err(e) = toolbelt_mcp::open_in_browser(url) {
                    say(format!("{e}; open the URL yourself"));
                }
            };
            let timeout = std::time::Duration::from_secs(300);
            let outcome = mcp.log_in(&name, timeout, show).await;
            let status = (mcp.connections().iter())
                .find(|c| c.alias() == name)
                .map(|c| c.status());
            say(match (outcome, status) {
                (Ok(_), Some(toolbelt_mcp::ServerStatus::Connected)) => format!(
                    "Logged in to MCP server \"{name}\": it is connected, and its tools join at the next request."
                ),
                (Ok(_), status) => format!(
                    "Logged in to MCP server \"{name}\"; it is not up: {}",
                    status.map(|s| s.to_string()).unwrap_or_default()
                ),
                (Err(e), _) => format!("/mcp auth {name}: {e}"),
            });
        });
    }

    fn slash(&mut self, command: SlashCommand) {
        let env = self.agent.scheduler().env().clone();
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let busy = self.running.is_some() || self.compressing.is_some();
        match command {
            SlashCommand::Quit => self.request_quit(),
            SlashCommand::Help => {
                let text = slash::help_text(&self.mcp.prompts());
                self.emit(view::note(&text, Color::Gray))
            }
            SlashCommand::Tools => {
                let text = slash::tools_text(&self.agent.registry());
                self.emit(view::note(&text, Color::Gray));
            }
            SlashCommand::Mcp => {
                let text = slash::mcp_text(&self.mcp.reports());
                self.emit(view::note(&text, Color::Gray));
            }
            SlashCommand::McpAuth(name) => self.mcp_login(name),
            SlashCommand::Hooks => self.emit(view::note(&slash::hooks_text(&env), Color::Gray)),
            SlashCommand::Model(name) => self.model_command(name),
            SlashCommand::MemoryShow => {
                let files = self.system_prompt.context_files();
                self.emit(view::note(&slash::memory_text(files), Color::Gray));
            }
            SlashCommand::MemoryRefresh => {
                self.reload_memory();
                let text = format!(
                    "Reloaded the context files; the next prompt's system prompt has them.\n{}",
                    slash::memory_text(self.system_prompt.context_files())
                );
                self.emit(view::note(&text, Color::Gray));
            }
            SlashCommand::MemoryAdd { fact, project } => {
                let tx = self.to_ui.clone();
                let rules = self.agent.scheduler().rules();
                tokio::spawn(async move {
                    let message = match slash::memory_add(rules, env, home, &fact, project).await {
                        Ok(text) => UiMessage::MemoryAdded(text),
                        Err(e) => UiMessage::Notice(format!("/memory add failed: {e}")),
                    };
                    let _ = tx.send(message);
                });
            }
            SlashCommand::Clear | SlashCommand::Compress | SlashCommand::Undo(_) if busy => self
                .emit(view::note(
                    "wait for the running request to end (or Esc to cancel it)",
                    Color::Yellow,
                )),
            SlashCommand::Clear => {
                self.agent.set_history(Vec::new());
                self.emit(view::note(
                    "Conversation cleared: the next prompt starts afresh.",
                    Color::Gray,
                ));
            }
            SlashCommand::Compress => self.compress(),
            SlashCommand::ApprovalMode(None) => {
                let mode = self.agent.scheduler().mode();
                self.emit(view::note(
                    &format!("approval mode: {mode} (plan, default, auto-edit, yolo)"),
                    Color::Gray,
                ));
            }
            SlashCommand::ApprovalMode(Some(mode)) => {
                self.agent.scheduler().set_mode(mode);
                self.dont_ask.set(false);
                self.emit(view::note(&format!("approval mode: {mode}"), Color::Gray));
            }
            SlashCommand::Stats => self.emit(view::note(&self.stats.text(), Color::Gray)),
            SlashCommand::Undo(command) => {
                let (kit, agent, tx) = (self.undo.clone(), self.agent.clone(), self.to_ui.clone());
                let approver = Arc::new(UiApprover { to_ui: tx.clone() });
                tokio::spawn(async move {
                    let say = |text: String| drop(tx.send(UiMessage::Notice(text)));
                    let text = kit.run(command, agent, approver, &say).await;
                    say(text);
                });
            }
        }
    }

    /// The completions for the word under the cursor: `@path`, `#reference`, `/command`.
    fn update_completions(&mut self) {
        const SHOWN: usize = 5;
        self.completion_selected = 0;
        self.completions = match self.editor.completion_word() {
            Some((_, word)) if word.starts_with('@') => {
                // MCP resources (`@server:uri`) whose name starts so, then the files.
                let typed = &word[1..];
                let resources = (self.mcp.resource_references().into_iter())
                    .filter(|r| !typed.is_empty() && r.starts_with(typed));
                let paths = (self.paths.as_ref())
                    .map(|p| p.complete(typed, SHOWN))
                    .unwrap_or_default();
                resources
                    .chain(paths)
                    .take(SHOWN)
                    .map(|c| format!("@{c}"))
                    .collect()
            }
            Some((_, word)) if word.starts_with('#') => {
                reference_candidates(&self.agent.registry(), &word[1..], SHOWN)
                    .into_iter()
                    .map(|c| format!("#{}", c.name))
                    .collect()
            }
            Some((_, word)) if word.starts_with('/') => {
                let builtin = slash::command_candidates(&word[1..]).into_iter();
                // MCP prompts (`/server:prompt`) after the built-in commands.
                let prompts = (self.mcp.prompts().into_iter())
                    .map(|p| p.command())
                    .filter(|c| !word[1..].is_empty() && c.starts_with(&word[1..]));
                builtin
                    .map(|(name, _)| name.to_string())
                    .chain(prompts)
                    .take(SHOWN)
                    .map(|name| format!("/{name}"))
                    .collect()
            }
            _ => Vec::new(),
        };
        let typed = self.editor.before_cursor();
        if self.completions.is_empty()
            && typed.starts_with('/')
            && typed.contains(char::is_whitespace)
        {
            // A prompt command's argument: its server completes it, off the UI thread.
            let (mcp, tx, typed) = (self.mcp.clone(), self.to_ui.clone(), typed.to_string());
            tokio::spawn(async move {
                let completions = mcp.complete_prompt_argument(&typed).await;
                if !completions.is_empty() {
                    let _ = tx.send(UiMessage::PromptCompletions(typed, completions));
                }
            });
        }
    }

    /// Tab: the highlighted completion replaces the word.
    fn accept_completion(&mut self) {
        let Some(choice) = self.completions.get(self.completion_selected).cloned() else {
            return;
        };
        // A prompt argument's word is any word; the others start with `@`, `#`, `/`.
        let (start, len) = match self.editor.completion_word() {
            Some((start, word)) => (start, word.len()),
            None => {
                let (start, word) = self.editor.last_word();
                (start, word.len())
            }
        };
        let tail = if choice.ends_with('/') || choice.ends_with('=') {
            ""
        } else {
            " "
        };
        self.editor.complete(start, len, &format!("{choice}{tail}"));
        self.update_completions();
    }

    /// Makes the system prompt again with the approval mode of now, for the next run.
    fn remake_system_prompt(&self) {
        let mode = self.agent.scheduler().mode();
        self.agent.set_system_prompt(self.system_prompt.text(mode));
    }

    /// Reads the context files again (`/memory refresh`, after `/memory add`).
    fn reload_memory(&mut self) {
        self.system_prompt.reload_context_files();
        self.remake_system_prompt();
    }

    /// `/compress`: the model summarises the history, which the summary then replaces.
    fn compress(&mut self) {
        let cancel = CancellationToken::new();
        self.compressing = Some(cancel.clone());
        self.emit(view::note("Compressing the conversation…", Color::Gray));
        let (agent, tx) = (self.agent.clone(), self.to_ui.clone());
        tokio::spawn(async move {
            // PreCompact, the summary in the history's place, SessionStart (`compact`).
            let result = agent.compress(&cancel).await.map_err(|e| e.to_string());
            let _ = tx.send(UiMessage::Compressed(result));
        });
    }

    /// Returns whether to redraw.
    fn on_terminal(&mut self, event: Event) -> bool {
        match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => {
                self.on_key(key);
                true
            }
            Event::Paste(text) => {
                if self.dialogs.is_empty() && self.questions.is_none() {
                    self.editor.insert(&text);
                }
                true
            }
            Event::Resize(..) => true,
            _ => false,
        }
    }

    fn on_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            self.ctrl_c();
            return;
        }
        if !(ctrl && key.code == KeyCode::Char('c')) && self.ctrl_c.is_some() {
            self.ctrl_c = None;
            self.notice = None;
        }
        if key.code == KeyCode::BackTab {
            self.cycle_mode();
            return;
        }
        if let Some(questions) = &mut self.questions {
            if questions.key(key) == QuestionsKey::Done {
                self.questions = None;
            }
            return;
        }
        if let Some(dialog) = self.dialogs.front_mut() {
            if let DialogKey::Answered(answer) = dialog.key(key) {
                let request = dialog.request.clone();
                // The rule is written before the call runs.
                if answer.always_in_workspace {
                    self.allow_in_workspace(&request);
                }
                if let Some(mut dialog) = self.dialogs.pop_front() {
                    dialog.send(answer);
                }
            }
            return;
        }
        match key.code {
            KeyCode::Esc => {
                if let Some(running) = &self.running {
                    running.cancel.cancel();
                    self.notice = Some(CANCELLING.into());
                }
                if let Some(compressing) = &self.compressing {
                    compressing.cancel();
                }
            }
            KeyCode::Char('d') if ctrl => {
                if self.editor.is_empty() {
                    self.request_quit();
                }
            }
            KeyCode::Tab if !self.completions.is_empty() => self.accept_completion(),
            KeyCode::Down if !self.completions.is_empty() => {
                self.completion_selected = (self.completion_selected + 1) % self.completions.len();
            }
            KeyCode::Up if !self.completions.is_empty() => {
                let n = self.completions.len();
                self.completion_selected = (self.completion_selected + n - 1) % n;
            }
            _ => match self.editor.key(key) {
                Edit::Submit => {
                    let text = self.editor.take();
                    self.notice = None;
                    self.completions.clear();
                    self.submit(text);
                }
                Edit::Changed => self.update_completions(),
                Edit::Ignored => {}
            },
        }
    }

    /// A resumed conversation (`--continue`, `--resume`) is shown by its size and last
    /// exchange, so the person sees where it stands; `/stats` counts its prompts.
    fn show_resumed(&mut self) {
        let Some(resumed) = slash::resumed(&self.agent.history()) else {
            return;
        };
        self.stats.resumed_prompts = resumed.prompts as u64;
        self.emit(view::note(&resumed.heading(), Color::DarkGray));
        self.emit(view::user_lines(&resumed.last_prompt));
        if let Some(answer) = resumed.answer {
            self.emit(markdown::render(&answer));
        }
    }

    /// Choice 3: the rules this approval stands for go into the workspace's
    /// `.qwen/settings.json`; the session allows them already (the answer is choice 2's).
    fn allow_in_workspace(&mut self, request: &ApprovalRequest) {
        let vocabulary = self.agent.scheduler().permissions().rules().vocabulary();
        let rules = workspace_rules::rules_for(request, false, vocabulary);
        let env = self.agent.scheduler().env().clone();
        let project = env.roots.primary().unwrap_or(&self.cwd);
        match workspace_rules::allow_in_workspace(project, &rules) {
            Ok(done) => self.emit(view::note(
                &format!(
                    "Always allowed in this workspace: {} ({})",
                    rules.join(", "),
                    done.path.display()
                ),
                Color::Green,
            )),
            Err(e) => self.emit(view::note(
                &format!("Could not save the rule ({e}); allowed for this session only."),
                Color::Red,
            )),
        }
    }

    /// Quits, first asking what becomes of the worktree the session works in (issue 45):
    /// the answer comes back as `UiMessage::Quit`, or nothing when the person stays.
    fn request_quit(&mut self) {
        let env = self.agent.scheduler().env().clone();
        let asked = toolbelt_session::kit::worktree_quit::question(&env);
        let (Some(ask), Some(asker)) = (asked, env.ask_user.get().cloned()) else {
            self.quit = true;
            return;
        };
        let tx = self.to_ui.clone();
        tokio::spawn(async move {
            let question = std::slice::from_ref(&ask.question);
            let answers =
                (asker.ask(question, &CancellationToken::new()).await).map_err(String::from);
            let done = tokio::task::spawn_blocking(move || ask.answer(answers)).await;
            if let Ok(Some(note)) = done {
                let _ = tx.send(UiMessage::Quit(note));
            }
        });
    }

    fn ctrl_c(&mut self) {
        if self.ctrl_c.is_some_and(|at| at.elapsed() < DOUBLE_PRESS) {
            self.quit = true;
            return;
        }
        self.ctrl_c = Some(Instant::now());
        if let Some(running) = &self.running {
            running.cancel.cancel();
        }
        self.editor.clear();
        self.notice = Some("press Ctrl-C again to quit".into());
    }

    fn cycle_mode(&mut self) {
        let scheduler = self.agent.scheduler();
        let next = match scheduler.mode() {
            ApprovalMode::Default => ApprovalMode::AutoEdit,
            ApprovalMode::AutoEdit => ApprovalMode::Yolo,
            ApprovalMode::Yolo => ApprovalMode::Plan,
            ApprovalMode::Plan => ApprovalMode::Default,
        };
        scheduler.set_mode(next);
        self.dont_ask.set(false);
    }
}
