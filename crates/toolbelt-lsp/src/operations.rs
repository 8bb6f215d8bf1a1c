//! Each operation of the `lsp` tool: the request it sends and the text it makes of the
//! answer.

use std::sync::Arc;
use std::time::Duration;

use lsp_types::{
    CallHierarchyIncomingCall, CallHierarchyItem, CallHierarchyOutgoingCall, CodeActionOrCommand,
    DocumentSymbol, DocumentSymbolResponse, GotoDefinitionResponse, Hover, HoverContents, Location,
    MarkedString, OneOf, Range, WorkspaceSymbolResponse,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use url::Url;

use crate::client::LspClient;
use crate::config::ServerConfig;
use crate::format::{Locations, diagnostic, limited};
use crate::indexing::{indexing_note, until_found};
use crate::position::to_lsp;
use crate::tool::LspCall;

/// How long `diagnostics` waits for a server to publish a file's diagnostics.
const DIAGNOSTICS_WAIT: Duration = Duration::from_secs(20);

/// An open document: the server that has it, its URI, its text.
struct Doc {
    client: Arc<LspClient>,
    uri: Url,
    text: String,
}

/// The capability a server announces for an operation that is a plain request.
fn provider(operation: &str) -> Option<&'static str> {
    Some(match operation {
        "goToDefinition" => "definitionProvider",
        "findReferences" => "referencesProvider",
        "hover" => "hoverProvider",
        "documentSymbol" => "documentSymbolProvider",
        "workspaceSymbol" => "workspaceSymbolProvider",
        "goToImplementation" => "implementationProvider",
        "prepareCallHierarchy" | "incomingCalls" | "outgoingCalls" => "callHierarchyProvider",
        "codeActions" => "codeActionProvider",
        _ => return None,
    })
}

/// Refuses, before asking, an operation the server said it does not offer.
fn check_support(call: &LspCall, client: &LspClient) -> Result<(), String> {
    match provider(&call.params.operation) {
        Some(p) if !client.supports(p) => Err(format!(
            "the language server `{}` does not offer {} (no `{p}` in its capabilities)",
            client.name(),
            call.params.operation
        )),
        _ => Ok(()),
    }
}

pub(crate) async fn run(call: &LspCall) -> Result<String, String> {
    let p = &call.params;
    let limit = p.limit.unwrap_or(100);
    match p.operation.as_str() {
        "goToDefinition" => {
            locations(call, "textDocument/definition", json!({}), "definition").await
        }
        "goToImplementation" => {
            locations(
                call,
                "textDocument/implementation",
                json!({}),
                "implementation",
            )
            .await
        }
        "findReferences" => {
            let context =
                json!({"context": {"includeDeclaration": p.include_declaration.unwrap_or(true)}});
            locations(call, "textDocument/references", context, "reference").await
        }
        "hover" => hover(call).await,
        "documentSymbol" => document_symbols(call, limit).await,
        "workspaceSymbol" => workspace_symbols(call, limit).await,
        "prepareCallHierarchy" => prepare_call_hierarchy(call).await,
        "incomingCalls" | "outgoingCalls" => calls(call, limit).await,
        "diagnostics" => diagnostics(call, limit).await,
        "workspaceDiagnostics" => workspace_diagnostics(call, limit).await,
        "codeActions" => code_actions(call, limit).await,
        other => Err(format!(
            "unknown operation `{other}`; one of {}",
            crate::tool::OPERATIONS.join(", ")
        )),
    }
}

