//! `web_fetch` against real HTTP servers on 127.0.0.1 (the test settings open loopback
//! through `tools.webFetch.allowHosts`, as a person would for a local docs server).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use toolbelt_config::settings::Settings;
use toolbelt_core::{ConfirmationDetails, ErrorKind, ExecContext, PermissionSubject, Tool};

use super::WebFetch;
use crate::test_support::{Fixture, err_kind, fixture_with};
use toolbelt_netguard::HostResolver;

/// A body the server sends for a path.
#[derive(Clone)]
pub(super) enum Route {
    Page {
        content_type: &'static str,
        body: Vec<u8>,
    },
    Status(u16),
    Redirect(String),
    /// This many bytes of `x`, counted as the kernel accepts them.
    Endless(u64),
    /// Headers and the first bytes, then nothing more.
    Stall,
}

pub(super) struct Server {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    /// Bytes of [`Route::Endless`] bodies accepted by the kernel.
    sent: Arc<AtomicU64>,
    /// Notified when an endless body's write fails (the client went away).
    dropped: Arc<Notify>,
    /// The `Accept` header of the last request.
    accept: Arc<std::sync::Mutex<String>>,
}

impl Server {
    pub(super) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

pub(super) async fn serve(routes: HashMap<&'static str, Route>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = Server {
        addr: listener.local_addr().unwrap(),
        connections: Arc::default(),
        sent: Arc::default(),
        dropped: Arc::default(),
        accept: Arc::default(),
    };
    let routes = Arc::new(routes);
    let (connections, sent, dropped, accept) = (
        server.connections.clone(),
        server.sent.clone(),
        server.dropped.clone(),
        server.accept.clone(),
    );
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            connections.fetch_add(1, Ordering::SeqCst);
            let (routes, sent, dropped, accept) = (
                routes.clone(),
                sent.clone(),
                dropped.clone(),
                accept.clone(),
            );
            tokio::spawn(async move {
                respond(stream, &routes, &sent, &dropped, &accept).await;
            });
        }
    });
    server
}

async fn respond(
    mut stream: TcpStream,
    routes: &HashMap<&'static str, Route>,
    sent: &AtomicU64,
    dropped: &Notify,
    accept: &std::sync::Mutex<String>,
) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    if let Some(line) = head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("accept:"))
    {
        *accept.lock().unwrap() = line[7..].trim().to_string();
    }
    let route = routes
        .get(path.as_str())
        .cloned()
        .unwrap_or(Route::Status(404));
    match route {
        Route::Page { content_type, body } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&body).await;
        }
        Route::Status(code) => {
            let body = format!("status {code}");
            let head = format!(
                "HTTP/1.1 {code} Whatever\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
        }
        Route::Redirect(to) => {
            let head = format!(
                "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = stream.write_all(head.as_bytes()).await;
        }
        Route::Endless(total) => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {total}\r\nConnection: close\r\n\r\n"
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let chunk = vec![b'x'; 64 * 1024];
            let mut left = total;
            while left > 0 {
                let n = left.min(chunk.len() as u64) as usize;
                match stream.write(&chunk[..n]).await {
                    Ok(0) | Err(_) => break,
                    Ok(written) => {
                        sent.fetch_add(written as u64, Ordering::SeqCst);
                        left -= written as u64;
                    }
                }
            }
            if left > 0 {
                dropped.notify_one();
            }
        }
        Route::Stall => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\nConnection: close\r\n\r\nthe beginning";
            let _ = stream.write_all(head.as_bytes()).await;
            // Hold the connection open until the client gives up.
            let _ = stream.read(&mut buf).await;
        }
    }
}

fn settings(web_fetch: serde_json::Value) -> Settings {
    serde_json::from_value(json!({ "tools": { "webFetch": web_fetch } })).unwrap()
}

/// A workspace whose settings open 127.0.0.1 to `web_fetch`.
pub(super) fn loopback_fixture() -> Fixture {
    fixture_with(
        1_000_000,
        100_000,
        settings(json!({ "allowHosts": ["127.0.0.1"], "timeout": 5000 })),
    )
}

