//! When and how long to wait before asking the server again.
//!
//! Retried: 429 (rate limit), 408, 5xx, connection errors, timeouts and streams that end
//! early or carry corrupted data. Not retried: other 4xx, which mean the request itself
//! is wrong (bad key, unknown model) and would fail the same way again.
//!
//! Delays grow exponentially from `base_delay`, capped at `max_delay`, with "full
//! jitter" (a random point between half the delay and the delay) so many clients
//! rate-limited together do not come back together. A `Retry-After` header from the
//! server wins over the computed delay, up to `max_retry_after`.

use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::{DeltaSink, ModelError, ModelTurn, StreamDelta};

/// How one attempt at a request failed (every wire format's client says it this way).
pub(crate) enum AttemptError {
    /// Worth another attempt, after `retry_after` when the server said so.
    Retry {
        reason: String,
        retry_after: Option<Duration>,
    },
    /// Ends the request.
    Fatal(ModelError),
}

/// A retryable failure without a server-given delay.
pub(crate) fn retry(reason: impl Into<String>) -> AttemptError {
    AttemptError::Retry {
        reason: reason.into(),
        retry_after: None,
    }
}

/// Runs `attempt` until it succeeds, fails for good, the policy's attempts are spent or
/// `cancel` fires; tells `on_delta` [`StreamDelta::Restart`] before each new attempt.
pub(crate) async fn with_retries<'a, F, Fut>(
    policy: &RetryPolicy,
    cancel: &CancellationToken,
    on_delta: DeltaSink<'a>,
    mut attempt: F,
) -> Result<ModelTurn, ModelError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<ModelTurn, AttemptError>>,
{
    let attempts = policy.max_attempts.max(1);
    let mut last = String::new();
    for n in 1..=attempts {
        if n > 1 {
            on_delta(StreamDelta::Restart);
        }
        let outcome = tokio::select! {
            outcome = attempt() => outcome,
            _ = cancel.cancelled() => return Err(ModelError::Cancelled),
        };
        let retry_after = match outcome {
            Ok(turn) => return Ok(turn),
            Err(AttemptError::Fatal(e)) => return Err(e),
            Err(AttemptError::Retry {
                reason,
                retry_after,
            }) => {
                last = reason;
                retry_after
            }
        };
        if n == attempts {
            break;
        }
        let delay = policy.delay(n, retry_after);
        tracing::warn!(
            "model request failed (attempt {n} of {attempts}): {last}; retrying in {delay:?}"
        );
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = cancel.cancelled() => return Err(ModelError::Cancelled),
        }
    }
    Err(ModelError::Unavailable { attempts, last })
}

/// A request that got no response, as every client reports it. A local refusal and a
/// host name that does not resolve end the run at once (a retry seconds later would not
/// change them; offline, each would also wait for name lookups); other connection errors
/// are retried. Every message names the URL and what set it (`origin`).
pub(crate) fn send_error(url: &str, origin: Option<&str>, e: &reqwest::Error) -> AttemptError {
    let origin = origin.unwrap_or("the configuration").to_string();
    let chain = error_chain(e);
    let fatal = |reason: String| {
        AttemptError::Fatal(ModelError::Unreachable {
            url: url.to_string(),
            origin: origin.clone(),
            reason,
        })
    };
    if refused_locally(url, e) {
        return fatal("the connection was refused (nothing listens there)".into());
    }
    // hyper's connector calls a failed lookup `dns error`; the cause is the resolver's.
    if e.is_connect() && chain.contains("dns error") {
        let cause = chain.rsplit(": ").next().unwrap_or("").to_string();
        return fatal(format!("its host name does not resolve ({cause})"));
    }
    retry(format!(
        "cannot connect to {url} (the URL comes from {origin}): {chain}"
    ))
}

