//! `toolbelt lsp list [--json]`: the language servers the `lsp` tool would ask, which
//! extensions each covers, its state, and why one would not run (its program is not
//! found, its file is bad, the folder is not trusted). The session reads `.lsp.json`
//! and protects what it runs; the rows are `toolbelt_session::listing`'s.

use toolbelt_session::listing::{lsp_json, lsp_rows, lsp_text};

use crate::cli::{EXIT_OK, EXIT_USAGE, GlobalArgs, LspCommand};
use crate::session::Session;

pub async fn run(global: &GlobalArgs, command: LspCommand) -> u8 {
    let Some(session) = Session::load_or_say(global) else {
        return EXIT_USAGE;
    };
    let LspCommand::List { json } = command;
    let rows = lsp_rows(&session.lsp).await;
    if json {
        crate::agents_cmd::print_pretty(&lsp_json(&rows, &session.lsp_problems));
    } else {
        print!("{}", lsp_text(&rows, &session.lsp_problems));
    }
    EXIT_OK
}
