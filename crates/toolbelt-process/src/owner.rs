//! What a call leaves behind, found and ended.
//!
//! A process group is not enough to end everything a command started: `setsid`,
//! `setsid -f` and `nohup … &` in a new session leave the group, and `(sleep 1000 &)` or
//! `… & disown` orphan a child that lives on after the shell. Three facts find them:
//!
//! 1. **The owner marker.** Every process toolbelt starts gets `TOOLBELT_OWNER=<token>.<n>.<random>`
//!    in its environment, unique per call, job or server; the token is random per
//!    toolbelt ([`crate::guardian::instance_token`]), so no other process can guess it. Children inherit it,
//!    and `/proc/<pid>/environ` shows the environment a process was started with, so a
//!    process carries its call's marker wherever it moved.
//! 2. **The process tree.** toolbelt is a child subreaper ([`become_subreaper`]): an
//!    orphan re-parents to toolbelt instead of to init, so everything a call started stays
//!    below toolbelt. While a command runs, [`Owner::observe`] records (pid, start time) of
//!    everything below its shell, which catches a process that cleared its environment
//!    (`env -i`) but lived long enough to be seen.
//! 3. **The process group**, while it provably is the call's: members of the leader's
//!    group count as long as no other process holds the leader's pid (the kernel does not
//!    reuse a pid while a group of that id has members).
//!
//! The leftovers of a call are the live processes below toolbelt that one of these
//! names, and everything below them. They get SIGTERM, a grace period, then SIGKILL.
//! Each signal goes through a pidfd opened after checking that the pid still has the
//! start time that was found, so a reused pid is never signalled. Killed orphans are our
//! children (we are their subreaper): their zombies are reaped with `waitpid` on that
//! exact pid. The leader itself is never waited for here; tokio owns its status.
//!
//! Known limit: a process that clears its environment *and* leaves the tree within a
//! fraction of a second (`env -i setsid -f …`) can only be told from other calls' by
//! chance; it is ended at the latest when toolbelt exits ([`end_descendants_blocking`]
//! ends everything below toolbelt except background jobs configured to outlive it).
//! When toolbelt dies without running that, the guardian ([`crate::guardian`]) ends
//! every process carrying one of its markers.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::{
    PidfdFlags, Signal, WaitOptions, kill_process, pidfd_open, pidfd_send_signal, waitpid,
};

use crate::group::to_pid;
use crate::procfs::{self, ProcStat};

/// The environment variable that carries the owner marker.
pub const OWNER_VAR: &str = "TOOLBELT_OWNER";

static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);
static SUBREAPER: OnceLock<bool> = OnceLock::new();
/// Markers of owners whose processes must outlive toolbelt
/// (`tools.shell.killBackgroundOnExit: false`).
static KEPT: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Makes this process a child subreaper (once; later calls answer the first outcome).
/// Orphans of everything toolbelt starts then re-parent to toolbelt, not to init, and
/// stay in its process tree where [`Owner::kill_leftovers`] finds them; their exit
/// statuses come to toolbelt, which reaps the ones it kills.
pub fn become_subreaper() -> bool {
    *SUBREAPER.get_or_init(|| {
        // Any non-zero value sets the attribute; our own pid is the natural one.
        rustix::process::set_child_subreaper(rustix::process::getpid().into()).is_ok()
    })
}

fn is_subreaper() -> bool {
    SUBREAPER.get().copied().unwrap_or(false)
}

/// A process a call left running, as reported to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    /// Its process id as the command knew it (its id in the shared PID namespace where
    /// the command ran in one: what `$!` said).
    pub pid: u32,
    /// The short command name (`sleep`), empty when it could not be read.
    pub name: String,
}

/// The processes of one call, job or server: its marker, its leader and what was seen
/// below the leader while it ran.
#[derive(Debug)]
pub struct Owner {
    marker: String,
    leader: Mutex<Option<ProcStat>>,
    seen: Mutex<HashSet<(u32, u64)>>,
    /// When the owner was made ([`procfs::ticks_since_boot`]). Its marker exists from then
    /// on only, so a process started earlier cannot carry it, and its environment is
    /// not read: the guardian, servers and older jobs cost a sweep nothing, however many
    /// there are and whatever their environment (one started with `env -i` would
    /// otherwise cost [`procfs::environ`]'s whole re-read window at every sweep).
    born: Option<u64>,
}

impl Default for Owner {
    fn default() -> Self {
        Self::new()
    }
}

