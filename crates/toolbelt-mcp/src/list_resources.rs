//! `list_mcp_resources`: the resources and resource templates of the connected MCP
//! servers, for the model to pick one to read with `read_mcp_resource`.
//!
//! Registered as a built-in (its rule alias `ListMcpResourcesTool` is toolbelt's own
//! word, not a server's claim) and only when at least one connected server advertises
//! resources. It only reads, so it runs unasked like the other read tools.

use std::fmt::Write;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use toolbelt_core::{
    ConfirmationDetails, ErrorKind, ExecContext, Invocation, Kind, Tool, ToolError, ToolResult,
};

use crate::catalog::ResourcePage;
use crate::connection::McpConnection;

/// The tool's name.
pub const LIST_NAME: &str = "list_mcp_resources";
/// What permission rules and hooks may call it besides its name (Claude Code's name).
pub const LIST_RULE_ALIASES: &[&str] = &["ListMcpResourcesTool"];

/// `list_mcp_resources` over the servers of a session.
pub(crate) struct ListMcpResources {
    servers: Vec<Arc<McpConnection>>,
    schema: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    server: Option<String>,
    cursor: Option<String>,
}

impl ListMcpResources {
    pub(crate) fn new(servers: Vec<Arc<McpConnection>>) -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "The MCP server to list (its name in the settings). Leave it out to list every server that offers resources."},
                "cursor": {"type": "string", "description": "The cursor a previous listing of this server returned, for its next page. Needs `server`."}
            },
            "additionalProperties": false
        });
        ListMcpResources { servers, schema }
    }
}

/// The server named `name` that advertises resources, or a clear error naming those
/// that do.
pub(crate) fn server_with_resources(
    servers: &[Arc<McpConnection>],
    name: &str,
) -> Result<Arc<McpConnection>, ToolError> {
    let offering: Vec<&str> = servers
        .iter()
        .filter(|s| s.offers_resources())
        .map(|s| s.alias())
        .collect();
    let Some(server) = servers.iter().find(|s| s.alias() == name) else {
        return Err(ToolError::invalid_params(format!(
            "there is no MCP server named \"{name}\"; servers with resources: {}",
            offering.join(", ")
        )));
    };
    if !server.offers_resources() {
        return Err(ToolError::invalid_params(format!(
            "MCP server \"{name}\" offers no resources; servers with resources: {}",
            offering.join(", ")
        )));
    }
    Ok(server.clone())
}

impl Tool for ListMcpResources {
    fn name(&self) -> &str {
        LIST_NAME
    }
    fn display_name(&self) -> &str {
        "ListMcpResources"
    }
    fn description(&self) -> &str {
        "Lists the resources (with their URIs) and resource templates that connected MCP servers offer. \
         Read one with read_mcp_resource; fill a template's {variables} to make a URI. Give `server` to \
         list one server; a listing with a next cursor continues with that server and `cursor`."
    }
    fn rule_aliases(&self) -> &[&'static str] {
        LIST_RULE_ALIASES
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
        let servers = match &params.server {
            Some(name) => vec![server_with_resources(&self.servers, name)?],
            None if params.cursor.is_some() => {
                return Err(ToolError::invalid_params(
                    "a cursor belongs to one server's listing: give `server` too",
                ));
            }
            None => self
                .servers
                .iter()
                .filter(|s| s.offers_resources())
                .cloned()
                .collect(),
        };
        Ok(Box::new(ListCall {
            servers,
            cursor: params.cursor,
        }))
    }
}

struct ListCall {
    servers: Vec<Arc<McpConnection>>,
    cursor: Option<String>,
}

impl Invocation for ListCall {
    fn describe(&self) -> String {
        let names: Vec<&str> = self.servers.iter().map(|s| s.alias()).collect();
        format!("List the resources of MCP server {}", names.join(", "))
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(std::future::ready(None))
    }
    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let mut out = String::new();
            let mut failures = Vec::new();
            for server in &self.servers {
                match server.resource_page(self.cursor.clone(), &ctx.cancel).await {
                    Ok(page) => write_page(&mut out, server.alias(), &page),
                    Err(why) => failures.push(why),
                }
                if ctx.cancel.is_cancelled() {
                    return ToolResult::err(ErrorKind::Cancelled, "The listing was cancelled.");
                }
            }
            if out.is_empty() && !failures.is_empty() {
                return ToolResult::err(ErrorKind::McpToolError, failures.join("\n"));
            }
            for why in failures {
                let _ = writeln!(out, "Error: {why}");
            }
            ToolResult::text(out)
        })
    }
}

/// One server's page as lines the model reads.
fn write_page(out: &mut String, alias: &str, page: &ResourcePage) {
    let _ = writeln!(out, "Server \"{alias}\":");
    let _ = writeln!(out, "Resources ({}):", page.resources.len());
    for r in &page.resources {
        let _ = write!(
            out,
            "- {}  {}",
            r.uri,
            r.title.as_deref().unwrap_or(&r.name)
        );
        if let Some(mime) = &r.mime_type {
            let _ = write!(out, " ({mime})");
        }
        if let Some(d) = r.description.as_deref().filter(|d| !d.is_empty()) {
            let _ = write!(out, ": {}", d.lines().next().unwrap_or_default());
        }
        out.push('\n');
    }
    if !page.templates.is_empty() {
        let _ = writeln!(out, "Resource templates ({}):", page.templates.len());
        for t in &page.templates {
            let _ = write!(
                out,
                "- {}  {}",
                t.uri_template,
                t.title.as_deref().unwrap_or(&t.name)
            );
            if let Some(mime) = &t.mime_type {
                let _ = write!(out, " ({mime})");
            }
            if let Some(d) = t.description.as_deref().filter(|d| !d.is_empty()) {
                let _ = write!(out, ": {}", d.lines().next().unwrap_or_default());
            }
            out.push('\n');
        }
    }
    if let Some(cursor) = &page.next_cursor {
        let _ = writeln!(
            out,
            "More resources: call again with server \"{alias}\" and cursor \"{cursor}\"."
        );
    }
}
