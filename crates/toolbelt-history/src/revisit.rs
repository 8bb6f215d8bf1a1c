//! The walk of a process without inotify that already has the index (a one-shot `tools
//! call` seeded from the project's index file, or its second checkpoint): git's
//! "untracked cache" idea. A directory whose times and inode are what the index has, and
//! whose rule files (`.gitignore` and the like) have not changed, holds the same names
//! under the same rules as when it was listed, so it is not listed again nor matched
//! against the ignore and permission rules: only each of its files gets an lstat (by
//! name, beside the directory's descriptor), and the few that changed are read. A
//! directory that changed is listed again (what is new below it walked); when most of
//! them changed (a tree made moments ago, whose directories are all too recent to
//! trust), the root is walked once instead, since each listing is a walk of its own.
//!
//! What makes this safe:
//!
//! - The index's directory stats are taken after the start of the last sync that saw
//!   every directory (`since_ns`), and before their listing when it listed them. A
//!   change after that start gives a directory times at or after it, so one whose
//!   times are not [`RACY_NS`] older than `since_ns` is listed again (git's "racily
//!   clean" rule: a change in the same clock tick as the stat leaves the times as they
//!   were).
//! - A rule file changed, or one changed too recently to tell, anywhere in the tree or
//!   above it, or in git's configuration, or other settings and permission rules
//!   ([`rules_of_root`]): the caller walks the whole root with the rules instead.
//! - Links are never followed (`AT_SYMLINK_NOFOLLOW`, and a directory is opened with
//!   `O_NOFOLLOW`), as the walk does not follow them.
//!
//! What stat-based caching cannot see, it does not see here either (git has the same
//! limit): a file rewritten with its size, times and inode all put back as they were.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use toolbelt_config::settings::Settings;
use toolbelt_core::WorkspaceRoots;

use crate::history::RootIndex;
use crate::index::{DirNode, DirStat, Node, join};
use crate::scan::{RACY_NS, Scan, ScanError, rel_path, same_stat};
use crate::tree::{EntryKind, Leaf};

fn nanos(secs: i64, nsec: i64) -> i64 {
    secs.saturating_mul(1_000_000_000).saturating_add(nsec)
}

