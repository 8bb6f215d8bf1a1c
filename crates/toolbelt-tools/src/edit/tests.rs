use serde_json::json;
use toolbelt_core::{ConfirmationDetails, Display, ErrorKind, ExecContext, ToolResult};

use crate::test_support::{Fixture, err_kind, fixture};

async fn edit(f: &Fixture, rel: &str, old: &str, new: &str) -> ToolResult {
    f.call(
        "edit",
        json!({"file_path": f.path(rel), "old_string": old, "new_string": new}),
    )
    .await
}

/// The model-facing text with the temporary workspace path replaced.
fn redact(f: &Fixture, text: &str) -> String {
    text.replace(&f.ws().display().to_string(), "<ws>")
}

#[tokio::test]
async fn replaces_one_exact_occurrence_and_shows_the_result() {
    let f = fixture();
    let body: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    f.write("a.txt", &body);
    let r = edit(&f, "a.txt", "line 10\n", "line ten\nline ten and a half\n").await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    assert_eq!(
        String::from_utf8(f.read("a.txt")).unwrap(),
        body.replace("line 10\n", "line ten\nline ten and a half\n")
    );
    insta::assert_snapshot!(redact(&f, &r.llm_text()), @r"
    The file: <ws>/a.txt has been updated.
    Showing lines 6-16 of 21 from the edited file:

    ---

    line 6
    line 7
    line 8
    line 9
    line ten
    line ten and a half
    line 11
    line 12
    line 13
    line 14
    line 15
    ");
    let Display::FileDiff(diff) = r.return_display else {
        panic!()
    };
    assert_eq!((diff.added_lines, diff.removed_lines), (2, 1));
}

#[tokio::test]
async fn the_old_name_replace_still_works() {
    let f = fixture();
    let p = f.write("a.txt", "x = 1\n");
    let r = f
        .call(
            "replace",
            json!({"file_path": p, "old_string": "1", "new_string": "2"}),
        )
        .await;
    assert_eq!(r.error, None);
    assert_eq!(f.read("a.txt"), b"x = 2\n");
}

#[tokio::test]
async fn several_matches_without_replace_all_give_the_count_and_lines() {
    let f = fixture();
    f.write("a.rs", "let a = 1;\nfoo();\nlet b = 2;\nfoo();\nfoo();\n");
    let r = edit(&f, "a.rs", "foo();", "bar();").await;
    assert_eq!(
        err_kind(&r),
        Some(ErrorKind::EditExpectedOccurrenceMismatch)
    );
    insta::assert_snapshot!(redact(&f, &r.llm_text()), @"Error: Found 3 occurrences of old_string in <ws>/a.rs (at lines 2, 4, 5), but replace_all is not set. No edits made. Include more surrounding lines in old_string so it matches exactly one place, or set replace_all to true to replace all 3.");
    assert_eq!(
        f.read("a.rs"),
        b"let a = 1;\nfoo();\nlet b = 2;\nfoo();\nfoo();\n"
    );
}

#[tokio::test]
async fn replace_all_and_expected_replacements() {
    let f = fixture();
    let p = f.write("a.rs", "foo foo foo\n");
    let r = f
        .call(
            "edit",
            json!({"file_path": p, "old_string": "foo", "new_string": "bar", "replace_all": true}),
        )
        .await;
    assert_eq!(r.error, None);
    assert!(r.llm_text().contains("3 occurrences replaced"));
    assert_eq!(f.read("a.rs"), b"bar bar bar\n");

    let r = f
        .call(
            "edit",
            json!({"file_path": p, "old_string": "bar", "new_string": "baz", "expected_replacements": 2}),
        )
        .await;
    assert_eq!(
        err_kind(&r),
        Some(ErrorKind::EditExpectedOccurrenceMismatch)
    );
    assert!(
        r.llm_text().contains("expected_replacements is 2"),
        "{}",
        r.llm_text()
    );
    let r = f
        .call(
            "edit",
            json!({"file_path": p, "old_string": "bar", "new_string": "baz", "expected_replacements": 3}),
        )
        .await;
    assert_eq!(r.error, None);
    assert_eq!(f.read("a.rs"), b"baz baz baz\n");
}

#[tokio::test]
async fn no_match_shows_the_closest_region_with_line_numbers() {
    let f = fixture();
    f.write(
        "lib.rs",
        "use std::io;\n\nfn helper() -> u32 {\n    41\n}\n\nfn main() {\n    let x = helper();\n    println!(\"{x}\");\n}\n",
    );
    let r = edit(
        &f,
        "lib.rs",
        "fn main() {\n    let x = helper() + 1;\n    println!(\"{x}\");\n}",
        "fn main() {}",
    )
    .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::EditNoOccurrenceFound));
    insta::assert_snapshot!(redact(&f, &r.llm_text()), @r#"
    Error: Failed to edit, 0 occurrences found for old_string in <ws>/lib.rs. No edits made. The text was not found, even ignoring trailing whitespace and Unicode quotes, dashes and spaces. The closest match is at lines 7-10:
     5| }
     6| 
     7| fn main() {
     8|     let x = helper();
     9|     println!("{x}");
    10| }
    Copy old_string from these lines exactly (without the line numbers and '| '), check indentation, and retry.
    "#);
}

