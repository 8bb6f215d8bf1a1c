//! `web_search` against fake providers on 127.0.0.1, each answering in its real format.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use toolbelt_config::settings::Settings;
use toolbelt_core::{ConfirmationDetails, ErrorKind, ExecContext, Kind, Tool, ToolResult};

use super::text::{decode_entities, one_line, strip_html};
use super::{HttpOptions, WebSearch, providers, resolve_key, web_search_unavailable_reason};
use crate::test_support::{Fixture, err_kind, fixture, fixture_with};

/// One request as the fake provider saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    /// Path and query.
    target: String,
    /// Lower-case names.
    headers: HashMap<String, String>,
    body: String,
}

impl Seen {
    fn query(&self) -> HashMap<String, String> {
        let url = url::Url::parse(&format!("http://x{}", self.target)).unwrap();
        url.query_pairs().into_owned().collect()
    }
    fn path(&self) -> &str {
        self.target.split('?').next().unwrap()
    }
}

struct Reply {
    status: u16,
    body: String,
    headers: Vec<(&'static str, String)>,
}

fn json_reply(status: u16, body: Value) -> Option<Reply> {
    Some(Reply {
        status,
        body: body.to_string(),
        headers: Vec::new(),
    })
}

/// `None` from the handler: the server never answers.
type Handler = Arc<dyn Fn(&Seen) -> Option<Reply> + Send + Sync>;

struct FakeProvider {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakeProvider {
    fn base(&self) -> String {
        format!("http://{}", self.addr)
    }
    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn serve(handler: impl Fn(&Seen) -> Option<Reply> + Send + Sync + 'static) -> FakeProvider {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = FakeProvider {
        addr: listener.local_addr().unwrap(),
        seen: Arc::default(),
    };
    let handler: Handler = Arc::new(handler);
    let seen = server.seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (handler, seen) = (handler.clone(), seen.clone());
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                    let (handler, seen) = (handler.clone(), seen.clone());
                    async move {
                        let method = req.method().to_string();
                        let target = req.uri().to_string();
                        let headers = req
                            .headers()
                            .iter()
                            .map(|(k, v)| {
                                (k.as_str().to_string(), v.to_str().unwrap_or("").to_string())
                            })
                            .collect();
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        let request = Seen {
                            method,
                            target,
                            headers,
                            body: String::from_utf8_lossy(&body).into_owned(),
                        };
                        seen.lock().unwrap().push(request.clone());
                        let Some(reply) = handler(&request) else {
                            // Hold the request until the client gives up.
                            let never: Infallible = std::future::pending().await;
                            match never {}
                        };
                        let mut response = Response::builder()
                            .status(reply.status)
                            .header("content-type", "application/json");
                        for (name, value) in reply.headers {
                            response = response.header(name, value);
                        }
                        Ok::<_, Infallible>(
                            response.body(Full::new(Bytes::from(reply.body))).unwrap(),
                        )
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    server
}

fn settings(web_search: Value) -> Settings {
    serde_json::from_value(json!({ "webSearch": web_search })).unwrap()
}

fn one_provider(provider: Value) -> Settings {
    settings(json!({ "provider": [provider] }))
}

const LOOPBACK: HttpOptions = HttpOptions {
    connect_timeout: Duration::from_secs(5),
    timeout: Duration::from_secs(10),
    system_proxy: false,
};

fn tool(fx: &Fixture, http: HttpOptions) -> WebSearch {
    WebSearch::with_options(&fx.env, http).expect("a provider is configured")
}

async fn run(fx: &Fixture, tool: &WebSearch, query: &str) -> ToolResult {
    match tool.build(json!({ "query": query })) {
        Ok(call) => call.execute(ExecContext::new(fx.env.clone())).await,
        Err(e) => ToolResult::error(e),
    }
}

async fn search(settings: Settings, query: &str) -> ToolResult {
    let fx = fixture_with(1_000_000, 100_000, settings);
    let tool = tool(&fx, LOOPBACK);
    run(&fx, &tool, query).await
}

fn message(r: &ToolResult) -> String {
    r.error.as_ref().expect("an error").message.clone()
}

const TAVILY_KEY: &str = "tvly-test-KEY-0123456789";
const BRAVE_KEY: &str = "BSA-test-key-abcdef987654";

#[tokio::test]
async fn tavily_posts_the_query_with_a_bearer_key_and_lists_numbered_results() {
    let server = serve(|seen| {
        let ok = seen.method == "POST"
            && seen.path() == "/search"
            && seen.headers.get("authorization").map(String::as_str)
                == Some(&format!("Bearer {TAVILY_KEY}"))
            && serde_json::from_str::<Value>(&seen.body).ok()
                == Some(json!({"query": "rust async traits", "max_results": 3}));
        if !ok {
            return json_reply(400, json!({"detail": {"error": "unexpected request"}}));
        }
        json_reply(
            200,
            json!({
                "query": "rust async traits",
                "answer": "Async functions in traits are stable since Rust 1.75.",
                "images": [],
                "results": [
                    {"title": "Announcing async fn in traits", "url": "https://blog.rust-lang.org/afit",
                     "content": "Rust 1.75 stabilizes async fn in traits.", "score": 0.98, "raw_content": null},
                    {"title": "async-trait crate", "url": "https://docs.rs/async-trait",
                     "content": "Type erasure for async trait methods.", "score": 0.91, "raw_content": null}
                ],
                "response_time": 1.2
            }),
        )
    })
    .await;
    let r = search(
        one_provider(json!({"type": "tavily", "apiKey": TAVILY_KEY, "baseUrl": server.base(), "maxResults": 3})),
        "rust async traits",
    )
    .await;
    assert!(r.error.is_none(), "{:?}", r.error);
    let t = r.llm_text();
    assert!(
        t.starts_with("Web search results for \"rust async traits\" (via Tavily):"),
        "{t}"
    );
    assert!(
        t.contains("Answer from Tavily: Async functions in traits are stable"),
        "{t}"
    );
    assert!(
        t.contains("1. Announcing async fn in traits\n   https://blog.rust-lang.org/afit\n   Rust 1.75 stabilizes async fn in traits.\n"),
        "{t}"
    );
    assert!(
        t.contains("2. async-trait crate\n   https://docs.rs/async-trait\n   Type erasure for async trait methods.\n"),
        "{t}"
    );
    assert!(t.contains("cite each source by its number and URL"), "{t}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn searxng_gets_json_under_its_base_path_with_no_key_and_is_cut_to_max_results() {
    let server = serve(|seen| {
        let q = seen.query();
        let ok = seen.method == "GET"
            && seen.path() == "/searx/search"
            && q.get("q").map(String::as_str) == Some("tokio select & cancel")
            && q.get("format").map(String::as_str) == Some("json")
            && !seen.headers.contains_key("authorization")
            && !seen.headers.contains_key("x-subscription-token");
        if !ok {
            return json_reply(400, json!({"error": format!("unexpected {}", seen.target)}));
        }
        let results: Vec<Value> = (1..=8)
            .map(|i| {
                json!({"title": format!("Result {i}"), "url": format!("https://r{i}.example/"),
                       "content": format!("Snippet {i}"), "engine": "duckduckgo", "score": 1.0})
            })
            .collect();
        json_reply(
            200,
            json!({"query": "tokio select & cancel", "number_of_results": 0, "results": results,
                   "answers": [], "suggestions": [], "unresponsive_engines": []}),
        )
    })
    .await;
    let base = format!("{}/searx/", server.base());
    let r = search(
        one_provider(json!({"type": "searxng", "baseUrl": base})),
        "tokio select & cancel",
    )
    .await;
    assert!(r.error.is_none(), "{:?}", r.error);
    let t = r.llm_text();
    assert!(t.contains("(via SearXNG)"), "{t}");
    assert!(
        t.contains("1. Result 1\n   https://r1.example/\n   Snippet 1"),
        "{t}"
    );
    assert!(t.contains("5. Result 5\n"), "{t}");
    assert!(!t.contains("6. Result 6"), "the default is 5 results: {t}");
}

#[tokio::test]
async fn brave_sends_its_token_header_and_html_is_stripped_from_results() {
    let server = serve(|seen| {
        let q = seen.query();
        let ok = seen.method == "GET"
            && seen.path() == "/res/v1/web/search"
            && q.get("q").map(String::as_str) == Some("serde flatten")
            && q.get("count").map(String::as_str) == Some("5")
            && seen.headers.get("x-subscription-token").map(String::as_str) == Some(BRAVE_KEY)
            && seen.headers.get("accept").map(String::as_str) == Some("application/json");
        if !ok {
            return json_reply(400, json!({"error": format!("unexpected {:?}", seen)}));
        }
        json_reply(
            200,
            json!({
                "type": "search",
                "query": {"original": "serde flatten"},
                "web": {"type": "search", "results": [{
                    "title": "Struct flattening · <strong>Serde</strong>",
                    "url": "https://serde.rs/attr-flatten.html",
                    "description": "The <strong>flatten</strong> attribute inlines keys &amp; values from a field into its container &#39;as is&#39; &lt;T&gt;.",
                    "is_source_local": false,
                    "profile": {"name": "Serde"}
                }]}
            }),
        )
    })
    .await;
    let r = search(
        one_provider(json!({"type": "brave", "apiKey": BRAVE_KEY, "baseUrl": server.base()})),
        "serde flatten",
    )
    .await;
    assert!(r.error.is_none(), "{:?}", r.error);
    let t = r.llm_text();
    assert!(
        t.contains("1. Struct flattening · Serde\n   https://serde.rs/attr-flatten.html\n   The flatten attribute inlines keys & values from a field into its container 'as is' <T>.\n"),
        "{t}"
    );
    assert!(!t.contains("<strong>") && !t.contains("&amp;"), "{t}");
}

#[tokio::test]
async fn a_401_names_the_provider_the_status_and_its_message() {
    let server = serve(|_| {
        json_reply(
            401,
            json!({"type": "ErrorResponse", "error": {"id": "c6a1", "status": 401,
                   "code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "The provided subscription token is invalid.",
                   "meta": {"component": "authentication"}}}),
        )
    })
    .await;
    let r = search(
        one_provider(json!({"type": "brave", "apiKey": BRAVE_KEY, "baseUrl": server.base()})),
        "anything",
    )
    .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::WebSearchError));
    let m = message(&r);
    assert!(m.contains("Brave") && m.contains("HTTP 401"), "{m}");
    assert!(
        m.contains("The provided subscription token is invalid."),
        "{m}"
    );
    assert!(m.contains("apiKey"), "{m}");
}

#[tokio::test]
async fn a_429_says_rate_limit_and_retry_after() {
    let server = serve(|_| {
        Some(Reply {
            status: 429,
            body: json!({"detail": {"error": "Too many requests, slow down."}}).to_string(),
            headers: vec![("retry-after", "30".into())],
        })
    })
    .await;
    let r = search(
        one_provider(json!({"type": "tavily", "apiKey": TAVILY_KEY, "baseUrl": server.base()})),
        "anything",
    )
    .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::WebSearchError));
    let m = message(&r);
    assert!(m.contains("Tavily") && m.contains("HTTP 429"), "{m}");
    assert!(m.contains("rate limit"), "{m}");
    assert!(m.contains("Retry-After: 30 s"), "{m}");
    assert!(m.contains("Too many requests, slow down."), "{m}");
}

