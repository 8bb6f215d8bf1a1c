//! `toolbelt trust [PATH] [--remove]`: the person trusts a folder (or stops), kept in
//! `~/.qwen/trustedFolders.json` (`toolbelt_session::change_trust`).

use std::path::Path;

use crate::cli::EXIT_OK;

pub fn run(path: Option<&Path>, remove: bool) -> u8 {
    match toolbelt_session::change_trust(path, remove) {
        Ok(message) => {
            println!("{message}");
            EXIT_OK
        }
        Err(e) => {
            eprintln!("toolbelt: {e}");
            crate::cli::trust_failure(&e)
        }
    }
}
