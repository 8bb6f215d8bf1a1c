//! `toolbelt skills list [--json]`: the skills a model would be offered
//! (`toolbelt_session::listing`).

use crate::cli::{EXIT_OK, EXIT_USAGE, GlobalArgs, SkillsCommand};
use crate::session::Session;

pub fn run(global: &GlobalArgs, command: SkillsCommand) -> u8 {
    let Some(session) = Session::load_or_say(global) else {
        return EXIT_USAGE;
    };
    let SkillsCommand::List { json } = command;
    if json {
        crate::agents_cmd::print_pretty(&toolbelt_session::listing::skills_json(&session.skills));
    } else {
        print!(
            "{}",
            toolbelt_session::listing::skills_text(&session.skills)
        );
    }
    EXIT_OK
}