#[tokio::test]
async fn a_5xx_quotes_the_start_of_a_non_json_body() {
    let long = format!("upstream engine failure {}", "x".repeat(1_000));
    let server = serve(move |_| {
        Some(Reply {
            status: 502,
            body: long.clone(),
            headers: Vec::new(),
        })
    })
    .await;
    let r = search(
        one_provider(json!({"type": "searxng", "baseUrl": server.base()})),
        "anything",
    )
    .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::WebSearchError));
    let m = message(&r);
    assert!(m.contains("SearXNG") && m.contains("HTTP 502"), "{m}");
    assert!(m.contains("upstream engine failure"), "{m}");
    assert!(m.contains("Try again later"), "{m}");
    assert!(m.len() < 600, "the body is quoted in part: {m}");
}

#[tokio::test]
async fn a_provider_that_never_answers_times_out() {
    let server = serve(|_| None).await;
    let fx = fixture_with(
        1_000_000,
        100_000,
        one_provider(json!({"type": "brave", "apiKey": BRAVE_KEY, "baseUrl": server.base()})),
    );
    let tool = tool(
        &fx,
        HttpOptions {
            timeout: Duration::from_millis(300),
            ..LOOPBACK
        },
    );
    let r = run(&fx, &tool, "anything").await;
    assert_eq!(err_kind(&r), Some(ErrorKind::Timeout), "{:?}", r.error);
    let m = message(&r);
    assert!(m.contains("Brave") && m.contains("did not answer"), "{m}");
    assert_eq!(
        server.requests().len(),
        1,
        "the request did reach the server"
    );
}

