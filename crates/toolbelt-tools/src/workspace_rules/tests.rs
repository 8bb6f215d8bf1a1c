use super::*;
use toolbelt_config::{settings::Settings, settings::SettingsPaths, settings::WorkspaceTrust};
use toolbelt_core::{Kind, PermissionSubject, ShellCommand};
use toolbelt_engine::rules::Decision;
use toolbelt_engine::scheduler::Permissions;

fn request(tool: &str, kind: Kind, details: ConfirmationDetails) -> ApprovalRequest {
    ApprovalRequest {
        call_id: "c1".to_string(),
        tool: tool.to_string(),
        kind,
        description: "d".to_string(),
        details,
        may_always_allow: true,
    }
}

fn exec(roots: &[&str]) -> ConfirmationDetails {
    ConfirmationDetails::Exec {
        title: "Confirm Shell Command".to_string(),
        command: roots.join(" && "),
        root_commands: roots.iter().map(|r| r.to_string()).collect(),
    }
}

fn edit_details() -> ConfirmationDetails {
    ConfirmationDetails::Edit {
        title: "Confirm Edit".to_string(),
        file_name: "a.txt".to_string(),
        file_path: "/p/a.txt".into(),
        diff: String::new(),
        is_new_file: false,
        original_content: None,
        new_content: None,
    }
}

fn mcp(server: &str, tool: &str) -> ConfirmationDetails {
    ConfirmationDetails::Mcp {
        title: "Confirm MCP Tool".to_string(),
        server: server.to_string(),
        tool: tool.to_string(),
        tool_display_name: tool.to_string(),
    }
}

/// The workspace's settings as the session loads them (trusted folder).
fn load(project: &Path) -> Settings {
    Settings::load(&SettingsPaths {
        user: None,
        workspace: Some(project.join(WORKSPACE_SETTINGS)),
        system: None,
        trust: WorkspaceTrust::Trusted,
        claude_hooks: Vec::new(),
    })
    .unwrap()
}

fn decision(settings: &Settings, tool: &str, subject: &PermissionSubject) -> Decision {
    Permissions::from_settings(settings, &crate::rule_vocabulary()).evaluate(tool, subject)
}

fn commands(line: &str) -> PermissionSubject {
    PermissionSubject::Commands(vec![ShellCommand::from_text(line)])
}

#[test]
fn rules_per_kind_of_question() {
    let shell = request("run_shell_command", Kind::Execute, exec(&["git", "npm"]));
    assert_eq!(
        rules_for(&shell, false, &crate::rule_vocabulary()),
        ["run_shell_command(git *)", "run_shell_command(npm *)"]
    );
    assert_eq!(
        rules_for(
            &request("edit", Kind::Edit, edit_details()),
            false,
            &crate::rule_vocabulary()
        ),
        ["edit"]
    );
    assert_eq!(
        rules_for(
            &request("write_file", Kind::Edit, edit_details()),
            false,
            &crate::rule_vocabulary()
        ),
        ["write_file"]
    );
    let fetch = request(
        "web_fetch",
        Kind::Fetch,
        ConfirmationDetails::Info {
            title: "t".into(),
            prompt: "p".into(),
            urls: vec!["https://Docs.Example.com/a?b".into()],
        },
    );
    assert_eq!(
        rules_for(&fetch, false, &crate::rule_vocabulary()),
        ["web_fetch(domain:docs.example.com)"]
    );
    let m = request(
        "mcp__github__create_issue",
        Kind::Other,
        mcp("github", "create_issue"),
    );
    assert_eq!(
        rules_for(&m, false, &crate::rule_vocabulary()),
        ["mcp__github__create_issue"]
    );
    assert_eq!(
        rules_for(&m, true, &crate::rule_vocabulary()),
        ["mcp__github"]
    );
    // An alias with `__` cannot be told apart from its tools: tool level only.
    let odd = request("mcp__a__b__t", Kind::Other, mcp("a__b", "t"));
    assert_eq!(
        rules_for(&odd, true, &crate::rule_vocabulary()),
        ["mcp__a__b__t"]
    );
}

