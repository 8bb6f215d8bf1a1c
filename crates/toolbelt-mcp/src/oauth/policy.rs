//! Where a server's OAuth metadata may send toolbelt. The metadata is the server's
//! word (and its authorization server's): a hostile one could name an authorization
//! page on `http://` anywhere, a `javascript:` or `file:` URL for the browser, or a
//! token endpoint in the clear. Every endpoint it names must be `https`, or `http` on
//! a loopback address (a server on the person's own machine, as in development); the
//! authorization URL is checked again as built, just before it is shown or opened.
//!
//! rmcp checks the rest: the protected resource metadata must name this server as its
//! `resource`, the authorization servers it names may not be private or loopback
//! addresses unless the server's own URL is one, the authorization server's `issuer`
//! must match where its metadata was found, and the access token only ever goes to the
//! server's own URL (the transport's).

use rmcp::transport::auth::AuthorizationMetadata;
use url::{Host, Url};

use crate::error::McpAuthError;

/// `url` when it may be used for `what`: `https`, or `http` on a loopback host.
pub(crate) fn check_endpoint(what: &str, url: &str) -> Result<Url, McpAuthError> {
    let parsed = Url::parse(url)
        .map_err(|e| McpAuthError::Unsafe(format!("the {what} URL is not a URL ({e})")))?;
    let loopback = match parsed.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        Some(Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    match parsed.scheme() {
        "https" if parsed.host().is_some() => Ok(parsed),
        "http" if loopback => Ok(parsed),
        _ => Err(McpAuthError::Unsafe(format!(
            "the {what} URL is neither https nor on this machine ({}): a token or login would travel in the clear",
            shown(&parsed)
        ))),
    }
}

/// Every endpoint of the authorization server's metadata that toolbelt would use, and
/// its issuer: rmcp checks that the issuer is where the metadata was read, so an issuer
/// on `http` elsewhere means metadata anyone on the way could have rewritten.
pub(crate) fn check_metadata(metadata: &AuthorizationMetadata) -> Result<(), McpAuthError> {
    let named = [
        ("issuer", metadata.issuer.as_ref()),
        ("authorization", Some(&metadata.authorization_endpoint)),
        ("token", Some(&metadata.token_endpoint)),
        ("registration", metadata.registration_endpoint.as_ref()),
    ];
    for (what, url) in named {
        if let Some(url) = url {
            check_endpoint(what, url).map_err(|e| match e {
                McpAuthError::Unsafe(why) => {
                    McpAuthError::Unsafe(format!("in the server's OAuth metadata, {why}"))
                }
                other => other,
            })?;
        }
    }
    Ok(())
}

/// A URL for an error: scheme, host and path, never the query (it may carry a state or a
/// code) nor user-info.
pub(crate) fn shown(url: &Url) -> String {
    match url.host_str() {
        Some(host) => format!("{}://{host}{}", url.scheme(), url.path()),
        None => format!("{}:...", url.scheme()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_must_be_https_or_loopback_http() {
        for ok in [
            "https://auth.example.com/authorize",
            "http://127.0.0.1:8080/authorize",
            "http://127.5.0.1/token",
            "http://[::1]:9/token",
            "http://localhost:3000/register",
        ] {
            assert!(check_endpoint("authorization", ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://auth.example.com/authorize",
            "http://10.0.0.1/authorize",
            "javascript:alert(1)",
            "file:///etc/passwd",
            "data:text/html,hi",
            "ftp://example.com/x",
            "not a url",
            "http://localhost.evil.com/",
        ] {
            let error = check_endpoint("authorization", bad).unwrap_err();
            assert!(matches!(error, McpAuthError::Unsafe(_)), "{bad}: {error}");
        }
    }

    #[test]
    fn a_metadata_document_with_one_cleartext_endpoint_is_refused() {
        let metadata: AuthorizationMetadata = serde_json::from_value(serde_json::json!({
            "authorization_endpoint": "https://auth.example.com/authorize",
            "token_endpoint": "http://auth.example.com/token",
        }))
        .unwrap();
        let error = check_metadata(&metadata).unwrap_err().to_string();
        assert!(error.contains("token URL"), "{error}");
        assert!(error.contains("http://auth.example.com/token"), "{error}");
    }

    #[test]
    fn metadata_read_in_the_clear_from_elsewhere_is_refused() {
        let metadata: AuthorizationMetadata = serde_json::from_value(serde_json::json!({
            "issuer": "http://auth.example.com",
            "authorization_endpoint": "https://auth.example.com/authorize",
            "token_endpoint": "https://auth.example.com/token",
        }))
        .unwrap();
        let error = check_metadata(&metadata).unwrap_err().to_string();
        assert!(error.contains("issuer URL"), "{error}");
    }

    #[test]
    fn a_shown_url_leaves_out_its_query_and_credentials() {
        let url = Url::parse("https://me:pw@auth.example.com/authorize?state=s3cret").unwrap();
        assert_eq!(shown(&url), "https://auth.example.com/authorize");
    }
}
