//! What every child is cut off from, by the kernel: its own session (no controlling
//! terminal), no descriptor but 0-2, and where the kernel allows it its own PID namespace
//! with a `/proc` of that namespace only, and (for a command nobody approved) its own,
//! empty network namespace.
//!
//! # How a command starts
//!
//! [`crate::GroupCommand`] installs one `pre_exec` step, first, before any caller's (the
//! shell sandbox's Landlock and seccomp come after it and would refuse these calls).
//! In the forked child it:
//!
//! 1. calls `setsid`: a new session and process group it leads, no controlling terminal,
//!    so `/dev/tty` cannot be opened and no terminal ioctl (`TIOCSTI`, `TIOCSPGRP`) reaches
//!    the person's terminal through it;
//! 2. marks every descriptor from 3 up close-on-exec (`close_range`), so whatever
//!    toolbelt's parent left open (`>&7`) is not inherited;
//! 3. for [`Isolation::Processes`] (approved commands): joins the PID and mount
//!    (and, unprivileged, user) namespaces every approved command shares (see
//!    `isolate/shared.rs`: made once, ended by the
//!    kernel with toolbelt) with `setns`, and forks the command inside them; the first
//!    child stays outside as its relay (below). Where toolbelt is privileged the command
//!    is instead forked once, from a thread that joined them (`isolate/spawner.rs`):
//!    nothing is left to join, and no relay is needed;
//! 4. for [`Isolation::Sealed`] (the commands nobody approved): joins the network
//!    namespace, with no interface up, that unasked commands share (`isolate/offline.rs`,
//!    made once; through the user namespace that owns it where toolbelt is not
//!    privileged), `unshare`s a PID and mount namespace of its own, then forks the
//!    process that is PID 1 of the
//!    new namespace. It sets `PR_SET_PDEATHSIG` to SIGKILL, mounts a `/proc` of its own
//!    namespace, reports success over a pipe and goes on to `exec` the command: the
//!    command is the namespace's init, so no copy of toolbelt's memory (its environment,
//!    the model's key) is left inside for a command to read through `/proc/1/mem`. When
//!    it exits the kernel kills everything left in the namespace. The first child (the
//!    *relay*, the one toolbelt sees and records) closes every descriptor, waits for it
//!    and ends the way it ended (its exit code, or the same signal). An init ignores
//!    termination signals from outside that it does not handle, so the relay turns the
//!    ones its process group receives (toolbelt ending the call) into SIGKILL of the
//!    namespace, and then ends by the signal it was sent.
//!
//! So a daemon the command leaves behind, double-forked, non-dumpable or with its
//! environment cleared, dies when the command's main process does, however toolbelt
//! ends; nothing inside can name toolbelt, the guardian or any other process by PID
//! (`kill`, `prlimit`, `setpriority` reach only the namespace), and `/proc` shows only the
//! namespace's processes, so no other process's environment can be read.
//!
//! **Cost.** One more `fork` and the namespaces' creation per command (measured in
//! BENCHMARKS.md against an unconfined spawn). The relay and PID 1 never allocate:
//! every path and map line is prepared in the parent, and only system calls run after
//! `fork`. A command cannot kill itself by a signal from inside its namespace (`kill
//! $$` is ignored by an init), only from outside.
//!
//! **Where the kernel refuses** (no user namespaces for unprivileged users, a container
//! without `CAP_SYS_ADMIN`): probed once per process ([`support`]) by running the whole
//! set-up in a child that exits before `exec`; a layer that cannot be had is left out and
//! named by `toolbelt sandbox --verify`.
//!
//! **As a normal user** both layers need a user namespace, the user mapped to itself
//! (`setgroups` denied). For approved commands that has a price, which the setting
//! `tools.shell.processNamespace: false` declines (the person's settings only): set-uid
//! programs (`sudo`, `passwd`, `fusermount`, `newuidmap`) run without their privilege, and
//! files of other users show as `nobody`. Access is unchanged: the kernel still checks
//! the real user and groups. By default the namespace is used, so the kernel, not a
//! marker scan, ends what approved commands leave (issue 40).

#![allow(unsafe_code)]

use std::ffi::CStr;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};

