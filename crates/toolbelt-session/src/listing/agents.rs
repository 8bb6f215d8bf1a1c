//! `toolbelt agents list [--json]`: the sub-agents a session offers, with their level,
//! tools and limits, and the definition files that could not be loaded.

use std::fmt::Write;

use serde_json::{Value, json};
use toolbelt_agent::subagents::{AgentCatalog, AgentDefinition};

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

/// The agents (shadowed ones marked) and the warnings, as one JSON object.
pub fn agents_json(catalog: &AgentCatalog) -> Value {
    let agents: Vec<_> = catalog
        .agents()
        .iter()
        .map(|a| agent_json(a, false))
        .chain(catalog.shadowed().iter().map(|a| agent_json(a, true)))
        .collect();
    json!({"agents": agents, "warnings": catalog.warnings})
}

/// An agent a few lines, then the shadowed ones and the warnings.
pub fn agents_text(catalog: &AgentCatalog) -> String {
    let mut out = String::new();
    for a in catalog.agents() {
        let _ = writeln!(out, "{} [{}]", a.name, a.level.as_str());
        let _ = writeln!(out, "  {}", a.description.trim());
        if let Some(path) = &a.path {
            let _ = writeln!(out, "  file: {}", path.display());
        }
        let mut tools = a.tools_text().join(", ");
        if !a.disallowed_tools.is_empty() {
            tools.push_str(&format!("; not: {}", a.disallowed_tools.join(", ")));
        }
        let _ = writeln!(out, "  tools: {tools}");
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
            let _ = writeln!(out, "  {}", limits.join(", "));
        }
    }
    for a in catalog.shadowed() {
        let _ = writeln!(
            out,
            "{} [{}] hidden by the {} definition of the same name",
            a.name,
            a.level.as_str(),
            catalog
                .get(&a.name)
                .map_or("other", |winner| winner.level.as_str())
        );
    }
    for w in &catalog.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}
