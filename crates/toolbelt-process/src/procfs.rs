//! The few fields of `/proc/<pid>/stat`, `environ` and `comm` that process tracking
//! reads. A process that vanished between listing and reading is simply absent: every
//! function here answers `None` or `false` rather than an error, because a process that
//! exited needs no killing.

use std::collections::HashMap;

/// One process as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// Its process id.
    pub pid: u32,
    /// The state letter: `R`, `S`, `D`, `T`, `Z` (zombie), `X` (dead), ...
    pub state: char,
    /// Its parent's pid (toolbelt for an orphan it adopted as subreaper).
    pub ppid: u32,
    /// Its process group.
    pub pgid: u32,
    /// Clock ticks after boot at which the process started: with the pid, an identity
    /// that survives pid reuse.
    pub start_time: u64,
}

impl ProcStat {
    /// Not a zombie (or a process being torn down): it can still run code.
    pub fn is_alive(&self) -> bool {
        self.state != 'Z' && self.state != 'X'
    }
}

/// Reads `/proc/<pid>/stat`.
pub fn stat(pid: u32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &text)
}

fn parse_stat(pid: u32, text: &str) -> Option<ProcStat> {
    // The command name (field 2) may hold spaces and parentheses: the fields after it
    // start after the last ')'. Field 3 is the state, 4 the parent, 5 the group, 22 the
    // start time.
    let rest = text.get(text.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(ProcStat {
        pid,
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

/// Now, in the unit of [`ProcStat::start_time`]: clock ticks of the boot-time clock.
/// A process started after this call has a start time at least this value (both are
/// the same clock, rounded down to whole ticks), so one whose start time is smaller was
/// running before. `None` where the clock cannot be read.
pub fn ticks_since_boot() -> Option<u64> {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    let per_second = rustix::param::clock_ticks_per_second();
    let nanos = u128::from(u64::try_from(now.tv_sec).ok()?) * 1_000_000_000
        + u128::from(u64::try_from(now.tv_nsec).ok()?);
    u64::try_from(nanos * u128::from(per_second) / 1_000_000_000).ok()
}

/// Every process the system shows us, in no particular order.
pub fn all() -> Vec<ProcStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(stat)
        .collect()
}

/// The processes below `root` (not `root` itself), read from the kernel's
/// `/proc/<pid>/task/<tid>/children` lists instead of every process's `stat`: the cost
/// is the size of the tree, not of the machine. `None` when the kernel has no such
/// lists (built without `CONFIG_PROC_CHILDREN`); then use [`descendants`] over [`all`].
pub fn descendants_of(root: u32) -> Option<Vec<ProcStat>> {
    // Whether the kernel keeps the lists is asked of the calling thread, which cannot
    // vanish while it asks: a thread of `root` may exit between the listing of its tasks
    // and the read of its list, and that must not pass for a kernel without lists (it
    // did, under a test harness whose threads come and go).
    if !has_children_lists() {
        return None;
    }
    let mut found: Vec<ProcStat> = Vec::new();
    let mut queue = vec![root];
    while let Some(parent) = queue.pop() {
        // A process or thread gone since it was listed has nothing below it any more.
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
                continue;
            };
            for pid in text
                .split_whitespace()
                .filter_map(|w| w.parse::<u32>().ok())
            {
                // A torn read could repeat a pid; the check keeps the walk finite.
                if pid == root || found.iter().any(|f| f.pid == pid) {
                    continue;
                }
                if let Some(p) = stat(pid) {
                    found.push(p);
                    queue.push(pid);
                }
            }
        }
    }
    Some(found)
}

/// Whether this kernel keeps `/proc/<pid>/task/<tid>/children` lists (built with
/// `CONFIG_PROC_CHILDREN`), asked once per process.
fn has_children_lists() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| std::fs::metadata("/proc/thread-self/children").is_ok())
}

/// The processes below `root` (not `root` itself), by parent links, in breadth-first
/// order.
pub fn descendants(all: &[ProcStat], root: u32) -> Vec<ProcStat> {
    let mut children: HashMap<u32, Vec<ProcStat>> = HashMap::new();
    for p in all {
        children.entry(p.ppid).or_default().push(*p);
    }
    let mut found = Vec::new();
    let mut queue = vec![root];
    while let Some(parent) = queue.pop() {
        for child in children.get(&parent).into_iter().flatten() {
            // A pid cannot be its own ancestor, but a torn read of /proc could make a
            // loop; the check keeps the walk finite.
            if child.pid != root && !found.iter().any(|f: &ProcStat| f.pid == child.pid) {
                found.push(*child);
                queue.push(child.pid);
            }
        }
    }
    found
}

