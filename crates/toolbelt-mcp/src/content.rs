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

fn map_block(tool: &str, block: ContentBlock, parts: &mut Vec<Part>, display: &mut Vec<String>) {
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
