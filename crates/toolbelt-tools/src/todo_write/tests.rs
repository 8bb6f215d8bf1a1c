use serde_json::json;
use toolbelt_core::{Display, ErrorKind, TodoStatus};

use crate::test_support::{err_kind, fixture};

#[tokio::test]
async fn the_list_is_replaced_whole_and_comes_back_with_what_is_next() {
    let fx = fixture();
    let first = fx
        .call(
            "todo_write",
            json!({"todos": [
                {"id": "1", "content": "read the code", "status": "completed"},
                {"id": "2", "content": "write the fix", "status": "in_progress"},
                {"id": "3", "content": "run the tests", "status": "pending"}
            ]}),
        )
        .await;
    assert!(first.error.is_none(), "{:?}", first.error);
    let text = first.llm_text();
    assert!(text.contains("Next: continue \"write the fix\""), "{text}");
    assert!(text.contains("\"id\":\"3\""), "{text}");
    match &first.return_display {
        Display::TodoList { todos } => {
            assert_eq!(todos.len(), 3);
            assert_eq!(todos[1].status, TodoStatus::InProgress);
        }
        other => panic!("expected a checklist, got {other:?}"),
    }
    let saved = std::fs::read_to_string(fx.env.session_dir.join("todos.json")).unwrap();
    assert!(saved.contains("write the fix"));

    let second = fx
        .call(
            "todo_write",
            json!({"todos": [{"id": "9", "content": "ship", "status": "pending"}]}),
        )
        .await;
    assert!(
        second
            .llm_text()
            .contains("Next: mark \"ship\" in_progress")
    );
    let saved = std::fs::read_to_string(fx.env.session_dir.join("todos.json")).unwrap();
    assert!(!saved.contains("write the fix"), "replaced whole: {saved}");

    let done = fx
        .call(
            "todo_write",
            json!({"todos": [{"id": "9", "content": "ship", "status": "completed"}]}),
        )
        .await;
    assert!(done.llm_text().contains("All tasks are completed."));
    let cleared = fx.call("todo_write", json!({"todos": []})).await;
    assert!(cleared.llm_text().contains("empty"));
}

#[tokio::test]
async fn bad_lists_are_clear_errors() {
    let fx = fixture();
    for (todos, expected) in [
        (
            json!([{"id": "a", "content": "x", "status": "in_progress"},
                   {"id": "b", "content": "y", "status": "in_progress"}]),
            "at most one may be",
        ),
        (
            json!([{"id": "a", "content": "x", "status": "pending"},
                   {"id": "a", "content": "y", "status": "pending"}]),
            "ids must be unique",
        ),
        (
            json!([{"id": " ", "content": "x", "status": "pending"}]),
            "empty id",
        ),
        (
            json!([{"id": "a", "content": "  ", "status": "pending"}]),
            "empty content",
        ),
        (
            json!([{"id": "a", "content": "x", "status": "started"}]),
            "status",
        ),
    ] {
        let r = fx.call("todo_write", json!({ "todos": todos })).await;
        let e = r.error.unwrap_or_else(|| panic!("{todos} must fail"));
        assert_eq!(e.kind, ErrorKind::InvalidToolParams);
        assert!(e.message.contains(expected), "{todos}: {}", e.message);
    }
    assert_eq!(
        err_kind(&fx.call("todo_write", json!({})).await),
        Some(ErrorKind::InvalidToolParams)
    );
}