/// How far a child is cut off beyond its session and descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Isolation {
    /// Session and descriptors only: the default for every child, and what a job kept
    /// past toolbelt's end gets (a namespace that dies with toolbelt cannot hold it).
    SessionOnly,
    /// Also the PID namespace (with its own `/proc`) that approved commands share, one
    /// per toolbelt process (`isolate/shared.rs`): they see and can signal each other, nothing
    /// outside it, and the kernel ends all of it when toolbelt ends. Made through a user
    /// namespace where toolbelt is not privileged.
    Processes,
    /// Also a network namespace with no interface up, and a user namespace where one is
    /// needed to have these: a command nobody approved.
    Sealed,
}

/// Which layers this machine grants, probed once per process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsolationSupport {
    /// A PID namespace with its own `/proc` (through a user namespace when unprivileged).
    pub processes: Result<(), IsolationRefused>,
    /// The sealed set: PID, mount and network namespaces (through a user namespace when
    /// unprivileged).
    pub sealed: Result<(), IsolationRefused>,
}

/// Which namespaces the kernel refused, and its answer (kept as text: the probe's
/// answer is shared by every caller for the life of the process).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IsolationRefused {
    /// The network namespace unasked commands share.
    #[error("the kernel refused a network namespace{}: {why}", via(*through_user))]
    Network {
        /// Asked through a user namespace (toolbelt unprivileged).
        through_user: bool,
        /// The kernel's answer.
        why: String,
    },
    /// A PID namespace with its own `/proc`.
    #[error("the kernel refused a PID namespace with its own /proc{}: {why}", via(*through_user))]
    Processes {
        /// Asked through a user namespace (toolbelt unprivileged).
        through_user: bool,
        /// The kernel's answer.
        why: String,
    },
    /// The sealed set: PID, mount and network namespaces.
    #[error("the kernel refused PID, mount and network namespaces{}: {why}", via(*through_user))]
    Sealed {
        /// Asked through a user namespace (toolbelt unprivileged).
        through_user: bool,
        /// The kernel's answer.
        why: String,
    },
}

fn via(through_user: bool) -> &'static str {
    if through_user {
        " through a user namespace"
    } else {
        ""
    }
}

/// Bits of the flags the `pre_exec` step reads (an atomic, since the step is installed
/// before the caller says how far to isolate and runs after `fork`, where no lock may be
/// taken).
const PID: u8 = 1;
/// Join the network namespace (and its user namespace, if any) unasked commands share
/// ([`offline`]).
const NET: u8 = 2;
/// A user namespace of its own (toolbelt unprivileged), for a namespace made per
/// command without [`NET`], and for the shared holder.
const USER: u8 = 4;
/// The probe: the command (PID 1 of its namespace) exits before `exec`.
const PROBE: u8 = 8;
/// Join the PID and mount namespaces approved commands share ([`shared`]).
const JOIN: u8 = 16;
/// Started by the thread already in them ([`spawner`]): nothing to join.
const JOINED: u8 = 32;

/// `CAP_SYS_PTRACE` of `linux/capability.h` (the `libc` crate does not name it).
const CAP_SYS_PTRACE: libc::c_ulong = 19;

/// The one step installed on every command: see the module documentation.
/// Cloned, it is the same step (one set of flags).
#[derive(Debug, Clone)]
pub(crate) struct IsolationStep {
    flags: Arc<AtomicU8>,
}

impl IsolationStep {
    /// Installs the step on `command` (first, before any caller's step).
    pub(crate) fn install(command: &mut Command) -> IsolationStep {
        let flags = Arc::new(AtomicU8::new(0));
        let plan = Plan::new(Arc::clone(&flags));
        // Safety: the closure runs in the forked child before `exec` and makes only
        // system calls on data prepared here (`Plan`): no allocation, no lock.
        unsafe {
            command.pre_exec(move || plan.run());
        }
        IsolationStep { flags }
    }

    /// Sets how far to isolate, falling back to what the machine grants.
    pub(crate) fn set(&self, isolation: Isolation) {
        let flags = match isolation {
            Isolation::SessionOnly => 0,
            Isolation::Processes if processes_joinable() => JOIN,
            Isolation::Processes => 0,
            Isolation::Sealed if sealed_granted().is_ok() => PID | NET,
            Isolation::Sealed => {
                warn_missing(sealed_granted());
                if processes_granted().is_ok() {
                    PID | needs_user()
                } else {
                    0
                }
            }
        };
        self.flags.store(flags, Ordering::Relaxed);
    }

