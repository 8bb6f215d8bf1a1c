//! `toolbelt hooks list [--json]`: the hooks of the settings and whether each runs here
//! (`toolbelt_hooks::HookListing`, read without opening a session, so bad entries show).

use crate::cli::{EXIT_OK, EXIT_USAGE, GlobalArgs, HooksCommand};

pub fn run(global: &GlobalArgs, command: HooksCommand) -> u8 {
    let HooksCommand::List { json } = command;
    let listing = std::env::current_dir()
        .map_err(|e| format!("cannot read the current directory: {e}"))
        .and_then(|cwd| {
            toolbelt_session::hook_listing(&cwd, &crate::session::options(global)).map_err(|e| e.0)
        });
    match listing {
        Ok(listing) if json => crate::agents_cmd::print_pretty(&listing.json()),
        Ok(listing) => print!("{}", listing.text()),
        Err(e) => {
            eprintln!("toolbelt: {e}");
            return EXIT_USAGE;
        }
    }
    EXIT_OK
}
