//! JSON-RPC 2.0 over newline-delimited standard input and output: ACP's transport.
//!
//! [`Peer`] is the one writer (every message, from every task, goes through one channel to
//! one writer task, so lines never interleave) and the table of our own requests waiting
//! for the client's answer. [`parse`] sorts an incoming line into a request, a
//! notification or a response; a line that is not JSON-RPC is an error to answer with,
//! never a reason to stop reading.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use agent_client_protocol_schema::v1::Error as RpcError;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

/// The longest line read (64 MiB: an embedded resource or image may be large); a longer
/// one is answered with a parse error and skipped.
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// One message from the client.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A call we must answer under `id`.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A call that wants no answer.
    Notification { method: String, params: Value },
    /// The client's answer to one of our requests.
    Response {
        id: Value,
        outcome: Result<Value, RpcError>,
    },
}

/// Why a line could not be used, with the id to answer under when one could be read
/// (`null` otherwise, as JSON-RPC says).
#[derive(Debug)]
pub(crate) struct BadLine {
    pub id: Value,
    pub error: RpcError,
}

/// Sorts one line. A line that is not JSON is a parse error (-32700); JSON that is not a
/// JSON-RPC message is an invalid request (-32600).
pub(crate) fn parse(line: &str) -> Result<Incoming, Box<BadLine>> {
    let value: Value = serde_json::from_str(line).map_err(|e| {
        Box::new(BadLine {
            id: Value::Null,
            error: RpcError::parse_error().data(json!(e.to_string())),
        })
    })?;
    let invalid = |id: Value, why: &str| {
        Box::new(BadLine {
            id,
            error: RpcError::invalid_request().data(json!(why)),
        })
    };
    let Value::Object(mut message) = value else {
        return Err(invalid(Value::Null, "a message is a JSON object"));
    };
    let id = message.remove("id");
    if let Some(id) = &id
        && !(id.is_string() || id.is_number() || id.is_null())
    {
        return Err(invalid(Value::Null, "\"id\" is a string or a number"));
    }
    match message.remove("method") {
        Some(Value::String(method)) => {
            let params = message.remove("params").unwrap_or(Value::Null);
            Ok(match id {
                Some(id) => Incoming::Request { id, method, params },
                None => Incoming::Notification { method, params },
            })
        }
        Some(_) => Err(invalid(id.unwrap_or(Value::Null), "\"method\" is a string")),
        None => {
            let Some(id) = id else {
                return Err(invalid(Value::Null, "neither a request nor a response"));
            };
            let outcome = match (message.remove("result"), message.remove("error")) {
                (_, Some(error)) => Err(serde_json::from_value(error).unwrap_or_else(|_| {
                    RpcError::internal_error().data(json!("the client's error was malformed"))
                })),
                (Some(result), None) => Ok(result),
                (None, None) => return Err(invalid(id, "a response has a result or an error")),
            };
            Ok(Incoming::Response { id, outcome })
        }
    }
}

/// Where the answer to one of our requests arrives.
type Answer = oneshot::Receiver<Result<Value, RpcError>>;

/// The client as we talk to it: one ordered stream of messages out, and our requests
/// waiting for answers.
pub(crate) struct Peer {
    /// Lines to write; `None` ends the writer (the peer is held in places a session's
    /// tools also reach, so the writer cannot wait for every sender to be dropped).
    out: mpsc::UnboundedSender<Option<String>>,
    pending: Mutex<HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>>,
    next_id: AtomicU64,
}

impl Peer {
    /// A peer writing to standard output, and the task that writes (it ends at
    /// [`Peer::finish`], after writing everything sent before).
    pub(crate) fn stdout() -> (Peer, tokio::task::JoinHandle<()>) {
        let (out, mut lines) = mpsc::unbounded_channel::<Option<String>>();
        let writer = tokio::spawn(async move {
            let mut stdout = tokio::io::stdout();
            while let Some(Some(line)) = lines.recv().await {
                if stdout.write_all(line.as_bytes()).await.is_err()
                    || stdout.write_all(b"\n").await.is_err()
                    || stdout.flush().await.is_err()
                {
                    // The client is gone; the reader sees its end of input.
                    break;
                }
            }
        });
        (Peer::new(out), writer)
    }

