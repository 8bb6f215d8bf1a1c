//! `@path` in a prompt: the named files are read before the first request and their
//! content follows the prompt, as Qwen Code's `@` command does.
//!
//! A reference is `@` at the start of the prompt or after whitespace, followed by a path
//! up to the next unescaped whitespace (`\ ` keeps a space). `user@example.com` is not a
//! reference. Paths are relative to the working directory. They are read through the
//! registry's `read_many_files` (files, directories and globs), or, when that tool is
//! absent, through `read_file` for plain files; so the workspace boundary, ignore files
//! and the output budget apply exactly as for the model's own calls. A reference that
//! cannot be read is left in the prompt as written, with a warning.
//!
//! `@server:uri`, where `server` is the name of a configured MCP server, is one of its
//! resources instead: read through the registry's `read_mcp_resource` (registered when
//! a server offers resources), under the same rules as the model's own reads.

use std::path::Path;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolbelt_core::ToolRegistry;
use toolbelt_core::scheduler::{Scheduler, SchedulerConfig, ToolCallRequest, TurnInfo};

/// The `@` references of a prompt, unescaped, in order.
pub fn references(prompt: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = prompt.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let at_start = i == 0 || chars[i - 1].is_whitespace();
        if chars[i] == '@' && at_start {
            let mut path = String::new();
            i += 1;
            while i < chars.len() && !chars[i].is_whitespace() {
                if chars[i] == '\\' && i + 1 < chars.len() && chars[i + 1] == ' ' {
                    path.push(' ');
                    i += 2;
                    continue;
                }
                path.push(chars[i]);
                i += 1;
            }
            let path = path.trim_end_matches([',', '.', ';', ':', '?', '!', ')']);
            if !path.is_empty() {
                out.push(path.to_string());
            }
        } else {
            i += 1;
        }
    }
    out
}

/// `(server, uri)` when `reference` is `server:uri` for one of `mcp_servers`.
pub fn mcp_resource<'r>(reference: &'r str, mcp_servers: &[String]) -> Option<(&'r str, &'r str)> {
    let (server, uri) = reference.split_once(':')?;
    (!uri.is_empty() && mcp_servers.iter().any(|s| s == server)).then_some((server, uri))
}

/// The prompt with the referenced content appended, and warnings for references that
/// could not be read. `mcp_servers` are the configured MCP servers' names, for
/// `@server:uri`.
pub async fn inline(
    prompt: &str,
    registry: &ToolRegistry,
    session: &Scheduler,
    cwd: &Path,
    mcp_servers: &[String],
) -> (String, Vec<String>) {
    inline_some(prompt, registry, session, Some(cwd), mcp_servers).await
}

/// Only the `@server:uri` references of `prompt` (stream-JSON, whose clients send
/// `@path` as text for the model, as Claude Code's do).
pub async fn inline_resources(
    prompt: &str,
    registry: &ToolRegistry,
    session: &Scheduler,
    mcp_servers: &[String],
) -> (String, Vec<String>) {
    inline_some(prompt, registry, session, None, mcp_servers).await
}

/// `@path`s too when there is a `cwd`.
async fn inline_some(
    prompt: &str,
    registry: &ToolRegistry,
    session: &Scheduler,
    cwd: Option<&Path>,
    mcp_servers: &[String],
) -> (String, Vec<String>) {
    // The person's references are read through a scheduler of their own (the session's
    // rules, mode and hooks, nobody to ask, no events): the same checks as any call,
    // a PreToolUse hook that guards reads included, without showing the reads as the
    // model's calls.
    let scheduler = Scheduler::new(session.env().clone(), SchedulerConfig::new(session.rules()));

    let (resources, mut refs): (Vec<String>, Vec<String>) = references(prompt)
        .into_iter()
        .partition(|r| mcp_resource(r, mcp_servers).is_some());
    if cwd.is_none() {
        refs.clear();
    }
    if refs.is_empty() && resources.is_empty() {
        return (prompt.to_string(), Vec::new());
    }
    let mut warnings = Vec::new();
    let mut contents = Vec::new();
    for reference in &resources {
        read_resource(
            registry,
            &scheduler,
            reference,
            mcp_servers,
            &mut contents,
            &mut warnings,
        )
        .await;
    }
    if let Some(cwd) = cwd.filter(|_| !refs.is_empty()) {
        read_paths(
            registry,
            &scheduler,
            &refs,
            cwd,
            &mut contents,
            &mut warnings,
        )
        .await;
    }
    if contents.is_empty() {
        return (prompt.to_string(), warnings);
    }
    let text = format!(
        "{prompt}\n\n--- Content from referenced files ---\n{}\n--- End of content ---",
        contents.join("\n")
    );
    (text, warnings)
}

