//! Starting a command and ending it, with nothing left behind.
//!
//! Every command runs as `bash -c` (or `sh -c` where there is no bash) in a *new process
//! group* whose id is the shell's PID, so one signal to the group reaches the shell, its
//! children and their children. Standard input is `/dev/null`: a command that waits for
//! input gets end-of-file at once instead of hanging the agent (Qwen Code and goose users
//! lost hours to this). Pagers and git's credential prompts are switched off through the
//! environment, and git gets editors that need no terminal. Standard output and standard error share one pipe, so the output arrives
//! interleaved exactly in the order the command wrote it.
//!
//! Ending a group: SIGTERM to every member, a short grace period for clean-up, then
//! SIGKILL; the shell itself is reaped by tokio, so no zombie of ours remains. The group
//! functions live in `toolbelt-process`, shared with discovered tools, MCP servers and
//! the binary's exit; so does the [`Owner`] whose marker every command's environment
//! carries, which finds what left the group (`setsid`, `nohup`, orphans) when the call
//! ends.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

use std::sync::Arc;
use tokio::net::unix::pipe;
use tokio::process::Child;

use toolbelt_process::log::{CappedLog, LogBudget, copy_to_log, spawn_log_writer};
use toolbelt_process::{GroupCommand, Isolation};

use super::environment::EnvironmentPolicy;
use super::sandbox::{Confinement, PreparedSandbox};

#[cfg(test)]
pub(crate) use toolbelt_process::live_members;
pub(crate) use toolbelt_process::{KILL_GRACE, Owner, terminate_group};

/// Environment added to every command.
pub(crate) const EXTRA_ENV: &[(&str, &str)] = &[
    ("TOOLBELT", "1"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    // There is no terminal for an editor: `true` keeps the message git prepared (amend,
    // merge, revert) and leaves a fresh commit's empty, which git refuses with a message
    // the result turns into "pass -m" (see `waiting`).
    ("GIT_EDITOR", "true"),
    // An interactive rebase with an unedited todo list would silently rebase everything
    // as it stands: it fails instead, saying why.
    (
        "GIT_SEQUENCE_EDITOR",
        "echo 'toolbelt: no editor for the rebase todo list (there is no terminal); set GIT_SEQUENCE_EDITOR to a command that edits it' >&2; false",
    ),
];

/// Where the command's output goes.
pub(crate) enum OutputTarget {
    /// A pipe the caller reads (foreground commands).
    Pipe,
    /// A file written through a writer process of the job's own, at most `cap` bytes
    /// (a background job kept past toolbelt's exit: see `toolbelt_process::log`).
    KeptFile { file: std::fs::File, cap: u64 },
    /// A file written through a pipe by a thread of toolbelt's, at most `cap` bytes and
    /// what the session's `budget` grants (background jobs; see `toolbelt_process::log`).
    CappedFile {
        file: std::fs::File,
        cap: u64,
        budget: Arc<LogBudget>,
    },
}

/// A started command.
pub(crate) struct RunningShell {
    pub child: Child,
    /// The shell's PID, which is also the process group id.
    pub pid: u32,
    /// The read end of the output pipe, for [`OutputTarget::Pipe`].
    pub output: Option<pipe::Receiver>,
    /// Completes when the copy into the log is done, for [`OutputTarget::CappedFile`].
    pub log_copied: Option<tokio::sync::oneshot::Receiver<()>>,
}

/// The shell to run commands with: bash when present, else sh.
pub(crate) fn shell_program() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("bash"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

/// Starts `command` in `cwd` in a new process group, tagged with `owner`'s marker (the
/// one spawner of `toolbelt-process`; the environment policy and the sandbox are its
/// configure steps).
pub(crate) fn spawn(
    command: &str,
    cwd: &Path,
    target: OutputTarget,
    sandbox: Option<PreparedSandbox>,
    env: &EnvironmentPolicy,
    owner: &Owner,
    namespace: bool,
) -> io::Result<RunningShell> {
    let mut cmd = GroupCommand::new(shell_program(), owner);
    cmd.args([OsStr::new("-c"), OsStr::new(command)])
        .current_dir(cwd)
        .envs(EXTRA_ENV.iter().copied())
        .configure(|c| env.apply(c));
    // Approved commands share toolbelt's PID namespace, which the kernel ends with
    // toolbelt: a job kept past that end stays outside it, and the person's
    // `tools.shell.processNamespace: false` keeps every command outside it.
    // A command nobody approved is sealed instead (below): asking for the shared
    // namespace first would start its holder for nothing.
    let sealed = sandbox
        .as_ref()
        .is_some_and(|s| s.confinement() == Confinement::ReadOnly);
    let kept = matches!(target, OutputTarget::KeptFile { .. });
    if !kept && namespace && !sealed {
        cmd.isolation(Isolation::Processes);
    }
    let mut log_copied = None;
    let reader = match target {
        OutputTarget::Pipe => {
            let (reader, writer) = io::pipe()?;
            cmd.stdout(writer.try_clone()?).stderr(writer);
            Some(reader)
        }
        OutputTarget::KeptFile { file, cap } => {
            // The writer is spawned first, so the job's shell is the owner's leader.
            // Where it cannot start, the command writes the file itself.
            match spawn_log_writer(file.try_clone()?, cap, owner) {
                Ok((writer, _reaped_by_tokio)) => {
                    cmd.stdout(writer.try_clone()?).stderr(writer);
                }
                Err(_) => {
                    cmd.stdout(file.try_clone()?).stderr(file);
                }
            }
            None
        }
        OutputTarget::CappedFile { file, cap, budget } => {
            // The copy starts before the command and ends at end-of-file: when the
            // command's processes are done writing, or at once if it never starts.
            // Where no thread can be started, the command writes the file itself.
            let (reader, writer) = io::pipe()?;
            let log = CappedLog::new(file.try_clone()?, cap, Some(budget));
            match copy_to_log(reader, log) {
                Ok(copied) => {
                    cmd.stdout(writer.try_clone()?).stderr(writer);
                    log_copied = Some(copied);
                }
                Err(_) => {
                    cmd.stdout(file.try_clone()?).stderr(file);
                }
            }
            None
        }
    };
    if let Some(sandbox) = sandbox {
        // A command nobody approved is also sealed off from the network and, through a
        // user namespace where toolbelt is unprivileged, from the machine's processes.
        if sealed {
            cmd.isolation(Isolation::Sealed);
        }
        cmd.configure(|c| sandbox.install(c));
    }
    // The spawner drops its copies of the pipe's write end, so the reader sees
    // end-of-file when the command's processes are done writing.
    let child = cmd.spawn(false)?;
    let pid = child
        .id()
        .ok_or_else(|| io::Error::other("the command exited before its PID could be read"))?;
    let output = match reader {
        Some(r) => Some(pipe::Receiver::from_owned_fd(r.into())?),
        None => None,
    };
    Ok(RunningShell {
        child,
        pid,
        output,
        log_copied,
    })
}
