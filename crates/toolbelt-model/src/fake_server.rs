//! A scripted OpenAI-compatible server on 127.0.0.1, for tests and benchmarks, that
//! checks every request it receives.
//!
//! It speaks real HTTP/1.1 over a real socket: streamed answers use chunked transfer
//! encoding and are written in small pieces (so they split inside JSON and inside tool
//! call arguments), one request per connection. Each request is answered with the next
//! [`Reply`] of the script.
//!
//! The checks, recorded as violations rather than panics so the test sees them all:
//! the path is `/v1/chat/completions`; the body is JSON with a model and messages; every
//! tool call of an assistant message is answered by exactly one `tool` message, in order,
//! before anything else is said; and the tool calls in the conversation are exactly the
//! ones this server sent (same ids, names and arguments, in order).
//!
//! Several conversations at once (an agent and its sub-agents) are told apart by
//! routes: [`FakeOpenAi::add_route`] gives a script to the conversations whose system
//! prompt or first user message contains a marker. Each route has its own script and
//! its own record of the calls it sent, so the checks hold per conversation. A
//! [`Reply::Rendezvous`] holds its answer until that many requests have reached the same
//! rendezvous: conversations that must run at the same time prove it by not timing out.
//!
//! [`Dialect::AnthropicMessages`] makes it an Anthropic Messages server instead
//! (`anthropic.rs` beside this file): the same script and checks in that API's shapes,
//! plus its own (thinking blocks sent back with their signatures).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::{ModelTurn, ToolCall};

mod anthropic;
mod chat;

pub use chat::{check_request, sse_body};

/// The wire format the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Dialect {
    /// OpenAI Chat Completions at `/v1/chat/completions`.
    #[default]
    OpenAiChat,
    /// Anthropic Messages at `/v1/messages`: named SSE events, thinking blocks (a turn's
    /// `reasoning` parts of format `anthropic`), errors in Anthropic's shape.
    AnthropicMessages,
}

/// How the server answers one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A streamed turn, written in pieces of `piece` bytes.
    Stream {
        /// The turn.
        turn: ModelTurn,
        /// Bytes per write.
        piece: usize,
    },
    /// This SSE text, exactly, then a clean end (for malformed streams).
    RawStream(String),
    /// The start of a streamed turn (`bytes` of it), then the connection is dropped.
    Drop {
        /// The turn.
        turn: ModelTurn,
        /// How many of its bytes are sent.
        bytes: usize,
    },
    /// A whole JSON response (for clients that do not stream).
    Whole(ModelTurn),
    /// Waits until `parties` requests (this one included) have reached the rendezvous
    /// `name`, then answers `then`. Not reached within ten seconds: a violation, and
    /// `then` anyway.
    Rendezvous {
        /// The rendezvous' name.
        name: String,
        /// How many requests meet there.
        parties: usize,
        /// The answer once they have.
        then: Box<Reply>,
    },
    /// `then`, after `delay` (a model's thinking time, for benchmarks).
    Delayed {
        /// How long to wait.
        delay: std::time::Duration,
        /// The answer after it.
        then: Box<Reply>,
    },
    /// The turn's first `events` server-sent events, then an error event of type `kind`
    /// (`overloaded_error`, ...) and the end of the stream.
    StreamError {
        /// The turn begun.
        turn: ModelTurn,
        /// How many of its events are sent first.
        events: usize,
        /// The error's type.
        kind: String,
        /// The error's message.
        message: String,
    },
    /// An HTTP error with a JSON error body.
    Status {
        /// The HTTP status.
        status: u16,
        /// A `Retry-After` header to send.
        retry_after: Option<String>,
        /// The error message in the body.
        message: String,
    },
}

impl Reply {
    /// A streamed `turn`, in one piece.
    pub fn turn(turn: ModelTurn) -> Reply {
        Reply::Stream { turn, piece: 7 }
    }

    /// A streamed text answer.
    pub fn text(text: &str) -> Reply {
        Reply::turn(ModelTurn {
            text: text.to_string(),
            ..Default::default()
        })
    }

    /// `then`, once `parties` requests have reached the rendezvous `name`.
    pub fn rendezvous(name: &str, parties: usize, then: Reply) -> Reply {
        Reply::Rendezvous {
            name: name.to_string(),
            parties,
            then: Box::new(then),
        }
    }

