//! OAuth against a real protected server: `tests/fixtures/mcp_oauth_server.mjs`, an
//! authorization server and a Streamable HTTP MCP server built from the MCP TypeScript
//! SDK's auth parts (installed with server-everything by `scripts/setup.sh`). The test is
//! the browser: it reads the URL `toolbelt mcp auth --no-browser` prints, GETs it, and
//! follows the authorization server's redirect to toolbelt's loopback listener. Discovery,
//! dynamic registration, PKCE (checked by the SDK's token endpoint), the resource
//! indicator (checked by the fixture), the token, a call with it, a refresh after the
//! server expired it, a tampered `iss` refused, "needs login" before and after, logout.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::{Project, stderr, stdout};

/// The MCP TypeScript SDK and express, where `scripts/setup.sh` put them; `None` (the
/// test skips) outside CI when they are missing.
fn node_modules_or_skip() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.cache/node/node_modules");
    let sdk = dir.join("@modelcontextprotocol/sdk/dist/esm/server/auth/router.js");
    let node = std::process::Command::new("node").arg("--version").output();
    if node.is_ok() && sdk.exists() && dir.join("express").exists() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "node or the MCP TypeScript SDK is missing and CI must run this test; scripts/setup.sh installs it"
    );
    eprintln!("skipped: node or {} is missing", sdk.display());
    None
}

/// The fixture, running: its MCP URL and its authorization server's.
struct OAuthServer {
    _child: Child,
    mcp: String,
    /// The same server over the legacy HTTP+SSE transport.
    sse: String,
    issuer: String,
    http: reqwest::Client,
}

impl OAuthServer {
    async fn start(modules: &Path, flags: &[&str]) -> OAuthServer {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_oauth_server.mjs");
        let mut child = Command::new("node")
            .arg(script)
            .arg(modules)
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("the OAuth fixture did not start within 60 s")
            .unwrap()
            .expect("the OAuth fixture exited");
        let started: Value = serde_json::from_str(&first).unwrap();
        OAuthServer {
            _child: child,
            mcp: started["mcp"].as_str().unwrap().to_string(),
            sse: started["sse"].as_str().unwrap().to_string(),
            issuer: started["issuer"].as_str().unwrap().to_string(),
            http: toolbelt_netguard::client_builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
        }
    }

    /// What the authorization server was asked, in order.
    async fn events(&self) -> Vec<Value> {
        let url = format!("{}_events", self.issuer);
        let events: Value = self
            .http
            .get(url)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        events.as_array().unwrap().clone()
    }

    async fn expire_access_tokens(&self) {
        let url = format!("{}_expire", self.issuer);
        assert!(
            self.http
                .post(url)
                .send()
                .await
                .unwrap()
                .status()
                .is_success()
        );
    }

    fn project(&self) -> Project {
        Project::new(json!({"mcpServers": {"secure": {"httpUrl": self.mcp}}}))
    }
}

/// `toolbelt mcp auth ALIAS --no-browser`, with the test as the browser: the printed
/// URL is fetched, and the authorization server's redirect is followed to toolbelt's
/// listener after `tamper` had its way with it. Returns the authorization URL, what
/// the listener answered, and toolbelt's output.
async fn log_in(
    server: &OAuthServer,
    project: &Project,
    alias: &str,
    tamper: impl FnOnce(reqwest::Url) -> reqwest::Url,
) -> (reqwest::Url, String, std::process::Output) {
    let mut auth = project.command(&["mcp", "auth", alias, "--no-browser", "--timeout", "120"]);
    let mut child = auth.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let printed = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("no authorization URL within 60 s")
        .unwrap()
        .expect("toolbelt mcp auth printed nothing");
    let authorization = reqwest::Url::parse(&printed).unwrap();
    let answer = server.http.get(authorization.clone()).send().await.unwrap();
    assert_eq!(answer.status(), 302, "{:?}", answer.text().await);
    let location = answer.headers()["location"].to_str().unwrap().to_string();
    let redirect = tamper(reqwest::Url::parse(&location).unwrap());
    let page = server
        .http
        .get(redirect)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let rest = tokio::time::timeout(Duration::from_secs(60), async {
        let mut rest = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            rest.push(line);
        }
        rest
    })
    .await
    .expect("toolbelt mcp auth did not end within 60 s after the redirect");
    let mut output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("toolbelt mcp auth did not end within 60 s after the redirect")
        .unwrap();
    output.stdout = format!("{printed}\n{}", rest.join("\n")).into_bytes();
    (authorization, page, output)
}

