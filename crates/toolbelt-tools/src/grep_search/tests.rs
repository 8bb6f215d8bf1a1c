use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolbelt_config::settings::Settings;
use toolbelt_core::{ErrorKind, ExecContext, Tool};

use super::GrepSearch;
use crate::test_support::{Fixture, err_kind, fixture, fixture_two_roots, fixture_with};

fn redact(f: &Fixture, text: &str) -> String {
    text.replace(&f.ws().display().to_string(), "<ws>")
}

fn sample(f: &Fixture) {
    f.write(
        "src/main.rs",
        "fn main() {\n    let answer = compute();\n}\n",
    );
    f.write(
        "src/lib.rs",
        "pub fn compute() -> u32 {\n    42 // The Answer\n}\n",
    );
    f.write("README.md", "No answers here.\nANSWER in capitals\n");
}

#[tokio::test]
async fn matches_are_grouped_per_file_and_case_insensitive() {
    let f = fixture();
    sample(&f);
    let r = f.call("grep_search", json!({"pattern": "answer\\b"})).await;
    insta::assert_snapshot!(redact(&f, &r.llm_text()), @r#"
    Found 3 matches for pattern "answer\b" in the workspace directories:
    ---
    README.md:2:ANSWER in capitals
    src/lib.rs:2:    42 // The Answer
    src/main.rs:2:    let answer = compute();
    "#);
    let r = f
        .call(
            "grep_search",
            json!({"pattern": "Answer", "case_sensitive": true}),
        )
        .await;
    assert_eq!(
        redact(&f, &r.llm_text()).lines().nth(2),
        Some("src/lib.rs:2:    42 // The Answer")
    );
    assert_eq!(r.llm_text().lines().count(), 3);
}

#[tokio::test]
async fn glob_and_its_old_name_include_filter_files() {
    let f = fixture();
    sample(&f);
    for args in [
        json!({"pattern": "answer", "glob": "*.rs"}),
        json!({"pattern": "answer", "include": "*.rs"}),
        json!({"pattern": "answer", "glob": "src/**/*.rs"}),
    ] {
        let r = f.call("grep_search", args.clone()).await;
        let text = r.llm_text();
        assert!(!text.contains("README"), "{args}: {text}");
        assert!(text.contains("src/main.rs:2:"), "{args}: {text}");
    }
    let r = f
        .call(
            "search_file_content",
            json!({"pattern": "answer", "glob": "*.md"}),
        )
        .await;
    assert!(
        r.llm_text().contains("(filter: \"*.md\")"),
        "{}",
        r.llm_text()
    );
    assert_eq!(r.llm_text().matches("README.md:").count(), 2);
}

#[tokio::test]
async fn a_single_file_can_be_searched() {
    let f = fixture();
    sample(&f);
    let r = f
        .call(
            "grep",
            json!({"pattern": "fn", "path": f.path("src/lib.rs")}),
        )
        .await;
    assert_eq!(
        redact(&f, &r.llm_text()),
        "Found 1 match for pattern \"fn\" in path \"<ws>/src/lib.rs\":\n---\nsrc/lib.rs:1:pub fn compute() -> u32 {"
    );
}

#[tokio::test]
async fn a_bad_regex_quotes_the_engine() {
    let f = fixture();
    let r = f.call("grep_search", json!({"pattern": "fn (main"})).await;
    assert_eq!(err_kind(&r), Some(ErrorKind::InvalidToolParams));
    let text = r.llm_text();
    assert!(
        text.contains("invalid regular expression 'fn (main'"),
        "{text}"
    );
    assert!(text.contains("unclosed group"), "{text}");
    // JavaScript accepts lookbehind; the engine that searches does not, and says so.
    let r = f.call("grep_search", json!({"pattern": "(?<=a)b"})).await;
    assert_eq!(err_kind(&r), Some(ErrorKind::InvalidToolParams));
    assert!(r.llm_text().contains("look-around"), "{}", r.llm_text());
}

#[tokio::test]
async fn no_matches_is_a_plain_answer() {
    let f = fixture();
    sample(&f);
    let r = f
        .call(
            "grep_search",
            json!({"pattern": "nothing_like_this", "path": f.path("src")}),
        )
        .await;
    assert_eq!(r.error, None);
    assert_eq!(
        redact(&f, &r.llm_text()),
        "No matches found for pattern \"nothing_like_this\" in path \"<ws>/src\"."
    );
}

#[tokio::test]
async fn the_limit_stops_the_search_and_says_so() {
    let f = fixture();
    let body: String = (0..50).map(|i| format!("hit {i}\n")).collect();
    f.write("many.txt", &body);
    let r = f
        .call("grep_search", json!({"pattern": "hit", "limit": 5}))
        .await;
    let text = r.llm_text();
    assert_eq!(text.matches("many.txt:").count(), 5, "{text}");
    assert!(
        text.contains("The results are incomplete: the search stopped at 5 matching lines"),
        "{text}"
    );
}

#[tokio::test]
async fn the_output_budget_caps_lines_and_characters() {
    let f = fixture_with(300, 1_000, Settings::default());
    let body: String = (0..50)
        .map(|i| format!("match number {i} {}\n", "x".repeat(40)))
        .collect();
    f.write("big.txt", &body);
    let r = f.call("grep_search", json!({"pattern": "match"})).await;
    let text = r.llm_text();
    assert!(text.contains("The results are incomplete"), "{text}");
    assert!(text.matches("big.txt:").count() < 10, "{text}");
}

#[tokio::test]
async fn long_lines_are_cut() {
    let f = fixture();
    f.write("min.js", format!("var a={};needle\n", "1,".repeat(1000)));
    let r = f.call("grep_search", json!({"pattern": "var"})).await;
    let text = r.llm_text();
    assert!(text.ends_with("... [line cut]"), "{text}");
    assert!(text.len() < 600, "{}", text.len());
}

#[tokio::test]
async fn binary_and_ignored_files_are_skipped() {
    let f = fixture();
    f.write("data.bin", b"needle\x00\x01\x02needle");
    f.write(".gitignore", "gen/\n");
    f.write("gen/out.rs", "needle");
    f.write(".qwenignore", "private.txt\n");
    f.write("private.txt", "needle");
    f.write("ok.txt", "needle");
    let r = f.call("grep_search", json!({"pattern": "needle"})).await;
    assert_eq!(
        redact(&f, &r.llm_text()),
        "Found 1 match for pattern \"needle\" in the workspace directories:\n---\nok.txt:1:needle"
    );
}

#[tokio::test]
async fn the_time_limit_makes_a_partial_result_that_says_so() {
    let f = fixture();
    sample(&f);
    let tool = GrepSearch::new(f.env.clone()).with_time_limit(Duration::ZERO);
    let call = tool.build(json!({"pattern": "answer"})).unwrap();
    let r = call.execute(ExecContext::new(f.env.clone())).await;
    assert_eq!(r.error, None);
    let text = r.llm_text();
    assert!(text.starts_with("No matches found"), "{text}");
    assert!(
        text.contains(
            "The results are incomplete: the search hit its time limit of 0ns after 0 files."
        ),
        "{text}"
    );
}

#[tokio::test]
async fn a_cancelled_search_is_reported_as_cancelled() {
    let f = fixture();
    sample(&f);
    let call = f
        .build("grep_search", json!({"pattern": "answer"}))
        .unwrap();
    let ctx = ExecContext::new(f.env.clone());
    ctx.cancel.cancel();
    let r = call.execute(ctx).await;
    assert_eq!(err_kind(&r), Some(ErrorKind::Cancelled));
    assert!(r.llm_text().contains("cancelled"), "{}", r.llm_text());
}

#[tokio::test]
async fn outside_paths_links_fifos_and_odd_names() {
    let f = fixture();
    std::fs::write(f.outside().join("secret.txt"), "needle").unwrap();
    std::os::unix::fs::symlink(f.outside(), f.ws().join("out")).unwrap();
    std::os::unix::fs::symlink(f.outside().join("secret.txt"), f.ws().join("link.txt")).unwrap();
    std::fs::write(f.ws().join(OsStr::from_bytes(b"odd\xFF.txt")), "needle").unwrap();
    let fifo = f.ws().join("pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    // The FIFO is skipped (reading it would block), the links are not followed.
    let r = f.call("grep_search", json!({"pattern": "needle"})).await;
    assert_eq!(
        redact(&f, &r.llm_text()),
        "Found 1 match for pattern \"needle\" in the workspace directories:\n---\n\"odd\\xff.txt\":1:needle"
    );
    for path in [
        f.path("out"),
        f.path("link.txt"),
        f.outside().display().to_string(),
        format!("{}/../outside", f.ws().display()),
    ] {
        let r = f
            .call("grep_search", json!({"pattern": "needle", "path": path}))
            .await;
        assert_eq!(err_kind(&r), Some(ErrorKind::PathNotInWorkspace), "{path}");
    }
    let r = f
        .call("grep_search", json!({"pattern": "x", "path": fifo}))
        .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::GrepExecutionError));
    let r = f
        .call(
            "grep_search",
            json!({"pattern": "x", "path": f.path("missing")}),
        )
        .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::SearchPathNotFound));
    let r = f
        .call(
            "grep_search",
            json!({"pattern": "x", "path": format!("{}/\0", f.ws().display())}),
        )
        .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::InvalidToolParams));
}

