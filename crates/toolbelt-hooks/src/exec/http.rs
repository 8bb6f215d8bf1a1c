//! An `http` hook: the input JSON POSTed to its URL.
//!
//! - `${VAR}` and `$VAR` in the URL and the headers expand only for the names in the
//!   hook's `allowedEnvVars`; any other variable becomes empty, so a settings file
//!   cannot send toolbelt's environment anywhere by naming it.
//! - The URL must match `security.allowedHttpHookUrls` when that is set (`*` matches
//!   any run of characters).
//! - Through the private-address guard (`toolbelt-netguard`), with loopback opened as
//!   Qwen Code opens it: a hook may reach public addresses and this machine, never a
//!   private network, link-local or cloud metadata address, however the URL or the DNS
//!   answer spells it. No proxy, no redirects (a 3xx is a failure like any non-2xx).
//! - The answer: a JSON body when the response says `application/json`; any other
//!   non-empty body is a message for the person; a non-2xx status is a failure that does
//!   not block (as Qwen Code's). Bodies are read up to 1 MiB.

use std::sync::{Arc, OnceLock};

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use toolbelt_netguard::{AddressPolicy, GuardedResolver, HostResolver, Purpose, SystemResolver};

use super::{OUTPUT_CAP, show_duration};
use crate::config::HttpHook;
use crate::output::{Answer, stderr_tail};

/// The guard's words for http hooks.
const PURPOSE: Purpose = Purpose {
    verb_host: "send the hook to",
    verb_url: "send the hook to",
    rule: "http hooks reach only public addresses and this machine (loopback), never a private network, link-local or cloud metadata address.",
};

/// Sends http hooks: one client for the session, built on first use.
pub(crate) struct HttpSender {
    policy: Arc<AddressPolicy>,
    resolver: Arc<dyn HostResolver>,
    allowed_urls: Option<Vec<String>>,
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl HttpSender {
    /// A sender whose URLs must match `allowed_urls` when set, resolving names with
    /// `resolver` (the system's when `None`); the guard judges every address.
    pub(crate) fn new(
        allowed_urls: Option<Vec<String>>,
        resolver: Option<Arc<dyn HostResolver>>,
    ) -> HttpSender {
        let loopback = ["127.0.0.0/8".to_string(), "::1".to_string()];
        let (policy, _) = AddressPolicy::new(&loopback, false, PURPOSE);
        HttpSender {
            policy: Arc::new(policy),
            resolver: resolver.unwrap_or_else(|| Arc::new(SystemResolver)),
            allowed_urls,
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> Result<reqwest::Client, String> {
        self.client
            .get_or_init(|| {
                toolbelt_netguard::client_builder()
                    .user_agent(concat!("toolbelt/", env!("CARGO_PKG_VERSION"), " (hooks)"))
                    // A proxy would resolve names itself, out of the guard's sight.
                    .no_proxy()
                    .dns_resolver(Arc::new(GuardedResolver {
                        inner: self.resolver.clone(),
                        policy: self.policy.clone(),
                    }))
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| format!("cannot make the HTTP client: {e}"))
            })
            .clone()
    }

    /// POSTs `body` to the hook's URL and reads its answer.
    pub(crate) async fn send(
        &self,
        hook: &HttpHook,
        body: Vec<u8>,
        cancel: CancellationToken,
    ) -> Answer {
        let request = match self.request(hook, body) {
            Ok(request) => request,
            Err(why) => return Answer::Failed(why),
        };
        let exchange = async {
            let response = request.send().await?;
            let status = response.status();
            let json = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(is_json);
            let (bytes, cut) = read_capped(response).await?;
            Ok::<_, reqwest::Error>((status, json, bytes, cut))
        };
        let result = tokio::select! {
            result = exchange => result,
            () = cancel.cancelled() => return Answer::Failed("cancelled".into()),
        };
        match result {
            Ok((status, json, bytes, cut)) => answer(status, json, &bytes, cut),
            Err(e) if e.is_timeout() => Answer::Failed(format!(
                "it did not answer within {}",
                show_duration(hook.timeout)
            )),
            Err(e) => Answer::Failed(describe(&e)),
        }
    }

    /// The request, after the URL list and the guard's check of the URL.
    fn request(&self, hook: &HttpHook, body: Vec<u8>) -> Result<reqwest::RequestBuilder, String> {
        let written = expand(&hook.url, &hook.allowed_env_vars);
        let url = reqwest::Url::parse(&written).map_err(|e| {
            format!(
                "{} is not a URL once expanded: {e}",
                crate::config::quoted(&written)
            )
        })?;
        if let Some(patterns) = &self.allowed_urls {
            let listed = patterns.iter().any(|p| {
                toolbelt_engine::rules::wildcard(p, &written)
                    || toolbelt_engine::rules::wildcard(p, url.as_str())
            });
            if !listed {
                return Err(format!(
                    "{url} is not in security.allowedHttpHookUrls; the hook was not sent"
                ));
            }
        }
        toolbelt_netguard::check_url(&url, &self.policy).map_err(|e| e.to_string())?;
        let mut headers = HeaderMap::new();
        for (name, value) in &hook.headers {
            let value = expand(value, &hook.allowed_env_vars);
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("{} is not a header name", crate::config::quoted(name)))?;
            let value = HeaderValue::from_str(&value)
                .map_err(|_| format!("the value of header {name} is not a header value"))?;
            headers.insert(name, value);
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(self
            .client()?
            .post(url)
            .headers(headers)
            .timeout(hook.timeout)
            .body(body))
    }
}

fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json" || essence.ends_with("+json")
}

/// The body, up to the cap (and whether it was cut).
async fn read_capped(mut response: reqwest::Response) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = OUTPUT_CAP.saturating_sub(bytes.len());
        bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if chunk.len() > room {
            return Ok((bytes, true));
        }
    }
    Ok((bytes, false))
}