    /// An HTTP error `status` with `message`.
    pub fn status(status: u16, message: &str) -> Reply {
        Reply::Status {
            status,
            retry_after: None,
            message: message.to_string(),
        }
    }
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The request path.
    pub path: String,
    /// The `Authorization` header, if sent.
    pub authorization: Option<String>,
    /// Every header, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Value,
    /// The marker of the route that answered; `None` for the main script.
    pub route: Option<String>,
    /// When the request arrived.
    pub at: std::time::Instant,
}

/// A script for the conversations that carry `marker`.
#[derive(Default)]
struct Route {
    marker: String,
    replies: VecDeque<Reply>,
    sent_calls: Vec<ToolCall>,
    sent_thinking: Vec<Value>,
}

#[derive(Default)]
struct Shared {
    replies: VecDeque<Reply>,
    /// Answer when the script is used up; `None` records a violation and answers 500.
    fallback: Option<Reply>,
    /// Requests without tools get this and do not use a script turn (side requests of
    /// other agents, such as Qwen Code's "next speaker" check).
    side_reply: Option<Reply>,
    requests: Vec<Recorded>,
    violations: Vec<String>,
    /// Tool calls this server sent in complete answers, in order.
    sent_calls: Vec<ToolCall>,
    /// Thinking blocks it sent (Anthropic), in order.
    sent_thinking: Vec<Value>,
    dialect: Dialect,
    routes: Vec<Route>,
    /// Requests that reached each rendezvous.
    rendezvous: std::collections::HashMap<String, usize>,
}

/// The scripted server; ends when dropped.
pub struct FakeOpenAi {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeOpenAi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeOpenAi {
    /// Starts on a free port of 127.0.0.1, answering `replies` in order.
    pub async fn start(replies: Vec<Reply>) -> std::io::Result<Self> {
        Self::start_on("127.0.0.1:0", replies).await
    }

    /// Starts on `addr`, answering `replies` in order.
    pub async fn start_on(addr: &str, replies: Vec<Reply>) -> std::io::Result<Self> {
        Self::start_speaking(Dialect::OpenAiChat, addr, replies).await
    }

    /// Starts on `addr` (`127.0.0.1:0` for any free port) speaking `dialect`.
    pub async fn start_speaking(
        dialect: Dialect,
        addr: &str,
        replies: Vec<Reply>,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Mutex::new(Shared {
            replies: replies.into(),
            dialect,
            ..Default::default()
        }));
        // Bumped when a request reaches a rendezvous.
        let arrivals = Arc::new(tokio::sync::watch::Sender::new(0));
        let task = tokio::spawn(serve(listener, shared.clone(), arrivals));
        Ok(FakeOpenAi { addr, shared, task })
    }

    /// Answers the conversations whose system prompt or first user message contains
    /// `marker` from `replies` (the first matching route wins; others use the main
    /// script).
    pub fn add_route(&self, marker: &str, replies: Vec<Reply>) {
        if let Ok(mut s) = self.shared.lock() {
            s.routes.push(Route {
                marker: marker.to_string(),
                replies: replies.into(),
                sent_calls: Vec::new(),
                sent_thinking: Vec::new(),
            });
        }
    }

    /// Replies of route `marker` not used yet.
    pub fn unused_in_route(&self, marker: &str) -> usize {
        self.shared
            .lock()
            .ok()
            .and_then(|s| {
                s.routes
                    .iter()
                    .find(|r| r.marker == marker)
                    .map(|r| r.replies.len())
            })
            .unwrap_or(0)
    }

    /// What a client is given as its base URL (Anthropic's clients add `/v1` themselves).
    pub fn base_url(&self) -> String {
        match self.dialect() {
            Dialect::AnthropicMessages => format!("http://{}", self.addr),
            Dialect::OpenAiChat => format!("http://{}/v1", self.addr),
        }
    }

    fn dialect(&self) -> Dialect {
        self.shared.lock().map(|s| s.dialect).unwrap_or_default()
    }

    /// Answer with `reply` once the script is used up instead of failing.
    pub fn set_fallback(&self, reply: Reply) {
        if let Ok(mut s) = self.shared.lock() {
            s.fallback = Some(reply);
        }
    }

