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
//!
//! Images a read returns (an image resource, an `@picture.png`) follow the text as image
//! parts of the user message, for a model that takes images; another model gets the
//! note the read left in the text ([`Inlined::parts`]).

use std::path::Path;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolbelt_core::Part;
use toolbelt_engine::registry::ToolRegistry;
use toolbelt_engine::{
    scheduler::Scheduler, scheduler::SchedulerConfig, scheduler::ToolCallRequest,
    scheduler::TurnInfo,
};
use toolbelt_model::UserPart;

/// What a prompt's references gave.
#[derive(Debug, Default)]
pub struct Inlined {
    /// The prompt, with the text read after it (the prompt as written when nothing was).
    pub text: String,
    /// The images the reads returned, in order.
    pub images: Vec<UserPart>,
    /// A line for the person per reference that could not be read.
    pub warnings: Vec<String>,
}

impl Inlined {
    /// The user message: the text, then the images when the model takes images (else
    /// the text's notes of them stand alone).
    pub fn parts(self, takes_images: bool) -> Vec<UserPart> {
        let mut parts = vec![UserPart::Text(self.text)];
        if takes_images {
            parts.extend(self.images);
        }
        parts
    }
}

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
) -> Inlined {
    inline_some(prompt, registry, session, Some(cwd), mcp_servers).await
}

/// Only the `@server:uri` references of `prompt` (stream-JSON, whose clients send
/// `@path` as text for the model, as Claude Code's do).
pub async fn inline_resources(
    prompt: &str,
    registry: &ToolRegistry,
    session: &Scheduler,
    mcp_servers: &[String],
) -> Inlined {
    inline_some(prompt, registry, session, None, mcp_servers).await
}

/// `@path`s too when there is a `cwd`.
async fn inline_some(
    prompt: &str,
    registry: &ToolRegistry,
    session: &Scheduler,
    cwd: Option<&Path>,
    mcp_servers: &[String],
) -> Inlined {
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
    let mut read = Read {
        scheduler,
        registry,
        contents: Vec::new(),
        out: Inlined::default(),
    };
    for reference in &resources {
        read.resource(reference, mcp_servers).await;
    }
    if let Some(cwd) = cwd.filter(|_| !refs.is_empty()) {
        read.paths(&refs, cwd).await;
    }
    let mut out = read.out;
    out.text = if read.contents.is_empty() {
        prompt.to_string()
    } else {
        format!(
            "{prompt}\n\n--- Content from referenced files ---\n{}\n--- End of content ---",
            read.contents.join("\n")
        )
    };
    out
}

/// The reads of one prompt's references: what they gave so far.
struct Read<'a> {
    scheduler: Scheduler,
    registry: &'a ToolRegistry,
    contents: Vec<String>,
    out: Inlined,
}

impl Read<'_> {
    /// `@server:uri`: the resource through `read_mcp_resource`.
    async fn resource(&mut self, reference: &str, mcp_servers: &[String]) {
        let Some((server, uri)) = mcp_resource(reference, mcp_servers) else {
            return;
        };
        if self.registry.get("read_mcp_resource").is_none() {
            self.out.warnings.push(format!(
                "@{reference} not inlined: MCP server \"{server}\" offers no resources"
            ));
            return;
        }
        let args = json!({ "server": server, "uri": uri });
        match self.run("read_mcp_resource", args).await {
            Ok(text) => self.contents.push(format!("--- {reference} ---\n{text}")),
            Err(e) => self
                .out
                .warnings
                .push(format!("@{reference} not inlined: {e}")),
        }
    }

    /// `@path`s: through `read_many_files`, or `read_file` for plain files.
    async fn paths(&mut self, refs: &[String], cwd: &Path) {
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
        if self.registry.get("read_many_files").is_some() {
            match self
                .run("read_many_files", json!({ "paths": absolute }))
                .await
            {
                Ok(text) => self.contents.push(text),
                Err(e) => self
                    .out
                    .warnings
                    .push(format!("@ references not inlined: {e}")),
            }
            return;
        }
        for (given, path) in refs.iter().zip(&absolute) {
            if !Path::new(path).is_file() {
                self.out.warnings.push(format!(
                    "@{given} not inlined: only files can be inlined without read_many_files"
                ));
                continue;
            }
            match self
                .run("read_file", json!({ "absolute_path": path }))
                .await
            {
                Ok(text) => self.contents.push(format!("--- {path} ---\n{text}")),
                Err(e) => self.out.warnings.push(format!("@{given} not inlined: {e}")),
            }
        }
    }

    /// Runs `tool` through the references' scheduler: its text, and its images kept
    /// aside.
    async fn run(&mut self, tool: &str, args: serde_json::Value) -> Result<String, String> {
        let request = ToolCallRequest::new("at-reference", tool, &args);
        let cancel = CancellationToken::new();
        let mut done = self
            .scheduler
            .run(self.registry, vec![request], TurnInfo::default(), &cancel)
            .await;
        let result = done
            .pop()
            .map(|call| call.result)
            .ok_or_else(|| "no result".to_string())?;
        if let Some(e) = result.error {
            return Err(e.message);
        }
        for part in &result.llm_content {
            if let Part::InlineData {
                mime_type, data, ..
            } = part
                && mime_type.starts_with("image/")
            {
                self.out.images.push(UserPart::Image {
                    mime_type: mime_type.clone(),
                    data: data.clone(),
                });
            }
        }
        Ok(result.llm_text())
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
