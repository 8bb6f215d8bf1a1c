//! `web_fetch`: one web page, as text the model can use.
//!
//! Safer than its peers on three counts:
//!
//! - **The private-address guard** ([`toolbelt_netguard`]) is on by default: loopback, private,
//!   link-local, CGNAT, unique-local, multicast, unspecified and cloud-metadata
//!   addresses are refused, however they are spelled, in the URL and in every redirect,
//!   and names are resolved once by the guard itself, which the client then connects to
//!   (no DNS rebinding). `tools.webFetch.allowHosts` opens named hosts or networks.
//! - **The body is streamed** and reading stops at `tools.webFetch.maxBytes` (10 MiB by
//!   default); the connection is then dropped, so a huge or endless body costs at most
//!   the cap in memory and transfer.
//! - **Time limits**: `tools.webFetch.connectTimeout` (10 s) and `tools.webFetch.timeout`
//!   (30 s) for the whole request, redirects and body included.
//!
//! HTML becomes Markdown without scripts, styles and navigation chrome; text, Markdown
//! and JSON pass through; other types are described. The page text goes back with the
//! call's prompt above it. With `tools.webFetch.summarize` and a model in the session
//! (the agent), the model is asked once, with only the page and the prompt, through the
//! [`toolbelt_core::AskOnce`] capability, and its answer is the result.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, Display, ErrorKind, ExecContext, Invocation, Kind,
    PermissionSubject, Tool, ToolEnvironment, ToolError, ToolResult,
};

mod content;
mod depth;

use content::{Body, BodyKind, Format, ReadError};
use toolbelt_netguard::{
    AddressPolicy, GuardedResolver, HostResolver, Purpose, Refused, SystemResolver,
};

/// The guard's words for `web_fetch`.
const GUARD_PURPOSE: Purpose = Purpose {
    verb_host: "fetch from",
    verb_url: "fetch",
    rule: "web_fetch only reaches public addresses. To allow it, add \"{host}\" (or the address or its network in CIDR form) to tools.webFetch.allowHosts in the user settings (~/.qwen/settings.json).",
};

/// Body bytes read at most, by default.
/// An HTML document as `web_fetch` gives it to the model: decoded with the charset of
/// the header or the document, converted to Markdown without scripts, styles and
/// navigation. Public so a person can measure or reuse the conversion alone.
pub fn html_to_markdown(bytes: Vec<u8>, header_charset: Option<&str>) -> String {
    let html = content::decode(bytes, header_charset, true);
    content::html_to_text(html, Format::Markdown)
}

pub(crate) const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Redirects followed at most, each one checked again.
const MAX_REDIRECTS: usize = 10;
/// Characters of page sent to the model when it is asked to answer the prompt.
const SUMMARY_INPUT_CHARS: usize = 100_000;

const SUMMARY_INSTRUCTIONS: &str = "You answer a request about one web page, using only the page's content given below. \
Quote exact names, figures, commands and code from the page. If the page does not hold what was asked, say so plainly. \
Answer in Markdown and keep it short.";

