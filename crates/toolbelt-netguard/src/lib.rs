//! The private-address guard of toolbelt's outgoing HTTP: `web_fetch` and `http` hooks.
//!
//! # Brief overview
//!
//! A request may only reach public addresses, plus what its user opened: hosts and
//! networks in `tools.webFetch.allowHosts` for `web_fetch`, loopback for `http` hooks (as
//! Qwen Code allows). What is refused is one table ([`refused_kind`]: loopback, private,
//! shared, link-local and cloud metadata addresses, in every IPv4-in-IPv6 spelling); who
//! is refused and how to open a destination is the caller's [`Purpose`]. Three places
//! enforce it, so no path around it exists:
//!
//! - **Literal addresses** in the URL and in every redirect are checked before a
//!   connection (the `url` crate has already turned `2130706433`, `0x7f.1` and
//!   `0177.0.0.1` into `127.0.0.1`, and `[::ffff:127.0.0.1]` is checked as the IPv4
//!   address it carries).
//! - **Host names** are resolved by [`GuardedResolver`], the HTTP client's only resolver:
//!   it refuses the name when any of its addresses is refused, and the client connects to
//!   exactly the addresses it returned. There is no second lookup, so a name that answers
//!   a public address to the check and a private one to the connection (DNS rebinding)
//!   cannot slip through.
//! - The client has **no proxy** (a proxy would resolve names itself); each caller
//!   builds its client with [`GuardedResolver`] and checks every URL it goes to (the
//!   first, and every redirect it follows) with [`check_url`].

//!
//! It is also where every HTTP client of toolbelt starts ([`client_builder`]): TLS is
//! rustls with ring as its crypto provider, which that function installs.

#![warn(missing_docs, unreachable_pub)]

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;

use ipnet::IpNet;

/// A boxed future (the same shape as `toolbelt_core::BoxFuture`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Resolves a host name to addresses. The default is the system's resolver; tests inject
/// their own.
pub trait HostResolver: Send + Sync {
    /// The addresses of `host`.
    fn lookup(&self, host: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>>;
}

/// The system's resolver (`getaddrinfo` through tokio).
pub struct SystemResolver;

impl HostResolver for SystemResolver {
    fn lookup(&self, host: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        let host = host.to_string();
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// Who the guard refuses for, in its messages.
#[derive(Debug, Clone, Copy)]
pub struct Purpose {
    /// The verb before a refused host: `fetch from` gives "refused to fetch from
    /// localhost: ...".
    pub verb_host: &'static str,
    /// The verb before a refused URL: `fetch` gives "refused to fetch file:///x: ...".
    pub verb_url: &'static str,
    /// What the caller reaches and how to open a destination, after "it is a loopback
    /// address (127.0.0.1), and ". `{host}` is replaced with the refused host.
    pub rule: &'static str,
}

/// What the guard lets through: public addresses, plus what the settings open.
#[derive(Debug, Clone)]
pub struct AddressPolicy {
    /// The guard is off (`tools.webFetch.allowPrivateAddresses`).
    pub off: bool,
    /// Host names opened whatever they resolve to (`docs.internal`, `*.corp.example`).
    names: Vec<String>,
    /// Addresses and networks opened.
    nets: Vec<IpNet>,
    /// Who refuses, for the messages.
    purpose: Purpose,
}

/// A refused destination: what was refused and how to allow it.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "refused to {verb} {host}: it is {what} ({address}), and {rule}",
    verb = purpose.verb_host,
    rule = purpose.rule.replace("{host}", host)
)]
pub struct Refused {
    /// The host as the URL or the resolver named it.
    pub host: String,
    /// The address refused.
    pub address: IpAddr,
    /// What kind of address it is (see [`refused_kind`]).
    pub what: &'static str,
    /// Who refused.
    purpose: Purpose,
}

impl AddressPolicy {
    /// The policy of `allow_hosts` entries (such as `tools.webFetch.allowHosts`): CIDRs,
    /// addresses (`::1`, `[::1]`) and host names (`*.x.org` covers subdomains); `off`
    /// lets everything through. Entries that are none of these are returned as warnings.
    pub fn new(
        allow_hosts: &[String],
        off: bool,
        purpose: Purpose,
    ) -> (AddressPolicy, Vec<String>) {
        let mut policy = AddressPolicy {
            off,
            names: Vec::new(),
            nets: Vec::new(),
            purpose,
        };
        let mut warnings = Vec::new();
        for entry in allow_hosts {
            let entry = entry.trim();
            let bare = entry.trim_start_matches('[').trim_end_matches(']');
            if let Ok(net) = bare.parse::<IpNet>() {
                policy.nets.push(net);
            } else if let Ok(ip) = bare.parse::<IpAddr>() {
                policy.nets.push(IpNet::from(ip));
            } else if is_host_name(entry) {
                policy.names.push(entry.to_ascii_lowercase());
            } else {
                warnings.push(format!(
                    "\"{entry}\" is neither a host name, an address nor a CIDR; ignored"
                ));
            }
        }
        (policy, warnings)
    }

