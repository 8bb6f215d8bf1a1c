//! `toolbelt sandbox [--verify] [-- CMD...]`: what this machine's kernel enforces on
//! shell commands, proved from inside (`toolbelt_session::sandbox`).

use toolbelt_session::sandbox;
use toolbelt_tools::SandboxSupport;

use crate::cli::{EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, GlobalArgs};
use crate::session::Session;

pub async fn run(global: &GlobalArgs, verify: bool, command: &[String]) -> u8 {
    let Some(session) = Session::load_or_say(global) else {
        return EXIT_USAGE;
    };
    let out = &mut |line: String| println!("{line}");
    if !command.is_empty() {
        return match sandbox::run_confined(&session.env, command, out).await {
            Some(0) => EXIT_OK,
            _ => EXIT_TOOL_ERROR,
        };
    }
    sandbox::report(&session.env, &SandboxSupport::detect(), out);
    if !verify {
        return EXIT_OK;
    }
    println!();
    if sandbox::verify(&session.env, out).await {
        println!("All checks passed: unasked commands are confined on this machine.");
        EXIT_OK
    } else {
        println!("Some enforcement is missing (see the failed checks above).");
        EXIT_TOOL_ERROR
    }
}
