//! `notebook_edit`: replace, insert or delete one cell of a Jupyter notebook.
//!
//! The notebook is parsed to find the cell, but written back by splicing: only the
//! changed cell is serialized again (its keys in their order, the file's indentation,
//! non-ASCII as it is), and the rest of the file keeps its bytes, so `git diff` shows
//! that cell alone. Cells are addressed by `id`; in a notebook without ids (nbformat
//! 4.4 and older) by 0-based index, written `cell-3` or `3`.
//!
//! Path resolution, the read-only check, the stale-file check between confirmation and
//! write, and the atomic write are `edit`'s ([`file_change`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, Display, ErrorKind, ExecContext, FileDiff, Invocation, Kind,
    PermissionSubject, Tool, ToolEnvironment, ToolError, ToolFacts, ToolResult,
};

use crate::diff::file_diff;
use crate::file_change::{self, FileChange, FileStamp, Opened, Shown, WritePolicy};
use crate::text_file::TextFile;

mod layout;
use layout::{Layout, Style};

/// Cell ids listed when the one asked for does not exist.
const LISTED_IDS: usize = 8;

/// The `notebook_edit` tool: changes one cell of a Jupyter notebook.
pub struct NotebookEdit {
    env: Arc<ToolEnvironment>,
    schema: Value,
}

impl NotebookEdit {
    /// The tool over a session's environment.
    pub fn new(env: Arc<ToolEnvironment>) -> Self {
        let schema = crate::params::schema_for::<Params>();
        NotebookEdit { env, schema }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(description = "Absolute path of the Jupyter notebook (.ipynb) to change.")]
    notebook_path: String,
    #[schemars(
        description = "The id of the cell to replace or delete, or to insert after (omit to insert at the start). In a notebook whose cells have no ids, the 0-based index: cell-3 or 3."
    )]
    cell_id: Option<String>,
    #[schemars(
        description = "The new source of the cell (required to replace; the content of an inserted cell)."
    )]
    new_source: Option<String>,
    #[schemars(
        description = "The type of the cell: required to insert; to replace, changes the cell's type."
    )]
    cell_type: Option<CellType>,
    #[serde(default)]
    #[schemars(
        description = "replace (default) the cell's source, insert a new cell after cell_id, or delete the cell."
    )]
    edit_mode: EditMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum CellType {
    Code,
    Markdown,
}

impl CellType {
    fn as_str(self) -> &'static str {
        match self {
            CellType::Code => "code",
            CellType::Markdown => "markdown",
        }
    }
}

#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum EditMode {
    #[default]
    Replace,
    Insert,
    Delete,
}

/// The tool's name.
pub(crate) const NAME: &str = "notebook_edit";
/// What permission rules may call it besides its name (see `crate::rule_vocabulary`).
pub(crate) const RULE_ALIASES: &[&str] = &["NotebookEdit"];
/// What it does to the paths it is given, for path rules.
pub(crate) const PATH_OPERATION: Option<toolbelt_core::PathOperation> =
    Some(toolbelt_core::PathOperation::Edit);

/// The tool as a built-in (see [`crate::builtin`]): its rule words and how a session
/// makes it.
pub(crate) const BUILTIN: crate::builtin::Builtin = crate::builtin::Builtin {
    name: NAME,
    rule_aliases: RULE_ALIASES,
    path_operation: PATH_OPERATION,
    make: crate::builtin::Make::Env(|env| {
        Some(std::sync::Arc::new(NotebookEdit::new(env.clone())))
    }),
};

