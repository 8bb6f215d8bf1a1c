//! The login's redirect: a one-shot HTTP listener on `127.0.0.1` (never another
//! interface) that waits for the browser to come back with the authorization code.
//!
//! Anything else that reaches the port (another path, another method, a request whose
//! `state` is not this login's, as a web page in the browser could send) is answered
//! with an error page and ignored: only the redirect of the authorization toolbelt
//! started ends the wait. The browser is answered only once the code has been
//! exchanged, so the page says whether the login worked. A request is read with a time
//! limit and a size cap, so a client that sends nothing blocks nothing for long.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::error::McpAuthError;

/// The largest request head read.
const MAX_REQUEST: usize = 16 * 1024;
/// How long one connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The path the redirect comes back to.
const CALLBACK_PATH: &str = "/callback";

/// The listener, bound.
pub(crate) struct RedirectListener {
    listener: TcpListener,
    port: u16,
}

/// What the authorization server sent back, with the browser still waiting for a page.
pub(crate) struct Redirected {
    pub(crate) code: String,
    pub(crate) state: String,
    /// RFC 9207's `iss`, when the server sent one.
    pub(crate) issuer: Option<String>,
    browser: TcpStream,
}

impl RedirectListener {
    /// Listens on `127.0.0.1:port` (any free port when `None`).
    pub(crate) async fn bind(port: Option<u16>) -> Result<RedirectListener, McpAuthError> {
        let listener = TcpListener::bind(("127.0.0.1", port.unwrap_or(0)))
            .await
            .map_err(|e| {
                McpAuthError::Flow(format!(
                    "cannot listen on 127.0.0.1:{} for the login's redirect: {e}",
                    port.unwrap_or(0)
                ))
            })?;
        let port = listener
            .local_addr()
            .map_err(|e| McpAuthError::Flow(format!("the redirect listener has no port: {e}")))?
            .port();
        Ok(RedirectListener { listener, port })
    }

    /// `http://127.0.0.1:<port>/callback`.
    pub(crate) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    /// Waits for the redirect that carries `state`. The authorization server's own
    /// refusal (`error=...`) with that state ends the wait with its reason.
    pub(crate) async fn wait(&self, state: &str) -> Result<Redirected, McpAuthError> {
        loop {
            let (stream, _) =
                self.listener.accept().await.map_err(|e| {
                    McpAuthError::Flow(format!("the redirect listener failed: {e}"))
                })?;
            if let Some(outcome) = read_redirect(stream, state).await {
                return outcome;
            }
        }
    }
}

impl Redirected {
    /// Answers the browser: the login worked, or why not.
    pub(crate) async fn finish(mut self, outcome: Result<(), &str>) {
        let (status, text) = match outcome {
            Ok(()) => (
                "200 OK",
                "Logged in. toolbelt has the token; you can close this tab.".to_string(),
            ),
            Err(why) => ("400 Bad Request", format!("The login failed: {why}")),
        };
        respond(&mut self.browser, status, &text).await;
    }
}

/// One connection: `None` when it is not this login's redirect (answered and ignored).
async fn read_redirect(
    mut stream: TcpStream,
    state: &str,
) -> Option<Result<Redirected, McpAuthError>> {
    let head = match tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await {
        Ok(Some(head)) => head,
        _ => return None,
    };
    let target = match head.split_whitespace().collect::<Vec<_>>()[..] {
        ["GET", target, version, ..] if version.starts_with("HTTP/1.") => target.to_string(),
        _ => {
            respond(&mut stream, "400 Bad Request", "Not a login redirect.").await;
            return None;
        }
    };
    let url = url::Url::parse(&format!("http://127.0.0.1{target}")).ok()?;
    if url.path() != CALLBACK_PATH {
        respond(&mut stream, "404 Not Found", "Not a login redirect.").await;
        return None;
    }
    let param = |name: &str| {
        url.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    if param("state").as_deref() != Some(state) {
        let text = "This is not the login toolbelt is waiting for.";
        respond(&mut stream, "400 Bad Request", text).await;
        return None;
    }
    if let Some(error) = param("error") {
        let description = param("error_description").unwrap_or_default();
        let why = refusal_text(&error, &description);
        respond(
            &mut stream,
            "400 Bad Request",
            &format!("The login failed: {why}"),
        )
        .await;
        return Some(Err(McpAuthError::Flow(format!(
            "the authorization server refused the login: {why}"
        ))));
    }
    let Some(code) = param("code") else {
        respond(&mut stream, "400 Bad Request", "The redirect has no code.").await;
        return Some(Err(McpAuthError::Flow(
            "the authorization server's redirect had no code".into(),
        )));
    };
    Some(Ok(Redirected {
        code,
        state: state.to_string(),
        issuer: param("iss"),
        browser: stream,
    }))
}

/// The server's `error` and `error_description`, cut short and masked: they are its
/// text, shown in a terminal.
fn refusal_text(error: &str, description: &str) -> String {
    let text = if description.is_empty() {
        error.to_string()
    } else {
        format!("{error}: {description}")
    };
    let text: String = text.chars().filter(|c| !c.is_control()).take(300).collect();
    toolbelt_config::redact::redact(&text)
}

/// The request line and headers, up to the blank line; `None` past [`MAX_REQUEST`].
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buffer.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || buffer.len() + n > MAX_REQUEST {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    Some(String::from_utf8_lossy(&buffer).into_owned())
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) {
    let body = format!(
        "<!doctype html><meta charset=utf-8><title>toolbelt</title><p>{}</p>\n",
        escape(text)
    );
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    // The browser may have gone; the login's outcome does not depend on this page.
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
