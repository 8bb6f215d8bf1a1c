//! Resource limits of a command run unasked (`tools.shell.limits`), set with
//! `setrlimit` in the child before `exec`, so `sort /dev/zero`, a CPU loop or a fork
//! flood ends with the program's own error instead of taking the machine.
//!
//! Each limit is per process (address space, CPU time, file size) except the process
//! count: `RLIMIT_NPROC` counts every task of the user, toolbelt's and the person's
//! other programs included, so a fixed number would stop every fork on a busy desktop.
//! It is set to the tasks the machine runs now (`/proc/loadavg`, at least the user's
//! own) plus `processes`. The kernel never applies it to root: a command run as root
//! has no process cap from here. Soft and hard limits are both set (CPU: the hard one a
//! second later, so `SIGXCPU` comes before `SIGKILL`; a command that is its PID
//! namespace's init ignores `SIGXCPU` and ends by the `SIGKILL`), and only ever lowered.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
use toolbelt_config::settings::ShellLimits;

const MIB: u64 = 1024 * 1024;

/// The limits of one command, computed in the parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    address_space: u64,
    cpu_seconds: u64,
    file_size: u64,
    tasks: u64,
}

impl Limits {
    /// `settings` for a command starting now.
    pub(crate) fn new(settings: &ShellLimits) -> Limits {
        Limits {
            address_space: settings.address_space_mb.saturating_mul(MIB),
            cpu_seconds: settings.cpu_seconds.max(1),
            file_size: settings.file_size_mb.saturating_mul(MIB),
            tasks: machine_tasks().saturating_add(settings.processes),
        }
    }

    /// Sets the limits on the calling process. Called in the forked child before
    /// `exec`: `prlimit64` on itself only, no allocation.
    pub(crate) fn apply(&self) -> std::io::Result<()> {
        lower(Resource::As, self.address_space, self.address_space)?;
        lower(
            Resource::Cpu,
            self.cpu_seconds,
            self.cpu_seconds.saturating_add(1),
        )?;
        lower(Resource::Fsize, self.file_size, self.file_size)?;
        lower(Resource::Nproc, self.tasks, self.tasks)
    }
}

/// Lowers `resource` to `soft`/`hard`, never raising what the parent had.
fn lower(resource: Resource, soft: u64, hard: u64) -> std::io::Result<()> {
    let now = getrlimit(resource);
    let max = now.maximum.map_or(hard, |m| m.min(hard));
    let cur = now.current.map_or(soft, |c| c.min(soft)).min(max);
    setrlimit(
        resource,
        Rlimit {
            current: Some(cur),
            maximum: Some(max),
        },
    )
    .map_err(std::io::Error::from)
}

/// Tasks (processes and threads) the machine runs now: the second number of the
/// fourth field of `/proc/loadavg` (`1/345`), which counts the user's among them.
fn machine_tasks() -> u64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| {
            let field = l.split_whitespace().nth(3)?;
            field.split('/').nth(1)?.parse().ok()
        })
        .unwrap_or(4096)
}

/// The note for a result whose command seems to have reached a limit (`signal` it
/// died of, `output` it printed), naming the setting to raise.
pub(crate) fn limit_note(signal: Option<i32>, output: &str) -> Option<String> {
    // In a PID namespace of its own the command is the namespace's init, which the
    // kernel does not stop with SIGXCPU or SIGXFSZ: the CPU limit then ends it with the
    // hard limit's SIGKILL (toolbelt's own endings, a time-out or a cancel, carry no
    // note), and a write past the file limit fails with "File too large".
    let setting = if signal == Some(libc::SIGXCPU)
        || signal == Some(libc::SIGKILL)
        || output.contains("CPU time limit exceeded")
    {
        "cpuSeconds (CPU time)"
    } else if signal == Some(libc::SIGXFSZ)
        || output.contains("File size limit exceeded")
        || output.contains("File too large")
    {
        "fileSizeMb (file size)"
    } else if [
        "memory exhausted",
        "Cannot allocate memory",
        "MemoryError",
        "out of memory",
    ]
    .iter()
    .any(|m| output.contains(m))
    {
        "addressSpaceMb (memory)"
    } else if ["Resource temporarily unavailable", "fork: retry"]
        .iter()
        .any(|m| output.contains(m))
    {
        "processes (process count)"
    } else {
        return None;
    };
    Some(format!(
        "Note: this command ran without the user's approval, under resource limits, and seems to have reached \
         one: tools.shell.limits.{setting}. Ask the user to approve it to run it without these limits."
    ))
}
