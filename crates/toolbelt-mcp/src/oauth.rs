//! OAuth 2.1 for HTTP servers, as the MCP authorization specification asks,
//! on rmcp's `auth` feature (`AuthorizationManager`, `AuthorizationSession`,
//! `AuthClient`).
//!
//! # Brief overview
//!
//! A Streamable HTTP or legacy SSE server that answers 401 is shown as "needs login"
//! ([`crate::ServerStatus::NeedsLogin`]), not as failed, and is not started again with
//! backoff: only a login helps.
//! [`login`] (`toolbelt mcp auth NAME`) then does the whole flow: discovery from the
//! server's 401 (its `WWW-Authenticate` names the protected resource metadata, RFC
//! 9728, which names the authorization server, whose metadata is read per RFC 8414 or
//! OpenID discovery); the client is the one the settings name (`oauth.clientId`), a
//! client ID metadata document (`oauth.clientMetadataUrl`) where the server takes one,
//! or else one registered there and then (dynamic client registration); the
//! authorization code comes back through a loopback redirect ([`redirect`]), with PKCE
//! (S256), the resource indicator (RFC 8707: the server's URL, on the authorization
//! request, the token request and every refresh) and, when the authorization server
//! says it sends one, the `iss` of the response checked against its issuer (RFC 9207).
//! The tokens go to toolbelt's store ([`store`]), never to the settings.
//!
//! On connect ([`authorized_client`]), a server with kept tokens gets rmcp's
//! `AuthClient` as its HTTP client (the SSE transport asks [`kept_tokens`] for a token
//! before each request): the access token goes with every request to the server's own
//! URL (never elsewhere: the transport follows redirects only within that
//! origin), and is refreshed when it is about to expire or the server refuses it. A
//! refresh the authorization server refuses makes the server "needs login" again. A
//! static `Authorization` header in the settings wins: such a server is never sent
//! through OAuth.
//!
//! What a hostile server's metadata can and cannot do is [`policy`]'s subject.

mod policy;
mod redirect;
mod store;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use rmcp::service::ClientInitializeError;
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession, OAuthClientConfig,
};
use rmcp::transport::streamable_http_client::StreamableHttpError;
use rmcp::transport::worker::WorkerQuitReason;
use toolbelt_config::settings::McpOAuthSettings;

use crate::config::{ServerConfig, Transport};
use crate::error::McpAuthError;
use redirect::RedirectListener;
use store::TokenFile;

/// How toolbelt is an OAuth client of one server (`mcpServers.<name>.oauth`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthConfig {
    /// `oauth.enabled` (default true): when false a 401 is a failure, not a login to do.
    pub enabled: bool,
    /// A client id registered beforehand (`oauth.clientId`).
    pub client_id: Option<String>,
    /// Its secret, for a confidential client (`oauth.clientSecret`).
    pub client_secret: Option<String>,
    /// A client ID metadata document's HTTPS URL (`oauth.clientMetadataUrl`).
    pub client_metadata_url: Option<String>,
    /// The scopes to ask for (`oauth.scopes`); empty: those the server names.
    pub scopes: Vec<String>,
    /// The loopback port of the redirect (`oauth.redirectPort`); `None`: any free one.
    pub redirect_port: Option<u16>,
    /// OAuth requests may go to private addresses (`oauth.allowPrivateAddresses`).
    pub allow_private_addresses: bool,
    /// Where tokens are kept (`<toolbelt home>/mcp-oauth`, set by the session);
    /// `None`: nowhere, so a server that asks for a login stays "needs login".
    pub store_dir: Option<PathBuf>,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        OAuthConfig::from_settings(&McpOAuthSettings::default())
    }
}

impl OAuthConfig {
    /// The `oauth` object of a server entry.
    pub fn from_settings(settings: &McpOAuthSettings) -> OAuthConfig {
        OAuthConfig {
            enabled: settings.enabled.unwrap_or(true),
            client_id: settings.client_id.clone().filter(|s| !s.is_empty()),
            client_secret: settings.client_secret.clone().filter(|s| !s.is_empty()),
            client_metadata_url: settings
                .client_metadata_url
                .clone()
                .filter(|s| !s.is_empty()),
            scopes: settings.scopes.clone().unwrap_or_default(),
            redirect_port: settings.redirect_port,
            allow_private_addresses: settings.allow_private_addresses,
            store_dir: None,
        }
    }

    /// The client secret is masked wherever text leaves toolbelt.
    pub(crate) fn register_secrets(&self, redactor: &toolbelt_config::redact::Redactor) {
        if let Some(secret) = &self.client_secret {
            redactor.add_secret(secret);
        }
    }
}

/// How toolbelt proves who it is to a server, as `toolbelt mcp list` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthState {
    /// Nothing: a stdio server, or an HTTP server with no credentials (yet).
    None,
    /// An `Authorization` header from the settings.
    Header,
    /// OAuth tokens kept by `toolbelt mcp auth`.
    OAuth,
}

