use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use serde_json::json;
use toolbelt_config::settings::Settings;
use toolbelt_core::ErrorKind;

use crate::test_support::{err_kind, fixture, fixture_with};

#[tokio::test]
async fn directories_first_then_files_alphabetically() {
    let f = fixture();
    f.write("b.txt", "");
    f.write("a.txt", "");
    f.write("zdir/x", "");
    f.write("adir/x", "");
    let r = f.call("ls", json!({"path": f.ws()})).await;
    insta::assert_snapshot!(r.llm_text().replace(&f.ws().display().to_string(), "<ws>"), @r"
    Listed 4 item(s) in <ws>:
    ---
    [DIR] adir
    [DIR] zdir
    a.txt
    b.txt
    ");
}

#[tokio::test]
async fn ignored_entries_are_counted_not_shown() {
    let f = fixture();
    f.write(".gitignore", "*.log\nbuild/\n");
    f.write(".qwenignore", "secret.txt\n");
    f.write("a.log", "");
    f.write("b.log", "");
    f.write("build/out", "");
    f.write("secret.txt", "");
    f.write("keep.rs", "");
    f.write("notes.tmp", "");
    let r = f
        .call(
            "list_directory",
            json!({"path": f.ws(), "ignore": ["*.tmp"]}),
        )
        .await;
    let text = r.llm_text();
    assert!(
        text.contains("\n.gitignore\n.qwenignore\nkeep.rs"),
        "{text}"
    );
    assert!(!text.contains("a.log") && !text.contains("build") && !text.contains("secret"));
    assert!(
        text.ends_with("(3 git-ignored, 1 qwen-ignored, 1 matching the ignore patterns not shown)"),
        "{text}"
    );
    let r = f
        .call(
            "list_directory",
            json!({"path": f.ws(), "file_filtering_options": {"respect_git_ignore": false, "respect_qwen_ignore": false}}),
        )
        .await;
    assert!(
        r.llm_text().starts_with("Listed 8 item(s)"),
        "{}",
        r.llm_text()
    );
}

#[tokio::test]
async fn settings_can_turn_ignore_files_off() {
    let settings =
        Settings::from_value(json!({"context": {"fileFiltering": {"respectGitIgnore": false}}}))
            .unwrap();
    let f = fixture_with(25_000, 1_000, settings);
    f.write(".gitignore", "*.log\n");
    f.write("a.log", "");
    let r = f.call("list_directory", json!({"path": f.ws()})).await;
    assert!(r.llm_text().contains("a.log"), "{}", r.llm_text());
}

#[tokio::test]
async fn empty_directory_is_not_an_error() {
    let f = fixture();
    std::fs::create_dir(f.ws().join("empty")).unwrap();
    let r = f
        .call("list_directory", json!({"path": f.path("empty")}))
        .await;
    assert_eq!(r.error, None);
    assert_eq!(
        r.llm_text(),
        format!("Directory {} is empty.", f.path("empty"))
    );
}

#[tokio::test]
async fn the_cap_says_how_many_were_left_out() {
    let f = fixture_with(25_000, 18, Settings::default());
    for i in 0..25 {
        f.write(&format!("f{i:02}"), "");
    }
    let r = f.call("list_directory", json!({"path": f.ws()})).await;
    let text = r.llm_text();
    assert!(
        text.contains("f09\n---\n[15 more items not shown; the list is capped at 10."),
        "{text}"
    );
    assert!(!text.contains("f10"));
}

#[tokio::test]
async fn a_file_or_missing_path_is_an_error() {
    let f = fixture();
    let p = f.write("a.txt", "");
    let r = f.call("list_directory", json!({"path": p})).await;
    assert_eq!(err_kind(&r), Some(ErrorKind::PathIsNotADirectory));
    let r = f
        .call("list_directory", json!({"path": f.path("nope")}))
        .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::FileNotFound));
}

#[tokio::test]
async fn odd_names_and_special_files_are_listed_safely() {
    let f = fixture();
    std::fs::write(f.ws().join(OsStr::from_bytes(b"bad\xFFname")), "").unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(f.ws().join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    std::os::unix::fs::symlink(f.outside(), f.ws().join("out")).unwrap();
    let r = f.call("list_directory", json!({"path": f.ws()})).await;
    let text = r.llm_text();
    assert!(text.contains("\"bad\\xffname\""), "{text}");
    assert!(text.contains("\npipe"), "{text}");
    // A link is listed by name (as ls does); following it is refused below.
    assert!(text.contains("[DIR] out"), "{text}");
}

#[tokio::test]
async fn directories_outside_the_workspace_are_refused() {
    let f = fixture();
    std::os::unix::fs::symlink(f.outside(), f.ws().join("out")).unwrap();
    for path in [
        f.path("out"),
        format!("{}/..", f.ws().display()),
        f.outside().display().to_string(),
        "/".to_string(),
    ] {
        let r = f.call("list_directory", json!({"path": path})).await;
        assert_eq!(err_kind(&r), Some(ErrorKind::PathNotInWorkspace), "{path}");
    }
}
