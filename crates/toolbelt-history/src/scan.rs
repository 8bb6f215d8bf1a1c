//! Bringing a root's index up to date with the disk: a whole walk (the first
//! checkpoint, after an overflow, without inotify), or only the directories and files
//! the watcher named. A file whose stat (size, times, inode, mode) is what the index
//! has is not read again, except within [`RACY_NS`] of when it was read (git's "racily
//! clean" rule: a write in the same clock tick leaves the times unchanged). A file over
//! the size cap is recorded as left out; one that cannot be read is named.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use toolbelt_config::settings::Settings;
use toolbelt_core::WorkspaceRoots;

use crate::hash::ContentHash;
use crate::index::{DirNode, Node, join, split_last};
use crate::objects::{MAX_CONTENT, Objects, StoreError};
use crate::revisit::dir_stat;
use crate::tree::{EntryKind, Leaf};
use crate::watch::{Watcher, is_under};

/// A file modified this close to when it was read may have changed since without its
/// times showing it: it is read again at the next scan.
pub(crate) const RACY_NS: i64 = 2_000_000_000;

/// Why a scan stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ScanError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "the workspace has more than {0} files to keep (general.checkpointing.maxFiles); add ignore rules or raise the limit"
    )]
    TooMany(usize),
}

/// What a scan works with.
pub(crate) struct Scan<'a> {
    pub(crate) objects: &'a Objects,
    pub(crate) roots: &'a WorkspaceRoots,
    pub(crate) settings: &'a Settings,
    pub(crate) exclude: &'a [PathBuf],
    pub(crate) size_cap: u64,
    pub(crate) max_files: usize,
    /// When this scan started, nanoseconds since the epoch.
    pub(crate) now_ns: i64,
    /// Files read within [`RACY_NS`] of their modification: read again next time.
    pub(crate) recent: &'a mut HashSet<(usize, Vec<u8>)>,
    /// Object files this scan wrote (for the syncer).
    pub(crate) written: Vec<PathBuf>,
    /// Files that could not be read, with why.
    pub(crate) unreadable: Vec<String>,
    /// Paths the permission rules withheld from the walks.
    pub(crate) withheld: usize,
    pub(crate) watcher: Option<&'a mut Watcher>,
    /// Without a watcher, walk on every core: off for a tree known to be small, where
    /// starting the walk's threads costs more than the walk.
    pub(crate) parallel: bool,
}

#[cfg(test)]
thread_local! {
    /// Walks (each a walker's set-up) the scans on this thread made, for the tests.
    pub(crate) static WALKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts a walk for the tests ([`WALKS`]).
fn count_walk() {
    #[cfg(test)]
    WALKS.with(|w| w.set(w.get() + 1));
}

/// An entry of a walk: its path, its type as the listing says, and its lstat when the
/// walk took it.
struct Walked {
    abs: PathBuf,
    file_type: std::fs::FileType,
    stat: Option<std::fs::Metadata>,
}

/// The bytes of a relative path as a path.
pub(crate) fn rel_path(rel: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(rel))
}

fn nanos(secs: i64, nsec: i64) -> i64 {
    secs.saturating_mul(1_000_000_000).saturating_add(nsec)
}

/// The stat part of a leaf.
fn stat_leaf(kind: EntryKind, meta: &std::fs::Metadata, hash: ContentHash) -> Leaf {
    Leaf {
        kind,
        mode: meta.permissions().mode() & 0o7777,
        size: meta.size(),
        mtime_ns: nanos(meta.mtime(), meta.mtime_nsec()),
        ctime_ns: nanos(meta.ctime(), meta.ctime_nsec()),
        ino: meta.ino(),
        hash,
    }
}

pub(crate) fn same_stat(old: &Leaf, new: &Leaf) -> bool {
    old.mode == new.mode
        && old.size == new.size
        && old.mtime_ns == new.mtime_ns
        && old.ctime_ns == new.ctime_ns
        && old.ino == new.ino
}

/// A regular file's bytes and its stat after reading, without following a link or
/// blocking on a FIFO swapped in; `None` for the bytes when it is over `cap`.
fn read_file(path: &Path, cap: u64) -> std::io::Result<(Option<Vec<u8>>, std::fs::Metadata)> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let file = std::fs::File::from(fd);
    let before = file.metadata()?;
    if !before.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if before.len() > cap {
        return Ok((None, before));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(before.len()).unwrap_or(0));
    (&file)
        .take(cap.saturating_add(1))
        .read_to_end(&mut bytes)?;
    let after = file.metadata()?;
    if bytes.len() as u64 > cap {
        return Ok((None, after));
    }
    Ok((Some(bytes), after))
}