    pub(crate) fn new(out: mpsc::UnboundedSender<Option<String>>) -> Peer {
        Peer {
            out,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
        }
    }

    fn send(&self, message: &Value) {
        // One line each: serde_json never writes a raw newline inside a value.
        let _ = self.out.send(Some(message.to_string()));
    }

    /// Ends the writer once what was sent before is written.
    pub(crate) fn finish(&self) {
        let _ = self.out.send(None);
    }

    /// Answers request `id`.
    pub(crate) fn respond(&self, id: Value, outcome: Result<Value, RpcError>) {
        let message = match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        self.send(&message);
    }

    /// A notification (`session/update`).
    pub(crate) fn notify(&self, method: &str, params: impl Serialize) {
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Asks the client and waits for its answer. Dropping the future withdraws the
    /// question (`$/cancel_request`), so a cancelled turn leaves no question open.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: impl Serialize,
    ) -> Result<Value, RpcError> {
        let (id, rx) = self.ask(method, params);
        let mut guard = Withdraw {
            peer: self,
            id,
            armed: true,
        };
        let answer = rx.await;
        guard.armed = false;
        answer.unwrap_or_else(|_| {
            Err(RpcError::internal_error().data(json!("the client went away before answering")))
        })
    }

    /// Asks the client without waiting: the request is queued now, in order with the
    /// updates around it, and a failed answer is logged.
    pub(crate) fn request_detached(&self, method: &str, params: impl Serialize) {
        let (_, rx) = self.ask(method, params);
        let method = method.to_string();
        tokio::spawn(async move {
            if let Ok(Err(e)) = rx.await {
                tracing::warn!("the editor failed {method}: {}", e.message);
            }
        });
    }

    /// Sends request `method` now: its id, and where its answer will come.
    fn ask(&self, method: &str, params: impl Serialize) -> (u64, Answer) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id, tx);
        }
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        (id, rx)
    }

    /// The client answered request `id`; an answer to nothing we asked is dropped.
    pub(crate) fn resolve(&self, id: &Value, outcome: Result<Value, RpcError>) {
        let Some(id) = id.as_u64() else {
            return;
        };
        let waiting = self.pending.lock().ok().and_then(|mut p| p.remove(&id));
        if let Some(waiting) = waiting {
            let _ = waiting.send(outcome);
        }
    }

    /// The client is gone: every question still open fails.
    pub(crate) fn close(&self) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.clear();
        }
    }
}

/// Withdraws an unanswered request when its waiter is dropped.
struct Withdraw<'a> {
    peer: &'a Peer,
    id: u64,
    armed: bool,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let removed = self
            .peer
            .pending
            .lock()
            .ok()
            .and_then(|mut p| p.remove(&self.id));
        if removed.is_some() {
            self.peer
                .notify("$/cancel_request", json!({"requestId": self.id}));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_sort_into_requests_notifications_and_responses() {
        let request = parse(r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}"#);
        assert!(
            matches!(request, Ok(Incoming::Request { ref method, .. }) if method == "initialize")
        );
        let note =
            parse(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"a"}}"#);
        assert!(matches!(note, Ok(Incoming::Notification { .. })));
        let answer =
            parse(r#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}"#);
        assert!(matches!(
            answer,
            Ok(Incoming::Response { outcome: Ok(_), .. })
        ));
        let failed = parse(r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"x"}}"#);
        assert!(matches!(
            failed,
            Ok(Incoming::Response {
                outcome: Err(_),
                ..
            })
        ));
    }

    #[test]
    fn bad_lines_are_errors_with_the_right_codes() {
        let garbage = parse("this is not json").unwrap_err();
        assert_eq!(i32::from(garbage.error.code), -32700);
        let not_rpc = parse(r#"{"id": 3, "hello": 1}"#).unwrap_err();
        assert_eq!(i32::from(not_rpc.error.code), -32600);
        assert_eq!(not_rpc.id, json!(3));
        assert!(parse("[1,2]").is_err());
        assert!(parse(r#"{"id": {"x": 1}, "method": "a"}"#).is_err());
    }

    proptest::proptest! {
        /// No line, however broken, makes the parser panic.
        #[test]
        fn no_line_panics(line in ".{0,200}") {
            let _ = parse(&line);
        }
    }
}
