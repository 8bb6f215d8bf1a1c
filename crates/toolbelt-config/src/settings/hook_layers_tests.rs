//! Every file's `hooks`, kept whole and as written, with Claude Code's files and trust.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::*;
use crate::trust::{TrustLevel, TrustedFolders};

/// A home with `~/.qwen` and `~/.claude` files, a project with `.qwen` and `.claude`
/// files, and a system file.
struct Layout {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    system: PathBuf,
}

impl Layout {
    fn new() -> Layout {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        for d in [
            home.join(".qwen"),
            home.join(".claude"),
            project.join(".qwen"),
            project.join(".claude"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        let system = dir.path().join("system.json");
        Layout {
            _dir: dir,
            home,
            project,
            system,
        }
    }

    fn write(&self, file: &Path, value: &Value) {
        std::fs::write(file, value.to_string()).unwrap();
    }

    fn paths(&self) -> SettingsPaths {
        SettingsPaths {
            user: Some(self.home.join(".qwen/settings.json")),
            workspace: Some(self.project.join(".qwen/settings.json")),
            system: Some(self.system.clone()),
            trust: WorkspaceTrust::FromFolders {
                project: self.project.clone(),
                trusted_folders: Some(self.home.join(".qwen/trustedFolders.json")),
            },
            claude_hooks: hook_layers::claude_files(&self.project, Some(&self.home)),
        }
    }

    fn trust(&self) {
        let mut f = TrustedFolders::load(&self.home.join(".qwen/trustedFolders.json")).unwrap();
        f.set(&self.project, TrustLevel::TrustFolder);
        f.save().unwrap();
    }

    fn load(&self) -> Settings {
        Settings::load(&self.paths()).unwrap()
    }
}

fn hook(command: &str) -> Value {
    json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]})
}

fn files(settings: &Settings) -> Vec<(PathBuf, bool)> {
    settings
        .hook_layers
        .iter()
        .map(|l| (l.file.clone(), l.trusted))
        .collect()
}

#[test]
fn every_files_hooks_are_kept_in_configuration_order_as_written() {
    let l = Layout::new();
    l.write(
        &l.home.join(".qwen/settings.json"),
        &json!({"hooks": hook("user \"$HOME\"")}),
    );
    l.write(
        &l.project.join(".qwen/settings.json"),
        &json!({"hooks": hook("project")}),
    );
    l.write(&l.system, &json!({"hooks": hook("system")}));
    l.write(
        &l.home.join(".claude/settings.json"),
        &json!({"hooks": hook("claude user"), "model": "x"}),
    );
    l.write(
        &l.project.join(".claude/settings.json"),
        &json!({"hooks": hook("claude project")}),
    );
    l.write(
        &l.project.join(".claude/settings.local.json"),
        &json!({"hooks": hook("claude local")}),
    );
    l.trust();
    let s = l.load();
    assert_eq!(
        files(&s),
        vec![
            (l.project.join(".qwen/settings.json"), true),
            (l.home.join(".qwen/settings.json"), true),
            (l.system.clone(), true),
            (l.project.join(".claude/settings.json"), true),
            (l.project.join(".claude/settings.local.json"), true),
            (l.home.join(".claude/settings.json"), true),
        ]
    );
    // As written: the shell expands `$HOME` when the hook runs, not the settings.
    assert_eq!(s.hook_layers[1].hooks, hook("user \"$HOME\""));
    assert!(s.hook_layers[3].claude && !s.hook_layers[0].claude);
    assert_eq!(s.hook_layers[5].layer, SettingsLayer::User);
    assert_eq!(s.hook_layers[3].layer, SettingsLayer::Workspace);
    assert!(!s.disable_all_hooks);
    assert_eq!(s.untrusted_workspace, None);
}

