//! The test server over HTTP on 127.0.0.1: rmcp's Streamable HTTP service at `/mcp`, and
//! a small legacy HTTP+SSE endpoint (`GET /sse`, `POST /message?sessionId=N`) that feeds
//! the same handler through channels, since rmcp no longer ships an SSE server.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::TestServer;

type Body = BoxBody<Bytes, Infallible>;

fn sessions() -> &'static Mutex<HashMap<u64, mpsc::Sender<ClientJsonRpcMessage>>> {
    static SESSIONS: OnceLock<Mutex<HashMap<u64, mpsc::Sender<ClientJsonRpcMessage>>>> =
        OnceLock::new();
    SESSIONS.get_or_init(Default::default)
}

pub async fn serve() {
    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("testserver: cannot listen: {e}");
            return;
        }
    };
    let Ok(addr) = listener.local_addr() else {
        return;
    };
    println!("http://{addr}");
    let streamable = StreamableHttpService::new(
        || Ok(TestServer),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let streamable = streamable.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let mut streamable = streamable.clone();
                async move {
                    let response: Response<Body> = match req.uri().path() {
                        "/mcp" => match tower_service::Service::call(&mut streamable, req).await {
                            Ok(response) => response,
                            Err(never) => match never {},
                        },
                        "/sse" => open_sse(),
                        "/message" => post_message(req).await,
                        _ => status(StatusCode::NOT_FOUND),
                    };
                    Ok::<_, Infallible>(response)
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn status(code: StatusCode) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = code;
    response
}

/// `GET /sse`: a new session; the first event says where to POST.
fn open_sse() -> Response<Body> {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = NEXT.fetch_add(1, Ordering::SeqCst);
    let (to_server, from_client) = mpsc::channel::<ClientJsonRpcMessage>(64);
    let (to_client, from_server) = mpsc::channel::<ServerJsonRpcMessage>(64);
    if let Ok(mut map) = sessions().lock() {
        map.insert(id, to_server);
    }
    tokio::spawn(async move {
        if let Ok(running) = TestServer.serve((to_client, from_client)).await {
            let _ = running.waiting().await;
        }
    });
    let endpoint = format!("event: endpoint\ndata: /message?sessionId={id}\n\n");
    let events = futures::stream::once(async move { endpoint }).chain(from_server.map(|message| {
        let json = serde_json::to_string(&message).unwrap_or_default();
        format!("event: message\ndata: {json}\n\n")
    }));
    let body = StreamBody::new(events.map(|s| Ok::<_, Infallible>(Frame::data(Bytes::from(s)))));
    let mut response = Response::new(BodyExt::boxed(body));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// `POST /message?sessionId=N`: one message from the client.
async fn post_message(req: Request<Incoming>) -> Response<Body> {
    let id = req
        .uri()
        .query()
        .and_then(|q| q.strip_prefix("sessionId="))
        .and_then(|n| n.parse::<u64>().ok());
    let sender = id.and_then(|id| sessions().lock().ok().and_then(|m| m.get(&id).cloned()));
    let Some(mut sender) = sender else {
        return status(StatusCode::NOT_FOUND);
    };
    let Ok(body) = req.into_body().collect().await else {
        return status(StatusCode::BAD_REQUEST);
    };
    let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(&body.to_bytes()) else {
        return status(StatusCode::BAD_REQUEST);
    };
    if sender.send(message).await.is_err() {
        return status(StatusCode::GONE);
    }
    status(StatusCode::ACCEPTED)
}
