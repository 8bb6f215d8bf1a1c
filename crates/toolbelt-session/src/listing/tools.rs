//! `toolbelt tools list`: a table of the registered tools (name, kind, whether it asks,
//! `#reference`, when a session offers it, the first sentence of its description), the
//! tool sets, and every tool a session may offer that this one has not registered, each
//! with the condition under which it is offered (`crate::offered`).

use std::fmt::Write;

use toolbelt_engine::registry::Registration;
use toolbelt_engine::registry::ToolRegistry;

use crate::offered::{CONDITIONAL, NOTE, condition};

const COLUMNS: usize = 6;

/// The listing as text, a line per tool after a header; columns padded to their widest
/// cell.
pub fn tools_text(
    registry: &ToolRegistry,
    settings: &toolbelt_config::settings::Settings,
) -> String {
    let header = [
        "NAME",
        "KIND",
        "CONFIRM",
        "REFERENCE",
        "OFFERED",
        "DESCRIPTION",
    ]
    .map(String::from);
    let rows: Vec<[String; COLUMNS]> = registry.all().map(|r| row(registry, r)).collect();
    let mut out = table(&header, &rows);
    let sets = registry.tool_sets();
    if !sets.is_empty() {
        out.push_str("\nTool sets:\n");
        for set in sets {
            let _ = writeln!(
                out,
                "  #{}  {} ({})",
                set.name,
                set.description,
                set.tools.join(", ")
            );
        }
    }
    if registry.get("web_search").is_none()
        && let Some(why) = toolbelt_tools::web_search_unavailable_reason(settings)
    {
        let _ = writeln!(
            out,
            "\nnote: web_search is not registered: {why} (webSearch.provider: tavily, searxng or brave)."
        );
    }
    out.push_str(&not_registered(registry));
    let _ = writeln!(out, "\n{NOTE}");
    out
}

/// The tools a session may offer that this one has not registered, a line each with
/// when it is offered.
fn not_registered(registry: &ToolRegistry) -> String {
    let absent: Vec<(&str, &str)> = CONDITIONAL
        .iter()
        .filter(|(name, _)| registry.get(name).is_none())
        .map(|(name, offered)| (*name, offered.text()))
        .collect();
    let Some(width) = absent.iter().map(|(name, _)| name.len()).max() else {
        return String::new();
    };
    let mut out = String::from("\nOffered in other sessions or under other conditions:\n");
    for (name, when) in absent {
        let _ = writeln!(out, "  {name:width$}  {when}");
    }
    out
}

/// One tool's row: name, kind, whether it asks, `#reference`, and the first sentence
/// of its description (marked off when its `when` clause is false).
fn row(registry: &ToolRegistry, r: &Registration) -> [String; COLUMNS] {
    let first_line = r.tool.description().lines().next().unwrap_or("");
    let first_sentence = first_line
        .split(". ")
        .next()
        .unwrap_or("")
        .trim_end_matches('.')
        .to_string();
    let confirm = if r.tool.needs_confirmation() {
        "yes"
    } else {
        "no"
    };
    let reference = r
        .tool
        .reference_name()
        .map(|n| format!("#{n}"))
        .unwrap_or_else(|| "-".into());
    let description = match r.tool.when_clause() {
        Some(clause) if registry.is_disabled(&r.name) => {
            format!("[off: when {}] {first_sentence}", clause.serialize())
        }
        _ => first_sentence,
    };
    let offered = match r.tool.when_clause() {
        Some(_) => "by its when clause",
        None => condition(&r.name).text(),
    };
    [
        r.name.clone(),
        r.tool.kind().as_str().to_string(),
        confirm.to_string(),
        reference,
        offered.to_string(),
        description,
    ]
}

/// Columns padded to their widest cell; the last one is left as it is.
fn table(header: &[String; COLUMNS], rows: &[[String; COLUMNS]]) -> String {
    let widths: Vec<usize> = (0..COLUMNS - 1)
        .map(|i| {
            rows.iter()
                .chain([header])
                .map(|r| r[i].len())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in std::iter::once(header).chain(rows.iter()) {
        for (cell, width) in row.iter().zip(&widths) {
            let _ = write!(out, "{cell:width$}  ");
        }
        let _ = writeln!(out, "{}", row[COLUMNS - 1]);
    }
    out
}
