//! The seccomp-bpf half of the sandbox: what Landlock does not cover.
//!
//! Landlock confines writing *contents* and the TCP ports, but not a file's metadata
//! (mode, owner, times, extended attributes), not other address families, and not the
//! kernel's larger attack surfaces. Those are system calls, refused here with `EPERM`
//! (never a kill: `ls -l`, `cp -p` or `tar` that try one report an error and go on).
//!
//! The program is compiled once per process (it depends only on the confinement kind) and
//! applied in the child after Landlock; applying it sets `no_new_privs` first, as Landlock
//! does.
//!
//! System call numbers from 424 on are the same on every architecture, so the ones the
//! `libc` crate may not know yet are written out.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use seccompiler::{
    BackendError, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};

const SYS_OPEN_TREE: i64 = 428;
const SYS_MOVE_MOUNT: i64 = 429;
const SYS_FSOPEN: i64 = 430;
const SYS_FSCONFIG: i64 = 431;
const SYS_FSMOUNT: i64 = 432;
const SYS_FSPICK: i64 = 433;
const SYS_MOUNT_SETATTR: i64 = 442;
const SYS_FCHMODAT2: i64 = 452;
const SYS_SETXATTRAT: i64 = 463;
const SYS_REMOVEXATTRAT: i64 = 466;

/// Which metadata and network calls a confined command keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Profile {
    /// An unasked command: no metadata change anywhere, no socket of any family (a
    /// path-named UNIX socket such as the D-Bus session bus, an SSH agent or Docker's
    /// would be a way out that Landlock does not close on this ABI).
    ReadOnly,
    /// An approved command under `tools.sandbox: "landlock"`: UNIX sockets allowed (local
    /// build tools use them), no other family; mode, owner and extended attributes are
    /// refused everywhere because seccomp cannot tell a workspace path from another;
    /// times may be set only through an open descriptor (`touch`, `make` and `cargo`
    /// inside the workspace keep working; `touch -d` on a path outside does not).
    Workspace,
}

/// Calls refused whatever their arguments, in both profiles.
fn always_refused() -> Vec<i64> {
    let mut calls = vec![
        libc::SYS_fchmod,
        libc::SYS_fchmodat,
        SYS_FCHMODAT2,
        libc::SYS_fchown,
        libc::SYS_fchownat,
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        SYS_SETXATTRAT,
        libc::SYS_removexattr,
        libc::SYS_lremovexattr,
        libc::SYS_fremovexattr,
        SYS_REMOVEXATTRAT,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_mount,
        libc::SYS_umount2,
        SYS_OPEN_TREE,
        SYS_MOVE_MOUNT,
        SYS_FSOPEN,
        SYS_FSCONFIG,
        SYS_FSMOUNT,
        SYS_FSPICK,
        SYS_MOUNT_SETATTR,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_bpf,
        libc::SYS_io_uring_setup,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_fanotify_init,
        // What a command running as root could still do to the whole machine through
        // its capabilities (Landlock confines paths, not capabilities): the clock, the
        // host name, modules, reboot, swap, namespaces, opening by handle (which skips
        // path checks), process accounting, quotas.
        libc::SYS_clock_settime,
        libc::SYS_clock_adjtime,
        libc::SYS_settimeofday,
        libc::SYS_adjtimex,
        libc::SYS_sethostname,
        libc::SYS_setdomainname,
        libc::SYS_reboot,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_setns,
        libc::SYS_unshare,
        libc::SYS_open_by_handle_at,
        libc::SYS_acct,
        libc::SYS_quotactl,
        libc::SYS_syslog,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        libc::SYS_chmod,
        libc::SYS_chown,
        libc::SYS_lchown,
        libc::SYS_iopl,
        libc::SYS_ioperm,
    ]);
    calls
}

/// The time-setting calls that take a path (the legacy ones only exist on x86_64).
fn time_by_path() -> Vec<i64> {
    #[cfg(target_arch = "x86_64")]
    {
        vec![libc::SYS_utime, libc::SYS_utimes, libc::SYS_futimesat]
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Vec::new()
    }
}

fn condition(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompRule, BackendError> {
    let c = SeccompCondition::new(arg, SeccompCmpArgLen::Qword, op, value)?;
    SeccompRule::new(vec![c])
}

fn compile(profile: Profile) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for call in always_refused().into_iter().chain(time_by_path()) {
        // An empty chain matches the call whatever its arguments.
        rules.insert(call, Vec::new());
    }
    let mut build = || -> Result<(), BackendError> {
        match profile {
            Profile::ReadOnly => {
                rules.insert(libc::SYS_socket, Vec::new());
                rules.insert(libc::SYS_utimensat, Vec::new());
            }
            Profile::Workspace => {
                let not_unix = condition(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?;
                rules.insert(libc::SYS_socket, vec![not_unix]);
                // utimensat(fd, NULL, ...) is futimens: the descriptor was opened by the
                // command, which Landlock allowed for writing only in the workspace.
                let by_path = condition(1, SeccompCmpOp::Ne, 0)?;
                rules.insert(libc::SYS_utimensat, vec![by_path]);
            }
        }
        Ok(())
    };
    let built = build();
    built.map_err(|e| e.to_string())?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    BpfProgram::try_from(filter).map_err(|e| e.to_string())
}

/// The compiled program of `profile`, or why there is none (an architecture seccompiler
/// does not know).
pub(crate) fn program(profile: Profile) -> Result<&'static BpfProgram, String> {
    static READ_ONLY: OnceLock<Result<BpfProgram, String>> = OnceLock::new();
    static WORKSPACE: OnceLock<Result<BpfProgram, String>> = OnceLock::new();
    let cell = match profile {
        Profile::ReadOnly => &READ_ONLY,
        Profile::Workspace => &WORKSPACE,
    };
    cell.get_or_init(|| compile(profile))
        .as_ref()
        .map_err(Clone::clone)
}

/// Applies `program` to the calling thread. Called in the forked child before `exec`:
/// two system calls (`prctl`, `seccomp`), no allocation on success.
pub(crate) fn apply(program: &BpfProgram) -> std::io::Result<()> {
    seccompiler::apply_filter(program).map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))
}
