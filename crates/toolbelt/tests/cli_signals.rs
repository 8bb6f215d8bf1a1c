#![allow(clippy::too_many_lines)]
//! Nothing outlives toolbelt, however it ends. Each test starts toolbelt running a
//! command that starts a `setsid` sleep (its own session and group, so no signal to the
//! call's group reaches it and a signal's default action would leave it running), ends
//! toolbelt one way, and waits (a pidfd, with a generous deadline) for the sleep to end:
//!
//! - signals toolbelt catches (TERM, HUP, INT twice, QUIT, USR1, USR2, ALRM, a real-time
//!   signal): its own cleanup, exit code 128 + the signal;
//! - endings it cannot see (SIGKILL, also of its whole process group, a fault signal,
//!   a panic, a stack overflow, an abort): the guardian's sweep.
//!
//! The panic, overflow and abort come from `toolbelt __crash`, which exists in debug
//! builds only (see `src/crash.rs`), so those tests are compiled for debug builds only.

#![allow(clippy::unwrap_used)]

use std::os::fd::OwnedFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

struct Run {
    dir: tempfile::TempDir,
    child: Child,
    pid_file: PathBuf,
}

/// `toolbelt ARGS` in a temp project with its own HOME and TOOLBELT_HOME, in a process
/// group of its own, with core dumps off (a fault signal must not write 160 MB). Its
/// output goes nowhere: a pipe would stay open in a leftover that inherited it, and
/// waiting for the pipe would then wait for the leftover.
fn toolbelt(args: &[&str]) -> Run {
    toolbelt_with(args, None)
}

/// [`toolbelt`] with `settings` as the user's settings file.
fn toolbelt_with(args: &[&str], settings: Option<&serde_json::Value>) -> Run {
    let files: Vec<(&str, String)> = settings
        .map(|s| ("settings.json", s.to_string()))
        .into_iter()
        .collect();
    toolbelt_with_files(args, &files)
}

/// [`toolbelt`] with `user_files` (name, text) in the user's `~/.qwen`.
fn toolbelt_with_files(args: &[&str], user_files: &[(&str, String)]) -> Run {
    toolbelt_as(args, user_files, false)
}

/// The user a test runs toolbelt as when it must be a normal user: `nobody` when the
/// tests run as root (CI), else the tests' own user.
const NOBODY: u32 = 65534;

/// [`toolbelt_with_files`], as a normal user when `normal_user`: as root the project,
/// the home and a link to the binary (whose folder `nobody` may not reach) are given
/// to `nobody`, which toolbelt then runs as.
fn toolbelt_as(args: &[&str], user_files: &[(&str, String)], normal_user: bool) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(home.join(".qwen")).unwrap();
    for (name, text) in user_files {
        std::fs::write(home.join(".qwen").join(name), text).unwrap();
    }
    let pid_file = root.join("sleep.pid");
    let mut program = PathBuf::from(env!("CARGO_BIN_EXE_toolbelt"));
    let mut command = Command::new("sh");
    if normal_user && rustix::process::geteuid().is_root() {
        let link = dir.path().join("toolbelt");
        if std::fs::hard_link(&program, &link).is_err() {
            std::fs::copy(&program, &link).unwrap();
        }
        program = link;
        let chown = Command::new("chown")
            .args(["-R", &format!("{NOBODY}:{NOBODY}")])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(chown.success());
        // As root, `std` also drops the supplementary groups.
        command.uid(NOBODY).gid(NOBODY);
    }
    let child = command
        .arg("-c")
        .arg("ulimit -c 0; exec \"$0\" \"$@\"")
        .arg(&program)
        .args(args)
        .current_dir(&root)
        .env("HOME", &home)
        .env("TOOLBELT_HOME", home.join("tb"))
        .env(
            "TOOLBELT_SYSTEM_SETTINGS_PATH",
            home.join("no-system-settings.json"),
        )
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Run {
        dir,
        child,
        pid_file,
    }
}

