//! Every way the program ends runs the same cleanup: a normal return, Ctrl-C twice,
//! SIGTERM and SIGHUP. The cleanup is [`toolbelt_process::end_descendants_blocking`]:
//! toolbelt is a child subreaper, so every process it started (MCP servers, background
//! jobs, whatever a call left) is below it, and all of them are ended except the jobs
//! the settings keep (`tools.shell.killBackgroundOnExit: false`).
//!
//! Why not rely on `Drop`: a signal's default action and `std::process::exit` run no
//! destructors, and a session's values may be inside tasks that never finish. The sweep
//! works from `/proc` and needs nothing but the process itself.

use std::sync::atomic::{AtomicU8, Ordering};

use toolbelt_process::{KILL_GRACE, become_subreaper, end_descendants_blocking};

/// Exit code for a run ended by a signal: 128 + its number, as shells report it.
const fn signal_exit(signal: i32) -> u8 {
    (128 + signal) as u8
}

/// Makes toolbelt the subreaper of everything it starts. First thing in `main`, before
/// any process is spawned, so no orphan escapes to init.
pub fn start() {
    if !become_subreaper() {
        tracing::warn!(
            "cannot become a child subreaper: processes that leave their parent may outlive toolbelt"
        );
    }
}

/// Ends every process below toolbelt (the normal end, too).
pub fn clean_up() {
    end_descendants_blocking(KILL_GRACE);
}

/// The exit code of an ending already under way (0: none). The signal's cleanup ends
/// the running call too, so `main` may reach its own end first; it must then exit with
/// the signal's code, not the call's.
static ENDING: AtomicU8 = AtomicU8::new(0);

/// Cleans up and exits now with `code`.
pub fn end_now(code: u8) -> ! {
    ENDING.store(code, Ordering::SeqCst);
    clean_up();
    std::process::exit(i32::from(code))
}

/// The code to exit with: `code`, unless a signal's ending is under way.
pub fn exit_code(code: u8) -> u8 {
    match ENDING.load(Ordering::SeqCst) {
        0 => code,
        ending => ending,
    }
}

/// Watches SIGTERM and SIGHUP for the whole run: either cleans up and exits with 143 or
/// 129. Registered before any work starts, so a signal is never lost to its default
/// action (which would leave MCP servers and background jobs behind).
pub fn watch_termination() {
    use tokio::signal::unix::{SignalKind, signal};
    let (term, hangup) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) {
        (Ok(term), Ok(hangup)) => (term, hangup),
        (Err(e), _) | (_, Err(e)) => {
            tracing::warn!("cannot watch SIGTERM and SIGHUP: {e}");
            return;
        }
    };
    tokio::spawn(async move {
        let (mut term, mut hangup) = (term, hangup);
        let (name, number) = tokio::select! {
            _ = term.recv() => ("SIGTERM", 15),
            _ = hangup.recv() => ("SIGHUP", 1),
        };
        eprintln!("toolbelt: {name}; ending every process it started");
        // The sweep blocks; a runtime worker may block this once, at the very end.
        tokio::task::block_in_place(|| end_now(signal_exit(number)));
    });
}
