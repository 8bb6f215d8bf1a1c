//! Answers as compact text the model can act on: `path:line:col: <the line's text>`, with
//! 1-based positions in characters. A location is read only through the workspace
//! boundary; one outside it (a library, a hostile server's invention) is listed by name.

use std::collections::HashMap;
use std::path::PathBuf;

use lsp_types::{Diagnostic, DiagnosticSeverity, Range};
use toolbelt_core::WorkspaceRoots;
use url::Url;

use crate::position::from_lsp;

/// Formats locations, reading each file at most once.
pub(crate) struct Locations<'a> {
    roots: &'a WorkspaceRoots,
    files: HashMap<PathBuf, Option<Vec<String>>>,
}

impl<'a> Locations<'a> {
    pub(crate) fn new(roots: &'a WorkspaceRoots) -> Self {
        Locations {
            roots,
            files: HashMap::new(),
        }
    }

    /// `path:line:col: text` for a location in the workspace; `path:line (outside the
    /// workspace)` otherwise, with the server's own 1-based line.
    pub(crate) fn line(&mut self, uri: &Url, range: &Range) -> String {
        let Ok(path) = uri.to_file_path() else {
            return format!("{uri}:{} (not a file)", range.start.line + 1);
        };
        let Ok(real) = self.roots.resolve_readable(&path.to_string_lossy()) else {
            return format!(
                "{}:{} (outside the workspace; not read)",
                path.display(),
                range.start.line + 1
            );
        };
        let shown = self.roots.display_relative(&real);
        let lines = self.files.entry(real.clone()).or_insert_with(|| {
            crate::operations::read_document_now(&real)
                .ok()
                .map(|t| t.lines().map(str::to_string).collect())
        });
        let text = lines
            .as_ref()
            .and_then(|l| l.get(range.start.line as usize))
            .map_or("", String::as_str);
        let (line, col) = from_lsp(text, range.start);
        format!("{shown}:{line}:{col}: {}", clip(text.trim()))
    }
}

/// A line of code as the model sees it: at most 200 characters.
fn clip(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

pub(crate) fn severity(d: &Diagnostic) -> &'static str {
    match d.severity {
        Some(DiagnosticSeverity::ERROR) => "error",
        Some(DiagnosticSeverity::WARNING) => "warning",
        Some(DiagnosticSeverity::INFORMATION) => "info",
        Some(DiagnosticSeverity::HINT) => "hint",
        _ => "diagnostic",
    }
}

/// `path:line:col: severity: message (source code)`.
pub(crate) fn diagnostic(locations: &mut Locations<'_>, uri: &Url, d: &Diagnostic) -> String {
    let at = locations.line(uri, &d.range);
    // The location line ends with the code text; the diagnostic goes on its own line.
    let code = match &d.code {
        Some(lsp_types::NumberOrString::String(s)) => format!(" {s}"),
        Some(lsp_types::NumberOrString::Number(n)) => format!(" {n}"),
        None => String::new(),
    };
    let source = d.source.as_deref().unwrap_or("");
    let tag = if source.is_empty() && code.is_empty() {
        String::new()
    } else {
        format!(" ({source}{code})")
    };
    format!(
        "{at}\n    {}: {}{tag}",
        severity(d),
        d.message.replace('\n', "\n    ")
    )
}

/// Keeps the first `limit` lines and says how many were left out.
pub(crate) fn limited(mut lines: Vec<String>, limit: usize, what: &str) -> String {
    let total = lines.len();
    if total > limit {
        lines.truncate(limit);
        lines.push(format!(
            "… {} more {what} not shown (raise `limit`)",
            total - limit
        ));
    }
    lines.join("\n")
}
