//! The Landlock sandbox (`tools.sandbox: "landlock"`): a command may write only inside
//! the workspace roots, the temporary directory and a few harmless devices. Reading is
//! not restricted.
//!
//! The ruleset is built in the parent, where allocating and opening files is safe, and
//! only *applied* in the child between `fork` and `exec` (`restrict_self` makes two
//! system calls). A kernel without Landlock cannot confine anything: rather than run the
//! command unconfined behind the person's back, the call is refused with an explanation,
//! logged once per process, unless `tools.shell.allowUnsandboxed` is `true`.

use std::path::PathBuf;
use std::sync::Once;

use landlock::{
    ABI, AccessFs, CompatLevel, Compatible, RulesetAttr, RulesetCreated, RulesetCreatedAttr,
    RulesetError, path_beneath_rules,
};
use tokio::process::Command;

/// Devices every command may write to.
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// A ruleset ready to be applied in a child.
pub struct PreparedSandbox {
    ruleset: RulesetCreated,
}

/// Why the sandbox cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SandboxUnavailable(pub String);

static WARN_ONCE: Once = Once::new();

impl PreparedSandbox {
    /// Builds a ruleset that allows writing beneath `writable` (and the devices above).
    /// Fails when the kernel has no Landlock.
    pub fn new(writable: &[PathBuf]) -> Result<Self, SandboxUnavailable> {
        build(writable).map_err(|e| {
            let message = format!(
                "tools.sandbox is \"landlock\", but this kernel cannot enforce Landlock ({e}). \
                 The command was not run, because running it unconfined would ignore the setting. \
                 Enable Landlock in the kernel (CONFIG_SECURITY_LANDLOCK=y and `landlock` in the `lsm=` boot \
                 parameter), remove tools.sandbox, or set tools.shell.allowUnsandboxed to true to run commands \
                 without the sandbox."
            );
            WARN_ONCE.call_once(|| tracing::warn!("{message}"));
            SandboxUnavailable(message)
        })
    }

    /// Arranges for the child to restrict itself before `exec`.
    pub fn install(self, cmd: &mut Command) {
        let mut ruleset = Some(self.ruleset);
        // Safety: the closure runs in the forked child before exec. It only calls
        // `restrict_self` (prctl and landlock_restrict_self, both async-signal-safe system
        // calls) on a ruleset built in the parent; it allocates nothing on success.
        #[allow(unsafe_code)]
        unsafe {
            cmd.pre_exec(move || match ruleset.take() {
                Some(r) => match r.restrict_self() {
                    Ok(_) => Ok(()),
                    Err(_) => Err(std::io::Error::from_raw_os_error(libc::EPERM)),
                },
                None => Ok(()),
            });
        }
    }
}

fn build(writable: &[PathBuf]) -> Result<PreparedSandbox, RulesetError> {
    // ABI 1 write rights are required (no Landlock at all is an error); what later ABIs
    // add (truncate, refer, ioctl on devices) is used where the kernel has it.
    let hard = AccessFs::from_write(ABI::V1);
    let best = AccessFs::from_write(ABI::V5);
    let mut paths: Vec<PathBuf> = writable.to_vec();
    paths.push(std::env::temp_dir());
    paths.extend(
        WRITABLE_DEVICES
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.exists()),
    );
    let ruleset = landlock::Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(hard)?
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(best)?
        .create()?
        .add_rules(path_beneath_rules(&paths, best))?;
    Ok(PreparedSandbox { ruleset })
}
