//! What `write_file` and `edit` may replace: a file without write permission is refused
//! with nothing changed (unless `tools.files.overwriteReadOnly`), the replacement keeps
//! the file's mode and owner and drops setuid/setgid, and a path ending in `/` names a
//! directory, never a file to create.

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use serde_json::json;
use toolbelt_config::settings::Settings;
use toolbelt_core::ErrorKind;

use crate::test_support::{err_kind, fixture, fixture_with};

fn set_mode(path: &str, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn mode(path: &str) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[tokio::test]
async fn a_read_only_file_is_refused_by_write_file_and_edit() {
    let f = fixture();
    let file = f.write("locked.txt", "keep me\n");
    set_mode(&file, 0o444);
    let ino = std::fs::metadata(&file).unwrap().ino();
    let r = f
        .call(
            "write_file",
            json!({"file_path": file, "content": "gone\n"}),
        )
        .await;
    assert_eq!(
        err_kind(&r),
        Some(ErrorKind::PermissionDenied),
        "{}",
        r.llm_text()
    );
    assert!(r.llm_text().contains("read-only"), "{}", r.llm_text());
    let r = f
        .call(
            "edit",
            json!({"file_path": file, "old_string": "keep", "new_string": "lose"}),
        )
        .await;
    assert_eq!(
        err_kind(&r),
        Some(ErrorKind::PermissionDenied),
        "{}",
        r.llm_text()
    );
    // Nothing changed: content, mode, inode.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me\n");
    assert_eq!(mode(&file), 0o444);
    assert_eq!(std::fs::metadata(&file).unwrap().ino(), ino);
}

#[tokio::test]
async fn the_settings_may_allow_replacing_read_only_files() {
    let settings =
        Settings::from_value(json!({"tools": {"files": {"overwriteReadOnly": true}}})).unwrap();
    let f = fixture_with(25_000, 1_000, settings);
    let file = f.write("locked.txt", "old\n");
    set_mode(&file, 0o444);
    let r = f
        .call("write_file", json!({"file_path": file, "content": "new\n"}))
        .await;
    assert!(r.error.is_none(), "{}", r.llm_text());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "new\n");
    assert_eq!(mode(&file), 0o444, "the mode is kept");
}

#[tokio::test]
async fn a_rewritten_file_keeps_its_mode_and_loses_setuid_and_setgid() {
    let f = fixture();
    let file = f.write("tool.sh", "echo old\n");
    set_mode(&file, 0o6750);
    let r = f
        .call(
            "edit",
            json!({"file_path": file, "old_string": "old", "new_string": "new"}),
        )
        .await;
    assert!(r.error.is_none(), "{}", r.llm_text());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "echo new\n");
    assert_eq!(mode(&file), 0o750);
    if rustix::process::geteuid().is_root() {
        std::os::unix::fs::chown(&file, Some(4242), Some(4343)).unwrap();
        let r = f
            .call(
                "write_file",
                json!({"file_path": file, "content": "echo x\n"}),
            )
            .await;
        assert!(r.error.is_none(), "{}", r.llm_text());
        let meta = std::fs::metadata(&file).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (4242, 4343));
    }
}

#[tokio::test]
async fn a_trailing_slash_names_a_directory_not_a_file_to_create() {
    let f = fixture();
    for path in [
        format!("{}/dir/", f.ws().display()),
        format!("{}/dir/.", f.ws().display()),
        format!("{}/new/..", f.ws().display()),
    ] {
        let r = f
            .call("write_file", json!({"file_path": path, "content": "x"}))
            .await;
        assert_eq!(
            err_kind(&r),
            Some(ErrorKind::TargetIsDirectory),
            "{path}: {}",
            r.llm_text()
        );
    }
    assert!(!f.ws().join("dir").exists());
    assert!(!f.ws().join("new").exists());
}

#[tokio::test]
async fn a_file_too_large_to_hold_is_refused_whole_and_an_exact_edit_still_streams() {
    let f = fixture();
    // 64 MiB of short lines, then the one to change.
    let line = "0123456789abcdef\n";
    let lines = line.repeat(crate::file_change::MAX_HELD as usize / line.len());
    let file = f.write("big.txt", format!("{lines}needle\n"));
    let size = std::fs::metadata(&file).unwrap().len();
    for (tool, args) in [
        (
            "write_file",
            json!({"file_path": file, "content": "small\n"}),
        ),
        // No exact occurrence: the tolerant match needs the whole text.
        (
            "edit",
            json!({"file_path": file, "old_string": "\u{201c}needle\u{201d}", "new_string": "pin"}),
        ),
    ] {
        let r = f.call(tool, args).await;
        assert_eq!(
            err_kind(&r),
            Some(ErrorKind::FileTooLarge),
            "{tool}: {}",
            r.llm_text()
        );
        assert!(r.llm_text().contains("64 MiB"), "{}", r.llm_text());
        assert_eq!(
            std::fs::metadata(&file).unwrap().len(),
            size,
            "{tool} changed it"
        );
    }
    let r = f
        .call(
            "edit",
            json!({"file_path": file, "old_string": "needle", "new_string": "pin"}),
        )
        .await;
    assert!(r.error.is_none(), "{}", r.llm_text());
    assert_eq!(std::fs::metadata(&file).unwrap().len(), size - 3);
}
