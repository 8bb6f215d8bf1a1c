//! The seccomp-bpf half of the sandbox: what Landlock does not cover.
//!
//! Landlock confines writing *contents* and the TCP ports, but not a file's metadata
//! (mode, owner, times, extended attributes), not other address families, and not the
//! kernel's larger attack surfaces, not namespaces, not ioctls on a terminal the
//! command inherited, and not what a process may do to another of the same user
//! (limits, priorities, scheduling). Those are system calls, refused here with `EPERM`
//! (never a kill: `ls -l`, `cp -p` or `tar` that try one report an error and go on),
//! some only for some arguments (a request, a flag, a pid other than 0). `clone3` is
//! the exception: it answers `ENOSYS` (see [`compile_clone3`]).
//!
//! The programs are compiled once per process (they depend only on the confinement kind)
//! and applied in the child after Landlock; applying it sets `no_new_privs` first, as Landlock
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
const SYS_CLONE3: i64 = 435;

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
    conditions(&[(arg, SeccompCmpArgLen::Qword, op, value)])
}

/// One rule: all of `conds` (argument, width, comparison, value) hold.
fn conditions(
    conds: &[(u8, SeccompCmpArgLen, SeccompCmpOp, u64)],
) -> Result<SeccompRule, BackendError> {
    let conds = conds
        .iter()
        .map(|(arg, len, op, value)| SeccompCondition::new(*arg, len.clone(), op.clone(), *value))
        .collect::<Result<Vec<_>, _>>()?;
    SeccompRule::new(conds)
}

/// A 32-bit argument (`int`, `pid_t`, an ioctl request) is compared on its low half,
/// as the kernel reads it: the upper half of the register is whatever the caller left.
fn int_arg(arg: u8, op: SeccompCmpOp, value: u64) -> (u8, SeccompCmpArgLen, SeccompCmpOp, u64) {
    (arg, SeccompCmpArgLen::Dword, op, value)
}

/// Terminal ioctls that act on the terminal rather than on the descriptor: typing into
/// its input (`TIOCSTI`, and `TIOCLINUX`'s selection paste), taking the foreground
/// (`TIOCSPGRP`), making it a controlling terminal (`TIOCSCTTY`) or redirecting the
/// console (`TIOCCONS`). Landlock's device-ioctl right does not cover a terminal the
/// command inherited.
// The request's type differs between C libraries (`c_ulong` in glibc, `c_int` in musl).
#[allow(clippy::unnecessary_cast)]
const TERMINAL_IOCTLS: &[u64] = &[
    libc::TIOCSTI as u64,
    libc::TIOCLINUX as u64,
    libc::TIOCSPGRP as u64,
    libc::TIOCSCTTY as u64,
    libc::TIOCCONS as u64,
];

/// `clone` flags that create a namespace (`CLONE_NEWTIME` shares its bit with the exit
/// signal in `clone`, and only `unshare` and `clone3` take it: both are refused whole).
const CLONE_NEW: &[u64] = &[
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
];

/// `ioprio_set`'s `which` for a process and a process group (`who` 0: the caller's).
const IOPRIO_WHO_PROCESS: u64 = 1;
const IOPRIO_WHO_PGRP: u64 = 2;