    /// Whether the kernel ends the child with toolbelt, however toolbelt ends: it joins
    /// the shared namespace, whose holder exits at toolbelt's end and takes every
    /// process in it along. Such a child needs no guardian (`crate::guardian`).
    pub(crate) fn ends_with_toolbelt(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & (JOIN | JOINED) != 0
    }

    /// Spawns `command` (carrying this step) with `spawn` on the thread already in the
    /// shared namespace, when it is to join that namespace and such a thread is in it
    /// (see [`spawner`]); else hands `command` back, to be spawned as usual. `dir_of`
    /// first gives the command a working directory if it had none (the thread's is the
    /// namespace's root), or says it cannot.
    pub(crate) fn spawn_joined<C, T>(
        &self,
        mut command: C,
        dir_of: impl FnOnce(&mut C) -> bool,
        spawn: impl FnOnce(C) -> io::Result<T> + Send + 'static,
    ) -> Result<io::Result<T>, C>
    where
        C: Send + 'static,
        T: Send + 'static,
    {
        if self.flags.load(Ordering::Relaxed) & JOIN == 0
            || !spawner::available()
            || !dir_of(&mut command)
        {
            return Err(command);
        }
        let flags = Arc::clone(&self.flags);
        spawner::run(move |inside| {
            if !inside {
                return Err(command);
            }
            flags.store(JOINED, Ordering::Relaxed);
            let spawned = spawn(command);
            flags.store(JOIN, Ordering::Relaxed);
            Ok(spawned)
        })
        .unwrap_or_else(|| {
            Ok(Err(io::Error::other(
                "the thread that starts approved commands has ended",
            )))
        })
    }
}

/// Says once per process which layer an unasked command goes without (the first such
/// command, not every session start: the probe is paid only where it is needed).
fn warn_missing(sealed: &Result<(), IsolationRefused>) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        if let Err(why) = sealed {
            tracing::warn!(
                "unasked commands run without namespaces of their own ({why}); the Landlock and seccomp \
                 sandbox still confines them (`toolbelt sandbox` shows every layer)"
            );
        }
    });
}

fn needs_user() -> u8 {
    if rustix::process::geteuid().is_root() {
        0
    } else {
        USER
    }
}

/// What the machine grants, both layers (for `toolbelt sandbox` and tests): see
/// [`processes_granted`] and [`sealed_granted`], which a command asks apart.
pub fn support() -> &'static IsolationSupport {
    static SUPPORT: OnceLock<IsolationSupport> = OnceLock::new();
    SUPPORT.get_or_init(|| IsolationSupport {
        processes: processes_granted().clone(),
        sealed: sealed_granted().clone(),
    })
}

/// Whether the machine grants a PID namespace with its own `/proc` (through a user
/// namespace when unprivileged): known once the shared namespace's holder started
/// (`processes_joinable`), else probed on first use by running the set-up in a child
/// that exits before `exec`. Apart from the sealed set,
/// so a session whose commands are all approved never pays that layer's probe.
pub fn processes_granted() -> &'static Result<(), IsolationRefused> {
    PROCESSES_GRANTED.get_or_init(|| probe(PID | needs_user()))
}

/// Whether approved commands can join the shared namespace, starting its holder when
/// none runs. A holder that starts proves the machine grants the layer, so the first
/// approved command starts it without a probe first (a probe is a fork, two namespaces
/// and their teardown: about 1.5 ms of that command's start). Only a holder that cannot
/// start is followed by the probe, which says why.
fn processes_joinable() -> bool {
    match PROCESSES_GRANTED.get() {
        Some(granted) => granted.is_ok() && shared::ensure(),
        None => match shared::try_ensure() {
            Ok(()) => {
                let _ = PROCESSES_GRANTED.set(Ok(()));
                true
            }
            Err(e) => {
                if processes_granted().is_ok() {
                    shared::warn_cannot_start(&e);
                }
                false
            }
        },
    }
}

