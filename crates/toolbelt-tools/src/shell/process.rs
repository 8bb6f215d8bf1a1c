//! Starting a command and ending it, with nothing left behind.
//!
//! Every command runs as `bash -c` (or `sh -c` where there is no bash) in a *new process
//! group* whose id is the shell's PID, so one signal to the group reaches the shell, its
//! children and their children. Standard input is `/dev/null`: a command that waits for
//! input gets end-of-file at once instead of hanging the agent (Qwen Code and goose users
//! lost hours to this). Pagers and git's credential prompts are switched off through the
//! environment. Standard output and standard error share one pipe, so the output arrives
//! interleaved exactly in the order the command wrote it.
//!
//! Ending a group: SIGTERM to every member, a short grace period for clean-up, then
//! SIGKILL; the shell itself is reaped by tokio, so no zombie of ours remains.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};

use super::sandbox::PreparedSandbox;

/// Environment added to every command.
pub const EXTRA_ENV: &[(&str, &str)] = &[
    ("TOOLBELT", "1"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

/// How long a group gets between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_millis(300);

/// Where the command's output goes.
pub enum OutputTarget {
    /// A pipe the caller reads (foreground commands).
    Pipe,
    /// A file (background jobs: nothing needs to read while the job runs).
    File(std::fs::File),
}

/// A started command.
pub struct RunningShell {
    pub child: Child,
    /// The shell's PID, which is also the process group id.
    pub pid: u32,
    /// The read end of the output pipe, for [`OutputTarget::Pipe`].
    pub output: Option<pipe::Receiver>,
}

/// The shell to run commands with: bash when present, else sh.
pub fn shell_program() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("bash"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

/// Starts `command` in `cwd` in a new process group.
pub fn spawn(
    command: &str,
    cwd: &Path,
    target: OutputTarget,
    sandbox: Option<PreparedSandbox>,
) -> io::Result<RunningShell> {
    let mut cmd = Command::new(shell_program());
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .process_group(0)
        .kill_on_drop(false);
    for (key, value) in EXTRA_ENV {
        cmd.env(key, value);
    }
    let reader = match target {
        OutputTarget::Pipe => {
            let (reader, writer) = io::pipe()?;
            cmd.stdout(writer.try_clone()?).stderr(writer);
            Some(reader)
        }
        OutputTarget::File(file) => {
            cmd.stdout(file.try_clone()?).stderr(file);
            None
        }
    };
    if let Some(sandbox) = sandbox {
        sandbox.install(&mut cmd);
    }
    let child = cmd.spawn()?;
    // The command object holds our copies of the pipe's write end; drop them so the
    // reader sees end-of-file when the command's processes are done writing.
    drop(cmd);
    let pid = child
        .id()
        .ok_or_else(|| io::Error::other("the command exited before its PID could be read"))?;
    let output = match reader {
        Some(r) => Some(pipe::Receiver::from_owned_fd(r.into())?),
        None => None,
    };
    Ok(RunningShell { child, pid, output })
}

/// Whether any process of the group still exists (zombies included).
pub fn group_exists(pgid: u32) -> bool {
    to_pid(pgid).is_some_and(|pid| test_kill_process_group(pid).is_ok())
}

/// SIGTERM to the group, then SIGKILL after `grace` if anything is left. Waits (without
/// blocking the runtime) until the group is gone or the grace period after SIGKILL ends.
pub async fn terminate_group(pgid: u32, grace: Duration) {
    let Some(pid) = to_pid(pgid) else {
        return;
    };
    if kill_process_group(pid, Signal::TERM).is_err() {
        return; // already gone
    }
    if wait_until_gone(pgid, grace).await {
        return;
    }
    let _ = kill_process_group(pid, Signal::KILL);
    wait_until_gone(pgid, grace).await;
}

/// Ends groups from synchronous code (a `Drop`): SIGTERM to all, one bounded wait for
/// all of them, SIGKILL to whatever is left.
pub fn terminate_groups_blocking(pgids: &[u32], grace: Duration) {
    let pids: Vec<Pid> = pgids.iter().filter_map(|&p| to_pid(p)).collect();
    for pid in &pids {
        let _ = kill_process_group(*pid, Signal::TERM);
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline && pgids.iter().any(|&g| !live_members(g).is_empty()) {
        std::thread::sleep(Duration::from_millis(10));
    }
    if pgids.iter().all(|&g| live_members(g).is_empty()) {
        return;
    }
    for pid in &pids {
        let _ = kill_process_group(*pid, Signal::KILL);
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline && pgids.iter().any(|&g| !live_members(g).is_empty()) {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls every 10 ms until no live (non-zombie) member is left; `true` when that happened
/// within `limit`. Zombies are ignored: whoever is their parent reaps them, and they
/// cannot run anything.
async fn wait_until_gone(pgid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if live_members(pgid).is_empty() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until no process of the group is alive (zombies left to an init that does not
/// reap them do not count), for at most `limit`. A signal is delivered asynchronously,
/// so a caller that reports "killed" waits here first. Returns whether the group died.
pub async fn wait_until_no_live_members(pgid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if live_members(pgid).is_empty() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// PIDs of the group's processes that are not zombies, from `/proc`.
pub fn live_members(pgid: u32) -> Vec<u32> {
    // One system call answers the common case (the group is gone) without reading /proc.
    if !group_exists(pgid) {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some((state, group)) = stat_state_and_group(pid)
            && group == pgid
            && state != 'Z'
            && state != 'X'
        {
            pids.push(pid);
        }
    }
    pids.sort_unstable();
    pids
}

/// The state letter and process group of a process, from `/proc/<pid>/stat`.
pub fn stat_state_and_group(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields after it start
    // after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let group = fields.next()?.parse().ok()?;
    Some((state, group))
}

fn to_pid(raw: u32) -> Option<Pid> {
    i32::try_from(raw).ok().and_then(Pid::from_raw)
}
