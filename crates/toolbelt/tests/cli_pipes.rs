#![allow(clippy::too_many_lines)]
//! A closed standard output or error ends toolbelt quietly (exit 141, as SIGPIPE would),
//! never with a panic and exit 101: `toolbelt tools list | head -c 10`,
//! `toolbelt … 2>&1 | head -c 10`.

#![allow(clippy::unwrap_used)]

use std::process::{Command, Stdio};

fn toolbelt(args: &[&str]) -> Command {
    let dir = std::env::temp_dir();
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolbelt"));
    command
        .args(args)
        .current_dir(&dir)
        .env("HOME", &dir)
        .env(
            "TOOLBELT_SYSTEM_SETTINGS_PATH",
            "/nonexistent/settings.json",
        )
        .stdin(Stdio::null());
    command
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let mut child = toolbelt(&["tools", "list", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader is gone before toolbelt writes its first byte.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_closed_stderr_ends_quietly() {
    // An unknown tool is reported on stderr, which nobody reads any more.
    let mut child = toolbelt(&["tools", "call", "no_such_tool", "{}"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(141));
}