#[test]
fn nothing_is_offered_that_would_allow_more_than_asked() {
    let mut forced = request("edit", Kind::Edit, edit_details());
    forced.may_always_allow = false;
    assert!(
        rules_for(&forced, false, &crate::rule_vocabulary()).is_empty(),
        "an ask rule forced the question"
    );
    let plan = ConfirmationDetails::Plan {
        title: "t".into(),
        plan: "p".into(),
    };
    assert!(
        rules_for(
            &request("exit_plan_mode", Kind::Think, plan),
            false,
            &crate::rule_vocabulary()
        )
        .is_empty()
    );
    for roots in [&[][..], &["*"], &["git)"], &["a b"], &["-rf"]] {
        let shell = request("run_shell_command", Kind::Execute, exec(roots));
        assert!(
            rules_for(&shell, false, &crate::rule_vocabulary()).is_empty(),
            "{roots:?}"
        );
    }
    // A tool whose name is a rule alias would widen to what the alias covers.
    let declared = request("Edit", Kind::Edit, edit_details());
    assert!(rules_for(&declared, false, &crate::rule_vocabulary()).is_empty());
}

/// The aliases are the session's, not only this crate's: a declared tool named `Task`
/// gets no rule when the session reads `Task` as the agent tool.
#[test]
fn a_tool_named_like_an_alias_of_another_crate_gets_no_rule() {
    let task = request("Task", Kind::Other, edit_details());
    assert_eq!(rules_for(&task, false, &crate::rule_vocabulary()), ["Task"]);
    let mut session = crate::rule_vocabulary();
    session.add("agent", &["Task"], None);
    assert!(rules_for(&task, false, &session).is_empty());
}

#[test]
fn a_written_rule_allows_the_call_when_settings_are_loaded_again() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path();
    let shell = request("run_shell_command", Kind::Execute, exec(&["git"]));
    let before = load(project);
    assert_eq!(
        decision(&before, "run_shell_command", &commands("git status")),
        Decision::Default
    );
    let out = allow_in_workspace(
        project,
        &rules_for(&shell, false, &crate::rule_vocabulary()),
    )
    .unwrap();
    assert_eq!(out.added, ["run_shell_command(git *)"]);
    let after = load(project);
    assert_eq!(
        decision(&after, "run_shell_command", &commands("git status")),
        Decision::Allow
    );
    assert_eq!(
        decision(&after, "run_shell_command", &commands("rm -rf x")),
        Decision::Default
    );
    // Edits and a whole MCP server, into the same file.
    allow_in_workspace(project, &["edit".to_string(), "mcp__github".to_string()]).unwrap();
    let after = load(project);
    assert_eq!(
        decision(
            &after,
            "edit",
            &PermissionSubject::Paths(vec![project.join("a")])
        ),
        Decision::Allow
    );
    assert_eq!(
        decision(&after, "mcp__github__x", &PermissionSubject::None),
        Decision::Allow
    );
    assert_eq!(
        decision(
            &after,
            "write_file",
            &PermissionSubject::Paths(vec![project.join("a")])
        ),
        Decision::Default
    );
}

#[test]
fn comments_and_formatting_of_the_rest_of_the_file_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".qwen")).unwrap();
    let path = dir.path().join(WORKSPACE_SETTINGS);
    let text = "{\n    // the model we use\n    \"model\": { \"name\": \"qwen\" }, /* inline */\n    \"permissions\": {\n        \"allow\": [\n            \"read_file\" // reading is fine\n        ]\n    }\n}\n";
    std::fs::write(&path, text).unwrap();
    let out = allow_in_workspace(dir.path(), &["edit".to_string()]).unwrap();
    assert_eq!(out.added, ["edit"]);
    let new = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        new,
        "{\n    // the model we use\n    \"model\": { \"name\": \"qwen\" }, /* inline */\n    \"permissions\": {\n        \"allow\": [\n            \"read_file\", // reading is fine\n            \"edit\"\n        ]\n    }\n}\n"
    );
}