pub(super) fn page(content_type: &'static str, body: impl Into<Vec<u8>>) -> Route {
    Route::Page {
        content_type,
        body: body.into(),
    }
}

pub(super) async fn fetch(fx: &Fixture, url: &str) -> toolbelt_core::ToolResult {
    fx.call(
        "web_fetch",
        json!({"url": url, "prompt": "what is on the page?"}),
    )
    .await
}

pub(super) fn text(r: &toolbelt_core::ToolResult) -> String {
    r.llm_text()
}

#[tokio::test]
async fn html_becomes_markdown_without_scripts_and_with_its_charset() {
    // windows-1252 bytes, declared only in the document: "café" is 0xE9.
    let mut html = b"<!doctype html><html><head><meta charset=\"windows-1252\"><title>T</title>\
        <style>body{color:red}</style><script>var secret = 'script text';</script></head><body>\
        <nav><a href=\"/\">Home</a> | <a href=\"/about\">About nav link</a></nav>\
        <h1>Caf"
        .to_vec();
    html.push(0xE9);
    html.extend_from_slice(
        b" menu</h1><p>Espresso costs <strong>2 euros</strong>. See <a href=\"https://example.com/prices\">prices</a>.</p>\
        <footer>Copyright footer text</footer></body></html>",
    );
    let server = serve(HashMap::from([("/page", page("text/html", html))])).await;
    let fx = loopback_fixture();
    let r = fetch(&fx, &server.url("/page")).await;
    assert!(r.error.is_none(), "{:?}", r.error);
    let t = text(&r);
    assert!(t.contains("# Café menu"), "{t}");
    assert!(t.contains("**2 euros**"), "{t}");
    assert!(t.contains("[prices](https://example.com/prices)"), "{t}");
    assert!(
        t.contains("what is on the page?"),
        "the prompt is above the page: {t}"
    );
    for gone in [
        "script text",
        "color:red",
        "About nav link",
        "Copyright footer",
    ] {
        assert!(!t.contains(gone), "{gone} must be dropped: {t}");
    }
    let accept = server.accept.lock().unwrap().clone();
    assert!(accept.starts_with("text/markdown"), "{accept}");
}

