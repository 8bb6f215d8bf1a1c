//! Where toolbelt is privileged, approved commands start from one thread that has joined
//! the shared namespace, so each is forked once, straight into it (issue 49).
//!
//! `setns` into a PID namespace moves only the children the calling thread forks
//! afterwards, so a command's `pre_exec` step that joins it (`super::join`) must fork
//! once more: toolbelt's copy made by `Command::spawn` joins and stays outside as the
//! command's relay, and a second copy becomes the command. Both are copies of the whole
//! toolbelt process, and the relay lives as long as the command, so every page toolbelt
//! writes meanwhile is copied first: on the project's machine the two forks and the copies
//! were most of what an approved command cost over an unconfined spawn.
//!
//! This thread instead leaves the process's shared file-system attributes
//! (`unshare(CLONE_FS)`, so it alone may enter another mount namespace) and joins the
//! holder's mount and PID namespaces itself. A command spawned here is forked once, is
//! born in them, and is toolbelt's own child: it leads its own session and group as every
//! child does, toolbelt sees and signals it directly, and the kernel still ends it with
//! the holder, so with toolbelt. Its working directory is always set by the caller
//! (this thread's is the namespace's root). Its umask is the process's as the thread
//! started (the thread's file-system attributes are its own from then on; toolbelt
//! never changes its umask).
//!
//! The holder starts here too: the thread goes back to its own namespaces, makes a new
//! mount namespace for itself and a new PID namespace for its next child, and forks
//! `cat`, which is PID 1 there (again no relay, no second copy of toolbelt).
//!
//! A user namespace cannot be joined by one thread of a multi-threaded process, so where
//! toolbelt is not privileged commands keep the relay ([`run`] says no). The thread joins
//! a new holder's namespaces when one replaced the last (their descriptors are never
//! closed, so a descriptor number names one namespace for the process's life).

use std::sync::OnceLock;
use std::sync::atomic::Ordering;
use std::sync::mpsc;

use super::shared;

type Job = Box<dyn FnOnce(bool) + Send>;

static SPAWNER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();

/// Whether commands can start from the thread (toolbelt privileged, and the thread
/// started); where not, they start with a relay.
pub(super) fn available() -> bool {
    super::needs_user() == 0 && SPAWNER.get_or_init(start).is_some()
}

/// Runs `work` on the thread, telling it whether the thread is in the shared namespace
/// now (it may have failed to join: then `work` spawns nothing and hands the command
/// back). `None` when the thread is not there (see [`available`]) or ended.
pub(super) fn run<R: Send + 'static>(work: impl FnOnce(bool) -> R + Send + 'static) -> Option<R> {
    on_thread(move || work(enter_shared()))
}

/// Runs `work` on the thread as it is (for the holder's start); `None` as for [`run`].
pub(super) fn on_thread<R: Send + 'static>(work: impl FnOnce() -> R + Send + 'static) -> Option<R> {
    let tx = SPAWNER.get().and_then(Option::as_ref)?;
    let (back, answer) = mpsc::sync_channel(1);
    tx.send(Box::new(move |_| {
        let _ = back.send(work());
    }))
    .ok()?;
    answer.recv().ok()
}

/// What the thread holds between jobs.
struct Thread {
    /// It has file-system attributes of its own (it may change mount namespace).
    own_fs: bool,
    /// The mount and PID namespace descriptors it joined last ([`join`]).
    joined: (i32, i32),
    /// Its own mount and PID namespaces as it started, to go back to before it makes
    /// new ones for a holder ([`make_holder_namespaces`]).
    home: Option<(std::fs::File, std::fs::File)>,
}

thread_local! {
    static THREAD: std::cell::RefCell<Option<Thread>> = const { std::cell::RefCell::new(None) };
}

fn start() -> Option<mpsc::Sender<Job>> {
    let (tx, jobs) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("toolbelt-spawner".into())
        .spawn(move || {
            let home = (|| {
                Some((
                    std::fs::File::open("/proc/thread-self/ns/mnt").ok()?,
                    std::fs::File::open("/proc/thread-self/ns/pid").ok()?,
                ))
            })();
            // Safety: a plain system call about this thread only.
            let own_fs = unsafe { libc::unshare(libc::CLONE_FS) } == 0;
            THREAD.with(|t| {
                *t.borrow_mut() = Some(Thread {
                    own_fs,
                    joined: (-1, -1),
                    home,
                });
            });
            for job in jobs {
                job(true);
            }
        })
        .ok()?;
    Some(tx)
}

/// On the thread: joins the shared namespace (see [`join`]); whether it is in it.
fn enter_shared() -> bool {
    THREAD.with(|t| {
        t.borrow_mut()
            .as_mut()
            .is_some_and(|t| t.own_fs && join(&mut t.joined))
    })
}

/// On the thread: makes a new mount namespace for it and a new PID namespace for the
/// children it forks next, back from its own first (a PID namespace can be made only
/// from the one the thread is in). The holder's `cat`, forked next, is PID 1 there.
pub(super) fn make_holder_namespaces() -> std::io::Result<()> {
    THREAD.with(|t| {
        let mut t = t.borrow_mut();
        let Some(t) = t.as_mut().filter(|t| t.own_fs) else {
            return Err(std::io::Error::other("not the spawner thread"));
        };
        let Some((mnt, pid)) = &t.home else {
            return Err(std::io::Error::other(
                "the spawner's own namespaces are unknown",
            ));
        };
        use std::os::fd::AsRawFd;
        t.joined = (-1, -1);
        // Safety: plain system calls about this thread, on descriptors it holds.
        let ok = unsafe {
            libc::setns(mnt.as_raw_fd(), libc::CLONE_NEWNS) == 0
                && libc::setns(pid.as_raw_fd(), libc::CLONE_NEWPID) == 0
                && libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWPID) == 0
        };
        if ok {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    })
}

/// Joins the holder's mount and PID namespaces unless `joined` (the descriptors last
/// joined) names them already; whether this thread is in them.
fn join(joined: &mut (i32, i32)) -> bool {
    let pid = shared::PID_NS.load(Ordering::Acquire);
    let mount = shared::MOUNT_NS.load(Ordering::Acquire);
    if pid < 0 || mount < 0 || shared::USER_NS.load(Ordering::Acquire) >= 0 {
        return false;
    }
    if *joined == (pid, mount) {
        return true;
    }
    *joined = (-1, -1);
    // Safety: plain system calls on descriptors toolbelt keeps open for its life.
    let ok = unsafe {
        libc::setns(mount, libc::CLONE_NEWNS) == 0 && libc::setns(pid, libc::CLONE_NEWPID) == 0
    };
    if ok {
        *joined = (pid, mount);
    }
    ok
}
