//! The kernel sandbox of shell commands: Landlock for files, TCP and scoping, seccomp
//! for what Landlock does not cover (see [`seccomp`]).
//!
//! Two confinements, chosen by how the call came to run ([`toolbelt_core::Consent`]):
//!
//! - [`Confinement::ReadOnly`], for a command that runs **unasked** (the classifier
//!   judged it read-only). The classifier decides whether to ask; this decides what the
//!   command can do, so a program whose options the classifier got wrong still cannot
//!   write: no path is writable but `/dev/null`, `/dev/zero` and `/dev/full` (the output
//!   pipe is not a path), nothing is readable beneath the [`hidden`] paths (terminals,
//!   toolbelt's store, credentials, `Read` deny rules), no TCP bind or connect (ABI 4),
//!   no abstract UNIX socket or signal outside the sandbox (ABI 6), seccomp refuses every
//!   socket, metadata changes, `ptrace`, mounts, keys, BPF, io_uring, perf, namespaces,
//!   terminal ioctls, other processes' limits and scheduling, and `flock`, and
//!   [`limits`] bound memory, CPU, file size and tasks. git run this way gets
//!   `core.hooksPath=/dev/null` and `core.fsmonitor=false` through `GIT_CONFIG_COUNT`, so
//!   repository hooks never run.
//! - [`Confinement::Workspace`], for an approved command under `tools.sandbox:
//!   "landlock"`: writable workspace roots and temporary directory, no TCP, only UNIX
//!   sockets, and no mode, owner or extended attribute change anywhere (seccomp cannot
//!   tell a workspace path from another, and Landlock has no right for metadata; a
//!   mount namespace with read-only binds would, at the price of user namespaces).
//!   Signals are not scoped: approved commands may stop each other's processes.
//!
//! The Landlock ruleset, the BPF programs and the limits are built in the parent, where
//! allocating and opening files is safe; the child only *applies* them between `fork`
//! and `exec` (`prlimit64`, `restrict_self`, then `seccomp`: a few system calls, no
//! allocation on success). Namespaces a spawner makes for the command must be made
//! before this step: the seccomp programs refuse them afterwards.
//!
//! Without Landlock nothing can be confined: an unasked command then asks instead (see
//! [`SandboxSupport`]), and `tools.shell.allowUnsandboxed: true` is the person's way back
//! to unconfined auto-approval.

use std::path::PathBuf;
use std::sync::{Once, OnceLock};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, LandlockStatus, PathBeneath, PathFd,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetError, Scope, path_beneath_rules,
};
use std::os::unix::process::CommandExt;
use std::process::Command;

pub(crate) mod hidden;
pub(crate) mod limits;
mod refusal;
pub(crate) mod seccomp;

pub(crate) use hidden::Hidden;
pub(crate) use limits::{Limits, limit_note};
pub(crate) use refusal::refusal_note;

/// Devices every confined command may write to (not a terminal: `/dev/tty` is the
/// person's).
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// How a command is confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Confinement {
    /// Nothing writable, no network, scoped (an unasked command).
    ReadOnly,
    /// The workspace writable, no network (`tools.sandbox: "landlock"`).
    Workspace,
}

/// What this machine can enforce, detected once per process ([`SandboxSupport::detect`])
/// or given (tests simulate a kernel without Landlock with
/// [`SandboxSupport::unavailable`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSupport {
    landlock: Result<u32, String>,
    seccomp: Result<(), String>,
}

impl SandboxSupport {
    /// The running kernel's support, probed on first use.
    pub fn detect() -> SandboxSupport {
        static DETECTED: OnceLock<SandboxSupport> = OnceLock::new();
        DETECTED
            .get_or_init(|| SandboxSupport {
                landlock: probe_landlock(),
                seccomp: probe_seccomp(),
            })
            .clone()
    }

    /// A machine that cannot confine, for `why`.
    pub fn unavailable(why: impl Into<String>) -> SandboxSupport {
        let why = why.into();
        SandboxSupport {
            landlock: Err(why.clone()),
            seccomp: Err(why),
        }
    }