/// Adds a stamp of `files` to `hasher` (each one's stat, links followed, or that it is
/// missing); false when one changed within [`RACY_NS`] of `now_ns` (its stat cannot
/// tell yet).
fn stamp_files(hasher: &mut blake3::Hasher, files: &[std::path::PathBuf], now_ns: i64) -> bool {
    for file in files {
        hasher.update(file.as_os_str().as_bytes());
        hasher.update(b"\0");
        match std::fs::metadata(file) {
            Ok(m) => {
                let (mtime, ctime) = (
                    nanos(m.mtime(), m.mtime_nsec()),
                    nanos(m.ctime(), m.ctime_nsec()),
                );
                // As for files, the modification time says how recent a change is (the
                // change time too is compared, for equality, below).
                if mtime.saturating_add(RACY_NS) >= now_ns {
                    return false;
                }
                for n in [
                    m.len(),
                    mtime as u64,
                    ctime as u64,
                    m.ino(),
                    u64::from(m.mode()),
                ] {
                    hasher.update(&n.to_le_bytes());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                hasher.update(b"missing");
            }
            Err(_) => {
                hasher.update(b"unreadable");
            }
        }
    }
    true
}

fn finish(hasher: &blake3::Hasher) -> [u8; 16] {
    let mut out = [0; 16];
    out.copy_from_slice(&hasher.finalize().as_bytes()[..16]);
    out
}

/// The stamp of what shapes a walk of `root` outside its tree: the ignore settings, the
/// permission rules, the excluded directories, and the rule files of its parents and of
/// git's configuration. `None` when one of those files changed too recently to tell.
pub(crate) fn rules_of_root(
    roots: &WorkspaceRoots,
    settings: &Settings,
    exclude: &[std::path::PathBuf],
    root: &Path,
    now_ns: i64,
) -> Option<[u8; 16]> {
    let mut hasher = blake3::Hasher::new();
    let filtering = &settings.context.file_filtering;
    hasher.update(
        format!(
            "{} {} {:?} {}\n",
            filtering.respect_git_ignore,
            filtering.respect_qwen_ignore,
            exclude,
            roots.path_policy().walk_fingerprint()
        )
        .as_bytes(),
    );
    hasher.update(root.as_os_str().as_bytes());
    let files = toolbelt_tools::walk_rule_files(root);
    stamp_files(&mut hasher, &files, now_ns).then(|| finish(&hasher))
}

/// A directory's mode and stat (lstat: a link is not a directory); the stat is `None`
/// when one of its rule files changed too recently to tell. `None` when it is no
/// directory now.
pub(crate) fn dir_stat(abs: &Path, now_ns: i64) -> Option<(u32, Option<DirStat>)> {
    let meta = std::fs::symlink_metadata(abs).ok().filter(|m| m.is_dir())?;
    let mode = meta.permissions().mode() & 0o7777;
    let mut hasher = blake3::Hasher::new();
    let mut files: Vec<_> = toolbelt_tools::DIRECTORY_RULE_FILES
        .iter()
        .map(|name| abs.join(name))
        .collect();
    files.extend(linked_exclude(abs));
    let stat = stamp_files(&mut hasher, &files, now_ns).then(|| DirStat {
        mtime_ns: nanos(meta.mtime(), meta.mtime_nsec()),
        ctime_ns: nanos(meta.ctime(), meta.ctime_nsec()),
        ino: meta.ino(),
        rules: finish(&hasher),
    });
    Some((mode, stat))
}

/// The excludes file of the repository whose `.git` in `dir` is a file (a linked
/// worktree: `gitdir: <path>`, its `commondir` naming the main `.git`), which git's
/// ignore rules read there instead of `dir/.git/info/exclude`.
fn linked_exclude(dir: &Path) -> Option<std::path::PathBuf> {
    use rustix::fs::{Mode, OFlags};
    use std::io::Read;
    let mut text = String::new();
    // Not through a link, and never blocking on a FIFO put there.
    let fd = rustix::fs::open(
        dir.join(".git"),
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let file = std::fs::File::from(fd);
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    file.take(4096).read_to_string(&mut text).ok()?;
    let gitdir = dir.join(text.strip_prefix("gitdir:")?.trim());
    let common = match std::fs::read_to_string(gitdir.join("commondir")) {
        Ok(c) => gitdir.join(c.trim()),
        Err(_) => gitdir,
    };
    Some(common.join("info").join("exclude"))
}

/// Whether `st` (an lstat taken now) says the file or link `old` records is unchanged.
fn unchanged(old: &Leaf, st: &rustix::fs::Stat) -> bool {
    let kind = rustix::fs::FileType::from_raw_mode(st.st_mode);
    let kind_same = match old.kind {
        EntryKind::File | EntryKind::Omitted => kind == rustix::fs::FileType::RegularFile,
        EntryKind::Link => kind == rustix::fs::FileType::Symlink,
        EntryKind::Dir => false,
    };
    let probe = Leaf {
        kind: old.kind,
        mode: st.st_mode & 0o7777,
        size: st.st_size as u64,
        mtime_ns: nanos(st.st_mtime, st.st_mtime_nsec as i64),
        ctime_ns: nanos(st.st_ctime, st.st_ctime_nsec as i64),
        ino: st.st_ino,
        hash: old.hash,
    };
    kind_same && same_stat(old, &probe)
}

/// The files and links of the unchanged directory `dir` (at `abs`) whose lstat (by name,
/// beside the directory's descriptor) differs from what the index has.
fn changed_in(abs: &Path, node: &DirNode) -> Vec<(Vec<u8>, Leaf)> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    let fd = rustix::fs::open(
        abs,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    );
    let mut again = Vec::new();
    for (name, child) in &node.children {
        let Node::Leaf(leaf) = child else {
            continue;
        };
        let same = match &fd {
            Ok(fd) => rustix::fs::statat(
                fd,
                std::ffi::OsStr::from_bytes(name),
                AtFlags::SYMLINK_NOFOLLOW,
            )
            .is_ok_and(|st| unchanged(leaf, &st)),
            Err(_) => false,
        };
        if !same {
            again.push((name.clone(), *leaf));
        }
    }
    again
}

/// [`changed_in`] for each of `dirs`, on one thread per core (an lstat is most of what
/// an unchanged workspace costs); each found file with its directory.
fn changed_files(
    abs_root: &Path,
    tree: &DirNode,
    dirs: &[Vec<u8>],
) -> Vec<(Vec<u8>, Vec<u8>, Leaf)> {
    let threads = toolbelt_tools::cores().clamp(1, 8);
    let chunk = dirs.len().div_ceil(threads).max(16);
    let look = |part: &[Vec<u8>]| {
        let mut out = Vec::new();
        for dir in part {
            if let Some(node) = tree.dir(dir) {
                let abs = abs_root.join(rel_path(dir));
                out.extend(
                    changed_in(&abs, node)
                        .into_iter()
                        .map(|(n, l)| (dir.clone(), n, l)),
                );
            }
        }
        out
    };
    if dirs.len() <= chunk {
        return look(dirs);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = dirs
            .chunks(chunk)
            .skip(1)
            .map(|part| scope.spawn(move || look(part)))
            .collect();
        let mut out = look(dirs.chunks(chunk).next().unwrap_or_default());
        for h in handles {
            // A thread that panicked found nothing to trust: its files are read again.
            match h.join() {
                Ok(found) => out.extend(found),
                Err(_) => return None,
            }
        }
        Some(out)
    })
    .unwrap_or_else(|| {
        dirs.iter()
            .filter_map(|d| Some((d, tree.dir(d)?)))
            .flat_map(|(d, node)| {
                node.children.iter().filter_map(move |(n, c)| match c {
                    Node::Leaf(l) => Some((d.clone(), n.clone(), *l)),
                    Node::Dir(_) => None,
                })
            })
            .collect()
    })
}

