//! Every way the program ends runs the same cleanup: SIGTERM, SIGHUP and Ctrl-C twice
//! end what toolbelt started, also a process that left the call's process group and
//! session (`setsid`), which a signal's default action would leave running.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Run {
    _dir: tempfile::TempDir,
    child: Child,
    pid_file: PathBuf,
}

/// Starts `toolbelt tools call run_shell_command` on a command that starts a `setsid`
/// sleep (its own session and group) and waits for it.
fn start() -> Run {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let pid_file = root.join("sleep.pid");
    let args = serde_json::json!({
        "command": "setsid sleep 300 & echo $! > sleep.pid; wait"
    })
    .to_string();
    let child = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(["tools", "call", "run_shell_command", &args, "--yes"])
        .current_dir(&root)
        .env("HOME", &home)
        .env(
            "TOOLBELT_SYSTEM_SETTINGS_PATH",
            home.join("no-system-settings.json"),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Run {
        _dir: dir,
        child,
        pid_file,
    }
}

/// Polls for a condition with a generous deadline (a loaded machine is slow).
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sleep_pid(pid_file: &Path) -> u32 {
    let mut pid = None;
    eventually("the sleep's pid", || {
        pid = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        pid.is_some()
    });
    pid.unwrap()
}

/// Gone, or a zombie waiting for its new parent to reap it: it runs nothing.
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat[stat.rfind(')').unwrap() + 1..]
            .split_whitespace()
            .next()
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn ends_everything_on(signals: &[&str], code: i32) {
    let run = start();
    let sleep = sleep_pid(&run.pid_file);
    assert!(!ended(sleep), "the sleep should be running");
    for name in signals {
        signal(run.child.id(), name);
    }
    let out = run.child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {stderr}");
    eventually("the setsid sleep to end", || ended(sleep));
}

#[test]
fn sigterm_ends_every_process_toolbelt_started() {
    ends_everything_on(&["TERM"], 143);
}

#[test]
fn sighup_ends_every_process_toolbelt_started() {
    ends_everything_on(&["HUP"], 129);
}

#[test]
fn ctrl_c_twice_ends_every_process_toolbelt_started() {
    ends_everything_on(&["INT", "INT"], 130);
}