#[test]
fn the_file_and_directory_are_created_and_rules_not_repeated() {
    let dir = tempfile::tempdir().unwrap();
    let out = allow_in_workspace(dir.path(), &["run_shell_command(git *)".to_string()]).unwrap();
    assert_eq!(out.path, dir.path().join(WORKSPACE_SETTINGS));
    let first = std::fs::read_to_string(&out.path).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&first).unwrap(),
        serde_json::json!({"permissions": {"allow": ["run_shell_command(git *)"]}})
    );
    // The same rule again, also spelled with an alias: nothing written.
    let again = allow_in_workspace(
        dir.path(),
        &[
            "run_shell_command(git *)".to_string(),
            "Bash(git *)".to_string(),
        ],
    )
    .unwrap();
    assert!(again.added.is_empty());
    assert_eq!(again.already_present.len(), 2);
    assert_eq!(std::fs::read_to_string(&out.path).unwrap(), first);
    // Keys next to `permissions` stay; a missing `allow` list is added beside `deny`.
    std::fs::write(
        &out.path,
        "{\"general\": {\"x\": 1}, \"permissions\": {\"deny\": [\"Bash(rm *)\"]}}",
    )
    .unwrap();
    allow_in_workspace(dir.path(), &["edit".to_string()]).unwrap();
    let v: Value =
        toolbelt_config::settings::parse_settings_text(&std::fs::read(&out.path).unwrap()).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"general": {"x": 1}, "permissions": {"deny": ["Bash(rm *)"], "allow": ["edit"]}})
    );
}

#[test]
fn invalid_settings_are_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".qwen")).unwrap();
    let path = dir.path().join(WORKSPACE_SETTINGS);
    for text in [
        "{ \"permissions\": { \"allow\": [ } }",
        "{ 'single': 1 }",
        "[1, 2]",
        "{\"permissions\": {\"allow\": \"edit\"}}",
        "{\"permissions\": 3}",
    ] {
        std::fs::write(&path, text).unwrap();
        let err = allow_in_workspace(dir.path(), &["edit".to_string()]).unwrap_err();
        assert!(
            matches!(err, WorkspaceRulesError::Invalid { .. }),
            "{text}: {err}"
        );
        assert!(err.to_string().contains("settings.json"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }
    assert!(matches!(
        allow_in_workspace(dir.path(), &["Bash(git".to_string()]),
        Err(WorkspaceRulesError::BadRule(_))
    ));
}

#[test]
fn links_planted_by_a_repository_are_not_written_through() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("victim.json");
    std::fs::write(&target, "{}").unwrap();

    // The settings file is a link to a file outside the workspace.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".qwen")).unwrap();
    std::os::unix::fs::symlink(&target, dir.path().join(WORKSPACE_SETTINGS)).unwrap();
    let err = allow_in_workspace(dir.path(), &["edit".to_string()]).unwrap_err();
    assert!(matches!(err, WorkspaceRulesError::Symlink { .. }), "{err}");

    // `.qwen` is a link to a directory outside.
    let dir2 = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dir2.path().join(".qwen")).unwrap();
    let err = allow_in_workspace(dir2.path(), &["edit".to_string()]).unwrap_err();
    assert!(matches!(err, WorkspaceRulesError::Symlink { .. }), "{err}");
    assert!(!outside.path().join("settings.json").exists());

    // A hard link to the outside file.
    let dir3 = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir3.path().join(".qwen")).unwrap();
    std::fs::hard_link(&target, dir3.path().join(WORKSPACE_SETTINGS)).unwrap();
    let err = allow_in_workspace(dir3.path(), &["edit".to_string()]).unwrap_err();
    assert!(
        matches!(err, WorkspaceRulesError::Unexpected { .. }),
        "{err}"
    );

    // A FIFO is never opened.
    let dir4 = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir4.path().join(".qwen")).unwrap();
    let fifo = dir4.path().join(WORKSPACE_SETTINGS);
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let err = allow_in_workspace(dir4.path(), &["edit".to_string()]).unwrap_err();
    assert!(
        matches!(err, WorkspaceRulesError::Unexpected { .. }),
        "{err}"
    );

    assert_eq!(std::fs::read_to_string(&target).unwrap(), "{}");
}
