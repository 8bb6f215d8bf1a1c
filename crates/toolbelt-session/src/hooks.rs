//! The session's hooks: read from the settings (`toolbelt_hooks::HookConfig`), the
//! scripts they run protected, and the engine every front end hands to its scheduler
//! and agent.
//!
//! A bad hook entry stops the session from opening, with every bad entry named (file,
//! event, index): a refusing hook dropped because of a typo would let through what it
//! was written to stop, the reason a bad permission rule is an error too. Entries of
//! other tools' events and hook types are warnings. `toolbelt hooks list` reads the
//! settings without opening a session, so it shows the errors.

use std::path::Path;

use toolbelt_config::{settings::Settings, settings::SettingsPaths};
use toolbelt_core::WorkspaceRoots;
use toolbelt_hooks::{HookConfig, HookEngine, HookListing, SessionInfo};

use crate::options::SessionOptions;
use crate::session::SetupError;

/// The engine of the settings' hooks (`None` without any), after protecting the files
/// their commands run. Warnings go to `warnings` and the options' sink.
pub(crate) fn load(
    settings: &Settings,
    cwd: &Path,
    roots: &mut WorkspaceRoots,
    options: &SessionOptions,
    warnings: &mut Vec<String>,
) -> Result<Option<HookEngine>, SetupError> {
    let config = HookConfig::from_settings(settings).map_err(|errors| {
        SetupError(format!(
            "the hooks in the settings have errors; fix them (`toolbelt hooks list` shows them) or set disableAllHooks:\n{errors}"
        ))
    })?;
    for skipped in &config.skipped {
        let warning = skipped.warning();
        options.warn.say(&warning);
        warnings.push(warning);
    }
    // A hook script runs at every step of a call without a question: a model that
    // rewrote it on a general approval would run its own code at the next call.
    for file in config.command_files(cwd) {
        roots.protect(
            &file,
            "a hook script",
            "hooks run it at every step of a call, without asking",
        );
    }
    if config.is_empty() {
        return Ok(None);
    }
    let session = SessionInfo {
        session_id: uuid::Uuid::new_v4().to_string(),
        transcript_path: None,
        cwd: cwd.to_path_buf(),
    };
    let urls = settings.security.allowed_http_hook_urls.clone();
    Ok(Some(HookEngine::new(config, session, urls)))
}

/// `toolbelt hooks list`: every hook of the settings of the folder `cwd` (read as a
/// session would read them, with the same trust), whether or not a session could start.
pub fn hook_listing(cwd: &Path, options: &SessionOptions) -> Result<HookListing, SetupError> {
    let mut paths = SettingsPaths::standard(cwd);
    if options.trust_workspace || crate::session::trust_from_environment() {
        paths = paths.trusting_workspace();
    }
    let settings = Settings::load(&paths).map_err(|e| SetupError(e.to_string()))?;
    Ok(HookListing::from_settings(&settings))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::json;
    use toolbelt_config::{settings::HookLayer, settings::SettingsLayer};

    use super::*;
    use crate::options::Warn;

    fn settings_with(hooks: serde_json::Value) -> Settings {
        let mut settings = Settings::default();
        settings.hook_layers = vec![HookLayer {
            layer: SettingsLayer::User,
            claude: false,
            file: "/home/me/.qwen/settings.json".into(),
            hooks,
            trusted: true,
        }];
        settings
    }

    #[test]
    fn the_scripts_hooks_run_are_protected_and_skipped_entries_warned() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("scripts")).unwrap();
        std::fs::write(root.join("scripts/check.sh"), "exit 0\n").unwrap();
        let settings = settings_with(json!({
            "PreToolUse": [{"hooks": [{"type": "command", "command": "bash scripts/check.sh"}]}],
            "PostToolBatch": [{"hooks": [{"type": "command", "command": "true"}]}],
        }));
        let said = Arc::new(Mutex::new(Vec::new()));
        let sink = said.clone();
        let options = SessionOptions {
            warn: Warn::new(move |text| sink.lock().unwrap().push(text.to_string())),
            ..SessionOptions::default()
        };
        let mut roots = WorkspaceRoots::new([&root]).unwrap();
        let mut warnings = Vec::new();
        let engine = load(&settings, &root, &mut roots, &options, &mut warnings).unwrap();
        assert!(engine.is_some());
        let protection = roots.protection(&root.join("scripts/check.sh")).unwrap();
        assert_eq!(protection.label, "a hook script");
        assert!(roots.protection(&root.join("scripts/other.sh")).is_none());
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("hooks.PostToolBatch: skipped"));
        assert_eq!(said.lock().unwrap().clone(), warnings);
    }

    #[test]
    fn a_bad_entry_is_an_error_that_names_it_and_no_hooks_is_no_engine() {
        let dir = tempfile::tempdir().unwrap();
        let mut roots = WorkspaceRoots::new([dir.path()]).unwrap();
        let options = SessionOptions::default();
        let settings = settings_with(json!({"Stop": [{"hooks": [{"type": "http"}]}]}));
        let err = load(&settings, dir.path(), &mut roots, &options, &mut Vec::new()).unwrap_err();
        assert!(
            err.0.ends_with(
                "/home/me/.qwen/settings.json: hooks.Stop[0].hooks[0]: \"url\" is missing"
            ),
            "{}",
            err.0
        );
        let none = load(
            &Settings::default(),
            dir.path(),
            &mut roots,
            &options,
            &mut Vec::new(),
        );
        assert!(none.unwrap().is_none());
    }
}
