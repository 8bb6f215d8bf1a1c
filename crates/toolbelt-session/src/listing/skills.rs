//! `toolbelt skills list [--json]`: the skills a model would be offered, where each comes
//! from, what it allows, and what is wrong with the files that did not load.

use std::fmt::Write;

use serde_json::{Value, json};
use toolbelt_tools::skills::Skills;

/// The skills, the shadowed ones and the warnings, as one JSON object.
pub fn skills_json(skills: &Skills) -> Value {
    {
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
        json!({
            "skills": listed,
            "shadowed": shadowed,
            "warnings": skills.warnings(),
        })
    }
}

/// A skill a few lines, then the shadowed ones and the warnings.
pub fn skills_text(skills: &Skills) -> String {
    let mut out = String::new();
    if skills.is_empty() {
        let _ = writeln!(
            out,
            "No skills. A skill is a folder with a SKILL.md under .qwen/skills/, .agents/skills/ or ~/.qwen/skills/."
        );
    }
    for s in skills.all() {
        let _ = writeln!(
            out,
            "{} ({}, {})  {}",
            s.name,
            s.folder.level(),
            s.folder.as_str(),
            s.file.display()
        );
        let _ = writeln!(out, "  {}", s.description);
        if !s.allowed_tools.is_empty() {
            let note = if s.grants {
                ""
            } else {
                "  [not granted: the folder is not trusted]"
            };
            let _ = writeln!(out, "  allowed-tools: {}{note}", s.allowed_tools.join(", "));
        }
    }
    for h in skills.shadowed() {
        let _ = writeln!(
            out,
            "hidden: {} in {} ({}) by {}",
            h.name,
            h.folder.as_str(),
            h.file.display(),
            h.by.display()
        );
    }
    if !skills.warnings().is_empty() {
        let _ = writeln!(out, "warnings:");
        for w in skills.warnings() {
            let _ = writeln!(out, "  {w}");
        }
    }
    out
}
