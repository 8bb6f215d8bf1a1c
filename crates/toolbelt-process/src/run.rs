//! Running a person's command to its end (the discovery and call commands, declared
//! tools, hooks) with a time limit, an output cap and cancellation.
//!
//! The command runs without a shell, in its own process group, so a timeout, a cancel or
//! an output overflow kills everything it started (a wrapper script's children too), not
//! only the first process. It also carries an owner marker ([`crate::owner`]), so
//! what left the group (`setsid`, `nohup`) is ended too, and nothing it started outlives
//! the run, however the run ended. Output is read concurrently from both pipes so a
//! command that fills stderr cannot deadlock one that we read stdout from.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::{GroupCommand, KILL_GRACE, Owner};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// How long to wait for the pipes to close after the group was killed. A process that
/// left the group and cleared its environment may keep them open; its output is then
/// given up.
const DRAIN_AFTER_KILL: Duration = Duration::from_secs(2);

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// The process exited with this code.
    Exited(i32),
    /// The process was killed by this signal (not by us).
    Signaled(i32),
    /// The time limit passed; the group was killed.
    TimedOut(Duration),
    /// The caller cancelled; the group was killed.
    Cancelled,
    /// Output passed the cap; the group was killed.
    OutputTooLarge(usize),
    /// The command could not be started.
    SpawnFailed(String),
}

/// What a run gave: its output (each stream at most the cap) and how it ended.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error.
    pub stderr: Vec<u8>,
    /// How it ended.
    pub end: RunEnd,
}

impl RunOutput {
    /// Standard output as text (invalid UTF-8 replaced).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    /// Standard error as text (invalid UTF-8 replaced).
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// What to run and within which limits.
pub struct RunSpec<'a> {
    /// The program and its arguments (no shell).
    pub argv: &'a [String],
    /// The working directory.
    pub cwd: &'a Path,
    /// Bytes written to standard input, then closed (`None`: `/dev/null`).
    pub stdin: Option<Vec<u8>>,
    /// The time limit.
    pub timeout: Duration,
    /// Bytes each of stdout and stderr may have.
    pub output_cap: usize,
    /// Ends the run (and everything it started) when cancelled.
    pub cancel: CancellationToken,
    /// Variables added to the inherited environment (a declared tool's
    /// `TOOLBELT_MANIFEST_DIR`).
    pub env: Vec<(String, std::ffi::OsString)>,
}

/// Runs `spec` to its end: the exit, the time limit, the cap or the cancellation. When
/// it returns, nothing the command started is left running.
pub async fn run(spec: RunSpec<'_>) -> RunOutput {
    let failed = |why: String| RunOutput {
        stdout: Vec::new(),
        stderr: Vec::new(),
        end: RunEnd::SpawnFailed(why),
    };
    let Some((program, args)) = spec.argv.split_first() else {
        return failed("the command is empty".into());
    };
    let owner = Owner::new();
    let mut command = GroupCommand::new(program, &owner);
    command
        .args(args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(spec.cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if spec.stdin.is_some() {
        command.stdin(Stdio::piped());
    }
    let mut child = match command.spawn(true) {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot start `{program}`: {e}")),
    };
    let pid = child.id();
    feed_stdin(spec.stdin, child.stdin.take());
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let cap = spec.output_cap;
    let work = async {
        let (out, err) = tokio::join!(read_capped(stdout, cap, pid), read_capped(stderr, cap, pid));
        let status = child.wait().await;
        (out, err, status)
    };
    tokio::pin!(work);
    let mut forced = None;
    let finished = tokio::select! {
        done = &mut work => Some(done),
        _ = tokio::time::sleep(spec.timeout) => { forced = Some(RunEnd::TimedOut(spec.timeout)); None }
        _ = spec.cancel.cancelled() => { forced = Some(RunEnd::Cancelled); None }
    };
    let (out, err, status) = match finished {
        Some(done) => done,
        None => {
            kill_group(pid);
            // Processes that left the group may hold the pipes: end them before draining.
            owner.kill_leftovers(KILL_GRACE).await;
            let drained = match tokio::time::timeout(DRAIN_AFTER_KILL, &mut work).await {
                Ok(done) => done,
                Err(_) => (
                    Capped::default(),
                    Capped::default(),
                    Err(std::io::Error::other("gone")),
                ),
            };
            // The result says the command was ended: make it true of the whole group,
            // not only of the leader that was reaped above.
            if let Some(pid) = pid {
                crate::wait_until_no_live_members(pid, DRAIN_AFTER_KILL).await;
            }
            drained
        }
    };
    // Whatever the command left running (in its group or not) ends with the run.
    owner.kill_leftovers(KILL_GRACE).await;
    let end = forced.unwrap_or_else(|| natural_end(&out, &err, cap, status, program));
    RunOutput {
        stdout: out.bytes,
        stderr: err.bytes,
        end,
    }
}

/// Writes `input` to the child's stdin on a task of its own, then closes it.
fn feed_stdin(input: Option<Vec<u8>>, stdin: Option<tokio::process::ChildStdin>) {
    if let (Some(input), Some(mut stdin)) = (input, stdin) {
        // A command that exits without reading its input is not an error of ours.
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        });
    }
}

/// How a run that was neither timed out nor cancelled ended.
fn natural_end(
    out: &Capped,
    err: &Capped,
    cap: usize,
    status: std::io::Result<std::process::ExitStatus>,
    program: &str,
) -> RunEnd {
    if out.overflowed || err.overflowed {
        return RunEnd::OutputTooLarge(cap);
    }
    match status {
        Ok(status) => match (status.code(), exit_signal(&status)) {
            (Some(code), _) => RunEnd::Exited(code),
            (None, Some(signal)) => RunEnd::Signaled(signal),
            (None, None) => RunEnd::Exited(-1),
        },
        Err(e) => RunEnd::SpawnFailed(format!("cannot wait for `{program}`: {e}")),
    }
}

#[derive(Default)]
struct Capped {
    bytes: Vec<u8>,
    overflowed: bool,
}

/// Reads until end of file or until `cap` bytes; past the cap the process group is killed
/// so the writer does not block forever on a full pipe.
async fn read_capped(pipe: Option<impl AsyncRead + Unpin>, cap: usize, pid: Option<u32>) -> Capped {
    let mut capped = Capped::default();
    let Some(mut pipe) = pipe else {
        return capped;
    };
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(capped.bytes.len());
                capped.bytes.extend_from_slice(&buf[..n.min(room)]);
                if n > room {
                    capped.overflowed = true;
                    kill_group(pid);
                    break;
                }
            }
        }
    }
    capped
}

fn exit_signal(status: &std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

/// Kills the process group led by `pid` (the child was started with `process_group(0)`,
/// so its group id is its pid). Only called while the child is not yet reaped, so the
/// group id is still the child's.
fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid {
        crate::signal_group(pid, rustix::process::Signal::KILL);
    }
}

/// A signal number's usual name, for messages.
pub fn signal_name(signal: i32) -> String {
    use rustix::process::Signal;
    let name = [
        (Signal::HUP, "SIGHUP"),
        (Signal::INT, "SIGINT"),
        (Signal::QUIT, "SIGQUIT"),
        (Signal::ABORT, "SIGABRT"),
        (Signal::KILL, "SIGKILL"),
        (Signal::SEGV, "SIGSEGV"),
        (Signal::PIPE, "SIGPIPE"),
        (Signal::TERM, "SIGTERM"),
    ]
    .into_iter()
    .find(|(s, _)| s.as_raw() == signal);
    match name {
        Some((_, name)) => name.to_string(),
        None => format!("signal {signal}"),
    }
}