/// What a directory of the index is now, by its stat ([`Scan::revisit`]).
enum Look {
    /// Its stat or a rule file's cannot tell (unknown, changed too recently), or its
    /// rule files changed: the whole root is walked.
    Unknown,
    /// No directory there now.
    Gone,
    /// Listed again.
    Changed,
    /// The same names under the same rules: only its files' stats are compared.
    Settled,
}

/// [`Look`] of the index's directory `node` at `abs`, whose stat held from `since_ns`.
fn look_at(abs: &Path, node: &DirNode, since_ns: i64, now_ns: i64) -> Look {
    let Some(old) = node.stat else {
        return Look::Unknown;
    };
    match dir_stat(abs, now_ns) {
        None => Look::Gone,
        Some((_, None)) => Look::Unknown,
        Some((_, Some(now))) if now.rules != old.rules => Look::Unknown,
        Some((mode, Some(now))) => {
            let settled = old.mtime_ns.saturating_add(RACY_NS) < since_ns;
            if settled && now == old && mode == node.mode {
                Look::Settled
            } else {
                Look::Changed
            }
        }
    }
}

/// [`Look`] of every directory of the index below `abs_root`, from its stat alone;
/// `None` when one cannot tell, or the root is gone (the root is walked).
fn look_at_all(
    abs_root: &Path,
    tree: &DirNode,
    since_ns: i64,
    now_ns: i64,
) -> Option<std::collections::HashMap<Vec<u8>, Look>> {
    let mut looks = std::collections::HashMap::new();
    let mut stack: Vec<Vec<u8>> = vec![Vec::new()];
    while let Some(dir) = stack.pop() {
        let Some(node) = tree.dir(&dir) else {
            continue;
        };
        let look = look_at(&abs_root.join(rel_path(&dir)), node, since_ns, now_ns);
        match look {
            Look::Unknown => return None,
            Look::Gone if dir.is_empty() => return None,
            _ => {}
        }
        for (name, child) in &node.children {
            if matches!(child, Node::Dir(_)) {
                stack.push(join(&dir, name));
            }
        }
        looks.insert(dir, look);
    }
    Some(looks)
}

