//! `mcp serve` ends everything it started when its client stops it: TERM, HUP and INT
//! over stdio (a current-thread runtime) and over HTTP (a multi-thread one) each exit
//! with 128 + the signal and leave no process behind; SIGKILL leaves none either (the
//! guardian), except background jobs the settings keep.

use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;

use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::support::*;

/// A command that starts a `setsid` sleep (out of the call's group and session), writes
/// its pid to `file` and waits.
fn setsid_sleep(file: &str) -> String {
    format!("setsid sleep 300 & echo $! > {file}; wait")
}

fn pidfd(pid: u32) -> OwnedFd {
    let pid = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
    rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).unwrap()
}

/// Whether the process behind `fd` ends within `seconds`.
fn ends_within(fd: &OwnedFd, seconds: i64) -> bool {
    let mut fds = [rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN)];
    let limit = rustix::event::Timespec {
        tv_sec: seconds,
        tv_nsec: 0,
    };
    rustix::event::poll(&mut fds, Some(&limit)).unwrap() == 1
}

async fn ends(fd: OwnedFd, what: &str) {
    let gone = tokio::task::spawn_blocking(move || ends_within(&fd, 30));
    assert!(
        gone.await.unwrap(),
        "{what} still runs 30 s after the server ended"
    );
}

/// The pid written to `file`, once it is there, as this test sees it: `$!` in an
/// approved command names it in the PID namespace toolbelt's approved commands share,
/// below the server (`root`); a kept job is outside it.
async fn pid_in(file: &Path, root: u32) -> u32 {
    let inner = written_pid(file).await;
    toolbelt_process::isolate::host_pid_below(root, inner).unwrap_or(inner)
}

async fn written_pid(file: &Path) -> u32 {
    bounded(async {
        loop {
            if let Some(pid) = std::fs::read_to_string(file)
                .ok()
                .filter(|t| t.ends_with('\n'))
                .and_then(|t| t.trim().parse().ok())
            {
                return pid;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
}

fn signal(pid: u32, name: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// The guardian `pid` started: its child running `toolbelt __guardian`.
fn guardian_of(pid: u32) -> u32 {
    let children: String = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .collect::<Vec<_>>()
        .join(" ");
    children
        .split_whitespace()
        .filter_map(|p| p.parse::<u32>().ok())
        .find(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == b"__guardian"))
        })
        .unwrap_or_else(|| panic!("no guardian below {pid}: {children}"))
}

/// `mcp serve` over stdio, spoken to in raw JSON-RPC lines (the test needs the child).
struct StdioServer {
    child: Child,
    input: ChildStdin,
    output: Lines<BufReader<ChildStdout>>,
}

impl StdioServer {
    async fn start(ws: &Ws) -> StdioServer {
        let mut cmd = ws.command(&["--approval-mode", "yolo"]);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut server = StdioServer {
            child,
            input,
            output,
        };
        server
            .send(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}}}),
            )
            .await;
        server.answer(0).await;
        server
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        server
    }

    async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.input.write_all(line.as_bytes()).await.unwrap();
        self.input.flush().await.unwrap();
    }

    /// Sends a `tools/call` without waiting for its answer.
    async fn call(&mut self, id: i64, name: &str, args: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": args}}))
            .await;
    }

    async fn answer(&mut self, id: i64) -> Value {
        bounded(async {
            loop {
                let line = self.output.next_line().await.unwrap().expect("no answer");
                let message: Value = serde_json::from_str(&line).unwrap();
                if message["id"] == json!(id) {
                    return message;
                }
            }
        })
        .await
    }
}

/// Over stdio: a background job that left a setsid sleep, then `name`.
async fn stdio_server_ends_everything_on(name: &str, code: i32) {
    let ws = Ws::new();
    let mut server = StdioServer::start(&ws).await;
    let args = json!({"command": setsid_sleep("sleep.pid"), "is_background": true});
    server.call(1, "run_shell_command", args).await;
    let started = server.answer(1).await;
    assert!(started["result"]["isError"] != json!(true), "{started}");
    let sleep = pidfd(pid_in(&ws.ws().join("sleep.pid"), server.child.id().unwrap()).await);
    signal(server.child.id().unwrap(), name);
    let status = bounded(server.child.wait()).await.unwrap();
    assert_eq!(status.code(), Some(code), "{status:?}");
    ends(sleep, "the background job's setsid sleep").await;
}