#[tokio::test]
async fn no_match_and_nothing_similar() {
    let f = fixture();
    f.write("a.txt", "alpha\nbeta\n");
    let r = edit(&f, "a.txt", "completely different words here", "x").await;
    assert_eq!(err_kind(&r), Some(ErrorKind::EditNoOccurrenceFound));
    assert!(
        r.llm_text().contains("read the file with read_file"),
        "{}",
        r.llm_text()
    );
}

#[tokio::test]
async fn dollar_signs_in_new_string_are_literal() {
    let f = fixture();
    f.write("a.sh", "echo NAME\n");
    let r = edit(&f, "a.sh", "NAME", "$1 $& $$ ${HOME}").await;
    assert_eq!(r.error, None);
    assert_eq!(f.read("a.sh"), b"echo $1 $& $$ ${HOME}\n");
}

#[tokio::test]
async fn empty_old_string_creates_a_file_and_refuses_an_existing_one() {
    let f = fixture();
    let r = edit(&f, "new/dir/file.md", "", "# Title\n").await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    assert!(r.llm_text().starts_with("Created new file: "));
    assert_eq!(f.read("new/dir/file.md"), b"# Title\n");

    let r = edit(&f, "new/dir/file.md", "", "again").await;
    assert_eq!(err_kind(&r), Some(ErrorKind::AttemptToCreateExistingFile));
    assert_eq!(f.read("new/dir/file.md"), b"# Title\n");
}

#[tokio::test]
async fn missing_file_with_old_string_is_not_found() {
    let f = fixture();
    let r = edit(&f, "nope.txt", "x", "y").await;
    assert_eq!(err_kind(&r), Some(ErrorKind::FileNotFound));
    assert!(
        r.llm_text().contains("empty old_string"),
        "{}",
        r.llm_text()
    );
    assert!(!f.ws().join("nope.txt").exists());
}

#[tokio::test]
async fn no_op_edits_are_errors() {
    let f = fixture();
    f.write("a.txt", "same\n");
    let r = edit(&f, "a.txt", "same", "same").await;
    assert_eq!(err_kind(&r), Some(ErrorKind::EditNoChange));
    // Tolerant match whose replacement equals the text on disk.
    f.write("b.txt", "say \u{201C}hi\u{201D}\n");
    let r = edit(&f, "b.txt", "say \"hi\"", "say \u{201C}hi\u{201D}").await;
    assert_eq!(
        err_kind(&r),
        Some(ErrorKind::EditNoChange),
        "{}",
        r.llm_text()
    );
}

#[tokio::test]
async fn tolerant_matching_replaces_the_exact_text_on_disk() {
    let f = fixture();
    f.write(
        "q.py",
        "def f():   \n    return \u{201C}caf\u{00E9}\u{201D} \u{2014} 1\n\nother = 1\n",
    );
    let r = edit(
        &f,
        "q.py",
        "def f():\n    return \"caf\u{00E9}\" - 1",
        "def f():\n    return 2",
    )
    .await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    assert!(
        r.llm_text().contains("Unicode look-alike"),
        "{}",
        r.llm_text()
    );
    assert_eq!(
        String::from_utf8(f.read("q.py")).unwrap(),
        "def f():\n    return 2\n\nother = 1\n"
    );
}

#[tokio::test]
async fn indentation_is_not_relaxed() {
    let f = fixture();
    f.write("y.yml", "a:\n    b: 1\n");
    let r = edit(&f, "y.yml", "a:\n  b: 1", "a:\n  b: 2").await;
    assert_eq!(err_kind(&r), Some(ErrorKind::EditNoOccurrenceFound));
}

#[tokio::test]
async fn crlf_and_bom_are_kept_and_lf_old_string_matches() {
    let f = fixture();
    f.write("w.txt", b"\xEF\xBB\xBFone\r\ntwo\r\nthree\r\n");
    let r = edit(&f, "w.txt", "one\ntwo\n", "uno\ndos\n").await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    assert_eq!(f.read("w.txt"), b"\xEF\xBB\xBFuno\r\ndos\r\nthree\r\n");
}

