//! `toolbelt agents list [--json]`: the sub-agents a session offers
//! (`toolbelt_session::listing`).

use crate::cli::{AgentsCommand, EXIT_OK, EXIT_USAGE, GlobalArgs};
use crate::session::Session;

pub fn run(global: &GlobalArgs, command: AgentsCommand) -> u8 {
    let AgentsCommand::List { json } = command;
    let Some(session) = Session::load_or_say(global) else {
        return EXIT_USAGE;
    };
    let project = session.project();
    let catalog = toolbelt_session::agent_catalog(&project);
    if json {
        print_pretty(&toolbelt_session::listing::agents_json(&catalog));
    } else {
        print!("{}", toolbelt_session::listing::agents_text(&catalog));
    }
    EXIT_OK
}

/// One JSON value, indented.
pub fn print_pretty(v: &serde_json::Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
    );
}
