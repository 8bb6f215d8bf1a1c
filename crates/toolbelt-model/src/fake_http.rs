//! The HTTP side of every fake model server (`fake_server.rs`, `fake_gemini.rs`,
//! `fake_responses.rs`): hyper's HTTP/1.1 server on 127.0.0.1, one request per
//! connection, answered with what the format's script says — a stream written in small
//! pieces with chunked transfer encoding (so events split inside JSON), possibly cut off,
//! or a JSON body with a status.
//!
//! Each piece of a stream is its own chunk on the wire: the body waits a scheduler turn
//! between pieces, and hyper writes out what it holds whenever the body is not ready. A
//! cut stream ends with an error from the body, on which hyper drops the connection
//! without the last chunk: a broken stream to the client.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;

/// One request as received.
#[derive(Debug, Clone)]
pub struct FakeRequest {
    /// The method, e.g. `POST`.
    pub method: String,
    /// The path with its query.
    pub path: String,
    /// The headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The JSON body (`Null` when it was not JSON).
    pub body: Value,
}

impl FakeRequest {
    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What goes back on the wire.
pub(crate) enum Answer {
    /// An event stream: `body`, written `piece` bytes at a time; with `cut`, only that
    /// many bytes, then the connection is dropped without the final chunk.
    Stream {
        body: String,
        piece: usize,
        cut: Option<usize>,
    },
    /// A JSON body with a status and extra headers.
    Json {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
}

/// A request's answer, found asynchronously (a rendezvous, a delay).
pub(crate) type Answering =
    Arc<dyn Fn(FakeRequest) -> Pin<Box<dyn Future<Output = Answer> + Send>> + Send + Sync>;

/// Where a connection error is reported.
pub(crate) type OnError = Arc<dyn Fn(String) + Send + Sync>;

/// Serves `listener` until the task is aborted, answering each request with `answer`;
/// a connection error goes to `on_error`.
pub(crate) async fn serve(
    listener: TcpListener,
    answer: Arc<dyn Fn(FakeRequest) -> Answer + Send + Sync>,
    on_error: OnError,
) {
    let answering: Answering = Arc::new(move |request| {
        let answer = answer(request);
        Box::pin(async move { answer })
    });
    serve_async(listener, answering, on_error).await;
}

/// [`serve`] with an answer that may wait.
pub(crate) async fn serve_async(listener: TcpListener, answer: Answering, on_error: OnError) {
    while let Ok((stream, _)) = listener.accept().await {
        // Streams are written in small pieces; without this, Nagle's algorithm and the
        // client's delayed ACKs would add tens of milliseconds per answer.
        let _ = stream.set_nodelay(true);
        let answer = answer.clone();
        let on_error = on_error.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let answer = answer.clone();
                async move {
                    let request = read(request).await;
                    Ok::<_, Infallible>(respond(answer(request).await))
                }
            });
            let served = hyper::server::conn::http1::Builder::new()
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(e) = served
                && !client_left_or_cut(&e)
            {
                on_error(format!("connection error: {e}"));
            }
        });
    }
}

/// Binds 127.0.0.1 on a free port.
pub(crate) async fn bind() -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    Ok((listener, addr))
}

/// The request with its whole body; a body that did not arrive reads as empty.
async fn read(request: Request<Incoming>) -> FakeRequest {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    FakeRequest {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map(ToString::to_string)
            .unwrap_or_default(),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                let value = String::from_utf8_lossy(v.as_bytes()).trim().to_string();
                (k.as_str().to_string(), value)
            })
            .collect(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    }
}

/// The body error that cuts a stream short on purpose.
#[derive(Debug)]
struct CutOff;

impl std::fmt::Display for CutOff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the script cut the stream here")
    }
}

impl std::error::Error for CutOff {}

type Body = BoxBody<Bytes, CutOff>;

