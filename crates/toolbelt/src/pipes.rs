//! Standard output and error: a closed pipe ends toolbelt quietly, and log lines are
//! coloured only on a terminal.
//!
//! Rust starts every program with SIGPIPE ignored, so a write to a pipe whose reader
//! has gone (`toolbelt … | head -c 10`) fails with `EPIPE`, and `println!` turns that
//! failure into a panic: a panic message (if stderr still works) and exit 101. Setting
//! SIGPIPE back to its default would end toolbelt as `cat` ends, but also on a write to
//! *any* dead pipe, such as the stdin of an MCP server that crashed, which must be an
//! error the session survives. So SIGPIPE stays ignored and the two standard streams are
//! handled where they are written:
//!
//! - The `print!`, `println!`, `eprint!` and `eprintln!` macros of this crate are the
//!   ones below. `main.rs` declares this module first, so they shadow the standard
//!   macros in every module of the binary, including code added later. They write
//!   through [`write_stdout`] / [`write_stderr`].
//! - `tracing` writes through [`LogWriter`].
//! - Code that writes to a locked stream with `writeln!` passes the result to [`check`].
//!
//! On a broken pipe all of them end the process at once (after the common cleanup,
//! `ending.rs`) with [`EXIT_BROKEN_PIPE`]
//! (128 + SIGPIPE, the status a shell shows for a program that SIGPIPE ended), writing
//! nothing more: whoever read the output is gone, and a closed stderr in
//! `2>&1 | head` is the same pipe as stdout. Other write errors (a full disk behind a
//! redirection) are dropped: a message that cannot be shown is no reason to stop.

use std::ffi::OsStr;
use std::io::{self, IsTerminal, Write};

/// Exit status when standard output or error is a closed pipe.
pub const EXIT_BROKEN_PIPE: u8 = 141;

/// `print!` that ends quietly on a closed stdout (unused today; kept so that code added
/// later cannot reach the standard one).
#[allow(unused_macros)]
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::pipes::write_stdout(format_args!($($arg)*))
    };
}

/// `println!` that ends quietly on a closed stdout.
macro_rules! println {
    () => {
        $crate::pipes::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::pipes::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` that ends quietly on a closed stderr.
macro_rules! eprint {
    ($($arg:tt)*) => {
        $crate::pipes::write_stderr(format_args!($($arg)*))
    };
}

/// `eprintln!` that ends quietly on a closed stderr.
macro_rules! eprintln {
    () => {
        $crate::pipes::write_stderr(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::pipes::write_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Writes to stdout; a closed pipe ends the process quietly.
pub fn write_stdout(args: std::fmt::Arguments<'_>) {
    let mut out = io::stdout().lock();
    check(out.write_fmt(args));
}

/// Writes to stderr; a closed pipe ends the process quietly.
pub fn write_stderr(args: std::fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    check(err.write_fmt(args));
}

/// The result of a write to stdout or stderr: a broken pipe ends the process quietly,
/// other errors are dropped.
pub fn check<T>(result: io::Result<T>) {
    if let Err(e) = result
        && e.kind() == io::ErrorKind::BrokenPipe
    {
        crate::ending::end_now(EXIT_BROKEN_PIPE);
    }
}

/// Where log lines go: stderr, with the broken-pipe rule of [`check`].
pub struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Log lines can quote what a library saw (an rmcp error holds the request URL):
        // secrets the settings expanded and URL credentials are masked here, in the one
        // place every log line passes.
        let text = String::from_utf8_lossy(buf);
        let masked = toolbelt_config::redact::redact(&text);
        match io::stderr().write_all(masked.as_bytes()) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                crate::ending::end_now(EXIT_BROKEN_PIPE)
            }
            Err(e) => Err(e),
            Ok(()) => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

/// Whether log lines get ANSI colours: only on a terminal, and never when `NO_COLOR`
/// is set to anything but the empty string (no-color.org).
pub fn log_colours(stderr_is_terminal: bool, no_color: Option<&OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(OsStr::is_empty)
}

/// The tracing subscriber: quiet unless `TOOLBELT_LOG` asks (any tracing filter), on
/// stderr, coloured by [`log_colours`]. By default rmcp's own log is off: it dumps its
/// raw error on every failed request while a server is down, and the MCP client already
/// says that once per outage, in a sentence.
pub fn init_tracing() {
    let filter = std::env::var("TOOLBELT_LOG").unwrap_or_else(|_| "warn,rmcp=off".to_string());
    let colours = log_colours(
        io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    );
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(|| LogWriter)
        .with_ansi(colours)
        // Its report of a failed write is an `eprintln!` of the standard library's.
        .log_internal_errors(false)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_only_on_a_terminal_without_no_color() {
        let cases = [
            (true, None, true),
            (false, None, false),
            (true, Some("1"), false),
            (true, Some("false"), false),
            (true, Some(""), true),
            (false, Some(""), false),
        ];
        for (terminal, no_color, want) in cases {
            assert_eq!(
                log_colours(terminal, no_color.map(OsStr::new)),
                want,
                "{terminal} {no_color:?}"
            );
        }
    }
}
