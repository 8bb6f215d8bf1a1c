//! `read_mcp_resource`: one resource of a connected MCP server, by URI.
//!
//! Text comes back as text, cut at [`crate::content::MAX_RESOURCE_TEXT`] bytes with a
//! note; images as images; any other binary is named with its type and size (see
//! `content::resource_parts`). Registered like `list_mcp_resources`: a built-in, only
//! when a connected server advertises resources, and read-only.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use toolbelt_core::{
    ConfirmationDetails, Display, ErrorKind, ExecContext, Invocation, Kind, Tool, ToolError,
    ToolResult,
};

use crate::connection::McpConnection;
use crate::list_resources::server_with_resources;

/// The tool's name.
pub const READ_NAME: &str = "read_mcp_resource";
/// What permission rules and hooks may call it besides its name (Claude Code's name).
pub const READ_RULE_ALIASES: &[&str] = &["ReadMcpResourceTool"];

/// `read_mcp_resource` over the servers of a session.
pub(crate) struct ReadMcpResource {
    servers: Vec<Arc<McpConnection>>,
    schema: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    server: String,
    uri: String,
}

impl ReadMcpResource {
    pub(crate) fn new(servers: Vec<Arc<McpConnection>>) -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "The MCP server that offers the resource (its name in the settings)."},
                "uri": {"type": "string", "description": "The resource's URI, as list_mcp_resources gives it or made from a template."}
            },
            "required": ["server", "uri"],
            "additionalProperties": false
        });
        ReadMcpResource { servers, schema }
    }
}

impl Tool for ReadMcpResource {
    fn name(&self) -> &str {
        READ_NAME
    }
    fn display_name(&self) -> &str {
        "ReadMcpResource"
    }
    fn description(&self) -> &str {
        "Reads one resource of a connected MCP server by its URI (see list_mcp_resources). Text longer \
         than 100000 bytes is cut with a note; images come back as images; other binary contents are \
         named with their type and size."
    }
    fn rule_aliases(&self) -> &[&'static str] {
        READ_RULE_ALIASES
    }
    fn kind(&self) -> Kind {
        Kind::Read
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = serde_json::from_value(args)
            .map_err(|e| ToolError::invalid_params(format!("invalid arguments: {e}")))?;
        if params.uri.trim().is_empty() {
            return Err(ToolError::invalid_params("`uri` is empty"));
        }
        Ok(Box::new(ReadCall {
            server: server_with_resources(&self.servers, &params.server)?,
            uri: params.uri,
        }))
    }
}

struct ReadCall {
    server: Arc<McpConnection>,
    uri: String,
}

impl Invocation for ReadCall {
    fn describe(&self) -> String {
        format!(
            "Read resource {} of MCP server {}",
            self.uri,
            self.server.alias()
        )
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(std::future::ready(None))
    }
    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let result = match self.server.read_resource(&self.uri, &ctx.cancel).await {
                Ok(result) => result,
                Err(why) if ctx.cancel.is_cancelled() => {
                    return ToolResult::err(ErrorKind::Cancelled, why);
                }
                Err(why) => return ToolResult::err(ErrorKind::McpToolError, why),
            };
            let (parts, display) = crate::content::resource_parts(result.contents);
            ToolResult {
                llm_content: parts,
                return_display: Display::markdown(display.join("\n")),
                error: None,
            }
        })
    }
}
