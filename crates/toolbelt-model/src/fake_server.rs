//! A scripted OpenAI-compatible server on 127.0.0.1, for tests and benchmarks, that
//! checks every request it receives.
//!
//! It speaks real HTTP/1.1 over a real socket (hyper's server, `fake_http.rs`): streamed
//! answers use chunked transfer encoding and are written in small pieces (so they split
//! inside JSON and inside tool call arguments), one request per connection. Each request is answered with the next
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
use tokio::net::TcpListener;

use crate::fake_http::{Answer, Answering, FakeRequest, OnError, serve_async};
use crate::{ModelTurn, ToolCall};

mod anthropic;
mod chat;
mod reply;

pub use chat::{check_request, sse_body};
pub use reply::Reply;

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

/// Serves `listener` with hyper until the task is aborted: each request is checked and
/// recorded, then answered from the script.
async fn serve(
    listener: TcpListener,
    shared: Arc<Mutex<Shared>>,
    arrivals: Arc<tokio::sync::watch::Sender<u64>>,
) {
    let for_errors = shared.clone();
    let on_error: OnError = Arc::new(move |e| {
        if let Ok(mut s) = for_errors.lock() {
            s.violations.push(e);
        }
    });
    let answer: Answering = Arc::new(move |request| {
        let shared = shared.clone();
        let arrivals = arrivals.clone();
        Box::pin(async move { handle(request, &shared, &arrivals).await })
    });
    serve_async(listener, answer, on_error).await;
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
    request: FakeRequest,
    shared: &Mutex<Shared>,
    arrivals: &tokio::sync::watch::Sender<u64>,
) -> Answer {
    let at = std::time::Instant::now();
    let dialect = shared.lock().map(|s| s.dialect).unwrap_or_default();
    let reply = {
        let Ok(mut s) = shared.lock() else {
            return Answer::from_reply(
                Reply::status(500, "the fake server's state is poisoned"),
                dialect,
            );
        };
        record(&mut s, request, at)
    };
    let mut reply = wait_at_rendezvous(shared, arrivals, reply).await;
    // A rendezvous after a delay is not waited at: its answer is written as it is.
    loop {
        reply = match reply {
            Reply::Rendezvous { then, .. } => *then,
            Reply::Delayed { delay, then } => {
                tokio::time::sleep(delay).await;
                *then
            }
            other => return Answer::from_reply(other, dialect),
        };
    }
}

/// Checks and records `request`; the reply it gets.
fn record(s: &mut Shared, request: FakeRequest, at: std::time::Instant) -> Reply {
    let FakeRequest {
        method,
        path,
        headers,
        body,
    } = request;
    let n = s.requests.len() + 1;
    if body.is_null() {
        s.violations
            .push(format!("request {n}: the request body is not JSON"));
    }
    let expected_path = match s.dialect {
        Dialect::OpenAiChat => "/v1/chat/completions",
        Dialect::AnthropicMessages => "/v1/messages",
    };
    if method != "POST" || path != expected_path {
        s.violations.push(format!(
            "request {n}: unexpected request line '{method} {path}'"
        ));
    }
    if s.dialect == Dialect::AnthropicMessages {
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
        _ => scripted_reply(s, &body, n, route),
    };
    let authorization = headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.clone());
    s.requests.push(Recorded {
        path,
        authorization,
        headers,
        body,
        route: route_name,
        at,
    });
    reply
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

impl Answer {
    /// What goes on the wire for `reply` (a rendezvous or a delay already passed).
    fn from_reply(reply: Reply, dialect: Dialect) -> Answer {
        let events = |turn: &ModelTurn| match dialect {
            Dialect::OpenAiChat => sse_body(turn),
            Dialect::AnthropicMessages => anthropic::sse_body(turn),
        };
        let stream =
            |body: String, piece: usize, cut: Option<usize>| Answer::Stream { body, piece, cut };
        let json = |status: u16, headers: Vec<(String, String)>, body: String| Answer::Json {
            status,
            headers,
            body,
        };
        match reply {
            Reply::Stream { turn, piece } => stream(events(&turn), piece, None),
            Reply::RawStream(text) => stream(text, 7, None),
            Reply::StreamError {
                turn,
                events: count,
                kind,
                message,
            } => stream(
                stream_error(dialect, &events(&turn), count, &kind, &message),
                7,
                None,
            ),
            Reply::Drop { turn, bytes } => stream(events(&turn), 7, Some(bytes)),
            Reply::Whole(turn) => {
                let body = match dialect {
                    Dialect::OpenAiChat => chat::whole_body(&turn),
                    Dialect::AnthropicMessages => anthropic::whole_body(&turn),
                };
                json(200, Vec::new(), body.to_string())
            }
            Reply::Rendezvous { then, .. } | Reply::Delayed { then, .. } => {
                Answer::from_reply(*then, dialect)
            }
            Reply::Status {
                status,
                retry_after,
                message,
            } => {
                let headers = retry_after
                    .map(|r| vec![("retry-after".to_string(), r)])
                    .unwrap_or_default();
                json(status, headers, error_body(dialect, status, &message))
            }
        }
    }
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
