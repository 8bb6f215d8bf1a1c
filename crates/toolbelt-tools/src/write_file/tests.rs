use std::os::unix::fs::{FileTypeExt, PermissionsExt};

use serde_json::json;
use toolbelt_core::{ConfirmationDetails, Display, ErrorKind};

use crate::test_support::{err_kind, fixture};

#[tokio::test]
async fn creates_a_new_file_and_its_parent_directories() {
    let f = fixture();
    let p = f.path("a/b/c/new.txt");
    let (r, details) = f
        .call_confirmed(
            "write_file",
            json!({"file_path": p, "content": "one\ntwo\n"}),
        )
        .await;
    assert_eq!(r.error, None);
    assert_eq!(f.read("a/b/c/new.txt"), b"one\ntwo\n");
    assert_eq!(
        r.llm_text(),
        format!("Successfully created and wrote to new file: {p}.")
    );
    let Display::FileDiff(diff) = &r.return_display else {
        panic!("{:?}", r.return_display)
    };
    assert_eq!((diff.added_lines, diff.removed_lines), (2, 0));
    assert_eq!(diff.original_content, None);
    let Some(ConfirmationDetails::Edit { title, diff, .. }) = details else {
        panic!("{details:?}")
    };
    assert_eq!(title, "Confirm Write: a/b/c/new.txt");
    assert!(diff.contains("+one\n+two\n"), "{diff}");
}

#[tokio::test]
async fn confirmation_shows_the_diff_against_the_current_file() {
    let f = fixture();
    let p = f.write("a.txt", "keep\nold\n");
    let call = f
        .build(
            "write_file",
            json!({"file_path": p, "content": "keep\nnew\n"}),
        )
        .unwrap();
    let Some(ConfirmationDetails::Edit {
        diff,
        original_content,
        new_content,
        ..
    }) = call.confirmation().await
    else {
        panic!()
    };
    assert_eq!(
        diff,
        "--- a.txt\tCurrent\n+++ a.txt\tProposed\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n"
    );
    assert_eq!(original_content.as_deref(), Some("keep\nold\n"));
    assert_eq!(new_content.as_deref(), Some("keep\nnew\n"));
    // Asking changes nothing.
    assert_eq!(f.read("a.txt"), b"keep\nold\n");
}

#[tokio::test]
async fn overwrite_keeps_crlf_bom_and_permissions() {
    let f = fixture();
    let p = f.write("win.txt", b"\xEF\xBB\xBFold\r\nlines\r\n");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o741)).unwrap();
    let r = f
        .call(
            "write_file",
            json!({"file_path": p, "content": "new\nlines\nhere\n"}),
        )
        .await;
    assert_eq!(r.error, None);
    assert_eq!(r.llm_text(), format!("Successfully overwrote file: {p}."));
    assert_eq!(f.read("win.txt"), b"\xEF\xBB\xBFnew\r\nlines\r\nhere\r\n");
    let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o741);
    // The diff is of the text, not of the line endings.
    let Display::FileDiff(diff) = r.return_display else {
        panic!()
    };
    assert_eq!((diff.added_lines, diff.removed_lines), (2, 1));
}

#[tokio::test]
async fn a_file_changed_after_the_confirmation_is_not_overwritten() {
    let f = fixture();
    let p = f.write("a.txt", "v1\n");
    let call = f
        .build("write_file", json!({"file_path": p, "content": "mine\n"}))
        .unwrap();
    assert!(call.confirmation().await.is_some());
    std::fs::write(&p, "someone else's longer change\n").unwrap();
    let r = call
        .execute(toolbelt_core::ExecContext::new(f.env.clone()))
        .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::FileWriteFailure));
    assert!(r.llm_text().contains("changed after"), "{}", r.llm_text());
    assert_eq!(f.read("a.txt"), b"someone else's longer change\n");
}

#[tokio::test]
async fn directory_where_a_file_is_expected_and_the_reverse() {
    let f = fixture();
    std::fs::create_dir(f.ws().join("dir")).unwrap();
    let r = f
        .call(
            "write_file",
            json!({"file_path": f.path("dir"), "content": "x"}),
        )
        .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::TargetIsDirectory));
    // A file where a parent directory is expected.
    f.write("plain.txt", "p");
    let r = f
        .call(
            "write_file",
            json!({"file_path": f.path("plain.txt/child.txt"), "content": "x"}),
        )
        .await;
    assert!(r.is_error(), "{}", r.llm_text());
    assert_eq!(f.read("plain.txt"), b"p");
}

#[tokio::test]
async fn a_fifo_is_refused_without_blocking() {
    let f = fixture();
    let fifo = f.ws().join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let r = f
        .call("write_file", json!({"file_path": fifo, "content": "x"}))
        .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::FileWriteFailure));
    assert!(
        r.llm_text().contains("not a regular file"),
        "{}",
        r.llm_text()
    );
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

#[tokio::test]
async fn paths_outside_the_workspace_are_refused() {
    let f = fixture();
    let outside = f.outside();
    std::fs::write(outside.join("secret.txt"), "s").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), f.ws().join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, f.ws().join("linkdir")).unwrap();
    let cases = [
        format!("{}/../outside/new.txt", f.ws().display()),
        outside.join("abs.txt").display().to_string(),
        f.path("link.txt"),
        f.path("linkdir/new.txt"),
        f.path("linkdir/deeper/new.txt"),
    ];
    for path in cases {
        let r = f
            .call("write_file", json!({"file_path": path, "content": "pwned"}))
            .await;
        assert_eq!(err_kind(&r), Some(ErrorKind::PathNotInWorkspace), "{path}");
        assert!(
            r.llm_text().contains("allowed directories"),
            "{}",
            r.llm_text()
        );
    }
    assert_eq!(std::fs::read(outside.join("secret.txt")).unwrap(), b"s");
    let left: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
    assert_eq!(left.len(), 1, "nothing created outside");
}

#[tokio::test]
async fn nul_bytes_and_relative_paths_are_invalid() {
    let f = fixture();
    for path in [
        format!("{}/a\0b", f.ws().display()),
        "rel/a.txt".to_string(),
    ] {
        let r = f
            .call("write_file", json!({"file_path": path, "content": "x"}))
            .await;
        assert_eq!(err_kind(&r), Some(ErrorKind::InvalidToolParams), "{path:?}");
    }
}

#[tokio::test]
async fn a_symlink_inside_the_workspace_writes_through_to_its_target() {
    let f = fixture();
    let target = f.write("real.txt", "old\n");
    std::os::unix::fs::symlink(&target, f.ws().join("alias.txt")).unwrap();
    let r = f
        .call(
            "write_file",
            json!({"file_path": f.path("alias.txt"), "content": "new\n"}),
        )
        .await;
    assert_eq!(r.error, None);
    assert_eq!(f.read("real.txt"), b"new\n");
    assert!(
        std::fs::symlink_metadata(f.ws().join("alias.txt"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link stays a link"
    );
}