impl Scan<'_> {
    /// The node for a file or link at `abs`, reusing `old` when its stat says nothing
    /// changed (and `forced` is off); `None` when it is gone or is something else now.
    pub(crate) fn entry(
        &mut self,
        root: usize,
        abs: &Path,
        rel: &[u8],
        old: Option<&Leaf>,
        forced: bool,
    ) -> Result<Option<Node>, StoreError> {
        self.entry_stat(root, abs, rel, old, forced, None)
    }

    /// [`Scan::entry`] with the lstat the walk took already, when it took one.
    fn entry_stat(
        &mut self,
        root: usize,
        abs: &Path,
        rel: &[u8],
        old: Option<&Leaf>,
        forced: bool,
        stat: Option<std::fs::Metadata>,
    ) -> Result<Option<Node>, StoreError> {
        let meta = match stat.map_or_else(|| std::fs::symlink_metadata(abs), Ok) {
            Ok(m) => m,
            Err(_) => return Ok(None),
        };
        let key = (root, rel.to_vec());
        let racy = self.recent.remove(&key);
        if meta.file_type().is_symlink() {
            return self
                .link(abs, &meta, old, forced || racy)
                .map(|l| l.map(Node::Leaf));
        }
        if !meta.is_file() {
            return Ok(None);
        }
        let probe = stat_leaf(EntryKind::File, &meta, ContentHash::default());
        if let Some(old) = old
            && !forced
            && !racy
            && matches!(old.kind, EntryKind::File | EntryKind::Omitted)
            && same_stat(old, &probe)
        {
            return Ok(Some(Node::Leaf(*old)));
        }
        let cap = self.size_cap.min(MAX_CONTENT);
        let (bytes, after) = match read_file(abs, cap) {
            Ok(read) => read,
            Err(e) => {
                self.unreadable
                    .push(format!("{}: {e}", rel_path(rel).display()));
                return Ok(None);
            }
        };
        let leaf = match bytes {
            None => stat_leaf(EntryKind::Omitted, &after, ContentHash::default()),
            Some(bytes) => {
                let hash = self.objects.put_content(&bytes, &mut self.written)?;
                stat_leaf(EntryKind::File, &after, hash)
            }
        };
        if leaf.mtime_ns.saturating_add(RACY_NS) >= self.now_ns {
            self.recent.insert(key);
        }
        Ok(Some(Node::Leaf(leaf)))
    }

    fn link(
        &mut self,
        abs: &Path,
        meta: &std::fs::Metadata,
        old: Option<&Leaf>,
        forced: bool,
    ) -> Result<Option<Leaf>, StoreError> {
        let probe = stat_leaf(EntryKind::Link, meta, ContentHash::default());
        if let Some(old) = old
            && !forced
            && old.kind == EntryKind::Link
            && same_stat(old, &probe)
        {
            return Ok(Some(*old));
        }
        let Ok(target) = std::fs::read_link(abs) else {
            return Ok(None);
        };
        let hash = self
            .objects
            .put_content(target.as_os_str().as_bytes(), &mut self.written)?;
        Ok(Some(stat_leaf(EntryKind::Link, meta, hash)))
    }

    /// A directory's mode, as lstat says.
    fn dir_mode(abs: &Path) -> Option<u32> {
        std::fs::symlink_metadata(abs)
            .ok()
            .filter(|m| m.is_dir())
            .map(|m| m.permissions().mode() & 0o7777)
    }

    /// The whole tree below `start` (`start_rel` in root `root`), watched as it is
    /// walked; `old` is what the index had there.
    pub(crate) fn tree(
        &mut self,
        root: usize,
        start: &Path,
        start_rel: &[u8],
        old: Option<&DirNode>,
    ) -> Result<DirNode, ScanError> {
        // The stat before the listing: a change during it leaves newer times.
        let (mode, stat) = dir_stat(start, self.now_ns).unwrap_or((0o755, None));
        let mut tree = DirNode::new(mode);
        tree.stat = stat;
        if let Some(w) = self.watcher.as_deref_mut() {
            w.add(root, start_rel, start);
        }
        let entries = self.listing(root, start, start_rel)?;
        let mut files = 0usize;
        for Walked {
            abs,
            file_type,
            stat,
        } in entries
        {
            let Ok(below) = abs.strip_prefix(start) else {
                continue;
            };
            let below = below.as_os_str().as_bytes();
            if file_type.is_dir() {
                // Taken after the listing, which began after this sync did: a change
                // since gives times that `revisit` takes as too recent to trust.
                let (mode, stat) = dir_stat(&abs, self.now_ns).unwrap_or((0o755, None));
                let mut dir = DirNode::new(mode);
                dir.stat = stat;
                tree.set(below, Node::Dir(dir));
                continue;
            }
            if !(file_type.is_file() || file_type.is_symlink()) {
                continue;
            }
            files += 1;
            if files > self.max_files {
                return Err(ScanError::TooMany(self.max_files));
            }
            let old_leaf = match old.and_then(|o| o.get(below)) {
                Some(Node::Leaf(l)) => Some(*l),
                _ => None,
            };
            let rel = join(start_rel, below);
            if let Some(node) = self.entry_stat(root, &abs, &rel, old_leaf.as_ref(), false, stat)? {
                tree.set(below, node);
            }
        }
        if let Some(old) = old {
            tree.reuse_hashes(old);
        }
        Ok(tree)
    }

    /// Every entry below `start`, parents before what they hold. With a watcher, or on a
    /// small tree, the walk is the tools' sequential one (each directory is watched as it
    /// is met); otherwise (a one-shot process, no inotify) it runs on every core and takes each
    /// entry's lstat on the walk's threads, which is most of a checkpoint's cost when
    /// nothing is read again.
    fn listing(
        &mut self,
        root: usize,
        start: &Path,
        start_rel: &[u8],
    ) -> Result<Vec<Walked>, ScanError> {
        count_walk();
        let (roots, settings, exclude) = (self.roots, self.settings, self.exclude);
        let limit = self.max_files.saturating_mul(2);
        let mut entries: Vec<Walked> = Vec::new();
        let mut too_many = false;
        if self.watcher.is_some() || !self.parallel {
            let mut watcher = self.watcher.as_deref_mut();
            self.withheld +=
                toolbelt_tools::walk_workspace(roots, settings, start, None, exclude, &mut |e| {
                    if too_many {
                        return;
                    }
                    if let Some(w) = watcher.as_deref_mut()
                        && e.file_type.is_dir()
                        && let Ok(rel) = e.path.strip_prefix(start)
                    {
                        let rel = join(start_rel, rel.as_os_str().as_bytes());
                        w.add(root, &rel, e.path);
                    }
                    entries.push(Walked {
                        abs: e.path.to_path_buf(),
                        file_type: e.file_type,
                        stat: None,
                    });
                    too_many = entries.len() > limit;
                });
        } else {
            let found = std::sync::Mutex::new(Vec::new());
            let count = std::sync::atomic::AtomicUsize::new(0);
            self.withheld +=
                toolbelt_tools::walk_workspace_parallel(roots, settings, start, exclude, &|e| {
                    if count.fetch_add(1, std::sync::atomic::Ordering::Relaxed) > limit {
                        return;
                    }
                    let walked = Walked {
                        abs: e.path.to_path_buf(),
                        file_type: e.file_type,
                        stat: std::fs::symlink_metadata(e.path).ok(),
                    };
                    if let Ok(mut found) = found.lock() {
                        found.push(walked);
                    }
                });
            too_many = count.into_inner() > limit;
            entries = found.into_inner().unwrap_or_default();
            entries.sort_unstable_by(|a, b| a.abs.cmp(&b.abs));
        }
        if too_many {
            return Err(ScanError::TooMany(self.max_files));
        }
        Ok(entries)
    }

    /// Applies what the watcher saw to `tree` (root `root` at `abs_root`).
    pub(crate) fn changes(
        &mut self,
        root: usize,
        abs_root: &Path,
        tree: &mut DirNode,
        dirs: Vec<Vec<u8>>,
        files: Vec<Vec<u8>>,
    ) -> Result<(), ScanError> {
        let mut replaced: Vec<Vec<u8>> = Vec::new();
        for dir in dirs {
            if replaced.iter().any(|r| is_under(&dir, r)) {
                continue;
            }
            self.relist(root, abs_root, tree, &dir, &mut replaced)?;
        }
        for file in files {
            if replaced.iter().any(|r| is_under(&file, r)) {
                continue;
            }
            let Some(Node::Leaf(old)) = tree.get(&file).cloned() else {
                continue;
            };
            let abs = abs_root.join(rel_path(&file));
            match self.entry(root, &abs, &file, Some(&old), true)? {
                Some(node) => {
                    tree.set(&file, node);
                }
                None => {
                    let (parent, _) = split_last(&file);
                    let parent = parent.to_vec();
                    self.relist(root, abs_root, tree, &parent, &mut replaced)?;
                }
            }
        }
        Ok(())
    }

    /// Removes the entries of `dir` that are no longer there (and their watches).
    fn drop_gone(
        &mut self,
        root: usize,
        tree: &mut DirNode,
        dir: &[u8],
        old: &BTreeMap<Vec<u8>, Node>,
        seen: &BTreeMap<Vec<u8>, std::fs::FileType>,
    ) {
        for (name, node) in old {
            if !seen.contains_key(name) {
                let rel = join(dir, name);
                tree.remove(&rel);
                if matches!(node, Node::Dir(_))
                    && let Some(w) = self.watcher.as_deref_mut()
                {
                    w.forget_under(root, &rel);
                }
            }
        }
    }

    /// Reads directory `dir` again: entries gone, new, or changed.
    pub(crate) fn relist(
        &mut self,
        root: usize,
        abs_root: &Path,
        tree: &mut DirNode,
        dir: &[u8],
        replaced: &mut Vec<Vec<u8>>,
    ) -> Result<(), ScanError> {
        let Some(node) = tree.dir(dir) else {
            return Ok(());
        };
        let abs = abs_root.join(rel_path(dir));
        let Some((mode, stat)) = dir_stat(&abs, self.now_ns) else {
            if !dir.is_empty() {
                tree.remove(dir);
            }
            if let Some(w) = self.watcher.as_deref_mut() {
                w.forget_under(root, dir);
            }
            return Ok(());
        };
        let old: BTreeMap<Vec<u8>, Node> = node.children.clone();
        let old_mode = node.mode;
        let mut seen: BTreeMap<Vec<u8>, std::fs::FileType> = BTreeMap::new();
        count_walk();
        self.withheld += toolbelt_tools::walk_workspace(
            self.roots,
            self.settings,
            &abs,
            Some(1),
            self.exclude,
            &mut |e| {
                if let Some(name) = e.path.file_name() {
                    seen.insert(name.as_bytes().to_vec(), e.file_type);
                }
            },
        );
        if mode != old_mode
            && let Some(d) = tree.dir_mut(dir)
        {
            d.mode = mode;
        }
        tree.set_stat(dir, stat);
        self.drop_gone(root, tree, dir, &old, &seen);
        for (name, file_type) in seen {
            let rel = join(dir, &name);
            let child_abs = abs.join(OsStr::from_bytes(&name));
            if file_type.is_dir() {
                match old.get(&name) {
                    Some(Node::Dir(d)) => {
                        let m = Self::dir_mode(&child_abs).unwrap_or(d.mode);
                        if m != d.mode
                            && let Some(d) = tree.dir_mut(&rel)
                        {
                            d.mode = m;
                        }
                    }
                    _ => {
                        let sub = self.tree(root, &child_abs, &rel, None)?;
                        tree.set(&rel, Node::Dir(sub));
                        replaced.push(rel);
                    }
                }
                continue;
            }
            if !(file_type.is_file() || file_type.is_symlink()) {
                tree.remove(&rel);
                continue;
            }
            let old_leaf = match old.get(&name) {
                Some(Node::Leaf(l)) => Some(*l),
                _ => None,
            };
            match self.entry(root, &child_abs, &rel, old_leaf.as_ref(), false)? {
                Some(node) => {
                    if !matches!((&node, old.get(&name)), (Node::Leaf(a), Some(Node::Leaf(b))) if a == b)
                    {
                        tree.set(&rel, node);
                    }
                }
                None => {
                    tree.remove(&rel);
                }
            }
        }
        Ok(())
    }
}
