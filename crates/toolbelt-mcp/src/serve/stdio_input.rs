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
        // The common line, a request: only its id is needed here. Parsed whole, a line
        // tries every kind of request in turn (rmcp's `ClientRequest` is untagged, and
        // its last kind takes any method), building an error for each that does not
        // fit: a tenth of a small call's time spent again after rmcp's own parse (issue
        // 49). A request is what this probe reads: the version, an id and a method, as
        // that last kind accepts them.
        #[derive(serde::Deserialize)]
        struct RequestProbe<'a> {
            #[allow(dead_code)]
            jsonrpc: rmcp::model::JsonRpcVersion2_0,
            id: rmcp::model::RequestId,
            #[serde(borrow)]
            #[allow(dead_code)]
            method: std::borrow::Cow<'a, str>,
        }
        if let Ok(request) = serde_json::from_slice::<RequestProbe>(line) {
            self.state().open.insert(id_text(&request.id));
            return;
        }
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
        match top_level_id(line) {
            Some(TopLevel {
                id: Some(id),
                method: false,
            }) => match std::str::from_utf8(id) {
                Ok(id) => self.settle(id),
                Err(_) => self.wrote_parsed(line),
            },
            Some(TopLevel {
                id: Some(id),
                method: true,
            }) => {
                let mut state = self.state();
                state.asked.insert(String::from_utf8_lossy(id).into_owned());
                state.wake_if_done();
            }
            Some(TopLevel { id: None, .. }) => {}
            None => self.wrote_parsed(line),
        }
    }

    /// [`Pending::wrote`] by a whole parse, for a line the quick reading cannot judge.
    fn wrote_parsed(&self, line: &[u8]) {
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

/// What [`top_level_id`] found: the raw text of the `id` (`None` when absent or null)
/// and whether a `method` key is there.
struct TopLevel<'a> {
    id: Option<&'a [u8]>,
    method: bool,
}

/// The top-level `id` and `method` of a JSON object as the server's serializer writes it
/// (its answers are a few KiB of one string: a full parse was a tenth of a small call's
/// time, issue 49). The raw id is what `serde_json` makes of the same value (a number
/// or a string with its quotes and escapes). `None` for anything out of the ordinary (a
/// key with an escape, a repeated key, a line that does not end its object), which the
/// caller then parses.
fn top_level_id(line: &[u8]) -> Option<TopLevel<'_>> {
    let mut at = skip_ws(line, 0);
    if line.get(at) != Some(&b'{') {
        return None;
    }
    let mut found = TopLevel {
        id: None,
        method: false,
    };
    let (mut seen_id, mut seen_method) = (false, false);
    at = skip_ws(line, at + 1);
    if line.get(at) == Some(&b'}') {
        return Some(found);
    }
    loop {
        let key_end = string_end(line, at)?;
        let key = &line[at + 1..key_end - 1];
        if key.contains(&b'\\') {
            return None;
        }
        at = skip_ws(line, key_end);
        if line.get(at) != Some(&b':') {
            return None;
        }
        let start = skip_ws(line, at + 1);
        let end = value_end(line, start)?;
        match key {
            b"id" if seen_id => return None,
            b"id" => {
                seen_id = true;
                let raw = &line[start..end];
                found.id = (raw != b"null").then_some(raw);
            }
            b"method" if seen_method => return None,
            b"method" => {
                seen_method = true;
                found.method = true;
            }
            _ => {}
        }
        at = skip_ws(line, end);
        match line.get(at) {
            Some(b',') => at = skip_ws(line, at + 1),
            Some(b'}') => return skip_ws(line, at + 1).eq(&line.len()).then_some(found),
            _ => return None,
        }
    }
}

fn skip_ws(line: &[u8], mut at: usize) -> usize {
    while line
        .get(at)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
    {
        at += 1;
    }
    at
}

/// The index after the closing quote of the string that starts at `at`.
fn string_end(line: &[u8], at: usize) -> Option<usize> {
    if line.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', line.get(i..)?)?;
        if line[i] == b'"' {
            return Some(i + 1);
        }
        i += 2;
    }
}

/// The index after the value that starts at `at` (a string, an object or array with
/// everything in it, or a number, `true`, `false`, `null`).
fn value_end(line: &[u8], at: usize) -> Option<usize> {
    match line.get(at)? {
        b'"' => string_end(line, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match line.get(i)? {
                    b'"' => {
                        i = string_end(line, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let len = line[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))
                .unwrap_or(line.len() - at);
            (len > 0).then_some(at + len)
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
    /// Where reads land, kept between reads (zeroing 64 KiB on every read was a tenth of
    /// a small call's time, issue 49).
    chunk: Box<[u8]>,
}

/// Bytes read from the input at a time.
const CHUNK: usize = 64 * 1024;

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
            chunk: Box::default(),
        }
    }

    /// Takes the bytes read: whole lines become ready, an oversized one is skipped.
    fn take(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let newline = memchr::memchr(b'\n', bytes);
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
            if this.chunk.is_empty() {
                this.chunk = vec![0u8; CHUNK].into_boxed_slice();
            }
            let mut chunk = std::mem::take(&mut this.chunk);
            let mut read = ReadBuf::new(&mut chunk);
            let polled = Pin::new(&mut this.inner).poll_read(cx, &mut read);
            let filled = read.filled().len();
            match polled {
                Poll::Pending => {}
                Poll::Ready(Err(_)) => {}
                Poll::Ready(Ok(())) if filled == 0 => {
                    this.ended = true;
                    if this.skipping.is_some() {
                        this.end_line();
                    }
                }
                Poll::Ready(Ok(())) => this.take(&chunk[..filled]),
            }
            this.chunk = chunk;
            match polled {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {}
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
        while let Some(at) = memchr::memchr(b'\n', bytes) {
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

    /// The quick reading of the server's own lines agrees with a whole parse, and gives
    /// up (`None`) where it cannot be sure.
    #[test]
    fn the_quick_reading_of_an_answer_finds_what_a_parse_finds() {
        let text = "line one\n\"quoted\" {braces} [brackets] \\ end".repeat(50);
        let answer = serde_json::json!({"jsonrpc": "2.0", "id": 42,
            "result": {"content": [{"type": "text", "text": text}], "isError": false}});
        let line = serde_json::to_vec(&answer).unwrap();
        let found = top_level_id(&line).expect("an answer is read");
        assert_eq!(found.id, Some(&b"42"[..]));
        assert!(!found.method);
        let id = rmcp::model::RequestId::String("req \"7\" é".into());
        let question = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create",
            "params": {"message": "?"}});
        let line = serde_json::to_vec(&question).unwrap();
        let found = top_level_id(&line).expect("a question is read");
        assert_eq!(found.id, Some(id_text(&id).as_bytes()));
        assert!(found.method);
        let note = br#" {"jsonrpc":"2.0","method":"notifications/progress","params":{"id":3}} "#;
        let found = top_level_id(note).expect("a notification is read");
        assert!(found.id.is_none() && found.method);
        assert!(
            top_level_id(br#"{"jsonrpc":"2.0","id":null,"error":{}}"#)
                .is_some_and(|f| f.id.is_none())
        );
        for odd in [
            &br#"{"i\u0064":1,"result":{}}"#[..],
            br#"{"id":1,"id":2}"#,
            br#"{"id":1"#,
            br#"{"id":1,"result":{"a":[1,2}"#,
            b"[1]",
            br#"{"id":1} x"#,
        ] {
            assert!(
                top_level_id(odd).is_none(),
                "{}",
                String::from_utf8_lossy(odd)
            );
        }
    }
}
