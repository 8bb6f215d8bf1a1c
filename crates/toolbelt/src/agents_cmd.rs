//! `toolbelt agents list [--json]`: the sub-agents a session offers, with their level,
//! tools and limits, and the definition files that could not be loaded.

use serde_json::json;
use toolbelt_agent::subagents::{AgentCatalog, AgentDefinition};

use crate::cli::{AgentsCommand, EXIT_OK, EXIT_USAGE, GlobalArgs};
use crate::session::Session;

pub fn run(global: &GlobalArgs, command: AgentsCommand) -> u8 {
    let AgentsCommand::List { json } = command;
    let project = match Session::load(global) {
        Ok(s) => s.project(),
        Err(e) => {
            eprintln!("toolbelt: {}", e.0);
            return EXIT_USAGE;
        }
    };
    let catalog = toolbelt_session::agent_catalog(&project);
    if json {
        print_json(&catalog);
    } else {
        print_text(&catalog);
    }
    EXIT_OK
}

fn agent_json(a: &AgentDefinition, shadowed: bool) -> serde_json::Value {
    json!({
        "name": a.name,
        "level": a.level.as_str(),
        "description": a.description,
        "file": a.path,
        "tools": a.tools_text(),
        "disallowed_tools": a.disallowed_tools,
        "model": a.model,
        "approval_mode": a.approval_mode.map(|m| m.as_str()),
        "max_turns": a.max_turns,
        "max_time_minutes": a.max_time.map(|d| d.as_secs_f64() / 60.0),
        "color": a.color,
        "background": a.background,
        "shadowed": shadowed,
    })
}

fn print_json(catalog: &AgentCatalog) {
    let agents: Vec<_> = catalog
        .agents()
        .iter()
        .map(|a| agent_json(a, false))
        .chain(catalog.shadowed().iter().map(|a| agent_json(a, true)))
        .collect();
    let v = json!({"agents": agents, "warnings": catalog.warnings});
    println!(
        "{}",
        serde_json::to_string_pretty(&v).unwrap_or_else(|_| v.to_string())
    );
}

fn print_text(catalog: &AgentCatalog) {
    for a in catalog.agents() {
        println!("{} [{}]", a.name, a.level.as_str());
        println!("  {}", a.description.trim());
        if let Some(path) = &a.path {
            println!("  file: {}", path.display());
        }
        let mut tools = a.tools_text().join(", ");
        if !a.disallowed_tools.is_empty() {
            tools.push_str(&format!("; not: {}", a.disallowed_tools.join(", ")));
        }
        println!("  tools: {tools}");
        let mut limits = Vec::new();
        if let Some(m) = &a.model {
            limits.push(format!("model {m}"));
        }
        if let Some(m) = a.approval_mode {
            limits.push(format!("approval mode {m} (never wider than the parent's)"));
        }
        if let Some(t) = a.max_turns {
            limits.push(format!("{t} turns"));
        }
        if let Some(d) = a.max_time {
            limits.push(format!("{:.1} min", d.as_secs_f64() / 60.0));
        }
        if a.background {
            limits.push("background".into());
        }
        if !limits.is_empty() {
            println!("  {}", limits.join(", "));
        }
    }
    for a in catalog.shadowed() {
        println!(
            "{} [{}] hidden by the {} definition of the same name",
            a.name,
            a.level.as_str(),
            catalog
                .get(&a.name)
                .map_or("other", |winner| winner.level.as_str())
        );
    }
    for w in &catalog.warnings {
        println!("warning: {w}");
    }
}