/// Arguments that reach beyond the calling process, in both profiles: terminal
/// ioctls, namespaces made by `clone`, and limits, priorities and scheduling of
/// another process (`0` names the caller; its own process group for priorities). Each
/// entry's rules are alternatives; a matching one refuses the call.
fn refused_arguments() -> Result<Vec<(i64, Vec<SeccompRule>)>, BackendError> {
    use SeccompCmpOp::{Eq, Gt, MaskedEq, Ne};
    let ioctls = TERMINAL_IOCTLS
        .iter()
        .map(|cmd| conditions(&[int_arg(1, Eq, *cmd)]))
        .collect::<Result<Vec<_>, _>>()?;
    let clone = CLONE_NEW
        .iter()
        .map(|flag| condition(0, MaskedEq(*flag), *flag))
        .collect::<Result<Vec<_>, _>>()?;
    let other_pid = || conditions(&[int_arg(0, Ne, 0)]);
    Ok(vec![
        (libc::SYS_ioctl, ioctls),
        (libc::SYS_clone, clone),
        // prlimit64(pid, resource, new, old): reading another's limits (new NULL) is harmless.
        (
            libc::SYS_prlimit64,
            vec![conditions(&[
                int_arg(0, Ne, 0),
                (2, SeccompCmpArgLen::Qword, Ne, 0),
            ])?],
        ),
        // setpriority(which, who, prio): PRIO_PROCESS or PRIO_PGRP of the caller only.
        (
            libc::SYS_setpriority,
            vec![
                conditions(&[int_arg(1, Ne, 0)])?,
                conditions(&[int_arg(0, Gt, libc::PRIO_PGRP as u64)])?,
            ],
        ),
        (libc::SYS_sched_setscheduler, vec![other_pid()?]),
        (libc::SYS_sched_setparam, vec![other_pid()?]),
        (libc::SYS_sched_setaffinity, vec![other_pid()?]),
        (libc::SYS_sched_setattr, vec![other_pid()?]),
        (
            libc::SYS_ioprio_set,
            vec![
                conditions(&[int_arg(1, Ne, 0)])?,
                conditions(&[
                    int_arg(0, Ne, IOPRIO_WHO_PROCESS),
                    int_arg(0, Ne, IOPRIO_WHO_PGRP),
                ])?,
            ],
        ),
    ])
}

fn compile(profile: Profile) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for call in always_refused().into_iter().chain(time_by_path()) {
        // An empty chain matches the call whatever its arguments.
        rules.insert(call, Vec::new());
    }
    let mut build = || -> Result<(), BackendError> {
        rules.extend(refused_arguments()?);
        match profile {
            Profile::ReadOnly => {
                rules.insert(libc::SYS_socket, Vec::new());
                rules.insert(libc::SYS_utimensat, Vec::new());
                // A shared lock taken on a file opened for reading would block a writer
                // that locks it, toolbelt's history among them.
                rules.insert(libc::SYS_flock, Vec::new());
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

/// `clone3` answers "not implemented": its flags are in memory a filter cannot read,
/// and on `ENOSYS` (never on `EPERM`) the C library falls back to `clone`, whose flags
/// the main program checks. A second program, because a filter has one refusal errno.
fn compile_clone3() -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let rules = BTreeMap::from([(SYS_CLONE3, Vec::new())]);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    BpfProgram::try_from(filter).map_err(|e| e.to_string())
}

/// The two programs a confined command gets: the profile's refusals and `clone3`'s.
pub(crate) struct Programs {
    refusals: BpfProgram,
    clone3: BpfProgram,
}

/// The compiled programs of `profile`, or why there are none (an architecture
/// seccompiler does not know).
pub(crate) fn program(profile: Profile) -> Result<&'static Programs, String> {
    static READ_ONLY: OnceLock<Result<Programs, String>> = OnceLock::new();
    static WORKSPACE: OnceLock<Result<Programs, String>> = OnceLock::new();
    let cell = match profile {
        Profile::ReadOnly => &READ_ONLY,
        Profile::Workspace => &WORKSPACE,
    };
    cell.get_or_init(|| {
        Ok(Programs {
            refusals: compile(profile)?,
            clone3: compile_clone3()?,
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Applies `programs` to the calling thread. Called in the forked child before `exec`:
/// a few system calls (`prctl`, `seccomp`), no allocation on success.
pub(crate) fn apply(programs: &Programs) -> std::io::Result<()> {
    for program in [&programs.refusals, &programs.clone3] {
        seccompiler::apply_filter(program)
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))?;
    }
    Ok(())
}
