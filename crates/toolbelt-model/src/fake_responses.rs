//! A scripted OpenAI Responses API server on 127.0.0.1 (`POST /v1/responses`, streamed),
//! written from the API reference, that checks every request.
//!
//! It plays a reasoning model: every answer opens with a `reasoning` item whose
//! `encrypted_content` the client must hand back (the requests are stateless), then the
//! text as a `message` item, then one `function_call` item per call, arguments streamed in
//! pieces. The checks, recorded as violations so a test sees them all:
//!
//! - the request line, a bearer token, `stream: true`, `store: false` and
//!   `include: ["reasoning.encrypted_content"]`, `function` tools with names, and no
//!   field the API does not have (a chat-format `max_tokens` or `top_k`);
//! - the `function_call` items of the input are exactly the calls this server sent
//!   (`call_id`, name, arguments), each answered by one `function_call_output` before
//!   the next message;
//! - every reasoning item sent comes back (id and encrypted content) before the calls it
//!   led to. A missing one is also answered with a 400, so the client fails loudly too.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::fake_http::{Answer, FakeRequest, bind, serve};
use crate::{FinishReason, ModelTurn, ToolCall};

/// How the server answers one request.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ResponsesReply {
    /// A streamed answer. `Length` ends it with `response.incomplete`
    /// (`max_output_tokens`), `ContentFilter` likewise (`content_filter`).
    Turn(ModelTurn),
    /// The first `bytes` of `turn`'s stream, then the connection drops.
    Drop {
        /// The answer cut short.
        turn: ModelTurn,
        /// How many bytes are sent.
        bytes: usize,
    },
    /// The opening events of an answer (up to its reasoning item), then an `error` event
    /// with `code`.
    ErrorMidStream {
        /// The error's code, e.g. `server_error`.
        code: String,
    },
    /// `response.created`, then `response.failed` with `code`.
    Failed {
        /// The error's code.
        code: String,
        /// The error's message.
        message: String,
    },
    /// An HTTP error with OpenAI's error body.
    Status {
        /// The status, e.g. 429.
        status: u16,
        /// A `Retry-After` header to send.
        retry_after: Option<String>,
        /// The error's message.
        message: String,
    },
}

impl ResponsesReply {
    /// A text answer.
    pub fn text(text: &str) -> ResponsesReply {
        ResponsesReply::Turn(ModelTurn {
            text: text.to_string(),
            ..Default::default()
        })
    }

    /// An answer of `calls` (call id, name, JSON arguments), after `text`.
    pub fn calls(text: &str, calls: &[(&str, &str, Value)]) -> ResponsesReply {
        ResponsesReply::Turn(ModelTurn {
            text: text.to_string(),
            tool_calls: calls
                .iter()
                .map(|(id, name, args)| ToolCall {
                    id: id.to_string(),
                    name: name.to_string(),
                    arguments: args.to_string(),
                })
                .collect(),
            finish_reason: FinishReason::ToolCalls,
            ..Default::default()
        })
    }
}

#[derive(Default)]
struct State {
    replies: VecDeque<ResponsesReply>,
    requests: Vec<FakeRequest>,
    violations: Vec<String>,
    sent_calls: Vec<ToolCall>,
    /// (id, encrypted content, the call ids it led to), in order.
    sent_reasoning: Vec<(String, String, Vec<String>)>,
    /// Bytes per write of a stream ([`FakeResponses::set_piece`]).
    piece: usize,
}

/// The scripted server; ends when dropped.
pub struct FakeResponses {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeResponses {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeResponses {
    /// Starts on a free port of 127.0.0.1, answering `replies` in order.
    pub async fn start(replies: Vec<ResponsesReply>) -> std::io::Result<Self> {
        let (listener, addr) = bind().await?;
        let state = Arc::new(Mutex::new(State {
            replies: replies.into(),
            piece: 13,
            ..Default::default()
        }));
        let for_answers = state.clone();
        let for_errors = state.clone();
        let task = tokio::spawn(serve(
            listener,
            Arc::new(move |request| answer(&for_answers, request)),
            Arc::new(move |e| {
                if let Ok(mut s) = for_errors.lock() {
                    s.violations.push(e);
                }
            }),
        ));
        Ok(FakeResponses { addr, state, task })
    }

    /// Streams are written `bytes` at a time from now on (13 by default, so events split
    /// inside JSON; a benchmark uses what real servers write).
    pub fn set_piece(&self, bytes: usize) {
        if let Ok(mut s) = self.state.lock() {
            s.piece = bytes.max(1);
        }
    }

    /// What a client is given as its base URL.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<FakeRequest> {
        self.state
            .lock()
            .map(|s| s.requests.clone())
            .unwrap_or_default()
    }