    /// The kernel's Landlock ABI version, or why there is none.
    pub fn landlock_abi(&self) -> Result<u32, &str> {
        self.landlock.as_ref().copied().map_err(String::as_str)
    }

    /// Whether seccomp filters can be applied, or why not.
    pub fn seccomp(&self) -> Result<(), &str> {
        self.seccomp.as_ref().copied().map_err(String::as_str)
    }

    /// `Ok` when an unasked command can be confined read-only: Landlock and seccomp.
    pub fn can_confine(&self) -> Result<(), ConfineError> {
        self.landlock_abi()
            .map_err(|why| ConfineError::NoLandlock(why.to_string()))?;
        self.seccomp()
            .map_err(|why| ConfineError::NoSeccomp(why.to_string()))
    }
}

/// Why an unasked command cannot be confined on this machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfineError {
    /// The kernel has no usable Landlock; why.
    #[error("no Landlock: {0}")]
    NoLandlock(String),
    /// Seccomp filters cannot be applied; why.
    #[error("no seccomp: {0}")]
    NoSeccomp(String),
}

/// The Landlock ABI, read from the status of a restriction applied to a thread of its
/// own that then ends (the crate reports the ABI only after `restrict_self`). The
/// restriction handles only "execute" and allows it beneath `/`, so nothing is refused
/// even while the thread lives.
fn probe_landlock() -> Result<u32, String> {
    let probe = || -> Result<LandlockStatus, String> {
        let root = PathFd::new("/").map_err(|e| e.to_string())?;
        let restrict = || -> Result<LandlockStatus, RulesetError> {
            let status = landlock::Ruleset::default()
                .handle_access(AccessFs::Execute)?
                .create()?
                .add_rule(PathBeneath::new(root, AccessFs::Execute))?
                .restrict_self()?;
            Ok(status.landlock)
        };
        restrict().map_err(|e| e.to_string())
    };
    let status = std::thread::spawn(probe)
        .join()
        .map_err(|_| "the Landlock probe failed".to_string())??;
    match status {
        LandlockStatus::Available {
            effective_abi,
            kernel_abi,
        } => Ok(kernel_abi.map_or_else(|| abi_number(effective_abi), |v| v.max(0) as u32)),
        LandlockStatus::NotEnabled => Err(
            "the kernel has Landlock but it is not enabled (add `landlock` to the `lsm=` boot parameter)"
                .to_string(),
        ),
        LandlockStatus::NotImplemented => Err(
            "the kernel has no Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK=y)"
                .to_string(),
        ),
    }
}

fn abi_number(abi: ABI) -> u32 {
    [
        ABI::V1,
        ABI::V2,
        ABI::V3,
        ABI::V4,
        ABI::V5,
        ABI::V6,
        ABI::V7,
        ABI::V8,
        ABI::V9,
    ]
    .iter()
    .position(|v| *v == abi)
    .map_or(0, |i| i as u32 + 1)
}

/// seccomp filters need `CONFIG_SECCOMP_FILTER` (the kernel then shows `Seccomp:` in
/// `/proc/self/status`) and an architecture seccompiler knows.
fn probe_seccomp() -> Result<(), String> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
    if !status.lines().any(|l| l.starts_with("Seccomp_filters:")) {
        return Err("the kernel has no seccomp filters (CONFIG_SECCOMP_FILTER)".to_string());
    }
    seccomp::program(seccomp::Profile::ReadOnly).map(|_| ())
}

/// A sandbox ready to be applied in a child.
pub(crate) struct PreparedSandbox {
    confinement: Confinement,
    ruleset: RulesetCreated,
    filter: &'static seccomp::Programs,
    limits: Option<Limits>,
    /// Whether the child allows reading the `/proc` it sees (see [`allow_own_proc`]).
    own_proc: bool,
}

/// Why the sandbox cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SandboxUnavailable(pub String);

static WARN_ONCE: Once = Once::new();