/// A command that starts a `setsid` sleep, writes its pid and waits for it.
const SETSID_SLEEP: &str = "setsid sleep 300 & echo $! > sleep.pid; wait";

/// `toolbelt tools call run_shell_command` on [`SETSID_SLEEP`].
fn start() -> Run {
    let args = serde_json::json!({ "command": SETSID_SLEEP }).to_string();
    toolbelt(&["tools", "call", "run_shell_command", &args, "--yes"])
}

/// Polls for a condition with a generous deadline (a loaded machine is slow).
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The sleep's pid as this test sees it: `$!` in an approved command names it in the
/// PID namespace toolbelt's approved commands share, below toolbelt (`root`).
fn sleep_pid(pid_file: &Path, root: u32) -> u32 {
    let inner = written_pid(pid_file);
    toolbelt_process::isolate::host_pid_below(root, inner).unwrap_or(inner)
}

fn written_pid(pid_file: &Path) -> u32 {
    let mut pid = None;
    eventually("the sleep's pid", || {
        pid = std::fs::read_to_string(pid_file)
            .ok()
            .filter(|s| s.ends_with('\n'))
            .and_then(|s| s.trim().parse().ok());
        pid.is_some()
    });
    pid.unwrap()
}

/// A pidfd of `pid`: it reads as ready once the process has ended, whoever reaps it.
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

fn assert_ends(fd: &OwnedFd, what: &str) {
    assert!(
        ends_within(fd, 30),
        "{what} still runs 30 s after toolbelt ended"
    );
}

fn signal(target: &str, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), "--", target])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{name} {target}");
}

/// The guardian toolbelt started (its child running `toolbelt __guardian`).
fn guardian_of(toolbelt: u32) -> u32 {
    let mut found = None;
    eventually("the guardian", || {
        let children = std::fs::read_dir(format!("/proc/{toolbelt}/task"))
            .unwrap()
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
            .collect::<String>();
        found = children
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
            .find(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == b"__guardian"))
            });
        found.is_some()
    });
    found.unwrap()
}

/// Starts toolbelt on the setsid sleep, sends `signals` to it (or to `-<its group>`
/// when `group`), and checks how it ended and that the sleep ended too.
fn ends_everything_on(signals: &[&str], group: bool) -> ExitStatus {
    let run = start();
    let sleep = pidfd(sleep_pid(&run.pid_file, run.child.id()));
    assert!(!ends_within(&sleep, 0), "the sleep should be running");
    let pid = run.child.id();
    let target = if group {
        format!("-{pid}")
    } else {
        pid.to_string()
    };
    for name in signals {
        signal(&target, name);
    }
    let mut child = run.child;
    let status = child.wait().unwrap();
    assert_ends(&sleep, "the setsid sleep");
    drop(run.dir);
    status
}

fn exits_with(status: ExitStatus, code: i32) {
    assert_eq!(status.code(), Some(code), "{status:?}");
}

#[test]
fn sigterm_ends_every_process_toolbelt_started() {
    exits_with(ends_everything_on(&["TERM"], false), 143);
}

#[test]
fn sighup_ends_every_process_toolbelt_started() {
    exits_with(ends_everything_on(&["HUP"], false), 129);
}

#[test]
fn ctrl_c_twice_ends_every_process_toolbelt_started() {
    exits_with(ends_everything_on(&["INT", "INT"], false), 130);
}

#[test]
fn sigquit_ends_every_process_toolbelt_started() {
    exits_with(ends_everything_on(&["QUIT"], false), 131);
}

#[test]
fn sigusr1_and_sigusr2_end_every_process_toolbelt_started() {
    exits_with(ends_everything_on(&["USR1"], false), 138);
    exits_with(ends_everything_on(&["USR2"], false), 140);
}