    /// What was wrong with the requests.
    pub fn violations(&self) -> Vec<String> {
        self.state
            .lock()
            .map(|s| s.violations.clone())
            .unwrap_or_else(|_| vec!["the server state is poisoned".into()])
    }

    /// Script replies not used yet.
    pub fn unused(&self) -> usize {
        self.state.lock().map(|s| s.replies.len()).unwrap_or(0)
    }
}

fn answer(state: &Mutex<State>, request: FakeRequest) -> Answer {
    let Ok(mut s) = state.lock() else {
        return status_answer(500, None, "the fake server's state is poisoned");
    };
    let n = s.requests.len() + 1;
    let mut problems = check_head_and_options(&request);
    let missing = check_input(&request.body, &s, &mut problems);
    s.violations
        .extend(problems.into_iter().map(|p| format!("request {n}: {p}")));
    s.requests.push(request);
    if let Some(call) = missing {
        return status_answer(
            400,
            None,
            &format!(
                "Item 'function_call' for '{call}' was provided without its required 'reasoning' item."
            ),
        );
    }
    let Some(reply) = s.replies.pop_front() else {
        s.violations
            .push(format!("request {n}: the script has no reply left"));
        return status_answer(500, None, "the fake server's script is used up");
    };
    let piece = s.piece;
    let stream = |body: String, cut: Option<usize>| Answer::Stream { body, piece, cut };
    match reply {
        ResponsesReply::Status {
            status,
            retry_after,
            message,
        } => status_answer(status, retry_after, &message),
        ResponsesReply::Turn(turn) => {
            let events = Events::of(&turn, n);
            s.sent_calls.extend(turn.tool_calls.iter().cloned());
            s.sent_reasoning.push(events.reasoning.clone());
            stream(events.body, None)
        }
        ResponsesReply::Drop { turn, bytes } => stream(Events::of(&turn, n).body, Some(bytes)),
        ResponsesReply::ErrorMidStream { code } => {
            let mut events = Events::of(&ModelTurn::default(), n);
            events.rewind();
            events.push("error", json!({"code": code, "message": "The server had an error while processing your request.", "param": null}));
            stream(events.body, None)
        }
        ResponsesReply::Failed { code, message } => {
            let mut events = Events::of(&ModelTurn::default(), n);
            events.rewind();
            let mut response = response_object(n, "failed", json!([]), None);
            response["error"] = json!({"code": code, "message": message});
            events.push("response.failed", json!({ "response": response }));
            stream(events.body, None)
        }
    }
}

fn status_answer(status: u16, retry_after: Option<String>, message: &str) -> Answer {
    let kind = match status {
        429 => "rate_limit_exceeded",
        401 => "invalid_api_key",
        400 => "invalid_request_error",
        _ => "server_error",
    };
    Answer::Json {
        status,
        headers: retry_after
            .map(|r| vec![("retry-after".to_string(), r)])
            .unwrap_or_default(),
        body: json!({"error": {"message": message, "type": kind, "param": null, "code": kind}})
            .to_string(),
    }
}

fn response_object(n: usize, status: &str, output: Value, usage: Option<Value>) -> Value {
    json!({
        "id": format!("resp_{n}"), "object": "response", "created_at": 1_700_000_000 + n,
        "status": status, "model": "fake-responses", "output": output,
        "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
        "error": null, "incomplete_details": null, "usage": usage,
    })
}

/// The event stream of one answer.
struct Events {
    body: String,
    /// The events up to the reasoning item's end (for the failing replies).
    opening: String,
    opening_seq: u64,
    seq: u64,
    reasoning: (String, String, Vec<String>),
}

impl Events {
    /// Back to the end of the opening events.
    fn rewind(&mut self) {
        self.body = std::mem::take(&mut self.opening);
        self.seq = self.opening_seq;
    }

