//! Path rules name operations, so no file tool sidesteps another's rule: every built-in
//! tool against deny and ask rules, in a real temporary workspace.
//!
//! Layout: `public.txt`, `secret.txt` (denied by `read_file(...)`), `private/inner.txt`
//! (denied by `Read(/private)`), `asked.txt` (an ask rule), `locked.txt` (an edit
//! rule). Every file holds the word `needle`.

use serde_json::json;
use toolbelt_core::{ErrorKind, ToolResult};
use toolbelt_engine::rules::RuleList;

use crate::test_support::{Fixture, err_kind, fixture_with_rules};

fn workspace() -> Fixture {
    let f = fixture_with_rules(&[
        (RuleList::Deny, "read_file(/secret.txt)"),
        (RuleList::Deny, "Read(/private)"),
        (RuleList::Ask, "read_file(/asked.txt)"),
        (RuleList::Deny, "edit(/locked.txt)"),
    ]);
    for name in [
        "public.txt",
        "secret.txt",
        "private/inner.txt",
        "asked.txt",
        "locked.txt",
    ] {
        f.write(name, format!("needle in {name}\n"));
    }
    f
}

/// Refused before anything was read, with the rule named.
fn assert_denied(r: &ToolResult, rule: &str) {
    assert_eq!(err_kind(r), Some(ErrorKind::ExecutionDenied), "{r:?}");
    let message = &r.error.as_ref().unwrap().message;
    assert!(message.contains(&format!("`{rule}`")), "{message}");
}

/// Nothing of the withheld files, and the note that says so without naming them.
fn assert_withheld(text: &str, count: usize) {
    for name in ["secret", "inner", "asked"] {
        assert!(!text.contains(name), "{name} leaked: {text}");
    }
    assert!(
        text.contains(&format!("{count} path(s) were left out")),
        "{text}"
    );
}

#[tokio::test]
async fn read_file_refuses_a_denied_path_and_its_links() {
    let f = workspace();
    let r = f
        .call("read_file", json!({"absolute_path": f.path("secret.txt")}))
        .await;
    assert_denied(&r, "read_file(/secret.txt)");
    let r = f
        .call(
            "read_file",
            json!({"absolute_path": f.path("private/inner.txt")}),
        )
        .await;
    assert_denied(&r, "Read(/private)");
    // A symbolic link is judged by what it points to.
    std::os::unix::fs::symlink(f.ws().join("secret.txt"), f.ws().join("alias.txt")).unwrap();
    let r = f
        .call("read_file", json!({"absolute_path": f.path("alias.txt")}))
        .await;
    assert_denied(&r, "read_file(/secret.txt)");
    // And `..` cannot dodge a rule written for the plain name.
    let r = f
        .call(
            "read_file",
            json!({"absolute_path": f.path("private/../secret.txt")}),
        )
        .await;
    assert_denied(&r, "read_file(/secret.txt)");
    let r = f
        .call("read_file", json!({"absolute_path": f.path("public.txt")}))
        .await;
    assert!(r.llm_text().contains("needle in public.txt"), "{r:?}");
}

#[tokio::test]
async fn read_file_builds_an_asked_path_so_the_scheduler_can_ask() {
    let f = workspace();
    let r = f
        .call("read_file", json!({"absolute_path": f.path("asked.txt")}))
        .await;
    assert!(r.llm_text().contains("needle in asked.txt"), "{r:?}");
}

#[tokio::test]
async fn read_many_files_leaves_out_denied_files_it_finds_and_refuses_named_ones() {
    let f = workspace();
    for paths in [json!(["*.txt"]), json!(["."]), json!(["**"])] {
        let r = f.call("read_many_files", json!({ "paths": paths })).await;
        let text = r.llm_text();
        assert!(text.contains("needle in public.txt"), "{text}");
        assert!(text.contains("path(s) were left out"), "{text}");
        for name in ["needle in secret", "needle in private", "needle in asked"] {
            assert!(!text.contains(name), "{paths}: {name} leaked: {text}");
        }
    }
    let r = f
        .call(
            "read_many_files",
            json!({"paths": ["public.txt", "secret.txt"]}),
        )
        .await;
    assert_denied(&r, "read_file(/secret.txt)");
    let r = f
        .call("read_many_files", json!({"paths": ["private/*.txt"]}))
        .await;
    assert_denied(&r, "Read(/private)");
}

