//! The PID namespace approved commands share, one per toolbelt process.
//!
//! A namespace per command would part commands from each other: a later command could
//! not `kill` the dev server an earlier one started, and `$!` would name a process of
//! another namespace. So approved commands join one namespace (with a mount namespace
//! whose `/proc` shows only its processes), made once by a *holder*: `cat`
//! started as PID 1 of a new PID namespace ([`super::Isolation`]'s per-command set-up,
//! or where toolbelt is privileged forked once from the spawner thread, `spawner.rs`),
//! with SIGCHLD ignored so the kernel reaps the orphans it adopts, with an empty
//! environment and with its standard input a pipe whose only writer is toolbelt.
//!
//! When toolbelt ends, however it ends (SIGKILL included), the kernel closes that pipe,
//! `cat` reads end-of-file, the holder exits and the kernel kills everything left in the
//! namespace: a double-forked, non-dumpable daemon with its environment cleared dies
//! with it, with no marker to read. toolbelt keeps the namespace's descriptors open and
//! each command's `pre_exec` step joins them with `setns` (no namespace is created per
//! command: see BENCHMARKS.md for the cost).
//!
//! Where toolbelt is not privileged the holder also makes a user namespace (the user
//! mapped to itself), which commands join first: see the crate's `isolate` module on
//! what that costs set-uid programs.
//!
//! Jobs the settings keep past toolbelt's end cannot be in it, and are not.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, PoisonError};

use super::{IsolationStep, PID, needs_user};

/// The namespace's descriptors, for the `pre_exec` step (which may read an atomic, not
/// take a lock). -1 until a holder runs; `USER_NS` stays -1 where toolbelt is
/// privileged (no user namespace is made).
pub(super) static USER_NS: AtomicI32 = AtomicI32::new(-1);
pub(super) static PID_NS: AtomicI32 = AtomicI32::new(-1);
pub(super) static MOUNT_NS: AtomicI32 = AtomicI32::new(-1);

struct Holder {
    relay: Child,
    /// The pipe whose end-of-file ends the holder: held, never written.
    stdin: ChildStdin,
    /// Kept open for joining (PID, mount, and the user namespace if one was made);
    /// never closed while this process runs (a command being started on another thread
    /// may be about to use the descriptor numbers).
    namespaces: Vec<File>,
    /// The namespace's identity (inode of `/proc/<pid>/ns/pid`).
    inode: u64,
    /// The holder itself (`cat`, PID 1 inside), as toolbelt sees it.
    init: u32,
}

static HOLDER: Mutex<Option<Holder>> = Mutex::new(None);
/// Descriptors of holders that ended, kept open: see [`Holder::namespaces`].
static RETIRED: Mutex<Vec<File>> = Mutex::new(Vec::new());

/// Makes sure a holder runs (starting one, or a new one if it ended). False where it
/// cannot be started (said once): the command then runs without the namespace.
pub(super) fn ensure() -> bool {
    match try_ensure() {
        Ok(()) => true,
        Err(e) => {
            warn_cannot_start(&e);
            false
        }
    }
}

/// [`ensure`] without the warning: for the first command, which starts the holder before
/// it knows whether the machine grants the layer at all (where it does not, the probe
/// says so and this is no news).
pub(super) fn try_ensure() -> io::Result<()> {
    let mut holder = HOLDER.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(h) = holder.as_mut()
        && matches!(h.relay.try_wait(), Ok(None))
    {
        return Ok(());
    }
    if let Some(old) = holder.take() {
        RETIRED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(old.namespaces);
    }
    *holder = Some(start()?);
    Ok(())
}

/// Says once per process that approved commands go without the namespace.
pub(super) fn warn_cannot_start(e: &io::Error) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        tracing::warn!(
            "approved commands run without a PID namespace of their own: cannot start its holder ({e})"
        );
    });
}

