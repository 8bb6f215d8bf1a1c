//! Writing a file so that a crash leaves the old content or the new, never a mix.
//!
//! The bytes go to a temporary file in the same directory (same file system, so the
//! final `rename` is atomic), which is flushed and `fsync`ed before it replaces the
//! target; the directory is synced afterwards so the rename itself survives a power
//! cut. An existing file's permission bits are copied to the new one first.
//!
//! Where the file system allows it (Linux `O_TMPFILE`: ext4, xfs, btrfs, tmpfs), the
//! temporary file has no name while it is written and is linked under a temporary name
//! only for the rename, so a process killed mid-write leaves nothing behind. Elsewhere a
//! named temporary file (`.<name>.toolbelt-*`) is used, and a killed process leaves it.
//!
//! Costs and limits: the whole content is written again even for a one-line change
//! (`edit` copies the unchanged parts of a large file with `copy_file_range`), and a
//! rename gives the path a new inode, so hard links to the old file keep the old
//! content (editors that write in place have the opposite trade-off: no torn writes
//! cannot be promised). Either way a killed process never leaves a damaged target.

use std::io::Write;
use std::path::Path;

/// Prefix of temporary files, after the leading dot and the target's name.
pub const TEMP_MARKER: &str = ".toolbelt-";

/// Replaces (or creates) `path` with `bytes` atomically. The parent directory must
/// exist.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |file| file.write_all(bytes))
}

/// Replaces (or creates) `path` atomically with what `fill` writes into the temporary
/// file. If `fill` fails, the temporary file is removed and `path` is untouched.
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // An existing file's mode is kept; a new file gets the usual 0666 & !umask (temporary
    // files are created 0600).
    let mode = match std::fs::metadata(path) {
        Ok(meta) => meta.permissions().mode(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0o666 & !current_umask(),
        Err(e) => return Err(e),
    };
    match unnamed_temp(dir) {
        Some(file) => write_unnamed(file, dir, &name, path, mode, fill)?,
        None => write_named(dir, &name, path, mode, fill)?,
    }
    // The rename is durable once the directory is synced. Some file systems refuse to
    // open or sync a directory; the data itself is already safe, so that is not an error.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
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

/// Writes into an unnamed file, then links it under a temporary name and renames that
/// over `path`. Until the link the data has no name, so a process killed while writing
/// leaves nothing behind: the kernel frees the file with its last descriptor.
fn write_unnamed(
    mut file: std::fs::File,
    dir: &Path,
    name: &str,
    path: &Path,
    mode: u32,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
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
    name_and_rename(file, dir, name, path, mode, link)
}

/// Gives the written unnamed `file` a temporary name with `link` and renames it over
/// `path`; when it cannot be named, copies it into a named temporary file instead.
fn name_and_rename(
    mut file: std::fs::File,
    dir: &Path,
    name: &str,
    path: &Path,
    mode: u32,
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
                return write_named(dir, name, path, mode, |out| {
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

/// The portable way: a named temporary file, removed if anything fails (but left
/// behind by a process killed while writing it).
fn write_named(
    dir: &Path,
    name: &str,
    path: &Path,
    mode: u32,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}{TEMP_MARKER}"))
        .tempfile_in(dir)?;
    temp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
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
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn replaces_content_and_keeps_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("script.sh");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o750)).unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o750);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left behind");
    }

    #[test]
    fn a_new_file_gets_the_umask_mode_not_0600() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("new.txt");
        write_atomic(&p, b"x").unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666 & !current_umask());
    }

    fn temp_names(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(TEMP_MARKER))
            .collect()
    }

    #[test]
    fn the_data_has_no_name_while_it_is_written_where_the_file_system_allows() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        std::fs::write(&p, "old").unwrap();
        let unnamed = unnamed_temp(dir.path()).is_some();
        write_atomic_with(&p, |file| {
            file.write_all(b"new")?;
            // A kill now leaves a named temporary file only on the fallback path.
            assert_eq!(temp_names(dir.path()).len(), usize::from(!unnamed));
            Ok(())
        })
        .unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert!(temp_names(dir.path()).is_empty());
    }

    #[test]
    fn the_named_fallback_replaces_and_cleans_up_on_failure() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.txt");
        std::fs::write(&p, "old").unwrap();
        write_named(dir.path(), "b.txt", &p, 0o640, |f| f.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        let err = write_named(dir.path(), "b.txt", &p, 0o640, |_| {
            Err(std::io::Error::other("fill failed"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "fill failed");
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert!(temp_names(dir.path()).is_empty());
    }

    #[test]
    fn unnamed_data_that_cannot_be_linked_is_copied_into_a_named_file() {
        let dir = tempfile::tempdir().unwrap();
        let Some(mut file) = unnamed_temp(dir.path()) else {
            // No O_TMPFILE here: the named path is the only one (tested above).
            return;
        };
        file.write_all(b"unnamed data").unwrap();
        let p = dir.path().join("d.txt");
        name_and_rename(file, dir.path(), "d.txt", &p, 0o600, |_| {
            Err(rustix::io::Errno::NOENT)
        })
        .unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"unnamed data");
        assert!(temp_names(dir.path()).is_empty());
    }

    #[test]
    fn a_failing_fill_leaves_the_target_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.txt");
        std::fs::write(&p, "keep").unwrap();
        let err = write_atomic_with(&p, |f| {
            f.write_all(b"partial")?;
            Err(std::io::Error::other("stop"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "stop");
        assert_eq!(std::fs::read(&p).unwrap(), b"keep");
        assert!(temp_names(dir.path()).is_empty());
    }

    #[test]
    fn a_missing_directory_is_an_error_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomic(&dir.path().join("no/such/file"), b"x").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    }
}
