//! What a command run unasked may not read: terminals, toolbelt's store, the
//! credential files toolbelt knows and every path a `Read(...)` deny rule names.
//!
//! Landlock is an allowlist with no exceptions: a rule on a directory allows everything
//! beneath it. So reading is allowed path by path around the hidden ones: from `/` down
//! to each hidden path, every entry of each directory on the way gets a rule except the
//! next directory on the way (which is handled one level down) and the hidden path
//! itself. The directories on the way get no rule of their own. Rules are on resolved
//! paths; symbolic links among the entries get none (what they point to is allowed or
//! not where it lives), and a hidden path that does not exist needs nothing.
//!
//! Listing a directory (`READ_DIR`) is not confined: Landlock cannot allow listing `/`,
//! the home or a workspace without everything beneath them, so hiding names would make
//! those unlistable. Names and metadata (`stat`, which Landlock never confines) stay
//! visible; contents do not (reading, and executing, which reads).
//!
//! A deny rule with a wildcard (`Read(.env)`, `Read(//etc/*.key)`) is expanded: its
//! literal directory is walked (without following links) and what the rules name in it
//! is hidden; past [`GLOB_WALK_BUDGET`] entries the whole literal directory is hidden
//! instead, which is safe but may hide the workspace itself.
//!
//! Building the rules costs a directory listing per level and an `open` per rule, so the
//! ruleset is kept per process for the same hidden set, with a stamp (device, inode,
//! modification time) of every directory it listed or walked and of the nearest
//! existing parent of each missing hidden path; any change (an entry created, removed or
//! renamed) builds it again. A directory changed in the last two seconds is not trusted
//! to show a later change in its time, so such a build is not kept.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use landlock::{AccessFs, BitFlags, PathBeneath, PathFd, RulesetCreated};
use toolbelt_core::PathPolicy;
use toolbelt_core::ToolEnvironment;

/// Credential files and directories, relative to the home, that toolbelt knows: its
/// own keys, then the usual places of other tools' secrets. One table.
pub const CREDENTIAL_FILES: &[&str] = &[
    ".qwen/.env",
    ".qwen/oauth_creds.json",
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".config/gcloud",
    ".config/gh/hosts.yml",
    ".config/hub",
    ".docker/config.json",
    ".kube",
    ".azure",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".pgpass",
    ".vault-token",
    ".password-store",
    ".local/share/keyrings",
    ".terraform.d/credentials.tfrc.json",
];

/// Terminals, and the `/dev` name prefixes of terminal and console-memory devices.
const TERMINALS: &[&str] = &["/dev/pts", "/dev/tty", "/dev/console"];
const TERMINAL_PREFIXES: &[&str] = &["tty", "vcs"];

/// Entries a deny rule's wildcard walk looks at before it hides the whole directory.
const GLOB_WALK_BUDGET: usize = 20_000;

/// A directory changed this recently may change again within its time's granularity.
const SETTLED: Duration = Duration::from_secs(2);

/// What to hide from a command run unasked, as the session gives it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Hidden {
    /// Hidden with all they hold.
    paths: Vec<PathBuf>,
    /// Directories beneath which the deny rules name paths by a wildcard.
    walked: Vec<PathBuf>,
    /// The deny rules, to tell which walked paths they name.
    policy: PathPolicy,
    /// Readable again beneath a hidden path (the session's own directory).
    reopened: Vec<PathBuf>,
}

impl Hidden {
    /// Toolbelt's store (but the session's own directory in it, and `own_logs`, the
    /// job logs of the connection the call came from), the credentials beneath the
    /// home and what the deny rules on reading name (terminals are always hidden).
    pub(crate) fn of_session(env: &ToolEnvironment, own_logs: Option<PathBuf>) -> Hidden {
        let mut hidden = Hidden::default();
        if let Some(store) = &env.toolbelt_home {
            hidden.paths.push(store.clone());
            hidden.reopened.push(env.session_dir.clone());
            hidden.reopened.extend(own_logs);
        }
        if let Some(home) = &env.user_home {
            hidden
                .paths
                .extend(CREDENTIAL_FILES.iter().map(|c| home.join(c)));
        }
        let policy = env.roots.path_policy();
        for (path, exact) in policy.denied_reads() {
            if exact {
                hidden.paths.push(path);
            } else {
                hidden.walked.push(path);
            }
        }
        if !hidden.walked.is_empty() {
            hidden.policy = policy.clone();
        }
        hidden
    }
}

