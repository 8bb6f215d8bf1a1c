use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime};

use serde_json::json;
use toolbelt_config::settings::Settings;
use toolbelt_core::ErrorKind;

use crate::test_support::{Fixture, err_kind, fixture, fixture_two_roots, fixture_with};

fn touch(f: &Fixture, rel: &str, age: Duration) {
    let p = f.write(rel, "x");
    let file = std::fs::File::options().write(true).open(p).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
}

/// The listed paths, relative to the workspace.
fn listed(f: &Fixture, text: &str) -> Vec<String> {
    let ws = format!("{}/", f.ws().display());
    text.lines()
        .filter_map(|l| l.strip_prefix(&ws))
        .map(str::to_string)
        .collect()
}

const HOUR: Duration = Duration::from_secs(3600);

#[tokio::test]
async fn recent_files_first_newest_first_then_alphabetical() {
    let f = fixture();
    touch(&f, "c.rs", 48 * HOUR);
    touch(&f, "a.rs", 72 * HOUR);
    touch(&f, "sub/b.rs", HOUR);
    touch(&f, "d.rs", Duration::ZERO);
    touch(&f, "e.txt", Duration::ZERO);
    let r = f.call("glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(
        listed(&f, &r.llm_text()),
        ["d.rs", "sub/b.rs", "a.rs", "c.rs"]
    );
    assert!(
        r.llm_text()
            .starts_with("Found 4 file(s) matching \"**/*.rs\" within "),
        "{}",
        r.llm_text()
    );
}

#[tokio::test]
async fn star_stays_in_one_directory_and_literal_prefixes_narrow_the_walk() {
    let f = fixture();
    for p in ["top.md", "docs/a.md", "docs/deep/b.md", "other/c.md"] {
        touch(&f, p, 48 * HOUR);
    }
    let r = f.call("glob", json!({"pattern": "*.md"})).await;
    assert_eq!(listed(&f, &r.llm_text()), ["top.md"]);
    let r = f.call("glob", json!({"pattern": "docs/**/*.md"})).await;
    assert_eq!(listed(&f, &r.llm_text()), ["docs/a.md", "docs/deep/b.md"]);
    let pattern = format!("{}/docs/*.md", f.ws().display());
    let r = f.call("glob", json!({"pattern": pattern})).await;
    assert_eq!(listed(&f, &r.llm_text()), ["docs/a.md"]);
    let r = f
        .call("glob", json!({"pattern": "*.md", "path": f.path("docs")}))
        .await;
    assert_eq!(listed(&f, &r.llm_text()), ["docs/a.md"]);
}

#[tokio::test]
async fn case_insensitive_unless_asked() {
    let f = fixture();
    touch(&f, "Read.ME", HOUR);
    let r = f.call("glob", json!({"pattern": "*.me"})).await;
    assert_eq!(listed(&f, &r.llm_text()), ["Read.ME"]);
    let r = f
        .call("glob", json!({"pattern": "*.me", "case_sensitive": true}))
        .await;
    assert!(
        r.llm_text().starts_with("No files found"),
        "{}",
        r.llm_text()
    );
}