/// The `web_fetch` tool: one web page as text, through the private-address guard.
pub struct WebFetch {
    env: Arc<ToolEnvironment>,
    schema: Value,
    policy: Arc<AddressPolicy>,
    resolver: Arc<dyn HostResolver>,
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl WebFetch {
    /// The tool over a session's environment.
    pub fn new(env: Arc<ToolEnvironment>) -> Self {
        WebFetch::with_resolver(env, Arc::new(SystemResolver))
    }

    /// A `web_fetch` whose host names are resolved by `resolver` (the guard still judges
    /// every address it returns, and the client connects to exactly those).
    pub fn with_resolver(env: Arc<ToolEnvironment>, resolver: Arc<dyn HostResolver>) -> Self {
        let settings = &env.settings.tools.web_fetch;
        let (policy, warnings) = AddressPolicy::new(
            &settings.allow_hosts,
            settings.allow_private_addresses,
            GUARD_PURPOSE,
        );
        for warning in warnings {
            tracing::warn!("tools.webFetch.allowHosts: {warning}");
        }
        let schema = crate::params::schema_for::<Params>();
        WebFetch {
            env,
            schema,
            policy: Arc::new(policy),
            resolver,
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> Result<reqwest::Client, ToolError> {
        self.client
            .get_or_init(|| build_client(&self.env, &self.policy, &self.resolver))
            .clone()
            .map_err(|e| ToolError::new(ErrorKind::WebFetchError, e))
    }
}

fn build_client(
    env: &ToolEnvironment,
    policy: &Arc<AddressPolicy>,
    resolver: &Arc<dyn HostResolver>,
) -> Result<reqwest::Client, String> {
    let settings = &env.settings.tools.web_fetch;
    let redirect_policy = policy.clone();
    let redirects = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > MAX_REDIRECTS {
            let error = format!("more than {MAX_REDIRECTS} redirects");
            return attempt.error(error);
        }
        match toolbelt_netguard::check_url(attempt.url(), &redirect_policy) {
            Ok(()) => attempt.follow(),
            Err(why) => {
                let error = format!("redirected to {}: {why}", attempt.url());
                attempt.error(error)
            }
        }
    });
    toolbelt_netguard::client_builder()
        .user_agent(concat!(
            "toolbelt/",
            env!("CARGO_PKG_VERSION"),
            " (web_fetch)"
        ))
        // A proxy would resolve names itself, out of the guard's sight.
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver {
            inner: resolver.clone(),
            policy: policy.clone(),
        }))
        .redirect(redirects)
        .connect_timeout(
            settings
                .connect_timeout
                .and_then(|m| m.duration())
                .unwrap_or(DEFAULT_CONNECT_TIMEOUT),
        )
        .timeout(
            settings
                .timeout
                .and_then(|m| m.duration())
                .unwrap_or(DEFAULT_TIMEOUT),
        )
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {e}"))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(
        description = "The http:// or https:// URL to fetch. GitHub 'blob' URLs are fetched as raw files."
    )]
    url: String,
    #[schemars(
        description = "What to look for in the page: the question it should answer or the information to extract."
    )]
    prompt: String,
    #[serde(default)]
    #[schemars(
        description = "How an HTML page comes back: 'auto' and 'markdown' convert it to Markdown (default), 'text' to plain text, 'html' keeps the markup."
    )]
    format: Format,
}

/// The tool's name.
pub(crate) const NAME: &str = "web_fetch";
/// What permission rules may call it besides its name (see `crate::rule_vocabulary`).
pub(crate) const RULE_ALIASES: &[&str] = &["WebFetch"];

/// The tool as a built-in (see [`crate::builtin`]): its rule words and how a session
/// makes it.
pub(crate) const BUILTIN: crate::builtin::Builtin = crate::builtin::Builtin {
    name: NAME,
    rule_aliases: RULE_ALIASES,
    path_operation: None,
    make: crate::builtin::Make::Env(|env| Some(std::sync::Arc::new(WebFetch::new(env.clone())))),
};

impl Tool for WebFetch {
    fn name(&self) -> &str {
        NAME
    }
    fn display_name(&self) -> &str {
        "WebFetch"
    }
    fn description(&self) -> &str {
        "Fetches one web page (http or https) and returns its content as Markdown, with your prompt above it: \
         HTML is converted (scripts, styles and navigation dropped), text, Markdown and JSON come as they are, \
         other types are described. Use it to read documentation, an issue or an API reference the user names. \
         Private and local addresses (localhost, 10.x, 192.168.x, cloud metadata) are refused unless the user allowed them. \
         Bodies are cut at a size limit; long pages may be saved to a file you can read in parts."
    }
    fn rule_aliases(&self) -> &[&'static str] {
        RULE_ALIASES
    }
    fn kind(&self) -> Kind {
        Kind::Fetch
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        if params.prompt.trim().is_empty() {
            return Err(ToolError::invalid_params(
                "prompt must say what to look for in the page",
            ));
        }
        let url = reqwest::Url::parse(params.url.trim())
            .map_err(|e| ToolError::invalid_params(format!("invalid URL '{}': {e}", params.url)))?;
        let url = github_raw(url);
        toolbelt_netguard::check_url(&url, &self.policy)
            .map_err(|why| ToolError::new(ErrorKind::WebFetchError, why.to_string()))?;
        let settings = &self.env.settings.tools.web_fetch;
        Ok(Box::new(WebFetchCall {
            host: url.host_str().unwrap_or_default().to_string(),
            url,
            prompt: params.prompt,
            format: params.format,
            client: self.client()?,
            max_bytes: settings.max_bytes.unwrap_or(DEFAULT_MAX_BYTES).max(1024) as usize,
            summarize: settings.summarize,
            timeout: settings
                .timeout
                .and_then(|m| m.duration())
                .unwrap_or(DEFAULT_TIMEOUT),
        }))
    }
}

