//! The search APIs `web_search` speaks: one request and one response format each.

use reqwest::{StatusCode, Url};
use serde::Deserialize;
use serde_json::{Value, json};
use toolbelt_core::BoxFuture;

use super::text::strip_html;

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    /// The page's title.
    pub title: String,
    /// The page's address.
    pub url: String,
    /// The text the provider shows under the title.
    pub snippet: String,
}

/// What a provider found: the results, and an answer when it writes one (Tavily).
#[derive(Debug, Clone, Default)]
pub struct SearchResults {
    /// The hits, best first.
    pub hits: Vec<SearchHit>,
    /// A direct answer, when the provider gives one.
    pub answer: Option<String>,
}

/// Why a search failed, as the provider said it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchError {
    /// A status other than 2xx, with the provider's own message.
    Status {
        /// The HTTP status.
        status: StatusCode,
        /// The provider's message.
        message: String,
        /// `Retry-After`, when the provider sent one.
        retry_after: Option<String>,
    },
    /// No answer within the time limit.
    Timeout,
    /// The request could not be made (connection refused, TLS, DNS).
    Network(String),
    /// A 2xx answer that is not the JSON the provider documents.
    Malformed(String),
}

/// A search API.
pub trait SearchProvider: Send + Sync {
    /// Lower-case name, as in the settings (`tavily`).
    fn name(&self) -> &'static str;
    /// The endpoint searched (no credentials in it).
    fn endpoint(&self) -> &Url;
    /// Searches for `query`, at most `max_results` hits.
    fn search<'a>(
        &'a self,
        client: &'a reqwest::Client,
        query: &'a str,
        max_results: u32,
    ) -> BoxFuture<'a, Result<SearchResults, SearchError>>;
}

/// Body bytes read at most from a provider.
const MAX_BODY: usize = 4 * 1024 * 1024;
/// Characters of a non-JSON error body quoted.
const ERROR_BODY_CHARS: usize = 300;

/// `base` with `path` appended to its own path.
pub(super) fn endpoint(base: &str, path: &str) -> Result<Url, String> {
    let joined = format!("{}{path}", base.trim().trim_end_matches('/'));
    let url = Url::parse(&joined).map_err(|e| format!("invalid baseUrl '{base}': {e}"))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(format!(
            "invalid baseUrl '{base}': the scheme must be http or https, not {other}"
        )),
    }
}

pub(super) struct Tavily {
    pub endpoint: Url,
    pub key: String,
}

#[derive(Deserialize)]
struct TavilyResponse {
    #[serde(default)]
    results: Vec<TavilyResult>,
    #[serde(default)]
    answer: Option<String>,
}

#[derive(Deserialize)]
struct TavilyResult {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    content: String,
}

impl SearchProvider for Tavily {
    fn name(&self) -> &'static str {
        "tavily"
    }
    fn endpoint(&self) -> &Url {
        &self.endpoint
    }
    fn search<'a>(
        &'a self,
        client: &'a reqwest::Client,
        query: &'a str,
        max_results: u32,
    ) -> BoxFuture<'a, Result<SearchResults, SearchError>> {
        Box::pin(async move {
            let request = client
                .post(self.endpoint.clone())
                .bearer_auth(&self.key)
                .json(&json!({ "query": query, "max_results": max_results }));
            let body: TavilyResponse = parse(send(request).await?)?;
            Ok(SearchResults {
                hits: body
                    .results
                    .into_iter()
                    .map(|r| SearchHit {
                        title: r.title,
                        url: r.url,
                        snippet: r.content,
                    })
                    .collect(),
                answer: body.answer.filter(|a| !a.trim().is_empty()),
            })
        })
    }
}

pub(super) struct Searxng {
    pub endpoint: Url,
}

#[derive(Deserialize)]
struct SearxngResponse {
    #[serde(default)]
    results: Vec<SearxngResult>,
}

#[derive(Deserialize)]
struct SearxngResult {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    content: Option<String>,
}