#[tokio::test]
async fn a_2xx_that_is_not_the_documented_json_is_an_error() {
    let server = serve(|_| {
        Some(Reply {
            status: 200,
            body: "<html>Too many requests from your IP</html>".into(),
            headers: Vec::new(),
        })
    })
    .await;
    let r = search(
        one_provider(json!({"type": "searxng", "baseUrl": server.base()})),
        "anything",
    )
    .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::WebSearchError));
    let m = message(&r);
    assert!(m.contains("SearXNG") && m.contains("JSON"), "{m}");
    assert!(m.contains("<html>Too many requests"), "{m}");
}

#[tokio::test]
async fn the_key_never_appears_in_an_error_even_when_the_provider_echoes_it() {
    for (status, body) in [
        (
            401,
            json!({"detail": {"error": format!("Invalid API key: {TAVILY_KEY}")}}).to_string(),
        ),
        (
            500,
            format!("internal error while checking key {TAVILY_KEY}"),
        ),
        (200, format!("not json {TAVILY_KEY}")),
    ] {
        let server = serve(move |seen| {
            // Echo whatever credential came in.
            let auth = seen
                .headers
                .get("authorization")
                .cloned()
                .unwrap_or_default();
            assert!(auth.contains(TAVILY_KEY));
            Some(Reply {
                status,
                body: body.clone(),
                headers: Vec::new(),
            })
        })
        .await;
        let fx = fixture_with(
            1_000_000,
            100_000,
            one_provider(json!({"type": "tavily", "apiKey": TAVILY_KEY, "baseUrl": server.base()})),
        );
        let tool = tool(&fx, LOOPBACK);
        let call = tool.build(json!({"query": "anything"})).unwrap();
        assert!(!call.describe().contains(TAVILY_KEY));
        let details = format!("{:?}", call.confirmation().await);
        assert!(!details.contains(TAVILY_KEY), "{details}");
        let r = call.execute(ExecContext::new(fx.env.clone())).await;
        let m = message(&r);
        assert!(!m.contains(TAVILY_KEY), "status {status}: {m}");
        assert!(m.contains("***"), "status {status}: {m}");
        assert!(!r.llm_text().contains(TAVILY_KEY));
        assert!(!format!("{:?}", r.return_display).contains(TAVILY_KEY));
    }
}

