//! Streamable HTTP: rmcp's client, the `Origin` and token checks, and stateless
//! instances answering one client in turn.

use std::process::Stdio;

use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::*;

/// A server on a free loopback port, and its endpoint URL (from its stderr).
pub(crate) async fn start_http(
    ws: &Ws,
    args: &[&str],
    env: &[(&str, &str)],
) -> (tokio::process::Child, String) {
    let mut all = vec!["--http", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let mut cmd = ws.command(&all);
    cmd.envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = bounded(async {
        loop {
            let line = lines.next_line().await.unwrap().expect("the server exited");
            if let Some(url) = line
                .split(" at ")
                .nth(1)
                .filter(|_| line.contains("Streamable HTTP"))
            {
                return url.trim().to_string();
            }
        }
    })
    .await;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

pub(crate) async fn post(
    url: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> (reqwest::StatusCode, reqwest::header::HeaderMap, String) {
    let mut request = toolbelt_netguard::client_builder()
        .build()
        .expect("an HTTP client")
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .header("MCP-Protocol-Version", "2025-06-18")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = bounded(request.send()).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    (status, headers, bounded(response.text()).await.unwrap())
}

/// The JSON-RPC message of a response body: plain JSON or the `data:` of an SSE event.
pub(crate) fn message(body: &str) -> Value {
    if let Ok(value) = serde_json::from_str(body) {
        return value;
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC message in {body}"))
}

pub(crate) fn initialize(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
}

#[tokio::test]
async fn the_rmcp_client_lists_reads_and_confirms_over_http() {
    let ws = Ws::new();
    let file = ws.ws().join("a.txt");
    ws.write(&file, "hello\n");
    let (_server, url) = start_http(&ws, &[], &[]).await;
    let client = TestClient::new(Answer::Accept { always: false });
    let transport = http_transport(url.as_str());
    let service = bounded(client.clone().serve(transport)).await.unwrap();
    let tools = bounded(service.list_all_tools()).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "run_shell_command"));
    let read = call(&service, "read_file", json!({"absolute_path": file})).await;
    assert_eq!(text(&read), "hello");
    let edit = call(
        &service,
        "edit",
        json!({"file_path": file, "old_string": "hello", "new_string": "bye"}),
    )
    .await;
    assert!(!is_error(&edit), "{}", text(&edit));
    assert_eq!(client.questions().len(), 1);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "bye\n");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn a_foreign_origin_gets_403_and_a_missing_or_wrong_token_401() {
    let ws = Ws::new();
    let (_server, url) = start_http(
        &ws,
        &["--auth-token-env", "TB_TOKEN"],
        &[("TB_TOKEN", "s3cret")],
    )
    .await;
    let good = ("Authorization", "Bearer s3cret");

    let (status, _, _) = post(
        &url,
        &initialize(1),
        &[good, ("Origin", "http://evil.example")],
    )
    .await;
    assert_eq!(status, 403);
    let (status, _, _) = post(
        &url,
        &initialize(1),
        &[good, ("Origin", "http://127.0.0.1.evil.example:80")],
    )
    .await;
    assert_eq!(status, 403);
    // DNS rebinding: a page of evil.example resolved to 127.0.0.1 sends its own Host.
    let (status, _, _) = post(&url, &initialize(1), &[good, ("Host", "evil.example")]).await;
    assert_eq!(status, 403);
    let (status, headers, _) = post(&url, &initialize(1), &[]).await;
    assert_eq!(status, 401);
    assert_eq!(headers["www-authenticate"], "Bearer");
    let (status, _, _) = post(&url, &initialize(1), &[("Authorization", "Bearer s3cre")]).await;
    assert_eq!(status, 401);

    let (status, headers, body) = post(
        &url,
        &initialize(1),
        &[good, ("Origin", "http://localhost:6274")],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(message(&body)["result"]["serverInfo"]["name"], "toolbelt");
    let session = headers["mcp-session-id"].to_str().unwrap();
    assert!(session.len() >= 32, "a long random session id: {session}");

    // A body above the limit (4 MiB) is refused before it is read whole.
    let huge = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "read_file", "arguments": {"absolute_path": "x".repeat(5 << 20)}}});
    let (status, _, _) = post(&url, &huge, &[good, ("Mcp-Session-Id", session)]).await;
    assert_eq!(status, 413);
}

#[tokio::test]
async fn a_public_address_without_a_token_is_refused() {
    let ws = Ws::new();
    let out = bounded(ws.command(&["--http", "0.0.0.0:0"]).output())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--auth-token-env"), "{stderr}");
}