impl Owner {
    /// A fresh owner. Also makes toolbelt a subreaper, so no caller can forget it before
    /// it spawns anything (the guardian starts at the spawn itself, where it is needed:
    /// [`crate::GroupCommand`]).
    pub fn new() -> Owner {
        become_subreaper();
        let n = NEXT_OWNER.fetch_add(1, Ordering::Relaxed);
        // A command reads its own marker: the random last part keeps it from naming any
        // other owner's (a kept job's, which the guardian spares) from it.
        let unguessable =
            std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), n);
        Owner {
            marker: format!(
                "{}.{n}.{unguessable:016x}",
                crate::guardian::instance_token()
            ),
            leader: Mutex::new(None),
            seen: Mutex::new(HashSet::new()),
            born: procfs::ticks_since_boot(),
        }
    }

    /// An owner that reads the environment of every process below toolbelt, however old
    /// (as one made before them would).
    #[cfg(test)]
    pub(crate) fn born_before_everything() -> Owner {
        Owner {
            born: None,
            ..Owner::new()
        }
    }

    /// The marker value, `<token>.<n>.<64 random bits in hex>`.
    pub fn marker(&self) -> &str {
        &self.marker
    }

    /// The environment entry to give the leader: `(OWNER_VAR, marker)`, for a process the
    /// caller starts itself rather than through [`crate::GroupCommand`]. Such a process is
    /// in no namespace that ends with toolbelt, so this also starts the guardian.
    pub fn env(&self) -> (&'static str, &str) {
        crate::guardian::ensure_started();
        (OWNER_VAR, &self.marker)
    }

    /// Records the leader, right after it was spawned (before anything can reap it).
    pub fn started(&self, pid: u32) {
        *self.leader.lock().unwrap_or_else(PoisonError::into_inner) = procfs::stat(pid);
    }

    /// Records everything below the leader now, while the leader is alive and orphans
    /// still hang below it. Cheap enough to call a few times a second: it walks the
    /// leader's tree through the kernel's children lists (the size of the tree, not of
    /// the machine), or scans `/proc` once where the kernel keeps no such lists.
    pub fn observe(&self) {
        let Some(leader) = self.leader() else {
            return;
        };
        let same = |p: &ProcStat| p.pid == leader.pid && p.start_time == leader.start_time;
        let below = procfs::descendants_of(leader.pid)
            .unwrap_or_else(|| procfs::descendants(&procfs::all(), leader.pid));
        // The leader still alive after the walk was alive through it (a pid is not
        // reused while its process lives): what was found hung below it. Gone, what
        // hangs below its pid now is not ours.
        if !procfs::stat(leader.pid).is_some_and(|p| same(&p)) {
            return;
        }
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        for p in below {
            if p.is_alive() {
                seen.insert((p.pid, p.start_time));
            }
        }
    }

    /// Lets this owner's processes outlive toolbelt: [`end_descendants_blocking`] spares
    /// them and everything below them.
    pub fn keep_on_exit(&self) {
        let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
        if !kept.contains(&self.marker) {
            kept.push(self.marker.clone());
            crate::guardian::keep(&self.marker);
        }
    }

    fn leader(&self) -> Option<ProcStat> {
        *self.leader.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The live processes that belong to this owner now (the leader included while it
    /// lives), each with the identity it was found with.
    pub fn processes(&self) -> Vec<ProcStat> {
        let me = std::process::id();
        // As a subreaper everything ours is below us: walk our tree (its size, not the
        // machine's, is the cost; a hook or a command pays it at every end).
        let mut candidates: Vec<ProcStat> = if is_subreaper() {
            procfs::descendants_of(me).unwrap_or_else(|| procfs::descendants(&procfs::all(), me))
        } else {
            procfs::all().into_iter().filter(|p| p.pid != me).collect()
        };
        // The shared namespace's holder is toolbelt's own (see `isolate::holder_pids`),
        // and so is the guardian, which may start after this owner was made.
        if let Some(holder) = crate::isolate::holder_pids() {
            candidates.retain(|p| !holder.contains(&p.pid));
        }
        if let Some(guardian) = crate::guardian::pid() {
            candidates.retain(|p| p.pid != guardian);
        }
        let leader = self.leader();
        // The leader's group is the call's only while no other process holds its pid.
        let group = leader.and_then(|l| match procfs::stat(l.pgid) {
            None => Some(l.pgid),
            Some(h) if h.start_time == l.start_time && l.pgid == l.pid => Some(l.pgid),
            Some(_) => None,
        });
        let seen = self
            .seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        // Zombies we adopted count too: nobody else will reap them (a group kill on
        // timeout leaves the call's orphans dead but unreaped, as children of toolbelt).
        let ours = |p: &ProcStat| p.is_alive() || p.ppid == me;
        let seeds: Vec<u32> = candidates
            .iter()
            .filter(|p| ours(p))
            .filter(|p| {
                leader.is_some_and(|l| l.pid == p.pid && l.start_time == p.start_time)
                    || group == Some(p.pgid)
                    || seen.contains(&(p.pid, p.start_time))
                    || (self.born.is_none_or(|born| p.start_time >= born)
                        && procfs::has_env(p.pid, OWNER_VAR, &self.marker))
            })
            .map(|p| p.pid)
            .collect();
        below_and_including(&candidates, &seeds)
            .into_iter()
            .filter(ours)
            .collect()
    }

    /// Ends this owner's processes except its leader (which the caller ends and tokio
    /// reaps): SIGTERM, up to `grace` for them to exit, SIGKILL to the rest, up to
    /// `grace` again. Returns what was found running.
    pub async fn kill_leftovers(&self, grace: Duration) -> Vec<Leftover> {
        self.kill(grace, false).await
    }

    /// Ends this owner's processes, the leader too when `with_leader` (a job's shell).
    /// Individual processes are signalled, never a group id that may have been reused.
    pub async fn kill(&self, grace: Duration, with_leader: bool) -> Vec<Leftover> {
        let mut sweep = Sweep::of(&[self], with_leader);
        let found = sweep.leftovers();
        if sweep.settle() {
            return found;
        }
        sweep.signal(Signal::TERM);
        if !wait_async(&mut sweep, grace).await {
            sweep.signal(Signal::KILL);
            wait_async(&mut sweep, grace.max(AFTER_KILL)).await;
        }
        found
    }

    /// [`Owner::kill`] from synchronous code (a `Drop`).
    pub fn kill_blocking(&self, grace: Duration, with_leader: bool) -> Vec<Leftover> {
        kill_all_blocking(&[self], grace, with_leader)
    }
}

/// Ends the processes of several owners at once (one grace period for all of them),
/// their leaders too when `with_leader`. Returns what was found running.
pub fn kill_all_blocking(owners: &[&Owner], grace: Duration, with_leader: bool) -> Vec<Leftover> {
    let mut sweep = Sweep::of(owners, with_leader);
    let found = sweep.leftovers();
    if sweep.settle() {
        return found;
    }
    sweep.signal(Signal::TERM);
    if !wait_blocking(&mut sweep, grace) {
        sweep.signal(Signal::KILL);
        wait_blocking(&mut sweep, grace.max(AFTER_KILL));
    }
    found
}

/// `seeds` and every candidate below one of them, by parent links.
pub(crate) fn below_and_including(candidates: &[ProcStat], seeds: &[u32]) -> Vec<ProcStat> {
    let mut children: HashMap<u32, Vec<ProcStat>> = HashMap::new();
    for p in candidates {
        children.entry(p.ppid).or_default().push(*p);
    }
    let by_pid: HashMap<u32, ProcStat> = candidates.iter().map(|p| (p.pid, *p)).collect();
    let mut found: HashMap<u32, ProcStat> = HashMap::new();
    let mut queue: Vec<u32> = seeds.to_vec();
    while let Some(pid) = queue.pop() {
        let Some(p) = by_pid.get(&pid) else { continue };
        if found.insert(pid, *p).is_some() {
            continue;
        }
        queue.extend(children.get(&pid).into_iter().flatten().map(|c| c.pid));
    }
    let mut found: Vec<ProcStat> = found.into_values().collect();
    found.sort_unstable_by_key(|p| p.pid);
    found
}

/// Processes being ended, and the pids (tokio's children) never to wait for.
struct Sweep {
    targets: Vec<ProcStat>,
    spare: Vec<u32>,
}

impl Sweep {
    fn of(owners: &[&Owner], with_leader: bool) -> Sweep {
        let mut targets: Vec<ProcStat> = Vec::new();
        let mut spare = Vec::new();
        for owner in owners {
            let leader = owner.leader();
            spare.extend(leader.map(|l| l.pid));
            let is_leader = |p: &ProcStat| {
                leader.is_some_and(|l| l.pid == p.pid && l.start_time == p.start_time)
            };
            for p in owner.processes() {
                if (with_leader || !is_leader(&p)) && !targets.iter().any(|t| t.pid == p.pid) {
                    targets.push(p);
                }
            }
        }
        Sweep { targets, spare }
    }

    fn leftovers(&self) -> Vec<Leftover> {
        self.targets
            .iter()
            .filter(|p| p.is_alive())
            .map(|p| Leftover {
                pid: crate::isolate::namespace_pid(p.pid),
                name: procfs::name(p.pid).unwrap_or_default(),
            })
            .collect()
    }

    fn signal(&self, signal: Signal) {
        for p in &self.targets {
            signal_exact(p, signal);
        }
    }

    /// Waits at most `most` for one of the targets still running to end: on their
    /// pidfds, which become readable when the process exits, so the wait ends with the
    /// first exit rather than on a clock (the end of a session waits for its processes,
    /// usually well under a millisecond). A zombie waiting for its parent to reap it has
    /// no such event: `most` bounds the wait for it.
    fn pause(&self, most: Duration) {
        let fds: Vec<_> = self
            .targets
            .iter()
            .filter(|p| p.is_alive())
            .filter_map(|p| to_pid(p.pid))
            .filter_map(|pid| pidfd_open(pid, PidfdFlags::empty()).ok())
            .collect();
        if fds.is_empty() {
            std::thread::sleep(most.min(Duration::from_millis(1)));
            return;
        }
        let mut polled: Vec<_> = fds
            .iter()
            .map(|fd| rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN))
            .collect();
        let timeout = rustix::event::Timespec::try_from(most).unwrap_or(rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 5_000_000,
        });
        let _ = rustix::event::poll(&mut polled, Some(&timeout));
    }

    /// Reaps what we may and drops what is finished; `true` when nothing is left.
    fn settle(&mut self) -> bool {
        let me = std::process::id();
        let spare = &self.spare;
        self.targets.retain_mut(|p| {
            let Some(now) = procfs::stat(p.pid).filter(|n| n.start_time == p.start_time) else {
                return false; // gone (perhaps reaped by its parent)
            };
            // What `pause` waits on: only a target still running can end.
            *p = now;
            if now.is_alive() {
                return true;
            }
            if now.ppid == me && !spare.contains(&p.pid) {
                // An orphan we adopted: its status is ours to collect, on this exact pid.
                if let Some(pid) = to_pid(p.pid) {
                    let _ = waitpid(Some(pid), WaitOptions::NOHANG);
                }
                return false;
            }
            // A zombie whose parent (also being ended, or toolbelt's runtime) reaps it;
            // once that parent dies it is re-parented to us and reaped above.
            now.ppid != me && procfs::stat(now.ppid).is_some_and(|pp| pp.is_alive())
        });
        self.targets.is_empty()
    }
}