    fn push(&mut self, kind: &str, mut data: Value) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.seq);
        self.seq += 1;
        self.body
            .push_str(&format!("event: {kind}\ndata: {data}\n\n"));
    }

    fn of(turn: &ModelTurn, n: usize) -> Events {
        let reasoning_id = format!("rs_{n}");
        let encrypted = format!("gAAAA-fake-reasoning-{n}");
        let mut e = Events {
            body: String::new(),
            opening: String::new(),
            opening_seq: 0,
            seq: 0,
            reasoning: (
                reasoning_id.clone(),
                encrypted.clone(),
                turn.tool_calls.iter().map(|c| c.id.clone()).collect(),
            ),
        };
        let created = response_object(n, "in_progress", json!([]), None);
        e.push("response.created", json!({ "response": created }));
        e.push("response.in_progress", json!({ "response": created }));
        let reasoning = json!({"type": "reasoning", "id": reasoning_id, "summary": [],
            "encrypted_content": encrypted});
        e.push(
            "response.output_item.added",
            json!({"output_index": 0, "item": reasoning}),
        );
        let mut done = reasoning.clone();
        done["summary"] = json!([{"type": "summary_text", "text": "**Weighing the request**"}]);
        e.push(
            "response.output_item.done",
            json!({"output_index": 0, "item": done}),
        );
        e.opening = e.body.clone();
        e.opening_seq = e.seq;
        let mut output = vec![done];
        if !turn.text.is_empty() {
            output.push(e.message(&turn.text, n, output.len()));
        }
        for call in &turn.tool_calls {
            output.push(e.call(call, output.len()));
        }
        let u = turn.usage.unwrap_or_default();
        let usage = json!({
            "input_tokens": u.prompt_tokens,
            "input_tokens_details": {"cached_tokens": u.cache_read_tokens, "cache_write_tokens": 0},
            "output_tokens": u.completion_tokens, "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
            "total_tokens": u.total_tokens,
        });
        let incomplete = match turn.finish_reason {
            FinishReason::Length => Some("max_output_tokens"),
            FinishReason::ContentFilter => Some("content_filter"),
            _ => None,
        };
        let status = if incomplete.is_some() {
            "incomplete"
        } else {
            "completed"
        };
        let mut response = response_object(n, status, Value::Array(output), Some(usage));
        if let Some(reason) = incomplete {
            response["incomplete_details"] = json!({ "reason": reason });
        }
        let kind = if incomplete.is_some() {
            "response.incomplete"
        } else {
            "response.completed"
        };
        e.push(kind, json!({ "response": response }));
        e
    }

    /// A message item's events; the item.
    fn message(&mut self, text: &str, n: usize, index: usize) -> Value {
        let id = format!("msg_{n}");
        let item = |status: &str, content: Value| json!({"type": "message", "id": id, "status": status, "role": "assistant", "content": content});
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": item("in_progress", json!([]))}),
        );
        let empty = json!({"type": "output_text", "text": "", "annotations": []});
        let at = json!({"item_id": id, "output_index": index, "content_index": 0});
        let with = |extra: Value| {
            let mut v = at.clone();
            for (k, x) in extra.as_object().into_iter().flatten() {
                v[k] = x.clone();
            }
            v
        };
        self.push("response.content_part.added", with(json!({"part": empty})));
        let mid = text
            .char_indices()
            .nth(text.chars().count() / 2)
            .map_or(0, |(i, _)| i);
        for part in [&text[..mid], &text[mid..]] {
            self.push(
                "response.output_text.delta",
                with(json!({"delta": part, "logprobs": []})),
            );
        }
        self.push(
            "response.output_text.done",
            with(json!({"text": text, "logprobs": []})),
        );
        let part = json!({"type": "output_text", "text": text, "annotations": []});
        self.push("response.content_part.done", with(json!({"part": part})));
        let done = item("completed", json!([part]));
        self.push(
            "response.output_item.done",
            json!({"output_index": index, "item": done}),
        );
        done
    }

    /// A function call item's events, its arguments in pieces of five characters; the item.
    fn call(&mut self, call: &ToolCall, index: usize) -> Value {
        let id = format!("fc_{}", call.id);
        let item = |status: &str, args: &str| {
            json!({"type": "function_call", "id": id, "call_id": call.id, "name": call.name,
                "arguments": args, "status": status})
        };
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": item("in_progress", "")}),
        );
        let chars: Vec<char> = call.arguments.chars().collect();
        for piece in chars.chunks(5) {
            let delta: String = piece.iter().collect();
            self.push(
                "response.function_call_arguments.delta",
                json!({"item_id": id, "output_index": index, "delta": delta}),
            );
        }
        self.push(
            "response.function_call_arguments.done",
            json!({"item_id": id, "output_index": index,
            "name": call.name, "arguments": call.arguments}),
        );
        let done = item("completed", &call.arguments);
        self.push(
            "response.output_item.done",
            json!({"output_index": index, "item": done}),
        );
        done
    }
}

/// The fields of a create-response request a client of this kind may send.
const REQUEST_FIELDS: &[&str] = &[
    "model",
    "input",
    "instructions",
    "stream",
    "store",
    "include",
    "reasoning",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "temperature",
    "top_p",
    "max_output_tokens",
    "metadata",
    "text",
    "truncation",
    "prompt_cache_key",
];