/// The holder's command: `cat` reads its input until end-of-file and touches no signal
/// (a shell would install its own SIGCHLD handler and leave the orphans it adopts
/// unreaped); an empty environment, input a pipe, nothing out.
fn cat() -> Command {
    let mut command = Command::new("cat");
    command
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

fn start() -> io::Result<Holder> {
    if super::spawner::available() {
        return start_on_spawner();
    }
    let mut command = cat();
    let step = IsolationStep::install(&mut command);
    let user = needs_user();
    step.flags.store(PID | user, Ordering::Relaxed);
    // Safety: in PID 1 of the new namespace, before `exec`: one system call. An ignored
    // SIGCHLD survives `exec` and makes the kernel reap the orphans the holder adopts.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGCHLD, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut relay = command.spawn()?;
    let stdin = relay
        .stdin
        .take()
        .ok_or_else(|| io::Error::other("the holder has no input pipe"))?;
    let init = first_child(relay.id())
        .ok_or_else(|| io::Error::other("the holder's first process is not there"))?;
    holder(relay, stdin, init, user)
}

/// Where toolbelt is privileged: `cat` forked once, from the thread that starts approved
/// commands (`isolate/spawner.rs`), after that thread made a new mount namespace for
/// itself and a new PID namespace for its next child. `cat` is PID 1 there and
/// toolbelt's own child: no relay, no second copy of toolbelt. Before its `exec` it
/// does what PID 1 of a namespace made per command does (`Plan::first`): dies with
/// toolbelt's thread, keeps mounts from propagating out, mounts the namespace's `/proc`.
fn start_on_spawner() -> io::Result<Holder> {
    let mut command = cat();
    // Session and descriptors as for every child; no namespace step (made here).
    let _step = IsolationStep::install(&mut command);
    // Safety: in PID 1 of the new namespace, before `exec`: plain system calls on
    // constant strings. An ignored SIGCHLD survives `exec` and makes the kernel reap the
    // orphans the holder adopts.
    unsafe {
        command.pre_exec(|| {
            let mounted =
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 && super::mount_own_proc();
            if !mounted {
                return Err(io::Error::last_os_error());
            }
            libc::signal(libc::SIGCHLD, libc::SIG_IGN);
            Ok(())
        });
    }
    let spawned = super::spawner::on_thread(move || {
        super::spawner::make_holder_namespaces()?;
        command.spawn()
    })
    .unwrap_or_else(|| Err(io::Error::other("the spawner thread has ended")));
    let mut cat = spawned?;
    let stdin = cat
        .stdin
        .take()
        .ok_or_else(|| io::Error::other("the holder has no input pipe"))?;
    let init = cat.id();
    holder(cat, stdin, init, 0)
}

/// The holder whose PID 1 is `init`, its namespaces opened for joining; `relay` is
/// toolbelt's child (`init` itself where there is no relay).
fn holder(mut relay: Child, stdin: ChildStdin, init: u32, user: u8) -> io::Result<Holder> {
    let open = |kind: &str| File::open(format!("/proc/{init}/ns/{kind}"));
    let opened = (|| {
        let user_ns = if user != 0 { Some(open("user")?) } else { None };
        Ok::<_, io::Error>((user_ns, open("pid")?, open("mnt")?))
    })();
    let (user_ns, pid_ns, mount_ns) = match opened {
        Ok(all) => all,
        Err(e) => {
            let _ = relay.kill();
            let _ = relay.wait();
            return Err(e);
        }
    };
    let inode = std::os::unix::fs::MetadataExt::ino(&pid_ns.metadata()?);
    USER_NS.store(
        user_ns.as_ref().map_or(-1, AsRawFd::as_raw_fd),
        Ordering::Release,
    );
    PID_NS.store(pid_ns.as_raw_fd(), Ordering::Release);
    MOUNT_NS.store(mount_ns.as_raw_fd(), Ordering::Release);
    let mut namespaces = vec![pid_ns, mount_ns];
    namespaces.extend(user_ns);
    tracing::debug!("started the holder of approved commands' PID namespace (pid {init})");
    Ok(Holder {
        relay,
        stdin,
        namespaces,
        inode,
        init,
    })
}

/// The holder's two processes (its relay and `cat`), while it runs: toolbelt's own, like
/// the guardian, so a sweep for an owner's leftovers never reads them. The holder starts
/// after the first command's owner, and its empty environment would cost that sweep
/// `procfs::environ`'s whole re-read window (50 ms at the end of the session's first
/// command, issue 49).
pub(crate) fn holder_pids() -> Option<[u32; 2]> {
    let holder = HOLDER.lock().unwrap_or_else(PoisonError::into_inner);
    holder.as_ref().map(|h| [h.relay.id(), h.init])
}

/// The one child of the holder's relay: PID 1 of the namespace, as this process sees it.
fn first_child(relay: u32) -> Option<u32> {
    let children = std::fs::read_to_string(format!("/proc/{relay}/task/{relay}/children")).ok()?;
    children.split_whitespace().next()?.parse().ok()
}

/// The process id `pid` (as toolbelt sees it) has inside the shared namespace, which is
/// what a command there sees and can name (`kill`, `$!`). `pid` itself when the process
/// is not in a namespace below toolbelt's, or has ended.
pub fn namespace_pid(pid: u32) -> u32 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("NSpid:"))
                .and_then(|ids| ids.split_whitespace().last()?.parse().ok())
        })
        .unwrap_or(pid)
}