#[tokio::test]
async fn ignored_directories_are_pruned_not_filtered() {
    let f = fixture();
    f.write(".gitignore", "target/\n");
    touch(&f, "src/lib.rs", HOUR);
    touch(&f, "target/debug/gen.rs", HOUR);
    // Inside the ignored directory, a rule that would re-include .rs files: it only
    // takes effect if the walk enters the directory, which it must not.
    f.write("target/.gitignore", "!*.rs\n");
    f.write(".qwenignore", "secret/\n");
    touch(&f, "secret/key.rs", HOUR);
    let r = f.call("glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(listed(&f, &r.llm_text()), ["src/lib.rs"]);
    let r = f
        .call("glob", json!({"pattern": "**/*.rs", "respect_git_ignore": false, "respect_qwen_ignore": false}))
        .await;
    let mut all = listed(&f, &r.llm_text());
    all.sort();
    assert_eq!(all, ["secret/key.rs", "src/lib.rs", "target/debug/gen.rs"]);
}

#[tokio::test]
async fn the_cap_gives_the_number_left_out() {
    let f = fixture();
    for i in 0..105 {
        touch(&f, &format!("f{i:03}.txt"), 48 * HOUR);
    }
    let r = f.call("glob", json!({"pattern": "*.txt"})).await;
    let names = listed(&f, &r.llm_text());
    assert_eq!(names.len(), 100);
    assert_eq!(names[0], "f000.txt");
    assert_eq!(names[99], "f099.txt");
    assert!(r.llm_text().contains("Found 105 file(s)"));
    assert!(r.llm_text().ends_with("[5 more file(s) not shown; at most 100 are listed. Use a more specific pattern or path.]"), "{}", r.llm_text());
    // A smaller output policy lowers the cap.
    let small = fixture_with(25_000, 20, Settings::default());
    for i in 0..30 {
        touch(&small, &format!("f{i:03}.txt"), 48 * HOUR);
    }
    let r = small.call("glob", json!({"pattern": "*.txt"})).await;
    assert_eq!(listed(&small, &r.llm_text()).len(), 12);
}

#[tokio::test]
async fn bad_patterns_and_paths_are_clear_errors() {
    let f = fixture();
    let file = f.write("a.txt", "");
    for (args, kind) in [
        (json!({"pattern": "  "}), ErrorKind::InvalidToolParams),
        (json!({"pattern": "a[b"}), ErrorKind::InvalidToolParams),
        (
            json!({"pattern": "*", "path": file}),
            ErrorKind::PathIsNotADirectory,
        ),
        (
            json!({"pattern": "*", "path": f.path("missing")}),
            ErrorKind::SearchPathNotFound,
        ),
        (
            json!({"pattern": "*", "path": f.outside()}),
            ErrorKind::PathNotInWorkspace,
        ),
        (
            json!({"pattern": format!("{}/*", f.outside().display())}),
            ErrorKind::PathNotInWorkspace,
        ),
        (
            json!({"pattern": "*", "path": format!("{}/../outside", f.ws().display())}),
            ErrorKind::PathNotInWorkspace,
        ),
    ] {
        let r = f.call("glob", args.clone()).await;
        assert_eq!(err_kind(&r), Some(kind), "{args}: {}", r.llm_text());
    }
}

#[tokio::test]
async fn links_out_are_not_followed_and_odd_names_are_reported() {
    let f = fixture();
    std::fs::write(f.outside().join("leak.rs"), "").unwrap();
    std::os::unix::fs::symlink(f.outside(), f.ws().join("out")).unwrap();
    std::os::unix::fs::symlink(f.outside().join("leak.rs"), f.ws().join("leak.rs")).unwrap();
    std::fs::write(f.ws().join(OsStr::from_bytes(b"odd\xFF.rs")), "").unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(f.ws().join("pipe.rs"))
        .status()
        .unwrap();
    assert!(status.success());
    let r = f.call("glob", json!({"pattern": "**/*.rs"})).await;
    // Nothing through the links; the name that is not UTF-8 is quoted with escapes.
    let text = r.llm_text();
    assert_eq!(listed(&f, &text), Vec::<String>::new(), "{text}");
    let quoted = format!("\"{}/odd\\xff.rs\"", f.ws().display());
    assert!(text.lines().any(|l| l == quoted), "{text}");
}

#[tokio::test]
async fn without_a_path_every_workspace_directory_is_searched() {
    let f = fixture_two_roots();
    touch(&f, "a.rs", 48 * HOUR);
    let second = f.dir.path().join("ws2").canonicalize().unwrap();
    std::fs::write(second.join("b.rs"), "").unwrap();
    let r = f.call("glob", json!({"pattern": "*.rs"})).await;
    let text = r.llm_text();
    assert!(
        text.contains(&format!("{}/a.rs", f.ws().display())),
        "{text}"
    );
    assert!(
        text.contains(&format!("{}/b.rs", second.display())),
        "{text}"
    );
    assert!(text.starts_with("Found 2 file(s)"), "{text}");
}