fn check_head_and_options(request: &FakeRequest) -> Vec<String> {
    let mut problems = Vec::new();
    if request.method != "POST" || request.path != "/v1/responses" {
        problems.push(format!(
            "unexpected request {} {}",
            request.method, request.path
        ));
    }
    if !request
        .header("authorization")
        .is_some_and(|a| a.starts_with("Bearer "))
    {
        problems.push("no bearer token".into());
    }
    let body = &request.body;
    if body
        .get("model")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        problems.push("no model named".into());
    }
    if body.get("stream") != Some(&json!(true)) {
        problems.push("not streamed".into());
    }
    if body.get("store") != Some(&json!(false)) {
        problems.push("store is not false (the conversation must travel whole)".into());
    }
    let fields = body.as_object().into_iter().flat_map(|o| o.keys());
    for field in fields.filter(|f| !REQUEST_FIELDS.contains(&f.as_str())) {
        problems.push(format!("'{field}' is not a field of a Responses request"));
    }
    let include = body.get("include").and_then(Value::as_array);
    if !include.is_some_and(|i| i.contains(&json!("reasoning.encrypted_content"))) {
        problems.push("include lacks reasoning.encrypted_content".into());
    }
    for t in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = t.get("name").and_then(Value::as_str).unwrap_or("");
        if t.get("type") != Some(&json!("function")) || name.is_empty() || name.len() > 64 {
            problems.push(format!("a tool that is not a named function: {t}"));
        }
    }
    problems
}

/// The calls and reasoning items of the input against the ones sent; a call whose
/// reasoning item did not come back before it.
fn check_input(body: &Value, s: &State, problems: &mut Vec<String>) -> Option<String> {
    let Some(input) = body.get("input").and_then(Value::as_array) else {
        problems.push("no input array".into());
        return None;
    };
    let mut calls = Vec::new();
    let mut open: VecDeque<String> = VecDeque::new();
    let mut reasoning_seen: Vec<(String, String)> = Vec::new();
    let mut missing = None;
    for (i, item) in input.iter().enumerate() {
        let field = |k: &str| {
            item.get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        match field("type").as_str() {
            "function_call_output" => {
                check_output(i, item.get("output"), problems);
                match open.pop_front() {
                    Some(id) if id == field("call_id") => {}
                    expected => problems.push(format!(
                        "item {i}: answers '{}' but {expected:?} is next",
                        field("call_id")
                    )),
                }
            }
            other => {
                // Parallel calls come one after another, their outputs after them.
                if let Some(id) = open.front().filter(|_| other != "function_call") {
                    problems.push(format!(
                        "item {i} ({other}) comes before call '{id}' was answered"
                    ));
                    open.clear();
                }
                if other == "reasoning" {
                    reasoning_seen.push((field("id"), field("encrypted_content")));
                } else if other == "function_call" {
                    let call = ToolCall {
                        id: field("call_id"),
                        name: field("name"),
                        arguments: field("arguments"),
                    };
                    let led_by = s.sent_reasoning.iter().find(|r| r.2.contains(&call.id));
                    if let Some((id, content, _)) = led_by
                        && !reasoning_seen.iter().any(|(i, c)| i == id && c == content)
                    {
                        problems.push(format!(
                            "item {i}: call '{}' without its reasoning item '{id}' before it",
                            call.id
                        ));
                        missing = Some(call.id.clone());
                    }
                    open.push_back(call.id.clone());
                    calls.push(call);
                }
            }
        }
    }
    if let Some(id) = open.front() {
        problems.push(format!("call '{id}' is never answered"));
    }
    if calls != s.sent_calls {
        problems.push(format!(
            "the input's calls {calls:?} differ from the ones sent {:?}",
            s.sent_calls
        ));
    }
    let sent: Vec<(String, String)> = s
        .sent_reasoning
        .iter()
        .map(|(i, c, _)| (i.clone(), c.clone()))
        .collect();
    if reasoning_seen != sent {
        problems.push(format!(
            "reasoning items {reasoning_seen:?} came back; {sent:?} were sent"
        ));
    }
    missing
}

/// A `function_call_output`'s `output`: a string, or `input_text` and `input_image`
/// items (an image as a URL, a `data:` URL of base64 included, or a file id).
fn check_output(i: usize, output: Option<&Value>, problems: &mut Vec<String>) {
    let items = match output {
        Some(Value::String(_)) => return,
        Some(Value::Array(items)) => items,
        other => {
            problems.push(format!(
                "item {i}: an output that is neither a string nor a list: {other:?}"
            ));
            return;
        }
    };
    for item in items {
        let field = |k: &str| item.get(k).and_then(Value::as_str);
        let fine = match field("type") {
            Some("input_text") => field("text").is_some(),
            Some("input_image") => {
                field("file_id").is_some() || field("image_url").is_some_and(image_url)
            }
            _ => false,
        };
        if !fine {
            problems.push(format!(
                "item {i}: an output item that is not input_text or input_image: {item}"
            ));
        }
    }
}

/// An `image_url` the API takes: http(s), or a `data:` URL of base64 image bytes.
fn image_url(url: &str) -> bool {
    use base64::Engine;
    if url.starts_with("https://") || url.starts_with("http://") {
        return true;
    }
    url.strip_prefix("data:image/")
        .and_then(|rest| rest.split_once(";base64,"))
        .is_some_and(|(_, data)| {
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .is_ok()
        })
}