fn server_for_file(call: &LspCall) -> Result<(&ServerConfig, String), String> {
    let Some(file) = &call.file else {
        return Err("this operation needs `filePath`".into());
    };
    if let Some(name) = &call.params.server_name {
        let config = call
            .servers
            .by_name(name)
            .ok_or_else(|| format!("no server `{name}`"))?;
        let language = config.language_of(file).unwrap_or(name).to_string();
        return Ok((config, language));
    }
    call.servers.for_file(file).ok_or_else(|| {
        format!(
            "no language server covers {} (by its extension); configured: {}",
            call.env.roots.display_relative(file),
            call.servers
                .configs()
                .iter()
                .map(|c| format!(
                    "{} ({})",
                    c.name,
                    c.extension_to_language
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(" ")
                ))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// The most of one file sent to a server: with JSON's escaping it stays inside one
/// message ([`crate::framing::MAX_MESSAGE`]), and no server analyses more usefully.
pub(crate) const MAX_DOCUMENT: u64 = 16 * 1024 * 1024;

/// The text of a regular file of at most [`MAX_DOCUMENT`] bytes (also when it grows
/// while read), opened without blocking on a FIFO (through core's one bounded reader,
/// [`toolbelt_config::project_file::read_own`]): a multi-gigabyte file in the workspace is
/// refused, not read whole into toolbelt and the server.
pub(crate) fn read_document_now(path: &std::path::Path) -> Result<String, String> {
    use toolbelt_config::{project_file::ProjectFileError, project_file::read_own};
    let bytes = read_own(path, MAX_DOCUMENT).map_err(|e| match e {
        ProjectFileError::TooLarge { .. } => {
            format!("it is larger than {MAX_DOCUMENT} bytes (16 MiB)")
        }
        other => other.to_string(),
    })?;
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())
}

/// [`read_document_now`] off the runtime's threads.
pub(crate) async fn read_document(path: std::path::PathBuf) -> Result<String, String> {
    tokio::task::spawn_blocking(move || read_document_now(&path))
        .await
        .map_err(|e| e.to_string())?
}

/// Starts the file's server if needed and makes it see the file as it is on disk now.
async fn open(call: &LspCall) -> Result<Doc, String> {
    let (config, language) = server_for_file(call)?;
    let client = call
        .servers
        .client(config)
        .await
        .map_err(|e| e.to_string())?;
    check_support(call, &client)?;
    let Some(file) = &call.file else {
        return Err("this operation needs `filePath`".into());
    };
    let text = read_document(file.clone())
        .await
        .map_err(|e| format!("cannot read {}: {e}", call.env.roots.display_relative(file)))?;
    let uri = client
        .sync_document(file, &language, &text)
        .await
        .map_err(|e| e.to_string())?;
    // A server that has not loaded the project yet answers from this file alone.
    client.wait_until_loaded().await;
    Ok(Doc { client, uri, text })
}

/// The server to ask for a workspace-wide operation: the named one, or the first.
async fn any_client(call: &LspCall) -> Result<Arc<LspClient>, String> {
    let config = match &call.params.server_name {
        Some(name) => call.servers.by_name(name),
        None => call.servers.configs().first(),
    }
    .ok_or("no language server is configured")?;
    let client = call
        .servers
        .client(config)
        .await
        .map_err(|e| e.to_string())?;
    check_support(call, &client)?;
    let root = config
        .workspace_folder
        .as_deref()
        .unwrap_or(call.servers.root());
    crate::indexing::open_a_project_file(&client, config, root).await;
    Ok(client)
}

fn position_params(call: &LspCall, doc: &Doc) -> Result<Value, String> {
    let (line, character) = (
        call.params.line.unwrap_or(1),
        call.params.character.unwrap_or(1),
    );
    let position = to_lsp(&doc.text, line, character)?;
    Ok(json!({"textDocument": {"uri": doc.uri}, "position": position}))
}

async fn ask<T: DeserializeOwned>(
    client: &LspClient,
    method: &str,
    params: Value,
) -> Result<Option<T>, String> {
    let value = client
        .request(method, params, client.request_timeout())
        .await
        .map_err(|e| e.to_string())?;
    if value.is_null() {
        return Ok(None);
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| format!("the server's answer to `{method}` is not what LSP specifies: {e}"))
}

fn merge(params: &mut Value, extra: Value) {
    if let (Some(p), Value::Object(extra)) = (params.as_object_mut(), extra) {
        p.extend(extra);
    }
}

async fn locations(
    call: &LspCall,
    method: &str,
    extra: Value,
    what: &str,
) -> Result<String, String> {
    let doc = open(call).await?;
    let mut params = position_params(call, &doc)?;
    merge(&mut params, extra);
    let ask_once = || {
        let params = params.clone();
        let client = &doc.client;
        async move { ask_locations(client, method, params).await }
    };
    let (found, indexing) = until_found(&doc.client, ask_once, Vec::is_empty).await?;
    if found.is_empty() {
        let note = if indexing {
            indexing_note(&doc.client)
        } else {
            String::new()
        };
        return Ok(format!("No {what} found at that position.{note}"));
    }
    let mut fmt = Locations::new(&call.env.roots);
    let lines: Vec<String> = found.iter().map(|(u, r)| fmt.line(u, r)).collect();
    let n = lines.len();
    let plural = if n == 1 { "" } else { "s" };
    Ok(format!(
        "{n} {what}{plural}:\n{}",
        limited(lines, call.params.limit.unwrap_or(100), "locations")
    ))
}

/// One `textDocument/definition`, `implementation` or `references` request, as
/// locations.
async fn ask_locations(
    client: &LspClient,
    method: &str,
    params: Value,
) -> Result<Vec<(Url, Range)>, String> {
    Ok(if method == "textDocument/references" {
        ask::<Vec<Location>>(client, method, params)
            .await?
            .unwrap_or_default()
            .into_iter()
            .map(|l| (l.uri, l.range))
            .collect()
    } else {
        match ask::<GotoDefinitionResponse>(client, method, params).await? {
            None => Vec::new(),
            Some(GotoDefinitionResponse::Scalar(l)) => vec![(l.uri, l.range)],
            Some(GotoDefinitionResponse::Array(ls)) => {
                ls.into_iter().map(|l| (l.uri, l.range)).collect()
            }
            Some(GotoDefinitionResponse::Link(links)) => links
                .into_iter()
                .map(|l| (l.target_uri, l.target_selection_range))
                .collect(),
        }
    })
}

async fn hover(call: &LspCall) -> Result<String, String> {
    let doc = open(call).await?;
    let params = position_params(call, &doc)?;
    let Some(hover) = ask::<Hover>(&doc.client, "textDocument/hover", params).await? else {
        return Ok("No hover information at that position.".into());
    };
    let marked = |m: MarkedString| match m {
        MarkedString::String(s) => s,
        MarkedString::LanguageString(l) => format!("```{}\n{}\n```", l.language, l.value),
    };
    let text = match hover.contents {
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(ms) => ms.into_iter().map(marked).collect::<Vec<_>>().join("\n\n"),
        HoverContents::Markup(m) => m.value,
    };
    Ok(text.trim().to_string())
}

async fn document_symbols(call: &LspCall, limit: usize) -> Result<String, String> {
    let doc = open(call).await?;
    let params = json!({"textDocument": {"uri": doc.uri}});
    let mut fmt = Locations::new(&call.env.roots);
    let mut lines = Vec::new();
    match ask::<DocumentSymbolResponse>(&doc.client, "textDocument/documentSymbol", params).await? {
        None => {}
        Some(DocumentSymbolResponse::Flat(symbols)) => {
            for s in symbols {
                let at = fmt.line(&s.location.uri, &s.location.range);
                lines.push(format!("{:?} {} — {at}", s.kind, s.name));
            }
        }
        Some(DocumentSymbolResponse::Nested(symbols)) => {
            nested(&mut lines, &mut fmt, &doc.uri, &symbols, 0);
        }
    }
    if lines.is_empty() {
        return Ok("No symbols in that file.".into());
    }
    Ok(limited(lines, limit, "symbols"))
}

fn nested(
    lines: &mut Vec<String>,
    fmt: &mut Locations<'_>,
    uri: &Url,
    symbols: &[DocumentSymbol],
    depth: usize,
) {
    for s in symbols {
        let at = fmt.line(uri, &s.selection_range);
        lines.push(format!(
            "{}{:?} {} — {at}",
            "  ".repeat(depth),
            s.kind,
            s.name
        ));
        if let Some(children) = &s.children {
            nested(lines, fmt, uri, children, depth + 1);
        }
    }
}

async fn workspace_symbols(call: &LspCall, limit: usize) -> Result<String, String> {
    let client = any_client(call).await?;
    let query = call.params.query.clone().unwrap_or_default();
    let mut fmt = Locations::new(&call.env.roots);
    let mut lines = Vec::new();
    let params = json!({"query": query});
    let ask_once = || ask::<WorkspaceSymbolResponse>(&client, "workspace/symbol", params.clone());
    let none = |a: &Option<WorkspaceSymbolResponse>| match a {
        None => true,
        Some(WorkspaceSymbolResponse::Flat(s)) => s.is_empty(),
        Some(WorkspaceSymbolResponse::Nested(s)) => s.is_empty(),
    };
    let (answer, indexing) = until_found(&client, ask_once, none).await?;
    match answer {
        None => {}
        Some(WorkspaceSymbolResponse::Flat(symbols)) => {
            for s in symbols {
                let at = fmt.line(&s.location.uri, &s.location.range);
                lines.push(format!("{:?} {} — {at}", s.kind, s.name));
            }
        }
        Some(WorkspaceSymbolResponse::Nested(symbols)) => {
            for s in symbols {
                let at = match &s.location {
                    OneOf::Left(l) => fmt.line(&l.uri, &l.range),
                    OneOf::Right(w) => w.uri.to_string(),
                };
                lines.push(format!("{:?} {} — {at}", s.kind, s.name));
            }
        }
    }
    if lines.is_empty() {
        let note = if indexing {
            indexing_note(&client)
        } else {
            String::new()
        };
        return Ok(format!("No symbol matches {query:?}.{note}"));
    }
    Ok(limited(lines, limit, "symbols"))
}

fn item_line(fmt: &mut Locations<'_>, item: &CallHierarchyItem) -> String {
    format!(
        "{:?} {} — {}",
        item.kind,
        item.name,
        fmt.line(&item.uri, &item.selection_range)
    )
}

async fn prepare_call_hierarchy(call: &LspCall) -> Result<String, String> {
    let doc = open(call).await?;
    let params = position_params(call, &doc)?;
    let items =
        ask::<Vec<CallHierarchyItem>>(&doc.client, "textDocument/prepareCallHierarchy", params)
            .await?
            .unwrap_or_default();
    if items.is_empty() {
        return Ok("No call hierarchy item at that position.".into());
    }
    let mut fmt = Locations::new(&call.env.roots);
    let mut out = Vec::new();
    for item in &items {
        out.push(item_line(&mut fmt, item));
        let json = serde_json::to_string(item).unwrap_or_default();
        out.push(format!("  callHierarchyItem: {json}"));
    }
    Ok(format!(
        "{}\nPass a callHierarchyItem as it is to incomingCalls or outgoingCalls.",
        out.join("\n")
    ))
}

async fn calls(call: &LspCall, limit: usize) -> Result<String, String> {
    let item_value = call
        .params
        .call_hierarchy_item
        .clone()
        .unwrap_or(Value::Null);
    let item: CallHierarchyItem = serde_json::from_value(item_value.clone()).map_err(|e| {
        format!("`callHierarchyItem` is not an item as prepareCallHierarchy returns it: {e}")
    })?;
    // The item's file decides the server (as its extension would for `filePath`).
    let path = item
        .uri
        .to_file_path()
        .map_err(|()| "the item's uri is not a file".to_string())?;
    // The item comes from the model: its file must be one the model may read.
    call.env
        .roots
        .resolve_readable(&path.to_string_lossy())
        .map_err(|e| format!("the item's file: {e}"))?;
    let config = match &call.params.server_name {
        Some(name) => call.servers.by_name(name),
        None => call.servers.for_file(&path).map(|(c, _)| c),
    }
    .ok_or("no language server covers the item's file")?;
    let client = call
        .servers
        .client(config)
        .await
        .map_err(|e| e.to_string())?;
    check_support(call, &client)?;
    let incoming = call.params.operation == "incomingCalls";
    let method = if incoming {
        "callHierarchy/incomingCalls"
    } else {
        "callHierarchy/outgoingCalls"
    };
    let answer = client
        .request(
            method,
            json!({"item": item_value}),
            client.request_timeout(),
        )
        .await
        .map_err(|e| e.to_string())?;
    let mut fmt = Locations::new(&call.env.roots);
    let mut lines = Vec::new();
    if incoming {
        let found: Vec<CallHierarchyIncomingCall> =
            serde_json::from_value(answer).unwrap_or_default();
        for c in found {
            lines.push(format!("called from {}", item_line(&mut fmt, &c.from)));
            for r in &c.from_ranges {
                lines.push(format!("  at {}", fmt.line(&c.from.uri, r)));
            }
        }
    } else {
        let found: Vec<CallHierarchyOutgoingCall> =
            serde_json::from_value(answer).unwrap_or_default();
        for c in found {
            lines.push(format!("calls {}", item_line(&mut fmt, &c.to)));
            for r in &c.from_ranges {
                lines.push(format!("  at {}", fmt.line(&item.uri, r)));
            }
        }
    }
    if lines.is_empty() {
        let what = if incoming {
            "No calls to"
        } else {
            "No calls from"
        };
        return Ok(format!("{what} {}.", item.name));
    }
    Ok(limited(lines, limit, "lines"))
}

async fn diagnostics(call: &LspCall, limit: usize) -> Result<String, String> {
    let doc = open(call).await?;
    let Some(found) = doc.client.diagnostics_for(&doc.uri, DIAGNOSTICS_WAIT).await else {
        if let Some(why) = doc.client.dead() {
            return Err(why);
        }
        return Ok(format!(
            "The server published no diagnostics for this file within {} s.",
            DIAGNOSTICS_WAIT.as_secs()
        ));
    };
    if found.is_empty() {
        return Ok("No diagnostics: the server reports no errors or warnings in this file.".into());
    }
    let mut fmt = Locations::new(&call.env.roots);
    let lines: Vec<String> = found
        .iter()
        .map(|d| diagnostic(&mut fmt, &doc.uri, d))
        .collect();
    Ok(limited(lines, limit, "diagnostics"))
}

async fn workspace_diagnostics(call: &LspCall, limit: usize) -> Result<String, String> {
    let mut clients = call.servers.running().await;
    if clients.is_empty() {
        clients.push(any_client(call).await?);
    }
    let mut fmt = Locations::new(&call.env.roots);
    let mut lines = Vec::new();
    for client in clients {
        for (uri, found) in client.all_diagnostics() {
            lines.extend(found.iter().map(|d| diagnostic(&mut fmt, &uri, d)));
        }
    }
    if lines.is_empty() {
        return Ok("No diagnostics published for the files the servers have seen so far (open a file with the diagnostics operation to have it checked).".into());
    }
    Ok(limited(lines, limit, "diagnostics"))
}

async fn code_actions(call: &LspCall, limit: usize) -> Result<String, String> {
    let doc = open(call).await?;
    let p = &call.params;
    let (line, character) = (p.line.unwrap_or(1), p.character.unwrap_or(1));
    let start = to_lsp(&doc.text, line, character)?;
    let end = to_lsp(
        &doc.text,
        p.end_line.unwrap_or(line),
        p.end_character.unwrap_or(character),
    )?;
    let range = Range::new(start, end);
    let diagnostics: Vec<Value> = match &p.diagnostics {
        Some(given) => given.clone(),
        None => doc
            .client
            .diagnostics_for(&doc.uri, Duration::from_secs(5))
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|d| d.range.start.line <= end.line && d.range.end.line >= start.line)
            .filter_map(|d| serde_json::to_value(d).ok())
            .collect(),
    };
    let mut context = json!({"diagnostics": diagnostics});
    if let Some(kinds) = &p.code_action_kinds {
        context["only"] = json!(kinds);
    }
    let params = json!({"textDocument": {"uri": doc.uri}, "range": range, "context": context});
    let actions = ask::<Vec<CodeActionOrCommand>>(&doc.client, "textDocument/codeAction", params)
        .await?
        .unwrap_or_default();
    let lines: Vec<String> = actions
        .iter()
        .map(|a| match a {
            CodeActionOrCommand::Command(c) => format!("- {} (command {})", c.title, c.command),
            CodeActionOrCommand::CodeAction(a) => {
                let kind = a.kind.as_ref().map_or("", |k| k.as_str());
                let files = a
                    .edit
                    .as_ref()
                    .and_then(|e| e.changes.as_ref())
                    .map_or(0, |c| c.len());
                let edits = if files > 0 {
                    format!(", edits {files} file(s)")
                } else {
                    String::new()
                };
                format!("- {} [{kind}{edits}]", a.title)
            }
        })
        .collect();
    if lines.is_empty() {
        return Ok("No code actions for that range.".into());
    }
    Ok(format!(
        "Code actions the server offers (not applied; make the change with edit):\n{}",
        limited(lines, limit, "actions")
    ))
}

#[cfg(test)]
mod document_tests {
    use super::*;

    #[test]
    fn a_document_is_a_regular_file_of_at_most_16_mib() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("a.py");
        std::fs::write(&small, "x = 1\n").unwrap();
        assert_eq!(read_document_now(&small).unwrap(), "x = 1\n");
        // Sparse: no disk behind it.
        let big = dir.path().join("big.py");
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(MAX_DOCUMENT + 1).unwrap();
        let e = read_document_now(&big).unwrap_err();
        assert!(e.contains("16 MiB"), "{e}");
        // A FIFO nobody writes to: refused at once, not waited on.
        let fifo = dir.path().join("fifo.py");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let e = read_document_now(&fifo).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        let e = read_document_now(std::path::Path::new("/dev/zero")).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
    }
}
