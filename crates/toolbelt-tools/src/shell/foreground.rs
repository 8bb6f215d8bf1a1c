//! A foreground command: run it, stream its output, stop it on timeout or cancellation,
//! and render Qwen Code's result fields.
//!
//! One `select!` loop owns everything that can happen: output to read, the shell
//! exiting, the timeout, the cancellation token, live output due for a listener, and a
//! look at the processes below the shell a few times a second (so one that clears its
//! environment is still known as the call's).
//!
//! A foreground call leaves nothing running. When the shell exits (or is killed on
//! timeout or cancellation), every process the call started that is still alive is
//! ended, whatever its group or session (`setsid`, `nohup … &`, `(… &)`, `disown`): the
//! call's [`Owner`] finds them. The result names them and points at `is_background`,
//! which is what long-lived processes are for. Output is then read until the pipe
//! closes, for a short while at most: a process that could not be told apart may still
//! hold it, and waiting for it would hang the call.

use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use toolbelt_core::{
    Consent, Display, ErrorKind, ExecContext, OutputPolicy, Part, ToolError, ToolResult,
};

use super::output::{self, LiveDecoder, OutputCapture};
use super::process::{self, OutputTarget, Owner};
use super::sandbox::{self, Confinement, PreparedSandbox};
use super::waiting::{InputWait, Quiet, QuietWatch};
use super::{DRAIN_AFTER_EXIT, LIVE_INTERVAL, ShellCall};
use toolbelt_process::Leftover;

static LOG_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Why a foreground command did not finish on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Timeout,
    Cancelled,
    /// Its output ended in a prompt and stayed so (`tools.shell.inputWaitMs`).
    Waiting,
}

impl ShellCall {
    /// The capture of this call's output, its log within the session's limits.
    /// An unasked command's log counts against the unasked budget too, and goes with
    /// the session.
    fn capture(&self, log_path: std::path::PathBuf, consent: Consent) -> OutputCapture {
        let jobs = self.jobs.clone();
        OutputCapture::new(
            &self.env.output,
            log_path,
            self.log_cap,
            self.jobs.log_budget_for(consent),
        )
        .on_log_created(move |path| jobs.remove_with_session(path, consent))
    }

    pub(super) async fn run_foreground(
        self,
        ctx: ExecContext,
        sandbox: Option<PreparedSandbox>,
    ) -> ToolResult {
        let n = LOG_COUNTER.fetch_add(1, Ordering::Relaxed);
        let log_path = self.log_path(
            "shell",
            &super::log_name(&format!("run_shell_command-{n}"), ctx.consent),
        );
        let started = Instant::now();
        let owner = Owner::new();
        let read_only_sandbox = sandbox
            .as_ref()
            .is_some_and(|s| s.confinement() == Confinement::ReadOnly);
        let running = match process::spawn(
            &self.command,
            &self.cwd,
            OutputTarget::Pipe,
            sandbox,
            &self.environment(),
            &owner,
            self.process_namespace(),
        ) {
            Ok(r) => r,
            Err(e) => return self.spawn_error(&e),
        };
        let pgid = running.pid;
        let capture = self.capture(log_path, ctx.consent);
        let mut w = self.watch(&ctx, running, capture, &owner, started).await;
        if let Some(line) = w.ready.take() {
            let running = super::handover::StillRunning {
                child: w.child,
                pid: pgid,
                reader: w.reader,
                owner,
                capture: w.capture,
                ready_line: line,
                started,
            };
            return self.move_to_background(running, &ctx.call_id, ctx.consent);
        }
        let failed = w.ending.is_none() && matches!(&w.exit, Some(Ok(status)) if !status.success());
        if failed {
            w.waited = w.quiet.failed_waiting(&self.parsed);
        }
        let captured = w.capture.finish(&self.output_budget());
        self.render(Rendered {
            output: captured,
            exit: w.exit,
            ending: w.ending,
            // The id the command's processes know its group by (the relay's is
            // invisible in the shared PID namespace): what the result names.
            pgid: toolbelt_process::isolate::command_pid(pgid),
            leftovers: w.leftovers,
            elapsed: started.elapsed(),
            read_only_sandbox,
            waited: w.waited,
        })
    }