    /// Answer requests without tools with `reply`, outside the script.
    pub fn set_side_reply(&self, reply: Reply) {
        if let Ok(mut s) = self.shared.lock() {
            s.side_reply = Some(reply);
        }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared
            .lock()
            .map(|s| s.requests.clone())
            .unwrap_or_default()
    }

    /// The last request received, if any.
    pub fn last_request(&self) -> Option<Recorded> {
        self.shared
            .lock()
            .ok()
            .and_then(|s| s.requests.last().cloned())
    }

    /// Requests received so far (cheaper than `requests().len()`).
    pub fn request_count(&self) -> usize {
        self.shared.lock().map(|s| s.requests.len()).unwrap_or(0)
    }

    /// What was wrong with the requests (each tool call answered exactly once, and so on).
    pub fn violations(&self) -> Vec<String> {
        self.shared
            .lock()
            .map(|s| s.violations.clone())
            .unwrap_or_else(|_| vec!["the server state is poisoned".into()])
    }

    /// Script replies not used yet.
    pub fn unused(&self) -> usize {
        self.shared.lock().map(|s| s.replies.len()).unwrap_or(0)
    }
}

async fn serve(
    listener: TcpListener,
    shared: Arc<Mutex<Shared>>,
    arrivals: Arc<tokio::sync::watch::Sender<u64>>,
) {
    while let Ok((stream, _)) = listener.accept().await {
        // Streams are written in small pieces; without this, Nagle's algorithm and the
        // client's delayed ACKs would add tens of milliseconds per answer.
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let arrivals = arrivals.clone();
        tokio::spawn(async move {
            // A client may hang up once it has read `[DONE]`, before the final chunk
            // marker: that is its right, not a protocol violation.
            if let Err(e) = handle(stream, &shared, &arrivals).await
                && !matches!(
                    e.kind(),
                    std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
                )
                && let Ok(mut s) = shared.lock()
            {
                s.violations.push(format!("connection error: {e}"));
            }
        });
    }
}

/// The first two messages as text, where a route's marker is looked for (Anthropic's
/// system prompt is outside the messages).
fn opening(body: &Value) -> String {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .map(|m| m.iter().take(2).map(Value::to_string).collect::<String>())
        .unwrap_or_default();
    match body.get("system") {
        Some(system) => format!("{system}{messages}"),
        None => messages,
    }
}

async fn handle(
    mut stream: TcpStream,
    shared: &Mutex<Shared>,
    arrivals: &tokio::sync::watch::Sender<u64>,
) -> std::io::Result<()> {
    let at = std::time::Instant::now();
    let Some((head, body)) = read_request(&mut stream).await? else {
        return Ok(());
    };
    let (request_line, path, headers) = parse_head(&head);
    let authorization = header(&headers, "authorization");
    let dialect = shared.lock().map(|s| s.dialect).unwrap_or_default();
    let reply = {
        let Ok(mut s) = shared.lock() else {
            return Ok(());
        };
        let body: Value = match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => {
                s.violations.push(format!("request body is not JSON: {e}"));
                Value::Null
            }
        };
        let n = s.requests.len() + 1;
        let expected_path = match dialect {
            Dialect::OpenAiChat => "/v1/chat/completions",
            Dialect::AnthropicMessages => "/v1/messages",
        };
        if !request_line.starts_with("POST ") || path != expected_path {
            s.violations.push(format!(
                "request {n}: unexpected request line '{request_line}'"
            ));
        }
        if dialect == Dialect::AnthropicMessages {
            let found = anthropic::check_headers(&headers);
            s.violations
                .extend(found.into_iter().map(|p| format!("request {n}: {p}")));
        }
        let has_tools = body.get("tools").is_some_and(|t| t.is_array());
        let opening = opening(&body);
        let route = s.routes.iter().position(|r| opening.contains(&r.marker));
        let route_name = route.map(|i| s.routes[i].marker.clone());
        let reply = match (&s.side_reply, has_tools) {
            (Some(side), false) => side.clone(),
            _ => scripted_reply(&mut s, &body, n, route),
        };
        s.requests.push(Recorded {
            path,
            authorization,
            headers,
            body,
            route: route_name,
            at,
        });
        reply
    };
    let reply = wait_at_rendezvous(shared, arrivals, reply).await;
    write_reply(&mut stream, reply, dialect).await
}

fn header(headers: &[(String, String)], name: &str) -> Option<String> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

