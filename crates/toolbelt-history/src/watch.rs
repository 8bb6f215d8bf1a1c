//! Knowing what changed since the last checkpoint without walking the workspace:
//! inotify, read directly (`rustix`), one watch per directory a checkpoint holds.
//!
//! Why not the `notify` crate (which `mcp serve` uses to watch its configuration): it
//! reads the events on a thread of its own and hands them over a channel, so when a
//! call has just returned, its last writes may not have reached the channel yet. Here
//! the inotify descriptor is non-blocking and drained right when a checkpoint is
//! taken; the kernel queues an event inside the write that causes it, so every change
//! made before the checkpoint is in the queue. Draining costs one `read` when nothing
//! changed, which is what keeps a checkpoint with nothing to record under 2 ms on a
//! 15,000-file workspace.
//!
//! Only directories the walk enters are watched (ignored ones such as `target` or
//! `node_modules` are not), each added before its entries are read, so a file created
//! between the two is seen either way. When the kernel's queue overflowed, a watch
//! could not be added (`max_user_watches`), or an ignore file changed, the drain says
//! so and the caller walks the whole workspace instead. What inotify cannot see (a
//! write through a shared memory mapping, a change made through another mount of the
//! same files) is caught at the next walk: after an overflow, at the next session.

use std::collections::{BTreeSet, HashMap};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

/// Names whose change changes what is walked.
const IGNORE_FILES: [&[u8]; 2] = [b".gitignore", b".qwenignore"];

/// What changed since the last drain.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    /// Directories whose entries changed (created, removed, renamed, or an entry's
    /// mode): `(root, relative path)`.
    pub(crate) dirs: BTreeSet<(usize, Vec<u8>)>,
    /// Files whose content or attributes changed: `(root, relative path)`.
    pub(crate) files: BTreeSet<(usize, Vec<u8>)>,
    /// Nothing can be trusted: walk everything (overflow, an ignore file changed, a
    /// watched directory moved).
    pub(crate) rescan: bool,
}

/// The inotify instance of one session's checkpoints.
pub(crate) struct Watcher {
    fd: OwnedFd,
    /// Each watch's directory: `(root, relative path)`.
    dirs: HashMap<i32, (usize, Vec<u8>)>,
    /// Set when a watch could not be added: the drain then asks for a walk, always.
    broken: bool,
}

impl Watcher {
    /// A new instance, or `None` where inotify is not available.
    pub(crate) fn new() -> Option<Self> {
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).ok()?;
        Some(Watcher {
            fd,
            dirs: HashMap::new(),
            broken: false,
        })
    }

    /// Watches directory `abs` (`rel` below root `root`). A failure (the watch limit)
    /// leaves the watcher broken: every drain then asks for a walk.
    pub(crate) fn add(&mut self, root: usize, rel: &[u8], abs: &Path) {
        let mask = WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MODIFY
            | WatchFlags::ATTRIB
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::DONT_FOLLOW
            | WatchFlags::ONLYDIR
            | WatchFlags::EXCL_UNLINK;
        match inotify::add_watch(&self.fd, abs, mask) {
            Ok(wd) => {
                self.dirs.insert(wd, (root, rel.to_vec()));
            }
            Err(e) => {
                if !self.broken {
                    tracing::debug!(
                        "checkpoints: cannot watch {}: {e}; walking instead",
                        abs.display()
                    );
                }
                self.broken = true;
            }
        }
    }

    /// Stops watching `rel` of `root` and everything below it.
    pub(crate) fn forget_under(&mut self, root: usize, rel: &[u8]) {
        let gone: Vec<i32> = self
            .dirs
            .iter()
            .filter(|(_, (r, path))| *r == root && is_under(path, rel))
            .map(|(wd, _)| *wd)
            .collect();
        for wd in gone {
            let _ = inotify::remove_watch(&self.fd, wd);
            self.dirs.remove(&wd);
        }
    }

    /// Stops watching everything (before a full walk adds the watches again).
    pub(crate) fn forget_all(&mut self) {
        for wd in self.dirs.keys() {
            let _ = inotify::remove_watch(&self.fd, *wd);
        }
        self.dirs.clear();
        self.broken = false;
        // Events already queued for the old watches are read and dropped.
        let _ = self.drain();
    }

    /// Everything queued since the last drain.
    pub(crate) fn drain(&mut self) -> Changes {
        let mut changes = Changes {
            rescan: self.broken,
            ..Changes::default()
        };
        let mut buf = [MaybeUninit::<u8>::uninit(); 64 * 1024];
        let mut reader = inotify::Reader::new(&self.fd, &mut buf);
        loop {
            let event = match reader.next() {
                Ok(event) => event,
                // EAGAIN: the queue is empty. Anything else: trust nothing.
                Err(e) => {
                    if e != rustix::io::Errno::AGAIN {
                        changes.rescan = true;
                    }
                    break;
                }
            };
            let flags = event.events();
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                changes.rescan = true;
                continue;
            }
            let wd = event.wd();
            if flags.contains(ReadFlags::IGNORED) {
                self.dirs.remove(&wd);
                continue;
            }
            let Some((root, dir)) = self.dirs.get(&wd).cloned() else {
                continue;
            };
            let name = event
                .file_name()
                .map(|n| n.to_bytes())
                .filter(|n| !n.is_empty());
            match name {
                Some(name) => {
                    if IGNORE_FILES.contains(&name) {
                        changes.rescan = true;
                    }
                    let listing = ReadFlags::CREATE
                        | ReadFlags::DELETE
                        | ReadFlags::MOVED_FROM
                        | ReadFlags::MOVED_TO;
                    if flags.intersects(listing) || flags.contains(ReadFlags::ISDIR) {
                        changes.dirs.insert((root, dir.clone()));
                    } else {
                        changes.files.insert((root, crate::index::join(&dir, name)));
                    }
                }
                None => {
                    if flags.intersects(ReadFlags::MOVE_SELF | ReadFlags::DELETE_SELF) {
                        // The parent's own event says where it went; a root that moved
                        // needs a walk.
                        if dir.is_empty() {
                            changes.rescan = true;
                        }
                    } else {
                        changes.dirs.insert((root, dir));
                    }
                }
            }
        }
        changes
    }
}

/// Whether `path` is `dir` or below it.
pub(crate) fn is_under(path: &[u8], dir: &[u8]) -> bool {
    dir.is_empty() || path == dir || (path.starts_with(dir) && path.get(dir.len()) == Some(&b'/'))
}
