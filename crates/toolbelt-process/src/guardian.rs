//! The guardian: what ends toolbelt's processes when toolbelt cannot.
//!
//! toolbelt ends everything it started on every ending it sees (a return, a caught
//! signal: [`crate::end_descendants_blocking`]). It sees nothing of SIGKILL, a signal it
//! does not catch, an abort (`panic = abort`, a stack overflow) or a panic that unwinds
//! out of `main`; and once it is gone its orphans re-parent to init (or the next
//! subreaper), out of its tree. The guardian is a second process that outlives it for
//! exactly that moment:
//!
//! - It is toolbelt's own binary run again (`/proc/self/exe __guardian <token>
//!   <start time>`), started just before the first process that the kernel would not
//!   end with toolbelt ([`crate::GroupCommand`] starts it). An approved command in the
//!   shared PID namespace needs none: the namespace's holder exits when toolbelt does,
//!   and the kernel then kills everything in it. So a run that starts nothing, or only
//!   approved commands in that namespace, pays nothing (an exec of the 60 MB binary,
//!   about 2 ms of CPU, issue 49); an MCP or language server, a hook, an unasked
//!   command, a kept job, or any command where the namespace is not granted, starts
//!   it.
//! - Its stdin is a pipe whose only writer is toolbelt (close-on-exec, so no child
//!   holds it). When toolbelt ends, however it ends, the kernel closes that end and the
//!   guardian reads end-of-file. Until then it sleeps in `read`; it costs no CPU.
//! - It runs in a process group of its own, so a signal to toolbelt's group (Ctrl-C or
//!   Ctrl-\ at a terminal, `kill -- -PGID`) does not reach it, and it carries no owner
//!   marker, so no sweep of an enclosing toolbelt takes it for a leftover.
//! - At end-of-file it ends every process whose owner marker belongs to this toolbelt
//!   (TERM, a grace period, KILL) and everything below those, except the markers
//!   toolbelt told it to keep (`keep <marker>` lines: background jobs the settings keep),
//!   then exits. After a normal exit toolbelt has already ended everything, so the
//!   sweep finds nothing.
//!
//! **Whom it may kill.** Once toolbelt is dead its former descendants cannot be told from
//! other processes by ancestry (they have been re-parented), so the guardian goes by the
//! marker, and makes the marker something only toolbelt's processes carry: each
//! toolbelt draws a random 128-bit token ([`instance_token`]) and every marker is
//! `<token>.<n>.<random>` (the random part keeps a command that reads its own marker from
//! naming any other). A process carries it only when it inherited it from a process toolbelt
//! started, or when such a process handed it on deliberately (then it is a process that
//! toolbelt's command caused to run). On top of that a process must have started no
//! earlier than toolbelt and be one the guardian may read the environment of (same user,
//! not set-uid), which is also the condition for being allowed to signal it. Signals go
//! through a pidfd after checking the start time, so a reused pid is never hit.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::{BufRead, Write};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use rustix::process::Signal;

use crate::owner::{AFTER_KILL, OWNER_VAR, below_and_including, signal_exact};
use crate::procfs::{self, ProcStat};

/// The hidden first argument that makes the binary a guardian.
pub const GUARDIAN_ARG: &str = "__guardian";

/// Whether this process starts a guardian (the binary says so; library tests do not).
static ENABLED: OnceLock<bool> = OnceLock::new();
/// The running guardian: its identity (never to be swept by toolbelt itself) and the
/// write end of its pipe.
static RUNNING: Mutex<Option<Running>> = Mutex::new(None);
static STARTED: std::sync::Once = std::sync::Once::new();

struct Running {
    pid: u32,
    pipe: ChildStdin,
}

/// Makes this process start a guardian with its first owner. Called by the binary,
/// first thing; the guardian is the binary itself run with [`GUARDIAN_ARG`].
pub fn enable() {
    let _ = ENABLED.set(true);
}

/// This toolbelt's random token: the first part of every owner marker it hands out.
/// 32 hex digits from the kernel's random source (`/dev/urandom`).
pub fn instance_token() -> &'static str {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN.get_or_init(|| {
        let mut bytes = [0u8; 16];
        let read = std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes));
        if read.is_err() {
            // No random source: a token that is still unique per process, if guessable.
            let unique = std::hash::BuildHasher::hash_one(
                &std::collections::hash_map::RandomState::new(),
                (std::process::id(), Instant::now()),
            );
            bytes[..8].copy_from_slice(&unique.to_le_bytes());
        }
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    })
}

/// Starts the guardian, once, if the binary enabled it. A failure is a warning: the
/// endings toolbelt sees itself still clean up.
pub(crate) fn ensure_started() {
    if ENABLED.get() != Some(&true) {
        return;
    }
    STARTED.call_once(|| match spawn() {
        Ok(running) => {
            *RUNNING.lock().unwrap_or_else(PoisonError::into_inner) = Some(running);
        }
        Err(e) => tracing::warn!(
            "cannot start the guardian ({e}): if toolbelt is killed, what it started may outlive it"
        ),
    });
}

