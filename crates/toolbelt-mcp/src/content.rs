//! MCP tool results to toolbelt results: text stays text; images and audio
//! become inline data; embedded resources and resource links become text; structured
//! content becomes JSON text when the server sent no text. `isError` results become
//! `mcp_tool_error` results carrying the server's text.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use toolbelt_core::{Display, ErrorKind, Part, ToolError, ToolResult};

/// Builds the result of `server`'s tool `tool`.
pub(crate) fn to_tool_result(server: &str, tool: &str, result: CallToolResult) -> ToolResult {
    let mut parts = Vec::new();
    let mut display = Vec::new();
    let has_text = result
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::Text(_)));
    for block in result.content {
        map_block(tool, block, &mut parts, &mut display);
    }
    if !has_text && let Some(structured) = &result.structured_content {
        let text = serde_json::to_string_pretty(structured).unwrap_or_default();
        display.push(text.clone());
        parts.push(Part::text(text));
    }
    if result.is_error == Some(true) {
        let text: Vec<&str> = parts.iter().filter_map(Part::as_text).collect();
        let text = if text.is_empty() {
            "(the server gave no message)".to_string()
        } else {
            text.join("\n")
        };
        return ToolResult::error(ToolError::new(
            ErrorKind::McpToolError,
            format!("MCP tool \"{tool}\" of server \"{server}\" reported an error: {text}"),
        ));
    }
    if parts.is_empty() {
        parts.push(Part::text(""));
    }
    ToolResult {
        llm_content: parts,
        return_display: Display::markdown(display.join("\n")),
        error: None,
    }
}

pub(crate) fn map_block(
    tool: &str,
    block: ContentBlock,
    parts: &mut Vec<Part>,
    display: &mut Vec<String>,
) {
    match block {
        ContentBlock::Text(t) => {
            display.push(t.text.clone());
            parts.push(Part::text(t.text));
        }
        ContentBlock::Image(i) => media(tool, "image", &i.data, i.mime_type, parts, display),
        ContentBlock::Audio(a) => media(tool, "audio", &a.data, a.mime_type, parts, display),
        ContentBlock::Resource(r) => match r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                display.push(format!("Resource {uri}:\n{text}"));
                parts.push(Part::text(text));
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => {
                let mime = mime_type.unwrap_or_else(|| "application/octet-stream".into());
                let media_like = ["image/", "audio/", "application/pdf"]
                    .iter()
                    .any(|m| mime.starts_with(m));
                match STANDARD.decode(blob.as_bytes()) {
                    Ok(data) if media_like => {
                        let note = format!("[Resource {uri} ({mime}, {} bytes)]", data.len());
                        display.push(note.clone());
                        parts.push(Part::text(note));
                        parts.push(Part::InlineData {
                            mime_type: mime,
                            data,
                            display_name: Some(uri),
                        });
                    }
                    Ok(data) => {
                        let note = format!(
                            "[Resource {uri}: {} bytes of {mime}, not shown]",
                            data.len()
                        );
                        display.push(note.clone());
                        parts.push(Part::text(note));
                    }
                    Err(e) => {
                        let note = format!("[Resource {uri}: invalid base64 data: {e}]");
                        display.push(note.clone());
                        parts.push(Part::text(note));
                    }
                }
            }
            other => {
                let text = serde_json::to_string(&other).unwrap_or_default();
                display.push(text.clone());
                parts.push(Part::text(text));
            }
        },
        ContentBlock::ResourceLink(link) => {
            let name = link.title.clone().unwrap_or_else(|| link.name.clone());
            let mut text = format!("Resource Link: {name} at {}", link.uri);
            if let Some(description) = &link.description {
                text.push_str(&format!(" ({description})"));
            }
            display.push(text.clone());
            parts.push(Part::text(text));
        }
        other => {
            let text = serde_json::to_string(&other).unwrap_or_default();
            display.push(text.clone());
            parts.push(Part::text(text));
        }
    }
}

fn media(
    tool: &str,
    what: &str,
    data: &str,
    mime_type: String,
    parts: &mut Vec<Part>,
    display: &mut Vec<String>,
) {
    match STANDARD.decode(data.as_bytes()) {
        Ok(bytes) => {
            display.push(format!("[{what}: {mime_type}, {} bytes]", bytes.len()));
            parts.push(Part::text(format!(
                "[Tool '{tool}' provided the following {what} data with mime-type: {mime_type}]"
            )));
            parts.push(Part::InlineData {
                mime_type,
                data: bytes,
                display_name: None,
            });
        }
        Err(e) => {
            let note = format!("[Tool '{tool}' sent {what} data that is not valid base64: {e}]");
            display.push(note.clone());
            parts.push(Part::text(note));
        }
    }
}

