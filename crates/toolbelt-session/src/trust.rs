//! Trusting a folder (`toolbelt trust [PATH]`): the person trusts it, so its `.qwen/settings.json` may
//! run commands, start MCP servers, add allow rules and widen the workspace. The answer
//! is kept in `~/.qwen/trustedFolders.json`, the file Qwen Code keeps it in.

use std::path::Path;

use toolbelt_config::{trust::TrustLevel, trust::TrustedFolders};

use crate::error::TrustChangeError;

/// Trusts `folder` (default: the current directory), or stops trusting it with
/// `remove`; returns what changed, as a sentence naming the file.
pub fn change_trust(folder: Option<&Path>, remove: bool) -> Result<String, TrustChangeError> {
    let folder = match folder {
        Some(p) => p.to_path_buf(),
        None => std::env::current_dir().map_err(TrustChangeError::CurrentDir)?,
    };
    let folder = match std::fs::canonicalize(&folder) {
        Ok(f) if f.is_dir() => f,
        Ok(f) => return Err(TrustChangeError::NotADirectory(f)),
        Err(source) => {
            return Err(TrustChangeError::Unreadable {
                path: folder,
                source,
            });
        }
    };
    let Some(file) = TrustedFolders::user_file() else {
        return Err(TrustChangeError::NoHome);
    };
    change(&file, &folder, remove)
}

fn change(file: &Path, folder: &Path, remove: bool) -> Result<String, TrustChangeError> {
    let mut folders = TrustedFolders::load(file)?;
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
    folders.save()?;
    Ok(message)
}
