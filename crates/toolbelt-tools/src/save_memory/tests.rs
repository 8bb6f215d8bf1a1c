use serde_json::json;
use toolbelt_core::{ConfirmationDetails, ErrorKind};

use super::{SaveMemory, with_fact};
use crate::test_support::fixture;
use toolbelt_core::{ExecContext, Tool};

#[test]
fn the_section_is_created_once_and_nothing_else_changes() {
    assert_eq!(with_fact("", "a"), "## Qwen Added Memories\n- a\n");
    assert_eq!(
        with_fact("# Notes\nkeep me", "a"),
        "# Notes\nkeep me\n\n## Qwen Added Memories\n- a\n"
    );
    assert_eq!(
        with_fact("# Notes\n\n", "a"),
        "# Notes\n\n## Qwen Added Memories\n- a\n"
    );
    let once = with_fact("# Notes\n", "a");
    let twice = with_fact(&once, "b");
    assert_eq!(twice, "# Notes\n\n## Qwen Added Memories\n- a\n- b\n");
    // A section in the middle: the fact goes at its end, the next section is untouched.
    let middle = "# Top\n\n## Qwen Added Memories\n- a\n\n## Other\ntext\n";
    assert_eq!(
        with_fact(middle, "b"),
        "# Top\n\n## Qwen Added Memories\n- a\n- b\n\n## Other\ntext\n"
    );
    // An empty section keeps its blank line before the next heading.
    assert_eq!(
        with_fact("## Qwen Added Memories\n\n## Other\n", "x"),
        "## Qwen Added Memories\n- x\n\n## Other\n"
    );
    assert_eq!(
        with_fact("## Qwen Added Memories", "x"),
        "## Qwen Added Memories\n- x\n"
    );
    // A heading that only mentions the words is not the section.
    assert_eq!(
        with_fact("text ## Qwen Added Memories\n", "x"),
        "text ## Qwen Added Memories\n\n## Qwen Added Memories\n- x\n"
    );
}

#[tokio::test]
async fn facts_go_to_the_global_or_project_file_as_one_line() {
    let fx = fixture();
    let home = fx.dir.path().join("home");
    let tool = SaveMemory::with_home(fx.env.clone(), Some(home.clone()));
    let call = tool
        .build(json!({"fact": "- likes\ntabs\r\n in Go", "scope": "global"}))
        .unwrap();
    match call.confirmation().await {
        Some(ConfirmationDetails::Edit { diff, .. }) => {
            assert!(diff.contains("+- likes tabs in Go"), "{diff}")
        }
        other => panic!("expected a diff, got {other:?}"),
    }
    let r = call.execute(ExecContext::new(fx.env.clone())).await;
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(
        std::fs::read_to_string(home.join(".qwen/QWEN.md")).unwrap(),
        "## Qwen Added Memories\n- likes tabs in Go\n"
    );

    fx.write("QWEN.md", "# Project\n\nBuild with make.\n");
    let call = tool
        .build(json!({"fact": "tests need Docker", "scope": "project"}))
        .unwrap();
    let r = call.execute(ExecContext::new(fx.env.clone())).await;
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(
        String::from_utf8(fx.read("QWEN.md")).unwrap(),
        "# Project\n\nBuild with make.\n\n## Qwen Added Memories\n- tests need Docker\n"
    );
}

#[tokio::test]
async fn an_empty_fact_is_refused() {
    let fx = fixture();
    let tool = SaveMemory::with_home(fx.env.clone(), Some(fx.dir.path().join("home")));
    let e = tool.build(json!({"fact": " \n - "})).err().unwrap();
    assert_eq!(e.kind, ErrorKind::InvalidToolParams);
    let e = tool.build(json!({"fact": "x", "scope": "galaxy"}));
    assert!(e.is_ok(), "the schema, not build, refuses an unknown scope");
}