/// Whether the environment the process was started with holds `key=value` exactly.
/// Unreadable (another user's process, a zombie) or empty is `false`.
pub fn has_env(pid: u32, key: &str, value: &str) -> bool {
    let holds = |environ: &[u8]| {
        environ.split(|b| *b == 0).any(|entry| {
            entry.len() == key.len() + 1 + value.len()
                && entry.starts_with(key.as_bytes())
                && entry[key.len()] == b'='
                && entry.ends_with(value.as_bytes())
        })
    };
    environ(pid, holds).is_some_and(|e| holds(&e))
}

/// The value of `key` in the environment the process was started with.
pub fn env_value(pid: u32, key: &str) -> Option<String> {
    let environ = environ(pid, |_| false)?;
    environ.split(|b| *b == 0).find_map(|entry| {
        let value = entry.strip_prefix(key.as_bytes())?.strip_prefix(b"=")?;
        Some(String::from_utf8_lossy(value).into_owned())
    })
}

/// How long `environ` of a live process is read again before a read is believed.
const EXEC_WINDOW: std::time::Duration = std::time::Duration::from_millis(50);

/// The processes whose environment was read, in tests.
#[cfg(test)]
pub(crate) static ENVIRON_READ: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// `/proc/<pid>/environ`, read so that an `execve` in progress cannot fool it.
///
/// A process caught in the middle of `execve` reads wrong for a moment: empty (the new
/// memory map has no environment yet) or cut short (a read that spans the switch ends
/// at the old, released map). Measured on a process that execs in a loop: about 1 read
/// in 30 came back empty or partial. A process caught there would lose its owner marker
/// and with it the call it belongs to: `sh -c 'setsid sleep 1000 & …'` escaped a
/// call's end this way under load.
///
/// So a read is believed when `accept` takes it (a marker found is really there: a
/// read never shows text that was not in the environment), or when two reads in a row
/// agree and are not empty, or when the process is no longer alive. Otherwise it is read
/// again, for [`EXEC_WINDOW`] at most. A process with no marker costs one more read; one
/// started with no environment at all (`env -i`) costs the whole window, and only when
/// a sweep looks at it.
fn environ(pid: u32, accept: impl Fn(&[u8]) -> bool) -> Option<Vec<u8>> {
    #[cfg(test)]
    ENVIRON_READ
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(pid);
    let path = format!("/proc/{pid}/environ");
    let deadline = std::time::Instant::now() + EXEC_WINDOW;
    let mut pause = std::time::Duration::from_micros(50);
    let mut previous: Option<Vec<u8>> = None;
    loop {
        let read = std::fs::read(&path).ok().filter(|e| !e.is_empty());
        let settled = read.as_deref().is_some_and(&accept)
            || (read.is_some() && read == previous)
            || stat(pid).is_none_or(|s| !s.is_alive())
            || std::time::Instant::now() >= deadline;
        if settled {
            return read;
        }
        if read.is_none() {
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_millis(2));
        }
        previous = read;
    }
}

