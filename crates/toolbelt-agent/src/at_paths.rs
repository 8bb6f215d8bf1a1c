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

/// The prompt with the referenced content appended, and warnings for references that
/// could not be read.
pub async fn inline(
    prompt: &str,
    registry: &ToolRegistry,
    session: &Scheduler,
    cwd: &Path,
) -> (String, Vec<String>) {
    // The person's references are read through a scheduler of their own (the session's
    // rules, mode and hooks, nobody to ask, no events): the same checks as any call,
    // a PreToolUse hook that guards reads included, without showing the reads as the
    // model's calls.
    let scheduler = Scheduler::new(session.env().clone(), SchedulerConfig::new(session.rules()));

    let refs = references(prompt);
    if refs.is_empty() {
        return (prompt.to_string(), Vec::new());
    }
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
    let mut warnings = Vec::new();
    let mut contents = Vec::new();
    if registry.get("read_many_files").is_some() {
        match run(
            registry,
            &scheduler,
            "read_many_files",
            json!({ "paths": absolute }),
        )
        .await
        {
            Ok(text) => contents.push(text),
            Err(e) => warnings.push(format!("@ references not inlined: {e}")),
        }
    } else {
        for (given, path) in refs.iter().zip(&absolute) {
            if !Path::new(path).is_file() {
                warnings.push(format!(
                    "@{given} not inlined: only files can be inlined without read_many_files"
                ));
                continue;
            }
            match run(
                registry,
                &scheduler,
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
    if contents.is_empty() {
        return (prompt.to_string(), warnings);
    }
    let text = format!(
        "{prompt}\n\n--- Content from referenced files ---\n{}\n--- End of content ---",
        contents.join("\n")
    );
    (text, warnings)
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
}