#[tokio::test]
async fn a_short_key_is_masked_too() {
    let server = serve(|_| json_reply(403, json!({"message": "key k9Q is not valid"}))).await;
    let r = search(
        one_provider(json!({"type": "brave", "apiKey": "k9Q", "baseUrl": server.base()})),
        "anything",
    )
    .await;
    let m = message(&r);
    assert!(
        !m.contains("k9Q") && m.contains("key *** is not valid"),
        "{m}"
    );
}

#[tokio::test]
async fn the_default_provider_is_chosen_by_type_else_the_first() {
    let tavily = serve(|_| json_reply(200, json!({"results": [{"title": "from tavily", "url": "https://t.example/", "content": "t"}]}))).await;
    let brave = serve(|_| json_reply(200, json!({"web": {"results": [{"title": "from brave", "url": "https://b.example/", "description": "b"}]}}))).await;
    let providers = json!([
        {"type": "tavily", "apiKey": TAVILY_KEY, "baseUrl": tavily.base()},
        {"type": "brave", "apiKey": BRAVE_KEY, "baseUrl": brave.base()}
    ]);
    let r = search(
        settings(json!({"provider": providers, "default": "Brave"})),
        "q",
    )
    .await;
    assert!(r.llm_text().contains("1. from brave"), "{}", r.llm_text());
    assert_eq!((tavily.requests().len(), brave.requests().len()), (0, 1));

    let r = search(settings(json!({"provider": providers})), "q").await;
    assert!(r.llm_text().contains("1. from tavily"), "{}", r.llm_text());

    // A default that names no configured provider falls back to the first.
    let r = search(
        settings(json!({"provider": providers, "default": "searxng"})),
        "q",
    )
    .await;
    assert!(r.llm_text().contains("1. from tavily"), "{}", r.llm_text());
    assert_eq!((tavily.requests().len(), brave.requests().len()), (2, 1));
}