#[tokio::test]
async fn grep_search_skips_denied_files_and_refuses_a_denied_path() {
    let f = workspace();
    let r = f.call("grep_search", json!({"pattern": "needle"})).await;
    let text = r.llm_text();
    assert!(text.contains("public.txt:1:"), "{text}");
    assert!(
        text.contains("locked.txt:1:"),
        "an edit rule does not hide: {text}"
    );
    assert_withheld(&text, 3);
    let r = f
        .call(
            "grep_search",
            json!({"pattern": "needle", "path": f.path("secret.txt")}),
        )
        .await;
    assert_denied(&r, "read_file(/secret.txt)");
    let r = f
        .call(
            "grep_search",
            json!({"pattern": "needle", "path": f.path("private")}),
        )
        .await;
    assert_denied(&r, "Read(/private)");
}

#[tokio::test]
async fn glob_lists_no_denied_file() {
    let f = workspace();
    let r = f.call("glob", json!({"pattern": "**/*.txt"})).await;
    let text = r.llm_text();
    assert!(text.contains("public.txt"), "{text}");
    assert_withheld(&text, 3);
    let r = f
        .call(
            "glob",
            json!({"pattern": format!("{}/*", f.path("private"))}),
        )
        .await;
    assert_denied(&r, "Read(/private)");
    let r = f
        .call("glob", json!({"pattern": "*", "path": f.path("private")}))
        .await;
    assert_denied(&r, "Read(/private)");
}

#[tokio::test]
async fn list_directory_hides_denied_entries_and_refuses_a_denied_directory() {
    let f = workspace();
    let r = f.call("list_directory", json!({"path": f.path("")})).await;
    let text = r.llm_text();
    assert!(text.contains("public.txt"), "{text}");
    assert_withheld(&text, 3);
    let r = f
        .call("list_directory", json!({"path": f.path("private")}))
        .await;
    assert_denied(&r, "Read(/private)");
}

#[tokio::test]
async fn edit_rules_stop_every_writing_tool_and_read_denials_stop_them_too() {
    let f = workspace();
    let r = f
        .call(
            "write_file",
            json!({"file_path": f.path("locked.txt"), "content": "x"}),
        )
        .await;
    assert_denied(&r, "edit(/locked.txt)");
    let r = f
        .call(
            "edit",
            json!({"file_path": f.path("locked.txt"), "old_string": "needle", "new_string": "x"}),
        )
        .await;
    assert_denied(&r, "edit(/locked.txt)");
    // An edit reads the file (its text must match), so a read denial holds for it.
    let r = f
        .call(
            "edit",
            json!({"file_path": f.path("secret.txt"), "old_string": "needle", "new_string": "x"}),
        )
        .await;
    assert_denied(&r, "read_file(/secret.txt)");
    let r = f
        .call(
            "write_file",
            json!({"file_path": f.path("private/new.txt"), "content": "x"}),
        )
        .await;
    assert_denied(&r, "Read(/private)");
    assert_eq!(f.read("locked.txt"), b"needle in locked.txt\n");
    assert_eq!(f.read("secret.txt"), b"needle in secret.txt\n");
    assert!(!f.ws().join("private/new.txt").exists());
    // Reading what an edit rule protects is fine.
    let r = f
        .call("read_file", json!({"absolute_path": f.path("locked.txt")}))
        .await;
    assert!(r.llm_text().contains("needle in locked.txt"), "{r:?}");
}

#[tokio::test]
async fn without_rules_nothing_is_withheld() {
    let f = fixture_with_rules(&[]);
    f.write("secret.txt", "needle\n");
    let r = f.call("glob", json!({"pattern": "*.txt"})).await;
    let text = r.llm_text();
    assert!(text.contains("secret.txt"), "{text}");
    assert!(!text.contains("left out"), "{text}");
}
