//! `toolbelt lsp list [--json]`: the language servers the `lsp` tool would ask, which
//! extensions each covers, its state, and why one would not run (its program is not
//! found, its file is bad, the folder is not trusted). The session reads `.lsp.json`
//! and protects what it runs; the rows are `toolbelt_session::listing`'s.

use toolbelt_session::listing::{lsp_json, lsp_rows};

use crate::cli::{EXIT_OK, EXIT_USAGE, GlobalArgs, LspCommand};
use crate::session::Session;

pub async fn run(global: &GlobalArgs, command: LspCommand) -> u8 {
    let session = match Session::load(global) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("toolbelt: {}", e.0);
            return EXIT_USAGE;
        }
    };
    let LspCommand::List { json } = command;
    let rows = lsp_rows(&session.lsp).await;
    if json {
        crate::agents_cmd::print_pretty(&lsp_json(&rows, &session.lsp_problems));
        return EXIT_OK;
    }
    if rows.is_empty() {
        println!(
            "No language servers. Configure them in .lsp.json (project, trusted folders only), ~/.qwen/.lsp.json or settings `lsp.servers`."
        );
    }
    for row in &rows {
        let c = &row.config;
        let extensions: Vec<&str> = c.extension_to_language.keys().map(String::as_str).collect();
        println!(
            "{} ({})  {}",
            c.name,
            extensions.join(" "),
            c.source.display()
        );
        println!("  runs: {}", c.describe());
        println!("  {}", row.state);
    }
    for problem in &session.lsp_problems {
        println!("note: {problem}");
    }
    EXIT_OK
}