#[tokio::test]
async fn the_header_charset_wins_and_text_and_json_pass_through() {
    let (latin, _, _) = encoding_rs::WINDOWS_1252.encode("naïve résumé");
    let server = serve(HashMap::from([
        (
            "/latin",
            page("text/plain; charset=ISO-8859-1", latin.to_vec()),
        ),
        (
            "/json",
            page("application/json", r#"{"a": [1, 2], "b": "<p>x</p>"}"#),
        ),
        ("/md", page("text/markdown", "# Title\n\n* item\n")),
    ]))
    .await;
    let fx = loopback_fixture();
    assert!(text(&fetch(&fx, &server.url("/latin")).await).contains("naïve résumé"));
    assert!(
        text(&fetch(&fx, &server.url("/json")).await).contains(r#"{"a": [1, 2], "b": "<p>x</p>"}"#)
    );
    assert!(text(&fetch(&fx, &server.url("/md")).await).contains("# Title\n\n* item"));
}

#[tokio::test]
async fn the_text_and_html_formats() {
    let html = "<html><body><p>Read <a href=\"https://x.org/doc\">the doc</a> <img src=\"a.png\" alt=\"pic\"></p><script>s()</script></body></html>";
    let server = serve(HashMap::from([(
        "/p",
        page("text/html; charset=utf-8", html),
    )]))
    .await;
    let fx = loopback_fixture();
    let as_text = fx
        .call(
            "web_fetch",
            json!({"url": server.url("/p"), "prompt": "p", "format": "text"}),
        )
        .await;
    let t = text(&as_text);
    assert!(t.contains("Read the doc"), "{t}");
    assert!(
        !t.contains("https://x.org/doc") && !t.contains("a.png"),
        "{t}"
    );
    let as_html = fx
        .call(
            "web_fetch",
            json!({"url": server.url("/p"), "prompt": "p", "format": "html"}),
        )
        .await;
    assert!(text(&as_html).contains("<script>s()</script>"));
}

#[tokio::test]
async fn a_redirect_chain_is_followed_and_each_hop_is_checked() {
    let base = serve(HashMap::from([("/end", page("text/plain", "arrived"))])).await;
    let hops = serve(HashMap::from([
        ("/r3", Route::Redirect("/r2".into())),
        ("/r2", Route::Redirect(base.url("/end"))),
    ]))
    .await;
    let fx = loopback_fixture();
    let r = fetch(&fx, &hops.url("/r3")).await;
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(text(&r).contains("arrived"));
    assert!(
        text(&r).contains(&base.url("/end")),
        "the final URL is named"
    );
}

#[tokio::test]
async fn a_redirect_to_a_private_address_is_refused() {
    let target = serve(HashMap::from([(
        "/secret",
        page("text/plain", "internal data"),
    )]))
    .await;
    let port = target.addr.port();
    let server = serve(HashMap::from([
        (
            "/to-metadata",
            Route::Redirect("http://169.254.169.254/latest/meta-data/".into()),
        ),
        (
            "/to-ipv6-loopback",
            Route::Redirect(format!("http://[::1]:{port}/secret")),
        ),
        (
            "/to-decimal",
            Route::Redirect(format!("http://2130706434:{port}/secret")),
        ),
        ("/to-file", Route::Redirect("file:///etc/passwd".into())),
    ]))
    .await;
    let fx = loopback_fixture();
    for path in [
        "/to-metadata",
        "/to-ipv6-loopback",
        "/to-decimal",
        "/to-file",
    ] {
        let r = fetch(&fx, &server.url(path)).await;
        let e = r
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("{path} must fail"));
        assert_eq!(e.kind, ErrorKind::WebFetchError, "{path}");
        assert!(
            e.message.contains("refused to fetch"),
            "{path}: {}",
            e.message
        );
        assert!(!text(&r).contains("internal data"));
    }
    assert_eq!(target.connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_redirect_loop_stops_after_ten() {
    let server = serve(HashMap::from([("/loop", Route::Redirect("/loop".into()))])).await;
    let fx = loopback_fixture();
    let r = fetch(&fx, &server.url("/loop")).await;
    let e = r.error.expect("a loop must fail");
    assert!(
        e.message.contains("more than 10 redirects"),
        "{}",
        e.message
    );
    assert_eq!(server.connections.load(Ordering::SeqCst), 11);
}

#[tokio::test]
async fn reading_stops_at_the_cap_and_the_connection_is_dropped() {
    let total: u64 = 30 * 1024 * 1024;
    let cap: u64 = 1024 * 1024;
    let server = serve(HashMap::from([("/big", Route::Endless(total))])).await;
    let fx = fixture_with(
        1_000_000,
        100_000,
        settings(json!({ "allowHosts": ["127.0.0.1"], "maxBytes": cap })),
    );
    let r = fetch(&fx, &server.url("/big")).await;
    assert!(r.error.is_none(), "{:?}", r.error);
    let t = text(&r);
    assert!(t.contains("cut at 1.0 MiB"), "{}", &t[..300.min(t.len())]);
    let body = "x".repeat(cap as usize);
    assert!(
        t.contains(&body) && !t.contains(&format!("{body}x")),
        "exactly the cap is read"
    );
    tokio::time::timeout(Duration::from_secs(20), server.dropped.notified())
        .await
        .expect("the server must see the connection dropped, not drained");
    let sent = server.sent.load(Ordering::SeqCst);
    // What the kernel took before the drop: the cap plus socket buffers, far from 30 MB.
    assert!(sent < total / 2, "the server sent {sent} bytes");
}

#[tokio::test]
async fn a_server_that_stalls_mid_body_hits_the_time_limit() {
    let server = serve(HashMap::from([("/stall", Route::Stall)])).await;
    let fx = fixture_with(
        1_000_000,
        100_000,
        settings(json!({ "allowHosts": ["127.0.0.1"], "timeout": 300 })),
    );
    let started = std::time::Instant::now();
    let r = fetch(&fx, &server.url("/stall")).await;
    let e = r.error.expect("a stalled body must fail");
    assert_eq!(e.kind, ErrorKind::Timeout, "{}", e.message);
    assert!(e.message.contains("timed out"), "{}", e.message);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn http_errors_are_tool_errors() {
    let server = serve(HashMap::from([("/boom", Route::Status(500))])).await;
    let fx = loopback_fixture();
    let missing = fetch(&fx, &server.url("/nothing")).await;
    let e = missing.error.expect("404 fails");
    assert_eq!(e.kind, ErrorKind::WebFetchError);
    assert!(e.message.contains("HTTP 404"), "{}", e.message);
    let boom = fetch(&fx, &server.url("/boom")).await;
    assert!(boom.error.expect("500 fails").message.contains("HTTP 500"));
}

#[tokio::test]
async fn binary_content_is_described_not_dumped() {
    let png = [
        &[0x89u8, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a][..],
        &[0u8; 2000],
    ]
    .concat();
    let server = serve(HashMap::from([("/img", page("image/png", png))])).await;
    let fx = loopback_fixture();
    let r = fetch(&fx, &server.url("/img")).await;
    assert!(r.error.is_none());
    let t = text(&r);
    assert!(t.contains("binary content of type image/png"), "{t}");
    assert!(t.contains("2.0 KiB"), "{t}");
    assert!(!t.contains("PNG"), "{t}");
}

#[tokio::test]
async fn private_addresses_are_refused_before_any_connection() {
    let server = serve(HashMap::from([("/", page("text/plain", "local"))])).await;
    let port = server.addr.port();
    let fx = fixture_with(1_000_000, 100_000, Settings::default());
    for host in [
        "127.0.0.1",
        "localhost",
        "[::1]",
        "0.0.0.0",
        "2130706433",
        "0x7f.1",
        "0177.0.0.1",
        "[::ffff:127.0.0.1]",
        "169.254.169.254",
    ] {
        let url = format!("http://{host}:{port}/");
        let r = fetch(&fx, &url).await;
        let e = r.error.unwrap_or_else(|| panic!("{url} must be refused"));
        assert_eq!(e.kind, ErrorKind::WebFetchError, "{url}: {}", e.message);
        assert!(
            e.message.contains("refused to fetch"),
            "{url}: {}",
            e.message
        );
        assert!(
            e.message.contains("tools.webFetch.allowHosts"),
            "{}",
            e.message
        );
    }
    assert_eq!(server.connections.load(Ordering::SeqCst), 0);
}

/// Answers every name with one address, as a hostile DNS server would.
struct FixedResolver(IpAddr);

impl HostResolver for FixedResolver {
    fn lookup(
        &self,
        _host: &str,
    ) -> toolbelt_core::BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        let ip = self.0;
        Box::pin(async move { Ok(vec![ip]) })
    }
}

#[tokio::test]
async fn a_name_resolving_to_loopback_is_refused_and_the_checked_address_is_used() {
    let server = serve(HashMap::from([("/doc", page("text/plain", "docs server"))])).await;
    let url = format!("http://docs.example.test:{}/doc", server.addr.port());
    let resolver = Arc::new(FixedResolver(IpAddr::V4(Ipv4Addr::LOCALHOST)));

    let guarded = fixture_with(1_000_000, 100_000, Settings::default());
    let tool = WebFetch::with_resolver(guarded.env.clone(), resolver.clone());
    let call = tool.build(json!({"url": url, "prompt": "p"})).unwrap();
    let r = call.execute(ExecContext::new(guarded.env.clone())).await;
    let e = r.error.expect("a name resolving to loopback is refused");
    assert!(e.message.contains("docs.example.test"), "{}", e.message);
    assert!(
        e.message.contains("a loopback address (127.0.0.1)"),
        "{}",
        e.message
    );
    assert_eq!(server.connections.load(Ordering::SeqCst), 0);

    // Opened by name: the client connects to the address the resolver gave (the system
    // resolver does not know the name, so no second lookup happened).
    let opened = fixture_with(
        1_000_000,
        100_000,
        settings(json!({ "allowHosts": ["docs.example.test"] })),
    );
    let tool = WebFetch::with_resolver(opened.env.clone(), resolver);
    let call = tool.build(json!({"url": url, "prompt": "p"})).unwrap();
    let r = call.execute(ExecContext::new(opened.env.clone())).await;
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(r.llm_text().contains("docs server"));
}

#[tokio::test]
async fn confirmation_shows_the_host_and_rules_see_the_domain() {
    let fx = fixture_with(1_000_000, 100_000, Settings::default());
    let call = fx
        .build(
            "web_fetch",
            json!({"url": "https://github.com/o/r/blob/main/src/lib.rs", "prompt": "the API"}),
        )
        .unwrap();
    assert_eq!(
        call.permission_subject(),
        PermissionSubject::Domain("raw.githubusercontent.com".into())
    );
    match call.confirmation().await {
        Some(ConfirmationDetails::Info { title, urls, .. }) => {
            assert!(title.contains("raw.githubusercontent.com"), "{title}");
            assert_eq!(
                urls,
                vec!["https://raw.githubusercontent.com/o/r/main/src/lib.rs"]
            );
        }
        other => panic!("expected info confirmation, got {other:?}"),
    }
}

#[tokio::test]
async fn bad_arguments_are_clear_errors() {
    let fx = fixture_with(1_000_000, 100_000, Settings::default());
    for (args, expected) in [
        (json!({"url": "not a url", "prompt": "p"}), "invalid URL"),
        (
            json!({"url": "ftp://example.com/x", "prompt": "p"}),
            "only http and https",
        ),
        (
            json!({"url": "https://example.com", "prompt": "  "}),
            "prompt",
        ),
    ] {
        let r = fx.call("web_fetch", args.clone()).await;
        let e = r.error.unwrap_or_else(|| panic!("{args} must fail"));
        assert!(e.message.contains(expected), "{args}: {}", e.message);
    }
    assert_eq!(
        err_kind(&fx.call("web_fetch", json!({"url": "https://x.org"})).await),
        Some(ErrorKind::InvalidToolParams)
    );
}

/// A model that answers with the question's length, so the test sees what it was given.
struct Echo(std::sync::Mutex<Option<(String, String)>>);

impl toolbelt_core::AskOnce for Echo {
    fn ask<'a>(
        &'a self,
        instructions: &'a str,
        question: &'a str,
        _cancel: &'a tokio_util::sync::CancellationToken,
    ) -> toolbelt_core::BoxFuture<'a, Result<String, toolbelt_core::EmbedderError>> {
        *self.0.lock().unwrap() = Some((instructions.to_string(), question.to_string()));
        Box::pin(async { Ok("The answer is 42.".to_string()) })
    }
}

#[tokio::test]
async fn with_summarize_the_model_is_asked_once_with_only_the_page_and_prompt() {
    let server = serve(HashMap::from([(
        "/p",
        page("text/html", "<p>The value is 42.</p>"),
    )]))
    .await;
    let fx = fixture_with(
        1_000_000,
        100_000,
        settings(json!({ "allowHosts": ["127.0.0.1"], "summarize": true })),
    );
    let echo = Arc::new(Echo(Default::default()));
    fx.env.ask_once.set(echo.clone());
    let r = fx
        .call(
            "web_fetch",
            json!({"url": server.url("/p"), "prompt": "find the value"}),
        )
        .await;
    assert!(
        r.llm_text().starts_with("The answer is 42."),
        "{}",
        r.llm_text()
    );
    assert!(
        r.llm_text().contains(&server.url("/p")),
        "the source is named"
    );
    let (instructions, question) = echo.0.lock().unwrap().clone().unwrap();
    assert!(instructions.contains("one web page"));
    assert!(question.contains("find the value") && question.contains("The value is 42."));
}
