//! The typed check of every known key: a wrong type or a value outside an enumeration is
//! an error naming the file, the key and the accepted values.

use std::path::PathBuf;

use super::*;
use crate::ApprovalMode;

fn load_one(text: &str) -> (PathBuf, Result<Settings, SettingsError>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    std::fs::write(&file, text).unwrap();
    let paths = SettingsPaths {
        user: Some(file.clone()),
        workspace: None,
        system: None,
        trust: WorkspaceTrust::Trusted,
        claude_hooks: Vec::new(),
    };
    (file, Settings::load(&paths), dir)
}

/// The error for one bad file, checked to name the file, the key and `accepted`.
fn check_rejected(text: &str, key: &str, accepted: &str) {
    let (file, result, _dir) = load_one(text);
    let err = match result {
        Ok(s) => panic!("{text} was accepted: {s:?}"),
        Err(e) => e,
    };
    let message = err.to_string();
    assert!(
        matches!(&err, SettingsError::Invalid { key: k, .. } if k == key),
        "{text}: wrong key in {message}"
    );
    assert!(
        message.starts_with(&file.display().to_string()),
        "{message}"
    );
    assert!(message.contains(accepted), "{text}: {message}");
}

#[test]
fn every_known_key_rejects_a_wrong_value_naming_file_key_and_accepted_values() {
    let sandbox = r#""landlock", true (Landlock), false"#;
    let booleans = "accepted values: true, false";
    let modes = r#""plan", "default", "auto-edit", "yolo""#;
    let millis = "a whole number of milliseconds";
    for (text, key, accepted) in [
        (
            r#"{"tools": {"sandbox": "landlok"}}"#,
            "tools.sandbox",
            sandbox,
        ),
        (r#"{"tools": {"sandbox": 5}}"#, "tools.sandbox", sandbox),
        (
            r#"{"tools": {"sandbox": "docker"}}"#,
            "tools.sandbox",
            sandbox,
        ),
        (
            r#"{"tools": {"shell": {"killBackgroundOnExit": "no"}}}"#,
            "tools.shell.killBackgroundOnExit",
            booleans,
        ),
        (
            r#"{"tools": {"shell": {"allowUnsandboxed": 1}}}"#,
            "tools.shell.allowUnsandboxed",
            booleans,
        ),
        (r#"{"tools": {"shell": true}}"#, "tools.shell", "an object"),
        (
            r#"{"tools": {"approvalMode": "yolo!"}}"#,
            "tools.approvalMode",
            modes,
        ),
        (
            r#"{"tools": {"approvalMode": true}}"#,
            "tools.approvalMode",
            modes,
        ),
        (
            r#"{"tools": {"discoveryTimeout": "30s"}}"#,
            "tools.discoveryTimeout",
            millis,
        ),
        (
            r#"{"tools": {"callTimeout": -1}}"#,
            "tools.callTimeout",
            millis,
        ),
        (
            r#"{"tools": {"commandOutputLimit": "10MB"}}"#,
            "tools.commandOutputLimit",
            "whole number",
        ),
        (
            r#"{"tools": {"trustDiscoveredTools": "yes"}}"#,
            "tools.trustDiscoveredTools",
            booleans,
        ),
        (
            r#"{"tools": {"exclude": "read_file"}}"#,
            "tools.exclude",
            "a list",
        ),
        (r#"{"tools": {"core": [1]}}"#, "tools.core[0]", "a string"),
        (
            r#"{"tools": {"discoveryCommand": ["a"]}}"#,
            "tools.discoveryCommand",
            "a string",
        ),
        (
            r#"{"tools": {"truncateToolOutputLines": "many"}}"#,
            "tools.truncateToolOutputLines",
            "whole number",
        ),
        (
            r#"{"permissions": {"allow": "x"}}"#,
            "permissions.allow",
            "a list",
        ),
        (
            r#"{"context": {"includeDirectories": "/x"}}"#,
            "context.includeDirectories",
            "a list",
        ),
        (
            r#"{"context": {"fileName": "/etc/shadow"}}"#,
            "context.fileName",
            "no directories",
        ),
        (
            r#"{"context": {"fileName": ["A.md", "../x.md"]}}"#,
            "context.fileName",
            "no directories",
        ),
        (
            r#"{"context": {"fileName": 3}}"#,
            "context.fileName",
            "file name",
        ),
        (
            r#"{"context": {"fileFiltering": {"respectGitIgnore": "false"}}}"#,
            "context.fileFiltering.respectGitIgnore",
            booleans,
        ),
        (
            r#"{"mcpServers": {"srv": {"trust": "true"}}}"#,
            "mcpServers.srv.trust",
            booleans,
        ),
        (
            r#"{"mcpServers": {"srv": {"timeout": "5000"}}}"#,
            "mcpServers.srv.timeout",
            "whole number",
        ),
        (
            r#"{"mcpServers": {"srv": {"args": "--x"}}}"#,
            "mcpServers.srv.args",
            "a list",
        ),
        (r#"{"mcp": {"excluded": "srv"}}"#, "mcp.excluded", "a list"),
        (r#"{"model": {"vision": "yes"}}"#, "model.vision", booleans),
        (r#"{"model": {"name": 4}}"#, "model.name", "a string"),
        (
            r#"{"security": {"folderTrust": {"enabled": "no"}}}"#,
            "security.folderTrust.enabled",
            booleans,
        ),
    ] {
        check_rejected(text, key, accepted);
    }
}

#[test]
fn legacy_spellings_are_checked_under_their_current_name() {
    check_rejected(
        r#"{"toolDiscoveryCommand": 5}"#,
        "tools.discoveryCommand",
        "a string",
    );
}

#[test]
fn accepted_values_read_as_written() {
    let (_, s, _dir) = load_one(
        r#"{"tools": {"sandbox": "Landlock", "approvalMode": "auto_edit",
            "shell": {"killBackgroundOnExit": false, "allowUnsandboxed": true},
            "discoveryTimeout": 1500, "callTimeout": 0, "commandOutputLimit": 64,
            "trustDiscoveredTools": true},
           "model": {"vision": true},
           "context": {"fileName": "CLAUDE.md"},
           "security": {"folderTrust": {"enabled": false}}}"#,
    );
    let s = s.unwrap();
    assert_eq!(s.tools.sandbox, Sandbox::Landlock);
    assert_eq!(
        s.tools.approval_mode.map(|m| m.0),
        Some(ApprovalMode::AutoEdit)
    );
    assert!(!s.tools.shell.kill_background_on_exit);
    assert!(s.tools.shell.allow_unsandboxed);
    assert_eq!(
        s.tools.discovery_timeout.and_then(Millis::duration),
        Some(std::time::Duration::from_millis(1500))
    );
    assert_eq!(
        s.tools.call_timeout.and_then(Millis::duration),
        None,
        "0 means the default"
    );
    assert_eq!(s.tools.command_output_limit, Some(64));
    assert!(s.tools.trust_discovered_tools);
    assert!(s.model.vision);
    assert_eq!(
        s.context.file_name,
        Some(ContextFileNames(vec!["CLAUDE.md".into()]))
    );
    assert!(!s.security.folder_trust.enabled);

    for (text, sandbox) in [
        (r#"{"tools": {"sandbox": true}}"#, Sandbox::Landlock),
        (r#"{"tools": {"sandbox": false}}"#, Sandbox::Off),
        (r#"{"tools": {"sandbox": null}}"#, Sandbox::Off),
        ("{}", Sandbox::Off),
    ] {
        assert_eq!(load_one(text).1.unwrap().tools.sandbox, sandbox, "{text}");
    }
    let defaults = load_one("{}").1.unwrap();
    assert!(defaults.tools.shell.kill_background_on_exit);
    assert!(!defaults.tools.shell.allow_unsandboxed);
    assert!(
        defaults.security.folder_trust.enabled,
        "folder trust is on by default"
    );
}

#[test]
fn unknown_keys_stay_allowed_at_every_level() {
    let (_, s, _dir) = load_one(
        r#"{"ui": {"theme": "x"}, "futureKey": 1,
            "tools": {"useRipgrep": true, "shell": {"pager": "cat", "showColor": false}},
            "mcpServers": {"s": {"command": "srv", "oauth": {"enabled": true}}},
            "security": {"auth": {"selectedType": "openai"}}}"#,
    );
    let s = s.unwrap();
    assert_eq!(s.mcp_servers["s"].command.as_deref(), Some("srv"));
}

#[test]
fn the_bad_layer_is_the_one_named() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.json");
    let ws = dir.path().join("ws.json");
    std::fs::write(&user, r#"{"tools": {"sandbox": "landlock"}}"#).unwrap();
    std::fs::write(
        &ws,
        r#"{"tools": {"shell": {"killBackgroundOnExit": "no"}}}"#,
    )
    .unwrap();
    let err = Settings::load(&SettingsPaths {
        user: Some(user),
        workspace: Some(ws.clone()),
        system: None,
        trust: WorkspaceTrust::Trusted,
        claude_hooks: Vec::new(),
    })
    .unwrap_err();
    assert!(
        err.to_string().starts_with(&ws.display().to_string()),
        "{err}"
    );
}

#[test]
fn a_permission_rule_that_does_not_parse_is_an_error_naming_the_rule_and_the_file() {
    for (text, key, rule) in [
        (
            r#"{"permissions": {"deny": ["Bash(git push *)", "run_shell_command(rm"]}}"#,
            "permissions.deny[1]",
            "`run_shell_command(rm`",
        ),
        (
            r#"{"permissions": {"ask": ["Bash(curl *))"]}}"#,
            "permissions.ask[0]",
            "`Bash(curl *))`",
        ),
        (
            r#"{"permissions": {"allow": ["ls)"]}}"#,
            "permissions.allow[0]",
            "`ls)`",
        ),
        (
            r#"{"excludeTools": ["run_shell_command(rm"]}"#,
            "tools.exclude[0]",
            "`run_shell_command(rm`",
        ),
        (
            r#"{"tools": {"allowed": ["(x)"]}}"#,
            "tools.allowed[0]",
            "`(x)`",
        ),
    ] {
        check_rejected(text, key, rule);
    }
    let (_, result, _dir) = load_one(r#"{"permissions": {"deny": ["Bash(rm *)", "Read"]}}"#);
    assert!(result.is_ok(), "{result:?}");
    // A rule of megabytes would make matching every command crawl: refused past 4096
    // bytes, and the message shows its start, not all of it.
    let pattern = "a*".repeat(100_000);
    let text = format!(r#"{{"permissions": {{"deny": ["Bash({pattern}b)"]}}}}"#);
    check_rejected(&text, "permissions.deny[0]", "at most 4096 bytes");
    let (_, result, _dir) = load_one(&text);
    let message = result.unwrap_err().to_string();
    assert!(message.len() < 1_000, "{} bytes", message.len());
    let longest = format!("Bash({})", "x".repeat(crate::MAX_RULE_BYTES - 6));
    let text = format!(r#"{{"permissions": {{"deny": ["{longest}"]}}}}"#);
    let (_, result, _dir) = load_one(&text);
    assert!(result.is_ok(), "{result:?}");
}