/// The request line, its path and the headers (names in lower case) of a request's head.
fn parse_head(head: &str) -> (String, String, Vec<(String, String)>) {
    let mut lines = head.lines();
    let request_line = lines.next().unwrap_or_default().to_string();
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (request_line, path, headers)
}

/// The next reply of the script (of `route`'s, when the request belongs to one), after
/// checking the request against the calls sent so far.
fn scripted_reply(s: &mut Shared, body: &Value, n: usize, route: Option<usize>) -> Reply {
    let route_name = route.map(|i| s.routes[i].marker.clone());
    let shared = s;
    let dialect = shared.dialect;
    let (sent, sent_thinking, replies) = match route {
        Some(i) => {
            let r = &mut shared.routes[i];
            (&mut r.sent_calls, &mut r.sent_thinking, &mut r.replies)
        }
        None => (
            &mut shared.sent_calls,
            &mut shared.sent_thinking,
            &mut shared.replies,
        ),
    };
    let problems = match dialect {
        Dialect::OpenAiChat => check_request(body, sent),
        Dialect::AnthropicMessages => anthropic::check_request(body, sent, sent_thinking),
    };
    let label = route_name
        .as_ref()
        .map(|r| format!("request {n} (route {r})"))
        .unwrap_or_else(|| format!("request {n}"));
    let mut found = problems
        .into_iter()
        .map(|p| format!("{label}: {p}"))
        .collect::<Vec<_>>();
    let reply = match replies.pop_front().or_else(|| shared.fallback.clone()) {
        Some(r) => r,
        None => {
            found.push(format!("{label}: the script has no reply left"));
            Reply::status(500, "the fake server's script is used up")
        }
    };
    if let Reply::Stream { turn, .. } | Reply::Whole(turn) = final_reply(&reply) {
        sent.extend(turn.tool_calls.iter().cloned());
        sent_thinking.extend(anthropic::thinking_blocks(turn));
    }
    shared.violations.extend(found);
    reply
}

/// Waits at each rendezvous `reply` leads to (one may lead to another); the reply after
/// the last.
async fn wait_at_rendezvous(
    shared: &Mutex<Shared>,
    arrivals: &tokio::sync::watch::Sender<u64>,
    reply: Reply,
) -> Reply {
    let mut reply = reply;
    while let Reply::Rendezvous {
        name,
        parties,
        then,
    } = reply
    {
        {
            if let Ok(mut s) = shared.lock() {
                *s.rendezvous.entry(name.clone()).or_default() += 1;
            }
            arrivals.send_modify(|v| *v += 1);
            let mut rx = arrivals.subscribe();
            let all_there = rx.wait_for(|_| {
                shared
                    .lock()
                    .map(|s| s.rendezvous.get(&name).copied().unwrap_or(0) >= parties)
                    .unwrap_or(true)
            });
            if tokio::time::timeout(std::time::Duration::from_secs(10), all_there)
                .await
                .is_err()
                && let Ok(mut s) = shared.lock()
            {
                s.violations.push(format!(
                    "rendezvous {name}: fewer than {parties} requests arrived at the same time"
                ));
            }
        }
        reply = *then;
    }
    reply
}

/// What a reply finally answers with (a rendezvous answers with its `then`).
fn final_reply(reply: &Reply) -> &Reply {
    match reply {
        Reply::Rendezvous { then, .. } | Reply::Delayed { then, .. } => final_reply(then),
        other => other,
    }
}

/// Reads one request: the head as text and the body (Content-Length or chunked).
pub(crate) async fn read_request(
    stream: &mut TcpStream,
) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i;
        }
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut rest = buf[head_end + 4..].to_vec();
    let header = |name: &str| {
        head.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_ascii_lowercase())
    };
    if let Some(len) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        while rest.len() < len {
            let n = stream.read(&mut tmp).await?;
            if n == 0 {
                break;
            }
            rest.extend_from_slice(&tmp[..n]);
        }
        rest.truncate(len);
        return Ok(Some((head, rest)));
    }
    if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        while find(&rest, b"0\r\n\r\n").is_none() {
            let n = stream.read(&mut tmp).await?;
            if n == 0 {
                break;
            }
            rest.extend_from_slice(&tmp[..n]);
        }
        return Ok(Some((head, dechunk(&rest))));
    }
    Ok(Some((head, rest)))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = find(data, b"\r\n") {
        let size = std::str::from_utf8(&data[..eol])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next().unwrap_or("").trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 || data.len() < eol + 2 + size {
            break;
        }
        out.extend_from_slice(&data[eol + 2..eol + 2 + size]);
        data = &data[(eol + 4 + size).min(data.len())..];
    }
    out
}

