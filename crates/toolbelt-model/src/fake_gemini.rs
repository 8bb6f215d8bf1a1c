//! A scripted Gemini server on 127.0.0.1 (`streamGenerateContent?alt=sse`, the Gemini API
//! and Vertex AI paths), written from the API reference, that checks every request.
//!
//! It plays a thinking model: each answer opens with a thought summary part, and carries
//! a `thoughtSignature` as Gemini 3 does — on the first `functionCall` part of an answer
//! with calls (only the first of parallel calls), else on the answer's last part. The
//! checks, recorded as violations so a test sees them all:
//!
//! - the request line and the credential (`x-goog-api-key`, or a bearer token on the
//!   Vertex AI path with a project; express mode's path takes the key);
//! - `contents` alternate `user` and `model`, and start with `user`;
//! - the `functionDeclarations` use only keywords of Gemini's `Schema`, and
//!   `generationConfig` only fields of Gemini's `GenerationConfig`;
//! - the `functionCall` parts of the conversation are exactly the calls this server sent
//!   (ids, names, arguments), each answered, in order, by a `functionResponse` of the same
//!   id and name in the next turn;
//! - every thought signature sent comes back on the part it came on. A missing one is
//!   also answered with a 400, as Gemini 3 refuses such a request, so the client fails
//!   loudly too.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::fake_http::{Answer, FakeRequest, bind, serve};
use crate::{FinishReason, ModelTurn, ToolCall};

/// How the server answers one request.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum GeminiReply {
    /// A streamed answer: `turn`'s text and calls; its finish reason in Gemini's terms
    /// (`Length` is `MAX_TOKENS`, `ContentFilter` is `SAFETY`, `Other(r)` is `r`).
    Turn(ModelTurn),
    /// The first `bytes` of `turn`'s stream, then the connection drops.
    Drop {
        /// The answer cut short.
        turn: ModelTurn,
        /// How many bytes are sent.
        bytes: usize,
    },
    /// The first chunk of `turn`'s stream, then an error chunk, as Gemini ends a stream
    /// that failed after it began.
    ErrorMidStream {
        /// The answer that failed.
        turn: ModelTurn,
        /// The error's message.
        message: String,
    },
    /// An HTTP error with Google's error body.
    Status {
        /// The status, e.g. 429.
        status: u16,
        /// A `Retry-After` header to send.
        retry_after: Option<String>,
        /// The error's message.
        message: String,
    },
}

impl GeminiReply {
    /// A text answer.
    pub fn text(text: &str) -> GeminiReply {
        GeminiReply::Turn(ModelTurn {
            text: text.to_string(),
            ..Default::default()
        })
    }