/// Text of one resource past this many bytes is cut, with a note saying so.
pub(crate) const MAX_RESOURCE_TEXT: usize = 100_000;
/// Images past this many bytes are named, not sent (as `read_file`'s limit for media).
pub(crate) const MAX_RESOURCE_IMAGE: usize = 7 * 1024 * 1024;

/// What `resources/read` returned, for the model: text as text (cut at
/// [`MAX_RESOURCE_TEXT`]), text sent as a blob decoded, images as images, any other
/// binary named with its type and size, never dumped. Also the display lines.
pub(crate) fn resource_parts(contents: Vec<ResourceContents>) -> (Vec<Part>, Vec<String>) {
    let mut parts = Vec::new();
    let mut display = Vec::new();
    for content in contents {
        match content {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                let text = capped_text(&uri, text);
                display.push(format!("Resource {uri} ({} bytes of text)", text.len()));
                parts.push(Part::text(text));
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => {
                let mime = mime_type.unwrap_or_else(|| "application/octet-stream".into());
                let note = blob_part(&uri, &mime, &blob, &mut parts);
                display.push(note);
            }
            other => {
                let text = serde_json::to_string(&other).unwrap_or_default();
                display.push("Resource contents of another kind".to_string());
                parts.push(Part::text(capped_text("(unknown kind)", text)));
            }
        }
    }
    if parts.is_empty() {
        parts.push(Part::text("(the server returned no contents)"));
    }
    (parts, display)
}

/// `text` cut at [`MAX_RESOURCE_TEXT`] bytes (on a character boundary), with a note.
fn capped_text(uri: &str, text: String) -> String {
    if text.len() <= MAX_RESOURCE_TEXT {
        return text;
    }
    let mut end = MAX_RESOURCE_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[... truncated: resource {uri} has {} bytes of text; only the first {end} are shown]",
        &text[..end],
        text.len()
    )
}

/// Adds a blob's part and returns the display line.
fn blob_part(uri: &str, mime: &str, blob: &str, parts: &mut Vec<Part>) -> String {
    let data = match STANDARD.decode(blob.as_bytes()) {
        Ok(data) => data,
        Err(e) => {
            let note = format!("[Resource {uri}: invalid base64 data: {e}]");
            parts.push(Part::text(note.clone()));
            return note;
        }
    };
    let textual = mime.starts_with("text/") || mime == "application/json";
    if textual && let Ok(text) = String::from_utf8(data.clone()) {
        let text = capped_text(uri, text);
        let note = format!("Resource {uri} ({mime}, {} bytes)", data.len());
        parts.push(Part::text(text));
        return note;
    }
    let note = format!("[Resource {uri}: {} bytes of {mime}", data.len());
    if mime.starts_with("image/") && data.len() <= MAX_RESOURCE_IMAGE {
        let note = format!("{note}]");
        parts.push(Part::text(note.clone()));
        parts.push(Part::InlineData {
            mime_type: mime.to_string(),
            data,
            display_name: Some(uri.to_string()),
        });
        return note;
    }
    let note = format!("{note}, not shown]");
    parts.push(Part::text(note.clone()));
    note
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(mime: &str, data: &[u8]) -> ResourceContents {
        ResourceContents::BlobResourceContents {
            uri: "demo://x".into(),
            mime_type: Some(mime.into()),
            blob: STANDARD.encode(data),
            meta: None,
        }
    }

    #[test]
    fn resource_contents_become_text_images_or_a_named_binary() {
        let (parts, _) = resource_parts(vec![
            ResourceContents::text("hello", "demo://t"),
            blob("image/png", b"\x89PNG"),
            blob("application/zip", &[0, 1, 2, 255]),
            blob("text/plain", b"plain blob"),
        ]);
        assert_eq!(parts[0].as_text(), Some("hello"));
        assert_eq!(
            parts[1].as_text(),
            Some("[Resource demo://x: 4 bytes of image/png]")
        );
        assert!(
            matches!(&parts[2], Part::InlineData { mime_type, data, .. } if mime_type == "image/png" && data == b"\x89PNG")
        );
        assert_eq!(
            parts[3].as_text(),
            Some("[Resource demo://x: 4 bytes of application/zip, not shown]")
        );
        assert_eq!(parts[4].as_text(), Some("plain blob"));
    }

    #[test]
    fn long_text_is_cut_with_a_note() {
        let long = "é".repeat(MAX_RESOURCE_TEXT);
        let (parts, _) = resource_parts(vec![ResourceContents::text(long, "demo://big")]);
        let text = parts[0].as_text().unwrap();
        assert!(text.len() < MAX_RESOURCE_TEXT + 200);
        assert!(text.ends_with(&format!(
            "[... truncated: resource demo://big has {} bytes of text; only the first {} are shown]",
            2 * MAX_RESOURCE_TEXT,
            MAX_RESOURCE_TEXT
        )));
    }
}