/// Starts the holder of the approved commands' namespace on a thread of its own, when
/// none runs yet: for a command about to be approved (the shell's confirmation), so the
/// holder's start (two forks, the namespaces, `cat`'s `exec`: about 1.5 ms) runs beside
/// the approval and the call's checkpoint instead of before the command (issue 49). The
/// command's own start then finds it running, or waits for the start under way. Once
/// per process; a command that is then refused leaves a holder that no command uses,
/// which ends with toolbelt like any other.
pub fn start_shared_early() {
    static ASKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if ASKED.swap(true, Ordering::Relaxed) {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("toolbelt-holder".into())
        .spawn(|| {
            let _ = processes_joinable();
        });
}

/// The answers of the two probes, once asked.
static PROCESSES_GRANTED: OnceLock<Result<(), IsolationRefused>> = OnceLock::new();
static SEALED_GRANTED: OnceLock<Result<(), IsolationRefused>> = OnceLock::new();

/// Whether the machine grants the sealed set (PID, mount and network namespaces, through
/// a user namespace when unprivileged), probed on first use like [`processes_granted`].
pub fn sealed_granted() -> &'static Result<(), IsolationRefused> {
    SEALED_GRANTED.get_or_init(|| {
        offline::ensure().clone()?;
        probe(PID | NET)
    })
}

fn probe(flags: u8) -> Result<(), IsolationRefused> {
    let mut command = Command::new("/proc/self/exe");
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let step = IsolationStep::install(&mut command);
    step.flags.store(flags | PROBE, Ordering::Relaxed);
    let status = command
        .spawn()
        .and_then(|mut c| c.wait())
        .map_err(|e| describe(flags, &e))?;
    match status.code() {
        Some(0) => Ok(()),
        _ => Err(describe(flags, &io::Error::other(format!("{status}")))),
    }
}

fn describe(flags: u8, e: &io::Error) -> IsolationRefused {
    let (through_user, why) = (needs_user() != 0, e.to_string());
    if flags & NET != 0 {
        IsolationRefused::Sealed { through_user, why }
    } else {
        IsolationRefused::Processes { through_user, why }
    }
}

/// Everything the child needs, prepared before `fork` (paths are literals).
struct Plan {
    flags: Arc<AtomicU8>,
    /// `/proc/self/uid_map`'s and `gid_map`'s line: the user mapped to itself.
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl Plan {
    fn new(flags: Arc<AtomicU8>) -> Plan {
        let uid = rustix::process::geteuid().as_raw();
        let gid = rustix::process::getegid().as_raw();
        Plan {
            flags,
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
        }
    }

    /// In the forked child: the session, the descriptors, then the namespaces.
    fn run(&self) -> io::Result<()> {
        // Safety (whole function): system calls on prepared data only.
        unsafe {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            cloexec_from(3);
            let flags = self.flags.load(Ordering::Relaxed);
            if flags & JOINED != 0 {
                return Ok(());
            }
            if flags & JOIN != 0 {
                return join();
            }
            if flags & PID == 0 {
                return Ok(());
            }
            self.unshare(flags)?;
            self.fork_first(flags)
        }
    }

    unsafe fn unshare(&self, flags: u8) -> io::Result<()> {
        let mut ns = libc::CLONE_NEWPID | libc::CLONE_NEWNS;
        let own_user = flags & USER != 0 && flags & NET == 0;
        if own_user {
            ns |= libc::CLONE_NEWUSER;
        }
        // Safety: plain system calls.
        unsafe {
            if flags & NET != 0 {
                // The shared user namespace first: it owns the network namespace, and
                // joining it gives the capabilities the `unshare` below needs. The PID
                // and mount namespaces made then belong to it.
                let user_ns = offline::USER_NS.load(Ordering::Acquire);
                let net_ns = offline::NET_NS.load(Ordering::Acquire);
                if (user_ns >= 0 && libc::setns(user_ns, libc::CLONE_NEWUSER) < 0)
                    || libc::setns(net_ns, libc::CLONE_NEWNET) < 0
                {
                    return Err(io::Error::last_os_error());
                }
            }
            if libc::unshare(ns) < 0 {
                return Err(io::Error::last_os_error());
            }
            if own_user {
                write_file(c"/proc/self/setgroups", b"deny")?;
                write_file(c"/proc/self/uid_map", &self.uid_map)?;
                write_file(c"/proc/self/gid_map", &self.gid_map)?;
            }
        }
        Ok(())
    }

    /// Forks the command's first process, PID 1 of the new namespace; this process
    /// becomes the relay and never returns unless the set-up in the namespace failed
    /// (then the error goes to the spawner as an `exec` error would).
    unsafe fn fork_first(&self, flags: u8) -> io::Result<()> {
        let mut fds = [0i32; 2];
        // Safety: plain system calls; after the fork each side only makes system calls.
        unsafe {
            if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) < 0 {
                return Err(io::Error::last_os_error());
            }
            let [read, write] = fds;
            match libc::fork() {
                -1 => Err(io::Error::last_os_error()),
                0 => {
                    libc::close(read);
                    self.first(write, flags)
                }
                first => {
                    libc::close(write);
                    relay(first, read)
                }
            }
        }
    }

