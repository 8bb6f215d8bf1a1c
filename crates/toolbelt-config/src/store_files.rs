//! Files and directories of toolbelt's store, for the person alone.
//!
//! The store (`$TOOLBELT_HOME`, `~/.toolbelt`) holds what no other local user may read:
//! saved conversations, checkpointed copies of workspace files, command logs, input
//! history, scheduled prompts. Everything toolbelt creates there is made through this
//! module, directories `0700` and files `0600` from the moment they exist (never created
//! open and narrowed after: a reader could open it in between), so a new place in the
//! code cannot forget. The process umask can only narrow these further.
//!
//! A store made by an earlier toolbelt (`0755`/`0644`) is narrowed at session start by
//! [`tighten`], which changes only what the running user owns and follows no link.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Mode of a directory of the store.
pub const DIR_MODE: u32 = 0o700;
/// Mode of a file of the store.
pub const FILE_MODE: u32 = 0o600;

/// `dir` and every missing directory above it, each created `0700` (existing ones are
/// left as they are: [`tighten`] narrows them).
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir)
}

/// One directory, created `0700`; an error when it exists.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().mode(DIR_MODE).create(dir)
}

/// Options that create a file `0600`; the caller says how it is opened.
pub fn open_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(FILE_MODE);
    options
}

/// A new or truncated file `path`, `0600` when created.
pub fn create(path: &Path) -> io::Result<File> {
    open_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
}

/// `bytes` as the whole of file `path` (`0600` when created).
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    create(path)?.write_all(bytes)
}

/// `bytes` as file `path`, atomically: a `0600` temporary file beside it, renamed over.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    temp.write_all(bytes)?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// What [`tighten`] changed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tightened {
    /// Entries whose group and other bits were removed.
    pub changed: usize,
}

/// Removes the group and other bits of the store at `home` and of everything in it that
/// the running user owns, without following links. Cheap when there is nothing to do:
/// a `home` already without those bits was made (or narrowed) by this toolbelt, and
/// nothing below it can be reached by another user anyway, so it is not walked.
pub fn tighten(home: &Path) -> io::Result<Tightened> {
    let mut done = Tightened::default();
    let Ok(meta) = std::fs::symlink_metadata(home) else {
        return Ok(done);
    };
    let me = std::fs::metadata("/proc/self")?.uid();
    if !meta.is_dir() || meta.uid() != me || meta.mode() & 0o077 == 0 {
        return Ok(done);
    }
    let mut stack = vec![home.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() && meta.uid() == me {
                stack.push(path.clone());
            }
            narrow(&path, &meta, me, &mut done)?;
        }
    }
    narrow(home, &meta, me, &mut done)?;
    Ok(done)
}

/// Removes the group and other bits of one entry the user owns (not a link).
fn narrow(path: &Path, meta: &std::fs::Metadata, me: u32, done: &mut Tightened) -> io::Result<()> {
    let mode = meta.mode() & 0o7777;
    if meta.file_type().is_symlink() || meta.uid() != me || mode & 0o077 == 0 {
        return Ok(());
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & !0o077))?;
    done.changed += 1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
    }

    #[test]
    fn what_the_store_creates_is_for_the_user_alone() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("home/a/b");
        create_dir_all(&deep).unwrap();
        create_dir(&deep.join("c")).unwrap();
        write(&deep.join("f"), b"x").unwrap();
        write_atomic(&deep.join("g"), b"y").unwrap();
        open_options()
            .append(true)
            .create(true)
            .open(deep.join("h"))
            .unwrap();
        for d in ["home", "home/a", "home/a/b", "home/a/b/c"] {
            assert_eq!(mode(&dir.path().join(d)), 0o700, "{d}");
        }
        for f in ["f", "g", "h"] {
            assert_eq!(mode(&deep.join(f)), 0o600, "{f}");
        }
        assert_eq!(std::fs::read(deep.join("g")).unwrap(), b"y");
    }

    #[test]
    fn an_old_loose_store_is_narrowed_once_and_links_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "o").unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::create_dir_all(home.join("tmp/p/background")).unwrap();
        std::fs::write(home.join("tmp/p/background/bg.log"), "log").unwrap();
        std::fs::write(home.join("run.sh"), "#!/bin/sh").unwrap();
        for (p, m) in [
            ("", 0o755),
            ("tmp", 0o755),
            ("tmp/p", 0o775),
            ("tmp/p/background", 0o755),
            ("tmp/p/background/bg.log", 0o644),
            ("run.sh", 0o755),
        ] {
            std::fs::set_permissions(home.join(p), std::fs::Permissions::from_mode(m)).unwrap();
        }
        std::os::unix::fs::symlink(&outside, home.join("link")).unwrap();
        let done = tighten(&home).unwrap();
        assert_eq!(done.changed, 6);
        assert_eq!(mode(&home), 0o700);
        assert_eq!(mode(&home.join("tmp/p")), 0o700);
        assert_eq!(mode(&home.join("tmp/p/background/bg.log")), 0o600);
        assert_eq!(mode(&home.join("run.sh")), 0o700);
        assert_eq!(mode(&outside), 0o644, "a link's target is not touched");
        // Narrow already: nothing is walked again.
        assert_eq!(tighten(&home).unwrap(), Tightened::default());
        assert_eq!(
            tighten(&dir.path().join("none")).unwrap(),
            Tightened::default()
        );
    }
}