#[tokio::test]
async fn deleting_whole_lines_leaves_no_blank_line() {
    let f = fixture();
    f.write("a.txt", "keep\ndrop me\nkeep too\n");
    let r = edit(&f, "a.txt", "drop me", "").await;
    assert_eq!(r.error, None);
    assert_eq!(f.read("a.txt"), b"keep\nkeep too\n");
}

#[tokio::test]
async fn final_newline_the_file_lacks_is_tolerated() {
    let f = fixture();
    f.write("a.txt", "first\nlast");
    let r = edit(&f, "a.txt", "last\n", "final\n").await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    assert_eq!(f.read("a.txt"), b"first\nfinal");
}

#[tokio::test]
async fn non_utf8_files_are_refused_untouched() {
    let f = fixture();
    f.write("latin1.txt", b"caf\xE9\n");
    let r = edit(&f, "latin1.txt", "caf", "tea").await;
    assert_eq!(err_kind(&r), Some(ErrorKind::ReadContentFailure));
    assert_eq!(f.read("latin1.txt"), b"caf\xE9\n");
}

#[tokio::test]
async fn confirmation_only_for_edits_that_would_apply() {
    let f = fixture();
    let p = f.write("a.txt", "x\n");
    let failing = f
        .build(
            "edit",
            json!({"file_path": p, "old_string": "zzz", "new_string": "y"}),
        )
        .unwrap();
    assert!(failing.confirmation().await.is_none());
    let ok = f
        .build(
            "edit",
            json!({"file_path": p, "old_string": "x", "new_string": "y"}),
        )
        .unwrap();
    let Some(ConfirmationDetails::Edit { title, diff, .. }) = ok.confirmation().await else {
        panic!()
    };
    assert_eq!(title, "Confirm Edit: a.txt");
    assert!(diff.contains("-x\n+y\n"), "{diff}");
    // The file changes before the call runs: the approved diff is stale.
    std::fs::write(&p, "x and more\n").unwrap();
    let r = ok.execute(ExecContext::new(f.env.clone())).await;
    assert!(r.llm_text().contains("changed after"), "{}", r.llm_text());
    assert_eq!(f.read("a.txt"), b"x and more\n");
    // A failing edit that starts to apply after its (absent) question is refused too.
    std::fs::write(&p, "zzz\n").unwrap();
    let r = failing.execute(ExecContext::new(f.env.clone())).await;
    assert!(r.llm_text().contains("changed after"), "{}", r.llm_text());
    assert_eq!(f.read("a.txt"), b"zzz\n");
}

#[tokio::test]
async fn unsafe_targets_are_refused() {
    let f = fixture();
    let outside = f.outside();
    std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), f.ws().join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, f.ws().join("linkdir")).unwrap();
    for (path, old) in [
        (
            format!("{}/../outside/secret.txt", f.ws().display()),
            "secret",
        ),
        (outside.join("secret.txt").display().to_string(), "secret"),
        (f.path("link.txt"), "secret"),
        (f.path("linkdir/secret.txt"), "secret"),
        (f.path("linkdir/new.txt"), ""),
    ] {
        let r = f
            .call(
                "edit",
                json!({"file_path": path, "old_string": old, "new_string": "x"}),
            )
            .await;
        assert_eq!(err_kind(&r), Some(ErrorKind::PathNotInWorkspace), "{path}");
    }
    assert_eq!(
        std::fs::read(outside.join("secret.txt")).unwrap(),
        b"secret\n"
    );
    assert!(!outside.join("new.txt").exists());

    std::fs::create_dir(f.ws().join("d")).unwrap();
    let r = edit(&f, "d", "a", "b").await;
    assert_eq!(err_kind(&r), Some(ErrorKind::TargetIsDirectory));
    let status = std::process::Command::new("mkfifo")
        .arg(f.ws().join("fifo"))
        .status()
        .unwrap();
    assert!(status.success());
    let r = edit(&f, "fifo", "a", "b").await;
    assert!(
        r.llm_text().contains("not a regular file"),
        "{}",
        r.llm_text()
    );
    let r = f
        .call("edit", json!({"file_path": format!("{}/a\0", f.ws().display()), "old_string": "a", "new_string": "b"}))
        .await;
    assert_eq!(err_kind(&r), Some(ErrorKind::InvalidToolParams));
}

#[tokio::test]
async fn deleting_lines_next_to_each_other_never_overlaps_two_occurrences() {
    // The first occurrence is a whole line followed by a break that starts the second
    // occurrence: taking that break too would cut into the second.
    let f = fixture();
    let p = f.write("a.txt", "\n\nq\nq");
    let r = f
        .call(
            "edit",
            json!({"file_path": p, "old_string": "\nq", "new_string": "", "replace_all": true}),
        )
        .await;
    assert_eq!(r.error, None, "{}", r.llm_text());
    assert_eq!(f.read("a.txt"), b"\n");
}