impl AuthState {
    /// `none`, `header` or `oauth`.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthState::None => "none",
            AuthState::Header => "header",
            AuthState::OAuth => "oauth",
        }
    }

    /// How `config`'s server is authenticated to (reads whether tokens are kept).
    pub(crate) fn of(config: &ServerConfig) -> AuthState {
        let (Transport::StreamableHttp { url, headers } | Transport::Sse { url, headers }) =
            &config.transport
        else {
            return AuthState::None;
        };
        if headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("authorization"))
        {
            return AuthState::Header;
        }
        match &config.oauth.store_dir {
            Some(dir)
                if applies(config) && TokenFile::new(dir, &config.alias, url).has_tokens() =>
            {
                AuthState::OAuth
            }
            _ => AuthState::None,
        }
    }
}

/// The server's URL and its token file, when OAuth applies to it.
fn target(config: &ServerConfig) -> Result<(String, TokenFile), McpAuthError> {
    let Some((url, _)) = http_target(config) else {
        return Err(McpAuthError::NotHttp(config.alias.clone()));
    };
    let Some(dir) = &config.oauth.store_dir else {
        return Err(McpAuthError::Store(
            "toolbelt has no store to keep tokens in".into(),
        ));
    };
    Ok((url.clone(), TokenFile::new(dir, &config.alias, url)))
}

/// Logs in to `config`'s server (see the module's documentation) and keeps the tokens
/// in toolbelt's store; returns the token file. `show_url` gets the authorization URL
/// (already checked: `https`, or `http` on this machine) to print or open; the wait
/// for the browser's redirect lasts at most `timeout`.
pub async fn login(
    config: &ServerConfig,
    timeout: Duration,
    show_url: impl FnOnce(&str),
) -> Result<PathBuf, McpAuthError> {
    let (url, store) = target(config)?;
    if !config.oauth.enabled {
        return Err(McpAuthError::Disabled(config.alias.clone()));
    }
    // The token will go to this URL with every request: never in the clear over a network.
    policy::check_endpoint("server", &url)?;
    config
        .oauth
        .register_secrets(toolbelt_config::redact::global());
    let mut manager = manager(&url, store.clone(), &config.oauth).await?;
    let metadata = discover(&manager).await?;
    manager.set_metadata(metadata);
    let listener = RedirectListener::bind(config.oauth.redirect_port).await?;
    let request = authorization_request(&config.oauth, listener.redirect_uri());
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| McpAuthError::Flow(format!("the login cannot start: {}", text(&e))))?;
    let auth_url = policy::check_endpoint("authorization", session.get_authorization_url())?;
    let state = (auth_url.query_pairs())
        .find(|(name, _)| name == "state")
        .map(|(_, value)| value.into_owned())
        .ok_or_else(|| McpAuthError::Flow("the authorization URL has no state".into()))?;
    show_url(auth_url.as_str());
    let redirected = tokio::time::timeout(timeout, listener.wait(&state))
        .await
        .map_err(|_| McpAuthError::TimedOut(crate::connection::human_duration(timeout)))??;
    let exchanged = session
        .handle_callback_with_issuer(
            &redirected.code,
            &redirected.state,
            redirected.issuer.as_deref(),
        )
        .await;
    match exchanged {
        Ok(_) => {
            redirected.finish(Ok(())).await;
            Ok(store.path().to_path_buf())
        }
        Err(e) => {
            let why = text(&e);
            redirected.finish(Err(&why)).await;
            Err(McpAuthError::Flow(format!("the login failed: {why}")))
        }
    }
}

/// Forgets the tokens of `config`'s server; whether there were any.
pub fn logout(config: &ServerConfig) -> Result<bool, McpAuthError> {
    let (_, store) = target(config)?;
    store
        .remove()
        .map_err(|e| McpAuthError::Store(format!("cannot remove {}: {e}", store.path().display())))
}

/// Opens `url` in the person's browser (`xdg-open`, `open` on macOS), once more checked
/// to be `https` or on this machine: it goes to a program that opens anything. Elsewhere
/// than macOS only with a graphical display (`DISPLAY` or `WAYLAND_DISPLAY`): over SSH,
/// `xdg-open` would start a text browser in the background, or nothing.
pub fn open_in_browser(url: &str) -> Result<(), McpAuthError> {
    let url = policy::check_endpoint("authorization", url)?;
    let display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if display {
        "xdg-open"
    } else {
        return Err(McpAuthError::Flow(
            "no graphical display to open a browser on (DISPLAY, WAYLAND_DISPLAY)".into(),
        ));
    };
    let mut child = std::process::Command::new(opener)
        .arg(url.as_str())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| McpAuthError::Flow(format!("cannot start {opener}: {e}")))?;
    // Not a `GroupCommand`: this is the person's own browser, opened at their command
    // (`mcp auth`), and it must outlive toolbelt rather than be ended with it. Reaped
    // beside the login, not waited for: the opener may stay until the browser closes.
    std::thread::spawn(move || child.wait());
    Ok(())
}

