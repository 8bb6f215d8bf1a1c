//! Starting a child, the one way toolbelt does it: in a new session and process group it
//! leads, with no controlling terminal and no inherited descriptor but 0-2, in a PID
//! namespace of its own where the kernel allows it ([`crate::isolate`]), with its owner's
//! marker in its environment, standard input `/dev/null` unless the caller wants a pipe.
//!
//! Every process toolbelt starts (shell commands, discovered and declared tools, MCP stdio
//! servers, language servers) goes through [`GroupCommand`], so none can forget what the
//! ending machinery relies on: the group is what one signal ends ([`crate::group`]), the
//! marker is how leftovers and the guardian find what left the group ([`crate::owner`]),
//! and the leader is recorded in the [`Owner`] before anything can reap it.
//!
//! The marker is set last, just before the spawn, so no environment a caller passes on
//! (a server's configured `env`, a declared tool's variables) can replace or remove it.
//! A caller that must change the command in ways this type does not know (the shell's
//! kernel sandbox installs a `pre_exec` step) does so through [`GroupCommand::configure`];
//! the only `unsafe` of this crate is the isolation step ([`crate::isolate`]), which runs
//! first.

use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::isolate::{Isolation, IsolationStep};
use crate::owner::{OWNER_VAR, Owner};

/// A command to start in its own process group, tagged with `owner`'s marker.
#[derive(Debug)]
pub struct GroupCommand<'a> {
    command: Command,
    owner: &'a Owner,
    isolation: IsolationStep,
}

impl<'a> GroupCommand<'a> {
    /// `program` (found on `PATH` as [`Command::new`] does), in a new session and group
    /// it leads ([`Isolation::SessionOnly`] until [`GroupCommand::isolation`] says
    /// more), standard input `/dev/null`; `owner` records it once it runs.
    pub fn new(program: impl AsRef<OsStr>, owner: &'a Owner) -> Self {
        let mut command = Command::new(program);
        command.stdin(Stdio::null());
        let isolation = IsolationStep::install(&mut command);
        isolation.set(Isolation::SessionOnly);
        GroupCommand {
            command,
            owner,
            isolation,
        }
    }

    /// How far the child is cut off (see [`Isolation`]; what the machine cannot grant
    /// is left out, as [`crate::isolate::support`] says).
    pub fn isolation(&mut self, isolation: Isolation) -> &mut Self {
        self.isolation.set(isolation);
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command.args(args);
        self
    }

    /// Adds variables to the inherited environment (never the owner marker: see the module
    /// docs).
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.command.envs(vars);
        self
    }

    /// The working directory.
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.command.current_dir(dir);
        self
    }

    /// Standard input (`/dev/null` unless set).
    pub fn stdin(&mut self, stdio: impl Into<Stdio>) -> &mut Self {
        self.command.stdin(stdio);
        self
    }

    /// Standard output.
    pub fn stdout(&mut self, stdio: impl Into<Stdio>) -> &mut Self {
        self.command.stdout(stdio);
        self
    }

    /// Standard error.
    pub fn stderr(&mut self, stdio: impl Into<Stdio>) -> &mut Self {
        self.command.stderr(stdio);
        self
    }

    /// A step of the caller's on the command before it starts, such as a sandbox's
    /// `pre_exec` hook.
    pub fn configure(&mut self, step: impl FnOnce(&mut Command)) -> &mut Self {
        step(&mut self.command);
        self
    }

    /// Starts the guardian first unless the kernel ends this child with toolbelt (see
    /// [`crate::guardian`]): every spawn passes here, so none can forget it.
    fn guard(&self) {
        if !self.isolation.ends_with_toolbelt() {
            crate::guardian::ensure_started();
        }
    }

    /// Starts it for synchronous callers (threads read its pipes).
    pub fn spawn_std(mut self) -> io::Result<std::process::Child> {
        self.guard();
        self.command.env(OWNER_VAR, self.owner.marker());
        let child = match self
            .isolation
            .spawn_joined(self.command, with_dir, |mut c| c.spawn())
        {
            Ok(spawned) => spawned?,
            Err(mut command) => command.spawn()?,
        };
        self.owner.started(child.id());
        Ok(child)
    }

    /// Starts it on tokio. `kill_on_drop`: whether dropping the child kills the leader
    /// (its group is the caller's to end either way).
    pub fn spawn(self, kill_on_drop: bool) -> io::Result<tokio::process::Child> {
        let owner = self.owner;
        let isolation = self.isolation.clone();
        let mut command = self.into_tokio(kill_on_drop);
        // On the thread in the shared namespace (see `crate::isolate`), in this runtime.
        let runtime = tokio::runtime::Handle::current();
        let joined = isolation.spawn_joined(
            command,
            |c| with_dir(c.as_std_mut()),
            move |mut c| {
                let _entered = runtime.enter();
                // Dropped here: see below.
                c.spawn()
            },
        );
        let child = match joined {
            Ok(spawned) => spawned?,
            Err(back) => {
                command = back;
                let child = command.spawn()?;
                // The command holds the parent's copies of pipe ends the caller passed as
                // stdio; dropping it now lets a reader see end-of-file when the child is
                // done.
                drop(command);
                child
            }
        };
        let pid = child
            .id()
            .ok_or_else(|| io::Error::other("the child exited before its pid could be read"))?;
        owner.started(pid);
        Ok(child)
    }

    /// The command as tokio's, for a library that spawns it itself (rmcp's child
    /// transport). The caller then hands the pid to [`Owner::started`].
    pub fn into_tokio(mut self, kill_on_drop: bool) -> tokio::process::Command {
        self.guard();
        self.command.env(OWNER_VAR, self.owner.marker());
        let mut command = tokio::process::Command::from(self.command);
        command.kill_on_drop(kill_on_drop);
        command
    }
}

/// Gives `command` toolbelt's working directory if it has none (for a start from the
/// thread in the shared namespace, whose own is that namespace's root); false when it
/// cannot be read.
fn with_dir(command: &mut Command) -> bool {
    if command.get_current_dir().is_some() {
        return true;
    }
    match std::env::current_dir() {
        Ok(dir) => {
            command.current_dir(dir);
            true
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs;

    #[tokio::test]
    async fn the_child_leads_its_group_and_carries_the_marker_over_a_callers_env() {
        let owner = Owner::new();
        let mut command = GroupCommand::new("sh", &owner);
        command
            .args(["-c", "read -r line; echo \"$line:$TOOLBELT_OWNER\""])
            .envs([(OWNER_VAR, "forged")])
            .stdout(Stdio::piped());
        let child = command.spawn(true).unwrap();
        let pid = child.id().unwrap();
        assert_eq!(procfs::stat(pid).map(|p| p.pgid), Some(pid));
        let out = child.wait_with_output().await.unwrap();
        // Standard input is /dev/null: `read` gets end-of-file at once, the line is empty.
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!(":{}", owner.marker())
        );
    }

    #[test]
    fn a_configure_step_reaches_the_command_and_the_owner_records_the_leader() {
        let owner = Owner::new();
        let mut command = GroupCommand::new("sh", &owner);
        command
            .args(["-c", "echo \"$FROM_STEP\""])
            .stdout(Stdio::piped())
            .configure(|c| {
                c.env("FROM_STEP", "yes");
            });
        let child = command.spawn_std().unwrap();
        let pid = child.id();
        // Not yet waited for, so the leader is there (alive or a zombie) and recorded.
        assert!(owner.processes().iter().any(|p| p.pid == pid));
        let out = child.wait_with_output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "yes");
    }
}
