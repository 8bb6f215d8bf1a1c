//! `toolbelt skills list [--json]`: the skills a model would be offered, where each comes
//! from, what it allows, and what is wrong with the files that did not load.

use serde_json::json;

use crate::cli::{EXIT_OK, EXIT_USAGE, GlobalArgs, SkillsCommand};
use crate::session::Session;

pub fn run(global: &GlobalArgs, command: SkillsCommand) -> u8 {
    let session = match Session::load(global) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("toolbelt: {}", e.0);
            return EXIT_USAGE;
        }
    };
    match command {
        SkillsCommand::List { json } => list(&session, json),
    }
}

fn list(session: &Session, as_json: bool) -> u8 {
    let skills = &session.skills;
    if as_json {
        let listed: Vec<_> = skills
            .all()
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "level": s.folder.level(),
                    "folder": s.folder,
                    "file": s.file,
                    "description": s.description,
                    "allowed_tools": s.allowed_tools,
                    "grants": s.grants,
                    "warnings": s.warnings,
                })
            })
            .collect();
        let shadowed: Vec<_> = skills
            .shadowed()
            .iter()
            .map(|h| {
                json!({
                    "name": h.name,
                    "level": h.folder.level(),
                    "folder": h.folder,
                    "file": h.file,
                    "hidden_by": h.by,
                })
            })
            .collect();
        let out = json!({
            "skills": listed,
            "shadowed": shadowed,
            "warnings": skills.warnings(),
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&out).unwrap_or_else(|_| out.to_string())
        );
        return EXIT_OK;
    }
    if skills.is_empty() {
        println!(
            "No skills. A skill is a folder with a SKILL.md under .qwen/skills/, .agents/skills/ or ~/.qwen/skills/."
        );
    }
    for s in skills.all() {
        println!(
            "{} ({}, {})  {}",
            s.name,
            s.folder.level(),
            s.folder.as_str(),
            s.file.display()
        );
        println!("  {}", s.description);
        if !s.allowed_tools.is_empty() {
            let note = if s.grants {
                ""
            } else {
                "  [not granted: the folder is not trusted]"
            };
            println!("  allowed-tools: {}{note}", s.allowed_tools.join(", "));
        }
    }
    for h in skills.shadowed() {
        println!(
            "hidden: {} in {} ({}) by {}",
            h.name,
            h.folder.as_str(),
            h.file.display(),
            h.by.display()
        );
    }
    if !skills.warnings().is_empty() {
        println!("warnings:");
        for w in skills.warnings() {
            println!("  {w}");
        }
    }
    EXIT_OK
}
