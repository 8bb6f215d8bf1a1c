//! The `lsp` tool, with Qwen Code's schema: one `operation` and the arguments it needs.
//! Read-only (it asks servers questions; code actions are listed, never applied), so it
//! runs without confirmation.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ErrorKind, ExecContext, Invocation, Kind, Tool,
    ToolEnvironment, ToolError, ToolResult,
};

use crate::operations;
use crate::servers::Servers;

pub(crate) const OPERATIONS: &[&str] = &[
    "goToDefinition",
    "findReferences",
    "hover",
    "documentSymbol",
    "workspaceSymbol",
    "goToImplementation",
    "prepareCallHierarchy",
    "incomingCalls",
    "outgoingCalls",
    "diagnostics",
    "workspaceDiagnostics",
    "codeActions",
];

/// The `lsp` tool: Qwen Code's schema, answered by the configured servers.
pub struct LspTool {
    env: Arc<ToolEnvironment>,
    servers: Arc<Servers>,
    schema: Value,
    description: String,
}

impl LspTool {
    /// The tool over `servers`, resolving paths through `env`'s workspace.
    pub fn new(env: Arc<ToolEnvironment>, servers: Arc<Servers>) -> Self {
        let names: Vec<&str> = servers.configs().iter().map(|c| c.name.as_str()).collect();
        let description = format!(
            "Asks the project's language servers ({}) about code: where a symbol is defined (goToDefinition), \
             used (findReferences) or implemented (goToImplementation), its type and documentation (hover), \
             the symbols of a file (documentSymbol) or of the workspace by name (workspaceSymbol), callers and \
             callees (prepareCallHierarchy, then incomingCalls/outgoingCalls with the item it returned), \
             errors and warnings (diagnostics for a file, workspaceDiagnostics) and the fixes a server offers \
             (codeActions, listed, not applied). Positions are 1-based line and character; if you do not know \
             the exact position of a symbol, find it with documentSymbol or workspaceSymbol first. Results are \
             `path:line:col: <line text>`.",
            names.join(", ")
        );
        let schema = json!({
            "type": "object",
            "properties": {
                "operation": {"type": "string", "enum": OPERATIONS, "description": "What to ask."},
                "filePath": {"type": "string", "description": "The absolute path of the file; needed by every operation except workspaceSymbol, workspaceDiagnostics, incomingCalls and outgoingCalls."},
                "line": {"type": "integer", "minimum": 1, "description": "1-based line of the symbol."},
                "character": {"type": "integer", "minimum": 1, "description": "1-based character of the symbol in its line."},
                "endLine": {"type": "integer", "minimum": 1, "description": "codeActions: 1-based end line of the range (default: line)."},
                "endCharacter": {"type": "integer", "minimum": 1, "description": "codeActions: 1-based end character (default: character)."},
                "includeDeclaration": {"type": "boolean", "description": "findReferences: list the declaration too (default true)."},
                "query": {"type": "string", "description": "workspaceSymbol: the name (or part of it) to look for."},
                "callHierarchyItem": {"type": "object", "description": "incomingCalls/outgoingCalls: an item exactly as prepareCallHierarchy returned it."},
                "serverName": {"type": "string", "description": "The server to ask (a key of .lsp.json); by default the one covering the file's extension."},
                "limit": {"type": "integer", "minimum": 1, "description": "At most this many results (default 100)."},
                "diagnostics": {"type": "array", "items": {"type": "object"}, "description": "codeActions: the LSP diagnostics to get fixes for (default: those the server published for the range)."},
                "codeActionKinds": {"type": "array", "items": {"type": "string"}, "description": "codeActions: only these kinds (quickfix, refactor, source.organizeImports, ...)."}
            },
            "required": ["operation"],
            "additionalProperties": false
        });
        LspTool {
            env,
            servers,
            schema,
            description,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Params {
    pub operation: String,
    pub file_path: Option<String>,
    pub line: Option<u32>,
    pub character: Option<u32>,
    pub end_line: Option<u32>,
    pub end_character: Option<u32>,
    pub include_declaration: Option<bool>,
    pub query: Option<String>,
    pub call_hierarchy_item: Option<Value>,
    pub server_name: Option<String>,
    pub limit: Option<usize>,
    pub diagnostics: Option<Vec<Value>>,
    pub code_action_kinds: Option<Vec<String>>,
}

/// A checked call: the operation's arguments and the file, resolved through the
/// workspace boundary.
pub(crate) struct LspCall {
    pub params: Params,
    pub file: Option<PathBuf>,
    pub env: Arc<ToolEnvironment>,
    pub servers: Arc<Servers>,
}

impl Tool for LspTool {
    fn name(&self) -> &str {
        "lsp"
    }
    fn display_name(&self) -> &str {
        "Lsp"
    }
    fn description(&self) -> &str {
        &self.description
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
        let op = params.operation.as_str();
        let needs_file = !matches!(
            op,
            "workspaceSymbol" | "workspaceDiagnostics" | "incomingCalls" | "outgoingCalls"
        );
        let needs_position = matches!(
            op,
            "goToDefinition"
                | "findReferences"
                | "hover"
                | "goToImplementation"
                | "prepareCallHierarchy"
                | "codeActions"
        );
        if needs_file && params.file_path.is_none() {
            return Err(ToolError::invalid_params(format!("{op} needs `filePath`")));
        }
        if needs_position && (params.line.is_none() || params.character.is_none()) {
            return Err(ToolError::invalid_params(format!(
                "{op} needs `line` and `character` (1-based); find the symbol's position with documentSymbol or workspaceSymbol first"
            )));
        }
        if op == "workspaceSymbol" && params.query.is_none() {
            return Err(ToolError::invalid_params("workspaceSymbol needs `query`"));
        }
        if matches!(op, "incomingCalls" | "outgoingCalls") && params.call_hierarchy_item.is_none() {
            return Err(ToolError::invalid_params(format!(
                "{op} needs `callHierarchyItem`, an item as prepareCallHierarchy returned it"
            )));
        }
        if let Some(name) = &params.server_name
            && self.servers.by_name(name).is_none()
        {
            return Err(ToolError::invalid_params(format!(
                "no language server is named `{name}`; configured: {}",
                self.servers
                    .configs()
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let file = match &params.file_path {
            Some(p) if needs_file => Some(
                self.env
                    .roots
                    .resolve_readable(p)
                    .map_err(|e| ToolError::new(e.error_kind(), e.to_string()))?,
            ),
            _ => None,
        };
        Ok(Box::new(LspCall {
            params,
            file,
            env: self.env.clone(),
            servers: self.servers.clone(),
        }))
    }
}

impl Invocation for LspCall {
    fn describe(&self) -> String {
        match &self.file {
            Some(f) => {
                let shown = self.env.roots.display_relative(f);
                match (self.params.line, self.params.character) {
                    (Some(l), Some(c)) => format!("{} {shown}:{l}:{c}", self.params.operation),
                    _ => format!("{} {shown}", self.params.operation),
                }
            }
            None => match &self.params.query {
                Some(q) => format!("{} {q:?}", self.params.operation),
                None => self.params.operation.clone(),
            },
        }
    }

    fn locations(&self) -> Vec<PathBuf> {
        self.file.iter().cloned().collect()
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }

    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let cancel = ctx.cancel.clone();
            tokio::select! {
                result = operations::run(&self) => match result {
                    Ok(text) => ToolResult::text(text),
                    Err(e) => ToolResult::err(ErrorKind::ExecutionFailed, e),
                },
                () = cancel.cancelled() => ToolResult::err(ErrorKind::Cancelled, "cancelled"),
            }
        })
    }
}