impl Tool for NotebookEdit {
    fn name(&self) -> &str {
        NAME
    }
    fn display_name(&self) -> &str {
        "NotebookEdit"
    }
    fn description(&self) -> &str {
        "Changes one cell of a Jupyter notebook (.ipynb): replaces its source (edit_mode replace, the default; \
         cell_type may change its type), inserts a new cell after cell_id or at the start (edit_mode insert, \
         cell_type required), or deletes it (edit_mode delete). Cells are named by their id as read_file shows \
         them; in notebooks without cell ids use the 0-based index, as cell-3. The rest of the file is kept \
         byte for byte. Read the notebook with read_file first."
    }
    fn rule_aliases(&self) -> &[&'static str] {
        RULE_ALIASES
    }
    fn path_operation(&self) -> Option<toolbelt_core::PathOperation> {
        PATH_OPERATION
    }
    fn kind(&self) -> Kind {
        Kind::Edit
    }
    /// A language server checks the notebook it changed.
    fn facts(&self) -> ToolFacts {
        ToolFacts {
            edits_named_files: true,
            ..ToolFacts::default()
        }
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn parameter_aliases(&self) -> &[(&'static str, &'static str)] {
        &[
            ("file_path", "notebook_path"),
            ("absolute_path", "notebook_path"),
            ("path", "notebook_path"),
        ]
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        let missing = |what: &str| Err(ToolError::invalid_params(what.to_string()));
        match params.edit_mode {
            EditMode::Replace if params.cell_id.is_none() => {
                return missing("cell_id is required to replace a cell.");
            }
            EditMode::Replace if params.new_source.is_none() => {
                return missing(
                    "new_source is required to replace a cell (use edit_mode delete to remove it).",
                );
            }
            EditMode::Delete if params.cell_id.is_none() => {
                return missing("cell_id is required to delete a cell.");
            }
            EditMode::Insert if params.cell_type.is_none() => {
                return missing("cell_type (code or markdown) is required to insert a cell.");
            }
            _ => {}
        }
        let path = file_change::resolve_target(&self.env.roots, &params.notebook_path, "edit")?;
        Ok(Box::new(NotebookEditCall {
            display_path: self.env.roots.display_relative(&path),
            path,
            params,
            policy: WritePolicy::from_settings(&self.env.settings),
            shown: Shown::default(),
        }))
    }
}

struct NotebookEditCall {
    path: PathBuf,
    display_path: String,
    params: Params,
    policy: WritePolicy,
    shown: Shown<Plan>,
}

#[derive(Debug)]
struct Plan {
    stamp: FileStamp,
    bytes: Vec<u8>,
    diff: FileDiff,
    /// What was done, for the model.
    summary: String,
}

impl NotebookEditCall {
    fn plan(&self) -> Result<Plan, ToolError> {
        let (file, stamp) = match file_change::open_current(&self.path, self.policy)? {
            Opened::File { file, stamp } => (file, stamp),
            Opened::Missing => {
                return Err(ToolError::new(
                    ErrorKind::FileNotFound,
                    format!(
                        "Notebook not found: {}. notebook_edit changes existing notebooks; create one with write_file.",
                        self.path.display()
                    ),
                ));
            }
        };
        let bytes = file_change::read_all(file, stamp.size(), &self.path)?;
        let file = TextFile::decode(bytes).ok_or_else(|| self.not_a_notebook("it is not UTF-8"))?;
        let (new_text, summary) = self.change(&file.text)?;
        let diff = file_diff(&self.path, &self.display_path, Some(&file.text), &new_text);
        Ok(Plan {
            stamp,
            bytes: file.format.encode_owned(new_text),
            diff,
            summary,
        })
    }

    /// The notebook's new text and a sentence saying what changed.
    fn change(&self, text: &str) -> Result<(String, String), ToolError> {
        let notebook: Value = serde_json::from_str(text).map_err(|e| {
            self.not_a_notebook(&format!(
                "invalid JSON at line {} column {}: {e}",
                e.line(),
                e.column()
            ))
        })?;
        let cells = notebook
            .get("cells")
            .and_then(Value::as_array)
            .filter(|cells| cells.iter().all(Value::is_object))
            .ok_or_else(|| self.not_a_notebook("it has no \"cells\" list of cells (nbformat 4)"))?;
        let layout = self.locate(text, cells)?;
        let p = &self.params;
        let at = p
            .cell_id
            .as_deref()
            .map(|id| self.find_cell(cells, id))
            .transpose()?;
        let style = Style::detect(text, &layout);
        let doc = Doc {
            text,
            cells,
            layout: &layout,
            style: &style,
        };
        match (p.edit_mode, at) {
            (EditMode::Replace, Some(i)) => self.replace_cell_at(&doc, i),
            (EditMode::Delete, Some(i)) => Ok(self.delete_cell_at(&doc, i)),
            (EditMode::Insert, after) => Ok(self.insert_cell_after(&doc, &notebook, after)),
            (EditMode::Replace | EditMode::Delete, None) => {
                Err(ToolError::invalid_params("cell_id is required."))
            }
        }
    }

