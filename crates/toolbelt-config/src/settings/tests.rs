use std::path::Path;

use serde_json::json;

use super::*;
use crate::ApprovalMode;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn paths(
    user: Option<PathBuf>,
    workspace: Option<PathBuf>,
    system: Option<PathBuf>,
) -> SettingsPaths {
    SettingsPaths {
        user,
        workspace,
        system,
        trust: WorkspaceTrust::Trusted,
        claude_hooks: Vec::new(),
    }
}

#[test]
fn missing_files_give_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let s = Settings::load(&paths(Some(dir.path().join("nope.json")), None, None)).unwrap();
    assert!(s.tools.core.is_none());
    assert!(s.context.file_filtering.respect_git_ignore);
    assert!(s.sources.is_empty());
}

#[test]
fn precedence_is_system_over_workspace_over_user() {
    let dir = tempfile::tempdir().unwrap();
    let user = write(
        dir.path(),
        "u.json",
        r#"{"tools": {"approvalMode": "plan", "truncateToolOutputLines": 10, "callCommand": "u"}}"#,
    );
    let ws = write(
        dir.path(),
        "w.json",
        r#"{"tools": {"approvalMode": "auto-edit", "truncateToolOutputLines": 20}}"#,
    );
    let sys = write(
        dir.path(),
        "s.json",
        r#"{"tools": {"approvalMode": "yolo"}}"#,
    );
    let s = Settings::load(&paths(
        Some(user.clone()),
        Some(ws.clone()),
        Some(sys.clone()),
    ))
    .unwrap();
    assert_eq!(s.tools.approval_mode.map(|m| m.0), Some(ApprovalMode::Yolo));
    assert_eq!(s.tools.truncate_tool_output_lines, Some(20));
    assert_eq!(
        s.tools.call_command.as_deref(),
        Some("u"),
        "deep merge keeps lower keys"
    );
    assert_eq!(s.sources, vec![user, ws, sys]);
}

#[test]
fn permission_lists_are_unions_and_include_directories_concatenate() {
    let dir = tempfile::tempdir().unwrap();
    let user = write(
        dir.path(),
        "u.json",
        r#"{"permissions": {"deny": ["a", "b"]}, "context": {"includeDirectories": ["/x"]}, "tools": {"exclude": ["t1"], "core": ["read_file", "glob"]}}"#,
    );
    let ws = write(
        dir.path(),
        "w.json",
        r#"{"permissions": {"deny": ["b", "c"]}, "context": {"includeDirectories": ["/x", "/y"]}, "tools": {"exclude": ["t2"], "core": ["edit"]}}"#,
    );
    let s = Settings::load(&paths(Some(user), Some(ws), None)).unwrap();
    assert_eq!(s.permissions.deny, vec!["a", "b", "c"]);
    assert_eq!(s.context.include_directories, vec!["/x", "/x", "/y"]);
    assert_eq!(s.tools.exclude, vec!["t1", "t2"]);
    assert_eq!(
        s.tools.core,
        Some(vec!["edit".to_string()]),
        "other arrays are replaced"
    );
}

#[test]
fn mcp_servers_merge_by_name_taking_each_server_whole() {
    let dir = tempfile::tempdir().unwrap();
    let user = write(
        dir.path(),
        "u.json",
        r#"{"mcpServers": {"a": {"command": "ua", "trust": true}, "b": {"command": "ub"}}}"#,
    );
    let ws = write(
        dir.path(),
        "w.json",
        r#"{"mcpServers": {"a": {"command": "wa"}}}"#,
    );
    let s = Settings::load(&paths(Some(user), Some(ws), None)).unwrap();
    assert_eq!(s.mcp_servers["a"].command.as_deref(), Some("wa"));
    assert!(
        !s.mcp_servers["a"].trust,
        "server a is taken whole from the workspace"
    );
    assert_eq!(s.mcp_servers["b"].command.as_deref(), Some("ub"));
}

#[test]
fn comments_are_tolerated() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "s.json",
        "{\n  // line comment\n  \"tools\": { /* block */ \"exclude\": [\"x\"] } # shell\n}\n",
    );
    let s = Settings::load(&paths(None, Some(f), None)).unwrap();
    assert_eq!(s.tools.exclude, vec!["x"]);
}

#[test]
fn malformed_file_names_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "settings.json",
        "{\n  \"tools\": {\n    \"exclude\": [\"x\",]\n  }\n}\n",
    );
    let err = Settings::load(&paths(None, Some(f.clone()), None)).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with(&f.display().to_string()), "{text}");
    assert!(
        matches!(err, SettingsError::Parse { line: 3, .. }),
        "{text}"
    );
    assert!(text.contains("line 3 column"), "{text}");
}

#[test]
fn wrong_type_for_a_known_key_names_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "settings.json",
        r#"{"tools": {"exclude": "read_file"}}"#,
    );
    let err = Settings::load(&paths(None, Some(f.clone()), None)).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("settings.json"), "{text}");
    assert!(text.contains("tools.exclude"), "{text}");
}