#[tokio::test]
async fn stateless_instances_answer_one_client_in_turn() {
    let ws = Ws::new();
    let file = ws.ws().join("a.txt");
    ws.write(&file, "served by either\n");
    let (_a, url_a) = start_http(&ws, &["--stateless"], &[]).await;
    let (_b, url_b) = start_http(&ws, &["--stateless"], &[]).await;
    assert_ne!(url_a, url_b);

    let (status, headers, body) = post(&url_a, &initialize(1), &[]).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        headers.get("mcp-session-id").is_none(),
        "stateless: no session"
    );
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(&url_b, &initialized, &[]).await;
    assert!(status.is_success(), "{status}");

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (status, _, body) = post(&url_a, &list, &[]).await;
    assert_eq!(status, 200, "{body}");
    assert!(message(&body)["result"]["tools"].as_array().unwrap().len() > 5);

    let read = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "read_file", "arguments": {"absolute_path": file}}});
    let (status, _, body) = post(&url_b, &read, &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        message(&body)["result"]["content"][0]["text"],
        "served by either"
    );

    let edit = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "edit", "arguments": {"file_path": file, "old_string": "either", "new_string": "one"}}});
    let (_, _, body) = post(&url_a, &edit, &[]).await;
    let answer = message(&body);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(answer.to_string().contains("stateless"), "{answer}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "served by either\n"
    );
}