/// The process that has `ns_pid` inside this process's shared namespace, as toolbelt
/// sees it (for tests and displays that are given an id a command printed).
pub fn host_pid(ns_pid: u32) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|&pid| namespace_pid(pid) == ns_pid && in_shared(pid))
}

/// The process below `root` (a toolbelt, as this process sees it) that has `ns_pid`
/// in a PID namespace of its own: what a command under that toolbelt printed as `$!`,
/// found while the toolbelt runs (its namespace's processes are all below it).
pub fn host_pid_below(root: u32, ns_pid: u32) -> Option<u32> {
    let ours = std::fs::metadata("/proc/self/ns/pid")
        .ok()
        .map(|m| std::os::unix::fs::MetadataExt::ino(&m));
    let below = crate::procfs::descendants_of(root)
        .unwrap_or_else(|| crate::procfs::descendants(&crate::procfs::all(), root));
    below.into_iter().map(|p| p.pid).find(|&pid| {
        namespace_pid(pid) == ns_pid
            && std::fs::metadata(format!("/proc/{pid}/ns/pid"))
                .ok()
                .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
                != ours
    })
}

/// The id a command's own processes know it by: for a command started in the shared
/// namespace, its shell's id there (`leader` itself where it was forked into the
/// namespace, `spawner.rs`; else its relay's child, `leader` being the relay, outside);
/// else `leader` (a sealed command's id in its own namespace names nothing any other
/// command can reach).
pub fn command_pid(leader: u32) -> u32 {
    if in_shared(leader) {
        return namespace_pid(leader);
    }
    let inner = std::fs::read_to_string(format!("/proc/{leader}/task/{leader}/children"))
        .ok()
        .and_then(|c| c.split_whitespace().next()?.parse::<u32>().ok());
    match inner {
        Some(child) if in_shared(child) => namespace_pid(child),
        _ => leader,
    }
}

/// Whether `pid` is in this process's shared namespace.
fn in_shared(pid: u32) -> bool {
    let Some(inode) = HOLDER
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .map(|h| h.inode)
    else {
        return false;
    };
    std::fs::metadata(format!("/proc/{pid}/ns/pid"))
        .is_ok_and(|m| std::os::unix::fs::MetadataExt::ino(&m) == inode)
}

/// Ends the shared namespace now, as toolbelt's end does however it comes: closes the
/// holder's pipe, waits for it to exit, and with it the kernel ends every process in
/// the namespace. The next approved command starts a new one.
pub fn end_shared_namespace() {
    let mut holder = HOLDER.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(mut h) = holder.take() {
        drop(h.stdin);
        let _ = h.relay.wait();
        RETIRED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(h.namespaces);
    }
}
