//! The network namespace unasked commands share: made once per toolbelt process, with no
//! interface up (its loopback stays down), and, where toolbelt is not privileged, the
//! user namespace that owns it.
//!
//! A network namespace is the dearest part of a sealed command's set-up: made and torn
//! down per command it cost about 0.5 ms of CPU (`copy_net_ns` in a profile of
//! `sandbox_bench`), and its teardown more in a kernel worker. Joined with `setns` it costs
//! nearly nothing. Sharing it parts nothing that mattered: each unasked command still
//! has a PID and mount namespace of its own (its end ends what it left), and seccomp
//! refuses every socket to unasked commands, so two of them cannot meet on an abstract
//! socket of the shared namespace either.
//!
//! The namespaces are made by a short-lived `cat` that `unshare`s them (mapping the user
//! to itself in a new user namespace when unprivileged); toolbelt opens them through its
//! `/proc` entry, then ends it. The descriptors stay open for the life of the process:
//! they are what keeps the namespaces, and a command being started on another thread
//! may be about to use their numbers.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};

use super::{IsolationRefused, USER, cloexec_from, needs_user, write_file};

/// The shared namespaces' descriptors, for the `pre_exec` step. `USER_NS` stays -1 where
/// toolbelt is privileged; both are -1 until [`ensure`] succeeded.
pub(super) static USER_NS: AtomicI32 = AtomicI32::new(-1);
pub(super) static NET_NS: AtomicI32 = AtomicI32::new(-1);

/// Makes the shared namespaces, once per process; the error says why the kernel refused.
pub(super) fn ensure() -> &'static Result<(), IsolationRefused> {
    static MADE: OnceLock<Result<(), IsolationRefused>> = OnceLock::new();
    MADE.get_or_init(|| {
        make().map_err(|e| IsolationRefused::Network {
            through_user: needs_user() == USER,
            why: e.to_string(),
        })
    })
}

fn make() -> io::Result<()> {
    let user = needs_user() == USER;
    let uid = rustix::process::geteuid().as_raw();
    let gid = rustix::process::getegid().as_raw();
    let uid_map = format!("{uid} {uid} 1").into_bytes();
    let gid_map = format!("{gid} {gid} 1").into_bytes();
    let mut command = Command::new("cat");
    command
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // Safety: in the forked child before `exec`, system calls on data prepared above.
    unsafe {
        command.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            cloexec_from(3);
            let mut flags = libc::CLONE_NEWNET;
            if user {
                flags |= libc::CLONE_NEWUSER;
            }
            if libc::unshare(flags) < 0 {
                return Err(io::Error::last_os_error());
            }
            if user {
                write_file(c"/proc/self/setgroups", b"deny")?;
                write_file(c"/proc/self/uid_map", &uid_map)?;
                write_file(c"/proc/self/gid_map", &gid_map)?;
            }
            Ok(())
        });
    }
    let mut child = command.spawn()?;
    let open = |kind: &str| File::open(format!("/proc/{}/ns/{kind}", child.id()));
    let opened = (|| {
        let user_ns = if user { Some(open("user")?) } else { None };
        Ok::<_, io::Error>((user_ns, open("net")?))
    })();
    drop(child.stdin.take());
    let _ = child.wait();
    let (user_ns, net_ns) = opened?;
    if let Some(user_ns) = user_ns {
        USER_NS.store(user_ns.as_raw_fd(), Ordering::Release);
        std::mem::forget(user_ns);
    }
    NET_NS.store(net_ns.as_raw_fd(), Ordering::Release);
    std::mem::forget(net_ns);
    Ok(())
}
