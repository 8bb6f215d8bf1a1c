use std::os::unix::fs::{MetadataExt, PermissionsExt};

use super::*;

fn temp_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(TEMP_MARKER))
        .collect()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

#[test]
fn replaces_content_and_keeps_the_mode() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("script.sh");
    std::fs::write(&p, "old").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o750)).unwrap();
    assert_eq!(replace(&p, b"new").unwrap(), Replaced::Atomically);
    assert_eq!(std::fs::read(&p).unwrap(), b"new");
    assert_eq!(mode(&p), 0o750);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file left behind");
}

#[test]
fn a_new_file_gets_the_umask_mode_not_0600() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("new.txt");
    replace(&p, b"x").unwrap();
    assert_eq!(mode(&p), 0o666 & !current_umask());
}

#[test]
fn setuid_and_setgid_are_cleared_as_a_write_by_the_kernel_would() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("tool");
    std::fs::write(&p, "old").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o6755)).unwrap();
    assert_eq!(mode(&p), 0o6755);
    replace(&p, b"new").unwrap();
    assert_eq!(mode(&p), 0o755);
    // The sticky bit is not a privilege; it stays.
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o1644)).unwrap();
    replace(&p, b"newer").unwrap();
    assert_eq!(mode(&p), 0o1644);
}

#[test]
fn extended_attributes_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("labelled.txt");
    std::fs::write(&p, "old").unwrap();
    let set = rustix::fs::setxattr(&p, "user.origin", b"kept", rustix::fs::XattrFlags::empty());
    if let Err(e) = set {
        // CI's temporary directory takes user attributes; a developer's might not.
        assert!(
            std::env::var_os("CI").is_none(),
            "cannot set a user xattr here: {e}"
        );
        eprintln!("not checked: this file system takes no user xattrs ({e})");
        return;
    }
    replace(&p, b"new").unwrap();
    let mut value = [0u8; 16];
    let n = rustix::fs::getxattr(&p, "user.origin", &mut value).unwrap();
    assert_eq!(&value[..n], b"kept");
    assert_eq!(std::fs::read(&p).unwrap(), b"new");
}

#[test]
fn owner_and_group_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("owned.txt");
    std::fs::write(&p, "old").unwrap();
    if is_root() {
        // Root can give a new file any owner: the replacement is atomic and keeps it.
        std::os::unix::fs::chown(&p, Some(4242), Some(4343)).unwrap();
        assert_eq!(replace(&p, b"new").unwrap(), Replaced::Atomically);
    } else {
        // Anyone else keeps their own file's owner on the atomic path too.
        assert_eq!(replace(&p, b"new").unwrap(), Replaced::Atomically);
    }
    let meta = std::fs::metadata(&p).unwrap();
    if is_root() {
        assert_eq!((meta.uid(), meta.gid()), (4242, 4343));
    } else {
        assert_eq!(meta.uid(), rustix::process::geteuid().as_raw());
    }
    assert_eq!(std::fs::read(&p).unwrap(), b"new");
}

#[test]
fn writing_in_place_keeps_the_inode_and_everything_about_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("inplace.txt");
    std::fs::write(&p, "a much longer old content\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
    let before = std::fs::metadata(&p).unwrap();
    in_place::write_in_place(&p, &before, |f| f.write_all(b"short\n")).unwrap();
    let after = std::fs::metadata(&p).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"short\n");
    assert_eq!(after.ino(), before.ino());
    assert_eq!(mode(&p), 0o640);
    // A failing fill leaves the file as it was.
    let before = std::fs::metadata(&p).unwrap();
    let err = in_place::write_in_place(&p, &before, |f| {
        f.write_all(b"partial")?;
        Err(std::io::Error::other("stop"))
    })
    .unwrap_err();
    assert_eq!(err.to_string(), "stop");
    assert_eq!(std::fs::read(&p).unwrap(), b"short\n");
}

#[test]
fn the_data_has_no_name_while_it_is_written_where_the_file_system_allows() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.txt");
    std::fs::write(&p, "old").unwrap();
    let unnamed = unnamed_temp(dir.path()).is_some();
    replace_with(&p, |file| {
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
    let temp = named_temp(dir.path(), "b.txt").unwrap();
    write_named(temp, &p, |f| f.write_all(b"new")).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"new");
    let temp = named_temp(dir.path(), "b.txt").unwrap();
    let err = write_named(temp, &p, |_| Err(std::io::Error::other("fill failed"))).unwrap_err();
    assert_eq!(err.to_string(), "fill failed");
    assert_eq!(std::fs::read(&p).unwrap(), b"new");
    assert!(temp_names(dir.path()).is_empty());
}

#[test]
fn unnamed_data_that_cannot_be_linked_is_copied_into_a_named_file() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mut file) = unnamed_temp(dir.path()) else {
        // CI's file system has O_TMPFILE; without it the named path above is the only one.
        assert!(
            std::env::var_os("CI").is_none(),
            "no O_TMPFILE in the temporary directory"
        );
        eprintln!("not checked: no O_TMPFILE here");
        return;
    };
    file.write_all(b"unnamed data").unwrap();
    let p = dir.path().join("d.txt");
    let attributes = Attributes::new_file(0o077);
    name_and_rename(file, dir.path(), "d.txt", &p, &attributes, |_| {
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
    let err = replace_with(&p, |f| {
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
    let err = replace(&dir.path().join("no/such/file"), b"x").unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
}
