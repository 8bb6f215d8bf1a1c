//! The stdio server's input: every request read is answered, also when the client
//! closes its end right after sending it, and a request too large to read is answered
//! with an error that names the limit.
//!
//! rmcp's service loop ends the moment its input ends, and drops the answers of the
//! requests still being handled: `printf '<initialize>\n<initialized>\n<tools/list>\n' |
//! toolbelt mcp serve` printed no answer to `tools/list`. So [`Input`] holds the end of
//! the input back until every request it passed on was answered (or cancelled by the
//! client: rmcp drops those answers). It knows which requests it passed on by reading
//! each line as rmcp will (a line rmcp cannot read is not waited for), and which were
//! answered from what [`Answers`] sees written. A question the server asks the client
//! (elicitation) while input has ended can never be answered, so then the end is let
//! through at once, as before (rmcp still waits a few seconds for answers).
//!
//! rmcp drops a line longer than its limit with a log line and no answer, so a client
//! waits forever. Lines longer than [`MAX_MESSAGE_BYTES`] are therefore never passed
//! on: they are skipped to their end and answered here with a JSON-RPC error naming
//! the limit (with the request's id when its first or last bytes show it), and the
//! server keeps serving.

use std::collections::HashSet;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::coalesce::Injector;

/// The longest message read (rmcp's own line limit): a write of a few MiB fits, a
/// 50 MB request is answered with an error.
pub(super) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// Bytes of an oversized line kept at each end to find its id.
const ID_WINDOW: usize = 4096;

#[derive(Default)]
struct State {
    /// Ids (as JSON text) of requests passed on and not answered or cancelled.
    open: HashSet<String>,
    /// Ids of the server's own requests to the client (a question) not yet answered.
    asked: HashSet<String>,
    /// The input has ended.
    ended: bool,
    /// The input's reader, waiting at the end of the input for `open` to empty.
    waiting: Option<Waker>,
}

impl State {
    /// Whether the end of the input may reach rmcp: every request was answered, or a
    /// question to the client is open, which a client that closed its end can never
    /// answer (its call would wait out the question's time limit).
    fn may_end(&self) -> bool {
        self.open.is_empty() || !self.asked.is_empty()
    }

    fn wake_if_done(&mut self) {
        if self.ended
            && self.may_end()
            && let Some(waker) = self.waiting.take()
        {
            waker.wake();
        }
    }
}

/// The requests read and not yet answered, shared by [`Input`] and [`Answers`].
#[derive(Default)]
pub(super) struct Pending {
    state: Mutex<State>,
}

impl Pending {
    fn state(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// A line passed on to rmcp.
    fn read(&self, line: &[u8]) {
        let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(line) else {
            return;
        };
        match message {
            JsonRpcMessage::Request(request) => {
                self.state().open.insert(id_text(&request.id));
            }
            JsonRpcMessage::Notification(notification) => {
                if let rmcp::model::ClientNotification::CancelledNotification(cancelled) =
                    notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.settle(&id_text(id));
                }
            }
            JsonRpcMessage::Response(response) => {
                self.state().asked.remove(&id_text(&response.id));
            }
            JsonRpcMessage::Error(error) => {
                if let Some(id) = &error.id {
                    self.state().asked.remove(&id_text(id));
                }
            }
        }
    }

    /// A line the server wrote: an answer settles its request.
    fn wrote(&self, line: &[u8]) {
        #[derive(serde::Deserialize)]
        struct Probe {
            id: Option<serde_json::Value>,
            method: Option<serde::de::IgnoredAny>,
        }
        match serde_json::from_slice::<Probe>(line) {
            Ok(Probe {
                id: Some(id),
                method: None,
            }) => self.settle(&id.to_string()),
            Ok(Probe {
                id: Some(id),
                method: Some(_),
            }) => {
                let mut state = self.state();
                state.asked.insert(id.to_string());
                state.wake_if_done();
            }
            _ => {}
        }
    }