#[test]
fn an_untrusted_folders_hooks_are_kept_as_untrusted_and_named_in_the_warning() {
    let l = Layout::new();
    l.write(
        &l.home.join(".qwen/settings.json"),
        &json!({"hooks": hook("user")}),
    );
    l.write(
        &l.project.join(".qwen/settings.json"),
        &json!({"hooks": hook("project"), "disableAllHooks": true}),
    );
    l.write(
        &l.project.join(".claude/settings.local.json"),
        &json!({"hooks": hook("claude local")}),
    );
    let s = l.load();
    let trusted: Vec<bool> = s.hook_layers.iter().map(|l| l.trusted).collect();
    assert_eq!(trusted, vec![false, true, false]);
    // The folder cannot switch the person's own hooks off.
    assert!(!s.disable_all_hooks);
    let report = s.untrusted_workspace.unwrap();
    assert_eq!(report.ignored[..2], ["hooks", "disableAllHooks"]);
    assert!(
        report.ignored[2].starts_with("hooks (in "),
        "{:?}",
        report.ignored
    );
    assert!(report.ignored[2].ends_with(".claude/settings.local.json)"));
    assert!(report.warning().contains("settings.local.json"));
}

#[test]
fn claude_project_hooks_alone_make_the_untrusted_warning_name_their_file() {
    let l = Layout::new();
    l.write(
        &l.project.join(".claude/settings.json"),
        &json!({"hooks": hook("claude")}),
    );
    let s = l.load();
    let report = s.untrusted_workspace.unwrap();
    assert_eq!(report.file, l.project.join(".claude/settings.json"));
    assert_eq!(report.ignored, vec!["hooks"]);
}

#[test]
fn disable_all_hooks_in_any_layer_turns_them_off() {
    let l = Layout::new();
    l.write(
        &l.home.join(".qwen/settings.json"),
        &json!({"disableAllHooks": true}),
    );
    l.write(&l.system, &json!({"disableAllHooks": false}));
    let s = l.load();
    assert!(
        s.disable_all_hooks,
        "a higher layer's false does not switch them back on"
    );
    assert_eq!(
        s.hooks_disabled_by,
        Some(l.home.join(".qwen/settings.json"))
    );
}

#[test]
fn disable_all_hooks_must_be_a_boolean() {
    let l = Layout::new();
    l.write(
        &l.home.join(".qwen/settings.json"),
        &json!({"disableAllHooks": "yes"}),
    );
    let err = Settings::load(&l.paths()).unwrap_err().to_string();
    assert!(err.contains("disableAllHooks"), "{err}");
    assert!(err.contains("settings.json"), "{err}");
}

#[test]
fn a_workspace_url_list_counts_only_without_the_persons_own() {
    let l = Layout::new();
    l.trust();
    l.write(
        &l.project.join(".qwen/settings.json"),
        &json!({"security": {"allowedHttpHookUrls": ["https://repo.example/*"]}}),
    );
    assert_eq!(
        l.load().security.allowed_http_hook_urls,
        Some(vec!["https://repo.example/*".to_string()])
    );
    l.write(
        &l.home.join(".qwen/settings.json"),
        &json!({"security": {"allowedHttpHookUrls": ["http://127.0.0.1:*"]}}),
    );
    assert_eq!(
        l.load().security.allowed_http_hook_urls,
        Some(vec!["http://127.0.0.1:*".to_string()])
    );
}

#[test]
fn a_claude_file_that_is_not_json_is_an_error_naming_it() {
    let l = Layout::new();
    std::fs::write(l.home.join(".claude/settings.json"), "{ nope").unwrap();
    let err = Settings::load(&l.paths()).unwrap_err().to_string();
    assert!(err.contains(".claude/settings.json"), "{err}");
}

#[test]
fn in_the_home_directory_claudes_project_file_is_the_users() {
    let l = Layout::new();
    let files = hook_layers::claude_files(&l.home, Some(&l.home));
    assert_eq!(
        files,
        vec![
            (
                SettingsLayer::Workspace,
                l.home.join(".claude/settings.local.json")
            ),
            (SettingsLayer::User, l.home.join(".claude/settings.json")),
        ]
    );
}