#[test]
fn root_must_be_an_object() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "settings.json", "[1]");
    assert!(
        Settings::load(&paths(None, Some(f), None))
            .unwrap_err()
            .to_string()
            .contains("JSON object")
    );
}

#[test]
fn unknown_keys_are_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "s.json",
        r#"{"futureKey": {"x": 1}, "tools": {"futureToolKey": true, "exclude": ["a"]}}"#,
    );
    let s = Settings::load(&paths(None, Some(f), None)).unwrap();
    assert_eq!(s.tools.exclude, vec!["a"]);
}

#[test]
fn environment_variables_are_expanded_in_strings() {
    // SAFETY of the test: a variable name no other test uses.
    let dir = tempfile::tempdir().unwrap();
    let home = std::env::var("HOME").unwrap_or_default();
    let f = write(
        dir.path(),
        "s.json",
        r#"{"tools": {"discoveryCommand": "$HOME/bin/d ${HOME}/x", "callCommand": "$TOOLBELT_SURELY_UNSET_VAR/c"}}"#,
    );
    let s = Settings::load(&paths(None, Some(f), None)).unwrap();
    assert_eq!(
        s.tools.discovery_command,
        Some(format!("{home}/bin/d {home}/x"))
    );
    assert_eq!(
        s.tools.call_command.as_deref(),
        Some("$TOOLBELT_SURELY_UNSET_VAR/c")
    );
}

#[test]
fn legacy_spellings_are_accepted() {
    for raw in [
        json!({"toolDiscoveryCommand": "d", "toolCallCommand": "c"}),
        json!({"tools": {"toolDiscoveryCommand": "d", "toolCallCommand": "c"}}),
        json!({"tools": {"discoveryCommand": "d", "callCommand": "c"}}),
    ] {
        let s = Settings::from_value(raw.clone()).unwrap();
        assert_eq!(s.tools.discovery_command.as_deref(), Some("d"), "{raw}");
        assert_eq!(s.tools.call_command.as_deref(), Some("c"), "{raw}");
    }
    let s = Settings::from_value(json!({"mcpServerCommand": "srv --stdio", "excludeTools": ["x"]}))
        .unwrap();
    assert_eq!(s.mcp.server_command.as_deref(), Some("srv --stdio"));
    assert_eq!(s.tools.exclude, vec!["x"]);
}

#[test]
fn hash_comments_end_at_the_line_and_never_inside_a_string_or_comment() {
    let text = "{\"a\": \"x # y\", /* # */ \"b\": 1, # c \"\n \"d\": \"\\\" #\"}";
    assert_eq!(
        parse_settings_text(text.as_bytes()).unwrap(),
        json!({"a": "x # y", "b": 1, "d": "\" #"})
    );
    // Positions after a `#` comment are the file's: the trailing comma, not the brace.
    let err = parse_settings_text(b"{ # note\n  \"a\": 1,\n}").unwrap_err();
    assert_eq!((err.line(), err.column()), (2, 9), "{err}");
}

#[test]
fn invalid_utf8_is_an_error_with_its_position() {
    let err = parse_settings_text(b"{\n \"a\": \"\xff\"}").unwrap_err();
    assert_eq!((err.line(), err.column()), (2, 8), "{err}");
}

#[test]
fn empty_file_and_bom_are_fine() {
    assert_eq!(parse_settings_text(b"  \n").unwrap(), json!({}));
    assert_eq!(
        parse_settings_text(b"\xEF\xBB\xBF{\"a\":1}").unwrap(),
        json!({"a": 1})
    );
}

#[test]
fn a_workspace_settings_file_that_is_a_device_a_fifo_or_a_link_out_is_an_error_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let outside = write(
        dir.path(),
        "secret.json",
        r#"{"model": {"name": "SECRET-VALUE"}}"#,
    );
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    for (target, why) in [
        (Path::new("/dev/zero"), "outside the project"),
        (outside.as_path(), "outside the project"),
        (fifo.as_path(), "outside the project"),
    ] {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join(".qwen")).unwrap();
        let file = ws.path().join(".qwen/settings.json");
        std::os::unix::fs::symlink(target, &file).unwrap();
        let mut p = paths(None, Some(file.clone()), None);
        p.claude_hooks = vec![(SettingsLayer::Workspace, file.clone())];
        let e = Settings::load(&p).unwrap_err().to_string();
        assert!(
            e.contains(why) && e.contains("settings.json"),
            "{target:?}: {e}"
        );
        assert!(!e.contains("SECRET"), "{e}");
    }
    // A FIFO or a device inside the project: not a regular file, not waited on.
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".qwen")).unwrap();
    let file = ws.path().join(".qwen/settings.json");
    mkfifo(&file);
    let e = Settings::load(&paths(None, Some(file), None))
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a regular file"), "{e}");
    // The person's own file may be a link (dotfiles managers make them), but not to a
    // device: a user settings file of endless zeros is refused at its limit.
    let user = dir.path().join("user.json");
    std::os::unix::fs::symlink("/dev/zero", &user).unwrap();
    let e = Settings::load(&paths(Some(user), None, None))
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a regular file"), "{e}");
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}