/// `https://github.com/o/r/blob/ref/path` → `https://raw.githubusercontent.com/o/r/ref/path`.
fn github_raw(url: reqwest::Url) -> reqwest::Url {
    if url.host_str() != Some("github.com") {
        return url;
    }
    let segments: Vec<&str> = url.path_segments().map(|s| s.collect()).unwrap_or_default();
    if segments.len() < 5 || segments[2] != "blob" {
        return url;
    }
    let path = [&segments[..2], &segments[3..]].concat().join("/");
    reqwest::Url::parse(&format!("https://raw.githubusercontent.com/{path}")).unwrap_or(url)
}

struct WebFetchCall {
    url: reqwest::Url,
    host: String,
    prompt: String,
    format: Format,
    client: reqwest::Client,
    max_bytes: usize,
    summarize: bool,
    /// `tools.webFetch.timeout`: the whole call, conversion included.
    timeout: Duration,
}

impl Invocation for WebFetchCall {
    fn describe(&self) -> String {
        let prompt: String = self.prompt.chars().take(80).collect();
        format!("Fetch {} ({prompt})", self.url)
    }

    fn permission_subject(&self) -> PermissionSubject {
        PermissionSubject::Domain(self.host.clone())
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async move {
            Some(ConfirmationDetails::Info {
                title: format!("Confirm Web Fetch from {}", self.host),
                prompt: format!(
                    "Fetch {} (host {}), looking for: {}",
                    self.url, self.host, self.prompt
                ),
                urls: vec![self.url.to_string()],
            })
        })
    }

    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            match self.fetch(&ctx).await {
                Ok(result) => result,
                Err(e) => ToolResult::error(e),
            }
        })
    }
}

/// Refuses a response that is not a success: a redirect the client stopped at (it
/// leads outside http and https) or an HTTP error.
fn check_status(response: &reqwest::Response, final_url: &str) -> Result<(), ToolError> {
    let status = response.status();
    if status.is_redirection() {
        // The client follows every redirect it may; one it stopped at leads outside
        // http and https.
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("(no location)");
        return Err(ToolError::new(
            ErrorKind::WebFetchError,
            format!(
                "refused to fetch {location}: {final_url} redirects there, and web_fetch only follows http and https URLs."
            ),
        ));
    }
    if !status.is_success() {
        return Err(ToolError::new(
            ErrorKind::WebFetchError,
            format!(
                "{final_url} answered HTTP {}{}; no content was fetched.",
                status.as_u16(),
                status
                    .canonical_reason()
                    .map(|r| format!(" {r}"))
                    .unwrap_or_default()
            ),
        ));
    }
    Ok(())
}

/// What a fetch brought back, as text.
struct Page {
    final_url: String,
    mime: String,
    text: String,
    note: String,
}