#[tokio::test]
async fn a_stdio_server_ends_everything_it_started_on_sigterm() {
    stdio_server_ends_everything_on("TERM", 143).await;
}

#[tokio::test]
async fn a_stdio_server_ends_everything_it_started_on_sighup() {
    stdio_server_ends_everything_on("HUP", 129).await;
}

#[tokio::test]
async fn a_stdio_server_ends_everything_it_started_on_sigint() {
    stdio_server_ends_everything_on("INT", 130).await;
}

/// Over HTTP: a client's background job that left a setsid sleep, then `name`.
async fn http_server_ends_everything_on(name: &str, code: i32) {
    let ws = Ws::new();
    let mut cmd = ws.command(&["--http", "127.0.0.1:0", "--approval-mode", "yolo"]);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut server = cmd.spawn().unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let url = bounded(async {
        loop {
            let line = lines.next_line().await.unwrap().expect("the server exited");
            if line.contains("Streamable HTTP")
                && let Some(url) = line.split(" at ").nth(1)
            {
                return url.trim().to_string();
            }
        }
    })
    .await;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let client = bounded(TestClient::new(Answer::CannotAsk).serve(http_transport(url.as_str())))
        .await
        .unwrap();
    let args = json!({"command": setsid_sleep("sleep.pid"), "is_background": true});
    let started = call(&client, "run_shell_command", args).await;
    assert!(!is_error(&started), "{}", text(&started));
    let sleep = pidfd(pid_in(&ws.ws().join("sleep.pid"), server.id().unwrap()).await);
    signal(server.id().unwrap(), name);
    let status = bounded(server.wait()).await.unwrap();
    assert_eq!(status.code(), Some(code), "{status:?}");
    ends(sleep, "the background job's setsid sleep").await;
    drop(client);
}

#[tokio::test]
async fn an_http_server_ends_everything_it_started_on_sigterm() {
    http_server_ends_everything_on("TERM", 143).await;
}

#[tokio::test]
async fn an_http_server_ends_everything_it_started_on_sighup() {
    http_server_ends_everything_on("HUP", 129).await;
}

#[tokio::test]
async fn an_http_server_ends_everything_it_started_on_sigint() {
    http_server_ends_everything_on("INT", 130).await;
}

/// SIGKILL: the guardian ends the running call's setsid sleep and spares the background
/// job that `killBackgroundOnExit: false` keeps (and its own setsid sleep).
#[tokio::test]
async fn sigkill_ends_the_calls_processes_and_spares_the_jobs_the_settings_keep() {
    let ws = Ws::new();
    ws.write(
        &ws.dir.path().join("home/.qwen/settings.json"),
        r#"{"tools": {"shell": {"killBackgroundOnExit": false}}}"#,
    );
    let mut server = StdioServer::start(&ws).await;
    let kept = json!({"command": setsid_sleep("kept.pid"), "is_background": true});
    server.call(1, "run_shell_command", kept).await;
    let started = server.answer(1).await;
    assert!(started["result"]["isError"] != json!(true), "{started}");
    let kept_pid = pid_in(&ws.ws().join("kept.pid"), server.child.id().unwrap()).await;
    let kept = pidfd(kept_pid);
    // A foreground call still running when the server is killed.
    let running = json!({"command": setsid_sleep("running.pid")});
    server.call(2, "run_shell_command", running).await;
    let running = pidfd(pid_in(&ws.ws().join("running.pid"), server.child.id().unwrap()).await);

    let guardian = pidfd(guardian_of(server.child.id().unwrap()));
    signal(server.child.id().unwrap(), "KILL");
    let status = bounded(server.child.wait()).await.unwrap();
    assert_eq!(status.signal(), Some(9));
    ends(running, "the running call's setsid sleep").await;
    // The guardian is done (it exits after its sweep): what it spared stays spared.
    ends(guardian, "the guardian").await;
    assert!(
        !ends_within(&kept, 0),
        "the background job the settings keep was ended"
    );
    rustix::process::pidfd_send_signal(&kept, rustix::process::Signal::KILL).unwrap();
    ends(kept, "the kept job").await;
}