/// The short command name (`comm`), for messages.
pub fn name(pid: u32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(text.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boot_clock_orders_processes_as_their_start_times_do() {
        let before = ticks_since_boot().expect("the boot-time clock");
        let me = stat(std::process::id()).expect("our own stat");
        assert!(me.start_time <= before, "{} > {before}", me.start_time);
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep");
        let started = stat(child.id()).map(|p| p.start_time);
        let after = ticks_since_boot().expect("the boot-time clock");
        let _ = child.kill();
        let _ = child.wait();
        let started = started.expect("the child's stat");
        assert!(
            before <= started && started <= after,
            "{before} <= {started} <= {after}"
        );
    }

    #[test]
    fn stat_fields_are_read_after_the_last_parenthesis() {
        let line = "42 (a (b) c) S 7 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 12345 1 1";
        let s = parse_stat(42, line);
        assert_eq!(
            s,
            Some(ProcStat {
                pid: 42,
                state: 'S',
                ppid: 7,
                pgid: 42,
                start_time: 12345
            })
        );
    }

    /// A process caught in the middle of `execve` reads an empty `environ` for a moment;
    /// the marker must still be found then (it was not, about once in 30 reads).
    #[test]
    fn a_process_that_keeps_execing_keeps_its_environment() {
        // One pid that execs `env` 300 times before it sleeps briefly and exits; again,
        // with a new process, until enough reads landed inside the churn (a loaded
        // machine may give one child few reads: how many is not the point, none missing is).
        let mut args: Vec<&str> = Vec::new();
        for _ in 0..300 {
            args.extend(["env", "HOP=1"]);
        }
        args.extend(["sleep", "0.05"]);
        let (mut reads, mut misses) = (0, 0);
        for _ in 0..50 {
            let mut child = std::process::Command::new(args[0])
                .args(&args[1..])
                .env("MARK", "x")
                .spawn()
                .unwrap();
            let pid = child.id();
            let mut reads_of_child = 0;
            while child.try_wait().unwrap().is_none() {
                let found = has_env(pid, "MARK", "x");
                let value = env_value(pid, "MARK");
                // Before its first exec the child is a copy of this process (no MARK);
                // after it exits it is a zombie. Only a live process past its first exec
                // counts.
                let live = stat(pid).is_some_and(|s| s.is_alive());
                if live && reads_of_child > 0 && (!found || value.as_deref() != Some("x")) {
                    misses += 1;
                }
                if found {
                    reads_of_child += 1;
                }
            }
            reads += reads_of_child;
            if reads > 10 {
                break;
            }
        }
        assert!(reads > 10, "too few reads to tell: {reads}");
        assert_eq!(
            misses, 0,
            "the marker was missed {misses} times in {reads} reads"
        );
    }

    #[test]
    fn our_own_process_is_listed_with_its_environment() {
        let me = std::process::id();
        let s = stat(me);
        assert!(s.is_some_and(|s| s.is_alive()));
        assert!(all().iter().any(|p| p.pid == me));
        assert!(has_env(
            me,
            "PATH",
            &std::env::var("PATH").unwrap_or_default()
        ));
        assert!(!has_env(me, "PATH", "certainly-not-the-path"));
    }

    #[test]
    fn the_children_lists_find_children_and_grandchildren_as_the_full_scan_does() {
        use std::io::BufRead;
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let grandchild: u32 = line.trim().parse().unwrap();
        let me = std::process::id();
        // Other tests' threads start and end while the lists are read (the harness runs
        // them in parallel): that must not read as a kernel without lists.
        let listed: Option<Vec<u32>> =
            descendants_of(me).map(|found| found.iter().map(|p| p.pid).collect());
        let scanned: Vec<u32> = descendants(&all(), me).iter().map(|p| p.pid).collect();
        for pid in [child.id(), grandchild] {
            assert!(scanned.contains(&pid), "{pid} not in {scanned:?}");
            match &listed {
                Some(listed) => assert!(listed.contains(&pid), "{pid} not in {listed:?}"),
                // Only a kernel built without the lists may answer None.
                None => assert!(!std::path::Path::new("/proc/thread-self/children").exists()),
            }
        }
        let _ = std::process::Command::new("kill")
            .arg(grandchild.to_string())
            .status();
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn threads_ending_during_the_walk_do_not_read_as_a_kernel_without_lists() {
        if !has_children_lists() {
            return;
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let churn = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = std::thread::spawn(|| ()).join();
                }
            })
        };
        let me = std::process::id();
        let answers: Vec<bool> = (0..300).map(|_| descendants_of(me).is_some()).collect();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = churn.join();
        assert!(
            answers.iter().all(|a| *a),
            "some walks gave up: {answers:?}"
        );
    }

    #[test]
    fn descendants_follow_parent_links() {
        let p = |pid, ppid| ProcStat {
            pid,
            state: 'S',
            ppid,
            pgid: pid,
            start_time: 0,
        };
        let all = [p(1, 0), p(10, 1), p(11, 10), p(12, 11), p(20, 1)];
        let mut found: Vec<u32> = descendants(&all, 10).iter().map(|p| p.pid).collect();
        found.sort_unstable();
        assert_eq!(found, [11, 12]);
    }
}
