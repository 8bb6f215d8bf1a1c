//! `web_search`: a web search through the provider the settings name.
//!
//! Providers are configured under `webSearch.provider` (Tavily, SearXNG, Brave); the
//! tool is registered only when there is one. `webSearch.default` picks one by type,
//! else the first is used. An `apiKey` written as `$NAME` or `${NAME}` is read from the
//! environment when a call is made. The key is sent only in the provider's own header
//! and is masked in every message the tool returns.
//!
//! Requests follow no redirect (a header with the key must not travel to another host)
//! and have time limits: 10 s to connect, 30 s in all.

use std::sync::OnceLock;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolbelt_config::{redact, settings::Settings};
use toolbelt_config::{settings::WebSearchKind, settings::WebSearchProvider};
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ErrorKind, ExecContext, Invocation, Kind, Tool,
    ToolEnvironment, ToolError, ToolFacts, ToolResult,
};

mod providers;
mod text;

use providers::{Brave, Searxng, Tavily};
pub use providers::{SearchError, SearchHit, SearchProvider, SearchResults};

/// Results asked for when the settings say nothing.
pub const DEFAULT_MAX_RESULTS: u32 = 5;
/// Results asked for at most.
pub const MAX_RESULTS_CAP: u32 = 20;
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Characters of a snippet, a title and an answer shown at most.
const SNIPPET_CHARS: usize = 500;
const TITLE_CHARS: usize = 200;
const ANSWER_CHARS: usize = 2_000;

const TAVILY_URL: &str = "https://api.tavily.com";
const BRAVE_URL: &str = "https://api.search.brave.com";

/// Why `web_search` is not registered with these settings, or `None` when it is.
pub fn web_search_unavailable_reason(settings: &Settings) -> Option<&'static str> {
    settings
        .web_search
        .provider
        .is_empty()
        .then_some("no webSearch provider configured in settings")
}

/// How the HTTP client is set up.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HttpOptions {
    pub connect_timeout: Duration,
    pub timeout: Duration,
    /// Honour `HTTPS_PROXY` and friends (tests talk to loopback directly).
    pub system_proxy: bool,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            timeout: DEFAULT_TIMEOUT,
            system_proxy: true,
        }
    }
}