    /// PID 1 of the namespace, which goes on to `exec` the command: it dies with the
    /// relay, mounts its `/proc` and reports. The command itself is the namespace's
    /// init, so no copy of toolbelt's memory (its environment, the model's key) is left
    /// in the namespace for a command to read through `/proc/1/mem`.
    unsafe fn first(&self, report: i32, flags: u8) -> io::Result<()> {
        // Safety: plain system calls.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if !mount_own_proc() {
                let errno = io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EPERM);
                write_all(report, &errno.to_ne_bytes());
                libc::_exit(1);
            }
            write_all(report, &0i32.to_ne_bytes());
            libc::close(report);
            if flags & PROBE != 0 {
                libc::_exit(0);
            }
            if flags & NET != 0 {
                // A sealed command run by root keeps no CAP_SYS_PTRACE after `exec`.
                libc::prctl(libc::PR_CAPBSET_DROP, CAP_SYS_PTRACE);
            }
        }
        Ok(())
    }
}

/// In PID 1 of a new PID and mount namespace: keeps mounts from propagating out and
/// mounts the namespace's own `/proc`; false (errno set) when either is refused.
///
/// # Safety
///
/// Plain system calls on constant strings: callable after `fork`.
pub(super) unsafe fn mount_own_proc() -> bool {
    // Safety: see the function's.
    unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_SLAVE,
            std::ptr::null(),
        ) == 0
            && libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            ) == 0
    }
}

/// Joins the shared namespaces and forks the command's process inside them; this
/// process becomes its relay (see [`relay_joined`]).
unsafe fn join() -> io::Result<()> {
    let user_ns = shared::USER_NS.load(Ordering::Acquire);
    let pid_ns = shared::PID_NS.load(Ordering::Acquire);
    let mount_ns = shared::MOUNT_NS.load(Ordering::Acquire);
    // Safety: plain system calls into a buffer on the stack.
    unsafe {
        // Entering a mount namespace moves the root and the working directory to its
        // root: the directory `Command` chose is entered again by its path.
        let mut cwd = [0u8; 4096];
        let have_cwd = !libc::getcwd(cwd.as_mut_ptr().cast(), cwd.len()).is_null();
        // The user namespace first (toolbelt unprivileged): it owns the other two, and
        // its owner may join it. The command keeps no capability past `exec`: its user
        // is not root there.
        if (user_ns >= 0 && libc::setns(user_ns, libc::CLONE_NEWUSER) < 0)
            || libc::setns(pid_ns, libc::CLONE_NEWPID) < 0
            || libc::setns(mount_ns, libc::CLONE_NEWNS) < 0
            || (have_cwd && libc::chdir(cwd.as_ptr().cast()) < 0)
        {
            return Err(io::Error::last_os_error());
        }
        match libc::fork() {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                // The command dies with its relay (toolbelt ended the call by SIGKILL).
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // The relay is outside the namespace, so its id reads as 0 here; had it
                // died already, the holder (PID 1) would be the parent.
                if libc::getppid() != 0 {
                    libc::_exit(137);
                }
                Ok(())
            }
            command => relay_joined(command),
        }
    }
}

/// A termination signal to the relay of a joined command: passed on to the command
/// (a signal to the group reaches it too; a second TERM changes nothing).
extern "C" fn pass_on(signal: libc::c_int) {
    let first = FIRST.load(Ordering::Relaxed);
    if first > 0 {
        // Safety: `kill` is async-signal-safe.
        unsafe {
            libc::kill(first, signal);
        }
    }
}

/// The relay of a joined command: it holds nothing, passes termination signals on,
/// and ends as the command ended. The command stays in the relay's process group and
/// session, so toolbelt's group signals reach it directly.
unsafe fn relay_joined(command: libc::pid_t) -> io::Result<()> {
    // Safety: plain system calls.
    unsafe {
        FIRST.store(command, Ordering::Relaxed);
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(signal, pass_on as *const () as libc::sighandler_t);
        }
        close_all();
        let mut status = 0;
        while libc::waitpid(command, &mut status, 0) < 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
        end_as(status)
    }
}