fn respond(answer: Answer) -> Response<Body> {
    match answer {
        Answer::Stream { body, piece, cut } => {
            let mut response = Response::new(stream_body(body, piece, cut));
            let headers = response.headers_mut();
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            response
        }
        Answer::Json {
            status,
            headers,
            body,
        } => {
            let mut response =
                Response::new(Full::new(Bytes::from(body)).map_err(|e| match e {}).boxed());
            *response.status_mut() =
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let map = response.headers_mut();
            map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            for (name, value) in headers {
                if let (Ok(name), Ok(value)) = (
                    HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_str(&value),
                ) {
                    map.append(name, value);
                }
            }
            response
        }
    }
}

/// `body` in pieces of `piece` bytes, each flushed on its own; with `cut`, only that many
/// bytes (never all of them), then the error that drops the connection.
fn stream_body(body: String, piece: usize, cut: Option<usize>) -> Body {
    let body = Bytes::from(body);
    let sent = match cut {
        Some(n) => body.slice(..n.min(body.len().saturating_sub(1))),
        None => body,
    };
    let piece = piece.max(1);
    let pieces = futures::stream::unfold((sent, true), move |(rest, first)| async move {
        if !first {
            // Not ready once: hyper writes out the piece before, and the next is a chunk
            // of its own (the error of a cut stream comes after the last piece is out).
            tokio::task::yield_now().await;
        }
        if rest.is_empty() {
            return cut.is_some().then_some((Err(CutOff), (rest, false)));
        }
        let n = piece.min(rest.len());
        let frame = Frame::data(rest.slice(..n));
        Some((Ok(frame), (rest.slice(n..), false)))
    });
    BodyExt::boxed(StreamBody::new(pieces))
}

/// Whether a connection ended as a client may end it (hanging up once it has read
/// `[DONE]`, before the final chunk, or before sending a whole request), or as the
/// script cut it: neither is a violation.
fn client_left_or_cut(e: &hyper::Error) -> bool {
    if e.is_incomplete_message() || e.is_canceled() {
        return true;
    }
    let mut source = std::error::Error::source(e);
    while let Some(err) = source {
        if err.is::<CutOff>() {
            return true;
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
            )
        {
            return true;
        }
        source = err.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The raw answer to one request, and the connection errors reported.
    async fn raw_answer(answer: Answer) -> (String, Vec<String>) {
        let (listener, addr) = bind().await.unwrap();
        let answer = std::sync::Mutex::new(Some(answer));
        let errors = Arc::new(std::sync::Mutex::new(Vec::new()));
        let errors_seen = errors.clone();
        let task = tokio::spawn(serve(
            listener,
            Arc::new(move |_| answer.lock().unwrap().take().unwrap()),
            Arc::new(move |e| errors_seen.lock().unwrap().push(e)),
        ));
        let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
        client
            .write_all(b"POST /x HTTP/1.1\r\nhost: a\r\ncontent-length: 2\r\n\r\n{}")
            .await
            .unwrap();
        let mut out = Vec::new();
        let _ = client.read_to_end(&mut out).await;
        task.abort();
        let errors = errors.lock().unwrap().clone();
        (String::from_utf8_lossy(&out).into_owned(), errors)
    }

    #[tokio::test]
    async fn a_stream_goes_in_chunks_of_its_piece_size_and_a_cut_one_lacks_the_last_chunk() {
        let body = "abcdefghij".repeat(3);
        let (whole, errors) = raw_answer(Answer::Stream {
            body: body.clone(),
            piece: 7,
            cut: None,
        })
        .await;
        assert!(
            whole.contains("\r\n\r\n7\r\nabcdefg\r\n7\r\nhijabcd\r\n"),
            "{whole}"
        );
        assert!(whole.ends_with("2\r\nij\r\n0\r\n\r\n"), "{whole}");
        assert!(errors.is_empty(), "{errors:?}");
        let (cut, errors) = raw_answer(Answer::Stream {
            body,
            piece: 7,
            cut: Some(10),
        })
        .await;
        assert!(cut.ends_with("7\r\nabcdefg\r\n3\r\nhij\r\n"), "{cut}");
        assert!(
            errors.is_empty(),
            "the script's cut is no violation: {errors:?}"
        );
    }
}
