//! A `session/prompt`'s content blocks as the agent's user message.
//!
//! - `text` is the person's words (their `#references` count);
//! - `image` is an image part (base64 decoded);
//! - `resource_link` to a `file://` path is read the way `@path` is, through the
//!   session's scheduler (`at_paths`), so the workspace boundary, ignore files and the
//!   permission rules apply as to the model's own reads; another URI is named in the text;
//! - `resource` (embedded: the editor's selection or an unsaved buffer) is the editor's
//!   own text and is attached as given, marked with its URI; an embedded image likewise.
//!
//! A text that starts with an MCP prompt command (`/<server>:<prompt>`) is replaced by
//! the prompt's messages, as in the other front ends.

use agent_client_protocol_schema::v1::{ContentBlock, EmbeddedResourceResource};
use base64::Engine;
use toolbelt_agent::at_paths;
use toolbelt_model::UserPart;
use toolbelt_session::Prepared;

/// The user message, and the text the person wrote.
pub(crate) struct UserMessage {
    pub parts: Vec<UserPart>,
    pub written: String,
}

/// Reads the blocks; `Err` says which block cannot be used.
pub(crate) async fn user_message(
    prepared: &Prepared,
    blocks: Vec<ContentBlock>,
) -> Result<UserMessage, String> {
    let mut parts = Vec::new();
    let mut written = Vec::new();
    let mut references = Vec::new();
    for (n, block) in blocks.into_iter().enumerate() {
        match block {
            ContentBlock::Text(text) => {
                let text = match prepared.mcp.run_prompt_command(&text.text).await {
                    None => text.text,
                    Some(Ok(expanded)) => expanded,
                    Some(Err(why)) => return Err(why.to_string()),
                };
                written.push(text.clone());
                parts.push(UserPart::Text(text));
            }
            ContentBlock::Image(image) => parts.push(image_part(n, &image.mime_type, &image.data)?),
            ContentBlock::ResourceLink(link) => match file_path(&link.uri) {
                Some(path) => references.push(format!("@{}", path.replace(' ', "\\ "))),
                None => parts.push(UserPart::Text(format!(
                    "[{}]({})",
                    link.title.unwrap_or(link.name),
                    link.uri
                ))),
            },
            ContentBlock::Resource(embedded) => match embedded.resource {
                EmbeddedResourceResource::TextResourceContents(text) => {
                    parts.push(UserPart::Text(format!(
                        "Content of {} (from the editor):\n```\n{}\n```",
                        text.uri, text.text
                    )));
                }
                EmbeddedResourceResource::BlobResourceContents(blob) => {
                    let mime = blob.mime_type.unwrap_or_default();
                    if !mime.starts_with("image/") {
                        return Err(format!(
                            "prompt block {n}: an embedded {mime:?} resource ({}) cannot be read; send text or an image",
                            blob.uri
                        ));
                    }
                    parts.push(image_part(n, &mime, &blob.blob)?);
                }
                _ => return Err(format!("prompt block {n}: an unknown resource kind")),
            },
            ContentBlock::Audio(_) => {
                return Err(format!(
                    "prompt block {n}: audio is not supported (promptCapabilities.audio is false)"
                ));
            }
            _ => return Err(format!("prompt block {n}: an unknown content block")),
        }
    }
    if !references.is_empty() {
        let asked = references.join(" ");
        let agent = &prepared.agent;
        // `@<server>:<uri>` of a server still starting: read once it is up.
        prepared.mcp.wait_for_prompt(&asked).await;
        agent.sync_tools().await;
        let mut inlined = at_paths::inline(
            &asked,
            &agent.registry(),
            agent.scheduler(),
            &prepared.cwd,
            &prepared.mcp.aliases(),
        )
        .await;
        for warning in std::mem::take(&mut inlined.warnings) {
            tracing::warn!("{warning}");
        }
        parts.extend(inlined.parts(agent.takes_images()));
    }
    if parts.is_empty() {
        return Err("the prompt is empty".to_string());
    }
    Ok(UserMessage {
        parts,
        written: written.join("\n"),
    })
}

/// An image block's bytes.
fn image_part(n: usize, mime: &str, data: &str) -> Result<UserPart, String> {
    let data = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("prompt block {n}: the image is not base64 ({e})"))?;
    Ok(UserPart::Image {
        mime_type: mime.to_string(),
        data,
    })
}

/// The path of a `file://` URI (percent-escapes decoded); `None` for other schemes.
fn file_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return None;
    }
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let value = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            file_path("file:///home/a/b.rs").as_deref(),
            Some("/home/a/b.rs")
        );
        assert_eq!(
            file_path("file:///a%20b/c.rs").as_deref(),
            Some("/a b/c.rs")
        );
        assert_eq!(file_path("file://localhost/x").as_deref(), Some("/x"));
        assert_eq!(file_path("https://example.com/x"), None);
        assert_eq!(file_path("file://relative"), None);
        assert_eq!(file_path("file:///bad%zz").as_deref(), Some("/bad%zz"));
    }
}