/// The `web_search` tool: results from the configured provider.
pub struct WebSearch {
    /// The provider used and its place in `webSearch.provider`.
    config: WebSearchProvider,
    index: usize,
    schema: Value,
    description: String,
    http: HttpOptions,
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl WebSearch {
    /// The tool over the provider the settings choose; `None` when none is configured
    /// (see [`web_search_unavailable_reason`]).
    pub fn from_settings(env: &ToolEnvironment) -> Option<Self> {
        WebSearch::with_options(env, HttpOptions::default())
    }

    pub(crate) fn with_options(env: &ToolEnvironment, http: HttpOptions) -> Option<Self> {
        let (index, config) = choose_provider(&env.settings)?;
        let label = label(config.kind);
        let description = format!(
            "Searches the web with {label} and returns the top results, numbered, each with its title, URL and a snippet. \
             Use it for information that may be newer than your knowledge or that you do not have: current versions, \
             release notes, error messages, documentation locations. Write a short, specific query. \
             Read a result in full with web_fetch. Cite the sources you use by number and URL."
        );
        let schema = crate::params::schema_for::<Params>();
        Some(WebSearch {
            config: config.clone(),
            index,
            schema,
            description,
            http,
            client: OnceLock::new(),
        })
    }

    fn client(&self) -> Result<reqwest::Client, ToolError> {
        self.client
            .get_or_init(|| build_client(self.http))
            .clone()
            .map_err(|e| ToolError::new(ErrorKind::WebSearchError, e))
    }

    /// The provider, its key read and its endpoint checked.
    fn provider(&self) -> Result<(Box<dyn SearchProvider>, Option<String>), ToolError> {
        let setting = format!("webSearch.provider[{}]", self.index);
        let fail = |message: String| ToolError::new(ErrorKind::WebSearchError, message);
        let key = resolve_key(self.config.api_key.as_deref(), |name| {
            std::env::var(name).ok()
        })
        .map_err(|e| fail(format!("{setting}.apiKey: {e}")))?;
        if let Some(key) = &key {
            redact::global().add_secret(key);
        }
        let base = self
            .config
            .base_url
            .as_deref()
            .filter(|b| !b.trim().is_empty());
        let endpoint = |default: Option<&str>, path: &str| {
            let base = base.or(default).ok_or_else(|| {
                fail(format!(
                    "{setting}.baseUrl is required for {} (the address of its server)",
                    label(self.config.kind)
                ))
            })?;
            providers::endpoint(base, path).map_err(|e| fail(format!("{setting}: {e}")))
        };
        let needs_key = || {
            key.clone().ok_or_else(|| {
                fail(format!(
                    "{setting}.apiKey is required for {}",
                    label(self.config.kind)
                ))
            })
        };
        let provider: Box<dyn SearchProvider> = match self.config.kind {
            WebSearchKind::Tavily => Box::new(Tavily {
                endpoint: endpoint(Some(TAVILY_URL), "/search")?,
                key: needs_key()?,
            }),
            WebSearchKind::Searxng => Box::new(Searxng {
                endpoint: endpoint(None, "/search")?,
            }),
            WebSearchKind::Brave => Box::new(Brave {
                endpoint: endpoint(Some(BRAVE_URL), "/res/v1/web/search")?,
                key: needs_key()?,
            }),
        };
        Ok((provider, key))
    }
}

/// `webSearch.default` when it names a configured type, else the first provider.
fn choose_provider(settings: &Settings) -> Option<(usize, &WebSearchProvider)> {
    let search = &settings.web_search;
    let first = search.provider.first().map(|p| (0, p));
    let Some(wanted) = search.default.as_deref().map(str::trim) else {
        return first;
    };
    let chosen = search
        .provider
        .iter()
        .enumerate()
        .find(|(_, p)| p.kind.as_str().eq_ignore_ascii_case(wanted));
    if chosen.is_none() && first.is_some() {
        tracing::warn!(
            "webSearch.default is \"{wanted}\", which is not among webSearch.provider; using the first provider"
        );
    }
    chosen.or(first)
}

fn build_client(http: HttpOptions) -> Result<reqwest::Client, String> {
    let mut builder = toolbelt_netguard::client_builder()
        .user_agent(concat!(
            "toolbelt/",
            env!("CARGO_PKG_VERSION"),
            " (web_search)"
        ))
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(http.connect_timeout)
        .timeout(http.timeout);
    if !http.system_proxy {
        builder = builder.no_proxy();
    }
    builder
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {e}"))
}

/// The key to send: `None` when unset, an environment variable's value when the setting
/// is exactly `$NAME` or `${NAME}` (the settings loader leaves unset ones as written).
fn resolve_key(
    raw: Option<&str>,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Option<String>, String> {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    let Some(name) = variable_name(raw) else {
        return Ok(Some(raw.to_string()));
    };
    match lookup(name).filter(|v| !v.trim().is_empty()) {
        Some(value) => Ok(Some(value.trim().to_string())),
        None => Err(format!(
            "the environment variable {name} is not set (the key is read from it)"
        )),
    }
}

/// `NAME` of `$NAME` or `${NAME}`.
fn variable_name(raw: &str) -> Option<&str> {
    let rest = raw.strip_prefix('$')?;
    let name = match rest.strip_prefix('{') {
        Some(braced) => braced.strip_suffix('}')?,
        None => rest,
    };
    let mut chars = name.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some(name)
}

/// How a provider is named to people and the model.
fn label(kind: WebSearchKind) -> &'static str {
    match kind {
        WebSearchKind::Tavily => "Tavily",
        WebSearchKind::Searxng => "SearXNG",
        WebSearchKind::Brave => "Brave",
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(description = "What to search for, as you would type it into a search engine.")]
    query: String,
}

/// The tool's name.
pub(crate) const NAME: &str = "web_search";
/// What permission rules may call it besides its name (see `crate::rule_vocabulary`).
pub(crate) const RULE_ALIASES: &[&str] = &["WebSearch"];

/// The tool as a built-in (see [`crate::builtin`]): its rule words and how a session
/// makes it.
pub(crate) const BUILTIN: crate::builtin::Builtin = crate::builtin::Builtin {
    name: NAME,
    rule_aliases: RULE_ALIASES,
    path_operation: None,
    make: crate::builtin::Make::Env(|env| {
        WebSearch::from_settings(env)
            .map(|t| std::sync::Arc::new(t) as std::sync::Arc<dyn toolbelt_core::Tool>)
    }),
};

impl Tool for WebSearch {
    fn name(&self) -> &str {
        NAME
    }
    fn display_name(&self) -> &str {
        "WebSearch"
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn rule_aliases(&self) -> &[&'static str] {
        RULE_ALIASES
    }
    fn kind(&self) -> Kind {
        Kind::Search
    }
    /// It asks a search provider on the internet.
    fn facts(&self) -> ToolFacts {
        ToolFacts {
            open_world: true,
            ..ToolFacts::default()
        }
    }
    /// The query leaves the machine, so a person approves it.
    fn needs_confirmation(&self) -> bool {
        true
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        let query = params
            .query
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if query.is_empty() {
            return Err(ToolError::invalid_params(
                "query is empty: write what to search for",
            ));
        }
        let (provider, key) = self.provider()?;
        let max_results = match self.config.max_results {
            None | Some(0) => DEFAULT_MAX_RESULTS,
            Some(n) => n.min(MAX_RESULTS_CAP),
        };
        Ok(Box::new(WebSearchCall {
            query,
            provider,
            key,
            max_results,
            client: self.client()?,
            timeout: self.http.timeout,
        }))
    }
}

struct WebSearchCall {
    query: String,
    provider: Box<dyn SearchProvider>,
    key: Option<String>,
    max_results: u32,
    client: reqwest::Client,
    timeout: Duration,
}

impl WebSearchCall {
    fn label(&self) -> &'static str {
        match self.provider.name() {
            "tavily" => label(WebSearchKind::Tavily),
            "searxng" => label(WebSearchKind::Searxng),
            _ => label(WebSearchKind::Brave),
        }
    }

