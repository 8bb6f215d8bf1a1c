//! Trusting a folder (`toolbelt trust [PATH]`): the person trusts it, so its `.qwen/settings.json` may
//! run commands, start MCP servers, add allow rules and widen the workspace. The answer
//! is kept in `~/.qwen/trustedFolders.json`, the file Qwen Code keeps it in.

use std::path::Path;

use toolbelt_core::trust::{TrustLevel, TrustedFolders};

/// Trusts `folder` (default: the current directory), or stops trusting it with
/// `remove`; returns what changed, as a sentence naming the file.
pub fn change_trust(folder: Option<&Path>, remove: bool) -> Result<String, String> {
    let folder = match folder {
        Some(p) => p.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    let folder = match std::fs::canonicalize(&folder) {
        Ok(f) if f.is_dir() => f,
        Ok(f) => return Err(format!("{} is not a directory", f.display())),
        Err(e) => return Err(format!("{}: {e}", folder.display())),
    };
    let Some(file) = TrustedFolders::user_file() else {
        return Err("HOME is not set, so there is no trusted-folders file to write".to_string());
    };
    change(&file, &folder, remove)
}

fn change(file: &Path, folder: &Path, remove: bool) -> Result<String, String> {
    let mut folders = TrustedFolders::load(file).map_err(|e| e.to_string())?;
    let message = if remove {
        if !folders.remove(folder) {
            return Ok(format!(
                "{} was not trusted ({})",
                folder.display(),
                file.display()
            ));
        }
        format!(
            "{} is no longer trusted ({})",
            folder.display(),
            file.display()
        )
    } else {
        folders.set(folder, TrustLevel::TrustFolder);
        format!(
            "trusted {}: its .qwen/settings.json may now run commands, start MCP servers, add allow rules and widen the workspace ({})",
            folder.display(),
            file.display()
        )
    };
    folders.save().map_err(|e| e.to_string())?;
    Ok(message)
}
