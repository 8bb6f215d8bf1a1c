//! Replacing a file's content so that a crash leaves the old content or the new, never
//! a mix, and so that the file stays what it was: owner, group, mode and extended
//! attributes are kept ([`attributes`]).
//!
//! **The atomic path** (the normal one). The bytes go to a temporary file in the same
//! directory (same file system, so the final `rename` is atomic). Before its first byte
//! it is given the old file's owner, group, extended attributes and mode; it is then
//! filled, flushed and `fsync`ed, and renamed over the target; the directory is synced
//! afterwards so the rename itself survives a power cut. A crash at any moment leaves
//! the old content or the new one. Where the file system allows it (Linux `O_TMPFILE`:
//! ext4, xfs, btrfs, tmpfs) the temporary file has no name while it is written and is
//! linked under a temporary name only for the rename, so a process killed mid-write
//! leaves nothing behind; elsewhere a named temporary file (`.<name>.toolbelt-*`) is
//! used, and a killed process leaves it.
//!
//! **The in-place path** (the fallback, [`in_place`]): when a new file could not be what
//! the old one was, the old file's bytes are overwritten instead ([`InPlaceReason`]):
//! its owner or group cannot be given to a new file (this process is not root and the
//! file is another user's, or belongs to a group the process is not in), an extended
//! attribute cannot be copied, or the directory takes no new file while the file itself
//! is writable. That path is **not atomic**: a crash during it can leave a mix of old
//! and new. The caller learns which path ran ([`Replaced`]) and says so.
//!
//! Both paths clear setuid and setgid and drop file capabilities, as the kernel does
//! when a file is written. Whether the file may be written at all (a read-only file) is
//! the caller's decision, made before calling here (`file_change`).
//!
//! Costs and limits: the whole content is written again even for a one-line change
//! (`edit` copies the unchanged parts of a large file with `copy_file_range`), and a
//! rename gives the path a new inode, so hard links to the old file keep the old
//! content (editors that write in place have the opposite trade-off: no torn writes
//! cannot be promised). Either way a killed process never leaves a damaged target on the
//! atomic path.

use std::io::Write;
use std::path::Path;

mod attributes;
mod in_place;

use attributes::{Attributes, NotKept};

/// Prefix of temporary files, after the leading dot and the target's name.
pub(crate) const TEMP_MARKER: &str = ".toolbelt-";

/// How new content reached a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Replaced {
    /// A new file, written and synced in full, renamed over the old one (or created):
    /// a crash leaves the old content or the new.
    Atomically,
    /// The old file's bytes were overwritten (not atomic), for this reason.
    InPlace(InPlaceReason),
}

/// Why a file was written in place rather than replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InPlaceReason {
    /// Its owner or group cannot be given to a new file: this process is not root and
    /// the file belongs to another user, or to a group the process is not in.
    Owner,
    /// One of its extended attributes (an ACL, a security label, ...) cannot be read or
    /// set on a new file by this process.
    ExtendedAttributes,
    /// Its directory does not let this process create a file there (no write
    /// permission), while the file itself is writable.
    Directory,
}

impl InPlaceReason {
    /// Why, in words for a message ("... because {why}").
    pub(crate) fn describe(self) -> &'static str {
        match self {
            InPlaceReason::Owner => {
                "a new file could not keep its owner and group (it belongs to another user or group)"
            }
            InPlaceReason::ExtendedAttributes => {
                "a new file could not keep its extended attributes (ACLs or security labels)"
            }
            InPlaceReason::Directory => {
                "its directory is not writable, so no temporary file could be created beside it"
            }
        }
    }
}

/// Replaces (or creates) `path` with `bytes`. The parent directory must exist.
#[cfg(test)]
pub(crate) fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<Replaced> {
    replace_with(path, |file| file.write_all(bytes))
}

/// Replaces (or creates) `path` with what `fill` writes into the file it is given
/// (a temporary file beside `path`, or a staging file for the in-place path). If
/// `fill` fails, the temporary file is removed and `path` is untouched, on both paths.
pub(crate) fn replace_with(
    path: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<Replaced> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let existing = match std::fs::metadata(path) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    match prepare(dir, &name, path, existing.as_ref())? {
        Route::Atomic { temp, attributes } => {
            temp.fill_and_commit(dir, &name, path, &attributes, fill)?;
            // The rename is durable once the directory is synced. Some file systems
            // refuse to open or sync a directory; the data itself is already safe, so
            // that is not an error.
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
            Ok(Replaced::Atomically)
        }
        Route::InPlace { reason, before } => {
            in_place::write_in_place(path, before, fill)?;
            Ok(Replaced::InPlace(reason))
        }
    }
}

/// Which path a write takes, decided before any content is written.
enum Route<'a> {
    Atomic {
        temp: Temp,
        attributes: Attributes,
    },
    InPlace {
        reason: InPlaceReason,
        before: &'a std::fs::Metadata,
    },
}

