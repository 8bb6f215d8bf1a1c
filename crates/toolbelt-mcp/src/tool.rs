//! One tool of an MCP server, as a toolbelt [`Tool`].
//!
//! Named `mcp__<alias>__<tool>` (sanitised, at most 64 characters with a stable hash), so
//! two servers can offer tools of the same name.
//!
//! MCP tools are untrusted: a call asks for confirmation unless the person's settings
//! say otherwise. A server's own annotations cannot: the MCP specification calls
//! annotations from untrusted servers hints, and a server that wants to run unasked
//! would simply claim `readOnlyHint`. So `readOnlyHint` only informs the confirmation
//! (its title says what the server claims) unless the server is configured with
//! `trust: true` (every call unasked) or `trustAnnotations: true` (tools it marks
//! read-only run unasked and have kind `read`, so the scheduler may run them beside
//! other reads).

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use toolbelt_core::{
    ConfirmationDetails, ExecContext, Invocation, Kind, PermissionSubject, Tool, ToolError,
    ToolResult,
};
use toolbelt_engine::registry::sanitize_tool_name;

use crate::connection::McpConnection;

/// One tool of an MCP server, registered as `mcp__<alias>__<tool>`.
pub struct McpTool {
    connection: Arc<McpConnection>,
    name: String,
    remote_name: String,
    display_name: String,
    description: String,
    schema: Value,
    /// The server's `readOnlyHint`: a claim, believed only per
    /// [`crate::ServerConfig::believes_annotations`].
    read_only_hint: bool,
}

impl McpTool {
    /// The tool `tool` as `connection`'s server described it.
    pub fn new(connection: Arc<McpConnection>, tool: rmcp::model::Tool) -> Self {
        let alias = connection.alias().to_string();
        let remote_name = tool.name.to_string();
        let title = tool
            .title
            .clone()
            .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()))
            .unwrap_or_else(|| remote_name.clone());
        let read_only_hint = tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        let mut schema = Value::Object((*tool.input_schema).clone());
        if schema.get("type").is_none() {
            schema["type"] = Value::String("object".into());
        }
        McpTool {
            name: sanitize_tool_name(&format!("mcp__{alias}__{remote_name}")),
            display_name: format!("{title} ({alias} MCP Server)"),
            description: tool.description.map(|d| d.to_string()).unwrap_or_default(),
            schema,
            read_only_hint,
            remote_name,
            connection,
        }
    }

    /// The tool's name on its server.
    pub fn remote_name(&self) -> &str {
        &self.remote_name
    }

    /// The alias of its server.
    pub fn server(&self) -> &str {
        self.connection.alias()
    }

    /// Whether the tool only reads, as far as toolbelt believes: the server says so and
    /// the person trusts its annotations.
    pub fn is_read_only(&self) -> bool {
        self.read_only_hint && self.connection.config().believes_annotations()
    }

    /// Whether the server claims the tool only reads (believed or not).
    pub fn claims_read_only(&self) -> bool {
        self.read_only_hint
    }

    fn runs_unasked(&self) -> bool {
        self.connection.config().trust || self.is_read_only()
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn display_name(&self) -> &str {
        &self.display_name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn kind(&self) -> Kind {
        if self.is_read_only() {
            Kind::Read
        } else {
            Kind::Other
        }
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn needs_confirmation(&self) -> bool {
        !self.runs_unasked()
    }
    fn can_update_output(&self) -> bool {
        true
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        Ok(Box::new(McpCall {
            connection: self.connection.clone(),
            remote_name: self.remote_name.clone(),
            display_name: self.display_name.clone(),
            unasked: self.runs_unasked(),
            claims_read_only: self.read_only_hint,
            args,
        }))
    }
}

struct McpCall {
    connection: Arc<McpConnection>,
    remote_name: String,
    display_name: String,
    unasked: bool,
    claims_read_only: bool,
    args: Value,
}

impl Invocation for McpCall {
    fn describe(&self) -> String {
        format!(
            "Call {} on MCP server {} with {}",
            self.remote_name,
            self.connection.alias(),
            self.args
        )
    }

    fn permission_subject(&self) -> PermissionSubject {
        // Rules name MCP tools whole (`mcp__srv__tool`); there is nothing finer to match.
        PermissionSubject::None
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async move {
            if self.unasked {
                return None;
            }
            Some(ConfirmationDetails::Mcp {
                title: if self.claims_read_only {
                    "Confirm MCP Tool Execution (the server says this tool only reads)".into()
                } else {
                    "Confirm MCP Tool Execution".into()
                },
                server: self.connection.alias().to_string(),
                tool: self.remote_name.clone(),
                tool_display_name: self.display_name.clone(),
            })
        })
    }

    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            self.connection
                .call(&self.remote_name, self.args, ctx)
                .await
        })
    }
}
