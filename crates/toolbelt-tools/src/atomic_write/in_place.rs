//! The fallback: writing over the old file's own bytes.
//!
//! Used only when a new file could not be what the old one was (see
//! [`super::InPlaceReason`]). The inode stays, so owner, group, ACLs, labels, other
//! extended attributes and hard links are kept by construction.
//!
//! **Not atomic.** A crash, a kill or a full disk during the copy leaves a mix: the new
//! content up to some point, then the rest of the old; a reader at the same moment can
//! see such a mix too. What is done to make it as safe as it can be:
//!
//! - the whole new content is first written to an unnamed staging file in the temporary
//!   directory, so everything that can fail before the target is touched (the model's
//!   content, an edit that finds the file changed while copying it) fails while the
//!   target is still intact;
//! - the target is opened without following a symbolic link or blocking on a FIFO, and
//!   must be the very file that was examined (device and inode), else nothing is written;
//! - setuid and setgid are cleared before the first byte, so no moment exists in which
//!   a privileged program holds partly written content;
//! - the content is copied from offset 0, the file is then cut to the new length (a
//!   longer file grows first, a shorter one is cut last: at no point is it shorter than
//!   both versions), and the data is `fsync`ed before success is reported.

use std::fs::File;
use std::io::{Seek, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::attributes::CLEARED_ON_WRITE;

/// Writes what `fill` produces over the file at `path`, which `before` describes.
pub(super) fn write_in_place(
    path: &Path,
    before: &std::fs::Metadata,
    fill: impl FnOnce(&mut File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut staging = tempfile::tempfile()?;
    fill(&mut staging)?;
    staging.flush()?;
    let len = staging.stream_position()?;
    staging.rewind()?;

    let mut target = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let now = target.metadata()?;
    if !now.is_file() || (now.dev(), now.ino()) != (before.dev(), before.ino()) {
        return Err(std::io::Error::other(
            "the file was replaced by another one while it was written; nothing was written",
        ));
    }
    if now.mode() & CLEARED_ON_WRITE != 0 {
        let mode = now.mode() & 0o7777 & !CLEARED_ON_WRITE;
        match target.set_permissions(std::fs::Permissions::from_mode(mode)) {
            Ok(()) => {}
            // Only the owner (or root) may chmod; for anyone else the kernel clears
            // both bits itself on the write below, since such a writer lacks
            // CAP_FSETID.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {}
            Err(e) => return Err(e),
        }
    }
    let copied = std::io::copy(&mut staging, &mut target)?;
    if copied != len {
        return Err(std::io::Error::other(
            "the staged content was cut short while it was copied",
        ));
    }
    target.set_len(len)?;
    target.sync_all()
}