impl PreparedSandbox {
    /// The read-only sandbox of an unasked command, when `support` allows it: nothing
    /// writable, nothing `hidden` readable, within `limits`.
    pub(crate) fn read_only(
        support: &SandboxSupport,
        hidden: &Hidden,
        limits: Limits,
    ) -> Result<Self, SandboxUnavailable> {
        support
            .can_confine()
            .map_err(|why| unasked_unavailable(&why.to_string()))?;
        let filter = seccomp::program(seccomp::Profile::ReadOnly)
            .map_err(|why| unasked_unavailable(&why))?;
        let ruleset = hidden::ruleset(hidden, read_access(), |rules| {
            ruleset(Confinement::ReadOnly, &[])?
                .add_rules(rules.into_iter().map(Ok::<_, RulesetError>))
        })
        .map_err(|e| unasked_unavailable(&e.to_string()))?;
        Ok(PreparedSandbox {
            confinement: Confinement::ReadOnly,
            ruleset,
            filter,
            limits: Some(limits),
            own_proc: hidden.leaves_proc_readable(),
        })
    }

    /// The `tools.sandbox: "landlock"` sandbox: writing allowed beneath `writable` and the
    /// temporary directory. Fails when the kernel has no Landlock.
    pub(crate) fn workspace(writable: &[PathBuf]) -> Result<Self, SandboxUnavailable> {
        let mut paths = writable.to_vec();
        paths.push(std::env::temp_dir());
        let built = seccomp::program(seccomp::Profile::Workspace).and_then(|filter| {
            let ruleset = ruleset(Confinement::Workspace, &paths).map_err(|e| e.to_string())?;
            Ok(PreparedSandbox {
                confinement: Confinement::Workspace,
                ruleset,
                filter,
                limits: None,
                own_proc: false,
            })
        });
        built.map_err(|e| {
            let message = format!(
                "tools.sandbox is \"landlock\", but this kernel cannot enforce it ({e}). \
                 The command was not run, because running it unconfined would ignore the setting. \
                 Enable Landlock in the kernel (CONFIG_SECURITY_LANDLOCK=y and `landlock` in the `lsm=` boot \
                 parameter), remove tools.sandbox, or set tools.shell.allowUnsandboxed to true to run commands \
                 without the sandbox."
            );
            WARN_ONCE.call_once(|| tracing::warn!("{message}"));
            SandboxUnavailable(message)
        })
    }

    /// Which confinement this is.
    pub(crate) fn confinement(&self) -> Confinement {
        self.confinement
    }

    /// Arranges for the child to confine itself before `exec` (and, read-only, for git
    /// to run no repository hook or file-system monitor).
    pub(crate) fn install(self, cmd: &mut Command) {
        if self.confinement == Confinement::ReadOnly {
            let inherited = std::env::var("GIT_CONFIG_COUNT").ok();
            for (key, value) in git_inert_env(inherited.as_deref()) {
                cmd.env(key, value);
            }
        }
        let mut ruleset = Some(self.ruleset);
        let filter = self.filter;
        let limits = self.limits;
        let own_proc = self.own_proc;
        // Safety: the closure runs in the forked child before exec. It sets resource
        // limits computed in the parent (prlimit64), calls `restrict_self` (prctl and
        // landlock_restrict_self) on a ruleset built in the parent and then applies BPF
        // programs compiled in the parent (prctl and seccomp): system calls only,
        // nothing allocated on success.
        #[allow(unsafe_code)]
        unsafe {
            cmd.pre_exec(move || {
                if let Some(limits) = &limits {
                    limits.apply()?;
                }
                let Some(mut r) = ruleset.take() else {
                    return Err(std::io::Error::from_raw_os_error(libc::EPERM));
                };
                if own_proc {
                    r = allow_own_proc(r)?;
                }
                r.restrict_self()
                    .map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))?;
                seccomp::apply(filter)
            });
        }
    }
}