impl Scan<'_> {
    /// Brings a whole root up to date: by its directories' stats when it can (no
    /// inotify, and the rules outside its tree those of its index), else by a walk.
    /// Returns whether it was revisited.
    pub(crate) fn whole_root(&mut self, i: usize, root: &mut RootIndex) -> Result<bool, ScanError> {
        let path = root.path.clone();
        let rules = rules_of_root(self.roots, self.settings, self.exclude, &path, self.now_ns);
        let quick = match (rules, root.rules, root.since_ns) {
            (Some(now), Some(was), Some(since)) if now == was && self.watcher.is_none() => {
                self.revisit(i, &path, &mut root.tree, since)?
            }
            _ => false,
        };
        if !quick {
            root.tree = self.tree(i, &path, b"", Some(&root.tree))?;
        }
        root.rules = rules;
        root.since_ns = Some(self.now_ns);
        Ok(quick)
    }

    /// Brings `tree` (root `root` at `abs_root`) up to date by the directories' stats
    /// (see the module documentation); `since_ns` is when the index's stats began to
    /// hold. `false` when it cannot tell (a directory's stat unknown, a rule file
    /// changed): the caller walks the root instead.
    pub(crate) fn revisit(
        &mut self,
        root: usize,
        abs_root: &Path,
        tree: &mut DirNode,
        since_ns: i64,
    ) -> Result<bool, ScanError> {
        let Some(mut looks) = look_at_all(abs_root, tree, since_ns, self.now_ns) else {
            return Ok(false);
        };
        // Each directory listed again is a walk with its own set-up (the ignore files of
        // every parent up to `/`, git's configuration): when at least two and at least
        // half of them must be, one walk of the root costs less and finds the same (a
        // freshly made tree, where every directory is "racily clean", always does).
        let again = looks
            .values()
            .filter(|l| !matches!(l, Look::Settled))
            .count();
        if again >= 2 && again * 2 >= looks.len() {
            return Ok(false);
        }
        let mut stack: Vec<Vec<u8>> = vec![Vec::new()];
        let mut replaced: Vec<Vec<u8>> = Vec::new();
        let mut settled_dirs: Vec<Vec<u8>> = Vec::new();
        while let Some(dir) = stack.pop() {
            let Some(node) = tree.dir(&dir) else {
                continue;
            };
            // A directory the first pass did not see (none should come: one listed again
            // has what is new below it walked whole) is looked at now.
            let look = looks.remove(&dir).unwrap_or_else(|| {
                look_at(&abs_root.join(rel_path(&dir)), node, since_ns, self.now_ns)
            });
            match look {
                Look::Unknown => return Ok(false),
                Look::Gone if dir.is_empty() => return Ok(false),
                Look::Gone => {
                    // Gone: listing it again removes it from the tree.
                    self.relist(root, abs_root, tree, &dir, &mut replaced)?;
                    continue;
                }
                Look::Settled => settled_dirs.push(dir.clone()),
                Look::Changed => self.relist(root, abs_root, tree, &dir, &mut replaced)?,
            }
            if let Some(node) = tree.dir(&dir) {
                for (name, child) in &node.children {
                    let rel = join(&dir, name);
                    if matches!(child, Node::Dir(_)) && !replaced.contains(&rel) {
                        stack.push(rel);
                    }
                }
            }
        }
        let mut again = changed_files(abs_root, tree, &settled_dirs);
        // Files read too close to a change are read again, whatever their stat says.
        let settled: std::collections::HashSet<&[u8]> =
            settled_dirs.iter().map(Vec::as_slice).collect();
        for (r, rel) in self.recent.iter() {
            if *r != root {
                continue;
            }
            let (dir, name) = crate::index::split_last(rel);
            if let Some(Node::Leaf(l)) = tree.get(rel)
                && settled.contains(dir)
                && !again.iter().any(|(d, n, _)| d == dir && n == name)
            {
                again.push((dir.to_vec(), name.to_vec(), *l));
            }
        }
        for (dir, name, old) in again {
            let rel = join(&dir, &name);
            let child_abs = abs_root.join(rel_path(&rel));
            match self.entry(root, &child_abs, &rel, Some(&old), false)? {
                Some(Node::Leaf(new)) if new == old => {}
                Some(node) => {
                    tree.set(&rel, node);
                }
                None => {
                    tree.remove(&rel);
                }
            }
        }
        Ok(true)
    }
}