/// Sends `signal` to the process found as `p`, only if the pid still names it.
pub(crate) fn signal_exact(p: &ProcStat, signal: Signal) -> bool {
    let Some(pid) = to_pid(p.pid) else {
        return false;
    };
    let same = || procfs::stat(p.pid).is_some_and(|now| now.start_time == p.start_time);
    match pidfd_open(pid, PidfdFlags::empty()) {
        // The pidfd pins whatever process holds the pid now; the start time says whether
        // that is the one found. After this check the pid cannot change under us.
        Ok(fd) => same() && pidfd_send_signal(&fd, signal).is_ok(),
        // Kernels before 5.3: a plain kill after the same check, a window of
        // microseconds instead of none.
        Err(Errno::NOSYS) => same() && kill_process(pid, signal).is_ok(),
        Err(_) => false,
    }
}

async fn wait_async(sweep: &mut Sweep, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_millis(1);
    loop {
        if sweep.settle() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        // Most processes end within a millisecond of the signal: look again soon, then
        // less often.
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(POLL_MOST);
    }
}

/// The longest pause between two looks at processes being ended.
const POLL_MOST: Duration = Duration::from_millis(5);

/// How long to wait, at most, for processes sent SIGKILL to die and be reaped. SIGKILL
/// cannot be ignored, so the wait ends as soon as they are gone (usually at once); the
/// bound only matters on a loaded machine, where a shorter one left adopted zombies
/// unreaped.
pub(crate) const AFTER_KILL: Duration = Duration::from_secs(5);