async fn write_reply(
    stream: &mut TcpStream,
    reply: Reply,
    dialect: Dialect,
) -> std::io::Result<()> {
    const STREAM_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    let events = |turn: &ModelTurn| match dialect {
        Dialect::OpenAiChat => sse_body(turn),
        Dialect::AnthropicMessages => anthropic::sse_body(turn),
    };
    match reply {
        Reply::Stream { turn, piece } => {
            stream.write_all(STREAM_HEAD.as_bytes()).await?;
            write_chunks(stream, events(&turn).as_bytes(), piece).await?;
            stream.write_all(b"0\r\n\r\n").await?;
        }
        Reply::RawStream(text) => {
            stream.write_all(STREAM_HEAD.as_bytes()).await?;
            write_chunks(stream, text.as_bytes(), 7).await?;
            stream.write_all(b"0\r\n\r\n").await?;
        }
        Reply::StreamError {
            turn,
            events: count,
            kind,
            message,
        } => {
            let text = stream_error(dialect, &events(&turn), count, &kind, &message);
            stream.write_all(STREAM_HEAD.as_bytes()).await?;
            write_chunks(stream, text.as_bytes(), 7).await?;
            stream.write_all(b"0\r\n\r\n").await?;
        }
        Reply::Drop { turn, bytes } => {
            stream.write_all(STREAM_HEAD.as_bytes()).await?;
            let body = events(&turn);
            let cut = bytes.min(body.len().saturating_sub(1));
            write_chunks(stream, &body.as_bytes()[..cut], 7).await?;
            // Closing here, without the final chunk, is a broken connection to the client.
        }
        Reply::Whole(turn) => {
            let body = match dialect {
                Dialect::OpenAiChat => chat::whole_body(&turn),
                Dialect::AnthropicMessages => anthropic::whole_body(&turn),
            }
            .to_string();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(body.as_bytes()).await?;
        }
        Reply::Rendezvous { then, .. } => {
            return Box::pin(write_reply(stream, *then, dialect)).await;
        }
        Reply::Delayed { delay, then } => {
            tokio::time::sleep(delay).await;
            return Box::pin(write_reply(stream, *then, dialect)).await;
        }
        Reply::Status {
            status,
            retry_after,
            message,
        } => {
            let body = error_body(dialect, status, &message);
            let retry = retry_after
                .map(|r| format!("retry-after: {r}\r\n"))
                .unwrap_or_default();
            let head = format!(
                "HTTP/1.1 {status} Fake\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{retry}connection: close\r\n\r\n",
                body.len()
            );
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(body.as_bytes()).await?;
        }
    }
    stream.flush().await?;
    stream.shutdown().await
}

/// The first `count` events of `body`, then an error event.
fn stream_error(dialect: Dialect, body: &str, count: usize, kind: &str, message: &str) -> String {
    let mut text: String = body.split_inclusive("\n\n").take(count).collect();
    text.push_str(&match dialect {
        Dialect::OpenAiChat => format!(
            "data: {}\n\n",
            json!({"error": {"message": message, "type": kind}})
        ),
        Dialect::AnthropicMessages => anthropic::error_event(kind, message),
    });
    text
}

/// The body of an HTTP error.
fn error_body(dialect: Dialect, status: u16, message: &str) -> String {
    match dialect {
        Dialect::OpenAiChat => {
            json!({"error": {"message": message, "type": "fake_error", "code": status}})
        }
        Dialect::AnthropicMessages => anthropic::error_body(status, message),
    }
    .to_string()
}

pub(crate) async fn write_chunks(
    stream: &mut TcpStream,
    body: &[u8],
    piece: usize,
) -> std::io::Result<()> {
    for part in body.chunks(piece.max(1)) {
        stream
            .write_all(format!("{:x}\r\n", part.len()).as_bytes())
            .await?;
        stream.write_all(part).await?;
        stream.write_all(b"\r\n").await?;
        stream.flush().await?;
    }
    Ok(())
}
