use std::net::IpAddr;

use super::*;

/// web_fetch's words, as `toolbelt-tools` gives them.
const FETCH: Purpose = Purpose {
    verb_host: "fetch from",
    verb_url: "fetch",
    rule: "web_fetch only reaches public addresses. To allow it, add \"{host}\" to tools.webFetch.allowHosts.",
};

fn policy() -> AddressPolicy {
    AddressPolicy::new(&[], false, FETCH).0
}

fn refused(addr: &str) -> bool {
    let ip: IpAddr = addr.parse().unwrap();
    refused_kind(ip).is_some()
}

#[test]
fn non_public_addresses_are_refused() {
    for addr in [
        "0.0.0.0",
        "0.1.2.3",
        "127.0.0.1",
        "127.255.0.9",
        "10.0.0.1",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "100.64.0.1",
        "100.127.255.254",
        "169.254.0.1",
        "169.254.169.254",
        "224.0.0.1",
        "239.255.255.250",
        "255.255.255.255",
        "240.0.0.1",
        "198.18.0.1",
        "::",
        "::1",
        "fc00::1",
        "fd00:ec2::254",
        "fe80::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        "::127.0.0.1",
        "64:ff9b::7f00:1",
        "2002:7f00:1::",
        "2002:a9fe:a9fe::1",
    ] {
        assert!(refused(addr), "{addr} must be refused");
    }
}

#[test]
fn public_addresses_pass() {
    for addr in [
        "1.1.1.1",
        "8.8.8.8",
        "93.184.216.34",
        "172.15.255.255",
        "172.32.0.1",
        "100.63.255.255",
        "100.128.0.1",
        "2606:4700::1111",
        "2a00:1450:4001::200e",
        "::ffff:8.8.8.8",
        "2002:0808:0808::1",
    ] {
        assert!(!refused(addr), "{addr} must pass");
    }
}

#[test]
fn metadata_addresses_are_named_as_such() {
    for addr in ["169.254.169.254", "fd00:ec2::254", "::ffff:169.254.169.254"] {
        let ip: IpAddr = addr.parse().unwrap();
        assert_eq!(refused_kind(ip), Some("a cloud metadata address"), "{addr}");
    }
}

fn check(url: &str, policy: &AddressPolicy) -> Result<(), String> {
    check_url(&reqwest::Url::parse(url).unwrap(), policy).map_err(|e| e.to_string())
}

#[test]
fn a_refused_url_says_its_cause() {
    let policy = policy();
    let url = |u: &str| reqwest::Url::parse(u).unwrap();
    assert!(matches!(
        check_url(&url("ftp://example.com/x"), &policy),
        Err(UrlRefused::Scheme { ref scheme, .. }) if scheme == "ftp"
    ));
    assert!(matches!(
        check_url(&url("http://127.0.0.1/"), &policy),
        Err(UrlRefused::Address(Refused {
            what: "a loopback address",
            ..
        }))
    ));
    assert!(check_url(&url("https://example.com/"), &policy).is_ok());
}

#[test]
fn numeric_spellings_of_loopback_are_refused_in_urls() {
    let policy = policy();
    for url in [
        "http://127.0.0.1/",
        "http://localhost:8080/x",
        "http://LOCALHOST./",
        "http://api.localhost/",
        "http://[::1]/",
        "http://0.0.0.0/",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://0177.0.0.1/",
        "http://0x7f000001/",
        "http://127.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/",
    ] {
        let err = check(url, &policy).expect_err(url);
        assert!(err.contains("refused to fetch"), "{url}: {err}");
        assert!(err.contains("tools.webFetch.allowHosts"), "{url}: {err}");
    }
}

#[test]
fn only_http_and_https_are_fetched() {
    let policy = policy();
    for url in [
        "file:///etc/passwd",
        "ftp://example.com/",
        "gopher://example.com/",
    ] {
        let err = check(url, &policy).expect_err(url);
        assert!(err.contains("only http and https"), "{url}: {err}");
    }
    assert!(check("https://example.com/", &policy).is_ok());
    assert!(check("http://93.184.216.34/", &policy).is_ok());
}

#[test]
fn allow_hosts_open_addresses_networks_and_names() {
    let (policy, warnings) = AddressPolicy::new(
        &[
            "127.0.0.1".to_string(),
            "10.1.0.0/16".to_string(),
            "[::1]".to_string(),
            "docs.internal".to_string(),
            "*.corp.example".to_string(),
            "not a host!".to_string(),
        ],
        false,
        FETCH,
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("not a host!"));
    assert!(check("http://127.0.0.1:9000/", &policy).is_ok());
    assert!(check("http://[::1]/", &policy).is_ok());
    assert!(check("http://10.1.2.3/", &policy).is_ok());
    assert!(check("http://10.2.0.1/", &policy).is_err());
    assert!(check("http://127.0.0.2/", &policy).is_err());
    assert!(policy.allows_name("docs.internal"));
    assert!(policy.allows_name("DOCS.internal."));
    assert!(policy.allows_name("wiki.corp.example"));
    assert!(!policy.allows_name("corp.example"));
    assert!(!policy.allows_name("evilcorp.example"));
    assert!(!policy.allows_name("docs.internal.evil.com"));
}

#[test]
fn the_guard_can_be_switched_off() {
    let (policy, _) = AddressPolicy::new(&[], true, FETCH);
    assert!(check("http://127.0.0.1/", &policy).is_ok());
    assert!(check("http://169.254.169.254/", &policy).is_ok());
}

#[test]
fn loopback_can_be_opened_alone_and_messages_speak_for_the_caller() {
    const HOOK: Purpose = Purpose {
        verb_host: "send the hook to",
        verb_url: "send the hook to",
        rule: "http hooks reach only public and loopback addresses",
    };
    let loopback = ["127.0.0.0/8".to_string(), "::1".to_string()];
    let (policy, warnings) = AddressPolicy::new(&loopback, false, HOOK);
    assert!(warnings.is_empty());
    for url in [
        "http://127.0.0.1:8080/h",
        "http://localhost/",
        "http://[::1]/",
    ] {
        assert!(check(url, &policy).is_ok(), "{url}");
    }
    for url in [
        "http://10.0.0.1/",
        "http://192.168.1.1/",
        "http://169.254.169.254/",
    ] {
        let err = check(url, &policy).expect_err(url);
        assert!(err.starts_with("refused to send the hook to "), "{err}");
        assert!(err.contains("only public and loopback"), "{err}");
    }
    let err = check("ftp://example.com/", &policy).unwrap_err();
    assert!(
        err.starts_with("refused to send the hook to ftp://"),
        "{err}"
    );
}

/// A client from `client_builder` speaks TLS (reqwest has no crypto provider of its own
/// here; without the one it installs, building the client panics): it sends a TLS
/// ClientHello to a loopback listener, which closes, and the request fails as an error.
#[tokio::test]
async fn a_client_from_the_builder_starts_a_tls_handshake() {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut first = [0u8; 3];
        socket.read_exact(&mut first).await.unwrap();
        first
    });
    let client = client_builder().build().expect("a client");
    let answer = client
        .get(format!("https://127.0.0.1:{port}/"))
        .send()
        .await;
    assert!(answer.is_err(), "the listener never answers TLS");
    // A TLS record: handshake (22), protocol version 3.x.
    let first = server.await.unwrap();
    assert_eq!(first[0], 22, "a TLS handshake record: {first:?}");
    assert_eq!(first[1], 3);
}
