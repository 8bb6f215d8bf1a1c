//! The stdio server's output, written by a task of its own: the answers that finish in
//! one turn of the runtime go out in one write.
//!
//! rmcp writes and flushes each message under its writer lock, one `write` (and one
//! wake-up of the client) per answer. Here a message is copied into a buffer and the
//! flush returns at once; the writer task, woken by the first message, runs after the
//! tasks already ready (the runtime runs them in order), so every answer they produce
//! joins the same write. With many requests in flight that is one write for many
//! answers; with one, it costs one task poll.
//!
//! Nothing is lost: [`Drained::wait`] returns when every byte was written (the server
//! awaits it before it returns), and a write error is given to every later write. The
//! buffer is bounded ([`LIMIT`]): a client that stops reading holds the next message
//! back, as a full pipe would.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;

/// Bytes buffered before a write waits for the writer task.
pub(super) const LIMIT: usize = 4 * 1024 * 1024;

#[derive(Default)]
struct State {
    buf: Vec<u8>,
    /// The writer task holds bytes it took from `buf` and has not written yet.
    writing: bool,
    /// The first write error, given to every later write.
    error: Option<(io::ErrorKind, String)>,
    /// No more messages: the writer task ends once `buf` is empty.
    closed: bool,
    /// Writes waiting for room in `buf`.
    waiting: Vec<Waker>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Something for the writer task: bytes, or the end.
    work: Notify,
    /// The writer task wrote what it had.
    wrote: Notify,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

/// The output given to rmcp: an `AsyncWrite` that buffers and hands the bytes on.
pub(super) struct Output {
    shared: Arc<Shared>,
}

/// Waits until everything given to an [`Output`] was written (or could not be).
pub(super) struct Drained {
    shared: Arc<Shared>,
}

impl Output {
    /// Starts the writer task over `inner`; must run inside a tokio runtime.
    pub(super) fn new<W: AsyncWrite + Unpin + Send + 'static>(inner: W) -> (Output, Drained) {
        let shared = Arc::new(Shared::default());
        tokio::spawn(write_out(shared.clone(), inner));
        (
            Output {
                shared: shared.clone(),
            },
            Drained { shared },
        )
    }
}

/// A second way into the output, for messages the server writes itself rather than
/// through rmcp (see `stdio_input`): each is appended whole, so it lands between rmcp's
/// messages (rmcp gives [`Output`] whole lines in each write).
#[derive(Clone)]
pub(super) struct Injector {
    shared: Arc<Shared>,
}

impl Output {
    /// An [`Injector`] into this output.
    pub(super) fn injector(&self) -> Injector {
        Injector {
            shared: self.shared.clone(),
        }
    }
}

impl Injector {
    /// Appends one whole message (past [`LIMIT`] if need be: it is small, and the
    /// reader that calls this cannot wait).
    pub(super) fn push(&self, message: &[u8]) {
        let mut state = self.shared.state();
        if state.closed || state.error.is_some() {
            return;
        }
        let first = state.buf.is_empty();
        state.buf.extend_from_slice(message);
        drop(state);
        if first {
            self.shared.work.notify_one();
        }
    }
}

impl Drained {
    /// Returns when every byte given so far was written, or writing failed.
    pub(super) async fn wait(&self) {
        loop {
            let wrote = self.shared.wrote.notified();
            {
                let state = self.shared.state();
                if state.error.is_some() || (state.buf.is_empty() && !state.writing) {
                    return;
                }
            }
            wrote.await;
        }
    }
}

async fn write_out<W: AsyncWrite + Unpin>(shared: Arc<Shared>, mut inner: W) {
    loop {
        let work = shared.work.notified();
        let chunk = {
            let mut state = shared.state();
            if state.buf.is_empty() {
                if state.closed {
                    break;
                }
                None
            } else {
                state.writing = true;
                for waker in state.waiting.drain(..) {
                    waker.wake();
                }
                Some(std::mem::take(&mut state.buf))
            }
        };
        let Some(chunk) = chunk else {
            work.await;
            continue;
        };
        let written = match inner.write_all(&chunk).await {
            Ok(()) => inner.flush().await,
            Err(e) => Err(e),
        };
        {
            let mut state = shared.state();
            state.writing = false;
            if let Err(e) = written {
                state.error = Some((e.kind(), e.to_string()));
                for waker in state.waiting.drain(..) {
                    waker.wake();
                }
                drop(state);
                shared.wrote.notify_waiters();
                return;
            }
        }
        shared.wrote.notify_waiters();
    }
    let _ = inner.shutdown().await;
    shared.wrote.notify_waiters();
}

impl AsyncWrite for Output {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let mut state = self.shared.state();
        if let Some((kind, message)) = &state.error {
            return Poll::Ready(Err(io::Error::new(*kind, message.clone())));
        }
        if state.closed {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the output was shut down",
            )));
        }
        if !state.buf.is_empty() && state.buf.len() + buf.len() > LIMIT {
            state.waiting.push(cx.waker().clone());
            return Poll::Pending;
        }
        let first = state.buf.is_empty();
        state.buf.extend_from_slice(buf);
        drop(state);
        if first {
            self.shared.work.notify_one();
        }
        Poll::Ready(Ok(buf.len()))
    }

    /// The bytes are with the writer task, which writes them after the tasks ready now.
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &self.shared.state().error {
            Some((kind, message)) => Poll::Ready(Err(io::Error::new(*kind, message.clone()))),
            None => Poll::Ready(Ok(())),
        }
    }

    /// No more messages; what is buffered is still written ([`Drained::wait`]).
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.shared.state().closed = true;
        self.shared.work.notify_one();
        Poll::Ready(Ok(()))
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        self.shared.state().closed = true;
        self.shared.work.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test(flavor = "current_thread")]
    async fn messages_of_one_turn_go_out_in_one_write_and_nothing_is_lost() {
        let (inner, mut peer) = tokio::io::duplex(64 * 1024);
        let (mut out, drained) = Output::new(inner);
        for i in 0..100 {
            out.write_all(format!("{{\"id\":{i}}}\n").as_bytes())
                .await
                .unwrap();
            out.flush().await.unwrap();
        }
        drop(out);
        drained.wait().await;
        let mut got = String::new();
        peer.read_to_string(&mut got).await.unwrap();
        let ids: Vec<usize> = got
            .lines()
            .map(|l| l[6..l.len() - 1].parse().unwrap())
            .collect();
        assert_eq!(ids, (0..100).collect::<Vec<_>>());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_reader_that_stops_holds_writes_back_at_the_limit_and_an_error_is_given_on() {
        let (inner, peer) = tokio::io::duplex(1024);
        let (mut out, drained) = Output::new(inner);
        let big = vec![b'x'; LIMIT / 2 + 1];
        out.write_all(&big).await.unwrap();
        // The writer task is stuck on the full pipe; the buffer takes one more half...
        tokio::task::yield_now().await;
        out.write_all(&big).await.unwrap();
        // ...and the next write waits for room.
        let third =
            tokio::time::timeout(std::time::Duration::from_millis(200), out.write_all(&big)).await;
        assert!(third.is_err(), "the write went through past the limit");
        // The reader goes away: the writer's error reaches the writes.
        drop(peer);
        drained.wait().await;
        let err = out.write_all(b"more").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }
}
