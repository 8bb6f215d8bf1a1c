//! Writing a restore to the workspace, one entry at a time, each atomically.
//!
//! A file's bytes go to a new file in its directory (unnamed, `O_TMPFILE`, where the
//! file system has it, so a process killed mid-write leaves nothing; else
//! `.<name>.toolbelt-restore-<pid>-<n>`), which gets the checkpoint's mode, is synced
//! and renamed over the file: a restore cut by kill -9 leaves every file old or new,
//! never mixed. A link is made under a temporary name and renamed likewise.
//!
//! Every path is reached from its root one directory at a time with `O_NOFOLLOW`, and
//! every change is made relative to the directory's descriptor: a directory replaced by
//! a link since the checkpoint (`src -> /etc`) makes the restore of what was below it
//! fail, it never writes through the link.
//!
//! Unlike a tool's write (`toolbelt-tools`' `atomic_write`, which keeps the file that
//! is there), a restore puts back the checkpoint's file: its permission bits, a new
//! inode, owned by whoever restores (never the owner it had: nothing here calls `chown`).
//! The set-user-ID, set-group-ID and sticky bits are never put back ([`RESTORED_BITS`]):
//! a restore run as root would otherwise make a set-uid root program of whatever a
//! command of the model's, or another user, left in the workspace.

use std::ffi::OsStr;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, CWD, Mode, OFlags};

use crate::index::{components, split_last};

static TEMP: AtomicU64 = AtomicU64::new(0);

/// The mode bits a restore gives back: the permissions only.
pub(crate) const RESTORED_BITS: u32 = 0o777;

fn io(e: rustix::io::Errno) -> std::io::Error {
    std::io::Error::from(e)
}

/// Opens directory `rel` below the root descriptor, following no link; with `make`,
/// missing directories are created with mode 0o755 (the restore sets the checkpoint's
/// modes in its own step).
pub(crate) fn open_dir(root: &OwnedFd, rel: &[u8], make: bool) -> std::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut dir = rustix::fs::openat(root, ".", flags, Mode::empty()).map_err(io)?;
    for part in components(rel) {
        let name = OsStr::from_bytes(part);
        let next = match rustix::fs::openat(&dir, name, flags, Mode::empty()) {
            Err(rustix::io::Errno::NOENT) if make => {
                match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(io(e)),
                }
                rustix::fs::openat(&dir, name, flags, Mode::empty()).map_err(io)?
            }
            other => other.map_err(io)?,
        };
        dir = next;
    }
    Ok(dir)
}

/// The root's descriptor.
pub(crate) fn open_root(root: &Path) -> std::io::Result<OwnedFd> {
    rustix::fs::openat(
        CWD,
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io)
}

fn temp_name(name: &[u8]) -> Vec<u8> {
    let n = TEMP.fetch_add(1, Ordering::Relaxed);
    let mut t = b".".to_vec();
    t.extend_from_slice(&name[..name.len().min(100)]);
    t.extend_from_slice(format!(".toolbelt-restore-{}-{n}", std::process::id()).as_bytes());
    t
}

/// Writes `bytes` as file `rel` with `mode`'s permission bits, atomically. `midway` runs when half the
/// bytes are written (the test hook of a kill during a restore).
pub(crate) fn write_file(
    root: &OwnedFd,
    rel: &[u8],
    bytes: &[u8],
    mode: u32,
    midway: &mut dyn FnMut(),
) -> std::io::Result<()> {
    let (parent, name) = split_last(rel);
    let dir = open_dir(root, parent, true)?;
    let unnamed = rustix::fs::openat(
        &dir,
        ".",
        OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .ok()
    .filter(|_| Path::new("/proc/self/fd").is_dir());
    let temp = temp_name(name);
    let (fd, named) = match unnamed {
        Some(fd) => (fd, false),
        None => (
            rustix::fs::openat(
                &dir,
                OsStr::from_bytes(&temp),
                OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )
            .map_err(io)?,
            true,
        ),
    };
    let result = fill(&fd, bytes, mode, midway).and_then(|()| {
        if !named {
            let proc_path = format!("/proc/self/fd/{}", fd.as_raw_fd());
            rustix::fs::linkat(
                CWD,
                proc_path.as_str(),
                &dir,
                OsStr::from_bytes(&temp),
                AtFlags::SYMLINK_FOLLOW,
            )
            .map_err(io)?;
        }
        rustix::fs::renameat(
            &dir,
            OsStr::from_bytes(&temp),
            &dir,
            OsStr::from_bytes(name),
        )
        .map_err(io)
    });
    if result.is_err() {
        let _ = rustix::fs::unlinkat(&dir, OsStr::from_bytes(&temp), AtFlags::empty());
    }
    result?;
    rustix::fs::fsync(&dir).map_err(io)
}

fn fill(fd: &OwnedFd, bytes: &[u8], mode: u32, midway: &mut dyn FnMut()) -> std::io::Result<()> {
    let mut file = std::fs::File::from(fd.try_clone()?);
    let half = bytes.len() / 2;
    file.write_all(&bytes[..half])?;
    midway();
    file.write_all(&bytes[half..])?;
    rustix::fs::fchmod(fd.as_fd(), Mode::from_raw_mode(mode & RESTORED_BITS)).map_err(io)?;
    file.sync_all()
}

/// Makes `rel` a symbolic link to `target`, atomically.
pub(crate) fn write_link(root: &OwnedFd, rel: &[u8], target: &[u8]) -> std::io::Result<()> {
    let (parent, name) = split_last(rel);
    let dir = open_dir(root, parent, true)?;
    let temp = temp_name(name);
    rustix::fs::symlinkat(OsStr::from_bytes(target), &dir, OsStr::from_bytes(&temp)).map_err(io)?;
    if let Err(e) = rustix::fs::renameat(
        &dir,
        OsStr::from_bytes(&temp),
        &dir,
        OsStr::from_bytes(name),
    ) {
        let _ = rustix::fs::unlinkat(&dir, OsStr::from_bytes(&temp), AtFlags::empty());
        return Err(io(e));
    }
    rustix::fs::fsync(&dir).map_err(io)
}

/// Removes file or link `rel` (already gone is fine).
pub(crate) fn remove_file(root: &OwnedFd, rel: &[u8]) -> std::io::Result<()> {
    let (parent, name) = split_last(rel);
    let dir = open_dir(root, parent, false)?;
    match rustix::fs::unlinkat(&dir, OsStr::from_bytes(name), AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(e) => Err(io(e)),
    }
}

/// Removes directory `rel` if it is empty; `false` when it still holds something (files
/// the checkpoints do not keep, such as ignored ones).
pub(crate) fn remove_dir(root: &OwnedFd, rel: &[u8]) -> std::io::Result<bool> {
    let (parent, name) = split_last(rel);
    let dir = open_dir(root, parent, false)?;
    match rustix::fs::unlinkat(&dir, OsStr::from_bytes(name), AtFlags::REMOVEDIR) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(true),
        Err(rustix::io::Errno::NOTEMPTY | rustix::io::Errno::EXIST) => Ok(false),
        Err(e) => Err(io(e)),
    }
}

/// Makes directory `rel` (and what is missing above it) and gives it `mode`'s
/// permission bits.
pub(crate) fn make_dir(root: &OwnedFd, rel: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = open_dir(root, rel, true)?;
    rustix::fs::fchmod(&dir, Mode::from_raw_mode(mode & RESTORED_BITS)).map_err(io)
}