    /// `text` without the key, whatever its length, and without any other known secret.
    fn mask(&self, text: &str) -> String {
        let text = match &self.key {
            Some(key) if !key.is_empty() => text.replace(key.as_str(), redact::MASK),
            _ => text.to_string(),
        };
        redact::redact(&text)
    }

    fn error(&self, e: SearchError) -> ToolError {
        let name = self.label();
        let (kind, message) = match e {
            SearchError::Status {
                status,
                message,
                retry_after,
            } => {
                let code = format!(
                    "HTTP {}{}",
                    status.as_u16(),
                    status
                        .canonical_reason()
                        .map(|r| format!(" {r}"))
                        .unwrap_or_default()
                );
                let text = match status.as_u16() {
                    401 | 403 => format!(
                        "{name} refused the API key ({code}): {message}. Check the apiKey of this provider in webSearch.provider."
                    ),
                    429 => {
                        let wait = retry_after
                            .map(|r| match r.parse::<u64>() {
                                Ok(secs) => format!("; Retry-After: {secs} s"),
                                Err(_) => format!("; Retry-After: {r}"),
                            })
                            .unwrap_or_default();
                        format!(
                            "{name} rate limit reached ({code}{wait}): {message}. Wait before searching again."
                        )
                    }
                    500..=599 => {
                        format!("{name} failed on its side ({code}): {message}. Try again later.")
                    }
                    _ => format!("{name} answered {code}: {message}"),
                };
                (ErrorKind::WebSearchError, text)
            }
            SearchError::Timeout => (
                ErrorKind::Timeout,
                format!(
                    "{name} did not answer within {} s; no results. Try again, or a shorter query.",
                    self.timeout.as_secs_f64()
                ),
            ),
            SearchError::Network(why) => (
                ErrorKind::WebSearchError,
                format!(
                    "could not reach {name} at {}: {why}",
                    self.provider.endpoint()
                ),
            ),
            SearchError::Malformed(why) => (
                ErrorKind::WebSearchError,
                format!("{name} answered with something other than its JSON search results: {why}"),
            ),
        };
        ToolError::new(kind, self.mask(&format!("web search failed: {message}")))
    }
}

impl Invocation for WebSearchCall {
    fn describe(&self) -> String {
        let query: String = self.query.chars().take(80).collect();
        format!("Search the web for \"{query}\" (via {})", self.label())
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async move {
            Some(ConfirmationDetails::Info {
                title: format!("Confirm Web Search via {}", self.label()),
                prompt: format!(
                    "Send this query to {} ({}): {}",
                    self.label(),
                    self.provider.endpoint(),
                    self.query
                ),
                urls: vec![self.provider.endpoint().to_string()],
            })
        })
    }

    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let search = self
                .provider
                .search(&self.client, &self.query, self.max_results);
            let found = tokio::select! {
                r = search => r,
                _ = ctx.cancel.cancelled() => {
                    return ToolResult::err(
                        ErrorKind::Cancelled,
                        "[Operation Cancelled] the search was cancelled.",
                    );
                }
            };
            match found {
                Ok(results) => {
                    ToolResult::text(self.mask(&format_results(&self.query, self.label(), results)))
                }
                Err(e) => ToolResult::error(self.error(e)),
            }
        })
    }
}

/// The text the model reads: a header, numbered results, and how to cite them.
fn format_results(query: &str, provider: &str, results: SearchResults) -> String {
    let hits: Vec<SearchHit> = results
        .hits
        .into_iter()
        .map(|h| SearchHit {
            title: text::one_line(&h.title, TITLE_CHARS),
            url: h.url.trim().to_string(),
            snippet: text::one_line(&h.snippet, SNIPPET_CHARS),
        })
        .filter(|h| !h.url.is_empty())
        .collect();
    if hits.is_empty() {
        return format!(
            "No web results found for \"{query}\" (via {provider}). Try other or fewer words."
        );
    }
    let mut out = format!("Web search results for \"{query}\" (via {provider}):\n\n");
    if let Some(answer) = results.answer {
        out.push_str(&format!(
            "Answer from {provider}: {}\n\n",
            text::one_line(&answer, ANSWER_CHARS)
        ));
    }
    for (i, hit) in hits.iter().enumerate() {
        let title = if hit.title.is_empty() {
            "(untitled)"
        } else {
            &hit.title
        };
        out.push_str(&format!("{}. {title}\n   {}\n", i + 1, hit.url));
        if !hit.snippet.is_empty() {
            out.push_str(&format!("   {}\n", hit.snippet));
        }
        out.push('\n');
    }
    out.push_str(
        "When you use these results, cite each source by its number and URL, as in [1] https://example.com/page.",
    );
    out
}

#[cfg(test)]
mod tests;