#[test]
fn sigalrm_and_a_real_time_signal_end_every_process_toolbelt_started() {
    exits_with(ends_everything_on(&["ALRM"], false), 142);
    // SIGRTMIN is 34 under glibc (32 and 33 are its own).
    exits_with(ends_everything_on(&["RTMIN+1"], false), 128 + 35);
}

/// The settings that keep approved commands out of the shared PID namespace, so what
/// ends their leftovers after a SIGKILL is the guardian's sweep, not the kernel.
fn no_namespace() -> serde_json::Value {
    serde_json::json!({"tools": {"shell": {"processNamespace": false}}})
}

#[test]
fn sigkill_leaves_nothing_running_and_the_guardian_exits_when_done() {
    let args = serde_json::json!({ "command": SETSID_SLEEP }).to_string();
    let run = toolbelt_with(
        &["tools", "call", "run_shell_command", &args, "--yes"],
        Some(&no_namespace()),
    );
    let sleep = pidfd(sleep_pid(&run.pid_file, run.child.id()));
    let guardian = pidfd(guardian_of(run.child.id()));
    // A process toolbelt did not start, carrying a marker anyone could guess (the
    // toolbelt's pid, as markers once were): the guardian must leave it alone.
    let mut bystander = Command::new("sleep")
        .arg("300")
        .env("TOOLBELT_OWNER", format!("{}.1", run.child.id()))
        .process_group(0)
        .spawn()
        .unwrap();
    let bystander_fd = pidfd(bystander.id());
    signal(&run.child.id().to_string(), "KILL");
    let mut child = run.child;
    assert_eq!(child.wait().unwrap().signal(), Some(9));
    assert_ends(&sleep, "the setsid sleep");
    assert_ends(&guardian, "the guardian");
    assert!(
        !ends_within(&bystander_fd, 0),
        "the guardian ended a process toolbelt did not start"
    );
    bystander.kill().unwrap();
    bystander.wait().unwrap();
}

