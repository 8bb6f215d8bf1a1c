//! http hooks against a real server on 127.0.0.1, and the guard around them.

use std::net::IpAddr;
use std::sync::Arc;

use serde_json::json;
use toolbelt_engine::{hooks::HookDecision, hooks::HookEvent, hooks::HookRequest};
use toolbelt_hooks::{HookConfig, HookEngine};
use toolbelt_netguard::{BoxFuture, HostResolver};

use crate::support::{Fixture, Server, run, shell_call};

fn http_hook(url: &str) -> serde_json::Value {
    json!({"PreToolUse": [{"matcher": "*", "hooks": [{"type": "http", "url": url,
        "headers": {"Authorization": "Bearer ${TOOLBELT_HOME}", "X-Other": "[$HOME]"},
        "allowedEnvVars": ["TOOLBELT_HOME"], "timeout": 10}]}]})
}

#[tokio::test]
async fn a_loopback_hook_gets_the_input_and_only_the_allowed_variables() {
    // Cargo gives every test process TOOLBELT_HOME and HOME (.cargo/config.toml).
    let token = std::env::var("TOOLBELT_HOME").unwrap();
    assert!(!std::env::var("HOME").unwrap().is_empty());
    let answer = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "deny", "permissionDecisionReason": "the server says no"}});
    let server = Server::start(200, "application/json", answer.to_string()).await;
    let f = Fixture::new();
    f.user_hooks(http_hook(&server.url("/hooks/pre")));
    let outcome = run(&f.engine(), shell_call("rm -rf /")).await;
    assert_eq!(outcome.decision, Some(HookDecision::Deny));
    assert_eq!(outcome.reason.as_deref(), Some("the server says no"));
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert!(
        seen[0].head.starts_with("POST /hooks/pre HTTP/1.1"),
        "{}",
        seen[0].head
    );
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {token}"))
    );
    assert_eq!(
        seen[0].header("x-other").as_deref(),
        Some("[]"),
        "not allowed: empty"
    );
    assert_eq!(
        seen[0].header("content-type").as_deref(),
        Some("application/json")
    );
    assert_eq!(seen[0].body["tool_input"], json!({"command": "rm -rf /"}));
    assert_eq!(seen[0].body["hook_event_name"], "PreToolUse");
}

#[tokio::test]
async fn other_bodies_are_messages_and_errors_do_not_block() {
    let f = Fixture::new();
    let text = Server::start(200, "text/plain", "audit logged".into()).await;
    f.user_hooks(json!({"SessionStart": [{"hooks": [{"type": "http", "url": text.url("/")}]}]}));
    let mut start = HookRequest::new(HookEvent::SessionStart);
    start.target = Some("startup".into());
    let outcome = run(&f.engine(), start).await;
    assert_eq!(outcome.system_messages, vec!["audit logged"]);
    assert!(outcome.additional_context.is_empty());

    let failing = Server::start(503, "application/json", "{\"decision\":\"block\"}".into()).await;
    f.user_hooks(http_hook(&failing.url("/")));
    let outcome = run(&f.engine(), shell_call("ls")).await;
    assert_eq!(outcome.decision, None);
    assert!(
        outcome.failures[0].message.starts_with("HTTP 503"),
        "{:?}",
        outcome.failures
    );

    let redirect = Server::start(302, "text/plain", String::new()).await;
    f.user_hooks(http_hook(&redirect.url("/")));
    let outcome = run(&f.engine(), shell_call("ls")).await;
    assert!(
        outcome.failures[0].message.starts_with("HTTP 302"),
        "never followed"
    );

    let broken = Server::start(200, "application/json", "{\"hookSpecificOutput\":".into()).await;
    f.user_hooks(http_hook(&broken.url("/")));
    let outcome = run(&f.engine(), shell_call("ls")).await;
    assert_eq!(
        outcome.decision,
        Some(HookDecision::Deny),
        "unreadable: refused"
    );
}

#[tokio::test]
async fn private_addresses_are_refused_before_any_connection() {
    let f = Fixture::new();
    for url in [
        "http://10.0.0.1:9/h",
        "http://169.254.169.254/latest",
        "http://[::ffff:192.168.0.1]/",
    ] {
        f.user_hooks(http_hook(url));
        let outcome = run(&f.engine(), shell_call("ls")).await;
        assert_eq!(outcome.decision, None);
        let message = &outcome.failures[0].message;
        assert!(
            message.starts_with("refused to send the hook to"),
            "{url}: {message}"
        );
    }
}

/// Answers every name with one address, as a hostile DNS server would.
struct FixedResolver(IpAddr);

impl HostResolver for FixedResolver {
    fn lookup(&self, _host: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        let ip = self.0;
        Box::pin(async move { Ok(vec![ip]) })
    }
}

#[tokio::test]
async fn a_name_is_judged_by_what_it_resolves_to() {
    let server = Server::start(
        200,
        "application/json",
        "{\"systemMessage\": \"hi\"}".into(),
    )
    .await;
    let f = Fixture::new();
    f.user_hooks(http_hook(&format!("http://hooks.example:{}/", server.port)));
    let settings = f.settings();
    let engine_with = |ip: &str| {
        HookEngine::with_resolver(
            HookConfig::from_settings(&settings).unwrap(),
            f.session(),
            None,
            Some(Arc::new(FixedResolver(ip.parse().unwrap()))),
        )
    };
    let outcome = run(&engine_with("10.1.2.3"), shell_call("ls")).await;
    let message = &outcome.failures[0].message;
    assert!(
        message.contains("refused to send the hook to hooks.example"),
        "{message}"
    );
    assert!(message.contains("10.1.2.3"), "{message}");
    let outcome = run(&engine_with("127.0.0.1"), shell_call("ls")).await;
    assert_eq!(outcome.system_messages, vec!["hi"], "{outcome:?}");
}

#[tokio::test]
async fn allowed_http_hook_urls_limit_where_hooks_are_sent() {
    let server = Server::start(200, "application/json", "{}".into()).await;
    let f = Fixture::new();
    f.write(
        &f.user_file(),
        &json!({"security": {"allowedHttpHookUrls": ["https://audit.example/*"]},
                "hooks": http_hook(&server.url("/x"))}),
    );
    let outcome = run(&f.engine(), shell_call("ls")).await;
    let message = &outcome.failures[0].message;
    assert!(
        message.contains("is not in security.allowedHttpHookUrls"),
        "{message}"
    );
    assert!(server.requests().is_empty());
    f.write(
        &f.user_file(),
        &json!({"security": {"allowedHttpHookUrls": [format!("http://127.0.0.1:{}/*", server.port)]},
                "hooks": http_hook(&server.url("/x"))}),
    );
    let outcome = run(&f.engine(), shell_call("ls")).await;
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    assert_eq!(server.requests().len(), 1);
}