#[test]
fn grep_is_registered_under_its_old_names() {
    let f = fixture();
    let tool = GrepSearch::new(Arc::clone(&f.env));
    assert_eq!(tool.aliases(), ["search_file_content", "grep"]);
    assert!(
        f.build("search_file_content", json!({"pattern": "x"}))
            .is_ok()
    );
}

#[tokio::test]
async fn without_a_path_every_workspace_directory_is_searched() {
    let f = fixture_two_roots();
    f.write("a.txt", "needle one");
    let second = f.dir.path().join("ws2").canonicalize().unwrap();
    std::fs::write(second.join("b.txt"), "needle two").unwrap();
    let r = f.call("grep_search", json!({"pattern": "needle"})).await;
    let text = r.llm_text();
    assert!(text.starts_with("Found 2 matches"), "{text}");
    assert!(text.contains("a.txt:1:needle one"), "{text}");
    assert!(text.contains("b.txt:1:needle two"), "{text}");
}

#[tokio::test]
async fn a_file_that_is_one_line_past_the_buffer_limit_is_named_not_read_whole() {
    let f = fixture();
    f.write("small.txt", "needle\n");
    let mut blob = "x".repeat(super::MAX_LINE_BUFFER + 1);
    blob.push_str("needle\n");
    f.write("blob.txt", blob);
    let r = f.call("grep_search", json!({"pattern": "needle"})).await;
    let text = r.llm_text();
    assert!(text.contains("small.txt"), "{text}");
    assert!(
        text.contains("could not be read") && text.contains("blob.txt"),
        "{}",
        &text[..text.len().min(600)]
    );
}