/// A person who takes long to answer holds back no other client's edits; what the
/// other client wrote meanwhile is not lost when the first edit is approved.
#[tokio::test]
async fn a_question_left_open_does_not_hold_back_another_clients_edits() {
    let ws = Ws::new();
    let file = ws.ws().join("shared.txt");
    ws.write(&file, "one\ntwo\n");
    let (_server, url) = start_http(&ws, &[], &[]).await;
    let person = std::sync::Arc::new(SlowPerson::default());
    let slow = TestClient::new(Answer::Accept { always: false }).slow(person.clone());
    let slow = bounded(slow.serve(http_transport(url.as_str())))
        .await
        .unwrap();
    let quick = TestClient::new(Answer::Accept { always: false });
    let quick = bounded(quick.serve(http_transport(url.as_str())))
        .await
        .unwrap();

    let first = {
        let file = file.clone();
        tokio::spawn(async move {
            let args = json!({"file_path": file, "old_string": "one", "new_string": "ONE"});
            let done = call(&slow, "edit", args).await;
            (slow, done)
        })
    };
    bounded(person.asked.acquire()).await.unwrap().forget();
    // The first edit's question is open; the other client edits the same file.
    let second = call(
        &quick,
        "edit",
        json!({"file_path": file, "old_string": "two", "new_string": "TWO"}),
    )
    .await;
    assert!(!is_error(&second), "{}", text(&second));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\nTWO\n");

    person.answer.add_permits(1);
    let (slow, first) = bounded(first).await.unwrap();
    assert!(is_error(&first), "{}", text(&first));
    assert!(
        text(&first).contains("changed after the change was proposed"),
        "{}",
        text(&first)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\nTWO\n");
    slow.cancel().await.unwrap();
    quick.cancel().await.unwrap();
}

/// The PID in a background command's answer (running `needle`), as this test sees it.
fn job_pid(result: &rmcp::model::CallToolResult, needle: &str) -> i32 {
    let pid = text(result)
        .lines()
        .find_map(|l| l.strip_prefix("PID: "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no PID in {}", text(result)));
    i32::try_from(host_pid(pid, needle)).unwrap()
}

/// Whether process `pid` (its pidfd) ends within `seconds`.
fn ends_within(pid: &std::os::fd::OwnedFd, seconds: i64) -> bool {
    let mut fds = [rustix::event::PollFd::new(
        pid,
        rustix::event::PollFlags::IN,
    )];
    let limit = rustix::event::Timespec {
        tv_sec: seconds,
        tv_nsec: 0,
    };
    rustix::event::poll(&mut fds, Some(&limit)).unwrap() == 1
}

/// Waits (bounded, off the runtime) until process `pid` has ended.
async fn ended(pid: std::os::fd::OwnedFd) {
    let gone = tokio::task::spawn_blocking(move || ends_within(&pid, 30));
    assert!(gone.await.unwrap(), "the process did not end within 30 s");
}

fn pidfd(pid: i32) -> std::os::fd::OwnedFd {
    let pid = rustix::process::Pid::from_raw(pid).unwrap();
    rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).unwrap()
}

/// A connection that ends takes its background commands with it, and only its own.
#[tokio::test]
async fn an_http_session_that_ends_ends_the_background_commands_it_started() {
    let ws = Ws::new();
    let (_server, url) = start_http(&ws, &["--approval-mode", "yolo"], &[]).await;
    let connect = || async {
        let client = TestClient::new(Answer::CannotAsk);
        bounded(client.serve(http_transport(url.as_str())))
            .await
            .unwrap()
    };
    let (first, second) = (connect().await, connect().await);
    let start = |sleep: &str| json!({"command": format!("sleep {sleep}"), "is_background": true});
    let first_job = pidfd(job_pid(
        &call(&first, "run_shell_command", start("4331")).await,
        "sleep 4331",
    ));
    let second_job = pidfd(job_pid(
        &call(&second, "run_shell_command", start("4332")).await,
        "sleep 4332",
    ));

    // The first client closes (its session is deleted): its job ends.
    first.cancel().await.unwrap();
    ended(first_job).await;
    // The second client's job still runs, and a call of that client still works.
    let still = call(
        &second,
        "run_shell_command",
        json!({"command": "echo here"}),
    )
    .await;
    assert!(text(&still).contains("Output: here"), "{}", text(&still));
    assert!(
        !ends_within(&second_job, 0),
        "the other session's job ended too"
    );
    second.cancel().await.unwrap();
    ended(second_job).await;
}

/// The log file in a background command's answer.
fn job_log(result: &rmcp::model::CallToolResult) -> std::path::PathBuf {
    text(result)
        .lines()
        .find_map(|l| l.strip_prefix("Output file: "))
        .map(|p| p.trim().into())
        .unwrap_or_else(|| panic!("no output file in {}", text(result)))
}

/// A session can neither stop another session's background job nor find its log.
#[tokio::test]
async fn an_http_session_cannot_stop_or_find_another_sessions_jobs() {
    let ws = Ws::new();
    let (_server, url) = start_http(&ws, &["--approval-mode", "yolo"], &[]).await;
    let connect = || async {
        let client = TestClient::new(Answer::CannotAsk);
        bounded(client.serve(http_transport(url.as_str())))
            .await
            .unwrap()
    };
    let (a, b) = (connect().await, connect().await);
    let started = call(
        &a,
        "run_shell_command",
        json!({"command": "echo a-secret-line; sleep 4351", "is_background": true}),
    )
    .await;
    let a_job = pidfd(job_pid(&started, "sleep 4351"));
    let a_log = job_log(&started);
    let id = text(&started)
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .map(str::to_string)
        .unwrap();

    // B cannot stop it: to B there is no such job.
    let stop = call(&b, "task_stop", json!({"task_id": id})).await;
    assert!(is_error(&stop), "{}", text(&stop));
    assert!(text(&stop).contains("No running task"), "{}", text(&stop));
    assert!(!ends_within(&a_job, 0), "B stopped A's job");

    // B's own job logs elsewhere, and B cannot list its way to A's log.
    let own = call(
        &b,
        "run_shell_command",
        json!({"command": "sleep 4352", "is_background": true}),
    )
    .await;
    let b_log = job_log(&own);
    assert_ne!(a_log.parent(), b_log.parent());
    let connections = a_log.parent().unwrap().parent().unwrap();
    let listing = call(&b, "list_directory", json!({"path": connections})).await;
    assert!(is_error(&listing), "{}", text(&listing));
    assert!(
        !text(&listing).contains(
            a_log
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
        ),
        "{}",
        text(&listing)
    );
    let found = call(
        &b,
        "glob",
        json!({"pattern": "**/*.log", "path": connections}),
    )
    .await;
    assert!(!text(&found).contains("a-secret"), "{}", text(&found));
    assert!(
        !text(&found).contains(a_log.file_name().unwrap().to_str().unwrap()),
        "{}",
        text(&found)
    );
    let grep = call(
        &b,
        "grep_search",
        json!({"pattern": "a-secret-line", "path": connections}),
    )
    .await;
    assert!(
        !text(&grep).contains(a_log.to_str().unwrap()),
        "{}",
        text(&grep)
    );

    // A stops its own job and reads its own log.
    let stop = call(&a, "task_stop", json!({"task_id": id})).await;
    assert!(!is_error(&stop), "{}", text(&stop));
    ended(a_job).await;
    let log = call(&a, "read_file", json!({"absolute_path": a_log})).await;
    assert!(text(&log).contains("a-secret-line"), "{}", text(&log));
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
}
