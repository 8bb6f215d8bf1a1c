//! toolbelt's tools and results in MCP's shapes: a [`Registration`] becomes a `Tool`
//! (title, input schema, annotations from the kind), a [`CompletedCall`] a
//! `CallToolResult`.
//!
//! Annotations are hints a client uses to decide what to ask about, so they say what the
//! tool does, not what is convenient: `readOnlyHint` for read, search and fetch (nothing
//! local changes); `destructiveHint` for edit, delete, move and execute (an edit
//! overwrites, a command can do anything); `idempotentHint` for the tools whose repeat
//! changes nothing more (`write_file`, `todo_write`: the same content again); and
//! `openWorldHint` only where the world outside the workspace is touched: fetches, web
//! search and the proxied tools of other MCP servers. `grep_search` and `glob` are
//! "search" in Qwen Code's kinds but look at the workspace only, so they say
//! `openWorldHint: false`: saying otherwise would make a careful client ask about a grep.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rmcp::model::{
    CallToolResult, ContentBlock, JsonObject, MetaObject, ResourceContents, Tool, ToolAnnotations,
};
use serde_json::{Value, json};
use toolbelt_core::{Display, Kind, Part, ToolFacts};
use toolbelt_engine::{registry::Origin, registry::Registration};
use toolbelt_engine::{scheduler::CallState, scheduler::CompletedCall};

/// The `_meta` key of a result that carries toolbelt's display (a diff, Markdown, the
/// task list), as `{"type": "file_diff" | "markdown" | "todo_list" | "plan", ...}`.
pub(super) const DISPLAY_META_KEY: &str = "toolbelt/display";

/// One registered tool as an MCP `Tool`.
pub(super) fn tool(registration: &Registration) -> Tool {
    let t = &registration.tool;
    let schema = match t.parameter_schema() {
        Value::Object(map) => map.clone(),
        _ => JsonObject::from_iter([("type".to_string(), json!("object"))]),
    };
    Tool::new(
        registration.name.clone(),
        t.description().to_string(),
        Arc::new(schema),
    )
    .with_title(t.display_name().to_string())
    .with_annotations(annotations(t.kind(), t.facts(), &registration.origin))
}

/// MCP's hints from what the tool says of itself: its kind and its [`ToolFacts`].
fn annotations(kind: Kind, facts: ToolFacts, origin: &Origin) -> ToolAnnotations {
    let read_only = matches!(kind, Kind::Read | Kind::Search | Kind::Fetch);
    let destructive = matches!(
        kind,
        Kind::Edit | Kind::Delete | Kind::Move | Kind::Execute | Kind::Other
    );
    let open_world =
        kind == Kind::Fetch || facts.open_world || matches!(origin, Origin::Mcp { .. });
    ToolAnnotations::new()
        .read_only(read_only)
        .destructive(!read_only && destructive)
        .idempotent(read_only || facts.idempotent)
        .open_world(open_world)
}

/// A finished call as the answer to `tools/call`: the model's content, `isError` unless
/// it succeeded, and the display in `_meta` under [`DISPLAY_META_KEY`] unless it is
/// Markdown repeating the one text part (a `read_file` result): a client shows the
/// content then, and the answer is not sent twice.
pub(super) fn call_result(call: CompletedCall) -> CallToolResult {
    let repeats_content = match (
        &call.result.return_display,
        call.result.llm_content.as_slice(),
    ) {
        (Display::Markdown { text: shown }, [Part::Text { text }]) => shown == text,
        _ => false,
    };
    let content: Vec<ContentBlock> = call
        .result
        .llm_content
        .into_iter()
        .map(content_block)
        .collect();
    let mut result = if call.state == CallState::Success {
        CallToolResult::success(content)
    } else {
        CallToolResult::error(content)
    };
    if repeats_content {
        return result;
    }
    if let Ok(display) = serde_json::to_value(&call.result.return_display) {
        let mut meta = MetaObject::new();
        meta.0.insert(DISPLAY_META_KEY.to_string(), display);
        result.meta = Some(meta);
    }
    result
}

fn content_block(part: Part) -> ContentBlock {
    match part {
        Part::Text { text } => ContentBlock::text(text),
        Part::InlineData {
            mime_type,
            data,
            display_name,
        } => {
            let encoded = STANDARD.encode(&data);
            if mime_type.starts_with("image/") {
                ContentBlock::image(encoded, mime_type)
            } else if mime_type.starts_with("audio/") {
                ContentBlock::audio(encoded, mime_type)
            } else {
                // PDFs and other documents: an embedded resource is the one MCP shape
                // for bytes of any type.
                let name = display_name.unwrap_or_else(|| "data".to_string());
                ContentBlock::resource(ResourceContents::BlobResourceContents {
                    uri: format!("toolbelt:inline/{name}"),
                    mime_type: Some(mime_type),
                    blob: encoded,
                    meta: None,
                })
            }
        }
        // `Part` may grow; a part this server cannot map is named, not dropped silently.
        #[allow(unreachable_patterns)]
        other => ContentBlock::text(format!("[content of an unsupported kind: {other:?}]")),
    }
}
