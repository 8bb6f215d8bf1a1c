//! Writing a file so that a crash leaves the old content or the new, never a mix.
//!
//! The bytes go to a temporary file in the same directory (same file system, so the
//! final `rename` is atomic), which is flushed and `fsync`ed before it replaces the
//! target; the directory is synced afterwards so the rename itself survives a power
//! cut. An existing file's permission bits are copied to the new one first.
//!
//! Costs and limits: the whole content is written again even for a one-line change, and
//! a rename gives the path a new inode, so hard links to the old file keep the old
//! content (editors that write in place have the opposite trade-off: no torn writes
//! cannot be promised). A process killed mid-write leaves its temporary file behind
//! (`.<name>.toolbelt-*`), never a damaged target.

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
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}{TEMP_MARKER}"))
        .tempfile_in(dir)?;
    match std::fs::metadata(path) {
        Ok(meta) => temp.as_file().set_permissions(meta.permissions())?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // tempfile creates 0600 files; a new file should get the usual 0666 & !umask.
            set_default_mode(temp.as_file())?;
        }
        Err(e) => return Err(e),
    }
    fill(temp.as_file_mut())?;
    temp.flush()?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    // The rename is durable once the directory is synced. Some file systems refuse to
    // open or sync a directory; the data itself is already safe, so that is not an error.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Gives a freshly created file the mode `open(2)` would have: 0666 minus the umask.
fn set_default_mode(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = 0o666 & !current_umask();
    file.set_permissions(std::fs::Permissions::from_mode(mode))
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

    #[test]
    fn a_missing_directory_is_an_error_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomic(&dir.path().join("no/such/file"), b"x").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    }
}