fn spawn() -> std::io::Result<Running> {
    use std::os::unix::process::CommandExt;
    let me = std::process::id();
    let start_time = procfs::stat(me).map_or(0, |s| s.start_time);
    let mut child = Command::new("/proc/self/exe")
        .arg0("toolbelt")
        .arg(GUARDIAN_ARG)
        .arg(instance_token())
        .arg(start_time.to_string())
        .env_remove(OWNER_VAR)
        // It must hold no directory busy (an unmount, a removed temp dir).
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    let pipe = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("no pipe to the guardian"))?;
    // The guardian outlives us by design; its status is nobody's business (dropping a
    // `Child` neither kills nor waits).
    Ok(Running {
        pid: child.id(),
        pipe,
    })
}

/// The guardian's pid, if one runs: toolbelt's own sweep leaves it alone.
pub(crate) fn pid() -> Option<u32> {
    RUNNING
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .map(|r| r.pid)
}

/// Tells the guardian to spare `marker`'s processes.
pub(crate) fn keep(marker: &str) {
    let mut running = RUNNING.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(r) = running.as_mut() {
        // One short line is one atomic pipe write; the guardian always reads, so it never
        // blocks. A dead guardian (EPIPE) has nothing left to spare.
        let _ = writeln!(r.pipe, "keep {marker}");
    }
}

/// The guardian's `main`: `args` are what follows [`GUARDIAN_ARG`] (the token and
/// toolbelt's start time). Waits for toolbelt to end, ends what it left, returns the exit
/// code.
pub fn run(args: &[OsString]) -> u8 {
    let (Some(token), Some(not_before)) = (
        args.first().and_then(|t| t.to_str()),
        args.get(1)
            .and_then(|t| t.to_str())
            .and_then(|t| t.parse::<u64>().ok()),
    ) else {
        return 2;
    };
    // A token that is not ours in shape would match too much (an empty prefix).
    if token.len() < 16 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return 2;
    }
    // Its name in `ps` and `top` (`exe` otherwise, after `/proc/self/exe`).
    let _ = std::fs::write("/proc/self/comm", "toolbelt-guard");
    let mut kept = HashSet::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if let Some(marker) = line.strip_prefix("keep ") {
            kept.insert(marker.to_string());
        }
    }
    sweep(token, not_before, &kept, crate::KILL_GRACE);
    0
}

/// How many times a sweep looks again: a process that forked while the previous round
/// was being ended is found by the next.
const ROUNDS: usize = 4;

/// Ends every live process whose owner marker starts with `<token>.` and that started
/// at or after `not_before` (clock ticks after boot), and everything below them, except
/// the markers in `kept` and everything below those. TERM, up to `grace`, then KILL.
/// Returns how many processes it signalled.
pub fn sweep(token: &str, not_before: u64, kept: &HashSet<String>, grace: Duration) -> usize {
    let prefix = format!("{token}.");
    let mut total = 0;
    for _ in 0..ROUNDS {
        let targets = find(&prefix, not_before, kept);
        if targets.is_empty() {
            break;
        }
        total += targets.len();
        end(&targets, grace);
    }
    total
}

/// The processes a sweep ends now.
fn find(prefix: &str, not_before: u64, kept: &HashSet<String>) -> Vec<ProcStat> {
    let me = std::process::id();
    let all: Vec<ProcStat> = procfs::all()
        .into_iter()
        .filter(|p| p.pid != me && p.is_alive() && p.start_time >= not_before)
        .collect();
    let (mut seeds, mut spared_roots) = (Vec::new(), Vec::new());
    for p in &all {
        match procfs::env_value(p.pid, OWNER_VAR) {
            Some(m) if m.starts_with(prefix) && kept.contains(&m) => spared_roots.push(p.pid),
            Some(m) if m.starts_with(prefix) => seeds.push(p.pid),
            _ => {}
        }
    }
    let spared: HashSet<u32> = below_and_including(&all, &spared_roots)
        .iter()
        .map(|p| p.pid)
        .collect();
    below_and_including(&all, &seeds)
        .into_iter()
        .filter(|p| !spared.contains(&p.pid))
        .collect()
}

fn end(targets: &[ProcStat], grace: Duration) {
    for p in targets {
        signal_exact(p, Signal::TERM);
    }
    if !wait_dead(targets, grace) {
        for p in targets {
            signal_exact(p, Signal::KILL);
        }
        wait_dead(targets, grace.max(AFTER_KILL));
    }
}

/// Whether every target is gone or a zombie (its new parent reaps it), within `limit`.
fn wait_dead(targets: &[ProcStat], limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        let alive = targets.iter().any(|p| {
            procfs::stat(p.pid).is_some_and(|now| now.start_time == p.start_time && now.is_alive())
        });
        if !alive {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests;