fn token_files(project: &Project) -> Vec<PathBuf> {
    let dir = project.dir.path().join("home/.toolbelt/mcp-oauth");
    match std::fs::read_dir(dir) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

fn param(url: &reqwest::Url, name: &str) -> Option<String> {
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_login_call_refresh_and_logout_against_the_typescript_sdk_server() {
    let Some(modules) = node_modules_or_skip() else {
        return;
    };
    let server = OAuthServer::start(&modules, &[]).await;
    let project = server.project();

    // Before a login: "needs login", a state of its own, with what to run.
    let out = project.run(&["mcp", "list"]);
    let text = stdout(&out);
    assert!(
        text.contains("secure (http ")
            && text.contains("needs login: run `toolbelt mcp auth secure`"),
        "{text}\n{}",
        stderr(&out)
    );
    assert!(!text.contains("failed"), "{text}");
    let out = project.run(&["mcp", "list", "--json"]);
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(listed[0]["status"], "needs-login", "{listed}");

    let (authorization, page, out) = log_in(&server, &project, "secure", |url| url).await;
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(page.contains("Logged in"), "{page}");
    // PKCE and the resource indicator on the authorization request.
    assert_eq!(
        param(&authorization, "code_challenge_method").as_deref(),
        Some("S256")
    );
    assert!(param(&authorization, "code_challenge").is_some());
    assert_eq!(
        param(&authorization, "resource").as_deref(),
        Some(server.mcp.as_str())
    );
    assert!(
        param(&authorization, "redirect_uri")
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );

    // The tokens: one file, 0600 in a 0700 directory, nowhere else.
    let files = token_files(&project);
    assert_eq!(files.len(), 1, "{files:?}");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&files[0]), 0o600);
    assert_eq!(mode(files[0].parent().unwrap()), 0o700);
    let kept: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    let access = kept["credentials"]["token_response"]["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!stdout(&out).contains(&access) && !stderr(&out).contains(&access));
    let settings = std::fs::read_to_string(project.root().join(".qwen/settings.json")).unwrap();
    assert!(!settings.contains(&access));

    let events = server.events().await;
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["register", "authorize", "token"], "{events:?}");
    assert_eq!(events[1]["resource"], server.mcp.as_str());
    assert_eq!(events[2]["grant"], "authorization_code");
    assert_eq!(events[2]["resource"], server.mcp.as_str());

    // The kept token is used: the server is up and its tool answers.
    let out = project.run(&["mcp", "list"]);
    assert!(
        stdout(&out).contains("secure (http ") && stdout(&out).contains("): connected"),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stdout(&out).contains("1 tools, 0 resources (0 templates), 0 prompts, auth: oauth"),
        "{}",
        stdout(&out)
    );
    let out = project.run(&["mcp", "list", "--json"]);
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(listed[0]["auth"], "oauth", "{listed}");
    let out = project.run(&["tools", "call", "mcp__secure__whoami", "{}", "--yes"]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("hello, OAuth client"),
        "{}",
        stdout(&out)
    );

    // The server lets the access token expire: toolbelt refreshes it (with the resource
    // indicator) and the call goes through.
    server.expire_access_tokens().await;
    let out = project.run(&["tools", "call", "mcp__secure__whoami", "{}", "--yes"]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("hello, OAuth client"),
        "{}",
        stdout(&out)
    );
    let refreshes: Vec<Value> = (server.events().await.into_iter())
        .filter(|e| e["grant"] == "refresh_token")
        .collect();
    assert!(!refreshes.is_empty());
    assert!(
        refreshes
            .iter()
            .all(|e| e["resource"] == server.mcp.as_str()),
        "{refreshes:?}"
    );
    let kept: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    let refreshed = kept["credentials"]["token_response"]["access_token"]
        .as_str()
        .unwrap();
    assert_ne!(refreshed, access);

    // A static bearer header still works, and wins over OAuth: a wrong one is a failure,
    // not a login to do.
    let header = |token: &str| json!({"Authorization": format!("Bearer {token}")});
    let statics = Project::new(json!({"mcpServers": {
        "good": {"httpUrl": server.mcp, "headers": header(refreshed)},
        "bad": {"httpUrl": server.mcp, "headers": header("not-a-token-at-all")}
    }}));
    let out = statics.run(&["tools", "call", "mcp__good__whoami", "{}", "--yes"]);
    assert!(
        stdout(&out).contains("hello, OAuth client"),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let out = statics.run(&["mcp", "list"]);
    assert!(stdout(&out).contains("auth: header"), "{}", stdout(&out));
    let bad = stdout(&out)
        .lines()
        .find(|l| l.starts_with("bad ("))
        .unwrap()
        .to_string();
    assert!(
        bad.contains("failed") && !bad.contains("needs login"),
        "{bad}"
    );
    assert!(
        !stdout(&out).contains("not-a-token-at-all"),
        "{}",
        stdout(&out)
    );

    // Logout forgets the tokens: a login is needed again.
    let out = project.run(&["mcp", "logout", "secure"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(token_files(&project).is_empty());
    let out = project.run(&["mcp", "list"]);
    assert!(stdout(&out).contains("needs login"), "{}", stdout(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_whose_iss_is_not_the_authorization_servers_is_refused() {
    let Some(modules) = node_modules_or_skip() else {
        return;
    };
    let server = OAuthServer::start(&modules, &[]).await;
    let project = server.project();
    let (_, page, out) = log_in(&server, &project, "secure", |mut url| {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(k, v)| {
                let v = if k == "iss" {
                    "http://127.0.0.1:9/".to_string()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        url.query_pairs_mut().clear().extend_pairs(pairs);
        url
    })
    .await;
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("issuer mismatch"), "{}", stderr(&out));
    assert!(page.contains("The login failed"), "{page}");
    assert!(
        token_files(&project).is_empty(),
        "{:?}",
        token_files(&project)
    );
    // The code was never exchanged.
    let events = server.events().await;
    assert!(!events.iter().any(|e| e["type"] == "token"), "{events:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_page_on_cleartext_http_elsewhere_is_refused_before_anything_is_sent() {
    let Some(modules) = node_modules_or_skip() else {
        return;
    };
    let server = OAuthServer::start(&modules, &["--cleartext-authorize"]).await;
    let project = server.project();
    let out = project.run(&["mcp", "auth", "secure", "--no-browser", "--timeout", "30"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stdout(&out).is_empty(),
        "a URL was printed: {}",
        stdout(&out)
    );
    let error = stderr(&out);
    assert!(
        error.contains("refused") && error.contains("neither https nor on this machine"),
        "{error}"
    );
    assert!(
        error.contains("http://login.example.invalid/authorize"),
        "{error}"
    );
    // No client was registered, nothing was asked of the authorization server.
    assert!(server.events().await.is_empty());
    assert!(token_files(&project).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_id_from_the_settings_is_used_instead_of_registering_one() {
    let Some(modules) = node_modules_or_skip() else {
        return;
    };
    let server = OAuthServer::start(&modules, &["--client-id", "toolbelt-test-client"]).await;
    let project = Project::new(json!({"mcpServers": {"secure": {
        "httpUrl": server.mcp,
        "oauth": {"clientId": "toolbelt-test-client", "scopes": ["mcp:tools"]}
    }}}));
    let (authorization, page, out) = log_in(&server, &project, "secure", |url| url).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(page.contains("Logged in"), "{page}");
    assert_eq!(
        param(&authorization, "client_id").as_deref(),
        Some("toolbelt-test-client")
    );
    assert_eq!(param(&authorization, "scope").as_deref(), Some("mcp:tools"));
    let kinds: Vec<String> = (server.events().await.iter())
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["authorize", "token"], "no registration expected");
    let kept: Value =
        serde_json::from_slice(&std::fs::read(&token_files(&project)[0]).unwrap()).unwrap();
    assert_eq!(kept["credentials"]["client_id"], "toolbelt-test-client");
    let out = project.run(&["tools", "call", "mcp__secure__whoami", "{}", "--yes"]);
    assert!(
        stdout(&out).contains("hello, OAuth client toolbelt-test-client"),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_sse_server_logs_in_and_refreshes_the_same_way() {
    let Some(modules) = node_modules_or_skip() else {
        return;
    };
    let server = OAuthServer::start(&modules, &[]).await;
    let project = Project::new(json!({"mcpServers": {"legacy": {"url": server.sse}}}));
    let out = project.run(&["mcp", "list"]);
    assert!(
        stdout(&out).contains("legacy (sse ")
            && stdout(&out).contains("needs login: run `toolbelt mcp auth legacy`"),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let (authorization, page, out) = log_in(&server, &project, "legacy", |url| url).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(page.contains("Logged in"), "{page}");
    assert_eq!(
        param(&authorization, "resource").as_deref(),
        Some(server.sse.as_str())
    );
    let call = || project.run(&["tools", "call", "mcp__legacy__whoami", "{}", "--yes"]);
    let out = call();
    assert!(
        stdout(&out).contains("hello, OAuth client"),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    // Refused by the server once expired: refreshed, and the stream opened again.
    server.expire_access_tokens().await;
    let out = call();
    assert!(
        stdout(&out).contains("hello, OAuth client"),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let refreshes: Vec<Value> = (server.events().await.into_iter())
        .filter(|e| e["grant"] == "refresh_token")
        .collect();
    assert_eq!(refreshes.len(), 1, "{refreshes:?}");
    assert_eq!(refreshes[0]["resource"], server.sse.as_str());
}