impl Hidden {
    /// Whether nothing hidden lies in `/proc` (the terminals never do), so that a `/proc`
    /// mounted in the child's own namespace may be readable whole.
    pub(crate) fn leaves_proc_readable(&self) -> bool {
        let proc = Path::new("/proc");
        !self
            .paths
            .iter()
            .chain(&self.walked)
            .any(|p| p.starts_with(proc) || proc.starts_with(p))
    }
}

/// The identity and modification time of a directory, or that it is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    path: PathBuf,
    seen: Option<(u64, u64, i64, i64)>,
}

impl Stamp {
    fn of(path: &Path) -> Stamp {
        let seen = std::fs::metadata(path)
            .ok()
            .map(|m| (m.dev(), m.ino(), m.mtime(), m.mtime_nsec()));
        Stamp {
            path: path.to_path_buf(),
            seen,
        }
    }

    fn unchanged(&self) -> bool {
        *self == Stamp::of(&self.path)
    }

    fn settled(&self, now: SystemTime) -> bool {
        let Some((.., secs, nanos)) = self.seen else {
            return true;
        };
        let changed = SystemTime::UNIX_EPOCH
            + Duration::new(secs.max(0) as u64, nanos.clamp(0, 999_999_999) as u32);
        now.duration_since(changed).is_ok_and(|d| d >= SETTLED)
    }
}

/// The hidden paths resolved, and what must not change for the rules to stay right.
struct Resolved {
    hidden: Vec<PathBuf>,
    stamps: Vec<Stamp>,
}

fn resolve(h: &Hidden) -> Resolved {
    let mut hidden = Vec::new();
    let mut stamps = Vec::new();
    let mut candidates: Vec<PathBuf> = TERMINALS.iter().map(PathBuf::from).collect();
    candidates.extend(h.paths.iter().cloned());
    if let Ok(entries) = std::fs::read_dir("/dev") {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if TERMINAL_PREFIXES.iter().any(|p| name.starts_with(p)) {
                candidates.push(entry.path());
            }
        }
    }
    // A path created later must be seen: its nearest existing parent changes then.
    let missing = |path: &Path, stamps: &mut Vec<Stamp>| {
        if let Some(parent) = path.ancestors().skip(1).find(|p| p.is_dir()) {
            stamps.push(Stamp::of(parent));
        }
    };
    for path in candidates {
        match path.canonicalize() {
            Ok(real) => hidden.push(real),
            Err(_) => missing(&path, &mut stamps),
        }
    }
    for root in &h.walked {
        match root.canonicalize() {
            Ok(root) => walk_denied(&root, &h.policy, &mut hidden, &mut stamps),
            Err(_) => missing(root, &mut stamps),
        }
    }
    hidden.sort();
    hidden.dedup();
    // A path beneath another hidden one is hidden with it.
    let mut kept: Vec<PathBuf> = Vec::new();
    for path in hidden {
        if !kept.iter().any(|k| path.starts_with(k)) {
            kept.push(path);
        }
    }
    Resolved {
        hidden: kept,
        stamps,
    }
}

/// Hides what `policy` denies beneath `root`, or `root` itself past the budget.
fn walk_denied(
    root: &Path,
    policy: &PathPolicy,
    hidden: &mut Vec<PathBuf>,
    stamps: &mut Vec<Stamp>,
) {
    if policy.denies_reading(root) {
        hidden.push(root.to_path_buf());
        return;
    }
    let mut found = Vec::new();
    let mut walked = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        walked.push(Stamp::of(&dir));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > GLOB_WALK_BUDGET {
                hidden.push(root.to_path_buf());
                return;
            }
            let path = entry.path();
            if policy.denies_reading(&path) {
                found.push(path);
            } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            }
        }
    }
    hidden.extend(found);
    stamps.extend(walked);
}

/// The read rules around `resolved.hidden`, and the directories they listed.
fn read_rules(
    resolved: &Resolved,
    reopened: &[PathBuf],
    access: BitFlags<AccessFs>,
) -> (Vec<PathBeneath<PathFd>>, Vec<Stamp>) {
    let mut on_the_way: Vec<PathBuf> = resolved
        .hidden
        .iter()
        .flat_map(|h| h.ancestors().skip(1).map(Path::to_path_buf))
        .collect();
    on_the_way.sort();
    on_the_way.dedup();
    let mut rules = Vec::new();
    let mut stamps = Vec::new();
    let allow = |path: &Path, rules: &mut Vec<PathBeneath<PathFd>>| {
        if let Ok(fd) = PathFd::new(path) {
            rules.push(PathBeneath::new(fd, access));
        }
    };
    if on_the_way.is_empty() && resolved.hidden.is_empty() {
        allow(Path::new("/"), &mut rules);
    }
    for dir in &on_the_way {
        stamps.push(Stamp::of(dir));
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let link = entry.file_type().map_or(true, |t| t.is_symlink());
            if link || on_the_way.binary_search(&path).is_ok() || resolved.hidden.contains(&path) {
                continue;
            }
            allow(&path, &mut rules);
        }
    }
    for path in reopened {
        if let Ok(real) = path.canonicalize() {
            allow(&real, &mut rules);
        }
    }
    (rules, stamps)
}

