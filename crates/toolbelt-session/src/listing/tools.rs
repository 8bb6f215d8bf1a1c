//! `toolbelt tools list`: a table of the registered tools (name, kind, whether it asks,
//! `#reference`, the first sentence of its description), the tool sets, and notes on
//! the tools the agent adds or that are missing and why.

use std::fmt::Write;

use toolbelt_core::ToolRegistry;
use toolbelt_core::registry::Registration;

/// The listing as text, a line per tool after a header; columns padded to their widest
/// cell.
pub fn tools_text(registry: &ToolRegistry, settings: &toolbelt_core::Settings) -> String {
    let header = ["NAME", "KIND", "CONFIRM", "REFERENCE", "DESCRIPTION"].map(String::from);
    let rows: Vec<[String; 5]> = registry.all().map(|r| row(registry, r)).collect();
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
    out.push_str(
        "\nnote: the agent adds agent, task_stop and send_message (sub-agents need its model; `toolbelt agents list`), monitor (follows a background command's output), skill when there are skills (`toolbelt skills list`) and tool_search when tools are deferred.\n",
    );
    out
}

/// One tool's row: name, kind, whether it asks, `#reference`, and the first sentence
/// of its description (marked off when its `when` clause is false).
fn row(registry: &ToolRegistry, r: &Registration) -> [String; 5] {
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
    [
        r.name.clone(),
        r.tool.kind().as_str().to_string(),
        confirm.to_string(),
        reference,
        description,
    ]
}

/// Columns padded to their widest cell; the last one is left as it is.
fn table(header: &[String; 5], rows: &[[String; 5]]) -> String {
    let widths: Vec<usize> = (0..4)
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
        let _ = writeln!(
            out,
            "{:w0$}  {:w1$}  {:w2$}  {:w3$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            row[4],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        );
    }
    out
}