/// Whether OAuth is how `config`'s server is logged in to: an HTTP server with
/// `oauth.enabled`, a token store, and no static `Authorization` header (which wins:
/// such a server's 401 says the header is wrong, not that a login is needed).
pub(crate) fn applies(config: &ServerConfig) -> bool {
    let Some((_, headers)) = http_target(config) else {
        return false;
    };
    config.oauth.enabled
        && config.oauth.store_dir.is_some()
        && !headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("authorization"))
}

/// The URL and headers of an HTTP server (Streamable HTTP or legacy SSE).
fn http_target(config: &ServerConfig) -> Option<(&String, &BTreeMap<String, String>)> {
    match &config.transport {
        Transport::StreamableHttp { url, headers } | Transport::Sse { url, headers } => {
            Some((url, headers))
        }
        _ => None,
    }
}

/// The HTTP client a Streamable HTTP server's transport gets instead of `http`: rmcp's
/// `AuthClient` over it, with the server's kept tokens ([`kept_tokens`]).
pub(crate) async fn authorized_client(
    config: &ServerConfig,
    http: reqwest::Client,
) -> Result<Option<AuthClient<reqwest::Client>>, String> {
    Ok(kept_tokens(config)
        .await?
        .map(|manager| AuthClient::new(http, manager)))
}

/// rmcp's manager of `config`'s kept tokens (it refreshes them), when OAuth applies and
/// tokens are kept; `None` otherwise (no tokens: the server's 401 makes it "needs
/// login").
pub(crate) async fn kept_tokens(
    config: &ServerConfig,
) -> Result<Option<AuthorizationManager>, String> {
    let (Some((url, _)), Some(dir)) = (http_target(config), &config.oauth.store_dir) else {
        return Ok(None);
    };
    let store = TokenFile::new(dir, &config.alias, url);
    if !applies(config) || !store.has_tokens() {
        return Ok(None);
    }
    config
        .oauth
        .register_secrets(toolbelt_config::redact::global());
    let login_again =
        |why: String| format!("{why} (`toolbelt mcp auth {}` logs in again)", config.alias);
    let mut manager = manager(url, store, &config.oauth)
        .await
        .map_err(|e| login_again(e.to_string()))?;
    let metadata = discover(&manager)
        .await
        .map_err(|e| login_again(e.to_string()))?;
    manager.set_metadata(metadata);
    // False when the authorization server's issuer changed: rmcp dropped the tokens, and
    // the server's 401 will say a login is needed.
    if !(manager.initialize_from_store().await).map_err(|e| login_again(text(&e)))? {
        return Ok(None);
    }
    // rmcp keeps the client id with the tokens, not a secret: a confidential client's
    // comes from the settings again, for its refreshes.
    if let (Some(id), Some(secret)) = (&config.oauth.client_id, &config.oauth.client_secret) {
        let client = OAuthClientConfig::new(id.clone(), url.clone()).with_client_secret(secret);
        manager.configure_client(client).map_err(|e| text(&e))?;
    }
    Ok(Some(manager))
}

/// Whether a failed handshake was the server's 401: it wants an OAuth login.
pub(crate) fn asks_for_login(error: &ClientInitializeError) -> bool {
    type HttpError = StreamableHttpError<reqwest::Error>;
    let ClientInitializeError::TransportError { error, .. } = error else {
        return false;
    };
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    while let Some(e) = current {
        if let Some(WorkerQuitReason::Fatal { error, .. }) =
            e.downcast_ref::<WorkerQuitReason<HttpError>>()
            && matches!(error, StreamableHttpError::AuthRequired(_))
        {
            return true;
        }
        if let Some(StreamableHttpError::AuthRequired(_)) = e.downcast_ref::<HttpError>() {
            return true;
        }
        current = e.source();
    }
    false
}

/// rmcp's manager for `url`, keeping tokens in `store`. Its own HTTP clients resolve
/// names through rmcp's address filter (see `policy`): public addresses, loopback ones
/// for a server on this machine, private ones only with `oauth.allowPrivateAddresses`.
async fn manager(
    url: &str,
    store: TokenFile,
    oauth: &OAuthConfig,
) -> Result<AuthorizationManager, McpAuthError> {
    // rmcp builds reqwest clients of its own; the TLS provider they need is installed by
    // toolbelt's one HTTP client builder.
    drop(toolbelt_netguard::client_builder());
    let manager = if oauth.allow_private_addresses {
        AuthorizationManager::new_allowing_private_addresses(url).await
    } else {
        AuthorizationManager::new(url).await
    };
    let mut manager = manager.map_err(|e| McpAuthError::Discovery(text(&e)))?;
    manager.set_credential_store(store);
    Ok(manager)
}

