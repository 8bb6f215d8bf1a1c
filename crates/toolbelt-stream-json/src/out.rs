//! Standard output and error of a stream-JSON session. A closed pipe means the client is
//! gone: the process's own handler decides what then happens (the binary ends quietly,
//! see its `pipes.rs`); without one the write is dropped.

use std::io::{self, Write};
use std::sync::OnceLock;

static ON_CLOSED: OnceLock<fn()> = OnceLock::new();

/// Calls `handler` when stdout or stderr turns out to be a closed pipe. Set once, first
/// wins.
pub fn on_closed_output(handler: fn()) {
    let _ = ON_CLOSED.set(handler);
}

/// A write's result: a broken pipe goes to the handler, other errors are dropped (a
/// message that cannot be shown is no reason to stop).
pub(crate) fn check<T>(result: io::Result<T>) {
    if let Err(e) = result
        && e.kind() == io::ErrorKind::BrokenPipe
        && let Some(handler) = ON_CLOSED.get()
    {
        handler();
    }
}

/// One line on stderr, `toolbelt: ` before it.
pub(crate) fn say(text: &str) {
    check(writeln!(io::stderr().lock(), "toolbelt: {text}"));
}