/// The relay's child (PID 1 of the namespace), for its signal handler.
static FIRST: AtomicI32 = AtomicI32::new(0);
/// The signal that made the relay end the namespace.
static RELAYED: AtomicI32 = AtomicI32::new(0);

/// A termination signal to the relay (the command's process group was told to end):
/// PID 1 of a namespace ignores such signals from outside unless it handles them, so
/// the relay ends the namespace, and with it everything in it, at once.
extern "C" fn end_namespace(signal: libc::c_int) {
    RELAYED.store(signal, Ordering::Relaxed);
    let first = FIRST.load(Ordering::Relaxed);
    if first > 0 {
        // Safety: `kill` is async-signal-safe.
        unsafe {
            libc::kill(first, libc::SIGKILL);
        }
    }
}

/// The relay: waits for the namespace's set-up report; on failure returns the error
/// (the spawner reports it like a failed `exec`); on success closes everything, turns
/// the group's termination signals into the end of the namespace, and ends as the
/// command ended (or by the signal it was told to end by).
unsafe fn relay(first: libc::pid_t, report: i32) -> io::Result<()> {
    // Safety: plain system calls.
    unsafe {
        let mut setup = [0u8; 4];
        if read_exact(report, &mut setup) && i32::from_ne_bytes(setup) != 0 {
            let mut status = 0;
            libc::waitpid(first, &mut status, 0);
            return Err(io::Error::from_raw_os_error(i32::from_ne_bytes(setup)));
        }
        FIRST.store(first, Ordering::Relaxed);
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(signal, end_namespace as *const () as libc::sighandler_t);
        }
        close_all();
        let mut status = 0;
        while libc::waitpid(first, &mut status, 0) < 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
        let relayed = RELAYED.load(Ordering::Relaxed);
        if relayed != 0 && libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL {
            end_as(relayed & 0x7f)
        }
        end_as(status)
    }
}

/// Ends this process the way `status` (a `waitpid` status) says.
unsafe fn end_as(status: i32) -> ! {
    // Safety: plain system calls.
    unsafe {
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            let no_core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

/// Marks every descriptor from `first` up close-on-exec.
unsafe fn cloexec_from(first: u32) {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // Safety: plain system calls.
    unsafe {
        if libc::syscall(libc::SYS_close_range, first, u32::MAX, CLOSE_RANGE_CLOEXEC) == 0 {
            return;
        }
        // Kernels before 5.11: every descriptor below the limit, one call each.
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        let last = limit.rlim_cur.min(1 << 20) as i32;
        for fd in first as i32..last {
            let current = libc::fcntl(fd, libc::F_GETFD);
            if current >= 0 {
                libc::fcntl(fd, libc::F_SETFD, current | libc::FD_CLOEXEC);
            }
        }
    }
}

/// Closes every descriptor (the relay needs none, and holding a copy of the command's
/// output pipe or of the spawner's error pipe would keep their readers from end-of-file).
unsafe fn close_all() {
    // Safety: plain system calls; a failure leaves the descriptors close-on-exec, which
    // the relay never reaches, so they would only be held a little longer.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
            for fd in 0..1024 {
                libc::close(fd);
            }
        }
    }
}

unsafe fn write_file(path: &CStr, data: &[u8]) -> io::Result<()> {
    // Safety: plain system calls on a NUL-terminated path.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let error = io::Error::last_os_error();
        libc::close(fd);
        if written != data.len() as isize {
            return Err(error);
        }
    }
    Ok(())
}

unsafe fn write_all(fd: i32, data: &[u8]) {
    // Safety: a plain system call; four bytes on a pipe are written whole.
    unsafe {
        libc::write(fd, data.as_ptr().cast(), data.len());
    }
}

/// Reads exactly `buf.len()` bytes; false at end-of-file or on an error.
unsafe fn read_exact(fd: i32, buf: &mut [u8]) -> bool {
    let mut done = 0;
    while done < buf.len() {
        // Safety: a plain system call into the rest of `buf`.
        let n = unsafe { libc::read(fd, buf[done..].as_mut_ptr().cast(), buf.len() - done) };
        if n > 0 {
            done += n as usize;
        } else if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        } else {
            return false;
        }
    }
    true
}

mod offline;
mod shared;
mod spawner;
pub(crate) use shared::holder_pids;
pub use shared::{command_pid, end_shared_namespace, host_pid, host_pid_below, namespace_pid};

#[cfg(test)]
mod tests;