impl SearchProvider for Searxng {
    fn name(&self) -> &'static str {
        "searxng"
    }
    fn endpoint(&self) -> &Url {
        &self.endpoint
    }
    fn search<'a>(
        &'a self,
        client: &'a reqwest::Client,
        query: &'a str,
        max_results: u32,
    ) -> BoxFuture<'a, Result<SearchResults, SearchError>> {
        Box::pin(async move {
            let mut url = self.endpoint.clone();
            url.query_pairs_mut()
                .append_pair("q", query)
                .append_pair("format", "json");
            let request = client
                .get(url)
                .header(reqwest::header::ACCEPT, "application/json");
            let body: SearxngResponse = parse(send(request).await?)?;
            // SearXNG has no result count parameter.
            Ok(SearchResults {
                hits: body
                    .results
                    .into_iter()
                    .take(max_results as usize)
                    .map(|r| SearchHit {
                        title: r.title,
                        url: r.url,
                        snippet: r.content.unwrap_or_default(),
                    })
                    .collect(),
                answer: None,
            })
        })
    }
}

pub(super) struct Brave {
    pub endpoint: Url,
    pub key: String,
}

#[derive(Deserialize)]
struct BraveResponse {
    #[serde(default)]
    web: Option<BraveWeb>,
}

#[derive(Deserialize)]
struct BraveWeb {
    #[serde(default)]
    results: Vec<BraveResult>,
}

#[derive(Deserialize)]
struct BraveResult {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    description: String,
}

impl SearchProvider for Brave {
    fn name(&self) -> &'static str {
        "brave"
    }
    fn endpoint(&self) -> &Url {
        &self.endpoint
    }
    fn search<'a>(
        &'a self,
        client: &'a reqwest::Client,
        query: &'a str,
        max_results: u32,
    ) -> BoxFuture<'a, Result<SearchResults, SearchError>> {
        Box::pin(async move {
            let mut url = self.endpoint.clone();
            url.query_pairs_mut()
                .append_pair("q", query)
                .append_pair("count", &max_results.to_string());
            let request = client
                .get(url)
                .header("X-Subscription-Token", &self.key)
                .header(reqwest::header::ACCEPT, "application/json");
            let body: BraveResponse = parse(send(request).await?)?;
            let results = body.web.map(|w| w.results).unwrap_or_default();
            // Titles and descriptions mark the matched words with <strong>.
            Ok(SearchResults {
                hits: results
                    .into_iter()
                    .map(|r| SearchHit {
                        title: strip_html(&r.title),
                        url: r.url,
                        snippet: strip_html(&r.description),
                    })
                    .collect(),
                answer: None,
            })
        })
    }
}

/// Sends `request` and returns the body of a 2xx answer; any other status becomes
/// [`SearchError::Status`] with the provider's message.
async fn send(request: reqwest::RequestBuilder) -> Result<Vec<u8>, SearchError> {
    let mut response = request.send().await.map_err(|e| transport_error(&e))?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string());
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| transport_error(&e))? {
        let room = MAX_BODY - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= MAX_BODY {
            break;
        }
    }
    if status.is_success() {
        return Ok(body);
    }
    let mut message = error_message(&body);
    if status.is_redirection() {
        let to = location.unwrap_or_else(|| "(no location)".into());
        message = format!("redirected to {to}; check the provider's baseUrl");
    }
    Err(SearchError::Status {
        status,
        message,
        retry_after,
    })
}

fn parse<T: serde::de::DeserializeOwned>(body: Vec<u8>) -> Result<T, SearchError> {
    serde_json::from_slice(&body).map_err(|e| {
        let start: String = String::from_utf8_lossy(&body)
            .chars()
            .take(ERROR_BODY_CHARS)
            .collect();
        SearchError::Malformed(format!("{e}; the answer began with: {start}"))
    })
}

fn transport_error(e: &reqwest::Error) -> SearchError {
    if e.is_timeout() {
        return SearchError::Timeout;
    }
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(err) = source {
        let text = err.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = err.source();
    }
    SearchError::Network(message)
}

/// The provider's own words from an error body: `detail`, `error` or `message` of a JSON
/// body (nested objects followed), else the body's start.
pub(super) fn error_message(body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<Value>(body)
        && let Some(message) = json_message(&value, 0)
    {
        return message;
    }
    let text = String::from_utf8_lossy(body);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return "(empty body)".into();
    }
    let mut start: String = text.chars().take(ERROR_BODY_CHARS).collect();
    if start.len() < text.len() {
        start.push('…');
    }
    start
}

fn json_message(value: &Value, depth: usize) -> Option<String> {
    if depth > 4 {
        return None;
    }
    match value {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Object(map) => ["detail", "error", "message"]
            .iter()
            .filter_map(|k| map.get(*k))
            .find_map(|v| json_message(v, depth + 1)),
        Value::Array(items) => items.iter().find_map(|v| json_message(v, depth + 1)),
        _ => None,
    }
}