struct Cached {
    key: Hidden,
    stamps: Vec<Stamp>,
    ruleset: RulesetCreated,
}

/// Rulesets of the last few hidden sets (a process may serve several workspaces).
static CACHE: Mutex<Vec<Cached>> = Mutex::new(Vec::new());
const CACHED_SETS: usize = 8;

/// The read-only ruleset for `hidden`: kept from an earlier call while nothing it
/// depends on changed, else made by `build` from the read rules (`access` on each).
pub(crate) fn ruleset<E>(
    hidden: &Hidden,
    access: BitFlags<AccessFs>,
    build: impl FnOnce(Vec<PathBeneath<PathFd>>) -> Result<RulesetCreated, E>,
) -> Result<RulesetCreated, E> {
    ruleset_at(SystemTime::now(), hidden, access, build)
}

fn ruleset_at<E>(
    now: SystemTime,
    hidden: &Hidden,
    access: BitFlags<AccessFs>,
    build: impl FnOnce(Vec<PathBeneath<PathFd>>) -> Result<RulesetCreated, E>,
) -> Result<RulesetCreated, E> {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = cache.iter().position(|c| c.key == *hidden) {
        let c = cache.remove(i);
        if c.stamps.iter().all(Stamp::unchanged)
            && let Ok(copy) = c.ruleset.try_clone()
        {
            cache.push(c);
            return Ok(copy);
        }
    }
    let resolved = resolve(hidden);
    let (rules, listed) = read_rules(&resolved, &hidden.reopened, access);
    let ruleset = build(rules)?;
    let mut stamps = resolved.stamps;
    stamps.extend(listed);
    if stamps.iter().all(|s| s.settled(now))
        && let Ok(kept) = ruleset.try_clone()
    {
        if cache.len() >= CACHED_SETS {
            cache.remove(0);
        }
        cache.push(Cached {
            key: hidden.clone(),
            stamps,
            ruleset: kept,
        });
    }
    Ok(ruleset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use landlock::{RulesetAttr, RulesetCreatedAttr};

    /// Builds a ruleset at `now`, counting builds in `builds`.
    fn build_at(now: SystemTime, hidden: &Hidden, builds: &mut u32) {
        ruleset_at(now, hidden, AccessFs::ReadFile.into(), |rules| {
            *builds += 1;
            landlock::Ruleset::default()
                .handle_access(AccessFs::ReadFile)?
                .create()?
                .add_rules(rules.into_iter().map(Ok::<_, landlock::RulesetError>))
        })
        .unwrap();
    }

    #[test]
    fn terminals_are_always_hidden() {
        let hidden = resolve(&Hidden::default()).hidden;
        for t in ["/dev/pts", "/dev/tty", "/dev/console"] {
            let t = Path::new(t);
            assert!(
                !t.exists() || hidden.iter().any(|h| t.starts_with(h)),
                "{hidden:?}"
            );
        }
    }

    #[test]
    fn the_ruleset_is_kept_until_a_listed_directory_changes() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap().join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        // An hour old, so the next change shows in the directory's time.
        let old = rustix::fs::Timespec {
            tv_sec: (SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_secs()
                - 3600) as i64,
            tv_nsec: 0,
        };
        let times = rustix::fs::Timestamps {
            last_access: old,
            last_modification: old,
        };
        rustix::fs::utimensat(rustix::fs::CWD, &home, &times, rustix::fs::AtFlags::empty())
            .unwrap();
        let hidden = Hidden {
            paths: vec![home.join(".ssh"), home.join(".aws")],
            ..Hidden::default()
        };
        // Far enough ahead that every directory listed counts as settled.
        let later = SystemTime::now() + Duration::from_secs(3600);
        let mut builds = 0;
        build_at(later, &hidden, &mut builds);
        assert_eq!(builds, 1);
        std::fs::create_dir(home.join(".aws")).unwrap();
        let mut after = 0;
        build_at(later, &hidden, &mut after);
        assert_eq!(after, 1, "a new hidden path must build the rules again");
    }
}