/// The authorization server's metadata, found from the server's 401 and checked.
async fn discover(manager: &AuthorizationManager) -> Result<AuthorizationMetadata, McpAuthError> {
    let resolution = manager
        .resolve_metadata()
        .await
        .map_err(|e| McpAuthError::Discovery(text(&e)))?;
    // rmcp's fallback (`/authorize` and `/token` guessed on the server's origin) is the
    // 2025-03-26 revision's; since then a server must publish its metadata.
    if !resolution.source.is_discovered() {
        return Err(McpAuthError::Discovery(
            "the server publishes no OAuth metadata (RFC 9728 or RFC 8414): it may need no login, or a header in the settings".into(),
        ));
    }
    policy::check_metadata(&resolution.metadata)?;
    Ok(resolution.metadata)
}

fn authorization_request(oauth: &OAuthConfig, redirect_uri: String) -> AuthorizationRequest {
    let mut request = AuthorizationRequest::new(redirect_uri).with_client_name("toolbelt");
    if let Some(id) = &oauth.client_id {
        request = request.with_preregistered_client(id);
        if let Some(secret) = &oauth.client_secret {
            request = request.with_client_secret(secret);
        }
    }
    if let Some(url) = &oauth.client_metadata_url {
        request = request.with_client_metadata_url(url);
    }
    if oauth.scopes.is_empty() {
        request.with_initial_scope_selection()
    } else {
        request.with_scopes(oauth.scopes.clone())
    }
}

/// An rmcp auth error in one line, masked, without control characters and cut short:
/// it may quote what a server sent (a registration endpoint's answer, say), and it goes
/// to a terminal.
fn text(e: &AuthError) -> String {
    let chain = crate::start::error_chain(e);
    let mut line: String = (chain.chars())
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_ERROR_CHARS)
        .collect();
    if chain.chars().count() > MAX_ERROR_CHARS {
        line.push_str("...");
    }
    toolbelt_config::redact::redact(&line)
}

/// The longest error text shown.
const MAX_ERROR_CHARS: usize = 500;

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn no_login_to_a_server_reached_in_the_clear_over_a_network() {
        let dir = tempfile::tempdir().unwrap();
        let entry = toolbelt_config::settings::McpServerSettings {
            http_url: Some("http://mcp.example.invalid/mcp".into()),
            ..Default::default()
        };
        let mut config = ServerConfig::from_settings("plain", &entry, dir.path()).unwrap();
        config.oauth.store_dir = Some(dir.path().join("mcp-oauth"));
        let shown = std::cell::Cell::new(false);
        let error = login(&config, Duration::from_secs(5), |_| shown.set(true))
            .await
            .unwrap_err();
        assert!(
            matches!(&error, McpAuthError::Unsafe(why) if why.contains("server URL")),
            "{error}"
        );
        assert!(!shown.get());

        config.oauth.enabled = false;
        let error = login(&config, Duration::from_secs(5), |_| {})
            .await
            .unwrap_err();
        assert!(matches!(error, McpAuthError::Disabled(_)), "{error}");
    }

    #[test]
    fn the_oauth_object_of_a_server_entry_is_read_whole() {
        let settings: McpOAuthSettings = serde_json::from_value(serde_json::json!({
            "clientId": "cli-1", "clientSecret": "s3cret-value", "scopes": ["a", "b"],
            "redirectPort": 8765, "allowPrivateAddresses": true, "enabled": false,
            "clientMetadataUrl": "https://toolbelt.example/client.json"
        }))
        .unwrap();
        let config = OAuthConfig::from_settings(&settings);
        assert_eq!(config.client_id.as_deref(), Some("cli-1"));
        assert_eq!(config.client_secret.as_deref(), Some("s3cret-value"));
        assert_eq!(config.scopes, ["a", "b"]);
        assert_eq!(config.redirect_port, Some(8765));
        assert!(config.allow_private_addresses && !config.enabled);
        assert!(config.client_metadata_url.is_some() && config.store_dir.is_none());
        assert!(OAuthConfig::default().enabled);
    }

    #[test]
    fn a_servers_words_in_an_error_lose_their_escapes_and_length() {
        let hostile = format!(
            "HTTP 400: \u{1b}]52;c;AAAA\u{7}\u{1b}[2J{}",
            "x".repeat(2000)
        );
        let shown = text(&AuthError::RegistrationFailed(hostile));
        assert!(!shown.chars().any(char::is_control), "{shown:?}");
        assert!(
            shown.ends_with("...") && shown.chars().count() < 520,
            "{shown}"
        );
    }
}
