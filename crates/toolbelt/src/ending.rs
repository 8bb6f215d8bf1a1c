//! Every way the program ends runs the same cleanup: a normal return, Ctrl-C twice, and
//! every signal whose default action would end the process (TERM, HUP, INT, QUIT,
//! USR1, USR2, ALRM, ... and the real-time signals). The cleanup is
//! [`toolbelt_process::end_descendants_blocking`]: toolbelt is a child subreaper, so
//! every process it started (MCP servers, background jobs, whatever a call left) is
//! below it, and all of them are ended except the jobs the settings keep
//! (`tools.shell.killBackgroundOnExit: false`).
//!
//! What toolbelt cannot see itself (SIGKILL, a fault such as a stack overflow, an abort,
//! a panic that unwinds out of `main`) is the guardian's
//! ([`toolbelt_process::guardian`]), a second process that ends everything carrying
//! this toolbelt's owner markers once toolbelt is gone.
//!
//! Panics: the profile unwinds (no `panic = abort`). A panic in a task is caught by the
//! runtime and ends only that task (rmcp and the scheduler turn it into an error); one
//! that unwinds out of `main` ends the process with 101 without this cleanup, which
//! is then the guardian's, like an abort.
//!
//! Signals are taken by a thread of their own (`signal-hook`), not by a task of the
//! async runtime: the ending must not depend on the runtime's flavour (blocking inside
//! a current-thread runtime panics) or on the runtime being free to poll the task.
//!
//! Why not rely on `Drop`: a signal's default action and `std::process::exit` run no
//! destructors, and a session's values may be inside tasks that never finish. The sweep
//! works from `/proc` and needs nothing but the process itself.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Mutex, PoisonError};

use toolbelt_process::{KILL_GRACE, become_subreaper, end_descendants_blocking};

/// Exit code for a run ended by a signal: 128 + its number, as shells report it.
fn signal_exit(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(u8::MAX)
}

/// Makes toolbelt the subreaper of everything it starts and lets its first process
/// start the guardian. First thing in `main`, before any process is spawned, so no
/// orphan escapes to init.
pub fn start() {
    if !become_subreaper() {
        tracing::warn!(
            "cannot become a child subreaper: processes that leave their parent may outlive toolbelt"
        );
    }
    toolbelt_process::guardian::enable();
}

/// Ends every process below toolbelt (the normal end, too), then removes the logs of
/// unasked commands.
pub fn clean_up() {
    end_descendants_blocking(KILL_GRACE);
    toolbelt_process::log::remove_logs_at_exit();
}

/// The exit code of an ending already under way (0: none). The signal's cleanup ends
/// the running call too, so `main` may reach its own end first; it must then exit with
/// the signal's code, not the call's.
static ENDING: AtomicU8 = AtomicU8::new(0);
/// Held by the one ending under way: a second (a signal during `main`'s own cleanup)
/// waits here until the process exits, so two threads never clean up and exit at once.
static END: Mutex<()> = Mutex::new(());

thread_local! {
    /// This thread is already ending the process: an ending asked for during the cleanup
    /// (a log line to a closed stderr) must exit, not wait for the lock it holds.
    static ENDING_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Cleans up and exits now with `code`.
pub fn end_now(code: u8) -> ! {
    if ENDING_HERE.replace(true) {
        std::process::exit(i32::from(exit_code(code)));
    }
    let _only_one = END.lock().unwrap_or_else(PoisonError::into_inner);
    let first = FIRST.lock().map(|f| *f).unwrap_or_else(|p| *p.into_inner());
    if let Some(first) = first {
        first();
    }
    if ENDING.load(Ordering::SeqCst) == 0 {
        ENDING.store(code, Ordering::SeqCst);
    }
    clean_up();
    std::process::exit(i32::from(ENDING.load(Ordering::SeqCst)))
}

/// What an ending does before anything else: the interactive terminal puts the terminal
/// back (raw mode off, cursor shown), so a signal from outside does not leave the
/// person's shell in raw mode.
static FIRST: Mutex<Option<fn()>> = Mutex::new(None);

/// Sets (or, with `None`, clears) what an ending does first.
pub fn first_on_ending(f: Option<fn()>) {
    match FIRST.lock() {
        Ok(mut first) => *first = f,
        Err(poisoned) => *poisoned.into_inner() = f,
    }
}

/// The code to exit with: `code`, unless a signal's ending is under way.
pub fn exit_code(code: u8) -> u8 {
    match ENDING.load(Ordering::SeqCst) {
        0 => code,
        ending => ending,
    }
}

/// Set by a command that handles SIGINT itself (the first Ctrl-C cancels, the second
/// ends); otherwise SIGINT ends the run like the other signals.
static INTERRUPTS_TAKEN: AtomicBool = AtomicBool::new(false);

/// Says that the caller handles SIGINT from now on.
pub fn take_interrupts() {
    INTERRUPTS_TAKEN.store(true, Ordering::SeqCst);
}

/// Says that SIGINT ends the run again (the command that took it is done).
pub fn give_back_interrupts() {
    INTERRUPTS_TAKEN.store(false, Ordering::SeqCst);
}

/// The signals whose default action ends the process and that may be caught. The
/// faults (SEGV, BUS, ILL, FPE, TRAP, SYS) and ABRT are left to their default: a handler
/// that returns would run the faulting code again, and the guardian cleans up after
/// them. PIPE is ignored by the Rust runtime (a closed stdout is `pipes.rs`'s).
fn terminating_signals() -> Vec<i32> {
    let mut signals = vec![
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGTERM,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGVTALRM,
        libc::SIGPROF,
        libc::SIGIO,
        libc::SIGPWR,
        libc::SIGSTKFLT,
        libc::SIGXCPU,
        libc::SIGXFSZ,
    ];
    signals.extend(libc::SIGRTMIN()..=libc::SIGRTMAX());
    signals
}

/// Watches every terminating signal for the whole run, on a thread of its own: each
/// cleans up and exits with 128 + its number. Registered before any work starts, so a
/// signal is never lost to its default action (which would leave MCP servers and
/// background jobs behind).
pub fn watch_termination() {
    let mut signals = match signal_hook::iterator::Signals::new(terminating_signals()) {
        Ok(signals) => signals,
        Err(e) => {
            tracing::warn!("cannot watch the terminating signals: {e}");
            return;
        }
    };
    let watcher = std::thread::Builder::new()
        .name("toolbelt-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                if signal == libc::SIGINT && INTERRUPTS_TAKEN.load(Ordering::SeqCst) {
                    continue;
                }
                let name = signal_hook::low_level::signal_name(signal)
                    .map_or_else(|| format!("signal {signal}"), str::to_string);
                // Not the print macros: a closed stderr must not turn into another ending.
                let _ = writeln!(
                    std::io::stderr(),
                    "toolbelt: {name}; ending every process it started"
                );
                end_now(signal_exit(signal));
            }
        });
    if let Err(e) = watcher {
        tracing::warn!("cannot start the signal thread: {e}");
    }
}