/// In the child, before `restrict_self`: reading allowed beneath the `/proc` this
/// process sees. An unasked command's PID namespace mounts a `/proc` of its own after
/// the parent built the ruleset, whose rule for `/proc` names the machine's; without this
/// rule nothing in the new one could be read (`ps`, `/proc/self/limits`). Where no new
/// `/proc` was mounted, the rule repeats the parent's. Only system calls: the path is a
/// literal, the descriptor borrowed and closed here.
fn allow_own_proc(ruleset: RulesetCreated) -> std::io::Result<RulesetCreated> {
    // Safety: `open` of a NUL-terminated literal; the descriptor is valid until the
    // `close` below, after the rule that borrows it was added.
    #[allow(unsafe_code)]
    unsafe {
        let fd = libc::open(
            c"/proc".as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return Ok(ruleset);
        }
        let borrowed = std::os::fd::BorrowedFd::borrow_raw(fd);
        let added = ruleset.add_rule(PathBeneath::new(borrowed, read_access()));
        libc::close(fd);
        added.map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))
    }
}

fn unasked_unavailable(why: &str) -> SandboxUnavailable {
    SandboxUnavailable(format!(
        "This command was not approved by the user (it was judged read-only), and such commands run only inside a \
         kernel sandbox, which this system cannot provide ({why}). It was not run. Ask the user to approve it, \
         or the user can set tools.shell.allowUnsandboxed to true to run read-only commands without the sandbox."
    ))
}

/// The read rights a read-only command is confined in: reading a file's contents and
/// executing it (which reads it), so both are allowed wherever the other is.
fn read_access() -> landlock::BitFlags<AccessFs> {
    AccessFs::ReadFile | AccessFs::Execute
}

/// The Landlock ruleset: every write right of the newest ABI handled (ABI 1's required,
/// the rest where the kernel has them), TCP handled with no port allowed, and for a
/// read-only command reading handled too (the read rules are [`hidden`]'s) and abstract
/// sockets and signals scoped.
fn ruleset(confinement: Confinement, writable: &[PathBuf]) -> Result<RulesetCreated, RulesetError> {
    let hard = AccessFs::from_write(ABI::V1);
    let best = AccessFs::from_write(ABI::V7);
    let mut paths: Vec<PathBuf> = writable.to_vec();
    paths.extend(
        WRITABLE_DEVICES
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.exists()),
    );
    let mut ruleset = landlock::Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(hard)?
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(best)?
        .handle_access(AccessNet::from_all(ABI::V4))?;
    if confinement == Confinement::ReadOnly {
        ruleset = ruleset
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(read_access())?
            .set_compatibility(CompatLevel::BestEffort)
            .scope(Scope::from_all(ABI::V6))?;
    }
    ruleset
        .create()?
        .add_rules(path_beneath_rules(&paths, best))
}

/// `GIT_CONFIG_COUNT`/`_KEY_n`/`_VALUE_n` that switch off hooks and the file-system
/// monitor, after the `inherited` entries (a count git would reject is replaced).
pub(crate) fn git_inert_env(inherited: Option<&str>) -> Vec<(String, String)> {
    let base: u32 = inherited
        .and_then(|c| c.trim().parse().ok())
        .filter(|n| *n < 10_000)
        .unwrap_or(0);
    let entries = [("core.hooksPath", "/dev/null"), ("core.fsmonitor", "false")];
    let mut env = vec![(
        "GIT_CONFIG_COUNT".to_string(),
        (base + entries.len() as u32).to_string(),
    )];
    for (i, (key, value)) in entries.iter().enumerate() {
        let n = base + i as u32;
        env.push((format!("GIT_CONFIG_KEY_{n}"), key.to_string()));
        env.push((format!("GIT_CONFIG_VALUE_{n}"), value.to_string()));
    }
    env
}

/// Tests that open terminals run one at a time: a process that leads a session and
/// opens a terminal takes it as its controlling terminal, its end hangs that terminal up
/// (flushing what waits in it), and a pty number one test frees is soon another's.
#[cfg(test)]
pub(crate) static TERMINAL_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
mod property_grammar;
#[cfg(test)]
mod property_tests;
#[cfg(test)]
mod reach_tests;
#[cfg(test)]
mod tests;