#[tokio::test]
async fn no_results_is_a_plain_message_not_an_error() {
    let server = serve(|_| json_reply(200, json!({"query": "zzzz", "results": []}))).await;
    let r = search(
        one_provider(json!({"type": "searxng", "baseUrl": server.base()})),
        "zzzz",
    )
    .await;
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(
        r.llm_text()
            .contains("No web results found for \"zzzz\" (via SearXNG)"),
        "{}",
        r.llm_text()
    );
    // Brave leaves `web` out when nothing matched.
    let server = serve(|_| {
        json_reply(
            200,
            json!({"type": "search", "query": {"original": "zzzz"}}),
        )
    })
    .await;
    let r = search(
        one_provider(json!({"type": "brave", "apiKey": BRAVE_KEY, "baseUrl": server.base()})),
        "zzzz",
    )
    .await;
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(
        r.llm_text().contains("No web results found"),
        "{}",
        r.llm_text()
    );
}

#[tokio::test]
async fn long_snippets_are_cut() {
    let long = "word ".repeat(400);
    let server = serve(move |_| {
        json_reply(
            200,
            json!({"results": [{"title": "t", "url": "https://u.example/", "content": long}]}),
        )
    })
    .await;
    let r = search(
        one_provider(json!({"type": "searxng", "baseUrl": server.base()})),
        "q",
    )
    .await;
    let t = r.llm_text();
    let snippet = t
        .lines()
        .find(|l| l.trim_start().starts_with("word"))
        .unwrap();
    assert!(snippet.chars().count() <= 510, "{snippet}");
    assert!(snippet.ends_with('…'), "{snippet}");
}

#[test]
fn not_registered_without_a_provider() {
    let fx = fixture();
    assert_eq!(
        fx.build("web_search", json!({"query": "q"}))
            .err()
            .map(|e| e.kind),
        Some(ErrorKind::ToolNotRegistered)
    );
    assert!(
        fx.tools_and_parameters()
            .iter()
            .all(|(name, _)| name != "web_search")
    );
    assert_eq!(
        web_search_unavailable_reason(&Settings::default()),
        Some("no webSearch provider configured in settings")
    );
    assert!(WebSearch::from_settings(&fx.env).is_none());

    let configured = one_provider(json!({"type": "searxng", "baseUrl": "http://127.0.0.1:9"}));
    assert_eq!(web_search_unavailable_reason(&configured), None);
    let fx = fixture_with(25_000, 1_000, configured);
    let names: Vec<String> = fx
        .tools_and_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let at = |name: &str| names.iter().position(|n| n == name).unwrap();
    assert!(at("web_search") == at("web_fetch") + 1, "{names:?}");
}

#[test]
fn an_empty_query_is_rejected() {
    let fx = fixture_with(
        25_000,
        1_000,
        one_provider(json!({"type": "searxng", "baseUrl": "http://127.0.0.1:9"})),
    );
    for query in ["", "   \n\t"] {
        let e = fx
            .build("web_search", json!({"query": query}))
            .err()
            .unwrap();
        assert_eq!(e.kind, ErrorKind::InvalidToolParams, "{query:?}: {e}");
    }
    let e = fx.build("web_search", json!({})).err().unwrap();
    assert_eq!(e.kind, ErrorKind::InvalidToolParams);
}

