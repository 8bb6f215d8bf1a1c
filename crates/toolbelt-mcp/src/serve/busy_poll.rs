//! Busy polling for the stdio server: right after it has written a message, the idle
//! server watches its input for a short window before it sleeps.
//!
//! A client that sends its next request as soon as it has read an answer (a script, a
//! batch of calls, an agent replaying tool calls) finds the server still awake, so the
//! request is read at once instead of after a wake-up: on the project's 2-core virtual
//! machine a sleeping thread takes 50–150 µs to wake, as much as the whole call
//! otherwise costs (BENCHMARKS.md, `bench/mcp_serve.sh`). The cost is bounded: at most
//! one window of CPU per message written, and none while the server is busy (the
//! runtime only parks when it has nothing to run) or once the window after the last
//! message has passed (a client that is thinking, a long command without progress
//! output). `--busy-poll-us 0` turns it off.
//!
//! Two halves meet through process-wide state, since the runtime's park hook is set
//! before the server exists: [`Watched`] wraps the output and records when a message
//! went out; [`before_park`] is the runtime's `on_thread_park` hook.

use std::io;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::AsyncWrite;

/// Microseconds since [`origin`] at the last write, plus one (0: nothing written yet).
static LAST_WRITE: AtomicU64 = AtomicU64::new(0);

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

fn now_us() -> u64 {
    origin().elapsed().as_micros().min(u128::from(u64::MAX - 1)) as u64
}

/// The server's output, noting when something was written.
pub(super) struct Watched<W> {
    inner: W,
}

impl<W> Watched<W> {
    /// Wraps `inner`.
    pub(super) fn new(inner: W) -> Self {
        Watched { inner }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Watched<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.get_mut().inner).poll_write(cx, buf);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            LAST_WRITE.store(now_us() + 1, Ordering::Relaxed);
        }
        written
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            LAST_WRITE.store(now_us() + 1, Ordering::Relaxed);
        }
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// The runtime's park hook: when the last message went out less than `window` ago,
/// waits (spinning, without sleeping) until standard input is readable or the window
/// has passed. The runtime then parks as usual and finds the input ready at once.
pub fn before_park(window: Duration) {
    let last = LAST_WRITE.load(Ordering::Relaxed);
    if last == 0 || window.is_zero() {
        return;
    }
    let deadline = Duration::from_micros(last - 1) + window;
    let stdin = io::stdin();
    let fd = stdin.as_fd();
    let zero = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    while origin().elapsed() < deadline {
        let mut fds = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN,
        )];
        // Readable, closed or broken: the runtime's own poll will see it.
        if !matches!(rustix::event::poll(&mut fds, Some(&zero)), Ok(0)) {
            return;
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_write_opens_the_window_and_the_hook_returns_when_it_has_passed() {
        let mut out = Watched::new(Vec::new());
        let before = LAST_WRITE.load(Ordering::Relaxed);
        out.write_all(b"{}\n").await.unwrap();
        let after = LAST_WRITE.load(Ordering::Relaxed);
        assert!(after > 0 && after >= before, "{before} -> {after}");
        assert_eq!(out.inner, b"{}\n");
        // Whatever standard input is here (closed, a terminal, a pipe with nothing in
        // it), the hook never waits longer than its window after the write.
        let start = Instant::now();
        before_park(Duration::from_millis(20));
        assert!(start.elapsed() < Duration::from_secs(2));
        // A window that has passed does not wait at all.
        let start = Instant::now();
        before_park(Duration::ZERO);
        assert!(start.elapsed() < Duration::from_millis(100));
    }
}