/// `@server:uri`: the resource through `read_mcp_resource`.
async fn read_resource(
    registry: &ToolRegistry,
    scheduler: &Scheduler,
    reference: &str,
    mcp_servers: &[String],
    contents: &mut Vec<String>,
    warnings: &mut Vec<String>,
) {
    let Some((server, uri)) = mcp_resource(reference, mcp_servers) else {
        return;
    };
    if registry.get("read_mcp_resource").is_none() {
        warnings.push(format!(
            "@{reference} not inlined: MCP server \"{server}\" offers no resources"
        ));
        return;
    }
    let args = json!({ "server": server, "uri": uri });
    match run(registry, scheduler, "read_mcp_resource", args).await {
        Ok(text) => contents.push(format!("--- {reference} ---\n{text}")),
        Err(e) => warnings.push(format!("@{reference} not inlined: {e}")),
    }
}

/// `@path`s: through `read_many_files`, or `read_file` for plain files.
async fn read_paths(
    registry: &ToolRegistry,
    scheduler: &Scheduler,
    refs: &[String],
    cwd: &Path,
    contents: &mut Vec<String>,
    warnings: &mut Vec<String>,
) {
    let absolute: Vec<String> = refs
        .iter()
        .map(|r| {
            let p = Path::new(r);
            if p.is_absolute() {
                r.clone()
            } else {
                cwd.join(p).to_string_lossy().into_owned()
            }
        })
        .collect();
    if registry.get("read_many_files").is_some() {
        match run(
            registry,
            scheduler,
            "read_many_files",
            json!({ "paths": absolute }),
        )
        .await
        {
            Ok(text) => contents.push(text),
            Err(e) => warnings.push(format!("@ references not inlined: {e}")),
        }
        return;
    }
    for (given, path) in refs.iter().zip(&absolute) {
        if !Path::new(path).is_file() {
            warnings.push(format!(
                "@{given} not inlined: only files can be inlined without read_many_files"
            ));
            continue;
        }
        match run(
            registry,
            scheduler,
            "read_file",
            json!({ "absolute_path": path }),
        )
        .await
        {
            Ok(text) => contents.push(format!("--- {path} ---\n{text}")),
            Err(e) => warnings.push(format!("@{given} not inlined: {e}")),
        }
    }
}

async fn run(
    registry: &ToolRegistry,
    scheduler: &Scheduler,
    tool: &str,
    args: serde_json::Value,
) -> Result<String, String> {
    let request = ToolCallRequest::new("at-reference", tool, &args);
    let cancel = CancellationToken::new();
    let mut done = scheduler
        .run(registry, vec![request], TurnInfo::default(), &cancel)
        .await;
    let result = done
        .pop()
        .map(|call| call.result)
        .ok_or_else(|| "no result".to_string())?;
    match result.error {
        Some(e) => Err(e.message),
        None => Ok(result.llm_text()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_found_and_emails_are_not() {
        assert_eq!(
            references("@src/main.rs explain, then see @docs/a\\ b.md. Mail me@x.org"),
            ["src/main.rs", "docs/a b.md"]
        );
        assert!(references("no refs @ here").is_empty());
    }

    #[test]
    fn a_reference_is_a_resource_only_when_it_names_a_configured_server() {
        let servers = ["everything".to_string()];
        assert_eq!(
            mcp_resource("everything:demo://resource/static/document/a.md", &servers),
            Some(("everything", "demo://resource/static/document/a.md"))
        );
        assert_eq!(mcp_resource("other:demo://x", &servers), None);
        assert_eq!(mcp_resource("src/main.rs", &servers), None);
        assert_eq!(mcp_resource("everything:", &servers), None);
    }
}