#[tokio::test]
async fn the_confirmation_is_info_naming_provider_and_query() {
    let fx = fixture_with(
        25_000,
        1_000,
        one_provider(json!({"type": "brave", "apiKey": BRAVE_KEY})),
    );
    let tool = tool(&fx, LOOPBACK);
    assert_eq!(tool.kind(), Kind::Search);
    assert!(tool.needs_confirmation());
    let call = tool
        .build(json!({"query": "latest  tokio\nrelease"}))
        .unwrap();
    assert_eq!(
        call.describe(),
        "Search the web for \"latest tokio release\" (via Brave)"
    );
    match call.confirmation().await {
        Some(ConfirmationDetails::Info {
            title,
            prompt,
            urls,
        }) => {
            assert!(title.contains("Brave"), "{title}");
            assert!(prompt.contains("latest tokio release"), "{prompt}");
            assert_eq!(urls, ["https://api.search.brave.com/res/v1/web/search"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn configuration_errors_name_the_setting() {
    let unset = "TOOLBELT_TEST_SURELY_UNSET_SEARCH_KEY";
    let cases = [
        (
            json!({"type": "tavily", "apiKey": format!("${unset}")}),
            unset,
        ),
        (
            json!({"type": "brave", "apiKey": format!("${{{unset}}}")}),
            unset,
        ),
        (
            json!({"type": "brave"}),
            "webSearch.provider[0].apiKey is required",
        ),
        (
            json!({"type": "searxng"}),
            "webSearch.provider[0].baseUrl is required",
        ),
        (
            json!({"type": "searxng", "baseUrl": "ftp://x"}),
            "http or https",
        ),
    ];
    for (provider, expected) in cases {
        let fx = fixture_with(25_000, 1_000, one_provider(provider.clone()));
        let e = tool(&fx, LOOPBACK)
            .build(json!({"query": "q"}))
            .err()
            .unwrap();
        assert_eq!(e.kind, ErrorKind::WebSearchError, "{provider}");
        assert!(e.message.contains(expected), "{provider}: {e}");
    }
}

#[test]
fn keys_from_the_environment() {
    let env = |name: &str| (name == "SEARCH_KEY").then(|| "from-env-123".to_string());
    assert_eq!(
        resolve_key(Some("$SEARCH_KEY"), env),
        Ok(Some("from-env-123".into()))
    );
    assert_eq!(
        resolve_key(Some(" ${SEARCH_KEY} "), env),
        Ok(Some("from-env-123".into()))
    );
    assert_eq!(
        resolve_key(Some("literal-key"), env),
        Ok(Some("literal-key".into()))
    );
    assert_eq!(
        resolve_key(Some("pa$$word"), env),
        Ok(Some("pa$$word".into()))
    );
    assert_eq!(resolve_key(None, env), Ok(None));
    assert_eq!(resolve_key(Some("  "), env), Ok(None));
    let e = resolve_key(Some("$OTHER_KEY"), env).unwrap_err();
    assert!(e.contains("OTHER_KEY") && e.contains("not set"), "{e}");
}

#[test]
fn html_and_entities_become_text() {
    assert_eq!(
        strip_html("<b>Rust</b> &amp; <a href=\"x\">Go</a>: 1 &lt; 2 &#x27;ok&#39; &hellip;"),
        "Rust & Go: 1 < 2 'ok' …"
    );
    assert_eq!(strip_html("a < b and c > d"), "a < b and c > d");
    assert_eq!(decode_entities("AT&T &unknown; &"), "AT&T &unknown; &");
    assert_eq!(one_line("a\n b\t c", 100), "a b c");
    assert_eq!(one_line("abcdefghij", 5), "abcd…");
}

#[test]
fn the_provider_message_is_found_in_its_error_body() {
    assert_eq!(
        providers::error_message(br#"{"detail": {"error": "bad key"}}"#),
        "bad key"
    );
    assert_eq!(
        providers::error_message(br#"{"error": {"code": "X", "detail": "quota"}}"#),
        "quota"
    );
    assert_eq!(providers::error_message(br#"{"message": "nope"}"#), "nope");
    assert_eq!(providers::error_message(b""), "(empty body)");
    let long = "y".repeat(1_000);
    assert_eq!(
        providers::error_message(long.as_bytes()).chars().count(),
        301
    );
}
