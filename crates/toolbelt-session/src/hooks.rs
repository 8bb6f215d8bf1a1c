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

use toolbelt_core::{Settings, SettingsPaths, WorkspaceRoots};
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
