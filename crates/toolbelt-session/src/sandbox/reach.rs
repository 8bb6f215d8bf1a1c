//! The probes of `--verify` beyond writing: a terminal (a pty opened here, so the check
//! needs no terminal of its own), toolbelt's limits and priority, its store, a
//! credential file, namespaces, locks and resource limits. Each runs on the host first;
//! where the host control cannot succeed here (a program or a kernel feature missing,
//! no credential file to read) the check says so and is skipped.

use std::io::Write;
use std::path::{Path, PathBuf};

use toolbelt_core::ToolEnvironment;
use toolbelt_tools::CREDENTIAL_FILES;

use super::Check;

/// A pseudo-terminal opened here: what is typed into it waits for a reader.
pub(super) struct Terminal {
    master: std::fs::File,
    path: PathBuf,
}

impl Terminal {
    pub(super) fn open() -> std::io::Result<Terminal> {
        use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY)?;
        grantpt(&master)?;
        unlockpt(&master)?;
        let name = ptsname(&master, Vec::new())?;
        let path = PathBuf::from(name.to_string_lossy().into_owned());
        let terminal = Terminal {
            master: std::fs::File::from(master),
            path,
        };
        terminal.type_line();
        Ok(terminal)
    }

    /// Types a line, as a person would, for the next reader of the terminal.
    fn type_line(&self) {
        let _ = (&self.master).write_all(b"typed by toolbelt sandbox --verify\n");
    }
}

/// A file in toolbelt's store, removed when the probe ends.
pub(super) struct StoreProbe(Option<PathBuf>);

impl StoreProbe {
    pub(super) fn new(env: &ToolEnvironment) -> StoreProbe {
        let file = env.toolbelt_home.as_ref().and_then(|store| {
            std::fs::create_dir_all(store).ok()?;
            let file = store.join(format!("sandbox-verify-{}", std::process::id()));
            std::fs::write(&file, "probe").ok()?;
            Some(file)
        });
        StoreProbe(file)
    }
}

impl Drop for StoreProbe {
    fn drop(&mut self) {
        if let Some(file) = &self.0 {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// The first credential file of the table that exists beneath `home` (in a directory
/// of the table, its first file).
fn credential_file(home: &Path) -> Option<PathBuf> {
    CREDENTIAL_FILES.iter().find_map(|c| {
        let path = home.join(c);
        if path.is_file() {
            return Some(path);
        }
        std::fs::read_dir(&path)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.is_file())
    })
}

/// `'text'` for bash.
fn quoted(path: &Path) -> String {
    format!("'{}'", path.to_string_lossy().replace('\'', r"'\''"))
}

/// The checks of terminals, toolbelt, secrets, namespaces, locks and limits.
pub(super) fn checks<'a>(
    env: &ToolEnvironment,
    scratch: &Path,
    terminal: &'a Terminal,
    store: &'a StoreProbe,
) -> Vec<Check<'a>> {
    let me = std::process::id();
    let tty = quoted(&terminal.path);
    let nofile = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let limit = |v: Option<u64>| v.map_or("unlimited".to_string(), |v| v.to_string());
    let nice = rustix::process::getpriority_process(None).unwrap_or(0);
    let mut checks = vec![
        Check {
            name: "read another terminal (a pty opened here)",
            command: format!("timeout 5 head -n1 {tty}"),
            effect: Box::new(|code| code == Some(0)),
            undo: Box::new(|| terminal.type_line()),
            unsupported: None,
        },
        Check::exits_zero(
            "type into a terminal (TIOCSTI)",
            format!(
                "setsid -w python3 -c 'import fcntl, os, sys, termios; fd = os.open(sys.argv[1], os.O_RDONLY); \
                 fcntl.ioctl(fd, termios.TIOCSCTTY, 0); fcntl.ioctl(fd, termios.TIOCSTI, b\" \")' {tty}"
            ),
            Some(
                "python3 missing, or this kernel refuses TIOCSTI to everyone: dev.tty.legacy_tiocsti = 0",
            ),
        ),
        Check::exits_zero(
            "change toolbelt's limits (prlimit)",
            format!(
                "prlimit --pid {me} --nofile={}:{}",
                limit(nofile.current),
                limit(nofile.maximum)
            ),
            Some("util-linux's prlimit missing"),
        ),
        Check::exits_zero(
            "change toolbelt's priority (setpriority)",
            format!("renice -n {nice} -p {me}"),
            Some("renice missing"),
        ),
        Check::exits_zero(
            "create a namespace (unshare -U)",
            "unshare -U true".to_string(),
            Some("user namespaces are not allowed here"),
        ),
        Check::exits_zero(
            "lock a file opened for reading (flock)",
            format!("flock -s -n {} true", quoted(&scratch.join("lock"))),
            Some("util-linux's flock missing"),
        ),
        Check::exits_zero(
            "run without a memory limit (address space)",
            "grep -q '^Max address space *unlimited' /proc/self/limits".to_string(),
            Some("toolbelt itself already runs with an address space limit"),
        ),
        Check::exits_zero(
            "run without a CPU time limit",
            "grep -q '^Max cpu time *unlimited' /proc/self/limits".to_string(),
            Some("toolbelt itself already runs with a CPU time limit"),
        ),
    ];
    checks.extend(secret_checks(env, store));
    checks
}

/// Reading toolbelt's store and a credential file of the table.
fn secret_checks<'a>(env: &ToolEnvironment, store: &'a StoreProbe) -> Vec<Check<'a>> {
    let mut out = Vec::new();
    let (store_command, store_why) = match &store.0 {
        Some(file) => (format!("head -c1 {}", quoted(file)), None),
        None => ("false".to_string(), Some("no toolbelt store")),
    };
    out.push(Check::exits_zero(
        "read toolbelt's store",
        store_command,
        store_why.or(Some("the store is not readable")),
    ));
    let credential = env.user_home.as_deref().and_then(credential_file);
    out.push(match credential {
        Some(file) => Check::exits_zero(
            "read a credential file",
            format!("head -c0 {}", quoted(&file)),
            Some("the credential file is not readable on the host either"),
        ),
        None => Check::exits_zero(
            "read a credential file",
            "false".to_string(),
            Some("no credential file of the known ones exists here"),
        ),
    });
    out
}