/// What a response means.
fn answer(status: reqwest::StatusCode, json: bool, bytes: &[u8], cut: bool) -> Answer {
    let text = String::from_utf8_lossy(bytes);
    if !status.is_success() {
        return Answer::Failed(format!("HTTP {status}{}", stderr_tail(&text)));
    }
    if cut {
        return Answer::Malformed(format!("its response passed {} MiB", OUTPUT_CAP >> 20));
    }
    let text = text.trim();
    if text.is_empty() {
        return Answer::Empty;
    }
    if !json {
        let mut map = Map::new();
        map.insert("systemMessage".into(), Value::String(text.to_string()));
        return Answer::Json(map);
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Answer::Json(map),
        Ok(_) => Answer::Malformed("its JSON response is not an object".into()),
        Err(e) => Answer::Malformed(format!("its response says JSON but is not ({e})")),
    }
}

/// A request error with its causes (the guard's refusal is among them).
fn describe(error: &reqwest::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(err) = source {
        if let Some(refused) = err.downcast_ref::<toolbelt_netguard::Refused>() {
            return refused.to_string();
        }
        source = err.source();
    }
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(err) = source {
        message.push_str(": ");
        message.push_str(&err.to_string());
        source = err.source();
    }
    message
}

/// `${VAR}` and `$VAR` replaced with the variable's value for names in `allowed`, and
/// with nothing for any other name. A `$` that starts no name is kept.
pub(crate) fn expand(text: &str, allowed: &[String]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, consumed) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) if is_name(&braced[..end]) => (&braced[..end], end + 2),
                _ => ("", 0),
            }
        } else {
            // ASCII only, so the count of characters is the count of bytes.
            let len = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .count();
            let name = &after[..len];
            if is_name(name) { (name, len) } else { ("", 0) }
        };
        if consumed == 0 {
            out.push('$');
            rest = after;
            continue;
        }
        if allowed.iter().any(|a| a == name) {
            out.push_str(&std::env::var(name).unwrap_or_default());
        }
        rest = &after[consumed..];
    }
    out.push_str(rest);
    out
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_allowed_variables_expand_and_others_become_empty() {
        let home = std::env::var("HOME").unwrap_or_default();
        let allowed = vec!["HOME".to_string()];
        assert_eq!(expand("a ${HOME} b", &allowed), format!("a {home} b"));
        assert_eq!(expand("a $HOME/b", &allowed), format!("a {home}/b"));
        assert_eq!(expand("${PATH}x$PATH", &allowed), "x");
        assert_eq!(
            expand("cost: $5 and ${ and $", &allowed),
            "cost: $5 and ${ and $"
        );
        assert_eq!(expand("${NOT A NAME}", &allowed), "${NOT A NAME}");
        assert_eq!(expand("ünï$HOMEcode", &allowed), "ünï");
    }

    #[test]
    fn json_content_types_are_recognised() {
        assert!(is_json("application/json"));
        assert!(is_json("Application/JSON; charset=utf-8"));
        assert!(is_json("application/problem+json"));
        assert!(!is_json("text/plain"));
    }
}