    /// Runs the loop of the module's documentation until the command is done, or until
    /// its output settled on a ready line (it then still runs: see `handover`).
    async fn watch(
        &self,
        ctx: &ExecContext,
        running: process::RunningShell,
        capture: OutputCapture,
        owner: &Owner,
        started: Instant,
    ) -> Watched {
        let pgid = running.pid;
        let mut w = Watched {
            child: running.child,
            reader: running.output,
            capture,
            quiet: QuietWatch::new(&self.env.settings.tools.shell, self.may_move(ctx.consent)),
            exit: None,
            ending: None,
            leftovers: Vec::new(),
            waited: None,
            ready: None,
        };
        let mut live = LiveOutput::new(ctx);
        let deadline = tokio::time::Instant::from_std(started + self.timeout);
        let mut drain_until: Option<tokio::time::Instant> = None;
        let mut buf = vec![0u8; 64 * 1024];
        let mut observe = tokio::time::interval(OBSERVE_INTERVAL);
        observe.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while w.exit.is_none() || w.reader.is_some() {
            tokio::select! {
                biased;
                _ = ctx.cancel.cancelled(), if w.ending.is_none() => {
                    w.ending = Some(Ending::Cancelled);
                    process::terminate_group(pgid, process::KILL_GRACE).await;
                }
                _ = tokio::time::sleep_until(deadline), if w.ending.is_none() => {
                    w.ending = Some(Ending::Timeout);
                    process::terminate_group(pgid, process::KILL_GRACE).await;
                }
                read = read_some(&mut w.reader, &mut buf) => match read {
                    Ok(0) | Err(_) => w.reader = None,
                    Ok(n) => {
                        w.capture.push(&buf[..n]);
                        live.push(&buf[..n], &w.capture);
                        w.quiet.push(&buf[..n]);
                    }
                },
                status = w.child.wait(), if w.exit.is_none() => {
                    w.exit = Some(status);
                    // What the command left running goes now; then the pipe closes as
                    // soon as the last writer is gone.
                    w.leftovers = owner.kill_leftovers(process::KILL_GRACE).await;
                    drain_until = Some(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
                }
                _ = observe.tick(), if w.exit.is_none() => owner.observe(),
                _ = sleep_until_opt(w.quiet.next_check()), if w.exit.is_none() && w.ending.is_none() => {
                    match w.quiet.check(&self.parsed) {
                        Some(Quiet::Waiting(wait)) => {
                            w.waited = Some(wait);
                            w.ending = Some(Ending::Waiting);
                            process::terminate_group(pgid, process::KILL_GRACE).await;
                        }
                        Some(Quiet::Ready(line)) => {
                            w.ready = Some(line);
                            break;
                        }
                        None => {}
                    }
                }
                _ = sleep_until_opt(live.next_flush()), if live.has_pending() => live.flush(),
                _ = sleep_until_opt(drain_until), if drain_until.is_some() => {
                    // Processes the command left in the background still hold the pipe.
                    w.reader = None;
                }
            }
        }
        live.flush();
        w
    }

    /// The session's budget less room for the other fields of the result, so the whole
    /// text fits and the scheduler's own cut never cuts it a second time.
    pub(super) fn output_budget(&self) -> OutputPolicy {
        let policy = &self.env.output;
        // 600 for the fields, 700 for a note about processes left running, 400 for one
        // about the sandbox.
        let reserve_chars = 1700 + self.command.chars().count();
        let reserve_lines = 14 + self.command.lines().count();
        OutputPolicy::new(
            shrink(policy.max_chars, reserve_chars),
            shrink(policy.max_lines, reserve_lines),
            policy.spill_dir.clone(),
        )
    }

    /// The call's error: a timeout, a cancel, or a wait that failed.
    fn error_of(&self, ending: Option<Ending>, wait_error: Option<String>) -> Option<ToolError> {
        match ending {
            Some(Ending::Timeout) => Some(ToolError::new(
                ErrorKind::Timeout,
                format!("Command timed out after {}ms.", self.timeout.as_millis()),
            )),
            Some(Ending::Cancelled) => Some(ToolError::new(
                ErrorKind::Cancelled,
                "Command was cancelled by the user.",
            )),
            Some(Ending::Waiting) => Some(ToolError::new(
                ErrorKind::ExecutionFailed,
                "Command was ended: it waited for input it cannot get.",
            )),
            None => wait_error.map(|e| ToolError::new(ErrorKind::ShellExecuteError, e)),
        }
    }

    /// What comes before the fields when the command did not end on its own.
    fn ending_header(&self, r: &Rendered) -> String {
        match r.ending {
            Some(Ending::Timeout) => format!(
                "Command timed out after {}ms before it could complete; its process group was killed. Below is the output before it timed out:\n",
                self.timeout.as_millis()
            ),
            Some(Ending::Cancelled) => "Command was cancelled by the user before it could complete; its process group was killed. Below is the output before it was cancelled:\n".to_string(),
            Some(Ending::Waiting) => format!(
                "Command was ended early, after its output stayed on a prompt for {}ms: it waits for input it cannot get ({}). \
                 Commands here have no terminal and an empty, closed standard input. To avoid the wait: {}. Below is its output:\n",
                self.env.settings.tools.shell.input_wait_ms,
                r.waited.as_ref().map_or("input", |w| w.what.as_str()),
                r.waited.as_ref().map_or(super::waiting::PROMPT_AVOID, |w| w.avoid),
            ),
            None => String::new(),
        }
    }

    fn render(&self, r: Rendered) -> ToolResult {
        let (code, signal, wait_error) = match &r.exit {
            Some(Ok(status)) => (status.code(), status.signal(), None),
            Some(Err(e)) => (None, None, Some(e.to_string())),
            None => (None, None, None),
        };
        let none = || "(none)".to_string();
        let output = if r.output.text.is_empty() {
            "(empty)".to_string()
        } else {
            r.output.text.clone()
        };
        let pids = if r.leftovers.is_empty() {
            none()
        } else {
            r.leftovers
                .iter()
                .map(|l| l.pid.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let dir = if self.directory_given() {
            self.env.roots.display_relative(&self.cwd)
        } else {
            "(root)".to_string()
        };
        let mut text = self.ending_header(&r);
        text.push_str(&format!(
            "Command: {}\nDirectory: {dir}\nOutput: {output}\nError: {}\nExit Code: {}\nSignal: {}\nBackground PIDs: {pids}\nProcess Group PGID: {}",
            self.command,
            wait_error.clone().unwrap_or_else(none),
            code.map_or_else(none, |c| c.to_string()),
            signal.map_or_else(none, |s| s.to_string()),
            r.pgid,
        ));
        if !r.leftovers.is_empty() {
            let note = leftovers_note(&r.leftovers);
            text.push_str(&format!("\n{note}"));
        }
        let failed = r.ending.is_none() && code != Some(0);
        if let Some(wait) = r.waited.as_ref().filter(|_| failed) {
            text.push_str(&format!(
                "\nNote: the command failed waiting for input it cannot get: {}. Commands here have no terminal and an \
                 empty, closed standard input. To avoid it: {}.",
                wait.what, wait.avoid
            ));
        }
        if r.read_only_sandbox
            && failed
            && let Some(note) = sandbox::limit_note(signal, &r.output.text)
                .or_else(|| sandbox::refusal_note(&r.output.text, &self.cwd))
        {
            text.push_str(&format!("\n{note}"));
        }
        let display = display_of(&r, code, signal);
        let error = self.error_of(r.ending, wait_error);
        tracing::debug!(
            command = %self.command,
            elapsed_ms = r.elapsed.as_millis() as u64,
            bytes = r.output.total_bytes,
            "shell command finished"
        );
        ToolResult {
            llm_content: vec![Part::text(text)],
            return_display: Display::markdown(display),
            error,
        }
    }
}

/// What a person sees: the output, then what ended it.
fn display_of(r: &Rendered, code: Option<i32>, signal: Option<i32>) -> String {
    let mut display = r.output.text.clone();
    if !r.leftovers.is_empty() {
        display.push_str(&format!(
            "\n[ended {} process(es) the command left running]",
            r.leftovers.len()
        ));
    }
    if let Some(c) = code.filter(|c| *c != 0) {
        display.push_str(&format!("\n[exit code {c}]"));
    }
    if let Some(s) = signal {
        display.push_str(&format!("\n[killed by signal {s}]"));
    }
    display
}

/// Tells the model what was ended and what to do instead.
fn leftovers_note(leftovers: &[Leftover]) -> String {
    const LISTED: usize = 20;
    let mut listed: Vec<String> = leftovers
        .iter()
        .take(LISTED)
        .map(|l| {
            if l.name.is_empty() {
                l.pid.to_string()
            } else {
                format!("{} ({})", l.pid, l.name)
            }
        })
        .collect();
    if leftovers.len() > LISTED {
        listed.push(format!("and {} more", leftovers.len() - LISTED));
    }
    format!(
        "Note: the command left processes running ({}); they were ended when the command ended, \
         because a foreground command leaves nothing behind (also with setsid, nohup, disown or a subshell). \
         To keep a server, watcher or other long-lived process running, call run_shell_command with is_background: true.",
        listed.join(", ")
    )
}

/// `budget - reserve`, keeping at least a quarter of the budget; no limit stays none.
fn shrink(budget: usize, reserve: usize) -> usize {
    if budget == usize::MAX {
        budget
    } else {
        budget.saturating_sub(reserve).max(budget / 4).max(1)
    }
}

/// A foreground command as the loop leaves it.
struct Watched {
    child: tokio::process::Child,
    reader: Option<pipe::Receiver>,
    capture: OutputCapture,
    quiet: QuietWatch,
    exit: Option<std::io::Result<std::process::ExitStatus>>,
    ending: Option<Ending>,
    /// Processes the command left running, ended when it ended.
    leftovers: Vec<Leftover>,
    /// What it waited for, when that is why it was ended.
    waited: Option<InputWait>,
    /// The line that said it is ready, when it moves to the background.
    ready: Option<String>,
}

struct Rendered {
    output: output::CapturedOutput,
    exit: Option<std::io::Result<std::process::ExitStatus>>,
    ending: Option<Ending>,
    pgid: u32,
    /// Processes the command left running, ended when it ended.
    leftovers: Vec<Leftover>,
    elapsed: Duration,
    /// The command ran unasked in the read-only sandbox.
    read_only_sandbox: bool,
    /// What it waited for: why it was ended ([`Ending::Waiting`]), or why it failed.
    waited: Option<InputWait>,
}

async fn read_some(reader: &mut Option<pipe::Receiver>, buf: &mut [u8]) -> std::io::Result<usize> {
    match reader {
        Some(r) => r.read(buf).await,
        None => std::future::pending().await,
    }
}

async fn sleep_until_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Live output for a listener, at most every [`LIVE_INTERVAL`]; for binary output only a
/// byte count.
struct LiveOutput {
    sink: toolbelt_core::OutputSink,
    decoder: LiveDecoder,
    pending: String,
    last: Instant,
}

/// Live text held back between emissions, at most (older text is dropped).
const LIVE_PENDING_MAX: usize = 64 * 1024;

/// How often the processes below a running shell are recorded.
const OBSERVE_INTERVAL: Duration = Duration::from_millis(250);

impl LiveOutput {
    fn new(ctx: &ExecContext) -> Self {
        LiveOutput {
            sink: ctx.output.clone(),
            decoder: LiveDecoder::default(),
            pending: String::new(),
            last: Instant::now(),
        }
    }

    fn push(&mut self, chunk: &[u8], capture: &OutputCapture) {
        if !self.sink.is_listening() {
            return;
        }
        if capture.is_binary() {
            self.pending = format!(
                "[Receiving binary output... {} bytes received]",
                capture.total_bytes()
            );
        } else {
            self.pending.push_str(&self.decoder.decode(chunk));
            if self.pending.len() > LIVE_PENDING_MAX {
                let mut cut = self.pending.len() - LIVE_PENDING_MAX;
                while !self.pending.is_char_boundary(cut) {
                    cut += 1;
                }
                self.pending.drain(..cut);
            }
        }
        if self.last.elapsed() >= LIVE_INTERVAL {
            self.flush();
        }
    }

    fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// When held-back output is due, so a quiet command's last words are not held back
    /// until it exits.
    fn next_flush(&self) -> Option<tokio::time::Instant> {
        Some(tokio::time::Instant::from_std(self.last + LIVE_INTERVAL))
    }

    fn flush(&mut self) {
        if !self.pending.is_empty() {
            self.sink.emit(&std::mem::take(&mut self.pending));
        }
        self.last = Instant::now();
    }
}

#[cfg(test)]
mod tests;