    /// An answer of `calls` (id, name, JSON arguments), after `text`.
    pub fn calls(text: &str, calls: &[(&str, &str, Value)]) -> GeminiReply {
        GeminiReply::Turn(ModelTurn {
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

/// A call this server sent, with the signature that must come back on it.
#[derive(Debug, Clone)]
struct SentCall {
    id: String,
    name: String,
    args: Value,
    signature: Option<String>,
}

/// The default bytes per write: small, so a client meets events split anywhere.
const SMALL_PIECE: usize = 11;

#[derive(Default)]
struct State {
    replies: VecDeque<GeminiReply>,
    requests: Vec<FakeRequest>,
    violations: Vec<String>,
    sent_calls: Vec<SentCall>,
    /// Signatures sent on text parts, in order.
    text_signatures: Vec<String>,
    /// The `data:` payloads of every chunk sent, in order.
    chunks: Vec<String>,
    /// Bytes per write of a stream ([`FakeGemini::set_piece`]).
    piece: usize,
}

/// The scripted server; ends when dropped.
pub struct FakeGemini {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeGemini {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeGemini {
    /// Starts on a free port of 127.0.0.1, answering `replies` in order.
    pub async fn start(replies: Vec<GeminiReply>) -> std::io::Result<Self> {
        let (listener, addr) = bind().await?;
        let state = Arc::new(Mutex::new(State {
            replies: replies.into(),
            piece: SMALL_PIECE,
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
        Ok(FakeGemini { addr, state, task })
    }

    /// Streams are written `bytes` at a time from now on (11 by default, so events split
    /// inside JSON; a benchmark uses what real servers write).
    pub fn set_piece(&self, bytes: usize) {
        if let Ok(mut s) = self.state.lock() {
            s.piece = bytes.max(1);
        }
    }

    /// What a client is given as its base URL (the API version is the client's to add).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
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

    /// The JSON of every chunk of the complete answers sent so far, in order (for
    /// checking the fake's output against a schema of the real format).
    pub fn chunks_sent(&self) -> Vec<String> {
        self.state
            .lock()
            .map(|s| s.chunks.clone())
            .unwrap_or_default()
    }
}

fn answer(state: &Mutex<State>, request: FakeRequest) -> Answer {
    let Ok(mut s) = state.lock() else {
        return status_answer(500, None, "the fake server's state is poisoned");
    };
    let n = s.requests.len() + 1;
    let mut problems = check_head(&request);
    problems.extend(check_body(&request.body));
    let missing_signature = check_conversation(&request.body, &s, &mut problems);
    s.violations
        .extend(problems.into_iter().map(|p| format!("request {n}: {p}")));
    s.requests.push(request);
    if let Some(call) = missing_signature {
        // What Gemini 3 does; the client must not get an answer it could go on from.
        return status_answer(
            400,
            None,
            &format!("Function call `{call}` is missing a thought_signature."),
        );
    }
    let Some(reply) = s.replies.pop_front() else {
        s.violations
            .push(format!("request {n}: the script has no reply left"));
        return status_answer(500, None, "the fake server's script is used up");
    };
    match reply {
        GeminiReply::Status {
            status,
            retry_after,
            message,
        } => status_answer(status, retry_after, &message),
        GeminiReply::Turn(turn) => {
            let body = stream_body(&turn, n, &mut s);
            Answer::Stream {
                body,
                piece: s.piece,
                cut: None,
            }
        }
        GeminiReply::Drop { turn, bytes } => Answer::Stream {
            body: stream_chunks(&turn, n).0.concat(),
            piece: s.piece,
            cut: Some(bytes),
        },
        GeminiReply::ErrorMidStream { turn, message } => {
            let first = stream_chunks(&turn, n)
                .0
                .into_iter()
                .next()
                .unwrap_or_default();
            let error = json!({"error": {"code": 500, "message": message, "status": "INTERNAL"}});
            Answer::Stream {
                body: format!("{first}data: {error}\r\n\r\n"),
                piece: s.piece,
                cut: None,
            }
        }
    }
}

fn status_answer(status: u16, retry_after: Option<String>, message: &str) -> Answer {
    let name = match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        _ => "INTERNAL",
    };
    Answer::Json {
        status,
        headers: retry_after
            .map(|r| vec![("retry-after".to_string(), r)])
            .unwrap_or_default(),
        body: json!({"error": {"code": status, "message": message, "status": name}}).to_string(),
    }
}

/// The stream of a complete answer; records the calls and signatures it sends.
fn stream_body(turn: &ModelTurn, n: usize, s: &mut State) -> String {
    let (chunks, sent, text_signature) = stream_chunks(turn, n);
    s.sent_calls.extend(sent);
    s.text_signatures.extend(text_signature);
    s.chunks.extend(
        chunks
            .iter()
            .map(|c| c.trim_start_matches("data: ").trim_end().to_string()),
    );
    chunks.concat()
}

/// The chunks of an answer: a thought summary, the text in two parts, the calls, then
/// the finish reason with the usage; the calls sent and the text part's signature.
fn stream_chunks(turn: &ModelTurn, n: usize) -> (Vec<String>, Vec<SentCall>, Option<String>) {
    let chunk = |parts: Value, finish: Option<&str>| {
        let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
        let mut v = json!({"candidates": [], "modelVersion": "fake-gemini", "responseId": format!("fake-{n}")});
        if let Some(f) = finish {
            candidate["finishReason"] = json!(f);
            let u = turn.usage.unwrap_or_default();
            v["usageMetadata"] = json!({
                "promptTokenCount": u.prompt_tokens,
                "candidatesTokenCount": u.completion_tokens.saturating_sub(u.reasoning_tokens),
                "thoughtsTokenCount": u.reasoning_tokens,
                "cachedContentTokenCount": u.cache_read_tokens,
                "totalTokenCount": u.total_tokens,
            });
        }
        v["candidates"] = json!([candidate]);
        format!("data: {v}\r\n\r\n")
    };
    let signature = |what: &str| STANDARD.encode(format!("fake-signature|{n}|{what}"));
    let mut chunks = vec![chunk(
        json!([{"text": "**Weighing the request**", "thought": true}]),
        None,
    )];
    let mid = turn
        .text
        .char_indices()
        .nth(turn.text.chars().count() / 2)
        .map_or(0, |(i, _)| i);
    for part in [&turn.text[..mid], &turn.text[mid..]] {
        if !part.is_empty() {
            chunks.push(chunk(json!([{"text": part}]), None));
        }
    }
    let mut sent = Vec::new();
    for (i, call) in turn.tool_calls.iter().enumerate() {
        let args = serde_json::from_str::<Value>(&call.arguments)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        let mut part = json!({"functionCall": {"id": call.id, "name": call.name, "args": args}});
        let sig = (i == 0).then(|| signature(&call.id));
        if let Some(sig) = &sig {
            part["thoughtSignature"] = json!(sig);
        }
        chunks.push(chunk(json!([part]), None));
        sent.push(SentCall {
            id: call.id.clone(),
            name: call.name.clone(),
            args,
            signature: sig,
        });
    }
    let finish = match &turn.finish_reason {
        FinishReason::Stop | FinishReason::ToolCalls => "STOP",
        FinishReason::Length => "MAX_TOKENS",
        FinishReason::ContentFilter => "SAFETY",
        FinishReason::Other(r) => r.as_str(),
    };
    // An answer without calls carries its signature on its last part: an empty text part.
    let text_signature = turn.tool_calls.is_empty().then(|| signature("text"));
    let last_parts = match &text_signature {
        Some(sig) => json!([{"text": "", "thoughtSignature": sig}]),
        None => json!([]),
    };
    chunks.push(chunk(last_parts, Some(finish)));
    (chunks, sent, text_signature)
}

fn check_head(request: &FakeRequest) -> Vec<String> {
    let mut problems = Vec::new();
    let path = request.path.as_str();
    let vertex = path.starts_with("/v1/projects/");
    let express = path.starts_with("/v1/publishers/google/models/");
    let well_formed = request.method == "POST"
        && path.ends_with(":streamGenerateContent?alt=sse")
        && if vertex {
            path.contains("/locations/") && path.contains("/publishers/google/models/")
        } else if express {
            path.len() > "/v1/publishers/google/models/:".len()
        } else {
            path.starts_with("/v1beta/models/") && path.len() > "/v1beta/models/:".len()
        };
    if !well_formed {
        problems.push(format!("unexpected request {} {path}", request.method));
    }
    let has_key = request
        .header("x-goog-api-key")
        .is_some_and(|k| !k.is_empty());
    let has_bearer = request
        .header("authorization")
        .is_some_and(|a| a.starts_with("Bearer "));
    if vertex && !has_bearer {
        problems.push("a Vertex AI request without a bearer token".into());
    }
    if !vertex && !has_key {
        problems.push("a Gemini API or Vertex AI express request without x-goog-api-key".into());
    }
    problems
}

/// The keywords of Gemini's `Schema` object.
const SCHEMA_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "items",
    "properties",
    "required",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "anyOf",
    "propertyOrdering",
    "default",
    "example",
];

fn check_body(body: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let contents = body.get("contents").and_then(Value::as_array);
    let Some(contents) = contents.filter(|c| !c.is_empty()) else {
        return vec!["no contents".into()];
    };
    let roles: Vec<&str> = contents
        .iter()
        .map(|c| c.get("role").and_then(Value::as_str).unwrap_or(""))
        .collect();
    if roles.first() != Some(&"user") {
        problems.push(format!("contents start with role {:?}", roles.first()));
    }
    for (i, pair) in roles.windows(2).enumerate() {
        if pair[0] == pair[1] || !["user", "model"].contains(&pair[1]) {
            problems.push(format!(
                "content {}: role '{}' after '{}'",
                i + 1,
                pair[1],
                pair[0]
            ));
        }
    }
    let declarations = body
        .pointer("/tools/0/functionDeclarations")
        .and_then(Value::as_array);
    for d in declarations.into_iter().flatten() {
        let name = d.get("name").and_then(Value::as_str).unwrap_or("");
        if let Some(p) = d.get("parameters") {
            check_schema(p, &format!("{name}.parameters"), &mut problems);
        }
    }
    if let Some(config) = body.get("generationConfig") {
        let fields = config.as_object().into_iter().flat_map(|o| o.keys());
        for field in fields.filter(|f| !GENERATION_CONFIG_FIELDS.contains(&f.as_str())) {
            problems.push(format!("generationConfig.{field} is not a Gemini field"));
        }
    }
    problems
}

/// The fields of Gemini's `GenerationConfig` a client of this kind may send.
const GENERATION_CONFIG_FIELDS: &[&str] = &[
    "temperature",
    "topP",
    "topK",
    "maxOutputTokens",
    "presencePenalty",
    "frequencyPenalty",
    "candidateCount",
    "stopSequences",
    "seed",
    "responseMimeType",
    "thinkingConfig",
];

fn check_schema(schema: &Value, at: &str, problems: &mut Vec<String>) {
    let Some(obj) = schema.as_object() else {
        problems.push(format!("{at}: a schema that is not an object"));
        return;
    };
    for (k, v) in obj {
        if !SCHEMA_KEYWORDS.contains(&k.as_str()) {
            problems.push(format!("{at}: '{k}' is not a keyword of Gemini's Schema"));
        }
        match k.as_str() {
            "type" if !v.is_string() => problems.push(format!("{at}: type is not one name")),
            "properties" => {
                for (p, s) in v.as_object().into_iter().flatten() {
                    check_schema(s, &format!("{at}.{p}"), problems);
                }
            }
            "items" => check_schema(v, &format!("{at}[]"), problems),
            "anyOf" => {
                for (i, s) in v.as_array().into_iter().flatten().enumerate() {
                    check_schema(s, &format!("{at}.anyOf[{i}]"), problems);
                }
            }
            _ => {}
        }
    }
}

/// The calls of the conversation against the ones sent; the name of a call whose
/// signature did not come back.
fn check_conversation(body: &Value, s: &State, problems: &mut Vec<String>) -> Option<String> {
    let contents = body.get("contents").and_then(Value::as_array)?;
    let mut seen = 0usize;
    let mut text_signatures = Vec::new();
    let mut missing = None;
    for (i, content) in contents.iter().enumerate() {
        if content.get("role").and_then(Value::as_str) != Some("model") {
            continue;
        }
        let parts = content
            .get("parts")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut calls = Vec::new();
        for part in &parts {
            let sig = part.get("thoughtSignature").and_then(Value::as_str);
            let Some(call) = part.get("functionCall") else {
                text_signatures.extend(sig.map(str::to_string));
                continue;
            };
            let id = call.get("id").and_then(Value::as_str).unwrap_or("");
            let name = call.get("name").and_then(Value::as_str).unwrap_or("");
            match s.sent_calls.get(seen) {
                Some(sent)
                    if sent.id == id
                        && sent.name == name
                        && call.get("args") == Some(&sent.args) =>
                {
                    if sent.signature.is_some() && sent.signature.as_deref() != sig {
                        problems.push(format!(
                            "content {i}: call '{id}' came back without its thoughtSignature"
                        ));
                        missing = Some(name.to_string());
                    }
                }
                Some(sent) => problems.push(format!(
                    "content {i}: call {id}:{name} {} differs from the one sent, {}:{} {}",
                    call.get("args").unwrap_or(&Value::Null),
                    sent.id,
                    sent.name,
                    sent.args
                )),
                None => problems.push(format!("content {i}: call {id}:{name} was never sent")),
            }
            seen += 1;
            calls.push((id.to_string(), name.to_string()));
        }
        if !calls.is_empty() {
            check_responses(contents.get(i + 1), &calls, i + 1, problems);
        }
    }
    if seen != s.sent_calls.len() {
        problems.push(format!(
            "the conversation holds {seen} calls; the server sent {}",
            s.sent_calls.len()
        ));
    }
    if text_signatures != s.text_signatures {
        problems.push(format!(
            "text thought signatures {text_signatures:?} came back; {:?} were sent",
            s.text_signatures
        ));
    }
    missing
}

/// Content `at` answers `calls`, in order, with `functionResponse` parts.
fn check_responses(
    content: Option<&Value>,
    calls: &[(String, String)],
    at: usize,
    problems: &mut Vec<String>,
) {
    let parts: &[Value] = content
        .filter(|c| c.get("role").and_then(Value::as_str) == Some("user"))
        .and_then(|c| c.get("parts").and_then(Value::as_array))
        .map_or(&[], Vec::as_slice);
    // The responses first; then their images (`inlineData` of base64 bytes), any text.
    let responses = parts
        .iter()
        .take_while(|p| p.get("functionResponse").is_some());
    if parts
        .iter()
        .skip(responses.count())
        .any(|p| p.get("functionResponse").is_some())
    {
        problems.push(format!(
            "content {at}: a functionResponse after other parts"
        ));
    }
    for data in parts.iter().filter_map(|p| p.get("inlineData")) {
        let field = |k: &str| data.get(k).and_then(Value::as_str).unwrap_or("");
        if !field("mimeType").contains('/') || STANDARD.decode(field("data")).is_err() {
            problems.push(format!(
                "content {at}: inlineData without a MIME type or base64 data"
            ));
        }
    }
    let answered: Vec<(String, String)> = parts
        .iter()
        .filter_map(|p| p.get("functionResponse"))
        .inspect(|r| {
            if !r.get("response").is_some_and(Value::is_object) {
                problems.push(format!(
                    "content {at}: a functionResponse whose response is not an object"
                ));
            }
        })
        .map(|r| {
            let field = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            (field("id"), field("name"))
        })
        .collect();
    if answered != calls {
        problems.push(format!(
            "content {at}: answers {answered:?}, but the calls before it were {calls:?}"
        ));
    }
}