fn wait_blocking(sweep: &mut Sweep, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if sweep.settle() {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        sweep.pause((deadline - now).min(POLL_MOST));
    }
}

/// Ends every process below toolbelt, except those of owners marked
/// [`Owner::keep_on_exit`] and everything below them: the last step of every way
/// toolbelt ends (normal exit, Ctrl-C twice, SIGTERM, SIGHUP). MCP servers, background
/// jobs, and whatever any call left go here if nothing ended them before. Returns how
/// many processes it found.
pub fn end_descendants_blocking(grace: Duration) -> usize {
    let me = std::process::id();
    let below =
        procfs::descendants_of(me).unwrap_or_else(|| procfs::descendants(&procfs::all(), me));
    // The guardian is below us too; it must see us end, not be ended by us.
    let guardian = crate::guardian::pid();
    let below: Vec<ProcStat> = below
        .into_iter()
        .filter(|p| Some(p.pid) != guardian)
        .collect();
    let kept_markers = KEPT.lock().unwrap_or_else(PoisonError::into_inner).clone();
    // No environment is read without a kept job to look for, nor the holder's (toolbelt's
    // own, with an empty environment that costs `procfs::environ`'s whole re-read window).
    let holder = crate::isolate::holder_pids().unwrap_or_default();
    let kept_roots: Vec<u32> = below
        .iter()
        .filter(|p| !kept_markers.is_empty() && p.is_alive() && !holder.contains(&p.pid))
        .filter(|p| procfs::env_value(p.pid, OWNER_VAR).is_some_and(|m| kept_markers.contains(&m)))
        .map(|p| p.pid)
        .collect();
    let kept: HashSet<u32> = below_and_including(&below, &kept_roots)
        .iter()
        .map(|p| p.pid)
        .collect();
    // The holder of the approved commands' namespace is not ended here: it ends itself
    // when toolbelt does (its input pipe closes, and the kernel then ends whatever is
    // left in the namespace), as after a SIGKILL. Ending it here cost a wait for the
    // teardown of its relay, a fork of toolbelt: most of a millisecond at the end of
    // every session that ran an approved command (issue 49). What runs inside the
    // namespace is still ended here, with the grace period.
    let targets: Vec<ProcStat> = below
        .into_iter()
        .filter(|p| p.is_alive() && !kept.contains(&p.pid) && !holder.contains(&p.pid))
        .collect();
    let count = targets.len();
    if count == 0 {
        return 0;
    }
    let mut sweep = Sweep {
        targets,
        spare: Vec::new(),
    };
    sweep.signal(Signal::TERM);
    if !wait_blocking(&mut sweep, grace) {
        sweep.signal(Signal::KILL);
        wait_blocking(&mut sweep, grace.max(AFTER_KILL));
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    fn spawn_tagged(owner: &Owner, script: &str) -> std::process::Child {
        let (key, value) = owner.env();
        let child = std::process::Command::new("sh")
            .args(["-c", script])
            .env(key, value)
            .process_group(0)
            .spawn()
            .unwrap();
        owner.started(child.id());
        child
    }

    fn wait_for_file(path: &std::path::Path) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(text) = std::fs::read_to_string(path)
                && text.ends_with('\n')
            {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "{} never written",
                path.display()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn gone(pid: u32) -> bool {
        procfs::stat(pid).is_none_or(|p| !p.is_alive())
    }

    #[test]
    fn a_new_session_orphan_is_found_by_its_marker_and_ended() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let owner = Owner::new();
        let other = Owner::new();
        let mut child = spawn_tagged(
            &owner,
            &format!("setsid sleep 300 & echo $! > {}; wait", pidfile.display()),
        );
        let mut bystander = spawn_tagged(&other, "sleep 300");
        let pid: u32 = wait_for_file(&pidfile).trim().parse().unwrap();
        // setsid may fork once more when it leads a group: wait until the sleep runs.
        let deadline = Instant::now() + Duration::from_secs(20);
        while !owner
            .processes()
            .iter()
            .any(|p| procfs::name(p.pid).as_deref() == Some("sleep"))
        {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(5));
        }
        let killed = owner.kill_blocking(Duration::from_secs(2), true);
        assert!(killed.iter().any(|l| l.name == "sleep"), "{killed:?}");
        child.wait().unwrap();
        assert!(gone(pid), "the setsid sleep {pid} survived");
        assert!(owner.processes().is_empty());
        assert!(
            procfs::stat(bystander.id()).is_some_and(|p| p.is_alive()),
            "another owner's process was killed"
        );
        bystander.kill().unwrap();
        bystander.wait().unwrap();
    }
}