/// Creates the temporary file and gives it the old file's attributes, or decides to
/// write in place when that cannot be done.
fn prepare<'a>(
    dir: &Path,
    name: &str,
    path: &Path,
    existing: Option<&'a std::fs::Metadata>,
) -> std::io::Result<Route<'a>> {
    let in_place = |reason| match existing {
        Some(before) => Ok(Route::InPlace { reason, before }),
        None => Err(std::io::Error::other("in place needs an existing file")),
    };
    let attributes = match existing {
        None => Attributes::new_file(current_umask()),
        Some(meta) => match Attributes::of(path, meta) {
            Ok(a) => a,
            Err(NotKept::Io(e)) => return Err(e),
            Err(NotKept::Owner) => return in_place(InPlaceReason::Owner),
            Err(NotKept::ExtendedAttributes) => return in_place(InPlaceReason::ExtendedAttributes),
        },
    };
    let temp = match Temp::create(dir, name) {
        Ok(temp) => temp,
        // EACCES or EPERM: the directory takes no new file. A file that exists may
        // still be writable itself.
        Err(e) if existing.is_some() && e.kind() == std::io::ErrorKind::PermissionDenied => {
            return in_place(InPlaceReason::Directory);
        }
        Err(e) => return Err(e),
    };
    match attributes.apply(temp.file()) {
        Ok(()) => Ok(Route::Atomic { temp, attributes }),
        // The temporary file is dropped: unnamed, it vanishes; named, it is removed.
        Err(NotKept::Owner) => in_place(InPlaceReason::Owner),
        Err(NotKept::ExtendedAttributes) => in_place(InPlaceReason::ExtendedAttributes),
        Err(NotKept::Io(e)) => Err(e),
    }
}

/// A temporary file beside the target.
enum Temp {
    /// `O_TMPFILE`: no name until it is linked for the rename.
    Unnamed(std::fs::File),
    /// A named file, removed when dropped before it is persisted.
    Named(tempfile::NamedTempFile),
}

impl Temp {
    fn create(dir: &Path, name: &str) -> std::io::Result<Temp> {
        match unnamed_temp(dir) {
            Some(file) => Ok(Temp::Unnamed(file)),
            None => named_temp(dir, name).map(Temp::Named),
        }
    }

    fn file(&self) -> &std::fs::File {
        match self {
            Temp::Unnamed(file) => file,
            Temp::Named(named) => named.as_file(),
        }
    }

    /// Fills the file, syncs it and renames it over `path`.
    fn fill_and_commit(
        self,
        dir: &Path,
        name: &str,
        path: &Path,
        attributes: &Attributes,
        fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        match self {
            Temp::Unnamed(file) => write_unnamed(file, dir, name, path, attributes, fill),
            Temp::Named(named) => write_named(named, path, fill),
        }
    }
}

/// An unnamed file in `dir` (`O_TMPFILE`), when the file system has them and
/// `/proc/self/fd` can give it a name later.
fn unnamed_temp(dir: &Path) -> Option<std::fs::File> {
    use rustix::fs::{CWD, Mode, OFlags};
    if !Path::new("/proc/self/fd").is_dir() {
        return None;
    }
    let fd = rustix::fs::openat(
        CWD,
        dir,
        OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .ok()?;
    Some(std::fs::File::from(fd))
}

fn named_temp(dir: &Path, name: &str) -> std::io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new()
        .prefix(&format!(".{name}{TEMP_MARKER}"))
        .tempfile_in(dir)
}

/// Writes into an unnamed file, then links it under a temporary name and renames that
/// over `path`. Until the link the data has no name, so a process killed while writing
/// leaves nothing behind: the kernel frees the file with its last descriptor.
fn write_unnamed(
    mut file: std::fs::File,
    dir: &Path,
    name: &str,
    path: &Path,
    attributes: &Attributes,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    fill(&mut file)?;
    file.flush()?;
    file.sync_all()?;
    // linkat(2) on the /proc path is how open(2) documents naming an O_TMPFILE file.
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    let link = |temp: &Path| {
        rustix::fs::linkat(
            rustix::fs::CWD,
            proc_path.as_str(),
            rustix::fs::CWD,
            temp,
            rustix::fs::AtFlags::SYMLINK_FOLLOW,
        )
    };
    name_and_rename(file, dir, name, path, attributes, link)
}

/// Gives the written unnamed `file` a temporary name with `link` and renames it over
/// `path`; when it cannot be named, copies it into a named temporary file (given the
/// same attributes) instead.
fn name_and_rename(
    mut file: std::fs::File,
    dir: &Path,
    name: &str,
    path: &Path,
    attributes: &Attributes,
    link: impl Fn(&Path) -> rustix::io::Result<()>,
) -> std::io::Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut attempt = 0;
    let temp = loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".{name}{TEMP_MARKER}{}-{n}", std::process::id()));
        match link(&temp) {
            Ok(()) => break temp,
            Err(e) if e == rustix::io::Errno::EXIST && attempt < 100 => attempt += 1,
            // The data is written but cannot be named (a restricted /proc, say): copy
            // it into a named temporary file instead of failing the write.
            Err(_) => {
                let named = named_temp(dir, name)?;
                match attributes.apply(named.as_file()) {
                    Ok(()) => {}
                    Err(NotKept::Io(e)) => return Err(e),
                    // The unnamed file took them a moment ago; the same directory
                    // refusing them now is not worth a second fallback.
                    Err(_) => {
                        return Err(std::io::Error::other(
                            "the file's owner or attributes could not be kept on the new file",
                        ));
                    }
                }
                return write_named(named, path, |out| {
                    use std::io::Seek;
                    file.rewind()?;
                    std::io::copy(&mut file, out).map(|_| ())
                });
            }
        }
    };
    if let Err(e) = std::fs::rename(&temp, path) {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    Ok(())
}

/// The portable way: a named temporary file (already given its attributes), removed if
/// anything fails (but left behind by a process killed while writing it).
fn write_named(
    mut temp: tempfile::NamedTempFile,
    path: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    fill(temp.as_file_mut())?;
    temp.flush()?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The process umask, read without changing it for other threads: `/proc/self/status`
/// has it on Linux 4.7+; elsewhere the common 022 is assumed.
fn current_umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

#[cfg(test)]
mod tests;
