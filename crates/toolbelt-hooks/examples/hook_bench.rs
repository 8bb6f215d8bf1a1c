//! What one PreToolUse event costs with one hook, end to end through `HookEngine::run`
//! (input JSON, spawn or request, answer, combination): the shell string `true` (which
//! needs no shell and is run without one), `true && true` through `bash -c`, `true`
//! with `"args": []`, a Python hook that reads its input and
//! answers allow, and an http hook on 127.0.0.1; and `wants` for a call no hook matches.
//!
//! `cargo run --release -p toolbelt-hooks --example hook_bench [-- RUNS]` (default 200).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use toolbelt_config::{settings::HookLayer, settings::Settings, settings::SettingsLayer};
use toolbelt_engine::{hooks::HookEvent, hooks::HookRequest, hooks::HookRunner};
use toolbelt_hooks::{HookConfig, HookEngine, SessionInfo};

fn engine(hooks: Value, dir: &std::path::Path) -> HookEngine {
    let mut settings = Settings::default();
    settings.hook_layers = vec![HookLayer {
        layer: SettingsLayer::User,
        claude: false,
        file: dir.join("settings.json"),
        hooks,
        trusted: true,
    }];
    let config = match HookConfig::from_settings(&settings) {
        Ok(config) => config,
        Err(e) => panic!("{e}"),
    };
    let session = SessionInfo {
        session_id: "bench".into(),
        transcript_path: None,
        cwd: dir.to_path_buf(),
    };
    HookEngine::new(config, session, None)
}

fn request() -> HookRequest {
    let mut request = HookRequest::new(HookEvent::PreToolUse)
        .field("tool_name", "run_shell_command")
        .field("tool_input", json!({"command": "ls -la"}))
        .field("tool_use_id", "call-1");
    request.target = Some("run_shell_command".into());
    request.aliases = vec!["Bash".into()];
    request
}

/// Median and 90th percentile of `runs` runs of the event.
async fn measure(name: &str, engine: &HookEngine, runs: usize) {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let outcome = engine.run(request(), CancellationToken::new()).await;
        times.push(started.elapsed());
        assert!(
            outcome.failures.is_empty(),
            "{name}: {:?}",
            outcome.failures
        );
    }
    report(name, &mut times);
}

fn report(name: &str, times: &mut [Duration]) {
    times.sort();
    let at = |q: f64| times[((times.len() as f64 - 1.0) * q) as usize];
    println!(
        "{name:<32} median {:>9.3} ms   p90 {:>9.3} ms",
        at(0.5).as_secs_f64() * 1e3,
        at(0.9).as_secs_f64() * 1e3
    );
}

/// A keep-alive HTTP/1.1 server on 127.0.0.1 answering every POST with `{}`.
async fn server() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let mut data = Vec::new();
                loop {
                    let Ok(n) = stream.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    data.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&data).into_owned();
                    let Some(end) = text.find("\r\n\r\n") else {
                        continue;
                    };
                    let length: usize = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if data.len() < end + 4 + length {
                        continue;
                    }
                    data.drain(..end + 4 + length);
                    let reply = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
                    if stream.write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

#[tokio::main]
async fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = dir.path();
    let script = dir.join("allow.py");
    std::fs::write(
        &script,
        "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', 'permissionDecision': 'allow'}}))\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let command = |c: &str| json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": c}]}]});
    let none = engine(command("true"), dir);
    let started = Instant::now();
    let mut wanted = 0;
    for _ in 0..runs * 100 {
        wanted +=
            usize::from(none.wants(HookEvent::PreToolUse, Some("read_file"), &["Read".into()]));
    }
    let each = started.elapsed() / (runs as u32 * 100);
    println!(
        "{:<32} {:>9.3} µs each ({wanted} matched)",
        "wants, no hook matches",
        each.as_secs_f64() * 1e6
    );
    // The floor: the same program spawned and waited for, nothing else.
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let _ = tokio::process::Command::new("true").output().await;
        times.push(started.elapsed());
    }
    report("spawn `true` alone (floor)", &mut times);
    // A shell string that needs no shell is run without one; `true && true` needs bash.
    measure(
        "command \"true\" (run without a shell)",
        &engine(command("true"), dir),
        runs,
    )
    .await;
    measure(
        "command \"true && true\" (bash -c)",
        &engine(command("true && true"), dir),
        runs,
    )
    .await;
    let no_shell =
        json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "true", "args": []}]}]});
    measure("command true, \"args\": []", &engine(no_shell, dir), runs).await;
    measure(
        "command python3 (allow)",
        // Not through a version manager's shim, which is a shell script of its own.
        &engine(
            command(&format!("/usr/bin/python3 {}", script.display())),
            dir,
        ),
        runs,
    )
    .await;
    let port = server().await;
    let http = json!({"PreToolUse": [{"hooks": [{"type": "http", "url": format!("http://127.0.0.1:{port}/hook")}]}]});
    measure("http on 127.0.0.1", &engine(http, dir), runs).await;
}