    /// Where the cells are in the text. The located cells must be the parsed ones (a
    /// notebook with a second "cells" key, say, is read one way by the parser and could
    /// be scanned another).
    fn locate(&self, text: &str, cells: &[Value]) -> Result<Layout, ToolError> {
        Layout::scan(text)
            .filter(|l| {
                l.cells.len() == cells.len()
                    && l.cells.iter().zip(cells).all(|(span, cell)| {
                        serde_json::from_str::<Value>(&text[span.clone()])
                            .ok()
                            .as_ref()
                            == Some(cell)
                    })
            })
            .ok_or_else(|| self.not_a_notebook("its \"cells\" list could not be located"))
    }

    fn replace_cell_at(&self, doc: &Doc<'_>, i: usize) -> Result<(String, String), ToolError> {
        let mut out = String::with_capacity(doc.text.len() + 256);
        let mut cell = doc.cells[i].as_object().cloned().unwrap_or_default();
        let source = self.params.new_source.as_deref().unwrap_or_default();
        replace_cell(&mut cell, source, self.params.cell_type);
        let cell = Value::Object(cell);
        if cell == doc.cells[i] {
            return Err(ToolError::new(
                ErrorKind::EditNoChange,
                format!(
                    "Cell {} already has this source and type; no edits made.",
                    describe_cell(&doc.cells[i], i)
                ),
            ));
        }
        let range = doc.layout.cells[i].clone();
        out.push_str(&doc.text[..range.start]);
        out.push_str(&doc.style.cell(&cell));
        out.push_str(&doc.text[range.end..]);
        let summary = format!(
            "Replaced cell {} in {}.",
            describe_cell(&cell, i),
            self.path.display()
        );
        Ok((out, summary))
    }

    fn delete_cell_at(&self, doc: &Doc<'_>, i: usize) -> (String, String) {
        let mut out = String::with_capacity(doc.text.len());
        // The cell goes with the separator before it (after it, for the first).
        let range = match (i, doc.layout.cells.len()) {
            (_, 1) => doc.layout.open + 1..doc.layout.close,
            (0, _) => doc.layout.cells[0].start..doc.layout.cells[1].start,
            (i, _) => doc.layout.cells[i - 1].end..doc.layout.cells[i].end,
        };
        out.push_str(&doc.text[..range.start]);
        out.push_str(&doc.text[range.end..]);
        let summary = format!(
            "Deleted cell {} from {}; {} cells remain.",
            describe_cell(&doc.cells[i], i),
            self.path.display(),
            doc.cells.len() - 1
        );
        (out, summary)
    }

    fn insert_cell_after(
        &self,
        doc: &Doc<'_>,
        notebook: &Value,
        after: Option<usize>,
    ) -> (String, String) {
        let mut out = String::with_capacity(doc.text.len() + 256);
        let cell_type = self.params.cell_type.unwrap_or(CellType::Code);
        let ids = uses_ids(notebook, doc.cells).then(|| fresh_id(doc.cells));
        let cell = new_cell(
            cell_type,
            ids.as_deref(),
            self.params.new_source.as_deref().unwrap_or(""),
        );
        let cell_text = doc.style.cell(&cell);
        let index = after.map_or(0, |i| i + 1);
        match (after, doc.layout.cells.is_empty()) {
            (_, true) => {
                out.push_str(&doc.text[..=doc.layout.open]);
                out.push_str(&doc.style.break_at(2));
                out.push_str(&cell_text);
                out.push_str(&doc.style.break_at(1));
                out.push_str(&doc.text[doc.layout.close..]);
            }
            (None, false) => {
                let first = doc.layout.cells[0].start;
                out.push_str(&doc.text[..first]);
                out.push_str(&cell_text);
                out.push(',');
                out.push_str(&doc.style.break_at(2));
                out.push_str(&doc.text[first..]);
            }
            (Some(i), false) => {
                let end = doc.layout.cells[i].end;
                out.push_str(&doc.text[..end]);
                out.push(',');
                out.push_str(&doc.style.break_at(2));
                out.push_str(&cell_text);
                out.push_str(&doc.text[end..]);
            }
        }
        let place = match after {
            None => "at the start".to_string(),
            Some(i) => format!("after cell {}", describe_cell(&doc.cells[i], i)),
        };
        let summary = format!(
            "Inserted a new {} cell {} {place} of {}.",
            cell_type.as_str(),
            describe_cell(&cell, index),
            self.path.display()
        );
        (out, summary)
    }

