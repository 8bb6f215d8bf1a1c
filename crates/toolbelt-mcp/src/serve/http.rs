//! Streamable HTTP (2025-03-26 to 2025-11-25) at `/mcp`: rmcp's service behind the
//! checks a local server owes its user.
//!
//! - **Loopback by default.** A non-loopback address is refused unless a bearer token is
//!   required: a tool server that runs commands must not be open to the network.
//! - **`Origin`**: a request that carries one must come from a loopback page
//!   (`http://localhost:*`, `http://127.0.0.1:*`, `http://[::1]:*`), or it gets 403. A
//!   web page the user visits could otherwise drive the server through DNS rebinding;
//!   clients that are not browsers send no `Origin`. rmcp's `Host` check stays on for
//!   loopback binds for the same reason.
//! - **Bearer token**: with one configured, every request must carry
//!   `Authorization: Bearer <token>` (compared in constant time), or it gets 401.
//! - **`TCP_NODELAY`** on every accepted connection (see where it is set).
//! - **Sessions**: rmcp's, with ids from a UUID v4 (the OS's secure random source).
//! - **Stateless** ([`HttpOptions::stateless`]): no session; each POST is answered on its
//!   own, with JSON when the call sends nothing before its result. Any process can answer
//!   any request, so several can stand behind an ordinary load balancer; the price is
//!   that nothing can be asked of the client (no elicitation, no roots).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, HeaderValue, ORIGIN, WWW_AUTHENTICATE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::{ServeOptions, ToolbeltServer, Workspaces};

/// The path of the MCP endpoint.
pub const ENDPOINT: &str = "/mcp";

/// How the HTTP endpoint is served.
pub struct HttpOptions {
    /// Where to listen (port 0: any free port).
    pub addr: SocketAddr,
    /// The bearer token every request must carry; required for a non-loopback address.
    pub token: Option<String>,
    /// Serve without sessions (see the module documentation).
    pub stateless: bool,
}

/// Why the endpoint could not be served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// A non-loopback address without a token.
    #[error(
        "refusing to listen on {0} without a token: a non-loopback address needs --auth-token-env NAME (clients then send Authorization: Bearer <token>)"
    )]
    OpenWithoutToken(SocketAddr),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

type Body = BoxBody<Bytes, Infallible>;

/// Listens on `options.addr`; calls `ready` with the bound address, then serves until
/// `stop` is cancelled.
pub async fn serve(
    http: HttpOptions,
    workspaces: Arc<dyn Workspaces>,
    options: Arc<ServeOptions>,
    stop: CancellationToken,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), HttpError> {
    let loopback = http.addr.ip().is_loopback();
    if !loopback && http.token.as_deref().is_none_or(str::is_empty) {
        return Err(HttpError::OpenWithoutToken(http.addr));
    }
    let listener = tokio::net::TcpListener::bind(http.addr)
        .await
        .map_err(|source| HttpError::Bind {
            addr: http.addr,
            source,
        })?;
    let bound = listener.local_addr().map_err(|source| HttpError::Bind {
        addr: http.addr,
        source,
    })?;
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!http.stateless)
        .with_json_response(http.stateless)
        .with_cancellation_token(stop.child_token());
    if !loopback {
        // The token guards a public address; its host names are the operator's.
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(ToolbeltServer::new(workspaces.clone(), options.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let token: Option<Arc<[u8]>> = http
        .token
        .filter(|t| !t.is_empty())
        .map(|t| Arc::from(format!("Bearer {t}").into_bytes()));
    ready(bound);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.cancelled() => return Ok(()),
        };
        let Ok((stream, _)) = accepted else {
            continue;
        };
        // An answer leaves as several writes (headers, then each SSE event). With Nagle's
        // algorithm on, a write waits for the ACK of the one before it, and the client
        // delays that ACK for up to 40 ms: every call took 44 ms. Each write here is a
        // whole message the client is waiting for, so there is nothing to coalesce.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set on an accepted connection: {e}");
        }
        let service = service.clone();
        let token = token.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |req: Request<Incoming>| {
                let mut service = service.clone();
                let token = token.clone();
                async move {
                    if let Some(refusal) = check(&req, token.as_deref()) {
                        return Ok::<_, Infallible>(refusal);
                    }
                    let ends_session = req.method() == hyper::Method::DELETE;
                    let mut response = match tower_service::Service::call(&mut service, req).await {
                        Ok(response) => response,
                        Err(never) => match never {},
                    };
                    // rmcp answers a session's end with 202; the Python SDK takes only
                    // 200 or 204 and logs a failure for anything else.
                    if ends_session && response.status() == StatusCode::ACCEPTED {
                        *response.status_mut() = StatusCode::NO_CONTENT;
                    }
                    Ok(response)
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), handler)
                .await;
        });
    }
}

/// The refusal of a request that fails the path, `Origin` or token check.
fn check(req: &Request<Incoming>, token: Option<&[u8]>) -> Option<Response<Body>> {
    if req.uri().path() != ENDPOINT {
        return Some(plain(
            StatusCode::NOT_FOUND,
            "not found: the MCP endpoint is /mcp",
        ));
    }
    if let Some(origin) = req.headers().get(ORIGIN)
        && !loopback_origin(origin)
    {
        return Some(plain(
            StatusCode::FORBIDDEN,
            "forbidden: requests from web pages are accepted only from loopback origins",
        ));
    }
    if let Some(expected) = token {
        let given = req
            .headers()
            .get(AUTHORIZATION)
            .map(HeaderValue::as_bytes)
            .unwrap_or_default();
        if !constant_time_eq(given, expected) {
            let mut response = plain(
                StatusCode::UNAUTHORIZED,
                "unauthorized: send Authorization: Bearer <token>",
            );
            response
                .headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return Some(response);
        }
    }
    None
}

/// `http(s)://localhost`, `127.0.0.1` or `[::1]`, any port.
fn loopback_origin(origin: &HeaderValue) -> bool {
    let Some(url) = origin.to_str().ok().and_then(|o| url::Url::parse(o).ok()) else {
        return false;
    };
    matches!(url.scheme(), "http" | "https")
        && match url.host() {
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        }
}

/// Equal bytes, in a time that depends on the lengths only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_origins_pass() {
        for ok in [
            "http://localhost:6274",
            "http://127.0.0.1",
            "https://[::1]:8080",
            "http://LOCALHOST:1",
        ] {
            assert!(loopback_origin(&HeaderValue::from_static(ok)), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "http://localhost.evil.example",
            "null",
            "file://",
            "http://10.0.0.1:80",
            "http://127.0.0.1.nip.io",
        ] {
            assert!(!loopback_origin(&HeaderValue::from_static(bad)), "{bad}");
        }
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"Bearer abc", b"Bearer abc"));
        assert!(!constant_time_eq(b"Bearer ab", b"Bearer abc"));
        assert!(!constant_time_eq(b"Bearer abd", b"Bearer abc"));
        assert!(!constant_time_eq(b"", b"Bearer abc"));
    }
}