    /// Whether the settings open this host name whatever it resolves to.
    pub fn allows_name(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.names.iter().any(|name| match name.strip_prefix("*.") {
            Some(domain) => host.len() > domain.len() && host.ends_with(&format!(".{domain}")),
            None => *name == host,
        })
    }

    /// `Err` when `address` may not be reached for `host`.
    pub fn check(&self, host: &str, address: IpAddr) -> Result<(), Refused> {
        if self.off || self.nets.iter().any(|net| net.contains(&address)) {
            return Ok(());
        }
        match refused_kind(address) {
            None => Ok(()),
            Some(what) => Err(Refused {
                host: host.to_string(),
                address,
                what,
                purpose: self.purpose,
            }),
        }
    }
}

fn is_host_name(entry: &str) -> bool {
    let name = entry.strip_prefix("*.").unwrap_or(entry);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// What kind of non-public address this is, or `None` for a public one.
pub fn refused_kind(address: IpAddr) -> Option<&'static str> {
    match address {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    let kind = match (a, b) {
        _ if ip == Ipv4Addr::new(169, 254, 169, 254) => "a cloud metadata address",
        (0, _) => "an unspecified (\"this network\") address",
        (127, _) => "a loopback address",
        (10, _) | (192, 168) => "a private address",
        (172, 16..=31) => "a private address",
        (100, 64..=127) => "a shared (CGNAT) address",
        (169, 254) => "a link-local address",
        (192, 0) if c == 0 => "an IETF protocol address",
        (198, 18 | 19) => "a benchmarking address",
        (224..=239, _) => "a multicast address",
        (240..=255, _) => "a reserved or broadcast address",
        _ => return None,
    };
    Some(kind)
}

fn refused_v6(ip: Ipv6Addr) -> Option<&'static str> {
    // Addresses that carry an IPv4 address are judged by it.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return refused_v4(v4);
    }
    let seg = ip.segments();
    if seg[..6] == [0, 0, 0, 0, 0, 0] && !ip.is_loopback() && !ip.is_unspecified() {
        // IPv4-compatible (::a.b.c.d), deprecated but still routed by some stacks.
        return refused_v4(Ipv4Addr::from(((seg[6] as u32) << 16) | seg[7] as u32));
    }
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // NAT64: the gateway would connect to the IPv4 address inside.
        return refused_v4(Ipv4Addr::from(((seg[6] as u32) << 16) | seg[7] as u32));
    }
    if seg[0] == 0x2002 {
        // 6to4 carries the IPv4 address in the next 32 bits.
        return refused_v4(Ipv4Addr::from(((seg[1] as u32) << 16) | seg[2] as u32));
    }
    let kind = if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        "a cloud metadata address"
    } else if ip.is_unspecified() {
        "an unspecified address"
    } else if ip.is_loopback() {
        "a loopback address"
    } else if seg[0] & 0xfe00 == 0xfc00 {
        "a unique-local address"
    } else if seg[0] & 0xffc0 == 0xfe80 || seg[0] & 0xffc0 == 0xfec0 {
        "a link-local address"
    } else if seg[0] & 0xff00 == 0xff00 {
        "a multicast address"
    } else if seg[0] == 0x2001 && seg[1] == 0x0db8 {
        "a documentation address"
    } else {
        return None;
    };
    Some(kind)
}