    /// The index of the cell named `wanted`: its id, or, when no cell has an id, its
    /// 0-based index (`3` or `cell-3`).
    fn find_cell(&self, cells: &[Value], wanted: &str) -> Result<usize, ToolError> {
        let wanted = wanted.trim();
        if let Some(i) = cells.iter().position(|c| cell_id(c) == Some(wanted)) {
            return Ok(i);
        }
        let ids: Vec<&str> = cells.iter().filter_map(cell_id).collect();
        if ids.is_empty() {
            let index = wanted
                .strip_prefix("cell-")
                .unwrap_or(wanted)
                .parse::<usize>();
            return match index {
                Ok(i) if i < cells.len() => Ok(i),
                _ => Err(ToolError::invalid_params(format!(
                    "No cell '{wanted}' in {}. Its cells have no ids (nbformat 4.4 or older): name a cell by its 0-based index, cell-0 to cell-{}.",
                    self.path.display(),
                    cells.len().saturating_sub(1)
                ))),
            };
        }
        let mut listed = ids
            .iter()
            .take(LISTED_IDS)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        if ids.len() > LISTED_IDS {
            listed.push_str(&format!(", ... ({} cells in all)", cells.len()));
        }
        Err(ToolError::invalid_params(format!(
            "No cell with id '{wanted}' in {}. Its cell ids are: {listed}. Read the notebook with read_file to see them.",
            self.path.display()
        )))
    }

    fn not_a_notebook(&self, why: &str) -> ToolError {
        ToolError::new(
            ErrorKind::ReadContentFailure,
            format!(
                "{} is not a Jupyter notebook: {why}. Nothing was written.",
                self.path.display()
            ),
        )
    }

    fn write_plan(&self, plan: Plan) -> Result<ToolResult, ToolError> {
        let replaced = file_change::write_file(&self.path, &plan.bytes, self.policy)?;
        let text = format!("{}{}", plan.summary, file_change::how_written(replaced));
        Ok(ToolResult::with_display(text, Display::FileDiff(plan.diff)))
    }
}

impl Invocation for NotebookEditCall {
    fn describe(&self) -> String {
        let cell = self.params.cell_id.as_deref().unwrap_or("start");
        match self.params.edit_mode {
            EditMode::Replace => format!("Replace cell {cell} of {}", self.display_path),
            EditMode::Insert => format!("Insert a cell after {cell} in {}", self.display_path),
            EditMode::Delete => format!("Delete cell {cell} of {}", self.display_path),
        }
    }

    fn locations(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }

    fn permission_subject(&self) -> PermissionSubject {
        PermissionSubject::Paths(vec![self.path.clone()])
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async move { self.confirm() })
    }

    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let path = self.path.clone();
            file_change::run_change(&ctx, "notebook edit", &path, move || self.apply_shown()).await
        })
    }
}

impl FileChange for NotebookEditCall {
    type Plan = Plan;

