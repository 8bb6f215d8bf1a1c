#![cfg_attr(test, allow(clippy::too_many_lines))]
//! Ending what toolbelt started, in one place: the shell tool, discovered tools, MCP
//! servers and the binary's exit all use these functions, so there is one way to kill
//! a process group and one notion of "what this call left behind".
//!
//! # Brief overview
//!
//! - [`group`]: signalling a process group (SIGTERM, a grace period, SIGKILL) and
//!   asking whether any member is still alive. A group is the first line: one signal
//!   reaches a command and all its ordinary children.
//! - [`owner`]: what a group cannot reach. A child can leave its group (`setsid`,
//!   `setsid -f`, `nohup … &` in a new session) or its parent can exit so it is
//!   orphaned (`(sleep 1000 &)`, `… & disown`). Every process toolbelt starts carries an
//!   *owner marker* in its environment (`TOOLBELT_OWNER=<token>.<n>.<random>`), inherited by
//!   everything it starts; toolbelt is a *child subreaper*, so orphans re-parent to it
//!   instead of to init and stay in its process tree. When a call ends, its leftovers are
//!   the processes below toolbelt that carry its marker, or that were seen below its
//!   shell while it ran, and everything below those.
//! - [`guardian`]: what ends toolbelt's processes when toolbelt dies without ending
//!   them itself (SIGKILL, an abort, an uncaught signal): a small process started with
//!   the first owner that, at toolbelt's end, ends everything carrying its markers.
//! - [`procfs`]: the few `/proc` fields all of this reads.
//! - [`log`]: a child's log file, capped (per log and per session), and the thread that
//!   copies a child's output into it.
//! - [`isolate`]: what the kernel cuts every child off from: the terminal (a session of
//!   its own), inherited descriptors, and where allowed the machine's processes (a PID
//!   namespace whose end ends everything in it) and, for unasked commands, the network.
//! - [`GroupCommand`]: the one way to start a child so that all of the above applies to
//!   it: its own session and process group, the owner marker (set last, so no caller's environment
//!   replaces it), the leader recorded in its [`Owner`].
//! - [`run`]: a command run to its end on that (discovered and declared tools, hooks):
//!   its input, a time limit, output caps and cancellation, and nothing it started left
//!   behind.
//!
//! Killing goes through a pidfd where the kernel has one, after checking that the pid
//! still names the process that was found (same start time), so a pid reused in the
//! meantime is never signalled. Reaping: an orphan adopted by toolbelt is our child, so
//! its zombie is reaped here, with `waitpid` on that exact pid. Never `waitpid(-1)`:
//! tokio owns the exit statuses of the children it spawned.
//!
//! Linux only (`/proc`, `PR_SET_CHILD_SUBREAPER`), like the rest of toolbelt's process
//! handling.

#![warn(missing_docs, unreachable_pub)]

pub mod group;
pub mod guardian;
pub mod isolate;
pub mod log;
pub mod owner;
pub mod procfs;
pub mod run;
mod spawn;

pub use group::{
    KILL_GRACE, group_exists, live_members, signal_group, terminate_group,
    terminate_groups_blocking, wait_until_no_live_members,
};
pub use isolate::Isolation;
pub use spawn::GroupCommand;

pub use owner::{
    Leftover, OWNER_VAR, Owner, become_subreaper, end_descendants_blocking, kill_all_blocking,
};