/// The HTTP client's resolver: resolves through `inner`, then refuses a name with any
/// refused address. The client connects to exactly the addresses returned here.
pub struct GuardedResolver {
    /// The resolver asked.
    pub inner: Arc<dyn HostResolver>,
    /// What its answers are judged by.
    pub policy: Arc<AddressPolicy>,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        let lookup = self.inner.lookup(&host);
        let policy = self.policy.clone();
        Box::pin(async move {
            let addresses = lookup.await?;
            if addresses.is_empty() {
                return Err(format!("{host} has no address").into());
            }
            if !policy.allows_name(&host) {
                for address in &addresses {
                    policy.check(&host, *address)?;
                }
            }
            let addrs: reqwest::dns::Addrs = Box::new(
                addresses
                    .into_iter()
                    .map(|ip| SocketAddr::new(ip, 0))
                    .collect::<Vec<_>>()
                    .into_iter(),
            );
            Ok(addrs)
        })
    }
}

/// Why [`check_url`] refused a URL.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UrlRefused {
    /// A scheme other than http and https.
    #[error("refused to {verb} {url}: only http and https URLs are allowed, not {scheme}:")]
    Scheme {
        /// What was refused ("fetch", "send a hook to").
        verb: &'static str,
        /// The URL.
        url: String,
        /// Its scheme.
        scheme: String,
    },
    /// The URL names no host.
    #[error("refused to {verb} {url}: the URL has no host")]
    NoHost {
        /// What was refused.
        verb: &'static str,
        /// The URL.
        url: String,
    },
    /// The host is an address the policy refuses (loopback, private, metadata).
    #[error(transparent)]
    Address(#[from] Refused),
}

/// The guard's verdict on a URL before any connection: its scheme, and its host when the
/// host is a literal address (names are judged by [`GuardedResolver`]).
pub fn check_url(url: &reqwest::Url, policy: &AddressPolicy) -> Result<(), UrlRefused> {
    let verb = policy.purpose.verb_url;
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(UrlRefused::Scheme {
                verb,
                url: url.to_string(),
                scheme: other.to_owned(),
            });
        }
    }
    let address = match url.host() {
        Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
        Some(url::Host::Domain(name)) => {
            // `localhost` and its subdomains never leave the machine, whatever a
            // resolver answers.
            let lower = name.trim_end_matches('.').to_ascii_lowercase();
            if (lower == "localhost" || lower.ends_with(".localhost"))
                && !policy.allows_name(&lower)
            {
                return Ok(policy.check(&lower, IpAddr::V4(Ipv4Addr::LOCALHOST))?);
            }
            return Ok(());
        }
        None => {
            return Err(UrlRefused::NoHost {
                verb,
                url: url.to_string(),
            });
        }
    };
    let host = url.host_str().unwrap_or_default();
    Ok(policy.check(host, address)?)
}

/// A `reqwest` client builder whose TLS works: every HTTP client toolbelt makes starts
/// here (clippy's `disallowed-methods` refuses `reqwest::Client::new` and `builder`
/// elsewhere). reqwest is built without a default crypto provider, so this installs
/// ring's as the process default, once; a program embedding toolbelt that installed its
/// own provider first keeps it.
pub fn client_builder() -> reqwest::ClientBuilder {
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    PROVIDER.call_once(|| {
        // An error means a provider is already installed: that one is used.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    #[allow(clippy::disallowed_methods)]
    reqwest::Client::builder()
}

#[cfg(test)]
mod tests;
