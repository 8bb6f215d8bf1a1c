//! `toolbelt trust [PATH]`: the person trusts a folder, so its `.qwen/settings.json` may
//! run commands, start MCP servers, add allow rules and widen the workspace. The answer
//! is kept in `~/.qwen/trustedFolders.json`, the file Qwen Code keeps it in.

use std::path::Path;

use toolbelt_core::trust::{TrustLevel, TrustedFolders};

use crate::cli::{EXIT_OK, EXIT_USAGE};

pub fn run(path: Option<&Path>, remove: bool) -> u8 {
    let folder = match path {
        Some(p) => p.to_path_buf(),
        None => match std::env::current_dir() {
            Ok(d) => d,
            Err(e) => {
                eprintln!("toolbelt: cannot read the current directory: {e}");
                return EXIT_USAGE;
            }
        },
    };
    let folder = match std::fs::canonicalize(&folder) {
        Ok(f) if f.is_dir() => f,
        Ok(f) => {
            eprintln!("toolbelt: {} is not a directory", f.display());
            return EXIT_USAGE;
        }
        Err(e) => {
            eprintln!("toolbelt: {}: {e}", folder.display());
            return EXIT_USAGE;
        }
    };
    let Some(file) = TrustedFolders::user_file() else {
        eprintln!("toolbelt: HOME is not set, so there is no trusted-folders file to write");
        return EXIT_USAGE;
    };
    match change(&file, &folder, remove) {
        Ok(message) => {
            println!("{message}");
            EXIT_OK
        }
        Err(e) => {
            eprintln!("toolbelt: {e}");
            EXIT_USAGE
        }
    }
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