    fn settle(&self, id: &str) {
        let mut state = self.state();
        if state.open.remove(id) {
            state.wake_if_done();
        }
    }
}

fn id_text(id: &rmcp::model::RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

/// The input given to rmcp (see the module documentation).
pub(super) struct Input<R> {
    inner: R,
    pending: Arc<Pending>,
    answer: Injector,
    /// The line being read.
    line: Vec<u8>,
    /// Bytes ready for rmcp: whole lines.
    ready: Vec<u8>,
    ready_at: usize,
    /// Skipping an oversized line: its first bytes, its last bytes, its length.
    skipping: Option<Oversized>,
    ended: bool,
}

struct Oversized {
    head: Vec<u8>,
    tail: Vec<u8>,
    len: usize,
}

impl<R> Input<R> {
    /// `answer` writes the errors for oversized lines; `pending` is shared with the
    /// [`Answers`] around the output.
    pub(super) fn new(inner: R, pending: Arc<Pending>, answer: Injector) -> Self {
        Input {
            inner,
            pending,
            answer,
            line: Vec::new(),
            ready: Vec::new(),
            ready_at: 0,
            skipping: None,
            ended: false,
        }
    }

    /// Takes the bytes read: whole lines become ready, an oversized one is skipped.
    fn take(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            let (part, rest) = match newline {
                Some(at) => (&bytes[..at], &bytes[at + 1..]),
                None => (bytes, &[][..]),
            };
            bytes = rest;
            if let Some(skipping) = &mut self.skipping {
                skipping.len += part.len();
                skipping.tail.extend_from_slice(part);
                let over = skipping.tail.len().saturating_sub(ID_WINDOW);
                skipping.tail.drain(..over);
            } else if self.line.len() + part.len() >= MAX_MESSAGE_BYTES {
                let len = self.line.len() + part.len();
                let mut head = std::mem::take(&mut self.line);
                head.extend_from_slice(&part[..part.len().min(ID_WINDOW)]);
                head.truncate(ID_WINDOW);
                let tail = part[part.len().saturating_sub(ID_WINDOW)..].to_vec();
                self.skipping = Some(Oversized { head, tail, len });
            } else {
                self.line.extend_from_slice(part);
            }
            if newline.is_some() {
                self.end_line();
            }
        }
    }

    fn end_line(&mut self) {
        if let Some(skipped) = self.skipping.take() {
            self.answer.push(&oversized_answer(&skipped));
            return;
        }
        let line = std::mem::take(&mut self.line);
        self.pending.read(trim_cr(&line));
        if self.ready_at == self.ready.len() {
            self.ready.clear();
            self.ready_at = 0;
        }
        self.ready.extend_from_slice(&line);
        self.ready.push(b'\n');
    }
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The JSON-RPC error for a skipped line, with the request's id when it shows.
fn oversized_answer(skipped: &Oversized) -> Vec<u8> {
    let id = find_id(&skipped.head)
        .or_else(|| find_id(&skipped.tail))
        .unwrap_or(serde_json::Value::Null);
    let message = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32600,
            "message": format!(
                "the request is {} bytes; toolbelt mcp serve reads messages of at most {MAX_MESSAGE_BYTES} bytes ({} MiB), so it was not read. Send less in one request (write a large file in parts).",
                skipped.len,
                MAX_MESSAGE_BYTES / (1024 * 1024)
            ),
        }
    });
    let mut bytes = message.to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

/// The value of a top-level `"id"` key in (a window of) a JSON object: a number or a
/// string that follows `"id":` at nesting depth 1 in `head`, or in a tail window the
/// last `"id":` whose value ends the object.
fn find_id(window: &[u8]) -> Option<serde_json::Value> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (at, &b) in window.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' if depth == 1 && window[at..].starts_with(b"\"id\"") => {
                if let Some(id) = value_after_key(&window[at + 4..]) {
                    return Some(id);
                }
                in_string = true;
            }
            b'"' => in_string = true,
            _ => {}
        }
    }
    // A tail window starts mid-object: take the last `"id":` whose value closes it.
    let at = window.windows(5).rposition(|w| w == b"\"id\":")?;
    let rest = &window[at + 4..];
    let id = value_after_key(rest)?;
    let after = rest.iter().position(|&b| b == b'}')?;
    rest[after + 1..]
        .iter()
        .all(u8::is_ascii_whitespace)
        .then_some(id)
}

