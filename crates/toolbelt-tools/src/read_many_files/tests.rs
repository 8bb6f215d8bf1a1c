use serde_json::json;
use toolbelt_config::settings::Settings;
use toolbelt_core::{ErrorKind, Part};

use crate::test_support::{Fixture, err_kind, fixture, fixture_with};

fn redact(f: &Fixture, text: &str) -> String {
    text.replace(&f.ws().display().to_string(), "<ws>")
}

/// The `--- path ---` headers, in order.
fn headers(f: &Fixture, text: &str) -> Vec<String> {
    redact(f, text)
        .lines()
        .filter(|l| l.starts_with("--- <ws>/"))
        .map(|l| {
            l.trim_start_matches("--- <ws>/")
                .trim_end_matches(" ---")
                .to_string()
        })
        .collect()
}

#[tokio::test]
async fn files_come_with_separators_and_an_end_marker() {
    let f = fixture();
    f.write("b.txt", "bee\n");
    f.write("a.txt", "ay\nsecond line\n");
    let r = f
        .call(
            "read_many_files",
            json!({"paths": ["b.txt", f.path("a.txt")]}),
        )
        .await;
    assert_eq!(r.error, None);
    insta::assert_snapshot!(redact(&f, &r.llm_text()), @r"
    --- <ws>/a.txt ---

    ay
    second line

    --- <ws>/b.txt ---

    bee

    --- End of content ---
    ");
}

#[tokio::test]
async fn directories_globs_include_and_exclude() {
    let f = fixture();
    f.write("src/a.rs", "a");
    f.write("src/deep/b.rs", "b");
    f.write("src/c.md", "c");
    f.write("docs/x.md", "x");
    let r = f.call("read_many_files", json!({"paths": ["src"]})).await;
    assert_eq!(
        headers(&f, &r.llm_text()),
        ["src/a.rs", "src/c.md", "src/deep/b.rs"]
    );
    let r = f
        .call(
            "read_many_files",
            json!({"paths": ["src"], "recursive": false}),
        )
        .await;
    assert_eq!(headers(&f, &r.llm_text()), ["src/a.rs", "src/c.md"]);
    let r = f
        .call(
            "read_many_files",
            json!({"paths": ["src/**/*.rs"], "include": ["**/*.md"], "exclude": ["docs/**"]}),
        )
        .await;
    assert_eq!(
        headers(&f, &r.llm_text()),
        ["src/a.rs", "src/c.md", "src/deep/b.rs"]
    );
    let pattern = format!("{}/src/*.rs", f.ws().display());
    let r = f.call("read_many_files", json!({"paths": [pattern]})).await;
    assert_eq!(headers(&f, &r.llm_text()), ["src/a.rs"]);
}

#[tokio::test]
async fn default_excludes_and_ignore_files_apply_unless_turned_off() {
    let f = fixture();
    f.write("app.js", "app");
    f.write("node_modules/lib/index.js", "dep");
    f.write("bundle.zip", "zip");
    f.write(".gitignore", "*.log\n");
    f.write("debug.log", "log");
    let r = f.call("read_many_files", json!({"paths": ["."]})).await;
    assert_eq!(headers(&f, &r.llm_text()), [".gitignore", "app.js"]);
    let r = f
        .call(
            "read_many_files",
            json!({"paths": ["."], "useDefaultExcludes": false, "file_filtering_options": {"respect_git_ignore": false}}),
        )
        .await;
    assert_eq!(
        headers(&f, &r.llm_text()),
        [
            ".gitignore",
            "app.js",
            "bundle.zip",
            "debug.log",
            "node_modules/lib/index.js"
        ]
    );
}

#[tokio::test]
async fn images_only_when_named() {
    let f = fixture();
    let png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR";
    f.write("img/logo.png", png);
    f.write("img/notes.txt", "notes");
    let r = f.call("read_many_files", json!({"paths": ["img"]})).await;
    assert_eq!(r.llm_content.len(), 1, "no inline data");
    assert!(
        r.llm_text()
            .contains("logo.png (image/png: name it or its extension explicitly to include it)"),
        "{}",
        r.llm_text()
    );
    for paths in [json!(["img/logo.png"]), json!(["img/*.png"])] {
        let r = f.call("read_many_files", json!({"paths": paths})).await;
        let inline: Vec<&Part> = r
            .llm_content
            .iter()
            .filter(|p| matches!(p, Part::InlineData { .. }))
            .collect();
        assert_eq!(inline.len(), 1, "{paths}");
        let Part::InlineData {
            mime_type, data, ..
        } = inline[0]
        else {
            unreachable!()
        };
        assert_eq!(
            (mime_type.as_str(), data.as_slice()),
            ("image/png", &png[..])
        );
    }
}

#[tokio::test]
async fn one_budget_for_all_files_and_the_rest_are_named() {
    let f = fixture_with(200, 1_000, Settings::default());
    for name in ["a", "b", "c", "d"] {
        f.write(&format!("{name}.txt"), format!("{}\n", name.repeat(60)));
    }
    let r = f.call("read_many_files", json!({"paths": ["*.txt"]})).await;
    let text = redact(&f, &r.llm_text());
    assert!(text.contains(&"a".repeat(60)), "{text}");
    assert!(!text.contains(&"d".repeat(60)), "{text}");
    assert!(
        text.contains("Not included because the output budget ran out"),
        "{text}"
    );
    assert!(text.contains("<ws>/d.txt"), "{text}");
}

#[tokio::test]
async fn missing_binary_and_special_files_are_reported() {
    let f = fixture();
    f.write("ok.txt", "fine");
    f.write("blob.dat", b"\x00\x01\x02\x03");
    let fifo = f.ws().join("pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let r = f
        .call(
            "read_many_files",
            json!({"paths": ["ok.txt", "blob.dat", "pipe", "gone.txt"]}),
        )
        .await;
    let text = redact(&f, &r.llm_text());
    assert_eq!(headers(&f, &text), ["ok.txt"]);
    assert!(text.contains("Not found: gone.txt."), "{text}");
    assert!(text.contains("<ws>/blob.dat (binary file)"), "{text}");
    assert!(
        text.contains("pipe (not a regular file or directory"),
        "{text}"
    );
}

#[tokio::test]
async fn nothing_outside_the_workspace_is_read() {
    let f = fixture();
    std::fs::write(f.outside().join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(f.outside(), f.ws().join("out")).unwrap();
    std::os::unix::fs::symlink(f.outside().join("secret.txt"), f.ws().join("s.txt")).unwrap();
    for path in [
        "../outside/secret.txt".to_string(),
        f.outside().join("secret.txt").display().to_string(),
        "out/secret.txt".to_string(),
        "s.txt".to_string(),
        "out/*.txt".to_string(),
        format!("{}/*.txt", f.outside().display()),
    ] {
        let r = f.call("read_many_files", json!({"paths": [path]})).await;
        assert_eq!(err_kind(&r), Some(ErrorKind::PathNotInWorkspace), "{path}");
    }
    // Walking the workspace does not follow the links.
    let r = f
        .call("read_many_files", json!({"paths": ["**/*.txt"]}))
        .await;
    assert!(!r.llm_text().contains("secret"), "{}", r.llm_text());
    let r = f.call("read_many_files", json!({"paths": ["a\0b"]})).await;
    assert_eq!(err_kind(&r), Some(ErrorKind::InvalidToolParams));
}