/// A refused connection to this machine: no server listens at the port, which a retry a
/// few seconds later will not change (a remote refusal may be a server restarting, so
/// it is still retried).
pub(crate) fn refused_locally(url: &str, e: &reqwest::Error) -> bool {
    let local = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| {
            let host = u.host_str()?.trim_start_matches('[').trim_end_matches(']');
            Some(match host.parse::<std::net::IpAddr>() {
                Ok(ip) => ip.is_loopback() || ip.is_unspecified(),
                Err(_) => host.eq_ignore_ascii_case("localhost"),
            })
        })
        .unwrap_or(false);
    local && e.is_connect() && io_kind(e) == Some(std::io::ErrorKind::ConnectionRefused)
}

/// The kind of the first I/O error in `e`'s chain.
fn io_kind(e: &(dyn std::error::Error + 'static)) -> Option<std::io::ErrorKind> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        source = s.source();
    }
    None
}

/// `headers` for every request of a client; a name or value HTTP cannot carry is a
/// configuration error naming it.
pub(crate) fn header_map(
    headers: &[(String, String)],
) -> Result<reqwest::header::HeaderMap, ModelError> {
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        let (Ok(n), Ok(v)) = (
            reqwest::header::HeaderName::from_bytes(name.as_bytes()),
            reqwest::header::HeaderValue::from_str(value),
        ) else {
            return Err(ModelError::Config(format!(
                "the custom header '{name}' cannot be sent (not a valid header name or value)"
            )));
        };
        map.insert(n, v);
    }
    Ok(map)
}

/// An error with its causes, which is where reqwest keeps the useful part.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// When and how often a failed request is tried again.
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// The first wait; it doubles each attempt.
    pub base_delay: Duration,
    /// The longest wait between attempts.
    pub max_delay: Duration,
    /// The longest `Retry-After` honoured; a longer one is cut to this.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 6,
            base_delay: Duration::from_millis(1_000),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// Whether an HTTP status is worth another attempt.
    pub fn retryable_status(status: u16) -> bool {
        status == 429 || status == 408 || status == 409 || (500..600).contains(&status)
    }

    /// The wait before attempt `attempt + 1` (attempts count from 1).
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max_retry_after);
        }
        let exp = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)));
        let capped = exp.min(self.max_delay);
        let half = capped / 2;
        half + half.mul_f64(random_unit())
    }
}

/// `Retry-After` as seconds (the form rate limiters use). The HTTP-date form is not
/// honoured; the computed backoff applies instead.
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    parse_retry_after_at(value, std::time::SystemTime::now())
}

/// `Retry-After` as seconds or as an HTTP date (RFC 9110 §10.2.3), seen at `now`. A
/// date in the past means "retry now".
fn parse_retry_after_at(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A number in [0, 1) from the standard library's randomly seeded hasher: jitter needs
/// no cryptographic quality and this avoids a dependency.
fn random_unit() -> f64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_and_stay_within_jitter_bounds() {
        let p = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1_000),
            ..Default::default()
        };
        for (attempt, full) in [
            (1, 100),
            (2, 200),
            (3, 400),
            (4, 800),
            (5, 1_000),
            (9, 1_000),
        ] {
            let d = p.delay(attempt, None);
            let full = Duration::from_millis(full);
            assert!(d >= full / 2 && d <= full, "attempt {attempt}: {d:?}");
        }
    }

    #[test]
    fn retry_after_wins_up_to_its_cap() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(600))),
            p.max_retry_after
        );
        assert_eq!(parse_retry_after(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("soon"), None);
        // The date form: how long from now, and zero once it has passed.
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        assert_eq!(
            parse_retry_after_at("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after_at("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn which_statuses_are_retried() {
        for s in [429, 500, 502, 503, 504, 408] {
            assert!(RetryPolicy::retryable_status(s), "{s}");
        }
        for s in [400, 401, 403, 404, 422] {
            assert!(!RetryPolicy::retryable_status(s), "{s}");
        }
    }
}