/// The children of `pid` whose command line has `__guardian`.
fn guardians_below(pid: u32) -> usize {
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    children
        .split_whitespace()
        .filter(|c| {
            std::fs::read(format!("/proc/{c}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == b"__guardian"))
        })
        .count()
}

/// An approved command in the shared PID namespace starts no guardian (the kernel ends
/// the namespace with toolbelt: issue 49), and a SIGKILL still leaves nothing running.
/// Where the namespace is not granted, the guardian is what ends it, so it starts.
#[test]
fn an_approved_command_in_the_shared_namespace_needs_no_guardian() {
    let run = start();
    let sleep = pidfd(sleep_pid(&run.pid_file, run.child.id()));
    let granted = toolbelt_process::isolate::processes_granted().is_ok();
    if granted {
        assert_eq!(
            guardians_below(run.child.id()),
            0,
            "a guardian started for a command the kernel ends with toolbelt"
        );
    } else {
        guardian_of(run.child.id());
    }
    signal(&run.child.id().to_string(), "KILL");
    let mut child = run.child;
    assert_eq!(child.wait().unwrap().signal(), Some(9));
    assert_ends(&sleep, "the setsid sleep");
}

/// A daemon an approved command hid from every marker scan (double-forked, its own
/// session, no environment, not dumpable) still ends when toolbelt is killed: it is in
/// the PID namespace approved commands share, which the kernel ends with toolbelt.
#[test]
fn sigkill_ends_a_daemon_with_no_marker_that_is_not_dumpable() {
    let daemon = "import ctypes, time; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); \
                  open(\"ready\", \"w\").close(); time.sleep(300)";
    let command = format!(
        "(env -i setsid python3 -c '{daemon}' >/dev/null 2>&1 & echo $! > sleep.pid); \
         until [ -e go ]; do sleep 0.01; done"
    );
    let args = serde_json::json!({ "command": command }).to_string();
    let run = toolbelt(&["tools", "call", "run_shell_command", &args, "--yes"]);
    let pid = sleep_pid(&run.pid_file, run.child.id());
    let daemon_fd = pidfd(pid);
    let ready = run.pid_file.with_file_name("ready");
    eventually("the daemon to make itself not dumpable", || ready.exists());
    signal(&run.child.id().to_string(), "KILL");
    let mut child = run.child;
    assert_eq!(child.wait().unwrap().signal(), Some(9));
    assert_ends(&daemon_fd, "the hidden daemon");
    std::fs::write(run.pid_file.with_file_name("go"), "").unwrap();
}

/// The same daemon of a command approved in a toolbelt run by a normal user, who can
/// make a PID namespace only through a user namespace: it ends too, and the approved
/// command saw no process of the machine (toolbelt included) in its `/proc`.
#[test]
fn as_a_normal_user_a_hidden_daemon_of_an_approved_command_ends_with_toolbelt() {
    if let Err(why) = user_namespaces() {
        eprintln!("skipped: {why}");
        return;
    }
    let daemon = "import ctypes, time; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); \
                  open(\"ready\", \"w\").close(); time.sleep(300)";
    let command = format!(
        "ls /proc | grep -c '^[0-9]' > seen; \
         (env -i setsid python3 -c '{daemon}' >/dev/null 2>&1 & echo $! > sleep.pid); \
         until [ -e go ]; do sleep 0.01; done"
    );
    let args = serde_json::json!({ "command": command }).to_string();
    let run = toolbelt_as(
        &["tools", "call", "run_shell_command", &args, "--yes"],
        &[],
        true,
    );
    let pid = sleep_pid(&run.pid_file, run.child.id());
    let daemon_fd = pidfd(pid);
    let ready = run.pid_file.with_file_name("ready");
    eventually("the daemon to make itself not dumpable", || ready.exists());
    let seen: usize = std::fs::read_to_string(run.pid_file.with_file_name("seen"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        seen < 8,
        "an approved command saw {seen} processes: not the namespace's own"
    );
    signal(&run.child.id().to_string(), "KILL");
    let mut child = run.child;
    assert_eq!(child.wait().unwrap().signal(), Some(9));
    assert_ends(&daemon_fd, "the hidden daemon of a normal user's command");
    std::fs::write(run.pid_file.with_file_name("go"), "").unwrap();
}

/// Whether a normal user may make user namespaces here (a distribution may forbid it;
/// CI's kernel does not, and there the test must run).
fn user_namespaces() -> Result<(), String> {
    let mut probe = Command::new("unshare");
    probe.args(["-U", "-p", "-f", "true"]);
    if rustix::process::geteuid().is_root() {
        probe.uid(NOBODY).gid(NOBODY);
    }
    let ok = probe.status().is_ok_and(|s| s.success());
    let ci = std::env::var_os("CI").is_some();
    match (ok, ci) {
        (true, _) => Ok(()),
        (false, true) => panic!("CI's kernel must let a normal user make a user namespace"),
        (false, false) => {
            Err("this kernel does not let a normal user make a user namespace".into())
        }
    }
}

#[test]
fn sigkill_while_an_mcp_server_starts_leaves_nothing_of_it_running() {
    // An MCP server (here one that never answers the handshake) that started a setsid
    // sleep: once toolbelt is gone, only the owner marker the server was started with
    // ties the sleep to it.
    let server = serde_json::json!({"mcpServers": {"slow": {
        "command": "sh",
        "args": ["-c", "setsid sleep 300 & echo $! > sleep.pid; exec sleep 300"],
        "timeout": 120_000
    }}});
    let run = toolbelt_with(&["tools", "list"], Some(&server));
    let sleep = pidfd(sleep_pid(&run.pid_file, run.child.id()));
    signal(&run.child.id().to_string(), "KILL");
    let mut child = run.child;
    assert_eq!(child.wait().unwrap().signal(), Some(9));
    assert_ends(&sleep, "the MCP server's setsid sleep");
}

/// `toolbelt tools call lsp` on a language server (the user's `.lsp.json`) that starts
/// a setsid sleep and never answers `initialize`.
fn lsp_call_on_a_silent_server() -> Run {
    let lsp = serde_json::json!({"python": {
        "command": "sh",
        "args": ["-c", "setsid sleep 300 & echo $! > sleep.pid; exec sleep 300"],
        "extensionToLanguage": {".py": "python"},
        "startupTimeout": 120_000
    }});
    // workspaceSymbol names no file: the call starts every configured server.
    let call = serde_json::json!({"operation": "workspaceSymbol", "query": "x"});
    toolbelt_with_files(
        &["tools", "call", "lsp", &call.to_string()],
        &[(".lsp.json", lsp.to_string())],
    )
}

#[test]
fn sigkill_while_a_language_server_starts_leaves_nothing_of_it_running() {
    // Once toolbelt is gone, only the owner marker the server was started with ties the
    // sleep to it.
    let run = lsp_call_on_a_silent_server();
    let sleep = pidfd(sleep_pid(&run.pid_file, run.child.id()));
    signal(&run.child.id().to_string(), "KILL");
    let mut child = run.child;
    assert_eq!(child.wait().unwrap().signal(), Some(9));
    assert_ends(&sleep, "the language server's setsid sleep");
}

#[test]
fn sigterm_while_a_language_server_runs_ends_it_and_what_it_started() {
    let run = lsp_call_on_a_silent_server();
    let sleep = pidfd(sleep_pid(&run.pid_file, run.child.id()));
    signal(&run.child.id().to_string(), "TERM");
    let mut child = run.child;
    exits_with(child.wait().unwrap(), 128 + 15);
    assert_ends(&sleep, "the language server's setsid sleep");
}

#[test]
fn sigkill_to_toolbelts_whole_process_group_leaves_nothing_running() {
    // The guardian has a group of its own: a group signal does not take it along.
    let status = ends_everything_on(&["KILL"], true);
    assert_eq!(status.signal(), Some(9));
}

#[test]
fn a_signal_left_to_its_default_action_leaves_nothing_running() {
    // SYS (like the other fault signals) is not caught: a handler that returns would
    // run the faulting instruction again. The kernel (the shared namespace) or the
    // guardian cleans up. (SEGV and BUS sent by
    // `kill` are no test of this: Rust's stack-overflow handler takes them once.)
    let status = ends_everything_on(&["SYS"], false);
    assert_eq!(status.signal(), Some(31));
}

/// `toolbelt __crash HOW` after a command that leaves a setsid sleep behind (orphaned,
/// so adopted by toolbelt): toolbelt dies without its own cleanup.
#[cfg(debug_assertions)]
fn crash(how: &str) -> ExitStatus {
    // The command waits for `go` so the test holds the sleep's pidfd before toolbelt
    // dies (a pid read after that could name another process).
    let command = "setsid sleep 300 & echo $! > sleep.pid; until [ -e go ]; do sleep 0.01; done";
    let run = toolbelt(&["__crash", how, command]);
    let sleep = pidfd(sleep_pid(&run.pid_file, run.child.id()));
    std::fs::write(run.pid_file.with_file_name("go"), "").unwrap();
    let mut child = run.child;
    let status = child.wait().unwrap();
    assert_ends(&sleep, "the setsid sleep");
    status
}

#[cfg(debug_assertions)]
#[test]
fn a_panic_leaves_nothing_running() {
    exits_with(crash("panic"), 101);
}

#[cfg(debug_assertions)]
#[test]
fn a_stack_overflow_leaves_nothing_running() {
    assert_eq!(crash("overflow").signal(), Some(6));
}

#[cfg(debug_assertions)]
#[test]
fn an_abort_leaves_nothing_running() {
    assert_eq!(crash("abort").signal(), Some(6));
}