/// `: 7` or `: "abc"` at the start of `rest`, as a JSON value.
fn value_after_key(rest: &[u8]) -> Option<serde_json::Value> {
    let text = std::str::from_utf8(&rest[..rest.len().min(200)])
        .ok()
        .or_else(|| {
            // The window may cut a multi-byte character at its end.
            let valid = std::str::from_utf8(&rest[..rest.len().min(200)])
                .err()?
                .valid_up_to();
            std::str::from_utf8(&rest[..valid]).ok()
        })?;
    let value = text.trim_start().strip_prefix(':')?.trim_start();
    let end = if let Some(string) = value.strip_prefix('"') {
        string.find('"')? + 2
    } else {
        value
            .find(|c: char| !(c.is_ascii_digit() || c == '-'))
            .unwrap_or(value.len())
    };
    match serde_json::from_str::<serde_json::Value>(&value[..end]).ok()? {
        id @ (serde_json::Value::Number(_) | serde_json::Value::String(_)) => Some(id),
        _ => None,
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Input<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.ready_at < this.ready.len() {
                let n = buf.remaining().min(this.ready.len() - this.ready_at);
                buf.put_slice(&this.ready[this.ready_at..this.ready_at + n]);
                this.ready_at += n;
                return Poll::Ready(Ok(()));
            }
            if this.ended {
                // A last line without a newline is rmcp's to judge (it reads it too).
                if !this.line.is_empty() {
                    this.end_line();
                    continue;
                }
                let mut state = this.pending.state();
                state.ended = true;
                if state.may_end() {
                    return Poll::Ready(Ok(()));
                }
                state.waiting = Some(cx.waker().clone());
                return Poll::Pending;
            }
            let mut chunk = [0u8; 64 * 1024];
            let mut read = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) if read.filled().is_empty() => {
                    this.ended = true;
                    if this.skipping.is_some() {
                        this.end_line();
                    }
                }
                Poll::Ready(Ok(())) => this.take(read.filled()),
            }
        }
    }
}

/// The output given to rmcp: passes every byte on and tells [`Pending`] which requests
/// were answered.
pub(super) struct Answers<W> {
    inner: W,
    pending: Arc<Pending>,
    /// The line being written (rmcp writes whole lines, but need not).
    line: Vec<u8>,
}

impl<W> Answers<W> {
    pub(super) fn new(inner: W, pending: Arc<Pending>) -> Self {
        Answers {
            inner,
            pending,
            line: Vec::new(),
        }
    }

    fn saw(&mut self, mut bytes: &[u8]) {
        while let Some(at) = bytes.iter().position(|&b| b == b'\n') {
            if self.line.is_empty() {
                self.pending.wrote(&bytes[..at]);
            } else {
                self.line.extend_from_slice(&bytes[..at]);
                let line = std::mem::take(&mut self.line);
                self.pending.wrote(&line);
            }
            bytes = &bytes[at + 1..];
        }
        self.line.extend_from_slice(bytes);
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Answers<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let written = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = written {
            this.saw(&buf[..n]);
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_of_an_oversized_request_is_found_at_either_end() {
        let head = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"id":"#;
        assert_eq!(find_id(head), Some(serde_json::json!(7)));
        let head = br#"{"jsonrpc":"2.0","method":"tools/call","params":{"id":3,"content":"xxxx"#;
        assert_eq!(find_id(head), None);
        let tail = br#"xxxxxxx"}},"jsonrpc":"2.0","id":"req-9"}"#;
        assert_eq!(find_id(tail), Some(serde_json::json!("req-9")));
    }
}
