//! The HTTP side of the fake servers of the formats other than Chat Completions
//! (`fake_gemini.rs`, `fake_responses.rs`): one request per connection on 127.0.0.1, read
//! with the Chat Completions fake's reader, answered with what the format's script says —
//! a stream written in small pieces with chunked transfer encoding (so events split
//! inside JSON), possibly cut off, or a JSON body with a status.

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use crate::fake_server::{read_request, write_chunks};

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

/// Serves `listener` until the task is aborted, answering each request with `answer`;
/// a connection error goes to `on_error`.
pub(crate) async fn serve(
    listener: TcpListener,
    answer: Arc<dyn Fn(FakeRequest) -> Answer + Send + Sync>,
    on_error: Arc<dyn Fn(String) + Send + Sync>,
) {
    while let Ok((stream, _)) = listener.accept().await {
        let _ = stream.set_nodelay(true);
        let answer = answer.clone();
        let on_error = on_error.clone();
        tokio::spawn(async move {
            if let Err(e) = handle(stream, answer.as_ref()).await
                && !matches!(
                    e.kind(),
                    std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
                )
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

async fn handle(
    mut stream: TcpStream,
    answer: &(dyn Fn(FakeRequest) -> Answer + Send + Sync),
) -> std::io::Result<()> {
    let Some((head, body)) = read_request(&mut stream).await? else {
        return Ok(());
    };
    let mut lines = head.lines();
    let mut request_line = lines.next().unwrap_or_default().split_whitespace();
    let method = request_line.next().unwrap_or_default().to_string();
    let path = request_line.next().unwrap_or_default().to_string();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let request = FakeRequest {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    match answer(request) {
        Answer::Stream { body, piece, cut } => {
            stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
                )
                .await?;
            match cut {
                Some(n) => {
                    let n = n.min(body.len().saturating_sub(1));
                    write_chunks(&mut stream, &body.as_bytes()[..n], piece).await?;
                }
                None => {
                    write_chunks(&mut stream, body.as_bytes(), piece).await?;
                    stream.write_all(b"0\r\n\r\n").await?;
                }
            }
        }
        Answer::Json {
            status,
            headers,
            body,
        } => {
            let extra: String = headers
                .iter()
                .map(|(k, v)| format!("{k}: {v}\r\n"))
                .collect();
            let head = format!(
                "HTTP/1.1 {status} Fake\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n",
                body.len()
            );
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(body.as_bytes()).await?;
        }
    }
    stream.flush().await?;
    stream.shutdown().await
}
