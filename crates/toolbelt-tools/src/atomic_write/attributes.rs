//! What a replaced file keeps of the old one: owner, group, permission bits and
//! extended attributes (POSIX ACLs, security labels, `user.*` attributes).
//!
//! A rename puts a *new* inode at the path, and a new inode starts with the writer's
//! owner, a fresh mode and no attributes. So everything the old file had is read first
//! and set on the temporary file before its first byte is written; if some of it cannot
//! be set (another user's file, a group this process is not in, an attribute it may not
//! write), the caller writes in place instead, which keeps the inode and so all of it.
//!
//! Two things are deliberately *not* kept, because the kernel takes them away from a
//! file that is written (`file_remove_privs`): the setuid and setgid bits, and file
//! capabilities (`security.capability`). Content the model wrote must not run with
//! privileges the old program had. (The kernel keeps setgid on a file without group
//! execute, a mandatory-locking marker; clearing it too is simpler and loses nothing.)

use std::fs::File;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use rustix::io::Errno;

/// One extended attribute: its name and value.
type Xattr = (Vec<u8>, Vec<u8>);

/// Mode bits a write clears: setuid and setgid.
pub(super) const CLEARED_ON_WRITE: u32 = 0o6000;

/// Extended attributes a write removes (file capabilities grant privileges as setuid
/// does).
const DROPPED_ON_WRITE: &[&[u8]] = &[b"security.capability"];

/// Why the attributes of the old file cannot be carried to a new one.
#[derive(Debug)]
pub(super) enum NotKept {
    /// The owner or group cannot be given to the new file (`EPERM` from `fchown`).
    Owner,
    /// An extended attribute cannot be read from the old file or set on the new one.
    ExtendedAttributes,
    /// Anything else: a real error.
    Io(std::io::Error),
}

/// What the new file is given before it is written.
#[derive(Debug)]
pub(super) struct Attributes {
    /// Owner and group of the old file; `None` for a new file (the writer's).
    owner: Option<(u32, u32)>,
    /// Permission bits (and the sticky bit), without setuid and setgid.
    mode: u32,
    /// The old file's extended attributes, names without the trailing NUL; `None`
    /// for a new file, which keeps what it inherits (a directory's default ACL).
    xattrs: Option<Vec<Xattr>>,
}

impl Attributes {
    /// A file that did not exist: the writer's owner, `0666 & !umask`, and whatever
    /// the directory gives it.
    pub(super) fn new_file(umask: u32) -> Attributes {
        Attributes {
            owner: None,
            mode: 0o666 & !umask,
            xattrs: None,
        }
    }

    /// The attributes of the existing file at `path`.
    pub(super) fn of(path: &Path, meta: &std::fs::Metadata) -> Result<Attributes, NotKept> {
        Ok(Attributes {
            owner: Some((meta.uid(), meta.gid())),
            mode: meta.mode() & 0o7777 & !CLEARED_ON_WRITE,
            xattrs: Some(read_xattrs(path)?),
        })
    }

    /// Gives `file` (a fresh temporary file) these attributes: owner first (a
    /// `chown` may clear mode bits), then the extended attributes (an ACL also sets
    /// the group bits), then the mode.
    pub(super) fn apply(&self, file: &File) -> Result<(), NotKept> {
        if let Some((uid, gid)) = self.owner {
            let owner = rustix::fs::Uid::from_raw(uid);
            let group = rustix::fs::Gid::from_raw(gid);
            match rustix::fs::fchown(file, Some(owner), Some(group)) {
                Ok(()) => {}
                Err(Errno::PERM) => return Err(NotKept::Owner),
                Err(e) => return Err(NotKept::Io(e.into())),
            }
        }
        if let Some(xattrs) = &self.xattrs {
            set_xattrs(file, xattrs)?;
        }
        file.set_permissions(std::fs::Permissions::from_mode(self.mode))
            .map_err(NotKept::Io)
    }
}

/// Whether an error from reading or writing an extended attribute means "not
/// allowed" (the caller then writes in place) rather than a failure.
fn not_allowed(e: Errno) -> bool {
    matches!(e, Errno::PERM | Errno::ACCESS | Errno::NOTSUP | Errno::ROFS)
}

/// The extended attributes of `path` that a write keeps. A file system without
/// them has none.
fn read_xattrs(path: &Path) -> Result<Vec<Xattr>, NotKept> {
    let list = match read_sized(
        || rustix::fs::listxattr_query(path),
        |buf| rustix::fs::listxattr(path, buf),
    ) {
        Ok(list) => list,
        Err(Errno::NOTSUP) => return Ok(Vec::new()),
        Err(e) if not_allowed(e) => return Err(NotKept::ExtendedAttributes),
        Err(e) => return Err(NotKept::Io(e.into())),
    };
    let mut xattrs = Vec::new();
    for name in names(&list) {
        if DROPPED_ON_WRITE.contains(&name) {
            continue;
        }
        match read_sized(
            || rustix::fs::getxattr_query(path, name),
            |buf| rustix::fs::getxattr(path, name, buf),
        ) {
            Ok(value) => xattrs.push((name.to_vec(), value)),
            // Removed since it was listed: nothing to keep.
            Err(Errno::NODATA) => {}
            Err(e) if not_allowed(e) => return Err(NotKept::ExtendedAttributes),
            Err(e) => return Err(NotKept::Io(e.into())),
        }
    }
    Ok(xattrs)
}

/// Sets `xattrs` on `file` and removes any other attribute it has (a new file
/// inherits the directory's default ACL, which the old file may not have had).
fn set_xattrs(file: &File, xattrs: &[(Vec<u8>, Vec<u8>)]) -> Result<(), NotKept> {
    let fail = |e: Errno| {
        if not_allowed(e) {
            NotKept::ExtendedAttributes
        } else {
            NotKept::Io(e.into())
        }
    };
    let present = match read_sized(
        || rustix::fs::flistxattr_query(file),
        |buf| rustix::fs::flistxattr(file, buf),
    ) {
        Ok(list) => list,
        // No extended attributes on this file system: the old file had none either.
        Err(Errno::NOTSUP) if xattrs.is_empty() => return Ok(()),
        Err(e) => return Err(fail(e)),
    };
    for name in names(&present) {
        if !xattrs.iter().any(|(kept, _)| kept.as_slice() == name) {
            match rustix::fs::fremovexattr(file, name) {
                Ok(()) | Err(Errno::NODATA) => {}
                Err(e) => return Err(fail(e)),
            }
        }
    }
    for (name, value) in xattrs {
        rustix::fs::fsetxattr(
            file,
            name.as_slice(),
            value,
            rustix::fs::XattrFlags::empty(),
        )
        .map_err(fail)?;
    }
    Ok(())
}

/// The names in a `listxattr` buffer (NUL-terminated, one after another).
fn names(list: &[u8]) -> impl Iterator<Item = &[u8]> {
    list.split(|&b| b == 0).filter(|name| !name.is_empty())
}

/// Reads a value whose size must be asked first; tries again if it grew in between.
fn read_sized(
    query: impl Fn() -> rustix::io::Result<usize>,
    read: impl Fn(&mut [u8]) -> rustix::io::Result<usize>,
) -> rustix::io::Result<Vec<u8>> {
    for _ in 0..8 {
        let size = query()?;
        if size == 0 {
            return Ok(Vec::new());
        }
        let mut buf = vec![0u8; size];
        match read(&mut buf) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            Err(Errno::RANGE) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Errno::RANGE)
}
