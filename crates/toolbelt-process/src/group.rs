//! Process groups: the one way toolbelt signals a group and waits for it to be gone.
//!
//! Commands run in a new process group whose id is the leader's pid, so one signal
//! reaches the command, its children and theirs. Ending a group: SIGTERM to every
//! member, a short grace period for clean-up, then SIGKILL. Waiting counts only live
//! members: a zombie cannot run anything, and whoever is its parent reaps it.
//!
//! A group id is a pid. The caller must only signal a group whose leader it has not yet
//! reaped (the kernel keeps the id reserved until then) or whose members it knows to be
//! alive; a job whose shell ended long ago is ended through its owner marker instead
//! (see [`crate::owner`]), because its group id may be reused.

use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};

use crate::procfs;

/// How long a group gets between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_millis(300);

pub(crate) fn to_pid(raw: u32) -> Option<Pid> {
    // Pid 1 (init) and 0 are never ours to signal; a negative i32 would mean "a group".
    i32::try_from(raw)
        .ok()
        .filter(|p| *p > 1)
        .and_then(Pid::from_raw)
}

/// Sends `signal` to the group `pgid`. `false` when there is no such group (or the
/// number is not a group toolbelt could own).
pub fn signal_group(pgid: u32, signal: Signal) -> bool {
    to_pid(pgid).is_some_and(|pid| kill_process_group(pid, signal).is_ok())
}

/// Whether any process of the group still exists (zombies included).
pub fn group_exists(pgid: u32) -> bool {
    to_pid(pgid).is_some_and(|pid| test_kill_process_group(pid).is_ok())
}

/// SIGTERM to the group, then SIGKILL after `grace` if anything is left. Waits (without
/// blocking the runtime) until the group is gone or the grace period after SIGKILL ends.
pub async fn terminate_group(pgid: u32, grace: Duration) {
    if !signal_group(pgid, Signal::TERM) {
        return; // already gone
    }
    if wait_until_no_live_members(pgid, grace).await {
        return;
    }
    signal_group(pgid, Signal::KILL);
    wait_until_no_live_members(pgid, grace).await;
}

/// Ends groups from synchronous code (a `Drop`): SIGTERM to all, one bounded wait for
/// all of them, SIGKILL to whatever is left.
pub fn terminate_groups_blocking(pgids: &[u32], grace: Duration) {
    let any_alive = || pgids.iter().any(|&g| !live_members(g).is_empty());
    for &pgid in pgids {
        signal_group(pgid, Signal::TERM);
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline && any_alive() {
        std::thread::sleep(Duration::from_millis(10));
    }
    if !any_alive() {
        return;
    }
    for &pgid in pgids {
        signal_group(pgid, Signal::KILL);
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline && any_alive() {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until no process of the group is alive (zombies do not count), for at most
/// `limit`. A signal is delivered asynchronously, so a caller that reports "killed"
/// waits here first. Returns whether the group died.
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
    let mut pids: Vec<u32> = procfs::all()
        .into_iter()
        .filter(|p| p.pgid == pgid && p.is_alive())
        .map(|p| p.pid)
        .collect();
    pids.sort_unstable();
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_and_nonsense_are_never_signalled() {
        assert!(to_pid(0).is_none());
        assert!(to_pid(1).is_none());
        assert!(to_pid(u32::MAX).is_none());
        assert!(!signal_group(1, Signal::TERM));
    }

    #[tokio::test]
    async fn a_group_and_its_children_end() {
        let mut child = tokio::process::Command::new("sh")
            .args(["-c", "sleep 300 & sleep 300 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while live_members(pgid).len() < 3 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(live_members(pgid).len(), 3);
        terminate_group(pgid, KILL_GRACE).await;
        child.wait().await.unwrap();
        assert!(live_members(pgid).is_empty());
    }
}