impl WebFetchCall {
    async fn fetch(&self, ctx: &ExecContext) -> Result<ToolResult, ToolError> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let request = self
            .client
            .get(self.url.clone())
            .header(reqwest::header::ACCEPT, self.format.accept());
        let response = tokio::select! {
            r = request.send() => r.map_err(|e| self.request_error(&e))?,
            _ = ctx.cancel.cancelled() => return Err(cancelled()),
        };
        let final_url = response.url().to_string();
        let header = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        check_status(&response, &final_url)?;
        let body = match content::read_capped(response, self.max_bytes, &ctx.cancel).await {
            Ok(body) => body,
            Err(ReadError::Cancelled) => return Err(cancelled()),
            Err(ReadError::Failed(e)) => return Err(self.request_error(&e)),
        };
        let page = tokio::select! {
            page = convert(final_url, header, body, self.format, self.max_bytes) => page?,
            _ = ctx.cancel.cancelled() => return Err(cancelled()),
            _ = tokio::time::sleep_until(deadline) => return Err(ToolError::new(
                ErrorKind::Timeout,
                format!(
                    "converting {} to text took longer than the call's time limit (tools.webFetch.timeout); nothing was returned.",
                    self.url
                ),
            )),
        };
        if let Some(summary) = self.summarize(ctx, &page).await {
            return Ok(summary);
        }
        let mime = if page.mime.is_empty() {
            "no content type".to_string()
        } else {
            page.mime
        };
        let text = format!(
            "Content of {} ({mime}){} fetched for the request: {}\n\n{}",
            page.final_url, page.note, self.prompt, page.text
        );
        Ok(ToolResult::text(text))
    }

    /// The model's answer to the request from the page, when summarising is on and a
    /// model is there to ask; `None` shows the page itself.
    async fn summarize(&self, ctx: &ExecContext, page: &Page) -> Option<ToolResult> {
        if !self.summarize {
            return None;
        }
        let ask = ctx.env.ask_once.get()?;
        let excerpt: String = page.text.chars().take(SUMMARY_INPUT_CHARS).collect();
        let question = format!(
            "Request: {}\n\nPage {}:\n---\n{excerpt}\n---",
            self.prompt, page.final_url
        );
        match ask.ask(SUMMARY_INSTRUCTIONS, &question, &ctx.cancel).await {
            Ok(answer) => {
                let text = format!("{answer}\n\nSource: {}", page.final_url);
                Some(ToolResult::with_display(
                    text.clone(),
                    Display::markdown(text),
                ))
            }
            Err(why) => {
                tracing::warn!("web_fetch: the model could not summarise: {why}");
                None
            }
        }
    }

    /// The message for a failed request, in terms the model can act on.
    fn request_error(&self, e: &reqwest::Error) -> ToolError {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(err) = source {
            if let Some(refused) = err.downcast_ref::<Refused>() {
                return ToolError::new(ErrorKind::WebFetchError, refused.to_string());
            }
            source = err.source();
        }
        if e.is_timeout() {
            return ToolError::new(
                ErrorKind::Timeout,
                format!(
                    "fetching {} timed out (tools.webFetch.timeout / connectTimeout); nothing was returned.",
                    self.url
                ),
            );
        }
        let mut message = format!("fetching {} failed: {e}", self.url);
        let mut source = std::error::Error::source(e);
        while let Some(err) = source {
            message.push_str(&format!(": {err}"));
            source = err.source();
        }
        ToolError::new(ErrorKind::WebFetchError, message)
    }
}

fn cancelled() -> ToolError {
    ToolError::new(
        ErrorKind::Cancelled,
        "[Operation Cancelled] the fetch was cancelled.",
    )
}

/// Stack of the thread that converts HTML: the walk recurses once per level of the
/// (bounded, see `depth`) tree, and a page must never take the process down.
const CONVERT_STACK_BYTES: usize = 64 * 1024 * 1024;

/// Decodes and converts a body. HTML conversion runs on a thread of its own with a
/// large stack, off the async threads; its work is linear in the (capped) body, so a
/// conversion the caller stops waiting for (cancelled, past the deadline) still ends
/// soon, and its result is dropped.
async fn convert(
    final_url: String,
    header: Option<String>,
    body: Body,
    format: Format,
    cap: usize,
) -> Result<Page, ToolError> {
    let (mime, charset) = content::parse_content_type(header.as_deref());
    let kind = content::body_kind(&mime, &body.bytes);
    let note = if body.capped {
        format!(
            " (cut at {}, the tools.webFetch.maxBytes limit; the rest was not read)",
            content::human_bytes(cap as u64)
        )
    } else {
        String::new()
    };
    let size = body.bytes.len() as u64;
    let text = match kind {
        BodyKind::Html => {
            let (send, receive) = tokio::sync::oneshot::channel();
            std::thread::Builder::new()
                .name("web_fetch-convert".into())
                .stack_size(CONVERT_STACK_BYTES)
                .spawn(move || {
                    let html = content::decode(body.bytes, charset.as_deref(), true);
                    let text = if format == Format::Html {
                        html
                    } else {
                        content::html_to_text(html, format)
                    };
                    let _ = send.send(text);
                })
                .map_err(|e| {
                    ToolError::new(
                        ErrorKind::WebFetchError,
                        format!("cannot start converting the page: {e}"),
                    )
                })?;
            receive
                .await
                .unwrap_or_else(|_| "(the page could not be converted)".to_string())
        }
        BodyKind::Text => content::decode(body.bytes, charset.as_deref(), false),
        BodyKind::Binary => format!(
            "(binary content of type {}, {} read; not shown. Fetch a text or HTML page instead, or ask the user to download it.)",
            if mime.is_empty() { "unknown" } else { &mime },
            content::human_bytes(size)
        ),
    };
    Ok(Page {
        final_url,
        mime,
        text,
        note,
    })
}

#[cfg(test)]
mod depth_tests;
#[cfg(test)]
mod tests;