    fn path(&self) -> &Path {
        &self.path
    }
    fn plan(&self) -> Result<Plan, ToolError> {
        NotebookEditCall::plan(self)
    }
    fn question(&self, plan: &Plan) -> ConfirmationDetails {
        ConfirmationDetails::edit(
            format!("Confirm Notebook Edit: {}", self.display_path),
            plan.diff.clone(),
        )
    }
    fn apply(&self, plan: Plan) -> Result<ToolResult, ToolError> {
        self.write_plan(plan)
    }
    fn shown(&self) -> &Shown<Plan> {
        &self.shown
    }
    fn planned_from(plan: &Plan) -> Option<FileStamp> {
        Some(plan.stamp)
    }
}

/// A notebook's text with its parsed and located cells, what an edit works on.
struct Doc<'a> {
    text: &'a str,
    cells: &'a [Value],
    layout: &'a Layout,
    style: &'a Style,
}

/// A cell's source as one string (nbformat allows a string or a list of lines).
pub(crate) fn source_text(source: Option<&Value>) -> String {
    match source {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(lines)) => lines.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

/// A source as Jupyter stores it: lines keeping their `\n`, the last without one.
fn source_lines(source: &str) -> Value {
    Value::Array(
        source
            .split_inclusive('\n')
            .map(|l| Value::String(l.to_string()))
            .collect(),
    )
}

fn cell_id(cell: &Value) -> Option<&str> {
    cell.get("id").and_then(Value::as_str)
}

/// `id=abc` or `cell-3` for messages.
fn describe_cell(cell: &Value, index: usize) -> String {
    match cell_id(cell) {
        Some(id) => format!("id={id} (index {index})"),
        None => format!("cell-{index}"),
    }
}

/// Sets the source, and the type with the keys that go with it.
fn replace_cell(cell: &mut Map<String, Value>, source: &str, cell_type: Option<CellType>) {
    let sorted = cell.keys().is_sorted();
    cell.insert("source".into(), source_lines(source));
    if let Some(to) = cell_type
        && cell.get("cell_type").and_then(Value::as_str) != Some(to.as_str())
    {
        cell.insert("cell_type".into(), Value::String(to.as_str().into()));
        match to {
            CellType::Markdown => {
                cell.shift_remove("outputs");
                cell.shift_remove("execution_count");
            }
            CellType::Code => {
                // Attachments belong to markdown and raw cells only.
                cell.shift_remove("attachments");
                cell.entry("execution_count").or_insert(Value::Null);
                cell.entry("outputs").or_insert_with(|| json!([]));
            }
        }
        if sorted {
            cell.sort_keys();
        }
    }
}

/// A new cell with its keys in the order Jupyter writes them (sorted).
fn new_cell(cell_type: CellType, id: Option<&str>, source: &str) -> Value {
    let mut cell = Map::new();
    cell.insert("cell_type".into(), Value::String(cell_type.as_str().into()));
    if cell_type == CellType::Code {
        cell.insert("execution_count".into(), Value::Null);
    }
    if let Some(id) = id {
        cell.insert("id".into(), Value::String(id.into()));
    }
    cell.insert("metadata".into(), json!({}));
    if cell_type == CellType::Code {
        cell.insert("outputs".into(), json!([]));
    }
    cell.insert("source".into(), source_lines(source));
    Value::Object(cell)
}

/// Whether cells carry ids: some already do, or the format is nbformat 4.5 or later.
fn uses_ids(notebook: &Value, cells: &[Value]) -> bool {
    let version = |key| notebook.get(key).and_then(Value::as_u64).unwrap_or(0);
    cells.iter().any(|c| cell_id(c).is_some())
        || (version("nbformat"), version("nbformat_minor")) >= (4, 5)
}

/// Eight hex digits no cell uses yet.
fn fresh_id(cells: &[Value]) -> String {
    use std::hash::{BuildHasher, Hasher};
    let state = std::collections::hash_map::RandomState::new();
    let mut n = 0u64;
    loop {
        let mut hasher = state.build_hasher();
        hasher.write_u64(n);
        let id = format!("{:08x}", hasher.finish() as u32);
        if !cells.iter().any(|c| cell_id(c) == Some(&id)) {
            return id;
        }
        n += 1;
    }
}

#[cfg(test)]
mod tests;
